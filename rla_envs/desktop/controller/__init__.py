"""The desktop controller: boots a headless desktop session and serves OSWorld's HTTP API for it.

Run as ``python -m controller (--host H --port P | --unix-socket S) [--ready-file F] [--screen 1920x1080]``
with this package's parent directory on ``PYTHONPATH`` and the session token in ``$RLA_DESKTOP_TOKEN``. It starts Xvfb, a
D-Bus session bus, the AT-SPI accessibility bus and openbox, seeds the user's home (a LibreOffice profile
without first-run dialogs), then serves the API with FastAPI until it is killed.

It imports no rla code: it runs under Debian's python3 (or the runtime venv made by
``scripts/install-desktop.sh``), locally under bubblewrap and as a container's entry point.

Modules:
    boot.py       the session's processes: Xvfb, D-Bus, AT-SPI, openbox, and the environment apps get
    home.py       the home template: seeding, snapshot and restore on reset
    scratch.py    the writable folders outside the home (/tmp, /var/tmp, /dev/shm, /dev/mqueue, the runtime dir):
                  what the booted desktop made stays as it was, the rest is removed on reset
    ipc.py        System V IPC objects: those made after boot are removed on reset
    xserver.py    the X server's settings an episode can change (root properties, mappings, screen saver, RandR,
                  input devices, retained clients), put back on reset; who owns the screen's windows
    xkb.py        XKB locks and controls and the input device hierarchy (libX11/libXi through ctypes)
    dbus-session.conf  the session bus's configuration: no client may change the activation environment
    processes.py  launching, running and tracking apps; killing them on reset
    quiesce.py    before scoring: stopping the processes the agent's code left that own no window
    screen.py     screenshots (raw RGB and PNG) with mss
    a11y.py       the AT-SPI tree as OSWorld's XML
    windows.py    finding, activating and closing windows (wmctrl)
    app.py        the FastAPI routes and the token check
    action_runner.py  agents' pyautogui code in a worker process: time bounds, taken back on reset
    action_worker.py  that worker (``python -m controller.action_worker``)
    domain.py     Landlock domains for the worker, the setup's commands and apps and the buses: none can trace
                  the core processes, the controller or the evaluator's commands
"""
