"""The docker sandbox's agent: pid 1 of each container, serving the host over the container's stdin/stdout.

Started by :class:`~rla_envs.code.sandbox.docker.DockerSandbox` through the sandbox bootstrap (the image
holds only the sandbox package). It speaks :mod:`~rla_envs.code.sandbox.docker_protocol` and keeps one
warm spare worker made by the local backend's own code: :mod:`~rla_envs.code.sandbox.forkserver` forks
the monitor, :mod:`~rla_envs.code.sandbox.session` drives it, the program runs in
:mod:`~rla_envs.code.sandbox.runner` under rlimits, Landlock and seccomp where the container allows them.
After every session the agent SIGKILLs every other process in the container (setsid and daemon escapes
included), empties the work dir and removes any SysV IPC object (the container's IPC namespace outlives
sessions; the seccomp filter refuses SysV IPC where it is installed), and only then makes the next spare.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import signal
import sys
import time

from rla_envs.code.sandbox import confine, forkserver, readable
from rla_envs.code.sandbox.base import Call, Limits, SandboxError, decode_value
from rla_envs.code.sandbox.docker_protocol import ERROR_CHARS, WORK_DIR, result_record
from rla_envs.code.sandbox.session import LocalSession

__all__ = ["Agent", "main"]

logger = logging.getLogger(__name__)  # no handler set: warnings reach the container's stderr, which the host keeps
_SWEEP_ROUNDS = 100


def main() -> None:
    """Serve the host on stdin/stdout until it closes stdin; then kill everything else and exit."""
    Agent().serve()
    os._exit(0)


class Agent:
    """Serves the host's requests one at a time, with a warm spare worker ready for the next ``start``.

    Also the :class:`~rla_envs.code.sandbox.session.WorkerHost` of its sessions: workers are forked
    through the fork server's code, in this process.
    """

    uid_base = -1  # LocalSession's last-resort kill_uid(-1) matches nothing; the sweep cleans up instead

    def __init__(self) -> None:
        self._requests, self._replies = _take_protocol_streams()
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        self.caps = _capabilities()
        forkserver.set_plan(readable.read_plan(), {})  # the image holds no package but the sandbox's own
        self._seccomp_filter = confine.seccomp_program() if self.caps["seccomp"] else None
        self._pid = os.getpid()
        self._spare: LocalSession | None = None
        self._current: LocalSession | None = None
        self._spawn_error = ""

    # -- WorkerHost --------------------------------------------------------------------------------

    def spawn_worker(self, spec: dict, fds: list[int]) -> int:
        """Fork a session's monitor, as the fork server does (it holds only the session's descriptors)."""
        return forkserver.fork_monitor(spec, fds, self.caps, self._seccomp_filter)

    def retire(self, session: LocalSession) -> None:
        """End a used session at once (the sweep after it needs it gone)."""
        session.teardown()

    # -- the loop ----------------------------------------------------------------------------------

    def serve(self) -> None:
        """Answer requests until the host closes the stream; end every session and sweep on the way out."""
        reader = io.open(self._requests, "rb", buffering=1 << 16)
        while True:
            if self._spare is None and self._current is None:  # made after the sweep: it kills every other process
                self._make_spare()
            line = reader.readline()
            if not line:
                break
            _reap()
            try:
                self._handle(json.loads(line))
            except Exception as exc:  # a bad request or a failed worker: report it, keep serving
                try:
                    self._reply({"error": f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]})
                except OSError:  # the host is gone
                    break
        for session in (self._current, self._spare):
            if session is not None:
                session.teardown()
        _sweep(self._pid)

    def _handle(self, message: dict) -> None:
        op = message.get("op")
        if op == "hello":
            self._reply({"hello": self.caps})
        elif op == "start":
            self._start(message)
        elif op == "call":
            if self._current is None:
                raise SandboxError("no program is loaded")
            result = self._current.call(Call(function=message["function"], args=decode_value(message["args"])))
            self._reply({"result": result_record(result, with_value=True)})
        elif op == "end":
            session, self._current = self._current, None
            self._reply({"ended": True})
            if session is not None:  # no session: the spare is fresh and nothing ran since the last sweep
                self._finish(session)
        else:
            self._reply({"error": f"unknown request {op!r}"})

    def _start(self, message: dict) -> None:
        """Hand the spare its program: a function-form session stays current, a stdio run ends here."""
        if self._current is not None:
            session, self._current = self._current, None
            self._finish(session)
        if self._spare is None:
            raise SandboxError(f"cannot start a worker: {self._spawn_error}")
        session, self._spare = self._spare, None
        self._current = session
        stdin = message.get("stdin")
        session.start(message["program"], Limits(**message["limits"]), message["form"], cpu_s=int(message["cpu_s"]),
                      stdin=stdin.encode("utf-8", "surrogateescape") if isinstance(stdin, str) else b"")
        if message["form"] == "stdio":
            result = session.finish()
            self._current = None
            self._reply({"result": result_record(result)})
            self._finish(session)
        else:
            self._reply({"started": True})

    def _make_spare(self) -> None:
        try:
            self._spare = LocalSession(self, 0)
            self._spawn_error = ""
        except Exception as exc:  # reported to the host on the next start
            self._spare = None
            self._spawn_error = f"{type(exc).__name__}: {exc}"

    def _finish(self, session: LocalSession) -> None:
        session.teardown()
        _sweep(self._pid)

    def _reply(self, message: dict) -> None:
        view = memoryview(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        while view:
            view = view[os.write(self._replies, view):]


def _take_protocol_streams() -> tuple[int, int]:
    """Keep stdin/stdout for the protocol (on descriptors no child inherits); 0 and 1 become /dev/null."""
    requests, replies = os.dup(0), os.dup(1)
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    for fd in (requests, replies):
        os.set_inheritable(fd, False)
    return requests, replies


def _capabilities() -> dict:
    """What confinement this container allows, probed as the sandbox's fork server does."""
    caps: dict = {"root": os.geteuid() == 0, "unsafe": True, "uid": os.getuid(), "pid": os.getpid(),
                  "python": sys.version.split()[0], "work_root": WORK_DIR}
    try:  # other processes of this uid may not read or write the agent's memory through /proc
        confine.set_not_dumpable()
        caps["not_dumpable"] = True
    except OSError:  # a seccomp profile that refuses prctl: reported to the host, not fatal
        caps["not_dumpable"] = False
    caps["landlock_abi"] = confine.landlock_abi()
    caps["seccomp"] = confine.seccomp_program() is not None
    caps.update(forkserver.probe(caps, os.getuid()))
    return caps


def _sweep(me: int) -> None:
    """SIGKILL every other process of the container, reap them, empty the work dir, remove SysV IPC objects."""
    for _ in range(_SWEEP_ROUNDS):
        killed = sum(_kill(int(entry)) for entry in os.listdir("/proc") if entry.isdigit() and int(entry) != me)
        _reap()
        if not killed:
            break
        time.sleep(0.001)
    for entry in os.listdir(WORK_DIR):
        path = os.path.join(WORK_DIR, entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError as exc:  # the next session would see it: say so on the stderr the host keeps
            logger.warning("could not empty %s: %s: %s", path, type(exc).__name__, exc)
    confine.remove_sysv_ipc()


def _kill(pid: int) -> bool:
    """SIGKILL ``pid`` unless it is already a zombie; whether a signal was sent."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            if handle.read().rpartition(b")")[2].split()[0] == b"Z":
                return False
        os.kill(pid, signal.SIGKILL)
        return True
    except (OSError, IndexError):  # it exited (and was reaped) between the listing and here
        return False


def _reap() -> None:
    """Collect every exited child without waiting."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
