"""The ``local`` sandbox: a warm fork server on this machine, one unprivileged uid per concurrent slot.

What confines the program (each step detected at start, see :meth:`LocalSandbox.capabilities`):
its own uid (``uid_base + slot``, a uid of no account) and 0700 work dir, a tmpfs of its own
(``work_mb``, gone with the run), a clean environment, rlimits (address space, CPU, file size, open
files, processes), a cgroup per slot bounding the run's processes together (CPU quota, memory, pids;
see :mod:`.cgroups`), a new PID namespace with its own ``/proc`` (the whole tree is SIGKILLed when the
run ends, setsid and double-fork escapes included), a new IPC namespace, a private mount namespace
where ``/tmp``, ``/var``, ``/run``, ``/home``, ``/root``, ``/dev/shm``... are empty and every directory of
installed Python packages is an empty tmpfs (bar the allow-listed ``packages``), an empty network
namespace, Landlock (reads: the standard library, system libraries and the allow-listed packages, see
:mod:`.readable`; writes: the work dir; no TCP; no signals outside) and a seccomp filter (no sockets but
connected pairs, no SysV IPC). Grading data (datasets, hidden tests, reference solutions) is never
readable: :meth:`LocalSandbox.exposes` says whether a path would be.
Results come back on a dedicated pipe as tagged records with exact builtin types; stdout/stderr are
kept up to ``Limits.output_bytes`` each.

Speed: each slot keeps a spare worker (forked, namespaced, Landlock + seccomp on) waiting for its
program, so a run costs the uid switch, the rlimits and the program itself; a background thread ends
used workers and makes the next spares. Sandboxes on one machine claim disjoint uid blocks (flock'ed
files in ``/run/lock/rla-sandbox-uids``), since RLIMIT_NPROC and the kill sweep work per uid.

Example::

    from rla_envs.code.sandbox import Call, make_sandbox

    with make_sandbox("local") as sandbox:
        [result] = sandbox.run("def solve(x):\\n    return x + 1\\n", [Call(function="solve", args=(1,))])
        assert result.status == "ok" and result.value == 2
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Iterable, Sequence

from rla_envs.code.sandbox.base import Call, CallResult, ClosesOnExit, ConfinementUnavailable, Limits, SandboxError
from rla_envs.code.sandbox.bootstrap import bootstrap_program
from rla_envs.code.sandbox.cgroups import SlotCgroup, make_slot_cgroups
from rla_envs.code.sandbox.readable import ReadPlan, check_packages
from rla_envs.code.sandbox.session import LocalSession

__all__ = ["LocalSandbox", "LocalSession"]

_REQUIRED = ("uid_switch", "pidns", "mountns", "netns", "ipcns", "work_tmpfs")


class LocalSandbox(ClosesOnExit):
    """Runs untrusted Python programs under Linux confinement through a warm fork server.

    Args:
        slots: concurrent sessions (each gets its own uid; more callers wait for a free slot).
        uid_base: first sandbox uid; slot ``i`` runs as ``uid_base + i``. Every uid (and gid) of the block
            must belong to no account, group or subordinate-id range of this machine, nor be 65534/65535
            (nobody); default: the first free such block at or above :data:`DEFAULT_UID_BASE`.
        unsafe: run even if this machine cannot confine (not root, no namespaces). Only for code you trust.
        packages: top-level packages a program may import beyond the standard library (``("numpy",)``);
            none by default, as the tasks rla ships need none. Packages holding grading data are refused.
        work_mb: size of each run's work dir, a tmpfs of its own (the only place a program may write).
        cpus: CPU time each slot may use per second of wall time, in cores (a cgroup quota; slots also
            share the CPU by equal weight, however many processes each runs).
    """

    name = "local"

    def __init__(self, slots: int = 4, uid_base: int | None = None, unsafe: bool = False,
                 packages: Sequence[str] = (), work_mb: int = 64, cpus: float = 1.0) -> None:
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        if uid_base is not None and not 1000 <= uid_base <= 2**31 - 1 - slots:
            raise ValueError(f"uid_base must be an unused uid >= 1000, got {uid_base}")
        if uid_base is not None and (taken := uid_conflicts(uid_base, slots)):
            raise ValueError(f"uid_base={uid_base} gives slots uids {uid_base}..{uid_base + slots - 1}, but these "
                             f"are taken: {'; '.join(taken[:3])}. Sandboxed code must run as a uid no account owns; "
                             "pass another uid_base or leave it unset to pick a free block")
        if type(work_mb) is not int or work_mb < 1:
            raise ValueError(f"work_mb must be a positive int (MiB of each run's work dir), got {work_mb!r}")
        if not 0.01 <= cpus <= (os.cpu_count() or 1):
            raise ValueError(f"cpus must be between 0.01 and this machine's {os.cpu_count()} cores, got {cpus!r}")
        if sys.platform != "linux":
            raise ConfinementUnavailable(f"the local sandbox needs Linux, this is {sys.platform}; use backend='docker'")
        if os.geteuid() != 0 and not unsafe:
            raise ConfinementUnavailable(
                "the local sandbox needs root to run code as a separate uid in its own namespaces; run as root, "
                "use backend='docker', or pass unsafe=True to run without confinement (trusted code only)")
        self.unsafe, self.work_mb, self.cpus = unsafe, work_mb, cpus
        self.packages = check_packages(packages)
        self.read_plan: ReadPlan | None = None  # what programs may read: computed by the fork server
        self._uid_locks = _claim_uids(slots, uid_base)
        self.uid_base = uid_base if uid_base is not None else min(self._uid_locks)
        self._ready: queue.SimpleQueue = queue.SimpleQueue()  # warm spare sessions (or the error that stopped them)
        self._retired: queue.SimpleQueue = queue.SimpleQueue()  # used sessions for the warmer thread to end
        self._lock = threading.Lock()
        self._sessions: weakref.WeakSet[LocalSession] = weakref.WeakSet()
        self._closed = False
        self._cgroups: dict[int, SlotCgroup] = {}
        try:
            self._start_server(slots)
            for slot in range(slots):
                self._ready.put(LocalSession(self, slot))
        except BaseException:
            self.close()
            raise
        self._warmer = threading.Thread(target=self._warm_loop, name="rla-sandbox-warmer", daemon=True)
        self._warmer.start()

    # -- fork server -------------------------------------------------------------------------------

    def _start_server(self, slots: int) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        package_root = str(Path(__file__).resolve().parents[3])
        config = {"unsafe": self.unsafe, "uid_base": self.uid_base, "slots": slots,
                  "packages": list(self.packages), "work_mb": self.work_mb}
        cgroup_error = "needs root"
        if os.geteuid() == 0:
            uids = list(range(self.uid_base, self.uid_base + slots))
            self._cgroups, cgroup_error = make_slot_cgroups(uids, self.cpus, Limits().processes)
            config["cgroups"] = {str(uid): cgroup.procs_files for uid, cgroup in self._cgroups.items()}
        if os.geteuid() != 0:
            import tempfile

            config["work_root"] = tempfile.mkdtemp(prefix="rla-sandbox-")
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": package_root, "PYTHONDONTWRITEBYTECODE": "1",
               "RLA_SANDBOX_CONFIG": json.dumps(config)}
        self._server = subprocess.Popen(
            [sys.executable, "-s", "-c", _FORK_SERVER, package_root, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            start_new_session=True)
        theirs.close()
        self._control = ours
        ours.settimeout(60)
        try:
            hello = json.loads(ours.recv(1 << 16) or b"{}")
        except (OSError, ValueError) as exc:
            self._stop_server()
            raise SandboxError(f"the sandbox fork server did not start: {exc}") from exc
        if "hello" not in hello:
            self._stop_server()
            raise SandboxError(f"the sandbox fork server did not start (exit code {self._server.poll()})")
        ours.settimeout(None)
        self.read_plan = ReadPlan.from_json(hello["hello"].pop("read_plan"))
        self._caps = dict(hello["hello"], backend="local", slots=slots, uids=[self.uid_base, self.uid_base + slots - 1],
                          rlimits=["RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC",
                                   "RLIMIT_CORE"], fork_server_pid=self._server.pid,
                          packages=list(self.read_plan.packages), read_dirs=list(self.read_plan.read_dirs),
                          cgroup=next(iter(self._cgroups.values())).version if self._cgroups else False,
                          slot_cpus=self.cpus if self._cgroups else None)
        if cgroup_error:
            self._caps["cgroup_error"] = cgroup_error
        missing = [key for key in _REQUIRED if not self._caps.get(key)]
        if missing and not self.unsafe:
            self._stop_server()
            raise ConfinementUnavailable(
                f"this machine cannot confine untrusted code: {', '.join(missing)} unavailable (detected: "
                f"{self._caps}); use backend='docker' or pass unsafe=True (trusted code only)")

    def _stop_server(self) -> None:
        try:
            self._control.close()
        except OSError:  # the server died and the socket is broken: closing it had nothing left to do
            pass
        try:
            self._server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()

    def spawn_worker(self, spec: dict, fds: list[int]) -> int:
        """Have the fork server start a confined worker for ``spec`` on the session's descriptors ``fds``."""
        with self._lock:
            if self._closed and self._server.poll() is not None:
                raise SandboxError("this sandbox is closed")
            socket.send_fds(self._control, [json.dumps({"spawn": spec}).encode()], fds)
            reply = json.loads(self._control.recv(1 << 16) or b'{"error": "the fork server exited"}')
        if "error" in reply:
            raise SandboxError(f"the fork server could not start a session: {reply['error']}")
        return reply["spawned"]

    def _acquire(self) -> "LocalSession":
        """A warm spare session (waits for a free slot)."""
        item = self._ready.get()
        if isinstance(item, BaseException):
            self._ready.put(item)
            raise SandboxError(f"the sandbox cannot start sessions any more: {item}") from item
        self._sessions.add(item)
        return item

    def retire(self, session: "LocalSession") -> None:
        """End a used session in the background and put a fresh spare for its slot in its place."""
        if self._closed:
            session.teardown()
        else:
            self._retired.put(session)

    def _warm_loop(self) -> None:
        while True:
            session = self._retired.get()
            if session is None:
                return
            session.teardown()
            if self._closed:
                continue
            try:
                spare: object = LocalSession(self, session.slot)
            except BaseException as exc:  # the server is gone: callers get the reason instead of a hang
                spare = exc
            self._ready.put(spare)

    # -- public API --------------------------------------------------------------------------------

    def capabilities(self) -> dict:
        """What confinement is active (uid switch, Landlock, seccomp, namespaces, rlimits)."""
        return dict(self._caps)

    def exposes(self, path: str | os.PathLike) -> bool:
        """Whether a sandboxed program could read ``path`` (keep task files where this is False)."""
        return self.read_plan.exposes(path, masks=bool(self._caps.get("mountns")),
                                      landlock=bool(self._caps.get("landlock")))

    def session(self, program: str, limits: Limits = Limits()) -> "LocalSession":
        """Load ``program`` once as module ``solution``; the session serves function calls in order."""
        session = self._acquire()
        self._start(session, program, limits, "function", cpu_s=int(limits.timeout_s * 100) + 1)
        return session

    def _start(self, session: "LocalSession", program: str, limits: Limits, form: str, cpu_s: int,
               stdin: bytes = b"") -> None:
        """Bound the slot's cgroup by ``limits``, then hand the session its program."""
        cgroup = self._cgroups.get(session.uid)
        if cgroup is not None:
            try:
                cgroup.limit_run(limits.memory_mb, self.work_mb, limits.processes)
            except OSError as exc:
                session.close()
                raise SandboxError(f"cannot bound slot {session.slot}'s cgroup for this run: {exc}") from exc
        session.start(program, limits, form, cpu_s=cpu_s, stdin=stdin)

    def run(self, program: str, calls: Sequence[Call], limits: Limits = Limits()) -> list[CallResult]:
        """Run every call: function calls in one session (in order), each stdio call in a fresh process.

        If a function call kills the session (timeout, memory, crash, output limit), the later calls
        are not run and report the same status.
        """
        results: list[CallResult | None] = [None] * len(calls)
        function_calls = [i for i, c in enumerate(calls) if c.form == "function"]
        if function_calls:
            cpu_s = int(limits.timeout_s * (len(function_calls) + 1)) + 1
            with self._acquire() as session:
                self._start(session, program, limits, "function", cpu_s=cpu_s)
                for i in function_calls:
                    results[i] = session.call(calls[i])
        for i, c in enumerate(calls):
            if c.form == "stdio":
                results[i] = self._run_stdio(program, c, limits)
        return results  # type: ignore[return-value]

    def _run_stdio(self, program: str, call: Call, limits: Limits) -> CallResult:
        session = self._acquire()
        try:
            self._start(session, program, limits, "stdio", cpu_s=int(limits.timeout_s) + 1, stdin=call.stdin.encode())
            return session.finish()
        finally:
            session.close()

    def close(self) -> None:
        """Stop every session and the fork server; nothing of the sandbox keeps running."""
        if self._closed:
            return
        self._closed = True
        warmer = getattr(self, "_warmer", None)
        if warmer is not None:
            self._retired.put(None)
            warmer.join()
        for session in list(self._sessions):
            session.teardown()
        while not self._ready.empty():
            spare = self._ready.get()
            if isinstance(spare, LocalSession):
                spare.teardown()
        with self._lock:
            if hasattr(self, "_control"):
                self._stop_server()
        for cgroup in getattr(self, "_cgroups", {}).values():
            cgroup.remove()
        for handle in self._uid_locks.values():
            handle.close()  # releases the flock
        self._uid_locks = {}


# The fork server, started through the bootstrap that skips the package __init__ files.
_FORK_SERVER = bootstrap_program("from rla_envs.code.sandbox.forkserver import main\nmain(int(sys.argv[2]))")

DEFAULT_UID_BASE = 70000
"""Where the search for a free uid block starts: above the 16-bit ids (65534 is nobody, 65535 is -1 there)
and systemd's dynamic users (61184-65519), below where subordinate ids usually start (100000)."""
_UID_SEARCH = 16384  # how far above DEFAULT_UID_BASE to look for free uids
_RESERVED_UIDS = {65534: "the nobody/nogroup id", 65535: "the (uid_t)-1 of 16-bit interfaces"}


def uid_conflicts(start: int, count: int, taken: "_TakenIds | None" = None) -> list[str]:
    """Why uids/gids ``start .. start + count - 1`` are not free for sandboxed code (empty if they are).

    Taken are: an account's uid, a group's gid (slots use gid = uid), a range of ``/etc/subuid`` or
    ``/etc/subgid`` (another user's containers), 65534 and 65535.
    """
    taken = taken if taken is not None else _taken_ids()
    wanted = range(start, start + count)
    found = [f"{what} ({id_})" for id_, what in taken.ids.items() if id_ in wanted]
    found += [what for first, size, what in taken.ranges if first < wanted.stop and wanted.start < first + size]
    return found


class _TakenIds:
    """The ids of this machine's accounts, groups and subordinate ranges (read once)."""

    def __init__(self) -> None:
        import grp
        import pwd

        self.ids: dict[int, str] = dict(_RESERVED_UIDS)
        for group in grp.getgrall():
            self.ids.setdefault(group.gr_gid, f"gid of group {group.gr_name!r}")
        for user in pwd.getpwall():
            self.ids[user.pw_uid] = f"uid of user {user.pw_name!r}"
        self.ranges = [(first, size, f"{first}..{first + size - 1} are {owner!r}'s subordinate ids ({path})")
                       for path in ("/etc/subuid", "/etc/subgid") for owner, first, size in _subordinate_ranges(path)]


_taken_ids = _TakenIds


def _subordinate_ranges(path: str) -> list[tuple[str, int, int]]:
    """The ``name:first:count`` lines of ``/etc/subuid``-style files (none if the file is missing)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return []
    ranges = []
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            ranges.append((parts[0], int(parts[1]), int(parts[2])))
    return ranges


def _claim_uids(slots: int, uid_base: int | None) -> dict:
    """Lock ``slots`` consecutive sandbox uids for this process (one flock'ed file per uid).

    Two sandboxes on one machine must never share a uid: RLIMIT_NPROC, the kill sweep and the slot
    cgroups work per uid. With ``uid_base=None`` the first free block at or above :data:`DEFAULT_UID_BASE`
    whose uids belong to no account (see :func:`uid_conflicts`) is taken.
    """
    import fcntl

    lock_dir = Path("/run/lock" if os.access("/run/lock", os.W_OK) else "/tmp") / "rla-sandbox-uids"
    lock_dir.mkdir(mode=0o700, exist_ok=True)
    if uid_base is not None:
        starts: Iterable[int] = [uid_base]
    else:
        taken = _taken_ids()
        starts = (start for start in range(DEFAULT_UID_BASE, DEFAULT_UID_BASE + _UID_SEARCH, slots)
                  if not uid_conflicts(start, slots, taken))
    for start in starts:
        held: dict = {}
        for uid in range(start, start + slots):
            handle = open(lock_dir / str(uid), "a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                break
            held[uid] = handle
        if len(held) == slots:
            return held
        for handle in held.values():
            handle.close()
    where = f"uids {uid_base}..{uid_base + slots - 1}" if uid_base is not None else "any uid block"
    raise SandboxError(f"{where} already in use by another sandbox on this machine (locks in {lock_dir}); "
                       "pass another uid_base or leave it unset to pick a free block")
