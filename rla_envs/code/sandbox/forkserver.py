"""The warm fork server: a long-lived root process that forks one confined child per session.

Started by :class:`~rla_envs.code.sandbox.local.LocalSandbox` (through a bootstrap that skips the
package ``__init__`` files, so the server stays lean) with a clean environment and a
``SOCK_SEQPACKET`` control socket. Protocol (one JSON message per packet):

* server → host, once: ``{"hello": capabilities}`` (what confinement it could set up);
* host → server: ``{"spawn": {"uid": ...}}`` with six descriptors attached: stdin (read end), stdout
  and stderr (write ends), requests (read end), records (write end) and a per-session control
  socket; server → host: ``{"spawned": pid}`` or ``{"error": why}``.

Per session the server forks a **monitor** (root) that joins its slot's cgroup (see :mod:`.cgroups`),
makes a 0700 work dir, enters a new PID + mount + IPC namespace, mounts a tmpfs of its own (``work_mb``)
on the work dir and forks the **worker**, pid 1 there. The worker mounts a private ``/proc``, sets
no_new_privs, Landlock and seccomp, and waits in :mod:`runner` for its program, form and limits (the
host keeps one such spare per slot). When they arrive it sets the rlimits, hands the work dir to the
slot's uid, becomes that uid, and only then runs the program. The monitor waits on the worker and on
its control socket: any byte or EOF there (the host asked, or died) SIGKILLs the worker, and with it
the whole PID namespace (setsid/daemon escapes included). It then unmounts and removes the work dir
(its files, and the session's IPC objects, are gone with the namespaces) and reports the exit status
as ``{"exit": status}``. Nothing a run starts or makes outlives it.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import sys

from rla_envs.code.sandbox import cgroups, confine, readable, runner

# Imported once here so that every sandboxed program finds them loaded (the common ones of solutions).
PRELOADED = ("collections", "functools", "heapq", "itertools", "math", "re", "string", "bisect", "typing",
             "random", "traceback", "fractions", "decimal", "statistics", "dataclasses", "copy")
for _name in PRELOADED:
    __import__(_name)

WORK_ROOT = "/tmp/rla-sandbox"
_SERVER_FDS_NEEDED = 6
_PLAN: dict = {}  # computed once in main(): what every worker reads and imports from
_SLOT_CGROUPS: dict[int, list[str]] = {}  # uid -> the cgroup.procs files its monitors join (set in main())
_WORK_INODES = 16384  # files and directories a work dir may hold
_READ_FILES = ["/etc/ld.so.cache", "/etc/localtime", "/dev/urandom", "/dev/random"]
_RW_FILES = ["/dev/null", "/dev/zero"]
_WORKER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC", "PYTHONIOENCODING": "utf-8"}
"""A worker's environment, with ``HOME`` and ``TMPDIR`` its work dir."""
_PREPARED = False  # whether prepare_interpreter() ran in this process (the fork server's)


def main(control_fd: int) -> None:
    """Serve spawn requests on ``control_fd`` until the host closes it."""
    control = socket.socket(fileno=control_fd)
    config = json.loads(os.environ.get("RLA_SANDBOX_CONFIG", "{}"))
    plan = readable.read_plan(config.get("packages", ()))
    caps = _set_up(config, plan)
    set_plan(plan, caps)
    _SLOT_CGROUPS.update({int(uid): files for uid, files in config.get("cgroups", {}).items()})
    seccomp_filter = confine.seccomp_program() if caps.get("seccomp") else None
    prepare_interpreter()
    control.sendall(json.dumps({"hello": dict(caps, read_plan=plan.to_json())}).encode())
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([control], [], [], 0.5)
        _reap(children)
        if not ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 16, _SERVER_FDS_NEEDED)
        except OSError:
            message, fds = b"", []
        if not message:
            break
        try:
            spec = json.loads(message)["spawn"]
            if len(fds) != _SERVER_FDS_NEEDED:
                raise ValueError(f"expected {_SERVER_FDS_NEEDED} descriptors, got {len(fds)}")
            pid = fork_monitor(spec, fds, caps, seccomp_filter)
            children.add(pid)
            reply = {"spawned": pid}
        except Exception as exc:  # report, keep serving
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:
                os.close(fd)
        control.sendall(json.dumps(reply).encode())
    for pid in children:  # the host is gone: workers die with their monitors (parent-death signal)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # exited already; reaped below
            pass
    _reap(children, block=True)


def _reap(children: set[int], block: bool = False) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def set_plan(plan: readable.ReadPlan, caps: dict) -> None:
    """What every worker may read and import from (see :mod:`readable`)."""
    _PLAN["read_dirs"] = list(plan.read_dirs) + (["/proc"] if caps.get("private_proc") else [])
    _PLAN["read_files"] = _READ_FILES + list(plan.read_files)
    _PLAN["list_dirs"] = list(plan.list_dirs)
    _PLAN["sys_path"] = list(plan.sys_path)


def _set_up(config: dict, plan: readable.ReadPlan) -> dict:
    """Enter the server namespaces (package directories masked) and probe what each session can use."""
    caps: dict = {"root": os.geteuid() == 0, "unsafe": bool(config.get("unsafe"))}
    caps["landlock_abi"] = confine.landlock_abi()
    caps["seccomp"] = confine.seccomp_program() is not None
    if caps["root"]:
        try:
            caps.update(confine.enter_server_namespaces(
                WORK_ROOT, list(plan.read_dirs + plan.read_files), masked=plan.masked,
                allowed=plan.allowed + plan.read_files))
        except OSError as exc:
            caps["mountns_error"] = str(exc)
    if not caps.get("mountns"):
        os.makedirs(WORK_ROOT if caps["root"] else config.get("work_root", WORK_ROOT), exist_ok=True)
    caps["work_root"] = WORK_ROOT if caps.get("mountns") else config.get("work_root", WORK_ROOT)
    caps["work_mb"] = int(config.get("work_mb", 64))
    caps.update(probe(caps, config.get("uid_base", 64000)))
    return caps


def probe(caps: dict, uid: int) -> dict:
    """Try the per-session confinement (as ``uid``) in a throw-away child and report which steps worked."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        result = {}
        try:
            result["pidns"] = _try(lambda: confine.unshare(confine.CLONE_NEWPID | confine.CLONE_NEWNS))
            result["ipcns"] = _try(lambda: confine.unshare(confine.CLONE_NEWIPC))
            if result["pidns"] and caps["root"] and caps.get("mountns"):
                result["work_tmpfs"] = _try(lambda: _probe_work_tmpfs(caps))
            inner = os.fork()
            if inner == 0:
                if result["pidns"]:
                    result["private_proc"] = _try(confine.mount_private_proc)
                    result["visible_pids"] = sum(1 for p in os.listdir("/proc") if p.isdigit())
                result["uid_switch"] = caps["root"] and _try(lambda: confine.drop_to_uid(uid))
                result["no_new_privs"] = _try(confine.set_no_new_privs)
                if caps["landlock_abi"]:
                    result["landlock"] = _try(lambda: confine.apply_landlock(caps["landlock_abi"], ["/usr"], [], [], []))
                if caps["seccomp"]:
                    result["seccomp"] = _try(lambda: confine.apply_seccomp(confine.seccomp_program()))
                    try:
                        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
                        result["seccomp"] = False
                    except OSError:  # refused: the filter works (what this probe wants to see)
                        pass
                os.write(write_fd, json.dumps(result).encode())
                os._exit(0)
            os.waitpid(inner, 0)
        finally:
            os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    result = json.loads(data or b"{}")
    out = {
        "pidns": bool(result.get("pidns")),
        "ipcns": bool(result.get("ipcns")),
        "work_tmpfs": bool(result.get("work_tmpfs")),
        "private_proc": bool(result.get("private_proc")),
        "uid_switch": bool(result.get("uid_switch")),
        "landlock": bool(result.get("landlock")),
        "seccomp": bool(result.get("seccomp")),
    }
    if out["landlock"]:
        abi = caps["landlock_abi"]
        out.update(landlock_fs=True, landlock_net=abi >= 4, landlock_scope=abi >= 6)
    return out


def _probe_work_tmpfs(caps: dict) -> None:
    """Mount and unmount a work-dir tmpfs (in the probe's own mount namespace)."""
    path = os.path.join(caps["work_root"], f"probe-{os.getpid()}")
    os.mkdir(path, 0o700)
    try:
        _mount_work_dir(path, caps)
        confine.umount(path)
    finally:
        os.rmdir(path)


def _mount_work_dir(path: str, caps: dict) -> None:
    confine.mount("tmpfs", path, "tmpfs", confine.MS_NOSUID | confine.MS_NODEV,
                  f"mode=0700,size={caps['work_mb']}m,nr_inodes={_WORK_INODES}")


def _try(action) -> bool:
    try:
        action()
        return True
    except OSError:
        return False


def fork_monitor(spec: dict, fds: list[int], caps: dict, seccomp_filter: bytes | None) -> int:
    """Fork the monitor of one session; return its pid.

    The monitor holds only the session's six descriptors (and 0-2): one that kept its parent's (the
    control socket, a docker agent's ends of the host's stream) would keep them open after the parent
    closed them, and the worker from seeing EOF.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    try:
        low = 3
        for fd in sorted(set(fds)):
            if fd > low:
                os.closerange(low, fd)
            low = max(low, fd + 1)
        os.closerange(low, os.sysconf("SC_OPEN_MAX"))
        _monitor(spec, fds, caps, seccomp_filter)
    except BaseException:
        os._exit(70)
    os._exit(0)


def _monitor(spec: dict, fds: list[int], caps: dict, seccomp_filter: bytes | None) -> None:
    """The per-session root process: start the worker, kill it on request, report its exit."""
    confine.set_parent_death_signal(signal.SIGKILL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    ctl = socket.socket(fileno=fds[5])
    uid = spec["uid"]
    if uid in _SLOT_CGROUPS:  # before the worker exists: everything the run starts is born inside
        cgroups.join(_SLOT_CGROUPS[uid])
        try:  # the slot's memory bound kills the run's processes (at 1000), never the monitor
            confine.set_oom_score_adj(-1000)
        except OSError:  # no CAP_SYS_RESOURCE (a container): the run's processes still go first
            pass
    workdir = os.path.join(caps["work_root"], f"{uid}-{os.getpid()}")
    os.mkdir(workdir, 0o700)  # root's until the worker is handed its program
    own_tmpfs = bool(caps["pidns"] and caps.get("work_tmpfs"))
    if caps["pidns"]:
        confine.unshare(confine.CLONE_NEWPID | confine.CLONE_NEWNS | (confine.CLONE_NEWIPC if caps.get("ipcns") else 0))
    if own_tmpfs:  # in the session's mount namespace only: no other slot sees it, and it dies with the session
        _mount_work_dir(workdir, caps)
    worker = os.fork()
    if worker == 0:
        try:
            ctl.close()
            _worker(spec, fds[:5], caps, seccomp_filter, workdir)
        except BaseException as exc:
            try:
                os.write(2, f"sandbox setup failed: {type(exc).__name__}: {exc}\n".encode())
            except OSError:  # stderr closed: exit code 71 still says the setup failed
                pass
            os._exit(71)
    for fd in fds[:5]:
        os.close(fd)
    pidfd = os.pidfd_open(worker)
    watched = [pidfd, ctl]
    while True:
        ready, _, _ = select.select(watched, [], [])
        if ctl in ready:
            _kill_tree(worker, uid, caps)
            watched = [pidfd]
        if pidfd in ready:
            break
    _, status = os.waitpid(worker, 0)
    if not caps["pidns"]:
        _kill_tree(worker, uid, caps)
    if own_tmpfs:
        try:
            confine.umount(workdir)
            os.rmdir(workdir)
        except OSError:  # still reported below: the exit report matters more than an empty mount point
            pass
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    try:
        ctl.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    except OSError:  # the host closed the session (or died): nobody is left to tell
        pass


def _kill_tree(worker: int, uid: int, caps: dict) -> None:
    """SIGKILL the worker and everything it started."""
    if caps["pidns"]:
        os.kill(worker, signal.SIGKILL)  # pid 1 of the namespace: takes every process in it along
    elif caps["uid_switch"]:
        confine.kill_uid(uid)
    else:  # unsafe mode: only the process group is known
        try:
            os.killpg(worker, signal.SIGKILL)
        except ProcessLookupError:  # the group is gone already
            pass


def _worker(spec: dict, fds: list[int], caps: dict, seccomp_filter: bytes | None, workdir: str) -> None:
    """Pid 1 of the session's namespace: confine itself, then run the program."""
    for target, fd in enumerate(fds):  # 0 stdin, 1 stdout, 2 stderr, 3 requests, 4 records
        if fd != target:
            os.dup2(fd, target)
    os.closerange(5, os.sysconf("SC_OPEN_MAX"))
    for target in range(5):
        os.set_inheritable(target, True)
    if caps["private_proc"]:
        confine.mount_private_proc()
    try:  # the OOM killer's first choice, in the slot and host-wide (Landlock leaves /proc read-only to the program)
        confine.set_oom_score_adj(1000)
    except OSError:  # a container that refuses the write: the rlimits still bound each process
        pass
    if not caps["pidns"]:
        os.setsid()  # a process group of its own, for the unsafe-mode kill
    os.chdir(workdir)
    confine.set_parent_death_signal(signal.SIGKILL)  # the monitor is gone: so is the spare
    # Landlock and seccomp already hold while the spare waits (as root, with no_new_privs); the uid
    # switch and the rlimits wait for the program, whose limits they take.
    confine.set_no_new_privs()
    if caps["landlock"]:
        confine.apply_landlock(caps["landlock_abi"], _PLAN["read_dirs"], [workdir], _PLAN["read_files"], _RW_FILES,
                               list_dirs=_PLAN["list_dirs"])
    if seccomp_filter:
        confine.apply_seccomp(seccomp_filter)
    _clean_interpreter(workdir)  # while the spare waits: off the path between the program's arrival and its run
    runner.serve(lambda limits: _confine(spec, caps, workdir, limits))


def _confine(spec: dict, caps: dict, workdir: str, limits: dict) -> None:
    """Called by the runner once the program has arrived: drop to the slot's uid and lock down."""
    confine.set_rlimits(**limits)
    if caps["uid_switch"]:
        os.chown(workdir, spec["uid"], spec["uid"])
        confine.drop_to_uid(spec["uid"])
    elif not caps["unsafe"]:
        raise OSError("no uid switch and not unsafe")
    confine.set_parent_death_signal(signal.SIGKILL)


def prepare_interpreter() -> None:
    """What every worker's interpreter starts from, but its work dir: the fixed environment, the signal dispositions
    of a fresh interpreter's program, and no module of the sandbox's but the runner's own two (the ones loaded stay
    referenced by the code that confines it). The fork server does this once, before it forks anything, so that no
    spare pays for it (tearing down modules and the environment touches pages each forked worker would copy)."""
    global _PREPARED
    os.environ.clear()
    os.environ.update(_WORKER_ENV)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    for signum in (signal.SIGPIPE, signal.SIGXFSZ):  # as a fresh interpreter has them: errors, not deaths
        signal.signal(signum, signal.SIG_IGN)
    for name in [n for n in sys.modules if n.startswith("rla_envs")]:
        if name != "rla_envs.code.sandbox.runner" and name != "rla_envs.code.sandbox.base":
            del sys.modules[name]
    _PREPARED = True


def _clean_interpreter(workdir: str) -> None:
    """What the program finds: the prepared interpreter (:func:`prepare_interpreter`, done here in a worker whose
    parent did not), with the work dir as its home and first on ``sys.path`` before the read plan's entries."""
    if not _PREPARED:
        prepare_interpreter()
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    sys.path[:] = [workdir] + _PLAN["sys_path"]

if __name__ == "__main__":
    main(int(sys.argv[1]))
