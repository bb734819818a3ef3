"""One confined worker of the local sandbox, seen from the host: its pipes, its deadlines, its result.

A :class:`LocalSession` starts as a spare: the fork server has made its worker, which waits for a
program. :meth:`LocalSession.start` hands it the program, form and limits; the function form then
serves :meth:`LocalSession.call`, the stdio form ends with :meth:`LocalSession.finish`. Every read is
non-blocking through one selector: stdout/stderr are kept up to ``Limits.output_bytes`` each, records
arrive on their own pipe, and the monitor's exit report on the control socket says the worker's whole
process tree is gone. Used sessions are ended by the sandbox's warmer thread (:meth:`teardown`).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import time
from typing import Protocol

from rla_envs.code.sandbox import confine
from rla_envs.code.sandbox.base import (Call, CallResult, ClosesOnExit, Limits, SandboxError, decode_value,
                                        encode_value)

__all__ = ["LocalSession", "WorkerHost"]

_RECORD_LIMIT = 64 << 20  # bytes of records one session may send before it is cut off
_MALFORMED = {"status": "no_result", "error": "malformed record"}


def decode_record(line: bytes) -> dict:
    """One record line from the sandbox as a dict; anything else (bad JSON, too deep, not an object) is malformed.

    The sandboxed program can write any bytes to its record pipe, so no content may raise here: a line nested
    100,000 deep makes ``json.loads`` raise ``RecursionError``, which a ``ValueError`` handler would not catch.
    """
    try:
        message = json.loads(line)
    except (ValueError, RecursionError, MemoryError):
        return dict(_MALFORMED)
    return message if type(message) is dict else dict(_MALFORMED)
_GRACE_S = 2.0  # how long to wait for a killed session's exit report


class WorkerHost(Protocol):
    """What a :class:`LocalSession` needs of whoever runs it: the local sandbox, or the docker agent."""

    uid_base: int
    """Slot ``i``'s worker runs as ``uid_base + i``."""

    def spawn_worker(self, spec: dict, fds: list[int]) -> int:
        """Start a confined worker for ``spec`` on the six child descriptors ``fds``; return its monitor's pid."""

    def retire(self, session: "LocalSession") -> None:
        """End a used session (at once, or in the background) and make way for the slot's next spare."""


class LocalSession(ClosesOnExit):
    """One confined process of the local sandbox (see :meth:`LocalSandbox.session`)."""

    def __init__(self, sandbox: WorkerHost, slot: int) -> None:
        """Spawn a confined worker for ``slot`` that waits for its program (a warm spare)."""
        self._sandbox, self.slot = sandbox, slot
        self.uid = sandbox.uid_base + slot
        self.limits, self.form = Limits(), ""
        self._selector = selectors.DefaultSelector()
        self._out = {"stdout": bytearray(), "stderr": bytearray()}
        self._out_seen = {"stdout": 0, "stderr": 0}
        self._eof: set[str] = set()
        self._records: list[dict] = []
        self._buffers: dict[str, bytearray] = {"records": bytearray(), "ctl": bytearray()}
        self._pending: dict[int, bytearray] = {}
        self.exit_code: int | None = None
        self._monitor_exit: int | None = None  # the exit status reported by the monitor: the worker's tree is gone
        self._dead: tuple[str, str] | None = None  # (status, error) once the worker is gone
        self._closed = self._torn_down = False
        self._fds: list[int] = []
        try:
            self._spawn()
        except BaseException:
            self.teardown()
            raise

    # -- plumbing ----------------------------------------------------------------------------------

    def _spawn(self) -> None:
        pipes = [os.pipe() for _ in range(5)]  # stdin, stdout, stderr, requests, records
        ctl_host, ctl_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        child_ends = [pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][0], pipes[4][1], ctl_child.fileno()]
        self._stdin_w, self._stdout_r, self._stderr_r = pipes[0][1], pipes[1][0], pipes[2][0]
        self._request_w, self._records_r = pipes[3][1], pipes[4][0]
        self._ctl = ctl_host
        self._fds = [self._stdin_w, self._stdout_r, self._stderr_r, self._request_w, self._records_r]
        try:
            self._sandbox.spawn_worker({"uid": self.uid}, child_ends)
        finally:
            for fd in child_ends[:5]:
                os.close(fd)
            ctl_child.close()
        for fd in self._fds:
            os.set_blocking(fd, False)
        self._ctl.setblocking(False)
        for fd, name in ((self._stdout_r, "stdout"), (self._stderr_r, "stderr"), (self._records_r, "records")):
            self._selector.register(fd, selectors.EVENT_READ, name)
        self._selector.register(self._ctl, selectors.EVENT_READ, "ctl")

    def start(self, program: str, limits: Limits, form: str, cpu_s: int, stdin: bytes = b"") -> None:
        """Hand the waiting worker its program; in the function form, wait until it is loaded."""
        started = time.monotonic()
        self.limits, self.form = limits, form
        rlimits = {"memory_mb": limits.memory_mb, "cpu_s": cpu_s, "file_size_mb": limits.file_size_mb,
                   "open_files": limits.open_files, "processes": limits.processes}
        message = {"program": program, "form": form, "limits": rlimits}
        self._queue_write(self._request_w, json.dumps(message).encode() + b"\n")
        if stdin:
            self._queue_write(self._stdin_w, stdin)
        else:  # EOF right away
            os.close(self._stdin_w)
            self._fds.remove(self._stdin_w)
        if form == "function":
            self._await_load(started)

    def _queue_write(self, fd: int, data: bytes) -> None:
        if fd in self._pending:
            self._pending[fd] += data
            return
        self._pending[fd] = bytearray(data)
        self._selector.register(fd, selectors.EVENT_WRITE, "write")

    def _pump(self, deadline: float, want_record: bool, want_done: bool = False) -> str:
        """Move data until a record arrives (``want_record``), the program is done with its final
        record and closed outputs (``want_done``), or the worker exits; say which, or why not."""
        while True:
            if want_record and self._records:
                return "record"
            if want_done and self._records and {"stdout", "stderr", "records"} <= self._eof:
                return "exit"
            if self._monitor_exit is not None:
                return "exit"
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                return "timeout"
            for key, _ in self._selector.select(timeout):
                why = self._handle(key)
                if why:
                    return why

    def _handle(self, key: selectors.SelectorKey) -> str | None:
        fd, name = key.fd, key.data
        if name == "write":
            pending = self._pending[fd]
            try:
                del pending[: os.write(fd, pending)]
            except (BlockingIOError, InterruptedError):
                return None
            except OSError:  # the reader is gone
                pending.clear()
            if not pending:
                self._selector.unregister(fd)
                del self._pending[fd]
                if fd == self._stdin_w:
                    os.close(fd)
                    self._fds.remove(fd)
            return None
        try:
            chunk = self._ctl.recv(1 << 16) if name == "ctl" else os.read(fd, 1 << 16)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            chunk = b""
        if not chunk:
            self._selector.unregister(key.fileobj)
            self._eof.add(name)
            if name == "ctl" and self._monitor_exit is None:
                self._monitor_exit = self.exit_code = -signal.SIGKILL  # the monitor is gone without a report
            return None
        if name in self._out:
            buffer = self._out[name]
            room = self.limits.output_bytes - len(buffer)
            buffer += chunk[:max(room, 0)]
            return "output_limit" if len(chunk) > room else None
        buffer = self._buffers[name]
        buffer += chunk
        if len(buffer) > _RECORD_LIMIT:
            return "record_limit"
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            message = decode_record(line)
            if name == "ctl":
                code = message.get("exit")
                self._monitor_exit = self.exit_code = code if type(code) is int else -signal.SIGKILL
            else:
                self._records.append(message)
        return None

    def _kill(self) -> None:
        """SIGKILL the worker's whole PID namespace and wait for the monitor's report."""
        if self._monitor_exit is not None:
            return
        try:
            self._ctl.send(b"k")
        except OSError:  # the monitor is gone: the uid sweep below does its work
            pass
        if self._pump(time.monotonic() + _GRACE_S, want_record=False) != "exit":
            confine.kill_uid(self.uid)  # the monitor did not answer: sweep the uid from here
            self._monitor_exit = self.exit_code = -signal.SIGKILL

    def _drain(self) -> None:
        """Collect what is already written to stdout/stderr/records without waiting."""
        for _ in range(64):
            events = self._selector.select(0)
            if not events:
                return
            for key, _ in events:
                if key.data != "write":
                    self._handle(key)

    def _take_output(self) -> tuple[str, str]:
        texts = []
        for name in ("stdout", "stderr"):
            data = self._out[name]
            texts.append(bytes(data[self._out_seen[name]:]).decode("utf-8", errors="replace"))
            self._out_seen[name] = len(data)
        return texts[0], texts[1]

    def _death_status(self) -> tuple[str, str]:
        """Status of a worker that ended without the record we waited for."""
        code = self.exit_code
        if code is None:
            return "no_result", "no result"
        if code in (-signal.SIGXCPU,):
            return "timeout", "CPU time limit exceeded"
        if code < 0:
            return "crashed", f"killed by signal {signal.Signals(-code).name}" if -code in signal.valid_signals() else "crashed"
        return "no_result", f"the process exited with code {code} without a result"

    def _end(self, status: str, error: str) -> None:
        self._kill()
        self._drain()
        self._dead = (status, error)

    # -- function form -----------------------------------------------------------------------------

    def _await_load(self, started: float) -> None:
        why = self._pump(started + self.limits.timeout_s, want_record=True)
        self._drain()
        if why == "record":
            record = self._records.pop(0)
            if record.get("status") != "loaded":
                status = record.get("status") if record.get("status") in ("error", "memory", "no_result") else "no_result"
                self._end(status, str(record.get("error", ""))[:2000])
        elif why == "exit":
            self._dead = self._death_status()
        elif why == "timeout":
            self._end("timeout", f"loading the program took more than {self.limits.timeout_s:g} s")
        else:
            self._end(why, f"the program wrote more than {self.limits.output_bytes} bytes to one stream while loading")

    def call(self, call: Call) -> CallResult:
        """Run one function-form call in the loaded program."""
        if call.form != "function":
            raise ValueError("LocalSession.call takes function-form calls; stdio calls run through Sandbox.run")
        if self._closed:
            raise SandboxError("this session is closed")
        started = time.monotonic()
        if self._dead is None:
            request = {"function": call.function, "args": encode_value(tuple(call.args))}
            self._queue_write(self._request_w, json.dumps(request).encode() + b"\n")
            why = self._pump(started + self.limits.timeout_s, want_record=True)
            if why == "record":
                self._drain()
                result = self._result_from_record(self._records.pop(0))
            elif why == "exit":
                self._drain()
                self._dead = self._death_status()
                result = CallResult(*self._dead[:1], error=self._dead[1])
            elif why == "timeout":
                self._end("timeout", f"the call took more than {self.limits.timeout_s:g} s")
                result = CallResult("timeout", error=self._dead[1])
            else:
                self._end("output_limit", f"more than {self.limits.output_bytes} bytes on one output stream")
                result = CallResult("output_limit", error=self._dead[1])
        else:
            result = CallResult(self._dead[0], error=f"the session ended before this call: {self._dead[1]}")
        result.stdout, result.stderr = self._take_output()
        result.exit_code = self.exit_code
        result.seconds = time.monotonic() - started
        return result

    @staticmethod
    def _result_from_record(record: dict) -> CallResult:
        status = record.get("status")
        if status == "ok":
            try:
                return CallResult("ok", value=decode_value(record.get("value")))
            except (ValueError, TypeError, RecursionError, MemoryError) as exc:
                return CallResult("no_result", error=f"unreadable result record: {type(exc).__name__}: {exc}"[:500])
        if status in ("error", "memory", "no_result"):
            error = record.get("error", "")
            return CallResult(status, error=error[:2000] if type(error) is str else "malformed error in the record")
        return CallResult("no_result", error="malformed result record")

    # -- stdio form --------------------------------------------------------------------------------

    def finish(self) -> CallResult:
        """stdio form: wait for the program to end (or kill it at the timeout) and report."""
        started = time.monotonic()
        why = self._pump(started + self.limits.timeout_s, want_record=False, want_done=True)
        if why == "timeout":
            self._end("timeout", f"the program ran longer than {self.limits.timeout_s:g} s")
        elif why != "exit":
            self._end("output_limit", f"more than {self.limits.output_bytes} bytes on one output stream")
        else:
            self._drain()
        if self._dead:
            status, error = self._dead
        elif self._records:
            record = self._records[0]
            status = record.get("status") if record.get("status") in ("ok", "error", "memory") else "no_result"
            error = str(record.get("error", ""))[:2000]
            if self.exit_code is None and type(record.get("exit")) is int:
                self.exit_code = record["exit"]  # what the program exited with; the monitor confirms later
        else:
            status, error = self._death_status()
            if self.exit_code is not None and self.exit_code >= 0:
                status, error = ("ok", "") if self.exit_code == 0 else ("error", f"exit code {self.exit_code}")
        stdout, stderr = self._take_output()
        return CallResult(status, stdout=stdout, stderr=stderr, error=error, exit_code=self.exit_code,
                          seconds=time.monotonic() - started)

    # -- lifetime ----------------------------------------------------------------------------------

    def close(self) -> None:
        """End this session; the worker is stopped and replaced by a fresh spare in the background."""
        if self._closed:
            return
        self._closed = True
        self._sandbox.retire(self)

    def teardown(self) -> None:
        """End the worker (EOF on its requests, SIGKILL after 0.5 s) and release the descriptors."""
        if self._torn_down:
            return
        self._torn_down = self._closed = True
        try:
            if self._fds and hasattr(self, "_ctl"):
                if self._request_w in self._fds:  # EOF on requests: the worker exits by itself
                    if self._request_w in self._pending:
                        self._selector.unregister(self._request_w)
                        del self._pending[self._request_w]
                    os.close(self._request_w)
                    self._fds.remove(self._request_w)
                if self._pump(time.monotonic() + 0.5, want_record=False) != "exit":
                    self._kill()
        finally:
            self._selector.close()
            for fd in self._fds:
                try:
                    os.close(fd)
                except OSError:  # EBADF: closed already on another path (stdin at EOF); nothing else can fail here
                    pass
            self._fds = []
            if hasattr(self, "_ctl"):
                self._ctl.close()
