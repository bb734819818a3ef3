"""Apps and commands of the session: launching, running, and killing every one of them on reset.

The controller makes itself a *child subreaper*, so every process started in the session (an app started
with ``/setup/launch``, a ``cmd &`` run by ``/execute``, a daemon that double-forks) stays its descendant.
The processes alive when the desktop finished booting (Xvfb, the buses, openbox) are the *core*; a reset
kills every other descendant. What the task's setup starts (``confine=True``) runs in a Landlock domain of its own
(:mod:`controller.domain`), so an app the agent drives cannot trace the core or the evaluator's commands.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Collection, Sequence

from . import domain

__all__ = ["ProcessTracker", "normalise_command", "CommandError"]

logger = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36


class CommandError(ValueError):
    """A command payload that cannot be run (wrong type, empty)."""


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read().decode(errors="replace")
    except OSError:
        return None
    return data[data.rfind(")") + 2:].split()


def _proc_stat(pid: int) -> tuple[int, str, int] | None:
    """``(ppid, state, start time)`` of ``pid`` from /proc, or None when it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else (int(fields[1]), fields[0], int(fields[19]))


PF_EXITING = 0x4  # the kernel's task flag for a process inside exit(): /proc/<pid>/stat's ninth field
SIGKILL_BIT = 1 << (signal.SIGKILL - 1)  # SIGKILL in /proc/<pid>/status's pending-signal masks


def _dying(pid: int) -> bool:
    """Whether ``pid`` is on its way out though not yet a zombie: exiting, or with a SIGKILL pending.

    ``kill(pid, SIGKILL)`` returns before the target has run its exit; until it does, /proc still shows it
    running. Under load that window is long enough for a reset to take a killed core process for a live one.
    """
    fields = _stat_fields(pid)
    if fields is None or int(fields[6]) & PF_EXITING:
        return True
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            status = handle.read().decode(errors="replace")
    except OSError:
        return True
    pending = (line.split(":", 1)[1] for line in status.splitlines() if line.startswith(("SigPnd:", "ShdPnd:")))
    return any(int(mask, 16) & SIGKILL_BIT for mask in pending)


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def normalise_command(command: str | Sequence[str] | None, shell: bool, home: str) -> str | list[str]:
    """OSWorld's command payload as ``subprocess`` takes it: split a string unless ``shell``, expand ``~/``."""
    if command is None or command == "" or command == []:
        raise CommandError("expected a non-empty 'command' (a string, or a list of strings); got "
                           f"{command!r}")
    if shell:
        if isinstance(command, str):
            return command
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            return " ".join(command)
    if isinstance(command, str):
        command = shlex.split(command)
    if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        raise CommandError(f"expected 'command' to be a string or a list of strings; got {command!r}")
    return [home + part[1:] if part.startswith("~/") else part for part in command]


class ProcessTracker:
    """Starts the session's processes and kills the non-core ones on reset.

    Args:
        env: the environment of every process started (the desktop's).
        cwd: their working directory (the user's home).
    """

    def __init__(self, env: dict[str, str], cwd: str):
        self.env = env
        self.cwd = cwd
        self._core: set[tuple[int, int]] = set()
        self._owned: dict[int, subprocess.Popen] = {}  # children whose exit status a Popen collects
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except OSError as exc:  # not Linux: orphaned app processes go to init instead, and apps() cannot see them
            logger.warning("cannot become the child subreaper (%s): orphaned app processes will not be listed", exc)

    # ------------------------------------------------------------------ bookkeeping
    def descendants(self) -> dict[int, tuple[int, str, int]]:
        """Every descendant of this process: pid -> (ppid, state, start time)."""
        table = {pid: stat for pid in _all_pids() if (stat := _proc_stat(pid)) is not None}
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        found: dict[int, tuple[int, str, int]] = {}
        stack = list(children.get(os.getpid(), []))
        while stack:
            pid = stack.pop()
            if pid in found:
                continue
            found[pid] = table[pid]
            stack.extend(children.get(pid, []))
        return found

    def mark_core(self, settle_s: float = 1.0) -> None:
        """Remember the processes alive now as the session's core (never killed on reset).

        Waits (up to ``settle_s``) until two listings 50 ms apart agree, so that a helper that runs for a moment
        at boot (a keymap compiler the X server starts) is not taken for a core process -- a core process that
        is gone makes a reset ask for a fresh session.
        """
        def listing() -> set[tuple[int, int]]:
            return {(pid, start) for pid, (_, state, start) in self.descendants().items() if state != "Z"}

        deadline = time.monotonic() + settle_s
        self._core = listing()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = listing()
            if now == self._core:
                break
            self._core = now
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap_forever, name="reaper", daemon=True)
            self._reaper.start()

    @property
    def core(self) -> frozenset[tuple[int, int]]:
        """``(pid, start time)`` of each core process."""
        return frozenset(self._core)

    def running_apps(self, spare: Collection[int] = ()) -> set[tuple[int, int]]:
        """``(pid, start time)`` of each non-core process still running, less the pids in ``spare``."""
        return {(pid, start) for pid, (_, state, start) in self.descendants().items()
                if (pid, start) not in self._core and state != "Z" and pid not in spare}

    def core_pids(self) -> set[int]:
        """The pids of the core processes still running."""
        return {pid for pid, (_, state, start) in self.descendants().items() if (pid, start) in self._core and state != "Z"}

    def core_problems(self) -> list[str]:
        """Wake every core process an episode may have stopped (SIGCONT); say which ones are gone.

        The agent's code runs as the same user as the core (Xvfb, the buses, openbox), so it can stop or kill
        them; a stopped one is woken here, a dead one (or one killed and not yet dead) means the session cannot
        be restored.
        """
        alive = {(pid, start) for pid, (_, state, start) in self.descendants().items()
                 if state != "Z" and not _dying(pid)}
        problems = []
        for pid, start in sorted(self._core):
            if (pid, start) not in alive:
                problems.append(f"core process {pid} is gone")
                continue
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                problems.append(f"core process {pid} is gone")
        return problems

    def apps(self, *, include_core: bool = False, spare: Collection[int] = ()) -> list[int]:
        """The pids of the non-core (or all) descendants that are still running (not zombies), less ``spare``."""
        return [pid for pid, (_, state, start) in self.descendants().items()
                if (include_core or (pid, start) not in self._core) and state != "Z" and pid not in spare]

    def adopt(self, process: subprocess.Popen) -> None:
        """Collect the exit of a child started elsewhere through its own Popen (which then sees its exit code)."""
        with self._lock:
            self._owned[process.pid] = process

    def _reap(self) -> None:
        """Collect exited children: those a Popen owns through it, orphans adopted by us directly."""
        with self._lock:
            for pid, process in list(self._owned.items()):
                if process.poll() is not None:
                    del self._owned[pid]
            owned = set(self._owned)
        me = os.getpid()
        for pid, (ppid, state, _) in self.descendants().items():
            if ppid == me and state == "Z" and pid not in owned:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:  # reaped meanwhile by its Popen or another reaper pass
                    pass

    def _reap_forever(self) -> None:
        while True:
            time.sleep(1.0)
            try:
                self._reap()
            except Exception:  # never let the reaper die; say what stopped this pass
                logger.exception("the zombie reaper's pass failed; retrying in 1 s")

    # ------------------------------------------------------------------ starting
    def _start(self, command: str | list[str], shell: bool, stdout, stderr, confine: bool) -> subprocess.Popen:
        """``command`` started in the session's environment and home (in a Landlock domain of its own when
        ``confine``), its Popen kept to collect its exit."""
        if confine:
            argv = ["/bin/sh", "-c", command] if shell else list(command)
            command, shell = domain.confined(argv, path=self.env.get("PATH")), False
        process = subprocess.Popen(command, shell=shell, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
                                   stdout=stdout, stderr=stderr, start_new_session=True)
        with self._lock:
            self._owned[process.pid] = process
        return process

    def launch(self, command: str | list[str], *, shell: bool = False, confine: bool = False) -> subprocess.Popen:
        """Start ``command`` in the session without waiting for it (in a domain of its own when ``confine``)."""
        return self._start(command, shell, subprocess.DEVNULL, subprocess.DEVNULL, confine)

    def execute(self, command: str | list[str], *, shell: bool = False, timeout: float = 120.0,
                confine: bool = False) -> dict:
        """Run ``command`` to its end (in a domain of its own when ``confine``); OSWorld's reply ``{status,
        output, error, returncode}``.

        Output goes through temporary files, not pipes, so a command that leaves a process in the
        background (``app &``) returns as soon as the command itself has finished.
        """
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            process = self._start(command, shell, out, err, confine)
            try:
                returncode = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(process.pid)
                process.wait()
                raise
            out.seek(0)
            err.seek(0)
            return {"status": "success", "output": out.read().decode(errors="replace"),
                    "error": err.read().decode(errors="replace"), "returncode": returncode}

    # ------------------------------------------------------------------ reset
    def kill_apps(self, timeout: float = 5.0, *, include_core: bool = False, spare: Collection[int] = ()) -> int:
        """SIGKILL every non-core process of the session and wait until they are reaped; return how many.

        With ``include_core`` the core goes too (the controller is shutting down); the pids in ``spare`` stay
        (their children do not).

        A killed multi-threaded app shows as a zombie before its last thread has exited, and cannot be
        reaped until then, so this waits for the pids to leave /proc, not just to turn into zombies.
        """
        killed: set[int] = set()
        deadline = time.monotonic() + timeout
        while True:
            for pid in self.apps(include_core=include_core, spare=spare):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except ProcessLookupError:  # exited between the listing and the kill
                    pass
            self._reap()
            pending = [pid for pid in killed if os.path.exists(f"/proc/{pid}")]
            if (not pending and not self.apps(include_core=include_core, spare=spare)) or time.monotonic() > deadline:
                return len(killed)
            time.sleep(0.005)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is gone already (or its id was reused elsewhere)
        pass
