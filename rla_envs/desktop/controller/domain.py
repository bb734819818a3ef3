"""Landlock domains for what the agent can start or drive: no such process can trace the desktop's core or the grader.

``python -I domain.py -- PROGRAM ARGS...`` enters a new Landlock domain, then executes PROGRAM in it (the path is
searched on ``$PATH``; the environment and the open descriptors pass through). The controller starts through it
the agent's action worker, the task's setup commands and launched apps, and the two D-Bus buses (whose activated
services, a terminal's shell among them, inherit the bus's domain). It starts Xvfb, openbox, the evaluator's
commands (``/execute``) and itself outside any domain.

What a domain takes away, whatever the kernel's Yama setting (this machine has no Yama): a process in a domain can
``ptrace`` a process only if that process is in the same domain or one nested in it, and the kernel applies the
same check to ``/proc/<pid>/mem``, ``/proc/<pid>/environ``, ``process_vm_writev`` and ``pidfd_getfd``. So the agent's
code, and every app it starts or drives, can no longer change the memory of Xvfb, openbox, the controller or a
probe the evaluator runs (the probe's output is what scores). Nothing else changes: the ruleset handles one
filesystem right only (making block devices, which the session's user cannot do anyway), and no scope, so files,
sockets and signals are as they were. Landlock needs ``no_new_privs``, which the session already has (bubblewrap
sets it; the container runs with ``no-new-privileges``).

A kernel without Landlock (before 5.13, or a seccomp filter that refuses its calls) leaves the controller
starting these commands as they are; it says so once on stderr (:func:`available`).

It imports nothing outside the standard library: it runs under ``python -I`` from this read-only file, so no
module, ``.pth`` or environment variable the agent planted runs before the domain is entered.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["landlock_abi", "available", "enter", "confined", "SCRIPT"]

SCRIPT = os.path.abspath(__file__)
"""This file: what ``confined`` runs under ``python -I``."""

_SYS_CREATE_RULESET, _SYS_RESTRICT_SELF = 444, 446  # the same number on every architecture (asm-generic)
_CREATE_RULESET_VERSION = 1
_ACCESS_FS_MAKE_BLOCK = 1 << 11  # handled with no rule: nobody in the domain makes a block device
_PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where the kernel (or a seccomp filter) offers none."""
    version = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def enter() -> None:
    """Put the calling process, and everything it starts from now on, in a new Landlock domain.

    Raises ``OSError`` (naming the call) when the kernel refuses."""
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    attr = ctypes.c_uint64(_ACCESS_FS_MAKE_BLOCK)  # struct landlock_ruleset_attr as ABI 1 knows it
    ruleset = _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                            ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        if _libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)


_AVAILABLE: bool | None = None


def available() -> bool:
    """Whether commands can be started in a domain here: measured once, by starting one (``true``) through
    :data:`SCRIPT`; when they cannot, why is printed on stderr and :func:`confined` leaves commands as they are."""
    global _AVAILABLE
    if _AVAILABLE is None:
        if landlock_abi() < 1:
            _AVAILABLE = False
            print("controller: this kernel offers no Landlock: the agent's code and apps run outside any domain "
                  "and can trace the desktop's core processes and the evaluator's probes where Yama allows it",
                  file=sys.stderr)
        else:
            probe = subprocess.run([sys.executable, "-I", SCRIPT, "--", "true"], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60)
            _AVAILABLE = probe.returncode == 0
            if not _AVAILABLE:
                print(f"controller: cannot enter a Landlock domain ({probe.stderr.strip()[-300:]}); the agent's code "
                      "and apps run outside any domain", file=sys.stderr)
    return _AVAILABLE


def confined(argv: Sequence[str], path: str | None = None) -> list[str]:
    """``argv`` started in a new domain (through :data:`SCRIPT`), or as it is where :func:`available` is false.

    A bare ``argv[0]`` is looked up on ``path`` (the ``$PATH`` the command will run with) here, so a program that
    does not exist raises ``FileNotFoundError`` as ``subprocess.Popen`` would, instead of starting a wrapper that
    fails (a name with a ``/`` is left to the wrapper: it is relative to the command's working directory)."""
    argv = list(argv)
    if not available():
        return argv
    if not argv or ("/" not in argv[0] and shutil.which(argv[0], path=path) is None):
        name = argv[0] if argv else ""
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    return [sys.executable, "-I", SCRIPT, "--", *argv]


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: python -I domain.py -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    program = list(argv[1:])
    try:
        enter()
    except OSError as exc:
        print(f"domain: {exc}", file=sys.stderr)
        return 126
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"domain: cannot execute {program[0]!r}: {exc}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
