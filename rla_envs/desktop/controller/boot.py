"""The session's core processes: Xvfb, a D-Bus session bus, the AT-SPI bus and openbox."""

from __future__ import annotations

import logging
import os
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import domain

__all__ = ["Desktop", "boot_desktop", "BootError"]

logger = logging.getLogger(__name__)

OPENBOX_RC = Path(__file__).with_name("openbox-rc.xml")
DBUS_SESSION_CONF = Path(__file__).with_name("dbus-session.conf")
"""Debian's session bus configuration, with the activation environment closed to clients (see the file)."""
AT_SPI_LAUNCHER_CANDIDATES = ("/usr/libexec/at-spi-bus-launcher", "/usr/lib/at-spi2-core/at-spi-bus-launcher")


def _die_with_me() -> None:
    """In the child before exec: be killed when the controller dies, however it dies (PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)


class BootError(RuntimeError):
    """A core process of the session did not start."""


@dataclass
class Desktop:
    """The running core processes and the environment every app of the session gets."""

    display: str
    env: dict[str, str]
    processes: list[subprocess.Popen] = field(default_factory=list)
    width: int = 1920
    height: int = 1080


def _read_line_from(fd: int, timeout: float, what: str, process: subprocess.Popen) -> str:
    """One line that ``process`` writes to the pipe ``fd`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BootError(f"{what} did not report within {timeout:.0f} s")
        ready, _, _ = select.select([fd], [], [], min(remaining, 0.5))
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise BootError(f"{what} exited before reporting (exit code {process.poll()})")
            data += chunk
        elif process.poll() is not None:
            raise BootError(f"{what} exited with code {process.returncode} before reporting")
    return data.split(b"\n", 1)[0].decode().strip()


def _start_reporting(argv: list[str], env: dict[str, str], what: str, flag_for_fd) -> tuple[subprocess.Popen, str]:
    """Start ``argv`` + the flag that makes it write one line (display, bus address) to a pipe; return both."""
    read_fd, write_fd = os.pipe()
    try:
        process = subprocess.Popen(argv + flag_for_fd(write_fd), env=env, pass_fds=(write_fd,), preexec_fn=_die_with_me,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.close(write_fd)
    try:
        return process, _read_line_from(read_fd, 20.0, what, process)
    finally:
        os.close(read_fd)


def _require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        raise BootError(f"{binary} is not installed; run scripts/install-desktop.sh (as root) to install the "
                        f"desktop packages")
    return path


def base_env(width: int, height: int) -> dict[str, str]:
    """The environment of the session's apps, before the display and the buses are known."""
    env = dict(os.environ)
    env.pop("NO_AT_BRIDGE", None)
    env.pop("RLA_DESKTOP_TOKEN", None)  # apps never see the token
    home = env.setdefault("HOME", str(Path.home()))
    runtime_dir = env.get("XDG_RUNTIME_DIR") or f"/tmp/runtime-{os.getuid()}"
    os.makedirs(runtime_dir, mode=0o700, exist_ok=True)
    # `python` and `python3` in the session are this runtime (OSWorld's postconfig runs `python -c "import
    # pyautogui; ..."`), so its bin/ directory goes first on PATH when it holds them.
    path = env.get("PATH") or "/usr/local/bin:/usr/bin:/bin"
    bin_dir = os.path.dirname(sys.executable)
    if os.path.exists(os.path.join(bin_dir, "python3")) and bin_dir not in path.split(":")[:1]:
        path = f"{bin_dir}:{path}"
    env.update({
        "PATH": path,
        "XDG_RUNTIME_DIR": runtime_dir,
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_SESSION_TYPE": "x11",
        "LANG": env.get("LANG") or "C.UTF-8",
        # Accessibility on: GTK's ATK bridge, LibreOffice through its GTK3 plugin, Qt and Java too.
        "GTK_MODULES": "gail:atk-bridge",
        "GNOME_ACCESSIBILITY": "1",
        "QT_ACCESSIBILITY": "1",
        "ACCESSIBILITY_ENABLED": "1",
        "SAL_USE_VCLPLUGIN": "gtk3",
        "GDK_BACKEND": "x11",
        "LIBGL_ALWAYS_SOFTWARE": "1",
        "RLA_SCREEN_SIZE": f"{width}x{height}",
        # Thunderbird (and Firefox) open the profile profiles.ini marks Default=1 -- the seeded one, or the one
        # an OSWorld task unpacks -- instead of making a fresh profile for their install
        "MOZ_LEGACY_PROFILES": "1",
    })
    env.pop("WAYLAND_DISPLAY", None)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    env.pop("AT_SPI_BUS_ADDRESS", None)
    return env


def _wait_for_window_manager(display: str, process: subprocess.Popen, timeout: float = 15.0) -> None:
    """Block until a window manager owns the screen (``_NET_SUPPORTING_WM_CHECK`` is set on the root)."""
    from Xlib import X
    from Xlib.display import Display

    connection = Display(display)
    try:
        atom = connection.intern_atom("_NET_SUPPORTING_WM_CHECK")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            prop = connection.screen().root.get_full_property(atom, X.AnyPropertyType)
            if prop is not None and len(prop.value):
                return
            if process.poll() is not None:
                raise BootError(f"openbox exited with code {process.returncode} while starting")
            time.sleep(0.05)
        raise BootError(f"openbox did not take the screen within {timeout:.0f} s")
    finally:
        connection.close()


def boot_desktop(width: int = 1920, height: int = 1080) -> Desktop:
    """Start Xvfb, the D-Bus session bus, the AT-SPI bus and openbox; return them and the apps' environment.

    The display number is chosen by Xvfb itself (``-displayfd``: the first free one), so sessions that
    share a network namespace never collide. This process's own ``os.environ`` gets ``DISPLAY`` and the
    bus addresses too (pyautogui, mss and pyatspi read them).
    """
    env = base_env(width, height)
    desktop = Desktop(display="", env=env, width=width, height=height)
    try:
        xvfb, number = _start_reporting(
            [_require("Xvfb"), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp", "-dpi", "96",
             "-noreset", "+extension", "RANDR"],
            env, "Xvfb", lambda fd: ["-displayfd", str(fd)])
        desktop.processes.append(xvfb)
        desktop.display = f":{number}"
        env["DISPLAY"] = desktop.display

        # The buses in Landlock domains of their own (controller/domain.py): the services they start (a terminal's
        # shell among them) inherit them, so what the agent drives there cannot trace Xvfb, openbox or the grader.
        bus, address = _start_reporting(
            domain.confined([_require("dbus-daemon"), f"--config-file={DBUS_SESSION_CONF}", "--nofork",
                             "--nopidfile", f"--address=unix:tmpdir={env['XDG_RUNTIME_DIR']}"]),
            env, "dbus-daemon", lambda fd: [f"--print-address={fd}"])
        desktop.processes.append(bus)
        env["DBUS_SESSION_BUS_ADDRESS"] = address

        launcher = next((p for p in AT_SPI_LAUNCHER_CANDIDATES if os.path.exists(p)), None)
        if launcher is None:
            raise BootError("at-spi-bus-launcher is not installed (package at-spi2-core); run "
                            "scripts/install-desktop.sh")
        desktop.processes.append(subprocess.Popen(domain.confined([launcher, "--launch-immediately"]), env=env,
                                                  preexec_fn=_die_with_me,
                                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL))

        openbox = subprocess.Popen([_require("openbox"), "--config-file", str(OPENBOX_RC)], env=env,
                                   preexec_fn=_die_with_me, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        desktop.processes.append(openbox)
        os.environ.update({k: env[k] for k in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR",
                                               "XDG_SESSION_TYPE")})  # pyscreeze grabs X11 only when told
        os.environ.pop("NO_AT_BRIDGE", None)
        _wait_for_window_manager(desktop.display, openbox)
    except BaseException:
        stop_desktop(desktop)
        raise
    return desktop


def stop_desktop(desktop: Desktop) -> None:
    """Kill the core processes (the session is over)."""
    for process in reversed(desktop.processes):
        if process.poll() is None:
            process.kill()
    for process in desktop.processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # stuck in the kernel after SIGKILL: say so, go on stopping the rest
            logger.warning("desktop process %d (%s) did not exit within 5 s of SIGKILL", process.pid, process.args)
