"""Fixtures for the desktop tests: one local desktop session for the whole run (``local_provider``).

``local_provider`` skips (with the reason) when the desktop packages or the runtime venv are missing; run
``sudo scripts/install-desktop.sh`` to get them. Tests that change the session should start from
``desktop_client``, which resets the session first (apps closed, home restored).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest


RECOVERY_BOUND_S = 30.0
"""A bound on recovering from a wedged action that proves "not wedged for good" on any machine (the <= 2 s goal
is measured by ``python -m benchmarks.perf.desktop``, not decided by a clock in a test)."""
WEDGING_ACTIONS = {
    "computer13-scroll-1e9": {"action_type": "SCROLL", "parameters": {"dy": 10**9}},
    "pyautogui-scroll-1e9": "pyautogui.scroll(10**9)",
    "busy-loop": "while True: pass",
    "os-exit": "import os; os._exit(0)",
    "sys-exit": "import sys; sys.exit(3)",
    "kill-own-process": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "sleep-forever": "time.sleep(10**6)",
}
"""Actions that once wedged a session for good or stopped its controller."""


class LocalSessionClient:
    """Runs the getters' commands on this machine (HOME set to a temporary folder) and reads local files."""

    def __init__(self, home):
        self.env = {**os.environ, "HOME": str(home)}

    def execute(self, command, *, shell=False, timeout=120.0):
        done = subprocess.run(command, shell=shell, env=self.env, capture_output=True, text=True, timeout=timeout)
        return {"status": "success", "output": done.stdout, "error": done.stderr, "returncode": done.returncode}

    def get_file(self, path):
        return Path(path).read_bytes() if Path(path).is_file() else None

    def screen_size(self):
        return 1920, 1080


def local_desktop_unavailable() -> str | None:
    """Why a local desktop session cannot run here, or None when it can."""
    from rla_envs.desktop.session import INSTALL_HINT, SessionError, missing_tools, runtime_python

    missing = missing_tools()
    if missing:
        return f"a local desktop session needs {', '.join(missing)}; {INSTALL_HINT}"
    try:
        runtime_python()
    except SessionError as exc:
        return str(exc)
    return None


def docker_client_or_skip():
    """A Docker-API client that answered a ping, or a skip saying why there is none."""
    from rla_envs.core.docker import connect
    from rla_envs.desktop.providers.docker import DesktopContainerError

    try:
        return connect(error=DesktopContainerError)
    except (DesktopContainerError, ImportError) as exc:
        pytest.skip(f"no Docker-API socket: {exc}")


def image_or_skip(client, image: str | None = None) -> None:
    """Skip when the desktop image (default: the provider's) is missing or stale (the reason says how to build it)."""
    from rla_envs.desktop.providers.docker import DEFAULT_IMAGE, DesktopContainerError, DockerProvider

    try:
        DockerProvider(image or DEFAULT_IMAGE, client=client).verify_image()
    except DesktopContainerError as exc:
        pytest.skip(f"desktop image unavailable: {exc}")


def by_osworld_id(osworld_id: str):
    """The bundled task with this OSWorld id."""
    from rla_envs.desktop.tasks import bundled_tasks

    return next(t for t in bundled_tasks() if t.meta["osworld_id"] == osworld_id)


def listening_addresses(port: int) -> list[tuple[str, str]]:
    """``(table, local address)`` of every LISTEN socket on ``port`` in /proc/net/tcp and tcp6 (the address in
    hex, as those tables write it: ``0100007F`` is 127.0.0.1)."""
    found = []
    for table in ("tcp", "tcp6"):
        try:
            lines = open(f"/proc/net/{table}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            address, port_hex = local.rsplit(":", 1)
            if state == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                found.append((table, address))
    return found


def wait_until(predicate, timeout: float = 15.0, interval: float = 0.1):
    """Poll ``predicate`` until it returns something truthy (returned) or ``timeout`` passes (its last value)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


@pytest.fixture(scope="session")
def local_provider():
    """A started LocalProvider shared by the run's desktop tests (closed at the end), restoring its session in place
    on reset (``fresh_sessions=False``): what most of these tests check is that restore, and it is ~50x faster."""
    reason = local_desktop_unavailable()
    if reason:
        pytest.skip(reason)
    from rla_envs.desktop.providers.local import LocalProvider

    provider = LocalProvider(screen_size=(1920, 1080), fresh_sessions=False)
    try:
        provider.start()
        yield provider
    finally:
        provider.close()


@pytest.fixture
def desktop_client(local_provider):
    """The shared session's client, after a reset (no app open, home as at start)."""
    local_provider.reset()
    return local_provider.start()
