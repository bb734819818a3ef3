"""rla/OSWorld-v0: a Linux desktop (Xvfb + apps) driven through OSWorld's controller API, OSWorld tasks as-is.

Layout:
    client.py        ControllerClient, the host's side of the controller's HTTP API
    controller/      the controller server that runs inside the session (stdlib + FastAPI, no rla imports)
    session.py       a local desktop session (Xvfb, D-Bus, AT-SPI, window manager, controller) in a private namespace
    providers/       where sessions run: ``local`` (a process group) and ``docker`` (any Docker-API socket)
    osworld/         OSWorld task JSON: loading, setup steps, getters, metrics, evaluation, the survey
    env.py           the Gymnasium env; family.py: curriculum hooks; tasks/: bundled offline tasks
"""
