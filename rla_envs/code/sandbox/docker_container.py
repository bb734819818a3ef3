"""One container of the docker sandbox, seen from the host: how it is made, and the stream to its agent.

The container runs the agent (:mod:`~rla_envs.code.sandbox.docker_agent`) as pid 1 with no network, an IPC
namespace of its own without ``/dev/shm``, a read-only root, a small ``noexec`` tmpfs work dir, pids, memory
and CPU limits, every capability dropped,
``no-new-privileges`` and a non-root uid of its slot. The host talks to the agent over the attached
stdin/stdout (a multiplexed stream: 8-byte frame headers, see :func:`take_frames`). A container that stops
answering is no longer trusted: it is removed and replaced by a fresh one.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import time
from typing import TYPE_CHECKING, Any

from rla_envs.code.sandbox.base import SandboxError
from rla_envs.code.sandbox.bootstrap import bootstrap_program
from rla_envs.code.sandbox.docker_image import IMAGE_CODE_ROOT
from rla_envs.code.sandbox.docker_protocol import WORK_DIR
from rla_envs.core.docker import remove_container

if TYPE_CHECKING:
    from rla_envs.code.sandbox.docker import DockerSandbox

__all__ = ["AgentContainer", "LABEL", "take_frames"]

LABEL = "rla.sandbox"
"""Label on every container the docker sandbox starts (value: the sandbox instance id)."""
START_TIMEOUT_S = 60.0
STDERR_KEPT = 8192  # bytes of the agent's stderr kept for error messages
_AGENT = bootstrap_program("from rla_envs.code.sandbox.docker_agent import main\nmain()")
_STDOUT, _STDERR = 1, 2  # stream kinds in the attach stream's frame headers


def take_frames(frames: bytearray) -> list[tuple[int, bytes]]:
    """Remove the complete frames from the start of an attach stream, ``(stream kind, payload)`` each;
    an incomplete frame stays in ``frames`` for the next bytes."""
    taken = []
    while len(frames) >= 8:
        kind, size = frames[0], struct.unpack(">I", frames[4:8])[0]
        if len(frames) < 8 + size:
            break
        taken.append((kind, bytes(frames[8:8 + size])))
        del frames[:8 + size]
    return taken


class AgentContainer:
    """Slot ``index``'s container of ``sandbox`` and the attached stream to its agent (started at once)."""

    def __init__(self, sandbox: DockerSandbox, index: int) -> None:
        self._sandbox, self.index = sandbox, index
        self.container: Any = None
        self._sock: Any = None
        self._raw: socket.socket | None = None
        self.alive = False
        self.hello: dict = {}
        self._start()

    def _start(self) -> None:
        import docker.errors

        try:
            self.container = self._create()
            self._sock = self._sandbox.client.api.attach_socket(
                self.container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            self._raw = getattr(self._sock, "_sock", self._sock)
            self.container.start()
        except docker.errors.APIError as exc:
            self.stop(quiet=True)
            raise SandboxError(f"cannot start a sandbox container from {self._sandbox.image!r}: {exc}") from exc
        self._raw.settimeout(None)
        self._lines = bytearray()  # the agent's stdout, demultiplexed
        self._frames = bytearray()  # the raw attach stream
        self._stderr = bytearray()
        self.alive = True
        reply = self.request({"op": "hello"}, START_TIMEOUT_S)
        if type(reply.get("hello")) is not dict:
            detail = reply.get("lost", [None, reply.get("error")])[1]
            logs = self._logs()
            self.stop(quiet=True)
            raise SandboxError(f"the sandbox agent in {self._sandbox.image!r} did not start: {detail}; {logs}")
        self.hello = reply["hello"]

    def _create(self) -> Any:
        from docker.types import Ulimit

        sandbox = self._sandbox
        uid = sandbox.uid_base + self.index
        return sandbox.client.containers.create(
            sandbox.image,
            command=["/usr/bin/python3", "-s", "-c", _AGENT, IMAGE_CODE_ROOT],
            entrypoint=[], user=f"{uid}:{uid}", working_dir=WORK_DIR,
            stdin_open=True, tty=False, detach=True,
            environment={"PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
            network_mode="none", ipc_mode="none", read_only=True,
            tmpfs={WORK_DIR: f"rw,nosuid,nodev,noexec,size={sandbox.work_mb}m,mode=1777"},
            mem_limit=f"{sandbox.memory_mb}m", memswap_limit=f"{sandbox.memory_mb}m",
            pids_limit=sandbox.pids_limit, nano_cpus=int(sandbox.cpus * 1e9),
            cap_drop=["ALL"], security_opt=["no-new-privileges"],
            ulimits=[Ulimit(name="nofile", soft=4096, hard=4096),
                     Ulimit(name="nproc", soft=sandbox.pids_limit, hard=sandbox.pids_limit),
                     Ulimit(name="core", soft=0, hard=0)],
            labels={LABEL: sandbox.instance, f"{LABEL}.slot": str(self.index)},
            name=f"rla-sandbox-{sandbox.instance}-{self.index}",
        )

    def _logs(self) -> str:
        """The agent's last stderr, from the stream or else from the container's log."""
        import docker.errors

        text = bytes(self._stderr).decode("utf-8", "replace")
        if not text and self.container is not None:
            try:
                text = self.container.logs(stdout=False, stderr=True, tail=20).decode("utf-8", "replace")
            except docker.errors.APIError as exc:  # removed under us: say so instead of the log
                text = f"(its log could not be read: {exc})"
        return f"agent stderr: {text.strip()[-1500:]!r}"

    def send(self, message: dict) -> bool:
        """Write one request line; False (and the container marked dead) if the stream is closed."""
        try:
            self._raw.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")
            return True
        except OSError:
            self.alive = False
            return False

    def request(self, message: dict, timeout_s: float) -> dict:
        """Send ``message``, return the agent's reply (``{"lost": [status, why]}`` if the container stopped
        answering: it is then replaced by a fresh one)."""
        if not self.alive:
            why = self._restart()
            if why:
                return {"lost": ["crashed", why]}
        if not self.send(message):
            return self._lost("crashed", "the sandbox container closed its stream")
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._read_line(deadline)
            if line is None:
                if time.monotonic() >= deadline:
                    return self._lost("timeout", f"the sandbox container did not answer within {timeout_s:g} s")
                return self._lost("crashed", f"the sandbox container stopped ({self._logs()})")
            try:
                reply = json.loads(line)
            except (ValueError, RecursionError, MemoryError):  # e.g. a reply nested thousands of levels deep
                return self._lost("no_result", "malformed reply from the sandbox agent")
            if type(reply) is not dict:
                return self._lost("no_result", "malformed reply from the sandbox agent")
            if "ended" in reply:  # the acknowledgement of the previous session's end
                continue
            return reply

    def _lost(self, status: str, why: str) -> dict:
        """The container is no longer trusted to follow the protocol: replace it."""
        self.alive = False
        restart_error = self._restart()
        if restart_error:
            why += f"; restarting the container failed: {restart_error}"
        return {"lost": [status, why]}

    def _restart(self) -> str | None:
        self.stop(quiet=True)
        if self._sandbox.closed:
            return "the sandbox is closed"
        try:
            self._start()
            return None
        except SandboxError as exc:
            return str(exc)

    def _read_line(self, deadline: float) -> bytes | None:
        """The next line of the agent's stdout; None at the deadline or the end of the stream."""
        while True:
            newline = self._lines.find(b"\n")
            if newline >= 0:
                line = bytes(self._lines[:newline])
                del self._lines[:newline + 1]
                return line
            for kind, payload in take_frames(self._frames):
                if kind == _STDOUT:
                    self._lines += payload
                elif kind == _STDERR:
                    self._stderr = (self._stderr + payload)[-STDERR_KEPT:]
            if b"\n" in self._lines:
                continue
            chunk = self._receive(deadline)
            if not chunk:
                return None
            self._frames += chunk

    def _receive(self, deadline: float) -> bytes:
        """The next bytes of the attach stream; b"" at the deadline or the end of the stream."""
        while (remaining := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self._raw], [], [], remaining)
            if not ready:
                return b""
            try:
                return self._raw.recv(1 << 20)
            except (BlockingIOError, InterruptedError):  # a spurious wake-up: wait again
                continue
            except OSError:  # the stream broke: as good as closed
                return b""
        return b""

    def stop(self, quiet: bool = False) -> None:
        """Remove the container (killing whatever runs in it), then close the stream."""
        self.alive = False
        container, self.container = self.container, None
        if container is not None:
            try:
                remove_container(container, error=SandboxError)
            except SandboxError:
                if not quiet:
                    raise
        for stream in (self._sock, self._raw):  # closing the SDK's SocketIO leaves the socket under it open
            if stream is not None:
                stream.close()
        self._sock = self._raw = None
