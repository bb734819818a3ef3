"""Linux confinement primitives: namespaces, mounts, rlimits, uid switch, Landlock and seccomp.

Everything here talks to the kernel through ``ctypes`` (no extra dependency). Each feature is
detected, not assumed: :func:`probe` tries them in a throw-away child and reports what works, so the
sandbox can say what is active (``Sandbox.capabilities()``) and refuse to start when it cannot confine.

Layout of the confinement (see :mod:`rla_envs.code.sandbox.forkserver`):

* the fork server (root) enters, once, a new mount namespace where ``/tmp``, ``/var``, ``/run``, ``/dev/shm``,
  ``/home``, ``/root``, ``/mnt``, ``/media``, ``/srv`` are empty private tmpfs (the Python prefix is
  bound back read-only when it lives below one of them; no host service socket in ``/run`` or ``/var``
  stays in sight), every directory of installed Python packages is an empty read-only tmpfs holding
  only the allow-listed packages (see :mod:`.readable`), and a new, empty network namespace;
* each session gets a new PID + mount + IPC namespace with a fresh ``/proc``, a work dir that is a tmpfs
  of its own (sized per slot, gone with the session), its own uid, rlimits, a Landlock domain (read: the
  standard library, system libraries, allow-listed packages; write: its work dir only; no TCP; no
  signals or abstract sockets outside its domain) and a seccomp filter (no ``socket()`` at all, so no
  connect or bind to a named Unix socket whatever Landlock sees; ``socketpair()`` but not of datagram
  sockets, whose ``sendto`` reaches named ones; no SysV IPC or POSIX message queues; no ptrace, no mount,
  no namespaces, no kernel keyring, bpf, perf or io_uring).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct
from typing import Sequence

__all__ = [
    "CLONE_NEWNS",
    "CLONE_NEWNET",
    "CLONE_NEWPID",
    "CLONE_NEWIPC",
    "unshare",
    "mount",
    "umount",
    "set_oom_score_adj",
    "enter_server_namespaces",
    "mount_private_proc",
    "set_rlimits",
    "drop_to_uid",
    "set_parent_death_signal",
    "landlock_abi",
    "apply_landlock",
    "seccomp_program",
    "apply_seccomp",
    "kill_uid",
    "remove_sysv_ipc",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
_NAMESPACE_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 1, 4, 38, 22
SECCOMP_MODE_FILTER = 2

# Directories hidden behind an empty tmpfs in the fork server's mount namespace.
# /run and /var hold host services' sockets (dbus, container runtimes, databases) and their state.
HIDDEN_DIRS = ("/tmp", "/var", "/run", "/dev/shm", "/home", "/root", "/mnt", "/media", "/srv")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def unshare(flags: int) -> None:
    """unshare(2) (``os.unshare`` exists only from Python 3.12)."""
    _check(_libc.unshare(ctypes.c_int(flags)), f"unshare({flags:#x})")


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    """mount(2)."""
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def umount(target: str) -> None:
    """umount2(2) with MNT_DETACH."""
    _check(_libc.umount2(target.encode(), ctypes.c_int(MNT_DETACH)), f"umount {target}")


def set_oom_score_adj(value: int) -> None:
    """Make this process (and its future children) the OOM killer's first choice (1000) or never one (-1000).

    Set as root, the value is also the floor a later unprivileged process cannot go below."""
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write(str(value))


def _prctl(option: int, arg2: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg2), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)),
           f"prctl({option})")


def set_not_dumpable() -> None:
    """Let no other process of this uid read or write this one's memory through ``/proc`` (or ptrace it)."""
    _prctl(PR_SET_DUMPABLE, 0)


def set_parent_death_signal(signum: int) -> None:
    """Receive ``signum`` when the parent dies (reset by a uid change, so call it after one)."""
    _prctl(PR_SET_PDEATHSIG, signum)


# --------------------------------------------------------------------------------------------------
# Fork server namespaces


def enter_server_namespaces(work_root: str, keep: list[str], masked: Sequence[str] = (),
                            allowed: Sequence[str] = ()) -> dict:
    """Move the calling (root) process into private mount + network namespaces; return what worked.

    In the new mount namespace every directory of :data:`HIDDEN_DIRS` becomes an empty tmpfs (mode
    0711), and each path of ``keep`` (directory or file) that lay below one of them is bound back,
    read-only. Then each directory of ``masked`` (where Python packages live) becomes an empty read-only
    tmpfs holding only the paths of ``allowed`` below it, bound back read-only. ``work_root`` is created
    on the private ``/tmp``.
    """
    done: dict = {"mountns": False, "netns": False, "hidden": [], "masked": []}
    try:
        unshare(CLONE_NEWNET)
        done["netns"] = True
    except OSError:  # no network namespaces here: reported as netns=False, which the local sandbox refuses
        pass
    unshare(CLONE_NEWNS)
    done["mountns"] = True
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Open the kept and allowed paths before hiding their parents, then bind them back from the open fds.
    kept = [(path, os.open(path, os.O_PATH)) for path in keep
            if any(_within(path, d) for d in HIDDEN_DIRS) and os.path.exists(path)]
    allowed_fds = [(path, os.open(path, os.O_PATH)) for path in allowed
                   if any(_within(path, m) for m in masked) and os.path.exists(path)]
    for hidden in HIDDEN_DIRS:
        if os.path.isdir(hidden) and not os.path.islink(hidden):
            mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0711,size=64m")
            done["hidden"].append(hidden)
    for path, fd in kept:
        _bind_read_only(fd, path)
    for path in sorted(masked, key=lambda p: p.count("/")):
        if not os.path.isdir(path) or os.path.islink(path):
            continue  # already hidden, or not there
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        inside = [(p, fd) for p, fd in allowed_fds if _within(p, path)]
        for package, fd in inside:
            _bind_read_only(fd, package, mode=0o755)
        mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        done["masked"].append(path)
    for _, fd in kept + allowed_fds:
        os.close(fd)
    _makedirs(work_root, 0o711)
    return done


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _bind_read_only(fd: int, path: str, mode: int = 0o711) -> None:
    """Bind the file or directory open as ``fd`` (``O_PATH``) at ``path``, read-only, making the mount point."""
    is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
    _makedirs(path if is_dir else os.path.dirname(path), mode)
    if not is_dir and not os.path.exists(path):
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _makedirs(path: str, mode: int) -> None:
    parts = path.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        sub = "/" + "/".join(parts[:i])
        if not os.path.isdir(sub):
            os.mkdir(sub, mode)


def mount_private_proc() -> None:
    """Mount a /proc that shows only the caller's PID namespace (call as pid 1 of a new one)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


# --------------------------------------------------------------------------------------------------
# rlimits and uid


#: Niceness of untrusted code (at least): CPU-bound programs (a thread spinner on every core) then cannot starve
#: the host's monitor, which must kill them on time. RLIMIT_NICE stays 0, so they cannot raise it back.
UNTRUSTED_NICENESS = 10


def set_rlimits(memory_mb: int, cpu_s: int, file_size_mb: int, open_files: int, processes: int) -> None:
    """Set soft = hard limits (hard limits cannot be raised again by an unprivileged process) and lower the priority."""
    # Never raise it: a niceness above UNTRUSTED_NICENESS (a Docker-API server started under `nice -n 19` starts
    # its containers at 19) stays, since going back down needs CAP_SYS_NICE, which a container's agent lacks.
    os.setpriority(os.PRIO_PROCESS, 0, max(UNTRUSTED_NICENESS, os.getpriority(os.PRIO_PROCESS, 0)))
    for name, value in (
        ("RLIMIT_AS", memory_mb << 20),
        ("RLIMIT_CPU", cpu_s),
        ("RLIMIT_FSIZE", file_size_mb << 20),
        ("RLIMIT_NOFILE", open_files),
        ("RLIMIT_NPROC", processes),
        ("RLIMIT_CORE", 0),
        ("RLIMIT_MEMLOCK", 0),
        ("RLIMIT_MSGQUEUE", 0),
        ("RLIMIT_NICE", 0),
    ):
        resource.setrlimit(getattr(resource, name), (value, value))


def drop_to_uid(uid: int) -> None:
    """Become ``uid``/``gid=uid`` with no supplementary groups, irreversibly."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getgid() != uid:
        raise OSError("uid switch did not take effect")


def set_no_new_privs() -> None:
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def kill_uid(uid: int, rounds: int = 100) -> int:
    """SIGKILL every process whose uid is ``uid`` until none is left; return how many were signalled."""
    import signal

    signalled = 0
    for _ in range(rounds):
        found = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    if handle.read().rpartition(b")")[2].split()[0] == b"Z":
                        continue  # a zombie: already dead, its parent reaps it
                os.kill(int(entry), signal.SIGKILL)
                found += 1
            except (OSError, IndexError):  # it exited between the listing and here (its /proc entry went with it)
                pass
        if not found:
            break
        signalled += found
    return signalled


_IPC_RMID = 0
_SYSV_REMOVERS = {"shm": "shmctl", "msg": "msgctl", "sem": "semctl"}


def remove_sysv_ipc() -> int:
    """Remove every SysV shared-memory segment, message queue and semaphore set this process may remove
    (in its IPC namespace, listed in ``/proc/sysvipc``); return how many went. For a sandbox whose seccomp
    filter could not be installed: its programs' objects must not outlive their run."""
    removed = 0
    for kind, remover in _SYSV_REMOVERS.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:  # no SysV IPC in this kernel: nothing to remove
            continue
        call = getattr(_libc, remover)
        for row in rows:
            fields = row.split()
            if len(fields) > 1 and fields[1].isdigit():
                args = (ctypes.c_int(int(fields[1])), ctypes.c_int(_IPC_RMID))
                if kind == "sem":
                    args = (args[0], ctypes.c_int(0), args[1])
                removed += call(*args, None) == 0
    return removed


# --------------------------------------------------------------------------------------------------
# Landlock

_LL_CREATE_VERSION = 1
_SYS_LL_CREATE, _SYS_LL_ADD_RULE, _SYS_LL_RESTRICT = 444, 445, 446  # same on every architecture
_LL_RULE_PATH_BENEATH, _LL_RULE_NET_PORT = 1, 2
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_TRUNCATE, _FS_IOCTL_DEV, _FS_REFER = 1 << 14, 1 << 15, 1 << 13
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: not available)."""
    version = _libc.syscall(_SYS_LL_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_LL_CREATE_VERSION))
    return max(int(version), 0)


def _handled_fs(abi: int) -> int:
    handled = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        handled |= _FS_REFER
    if abi >= 3:
        handled |= _FS_TRUNCATE
    if abi >= 5:
        handled |= _FS_IOCTL_DEV
    return handled


def apply_landlock(abi: int, read_dirs: list[str], write_dirs: list[str], read_files: list[str],
                   rw_files: list[str], list_dirs: Sequence[str] = ()) -> dict:
    """Restrict the calling thread (and its future children) to the given paths (``read_files`` may also be
    executed; ``list_dirs`` may only be listed, not read below); deny TCP and, from
    ABI 6, signals and abstract unix sockets outside the domain. Needs no_new_privs. Returns what is on."""
    handled = _handled_fs(abi)
    fields = [handled]
    if abi >= 4:
        fields.append(_NET_BIND_TCP | _NET_CONNECT_TCP)
    if abi >= 6:
        fields.append(_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    attr = struct.pack(f"={len(fields)}Q", *fields)
    ruleset = _check(_libc.syscall(_SYS_LL_CREATE, attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)),
                     "landlock_create_ruleset")
    file_rights = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
    try:
        for paths, rights, directory in (
            (read_dirs, _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR, True),
            (write_dirs, handled, True),
            (read_files, _FS_READ_FILE | _FS_EXECUTE, False),
            (rw_files, _FS_READ_FILE | _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0), False),
            (list_dirs, _FS_READ_DIR, True),
        ):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights if directory else rights & file_rights
                    rule = struct.pack("=Qi", allowed, fd)
                    _check(_libc.syscall(_SYS_LL_ADD_RULE, ruleset, _LL_RULE_PATH_BENEATH, rule, ctypes.c_uint32(0)),
                           f"landlock_add_rule {path}")
                finally:
                    os.close(fd)
        _check(_libc.syscall(_SYS_LL_RESTRICT, ruleset, ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return {"landlock_fs": True, "landlock_net": abi >= 4, "landlock_scope": abi >= 6}


# --------------------------------------------------------------------------------------------------
# seccomp (classic BPF, assembled here; x86_64 only)

_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_KILL_PROCESS, _RET_ALLOW, _RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_LD_ABS_W, _JEQ_K, _JGE_K, _JSET_K, _RET_K, _AND_K = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54
_EPERM, _EACCES, _ENOSYS = 1, 13, 38
_SOCK_TYPE_MASK, _SOCK_DGRAM = 0xF, 2

_X86_64 = {
    "socket": 41, "socketpair": 53, "clone": 56, "clone3": 435,
    "denied": {
        # SysV IPC and POSIX message queues: objects that outlive the process and reach other uids.
        "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66,
        "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "mq_open": 240,
        "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "mount": 165, "umount2": 166,
        "unshare": 272, "setns": 308, "pivot_root": 155, "chroot": 161, "keyctl": 250, "add_key": 248,
        "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 246, "kexec_file_load": 320,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167,
        "swapoff": 168, "acct": 163, "quotactl": 179, "open_by_handle_at": 304, "name_to_handle_at": 303,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "syslog": 103, "vhangup": 153, "iopl": 172, "ioperm": 173,
        "lookup_dcookie": 212, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
    },
}


def seccomp_program() -> bytes | None:
    """The filter as packed ``sock_filter`` structs, or None on an architecture it does not cover."""
    if platform.machine() != "x86_64":
        return None
    table = _X86_64
    code: list[tuple] = []  # (op, jt, jf, k) with jt/jf as labels or ints
    code.append((_LD_ABS_W, 0, 0, 4))                                   # arch
    code.append((_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64))
    code.append((_RET_K, 0, 0, _RET_KILL_PROCESS))
    code.append((_LD_ABS_W, 0, 0, 0))                                   # syscall nr
    code.append((_JGE_K, "kill", 0, 0x40000000))                        # x32 ABI
    for nr in table["denied"].values():
        code.append((_JEQ_K, "eperm", 0, nr))
    # No socket() of any family: no network, and no connect()/bind() to a named Unix socket (a host service
    # in a directory Landlock does not cover). Connected pairs stay: socketpair() of stream/seqpacket sockets.
    code.append((_JEQ_K, "eacces", 0, table["socket"]))
    code.append((_JEQ_K, "socketpair", 0, table["socketpair"]))
    code.append((_JEQ_K, "clone", 0, table["clone"]))
    code.append((_JEQ_K, "enosys", 0, table["clone3"]))  # glibc falls back to clone(), whose flags we can see
    code.append((_RET_K, 0, 0, _RET_ALLOW))
    labels = {"socketpair": len(code)}
    code.append((_LD_ABS_W, 0, 0, 24))                                  # args[1] low word: type (| flags)
    code.append((_AND_K, 0, 0, _SOCK_TYPE_MASK))
    code.append((_JEQ_K, "eacces", "allow", _SOCK_DGRAM))               # a datagram end can sendto() any path
    labels["clone"] = len(code)
    code.append((_LD_ABS_W, 0, 0, 16))                                  # args[0] low word: flags
    code.append((_JSET_K, "eperm", "allow", _NAMESPACE_FLAGS))
    for name, ret in (("allow", _RET_ALLOW), ("eperm", _RET_ERRNO | _EPERM), ("eacces", _RET_ERRNO | _EACCES),
                      ("enosys", _RET_ERRNO | _ENOSYS), ("kill", _RET_KILL_PROCESS)):
        labels[name] = len(code)
        code.append((_RET_K, 0, 0, ret))
    out = bytearray()
    for index, (op, jt, jf, k) in enumerate(code):
        jt = labels[jt] - index - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - index - 1 if isinstance(jf, str) else jf
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise AssertionError("seccomp jump out of range")
        out += struct.pack("=HBBI", op, jt, jf, k)
    return bytes(out)


def apply_seccomp(program: bytes) -> None:
    """Install the filter on the calling thread (needs no_new_privs)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("=HxxxxxxQ", len(program) // 8, ctypes.addressof(buffer))
    _check(_libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.c_char_p(fprog),
                       ctypes.c_ulong(0), ctypes.c_ulong(0)), "seccomp filter")
