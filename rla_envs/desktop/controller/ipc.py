"""System V IPC objects of the session: those the booted desktop made stay, the rest go at reset.

A shared-memory segment, a semaphore set or a message queue outlives the process that made it, so the agent's
code could leave one for the next episode (a 0600 segment holding its notes). The session has an IPC namespace
of its own (``--unshare-ipc`` locally; a container's by default), so ``/proc/sysvipc`` lists only its objects.
POSIX message queues and shared memory are files (``/dev/mqueue``, ``/dev/shm``): :mod:`controller.scratch`
restores those.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["SysvIpc", "list_objects"]

IPC_RMID = 0
_KINDS = ("shm", "sem", "msg")


def list_objects(root: str = "/proc/sysvipc") -> set[tuple[str, int, int]]:
    """``(kind, id, creator pid or -1)`` of every System V object the session's IPC namespace holds."""
    found = set()
    for kind in _KINDS:
        try:
            with open(os.path.join(root, kind)) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:  # no System V IPC in this kernel
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 4:
                creator = int(fields[4]) if kind == "shm" else -1  # shm: key shmid perms size cpid ...
                found.add((kind, int(fields[1]), creator))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


class SysvIpc:
    """The session's System V objects at :meth:`snapshot`, and :meth:`clear`, which removes the others.

    A shared-memory segment made later by a process still running at reset (the controller's own screen grabs,
    a core process) stays: only the agent's processes are gone by then, and their segments go.
    """

    def __init__(self, root: str = "/proc/sysvipc"):
        self.root = root
        self._at_boot: set[tuple[str, int]] = set()
        self._libc = ctypes.CDLL(None, use_errno=True)

    def snapshot(self) -> None:
        """Remember the objects that exist now."""
        self._at_boot = {(kind, ident) for kind, ident, _ in list_objects(self.root)}

    def clear(self) -> list[str]:
        """Remove every object made since :meth:`snapshot` whose maker is gone; returns ``kind:id`` of each."""
        removed = []
        for kind, ident, creator in sorted(list_objects(self.root)):
            if (kind, ident) in self._at_boot or (creator > 0 and _alive(creator)):
                continue
            if self._remove(kind, ident) == 0:
                removed.append(f"{kind}:{ident}")
        return removed

    def _remove(self, kind: str, ident: int) -> int:
        if kind == "shm":
            return self._libc.shmctl(ident, IPC_RMID, None)
        if kind == "sem":
            return self._libc.semctl(ident, 0, IPC_RMID)
        return self._libc.msgctl(ident, IPC_RMID, None)
