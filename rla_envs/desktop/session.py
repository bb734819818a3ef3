"""LocalSession: a desktop session on this machine, confined by bubblewrap, with its own home.

The controller (``python -m controller``, see :mod:`rla_envs.desktop.controller`) runs under bubblewrap with
``--unshare-pid`` and ``--die-with-parent``: the session's processes (Xvfb, buses, openbox, every app, the
agents' code) live in a private pid namespace that the kernel tears down when the controller's bwrap goes,
so closing the session -- or the host process dying -- leaves nothing behind.

What the session's code can do:

* **user**: uid 1000 (``user``) in its own user namespace with no capabilities (``--cap-drop ALL``,
  ``no_new_privs``, so setuid programs gain nothing). A host running as root starts the session as
  ``nobody``, so on the host its processes own nothing; otherwise as the host user, without capabilities.
* **files**: the host's system read-only and nothing else of the host (:func:`system_view`: ``/usr``, ``/etc``,
  ``/sys``, the font and D-Bus state under ``/var``, and the desktop runtime's own prefix; no ``/root``,
  ``/home``, ``/srv``, ``/mnt``, ``/opt``, ``/run`` or project checkout), its own ``/tmp`` and ``/var/tmp``
  (tmpfs) and its own writable ``/home/user`` (a temporary directory of the host, bound there), so OSWorld's
  absolute paths work and several sessions run side by side; its own ``/etc/passwd`` and ``/etc/group`` naming
  ``user``. The folders bubblewrap makes to hold these mounts (``/``, ``/home``, ``/dev``, ``/run``) are
  read-only: the session writes only where a reset restores (its home, ``/tmp``, ``/var/tmp``, ``/dev/shm``,
  ``/dev/mqueue``).
* **devices**: a minimal ``/dev`` (null, zero, full, random, urandom, tty, pts; ``shm`` and ``mqueue`` of its
  own), none of the host's.
* **network**: its own network namespace holding only a loopback interface. The host reaches the controller
  through a Unix socket (mode 0600) in a directory bound into the session; every request needs the token.
"""

from __future__ import annotations

import logging
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rla_envs.core.closing import ClosesOnExit
from rla_envs.core.errors import RlaError

__all__ = ["LocalSession", "SessionError", "runtime_python", "system_view", "SESSION_MARKER_ENV", "INSTALL_HINT"]

logger = logging.getLogger(__name__)

CONTROLLER_DIR = Path(__file__).resolve().with_name("controller")
DEFAULT_RUNTIME = "/opt/rla-desktop/bin/python"
INSTALL_HINT = "run `sudo scripts/install-desktop.sh` (from the rla repository) to install the desktop runtime"
SESSION_MARKER_ENV = "RLA_DESKTOP_SESSION"
"""Every process of a local session carries this variable (the session's id) in its environment."""
# Where the session's own files appear inside the sandbox (on its private /tmp).
_IN_SANDBOX_LIB = "/tmp/.rla/lib"
_IN_SANDBOX_RUN = "/tmp/.rla/run"
SESSION_HOME = "/home/user"
SESSION_UID = SESSION_GID = 1000
"""The uid and gid of the session's processes inside its user namespace (``user``, as in the docker image)."""
_SOCKET_NAME = "controller.sock"
_PASSWD = (f"user:x:{SESSION_UID}:{SESSION_GID}:user:{SESSION_HOME}:/bin/bash\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
_GROUP = f"user:x:{SESSION_GID}:\nnogroup:x:65534:\n"


_SPAWNER: ThreadPoolExecutor | None = None
_SPAWNER_LOCK = threading.Lock()


def _spawn(argv: list[str], **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` run on one long-lived thread of this process.

    bwrap's ``--die-with-parent`` ties the session to the *thread* that forked it (PR_SET_PDEATHSIG), so a
    session started from a short-lived worker thread would die with that thread; forking from a thread
    that lives as long as the process avoids that.
    """
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rla-desktop-spawner")
    return _SPAWNER.submit(subprocess.Popen, argv, **kwargs).result()


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read().decode(errors="replace")
    except OSError:
        return None
    return data[data.rfind(")") + 2:].split()


def _descendants(root: int) -> list[int]:
    """The pids below ``root`` in the host's process tree, parents before children."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat_fields(int(name))) is not None:
            parents[int(name)] = int(fields[1])
    order, frontier = [], [root]
    while frontier:
        children = [pid for pid, ppid in parents.items() if ppid in frontier]
        order.extend(children)
        frontier = children
    return order


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone, or the pid now belongs to another user's process
        pass


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its parent does not)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _wait_gone(pids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)


def host_user() -> tuple[int, int] | None:
    """The host ``(uid, gid)`` a session runs as when this process is root (``nobody``); None otherwise (as is)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def _give_to(root: Path, owner: tuple[int, int]) -> None:
    """``chown -R`` without following symlinks."""
    os.lchown(root, *owner)
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(os.path.join(directory, name), *owner)


class SessionError(RlaError, RuntimeError):
    """A local desktop session could not start (missing runtime, controller crashed, timeout)."""


def runtime_python(python: str | None = None) -> str:
    """The desktop runtime's interpreter: ``python``, else ``$RLA_DESKTOP_PYTHON``, else /opt/rla-desktop's."""
    candidate = python or os.environ.get("RLA_DESKTOP_PYTHON") or DEFAULT_RUNTIME
    if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
        raise SessionError(f"the desktop runtime interpreter {candidate} does not exist; {INSTALL_HINT}, or set "
                           f"RLA_DESKTOP_PYTHON to a python3 that has pyatspi, fastapi, uvicorn, mss and pyautogui")
    for hidden in ("/tmp/", "/home/"):
        if os.path.abspath(candidate).startswith(hidden):
            raise SessionError(f"the desktop runtime {candidate} lies under {hidden}, which a session replaces with "
                               f"its own; install it elsewhere (default {DEFAULT_RUNTIME})")
    return candidate


SYSTEM_DIRS = ("/usr", "/etc", "/sys", "/var/lib/dbus", "/var/cache/fontconfig")
"""The host directories a session sees (read-only): the installed programs, their settings, and the state the
desktop's apps read (the D-Bus machine id, the font cache). Everything else of the host is absent."""
READ_ONLY_FOLDERS = ("/dev", "/home", "/run", "/")
"""The session's own tmpfs folders that hold only mount points: read-only once the mounts are made."""
ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
"""Top-level names that merged-/usr systems make links into ``/usr`` (and older ones real directories)."""


def host_private_dirs() -> list[str]:
    """Host folders a session must not see even where a bound system folder holds them: this package (its tasks'
    gold files; ``pip install`` may have put it under ``/usr``) and the file cache (tasks' downloaded files)."""
    from rla_envs.core.files import cache_root

    return [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), str(cache_root())]


def system_view(python: str, root: str = "/", hide: tuple[str, ...] | list[str] = ()) -> list[str]:
    """bubblewrap arguments giving a session the host's system read-only, and the runtime ``python``'s prefix.

    The runtime's prefix (the venv ``python`` lives in, and the interpreter a venv's ``pyvenv.cfg`` names) is
    bound where it lies unless ``/usr`` holds it already. Each folder of ``hide`` that a bound folder holds is
    covered by an empty tmpfs.
    """
    args: list[str] = []
    for name in ROOT_LINKS:
        path = os.path.join(root, name)
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, f"/{name}"]
    prefixes = [os.path.dirname(os.path.dirname(os.path.abspath(python)))]
    config = Path(prefixes[0]) / "pyvenv.cfg"
    if config.is_file():
        for line in config.read_text(errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                prefixes.append(os.path.dirname(os.path.abspath(value.strip())))
    extra = [d for d in dict.fromkeys(prefixes) if not any(d == s or d.startswith(s + "/") for s in SYSTEM_DIRS)]
    bound = [d for d in (*SYSTEM_DIRS, *extra) if os.path.isdir(os.path.join(root, d.lstrip("/")))]
    for directory in bound:
        args += ["--ro-bind", os.path.join(root, directory.lstrip("/")), directory]
    for private in dict.fromkeys(os.path.realpath(h) for h in hide):
        if os.path.isdir(os.path.join(root, private.lstrip("/"))) and any(
                private == d or private.startswith(d + "/") for d in bound):
            args += ["--tmpfs", private]
    return [*args, "--tmpfs", "/run"]


def missing_tools() -> list[str]:
    """The host programs a local session needs that are not installed."""
    return [tool for tool in ("bwrap", "Xvfb", "openbox", "dbus-daemon", "wmctrl") if shutil.which(tool) is None]


class LocalSession(ClosesOnExit):
    """One desktop session run as a bubblewrapped process tree on this machine.

    Args:
        screen_size: ``(width, height)`` of the virtual screen.
        python: the desktop runtime interpreter (default ``$RLA_DESKTOP_PYTHON`` or /opt/rla-desktop/bin/python).
        start_timeout: seconds to wait for the controller to be ready.
        home_template: a prepared home directory to start from (copied; default: the controller's seeded one).
    """

    def __init__(self, *, screen_size: tuple[int, int] = (1920, 1080), python: str | None = None,
                 start_timeout: float = 60.0, home_template: str | os.PathLike | None = None):
        width, height = (int(v) for v in screen_size)
        if not (64 <= width <= 8192 and 64 <= height <= 8192):
            raise ValueError(f"screen_size must be (width, height) within 64..8192; got {screen_size!r}")
        self.screen_size = (width, height)
        self.python = runtime_python(python)
        missing = missing_tools()
        if missing:
            raise SessionError(f"a local desktop session needs {', '.join(missing)}, which are not installed; "
                               f"{INSTALL_HINT}")
        self.start_timeout = float(start_timeout)
        self.home_template = Path(home_template) if home_template is not None else None
        self.session_id = f"rla-desktop-{secrets.token_hex(6)}"
        self.token = secrets.token_urlsafe(32)
        self.ready = False
        self._dir: Path | None = None
        self._process: subprocess.Popen | None = None
        self._log = None

    # ------------------------------------------------------------------ paths
    @property
    def home(self) -> Path:
        """The host directory that the session sees as /home/user."""
        if self._dir is None:
            raise SessionError("the session is not started")
        return self._dir / "home"

    @property
    def socket_path(self) -> Path:
        """The host path of the controller's Unix socket."""
        if self._dir is None or not self.ready:
            raise SessionError("the session is not started")
        return self._dir / "run" / _SOCKET_NAME

    @property
    def pid(self) -> int | None:
        """The host pid of the session's bwrap (its whole process tree dies with it)."""
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        """Whether the session's bwrap (and so its controller) still runs."""
        return self._process is not None and self._process.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the controller's log."""
        try:
            return (self._dir / "controller.log").read_text(errors="replace")[-chars:]
        except (OSError, TypeError):
            return ""

    # ------------------------------------------------------------------ life cycle
    def _command(self) -> list[str]:
        width, height = self.screen_size
        assert self._dir is not None
        return [
            "bwrap",
            *system_view(self.python, hide=host_private_dirs()),
            "--dev", "/dev",
            "--tmpfs", "/dev/shm",
            "--mqueue", "/dev/mqueue",
            "--proc", "/proc",
            "--tmpfs", "/tmp",
            "--tmpfs", "/var/tmp",
            "--tmpfs", "/home",
            "--bind", str(self._dir / "home"), SESSION_HOME,
            "--ro-bind", str(self._dir / "lib"), _IN_SANDBOX_LIB,
            "--bind", str(self._dir / "run"), _IN_SANDBOX_RUN,
            "--ro-bind", str(self._dir / "etc" / "passwd"), "/etc/passwd",
            "--ro-bind", str(self._dir / "etc" / "group"), "/etc/group",
            *(["--ro-bind", str(self._dir / "home-template"), "/tmp/.rla/home-template"] if self.home_template else []),
            # The folders bubblewrap made to hold the mounts above are read-only, so the session can write only
            # where a reset restores: its home, /tmp, /var/tmp, /dev/shm and /dev/mqueue (controller/scratch.py).
            *[arg for folder in READ_ONLY_FOLDERS for arg in ("--remount-ro", folder)],
            "--unshare-user", "--uid", str(SESSION_UID), "--gid", str(SESSION_GID), "--cap-drop", "ALL",
            "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--hostname", "rla-desktop",
            "--die-with-parent", "--new-session",
            "--chdir", SESSION_HOME,
            "--", self.python, "-m", "controller", "--unix-socket", f"{_IN_SANDBOX_RUN}/{_SOCKET_NAME}",
            "--ready-file", f"{_IN_SANDBOX_RUN}/ready", "--screen", f"{width}x{height}",
            *(["--home-template", "/tmp/.rla/home-template"] if self.home_template else []),
        ]

    def _prepare_directory(self) -> None:
        """The session's host directory: its home, run dir, controller code, passwd/group, home template.

        Everything the session reads is copied here, so a checkout or template the session's user could not
        read still works; when this process is root the directory is handed to that user.
        """
        self._dir = Path(tempfile.mkdtemp(prefix=f"{self.session_id}-"))
        for name in ("home", "run", "etc"):
            (self._dir / name).mkdir()
        shutil.copytree(CONTROLLER_DIR, self._dir / "lib" / "controller",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (self._dir / "etc" / "passwd").write_text(_PASSWD)
        (self._dir / "etc" / "group").write_text(_GROUP)
        if self.home_template is not None:
            shutil.copytree(self.home_template, self._dir / "home-template", symlinks=True)
        owner = host_user()
        if owner is not None:
            _give_to(self._dir, owner)

    def _env(self) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": SESSION_HOME,
            "USER": "user",
            "LOGNAME": "user",
            "LANG": "C.UTF-8",
            "PYTHONPATH": _IN_SANDBOX_LIB,
            "PYTHONDONTWRITEBYTECODE": "1",
            "XDG_RUNTIME_DIR": "/tmp/runtime-user",
            "RLA_DESKTOP_TOKEN": self.token,   # the environment, never argv (argv is world-readable)
            SESSION_MARKER_ENV: self.session_id,
        }
        if os.environ.get("TZ"):
            env["TZ"] = os.environ["TZ"]
        return env

    def start(self) -> Path:
        """Start the session if it is not running (a dead one is replaced); return the controller's socket path."""
        if self.alive and self.ready:
            return self.socket_path
        self.close()
        try:
            self._prepare_directory()
        except OSError as exc:
            self.close()
            raise SessionError(f"cannot prepare the desktop session's directory: {exc}") from exc
        self._log = open(self._dir / "controller.log", "wb")
        owner = host_user()
        as_owner = {} if owner is None else {"user": owner[0], "group": owner[1], "extra_groups": []}
        try:
            self._process = _spawn(self._command(), env=self._env(), stdin=subprocess.DEVNULL, stdout=self._log,
                                   stderr=subprocess.STDOUT, start_new_session=True, **as_owner)
        except OSError as exc:
            self.close()
            raise SessionError(f"cannot start bwrap for a desktop session: {exc}; {INSTALL_HINT}") from exc
        ready_file = self._dir / "run" / "ready"
        deadline = time.monotonic() + self.start_timeout
        while not ready_file.exists():
            if self._process.poll() is not None:
                tail = self.log_tail()
                code = self._process.returncode
                self.close()
                raise SessionError(f"the desktop session's controller exited with code {code} while starting; "
                                   f"its log ends with:\n{tail}")
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.close()
                raise SessionError(f"the desktop session was not ready within {self.start_timeout:.0f} s "
                                   f"(raise start_timeout on a slow machine); its log ends with:\n{tail}")
            time.sleep(0.05)
        self.ready = True
        return self.socket_path

    def close(self) -> None:
        """Kill the session's whole process tree and delete its files (idempotent)."""
        process, self._process = getattr(self, "_process", None), None
        if process is not None:
            # The namespace's init (bwrap's child) first: when it dies the kernel kills and reaps the
            # whole pid namespace before its exit completes. Then bwrap itself.
            tree = _descendants(process.pid) if process.poll() is None else []
            for pid in tree:
                _kill(pid)
            _kill(process.pid)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # stuck in the kernel after SIGKILL: say so, go on closing the rest
                logger.warning("the desktop session's process %d did not exit within 10 s of SIGKILL", process.pid)
            _wait_gone(tree, timeout=10)
        log, self._log = getattr(self, "_log", None), None
        if log is not None:
            log.close()
        directory, self._dir = getattr(self, "_dir", None), None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
        self.ready = False
