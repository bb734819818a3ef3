"""The ``docker`` sandbox: the local backend's fork server and runner, inside long-lived containers.

One container per worker slot, made from ``containers/code-sandbox`` (build it with
``containers/code-sandbox/build.sh``) and started through the Docker SDK against any Docker-API
socket (``base_url=``, else ``DOCKER_HOST``; on machines without a Docker daemon
``scripts/start-docker-api.sh`` starts podman's). Each container runs with no network
(``network_mode="none"``), a read-only root, a small ``noexec`` tmpfs ``/work``, pids and memory
limits, every capability dropped, ``no-new-privileges`` and a non-root uid of its own
(``uid_base + slot``).

Inside, pid 1 is an **agent** (:func:`agent_main`, this module) that serves the host over the
container's attached stdin/stdout, one JSON line per message, and keeps a warm spare worker made by
the project's own :mod:`~rla_envs.code.sandbox.forkserver` and :mod:`~rla_envs.code.sandbox.session`
code: the program runs in :mod:`~rla_envs.code.sandbox.runner` under rlimits, Landlock and seccomp
where the container's kernel and seccomp profile allow them (reported by :meth:`capabilities`), its
stdout/stderr on pipes capped at ``Limits.output_bytes``, its results on a record pipe of their own
(never its stdout). After every session the agent SIGKILLs every other process in the container
(setsid and daemon escapes included) and empties ``/work``.

Whatever comes back is only a claim: the host decodes values strictly into exact builtin types
(:func:`~rla_envs.code.sandbox.base.decode_value`) and grading, with the expected outputs, stays here.

Example::

    from rla_envs.code.sandbox import Call, make_sandbox

    with make_sandbox("docker", slots=2) as sandbox:
        [result] = sandbox.run("def solve(x):\\n    return x + 1\\n", [Call(function="solve", args=(1,))])
        assert result.status == "ok" and result.value == 2
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import select
import socket
import struct
import time
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from rla_envs.code.sandbox.base import (Call, CallResult, ClosesOnExit, Limits, SandboxError, decode_value,
                                        encode_value)

__all__ = ["DockerSandbox", "DockerSession", "DEFAULT_IMAGE", "source_hash", "agent_main"]

DEFAULT_IMAGE = "rla-code-sandbox:latest"
PROTOCOL = "1"
"""Version of the host ↔ agent protocol; the image carries it as label ``rla.sandbox.protocol``."""
LABEL = "rla.sandbox"
"""Label on every container this backend starts (value: the sandbox instance id)."""
WORK_DIR = "/work"
IMAGE_CODE_ROOT = "/opt/rla"
BUILD_HINT = "build it with containers/code-sandbox/build.sh"
_REPLY_MARGIN_S = 15.0  # beyond the program's own limits, how long the host waits for the agent
_START_TIMEOUT_S = 60.0


def source_files(root: str | Path | None = None) -> list[str]:
    """The files the image carries (relative to the repository root), sorted."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[3]
    shared = ["rla_envs/core/errors.py", "rla_envs/core/closing.py"]  # what the sandbox modules import from core
    files = shared + [f"rla_envs/code/sandbox/{p.name}" for p in (root / "rla_envs/code/sandbox").glob("*.py")]
    return sorted(files)


def source_hash(root: str | Path | None = None) -> str:
    """Digest of the sandbox sources; ``build.sh`` stores the same digest in the image label
    ``rla.sandbox.source-hash`` (sha256 over ``path\\nsha256(content)\\n`` per file, sorted)."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[3]
    lines = "".join(f"{name}\n{hashlib.sha256((root / name).read_bytes()).hexdigest()}\n" for name in source_files(root))
    return hashlib.sha256(lines.encode()).hexdigest()


# Started as pid 1 of every container: skips the package __init__ files (the image holds only the
# sandbox package), then serves the host on stdin/stdout.
_BOOTSTRAP = """
import sys, types
root = sys.argv[1]
for name in ("rla_envs", "rla_envs.core", "rla_envs.code", "rla_envs.code.sandbox"):
    package = types.ModuleType(name)
    package.__path__ = [root + "/" + name.replace(".", "/")]
    sys.modules[name] = package
from rla_envs.code.sandbox.docker import agent_main
agent_main()
"""


# ---------------------------------------------------------------------------------------------------
# Host side


class DockerSandbox(ClosesOnExit):
    """Runs untrusted Python programs in long-lived containers, one per slot, through a Docker-API socket.

    Args:
        image: the image built by ``containers/code-sandbox/build.sh``.
        slots: concurrent sessions (one container each; more callers wait for a free slot).
        base_url: the Docker-API socket (``unix://...``, ``tcp://...``); default ``DOCKER_HOST`` or the
            platform default.
        memory_mb: memory limit of each container (swap included); per-program limits
            (``Limits.memory_mb``) apply inside it as RLIMIT_AS.
        pids_limit: processes and threads per container (the cgroup pids controller).
        work_mb: size of the tmpfs ``/work`` where programs may write.
        uid_base: slot ``i`` runs as uid ``uid_base + i`` (non-root; no passwd entry needed).
        check_image: refuse an image built from other sandbox sources than this checkout's.
        client: an existing ``docker.DockerClient`` (then ``base_url`` is ignored).
    """

    name = "docker"

    def __init__(self, image: str = DEFAULT_IMAGE, slots: int = 2, base_url: str | None = None, *,
                 memory_mb: int = 2048, pids_limit: int = 256, work_mb: int = 64, uid_base: int = 62000,
                 check_image: bool = True, client: Any = None) -> None:
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        if not 1 <= uid_base <= 65535 - slots:
            raise ValueError(f"uid_base must be a non-root uid with room for {slots} slots below 65536, got {uid_base}")
        if memory_mb < 128 or pids_limit < 16 or work_mb < 1:
            raise ValueError("memory_mb >= 128, pids_limit >= 16 and work_mb >= 1 are needed")
        self.image, self.slots = image, slots
        self.memory_mb, self.pids_limit, self.work_mb, self.uid_base = memory_mb, pids_limit, work_mb, uid_base
        self.instance = uuid.uuid4().hex[:16]
        self._closed = False
        self._slots: list[_Slot] = []
        self._free: queue.Queue = queue.Queue()
        self._sessions: weakref.WeakSet[DockerSession] = weakref.WeakSet()
        self._client = client if client is not None else connect(base_url)
        self._image_info = self._check_image(check_image)
        try:
            for index in range(slots):
                slot = _Slot(self, index)
                self._slots.append(slot)
                self._free.put(slot)
        except BaseException:
            self.close()
            raise
        agent = dict(self._slots[0].hello)
        self._caps = {
            "backend": "docker", "image": image, "image_id": self._image_info["id"], "slots": slots,
            "server": self._image_info["server"], "network": "none", "read_only_root": True,
            "work_tmpfs_mb": work_mb, "memory_mb": memory_mb, "pids_limit": pids_limit,
            "cap_drop": "ALL", "no_new_privileges": True, "uids": [uid_base, uid_base + slots - 1],
            "root": False, "uid_switch": agent.get("uid") != 0, "netns": True,
            "pidns": True,  # the container's own PID namespace; every session ends with a sweep of it
            "landlock": bool(agent.get("landlock")), "landlock_abi": agent.get("landlock_abi", 0),
            "seccomp": bool(agent.get("seccomp")), "agent": agent,
            "rlimits": ["RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE"],
        }

    def _check_image(self, check: bool) -> dict:
        import docker.errors

        try:
            image = self._client.images.get(self.image)
        except docker.errors.ImageNotFound:
            raise SandboxError(f"the sandbox image {self.image!r} is not on the Docker-API server; {BUILD_HINT}") from None
        except docker.errors.APIError as exc:
            raise SandboxError(f"cannot inspect the sandbox image {self.image!r}: {exc}") from exc
        labels = (image.attrs.get("Config") or {}).get("Labels") or image.labels or {}
        if labels.get("rla.sandbox.protocol") != PROTOCOL:
            raise SandboxError(f"the image {self.image!r} is not an rla code-sandbox image of protocol {PROTOCOL} "
                               f"(labels: {labels}); {BUILD_HINT}")
        if check and labels.get("rla.sandbox.source-hash") != source_hash():
            raise SandboxError(f"the image {self.image!r} was built from other sandbox sources than this checkout "
                               f"(image {str(labels.get('rla.sandbox.source-hash'))[:12]}, here {source_hash()[:12]}); "
                               f"rebuild it with containers/code-sandbox/build.sh, or pass check_image=False")
        try:
            server = self._client.version().get("Components", [{}])[0].get("Name") or "docker-api"
        except Exception:
            server = "docker-api"
        return {"id": image.id, "server": server}

    # -- slots -------------------------------------------------------------------------------------

    def _acquire(self) -> "_Slot":
        if self._closed:
            raise SandboxError("this sandbox is closed")
        slot = self._free.get()
        if slot is None:
            self._free.put(None)
            raise SandboxError("this sandbox is closed")
        return slot

    def _release(self, slot: "_Slot") -> None:
        if self._closed:
            slot.stop(quiet=True)
        else:
            self._free.put(slot)

    # -- public API --------------------------------------------------------------------------------

    def capabilities(self) -> dict:
        """What confinement is active: the container settings and what the agent could set up inside."""
        return dict(self._caps)

    def session(self, program: str, limits: Limits = Limits()) -> "DockerSession":
        """Load ``program`` once as module ``solution``; the session serves function calls in order."""
        return DockerSession(self, program, limits, cpu_s=int(limits.timeout_s * 100) + 1)

    def run(self, program: str, calls: Sequence[Call], limits: Limits = Limits()) -> list[CallResult]:
        """Run every call: function calls in one session (in order), each stdio call in a fresh process
        (spread over the free slots). If a function call kills the session, later calls report its status."""
        results: list[CallResult | None] = [None] * len(calls)
        function_calls = [i for i, c in enumerate(calls) if c.form == "function"]
        if function_calls:
            cpu_s = int(limits.timeout_s * (len(function_calls) + 1)) + 1
            with DockerSession(self, program, limits, cpu_s=cpu_s) as session:
                for i in function_calls:
                    results[i] = session.call(calls[i])
        stdio_calls = [i for i, c in enumerate(calls) if c.form == "stdio"]
        if len(stdio_calls) == 1 or (stdio_calls and self.slots == 1):
            for i in stdio_calls:
                results[i] = self._run_stdio(program, calls[i], limits)
        elif stdio_calls:
            with ThreadPoolExecutor(max_workers=min(self.slots, len(stdio_calls))) as pool:
                for i, result in zip(stdio_calls, pool.map(lambda i: self._run_stdio(program, calls[i], limits),
                                                           stdio_calls)):
                    results[i] = result
        return results  # type: ignore[return-value]

    def _run_stdio(self, program: str, call: Call, limits: Limits) -> CallResult:
        slot = self._acquire()
        try:
            started = time.monotonic()
            reply = slot.request({"op": "start", "form": "stdio", "program": program, "limits": _limits_dict(limits),
                                  "cpu_s": int(limits.timeout_s) + 1, "stdin": call.stdin},
                                 limits.timeout_s + _REPLY_MARGIN_S)
            result = _result_from_reply(reply, started)
        finally:
            self._release(slot)
        return result

    def close(self) -> None:
        """Stop and remove every container of this sandbox."""
        if self._closed:
            return
        self._closed = True
        self._free.put(None)  # wakes waiters
        errors = []
        for slot in self._slots:
            try:
                slot.stop()
            except SandboxError as exc:
                errors.append(str(exc))
        self._slots = []
        if errors:
            raise SandboxError("; ".join(errors))


def connect(base_url: str | None = None, timeout: float = 120):
    """A ``docker.DockerClient`` for ``base_url`` (default ``DOCKER_HOST``) that answered a ping, or
    :class:`SandboxError` saying why not."""
    try:
        import docker
    except ImportError as exc:
        raise SandboxError("the docker sandbox needs the docker SDK: pip install \"rla[docker]\"") from exc
    where = base_url or os.environ.get("DOCKER_HOST") or "the default socket"
    try:
        client = docker.DockerClient(base_url=base_url, timeout=timeout) if base_url else docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:
        raise SandboxError(f"no Docker-API server answers at {where}: {type(exc).__name__}: {exc}. Start a Docker "
                           "daemon, or podman's socket with scripts/start-docker-api.sh and set DOCKER_HOST") from None
    return client


def _limits_dict(limits: Limits) -> dict:
    return {"timeout_s": limits.timeout_s, "memory_mb": limits.memory_mb, "output_bytes": limits.output_bytes,
            "file_size_mb": limits.file_size_mb, "open_files": limits.open_files, "processes": limits.processes}


def _result_from_reply(reply: dict, started: float) -> CallResult:
    """A CallResult from the agent's reply, checked field by field (the agent's word is only a claim)."""
    seconds = time.monotonic() - started
    if "lost" in reply:
        return CallResult(reply["lost"][0], error=reply["lost"][1], seconds=seconds)
    record = reply.get("result")
    if type(record) is not dict:
        error = reply.get("error") if type(reply.get("error")) is str else "malformed reply from the sandbox agent"
        return CallResult("no_result", error=error[:2000], seconds=seconds)
    status = record.get("status")
    if status not in ("ok", "error", "timeout", "memory", "output_limit", "crashed", "no_result"):
        return CallResult("no_result", error="malformed result record", seconds=seconds)
    result = CallResult(status, seconds=seconds)
    for name in ("stdout", "stderr", "error"):
        value = record.get(name, "")
        setattr(result, name, value if type(value) is str else "")
    code = record.get("exit_code")
    result.exit_code = code if type(code) is int else None
    if status == "ok" and "value" in record:
        try:
            result.value = decode_value(record["value"])
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            return CallResult("no_result", error=f"unreadable result record: {type(exc).__name__}: {exc}"[:500],
                              stdout=result.stdout, stderr=result.stderr, exit_code=result.exit_code, seconds=seconds)
    return result


class DockerSession(ClosesOnExit):
    """A program loaded in one slot's container (see :meth:`DockerSandbox.session`); a context manager."""

    def __init__(self, sandbox: DockerSandbox, program: str, limits: Limits, cpu_s: int) -> None:
        self._sandbox, self.limits = sandbox, limits
        self._slot: _Slot | None = sandbox._acquire()
        self._closed = False
        self._lost: tuple[str, str] | None = None
        sandbox._sessions.add(self)
        reply = self._slot.request({"op": "start", "form": "function", "program": program,
                                    "limits": _limits_dict(limits), "cpu_s": cpu_s},
                                   limits.timeout_s + _REPLY_MARGIN_S)
        if "lost" in reply:
            self._lost = tuple(reply["lost"])  # type: ignore[assignment]
        elif reply.get("started") is not True:
            self._lost = ("no_result", str(reply.get("error", "the sandbox agent refused the program"))[:2000])

    def call(self, call: Call) -> CallResult:
        """Run one function-form call in the loaded program."""
        if call.form != "function":
            raise ValueError("DockerSession.call takes function-form calls; stdio calls run through Sandbox.run")
        if self._closed:
            raise SandboxError("this session is closed")
        started = time.monotonic()
        if self._lost is not None:
            return CallResult(self._lost[0], error=f"the session ended before this call: {self._lost[1]}",
                              seconds=time.monotonic() - started)
        reply = self._slot.request({"op": "call", "function": call.function, "args": encode_value(tuple(call.args))},
                                   self.limits.timeout_s + _REPLY_MARGIN_S)
        if "lost" in reply:
            self._lost = tuple(reply["lost"])  # type: ignore[assignment]
        return _result_from_reply(reply, started)

    def close(self) -> None:
        """End the session; its container sweeps itself and makes a fresh spare for the next one."""
        if self._closed:
            return
        self._closed = True
        slot, self._slot = self._slot, None
        if slot is not None:
            if slot.alive:
                slot.send({"op": "end"})  # the agent's "ended" reply is skipped by the next request
            self._sandbox._release(slot)


class _Slot:
    """One container and the attached stream to its agent."""

    def __init__(self, sandbox: DockerSandbox, index: int) -> None:
        self._sandbox, self.index = sandbox, index
        self.container = None
        self._sock: Any = None
        self._raw: socket.socket | None = None
        self.alive = False
        self.hello: dict = {}
        self._start()

    def _start(self) -> None:
        import docker.errors
        from docker.types import Ulimit

        sandbox = self._sandbox
        uid = sandbox.uid_base + self.index
        client = sandbox._client
        try:
            self.container = client.containers.create(
                sandbox.image,
                command=["/usr/bin/python3", "-s", "-c", _BOOTSTRAP, IMAGE_CODE_ROOT],
                entrypoint=[], user=f"{uid}:{uid}", working_dir=WORK_DIR,
                stdin_open=True, tty=False, detach=True,
                environment={"PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
                network_mode="none", read_only=True,
                tmpfs={WORK_DIR: f"rw,nosuid,nodev,noexec,size={sandbox.work_mb}m,mode=1777"},
                mem_limit=f"{sandbox.memory_mb}m", memswap_limit=f"{sandbox.memory_mb}m",
                pids_limit=sandbox.pids_limit, cap_drop=["ALL"], security_opt=["no-new-privileges"],
                ulimits=[Ulimit(name="nofile", soft=4096, hard=4096),
                         Ulimit(name="nproc", soft=sandbox.pids_limit, hard=sandbox.pids_limit),
                         Ulimit(name="core", soft=0, hard=0)],
                labels={LABEL: sandbox.instance, f"{LABEL}.slot": str(self.index)},
                name=f"rla-sandbox-{sandbox.instance}-{self.index}",
            )
            self._sock = client.api.attach_socket(self.container.id, params={"stdin": 1, "stdout": 1, "stderr": 1,
                                                                            "stream": 1})
            self._raw = getattr(self._sock, "_sock", self._sock)
            self.container.start()
        except docker.errors.APIError as exc:
            self.stop(quiet=True)
            raise SandboxError(f"cannot start a sandbox container from {sandbox.image!r}: {exc}") from exc
        self._raw.settimeout(None)
        self._buffer = bytearray()  # demultiplexed stdout of the agent
        self._frames = bytearray()  # raw attach stream
        self._stderr = bytearray()
        self.alive = True
        reply = self.request({"op": "hello"}, _START_TIMEOUT_S)
        if type(reply.get("hello")) is not dict:
            detail = reply.get("lost", [None, reply.get("error")])[1]
            logs = self._logs()
            self.stop(quiet=True)
            raise SandboxError(f"the sandbox agent in {sandbox.image!r} did not start: {detail}; {logs}")
        self.hello = reply["hello"]

    def _logs(self) -> str:
        text = bytes(self._stderr).decode("utf-8", "replace")
        try:
            text = text or self.container.logs(stdout=False, stderr=True, tail=20).decode("utf-8", "replace")
        except Exception:
            pass
        return f"agent stderr: {text.strip()[-1500:]!r}"

    def send(self, message: dict) -> bool:
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
            except ValueError:
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
        if self._sandbox._closed:
            return "the sandbox is closed"
        try:
            self._start()
            return None
        except SandboxError as exc:
            return str(exc)

    def _read_line(self, deadline: float) -> bytes | None:
        """The next line of the agent's stdout from the multiplexed attach stream (8-byte frame headers)."""
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[:newline + 1]
                return line
            while len(self._frames) >= 8:
                kind, size = self._frames[0], struct.unpack(">I", self._frames[4:8])[0]
                if len(self._frames) < 8 + size:
                    break
                payload = self._frames[8:8 + size]
                del self._frames[:8 + size]
                if kind == 1:
                    self._buffer += payload
                elif kind == 2:
                    self._stderr = (self._stderr + payload)[-8192:]
            if b"\n" in self._buffer:
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._raw], [], [], remaining)
            if not ready:
                return None
            try:
                chunk = self._raw.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                chunk = b""
            if not chunk:
                return None
            self._frames += chunk

    def stop(self, quiet: bool = False) -> None:
        """Remove the container (killing whatever runs in it), then close the stream."""
        self.alive = False
        container, self.container = self.container, None
        if container is not None:
            try:
                _remove(container)
            except SandboxError:
                if not quiet:
                    raise
        for closer in (self._sock, self._raw):
            try:
                if closer is not None:
                    closer.close()
            except Exception:
                pass
        self._sock = self._raw = None


def _remove(container: Any, attempts: int = 50) -> None:
    """``remove(force=True)``, retried while the server reports the container busy (podman answers 500
    while the container is still stopping)."""
    import docker.errors

    last: Exception | None = None
    for _ in range(attempts):
        try:
            container.remove(force=True)
            return
        except docker.errors.NotFound:
            return
        except Exception as exc:
            last = exc
            time.sleep(0.1)
    raise SandboxError(f"could not remove sandbox container {container.id[:12]}: {last}")


# ---------------------------------------------------------------------------------------------------
# Container side: the agent (pid 1 of each container)


def agent_main() -> None:
    """Serve the host on stdin/stdout: ``hello``, ``start``, ``call`` and ``end`` requests, one JSON line each."""
    import io
    import shutil
    import signal
    import sys

    from rla_envs.code.sandbox import confine, forkserver, readable
    from rla_envs.code.sandbox.session import LocalSession

    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    for fd in (proto_in, proto_out):
        os.set_inheritable(fd, False)
    try:  # other processes of this uid may not read or write this one's memory through /proc
        confine._prctl(4, 0)  # PR_SET_DUMPABLE
    except OSError:
        pass
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    caps: dict = {"root": os.geteuid() == 0, "unsafe": True, "uid": os.getuid(), "pid": os.getpid(),
                  "python": sys.version.split()[0]}
    caps["landlock_abi"] = confine.landlock_abi()
    caps["seccomp"] = confine.seccomp_program() is not None
    caps["work_root"] = WORK_DIR
    caps.update(forkserver._probe(caps, os.getuid()))
    forkserver.set_plan(readable.read_plan(), {})  # the image holds no package but the sandbox's own
    seccomp_filter = confine.seccomp_program() if caps["seccomp"] else None
    me = os.getpid()

    class Server:
        """What a LocalSession needs of its sandbox: spawning a worker through the fork-server code."""

        uid_base = -1  # LocalSession's last-resort kill_uid(-1) matches nothing; the sweep below cleans up

        def _spawn(self, spec: dict, fds: list[int]) -> int:
            """Fork the session's monitor (as the fork server does), holding only the session's six child
            ends: a monitor that kept the agent's host ends (stdin, requests) would keep the worker from EOF."""
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid:
                return pid
            try:
                keep = sorted(set(fds))
                low = 3
                for fd in keep:
                    if fd > low:
                        os.closerange(low, fd)
                    low = max(low, fd + 1)
                os.closerange(low, os.sysconf("SC_OPEN_MAX"))
                forkserver._monitor(spec, fds, caps, seccomp_filter)
            except BaseException:
                os._exit(70)
            os._exit(0)

        def _retire(self, session: LocalSession) -> None:
            session._teardown()

    server = Server()

    def sweep() -> None:
        """SIGKILL every other process of the container, reap them, empty /work."""
        for _ in range(100):
            found = 0
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) == me:
                    continue
                try:
                    with open(f"/proc/{entry}/stat", "rb") as handle:
                        if handle.read().rpartition(b")")[2].split()[0] == b"Z":
                            continue
                    os.kill(int(entry), signal.SIGKILL)
                    found += 1
                except (OSError, IndexError):
                    pass
            reap()
            if not found:
                break
            time.sleep(0.001)
        for entry in os.listdir(WORK_DIR):
            path = os.path.join(WORK_DIR, entry)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                pass

    def reap() -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return

    def reply(message: dict) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(proto_out, view):]

    def serialise(result: CallResult, with_value: bool = False) -> dict:
        record = {"status": result.status, "stdout": result.stdout, "stderr": result.stderr, "error": result.error,
                  "exit_code": result.exit_code, "seconds": result.seconds}
        if with_value and result.status == "ok":
            record["value"] = encode_value(result.value)
        return record

    def finish(session: LocalSession | None) -> None:
        if session is not None:
            session._teardown()
        sweep()

    reader = io.open(proto_in, "rb", buffering=1 << 16)
    spare: LocalSession | None = None
    current: LocalSession | None = None
    while True:
        if spare is None and current is None:  # made after the sweep: the sweep kills every other process
            try:
                spare = LocalSession(server, 0)
            except BaseException as exc:  # reported on the next start
                spare = None
                spawn_error = f"{type(exc).__name__}: {exc}"
            else:
                spawn_error = ""
        line = reader.readline()
        if not line:
            break
        reap()
        try:
            message = json.loads(line)
            op = message.get("op")
            if op == "hello":
                reply({"hello": caps})
            elif op == "end":
                session, current = current, None
                reply({"ended": True})
                if session is not None:  # no session: the spare is fresh and nothing ran since the last sweep
                    finish(session)
            elif op == "start":
                if current is not None:
                    session, current = current, None
                    finish(session)
                if spare is None:
                    raise SandboxError(f"cannot start a worker: {spawn_error}")
                current, spare = spare, None
                limits = Limits(**message["limits"])
                stdin = message.get("stdin")
                current.start(message["program"], limits, message["form"], cpu_s=int(message["cpu_s"]),
                              stdin=stdin.encode("utf-8", "surrogateescape") if isinstance(stdin, str) else b"")
                if message["form"] == "stdio":
                    result = current.finish()
                    session, current = current, None
                    reply({"result": serialise(result)})
                    finish(session)
                else:
                    reply({"started": True})
            elif op == "call":
                if current is None:
                    raise SandboxError("no program is loaded")
                result = current.call(Call(function=message["function"], args=decode_value(message["args"])))
                reply({"result": serialise(result, with_value=True)})
            else:
                reply({"error": f"unknown request {op!r}"})
        except Exception as exc:  # report, keep serving
            try:
                reply({"error": f"{type(exc).__name__}: {exc}"[:2000]})
            except OSError:
                break
    for session in (current, spare):
        if session is not None:
            session._teardown()
    sweep()
    os._exit(0)
