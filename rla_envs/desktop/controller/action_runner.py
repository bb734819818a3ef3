"""ActionRunner: agents' pyautogui code run in a worker process that a timeout or a reset can take back.

One worker (:mod:`controller.action_worker`) runs the actions one at a time, warm (pyautogui imported, X
connected), so an action costs a pipe round trip, not an interpreter start. An action that does not finish
within its time bound, or a reset that finds the worker busy, kills the worker's process group; an action
that ends the worker (``os._exit``, ``os.kill(os.getpid(), 9)``) is an error reply. Either way the next
action gets a fresh worker. A reset also replaces a worker that ran any action since the last reset, so no
thread or module state an agent left in it outlives its episode. Each worker starts in a Landlock domain of its own
(:mod:`controller.domain`, entered before its interpreter starts): the agent's code, and everything it starts, cannot
trace the desktop's core processes, the controller or the evaluator's commands.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from . import domain

__all__ = ["ActionRunner", "START_TIMEOUT_S"]

START_TIMEOUT_S = 30.0
"""How long a new worker may take to import pyautogui and connect to the display."""
_LINE_LIMIT = 1 << 20


class _LineReader:
    """Lines from a pipe, each waited for with a deadline (``select``), never blocking past it."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buffer = b""

    def read_line(self, deadline: float) -> bytes | None:
        """The next line; None when the deadline passes first; ``EOFError`` when the writer has gone."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError
            self._buffer += chunk
            if len(self._buffer) > _LINE_LIMIT:
                raise EOFError  # not a reply the worker writes: treat the worker as broken
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line


class _Worker:
    """One running worker process and its two pipes."""

    def __init__(self, env: dict[str, str], cwd: str):
        request_read, self._requests = os.pipe()
        reply_read, reply_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                domain.confined([sys.executable, "-m", "controller.action_worker", "--requests", str(request_read),
                                 "--replies", str(reply_write)]),
                env=env, cwd=cwd, pass_fds=(request_read, reply_write), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except BaseException:
            for fd in (request_read, reply_write, self._requests, reply_read):
                os.close(fd)
            raise
        os.close(request_read)
        os.close(reply_write)
        self._replies = _LineReader(reply_read)
        self.ready = False
        self.used = False
        self.taken_back = False  # a reset killed it
        self._closed = False

    def send(self, code: str) -> None:
        data = (json.dumps({"code": code}) + "\n").encode()
        view = memoryview(data)
        while view:  # a pipe takes 64 KiB at a time; a request is at most ~100 KiB
            view = view[os.write(self._requests, view):]

    def receive(self, deadline: float) -> dict | None:
        """The worker's next reply (None past ``deadline``); ``EOFError`` when the worker died or wrote garbage."""
        line = self._replies.read_line(deadline)
        if line is None:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            raise EOFError from None
        if not isinstance(message, dict):
            raise EOFError
        return message

    def kill_group(self) -> None:
        """SIGKILL the worker's process group (what its code started too, unless it left the group)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # the group is gone already (or its id was reused elsewhere)
            pass

    def kill(self, *, group: bool = True) -> int | None:
        """Kill the worker (with its process group unless ``group`` is false), collect it and close the pipes
        (once); its exit code (None if unknown)."""
        if group:
            self.kill_group()
        else:
            try:
                self.process.kill()
            except ProcessLookupError:  # gone already
                pass
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if not self._closed:
            self._closed = True
            os.close(self._requests)
            os.close(self._replies.fd)
        return code


class ActionRunner:
    """Runs pyautogui actions in a worker process, bounded in time, and takes the worker back on reset.

    Args:
        env: the worker's environment (the desktop's: ``DISPLAY`` and the buses).
        cwd: its working directory (the user's home).
        adopt: called with every worker's ``Popen`` as it starts (the process tracker collects its exit).
    """

    def __init__(self, env: dict[str, str], cwd: str, adopt: Callable[[subprocess.Popen], None] = lambda p: None):
        self.env, self.cwd, self._adopt = env, cwd, adopt
        self._worker: _Worker | None = None
        self._state = threading.Lock()     # guards self._worker (held only briefly)
        self._action = threading.Lock()    # one action at a time

    @property
    def pid(self) -> int | None:
        """The current worker's pid (None when none runs)."""
        worker = self._worker
        return worker.process.pid if worker is not None else None

    def start(self) -> None:
        """Start a worker if none runs; returns at once (the worker gets ready in the background)."""
        with self._state:
            if self._worker is None or self._worker.process.poll() is not None:
                if self._worker is not None:
                    self._worker.kill()
                self._worker = _Worker(self.env, self.cwd)
                self._adopt(self._worker.process)

    def run(self, code: str, timeout: float) -> dict:
        """Run ``code``; ``{"status": "success"|"error", "error": str}``, within ``timeout`` s (plus start-up)."""
        if not self._action.acquire(timeout=timeout):
            return {"status": "error", "error": f"another action was still running after {timeout:g} s"}
        try:
            self.start()
            worker = self._worker
            if not worker.ready:
                problem = self._wait_ready(worker)
                if problem:
                    return {"status": "error", "error": problem}
            worker.used = True
            try:
                worker.send(code)
                reply = worker.receive(time.monotonic() + timeout)
            except (EOFError, OSError):
                if worker.taken_back:
                    self._discard(worker, "")
                    return {"status": "error", "error": "the action was stopped: the session was reset"}
                return {"status": "error", "error": self._discard(worker, "the action ended the process that "
                                                                  "runs actions")}
            if reply is None:
                self._discard(worker, "")
                return {"status": "error", "error": f"the action did not finish within {timeout:g} s and was "
                        "stopped (its process was killed; the next action gets a new one)"}
            return {"status": str(reply.get("status", "error")), "error": str(reply.get("error", ""))}
        finally:
            self._action.release()

    def _wait_ready(self, worker: _Worker) -> str | None:
        """Wait for a new worker's hello; the problem text when it does not come."""
        try:
            hello = worker.receive(time.monotonic() + START_TIMEOUT_S)
        except (EOFError, OSError):
            return self._discard(worker, "the process that runs actions did not start")
        if hello is None:
            self._discard(worker, "")
            return f"the process that runs actions was not ready within {START_TIMEOUT_S:g} s"
        if not hello.get("ready"):
            self._discard(worker, "")
            return f"the process that runs actions could not start: {hello.get('error')}"
        worker.ready = True
        return None

    def _discard(self, worker: _Worker, what: str) -> str:
        """Kill ``worker`` and forget it; ``what`` and its exit code as a sentence."""
        with self._state:
            if self._worker is worker:
                self._worker = None
        code = worker.kill()
        return f"{what} (exit code {code}); the next action gets a new one"

    def reset(self) -> None:
        """Take the worker back: kill it when it is busy, dead or was used since the last reset.

        An action still running is stopped (its request gets an error reply). Start a new worker with
        :meth:`start` once the session's other processes are cleared.
        """
        with self._state:
            worker = self._worker
            if worker is None:
                return
            if not (worker.used or worker.process.poll() is not None or self._action.locked()):
                return
            self._worker = None
            worker.taken_back = True
        worker.kill_group()  # a running action's receive() sees the pipe close and returns at once
        if self._action.acquire(timeout=10):  # then its pipes can be closed without pulling them from under it
            try:
                worker.kill()
            finally:
                self._action.release()

    def end_episode(self) -> None:
        """Kill the worker that ran this episode's actions, but not its process group: an app the agent's code
        started stays for the evaluator (:mod:`controller.quiesce` judges it). The next action gets a new worker."""
        with self._state:
            worker, self._worker = self._worker, None
            if worker is None:
                return
            worker.taken_back = True
        worker.process.kill()  # a running action's receive() sees the pipe close and returns at once
        if self._action.acquire(timeout=10):  # then its pipes can be closed without pulling them from under it
            try:
                worker.kill(group=False)
            finally:
                self._action.release()

    def close(self) -> None:
        """Kill the worker (the controller is stopping)."""
        with self._state:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill()
