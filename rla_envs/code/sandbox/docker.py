"""The ``docker`` sandbox: the local backend's fork server and runner, inside long-lived containers.

One container per worker slot, made from ``containers/code-sandbox`` (build it with
``containers/code-sandbox/build.sh``) and started through the Docker SDK against any Docker-API
socket (``base_url=``, else ``DOCKER_HOST``; on machines without a Docker daemon
``scripts/start-docker-api.sh`` starts podman's). Each container runs with no network
(``network_mode="none"``), an IPC namespace of its own without ``/dev/shm`` (``ipc_mode="none"``), a
read-only root, a small ``noexec`` tmpfs ``/work``, pids, memory and CPU limits (its own cgroup: slots
share the CPU by equal weight, each at most ``cpus`` cores), every capability dropped,
``no-new-privileges`` and a non-root uid of its own (``uid_base + slot``, never 65534/nobody).

Inside, pid 1 is an **agent** (:mod:`~rla_envs.code.sandbox.docker_agent`) that serves the host over the
container's attached stdin/stdout, one JSON line per message, and keeps a warm spare worker made by
the project's own :mod:`~rla_envs.code.sandbox.forkserver` and :mod:`~rla_envs.code.sandbox.session`
code: the program runs in :mod:`~rla_envs.code.sandbox.runner` under rlimits, Landlock and seccomp
where the container's kernel and seccomp profile allow them (reported by :meth:`capabilities`), its
stdout/stderr on pipes capped at ``Limits.output_bytes``, its results on a record pipe of their own
(never its stdout). After every session the agent SIGKILLs every other process in the container
(setsid and daemon escapes included) and empties ``/work``.

This module is the host's side; the container and its stream are in
:mod:`~rla_envs.code.sandbox.docker_container`, the messages in :mod:`~rla_envs.code.sandbox.docker_protocol`,
the image and its source check in :mod:`~rla_envs.code.sandbox.docker_image`.

Whatever comes back is only a claim: the host decodes values strictly into exact builtin types
(:func:`~rla_envs.code.sandbox.base.decode_value`) and grading, with the expected outputs, stays here.

Example::

    from rla_envs.code.sandbox import Call, make_sandbox

    with make_sandbox("docker", slots=2) as sandbox:
        [result] = sandbox.run("def solve(x):\\n    return x + 1\\n", [Call(function="solve", args=(1,))])
        assert result.status == "ok" and result.value == 2
"""

from __future__ import annotations

import queue
import time
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from rla_envs.code.sandbox.base import Call, CallResult, ClosesOnExit, Limits, SandboxError, encode_value
from rla_envs.code.sandbox.docker_container import LABEL, AgentContainer
from rla_envs.code.sandbox.docker_image import DEFAULT_IMAGE, checked_image
from rla_envs.code.sandbox.docker_protocol import limits_message, result_from_reply
from rla_envs.core.docker import connect, server_name

__all__ = ["DockerSandbox", "DockerSession", "DEFAULT_IMAGE", "LABEL"]

REPLY_MARGIN_S = 15.0  # beyond the program's own limits, how long the host waits for the agent


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
        cpus: CPU time each container may use per second of wall time, in cores.
        uid_base: slot ``i`` runs as uid ``uid_base + i`` (non-root; no passwd entry needed; the range
            may not hold 65534, nobody's uid on most hosts).
        check_image: refuse an image built from other sandbox sources than this checkout's.
        client: an existing ``docker.DockerClient`` (then ``base_url`` is ignored).
    """

    name = "docker"

    def __init__(self, image: str = DEFAULT_IMAGE, slots: int = 2, base_url: str | None = None, *,
                 memory_mb: int = 2048, pids_limit: int = 256, work_mb: int = 64, cpus: float = 1.0,
                 uid_base: int = 62000, check_image: bool = True, client: Any = None) -> None:
        check_settings(slots, uid_base, memory_mb, pids_limit, work_mb, cpus)
        self.image, self.slots = image, slots
        self.memory_mb, self.pids_limit, self.work_mb, self.uid_base = memory_mb, pids_limit, work_mb, uid_base
        self.cpus = cpus
        self.instance = uuid.uuid4().hex[:16]
        self._closed = False
        self._slots: list[AgentContainer] = []
        self._free: queue.Queue = queue.Queue()
        self._sessions: weakref.WeakSet[DockerSession] = weakref.WeakSet()
        self.client = client if client is not None else connect(base_url, error=SandboxError)
        image_id, server = checked_image(self.client, image, check_image).id, server_name(self.client)
        try:
            for index in range(slots):
                slot = AgentContainer(self, index)
                self._slots.append(slot)
                self._free.put(slot)
        except BaseException:
            self.close()
            raise
        agent = dict(self._slots[0].hello)
        self._caps = {
            "backend": "docker", "image": image, "image_id": image_id, "slots": slots,
            "server": server, "network": "none", "ipc": "none", "read_only_root": True,
            "work_tmpfs_mb": work_mb, "memory_mb": memory_mb, "pids_limit": pids_limit, "cpus": cpus,
            "cap_drop": "ALL", "no_new_privileges": True, "uids": [uid_base, uid_base + slots - 1],
            "root": False, "uid_switch": agent.get("uid") != 0, "netns": True,
            "pidns": True,  # the container's own PID namespace; every session ends with a sweep of it
            "landlock": bool(agent.get("landlock")), "landlock_abi": agent.get("landlock_abi", 0),
            "seccomp": bool(agent.get("seccomp")), "agent": agent,
            "rlimits": ["RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE"],
        }

    # -- slots -------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (its containers are then gone or going)."""
        return self._closed

    def _acquire(self) -> AgentContainer:
        if self._closed:
            raise SandboxError("this sandbox is closed")
        slot = self._free.get()
        if slot is None:
            self._free.put(None)
            raise SandboxError("this sandbox is closed")
        return slot

    def _release(self, slot: AgentContainer) -> None:
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
            reply = slot.request({"op": "start", "form": "stdio", "program": program, "limits": limits_message(limits),
                                  "cpu_s": int(limits.timeout_s) + 1, "stdin": call.stdin},
                                 limits.timeout_s + REPLY_MARGIN_S)
            result = result_from_reply(reply, started)
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


def check_settings(slots: int, uid_base: int, memory_mb: int, pids_limit: int, work_mb: int, cpus: float) -> None:
    """Refuse container settings that cannot confine (raised when the sandbox is built)."""
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    if not 1 <= uid_base <= 65535 - slots:
        raise ValueError(f"uid_base must be a non-root uid with room for {slots} slots below 65536, got {uid_base}")
    if uid_base <= 65534 < uid_base + slots:
        raise ValueError(f"uids {uid_base}..{uid_base + slots - 1} hold 65534 (nobody's uid, shared with other "
                         "services): pick a uid_base whose block stays clear of it")
    if memory_mb < 128 or pids_limit < 16 or work_mb < 1:
        raise ValueError("memory_mb >= 128, pids_limit >= 16 and work_mb >= 1 are needed")
    if not cpus > 0:
        raise ValueError(f"cpus must be > 0 (cores per container), got {cpus!r}")


class DockerSession(ClosesOnExit):
    """A program loaded in one slot's container (see :meth:`DockerSandbox.session`); a context manager."""

    def __init__(self, sandbox: DockerSandbox, program: str, limits: Limits, cpu_s: int) -> None:
        self._sandbox, self.limits = sandbox, limits
        self._slot: AgentContainer | None = sandbox._acquire()
        self._closed = False
        self._lost: tuple[str, str] | None = None
        sandbox._sessions.add(self)
        reply = self._slot.request({"op": "start", "form": "function", "program": program,
                                    "limits": limits_message(limits), "cpu_s": cpu_s},
                                   limits.timeout_s + REPLY_MARGIN_S)
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
                                   self.limits.timeout_s + REPLY_MARGIN_S)
        if "lost" in reply:
            self._lost = tuple(reply["lost"])  # type: ignore[assignment]
        return result_from_reply(reply, started)

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
