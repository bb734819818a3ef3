"""The session's writable folders outside the home: what the booted desktop made stays as it was, the rest goes.

A reset restores the home (:mod:`controller.home`), but the agent's code can also write in ``/tmp``,
``/var/tmp``, ``/dev/shm``, ``/dev/mqueue`` (POSIX message queues), the session's runtime dir and the X
socket dir -- a script, a half-written answer, a marker that tells the next episode what the last one saw --
and the next episode, perhaps of another task, would find it. The controller takes an inventory of these
folders once the desktop has booted: every entry at any depth (the X server's socket, the buses' sockets, the
controller's own files), with its mode, time and extended attributes and, for a small regular file, its bytes.
Every reset, after the apps are killed, removes each entry that was not there then (at any depth: a file
planted inside the kept runtime dir goes too), writes back a kept file whose bytes changed, and puts back the
modes, times and extended attributes of the kept entries (the folders' own too, where a marker could hide).

A kept folder, file or link that is gone is made again from the inventory; a kept socket that is gone (one the
agent deleted) cannot be: :meth:`clear` reports it, and the reset then asks for a fresh session.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ScratchDirs", "SCRATCH_DIRS", "Cleared", "KEPT_FILE_BYTES", "EntryState", "remember", "put_back",
           "open_up", "remove_entry"]

SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock", "/run/user")
"""Folders any user may write in on Debian (those that exist in a session; the runtime dir is added to them)."""
KEPT_FILE_BYTES = 1 << 20
"""A kept regular file up to this size has its bytes remembered and written back when changed (the booted
desktop's files there are a few bytes: a lock, dconf's change flag, the controller's ready file)."""


@dataclass(frozen=True)
class EntryState:
    """One entry as it was: its kind (``dir``, ``file``, ``link``, ``other``) and what a reset puts back."""

    kind: str
    mode: int
    mtime_ns: int
    xattrs: tuple[tuple[str, bytes], ...] = ()
    data: bytes | None = None  # a small regular file's bytes
    link: str | None = None    # a symbolic link's target
    sealed: bool = False       # a folder on a read-only mount: nothing under it can change, so it is not listed


@dataclass
class Cleared:
    """What :meth:`ScratchDirs.clear` did: the entries it removed, the kept ones it found gone, and the new ones it
    could not remove (either of the last two makes the reset ask for a fresh session)."""

    removed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"  # a socket, a fifo, a message queue shown as a file of mqueue's own kind


def _xattrs(path: str) -> tuple[tuple[str, bytes], ...]:
    """``path``'s extended attributes (a symbolic link's own: none can be set on those), sorted."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
        return tuple(sorted((name, os.getxattr(path, name, follow_symlinks=False)) for name in names))
    except OSError:  # the file system keeps none, or the entry went meanwhile
        return ()


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def open_up(folder: str) -> None:
    """Give ``folder``'s owner read, write and search on it (best effort), so that what is inside can be listed
    and removed: the agent's code can ``chmod 555`` a folder it owns to keep a planted file past a reset. The
    caller puts the kept mode back afterwards (:func:`put_back`)."""
    try:
        mode = stat.S_IMODE(os.lstat(folder).st_mode)
        if mode & 0o700 != 0o700:
            os.chmod(folder, mode | 0o700)
    except OSError:  # not ours (then not the agent's either) or read-only
        pass


def remove_entry(path: str, is_dir: bool) -> bool:
    """Remove ``path`` (a tree when ``is_dir``, its folders opened up first); False when it cannot go (a mount
    point, read-only)."""
    try:
        if is_dir:
            open_up(path)
            for folder, subfolders, _ in os.walk(path):  # top-down: a folder is opened up before it is listed
                for name in subfolders:
                    open_up(os.path.join(folder, name))
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:  # it went meanwhile: the aim is met
        return True
    except OSError:
        return False
    return True


def put_back(path: str, kept: EntryState) -> None:
    """Give a kept file or folder back its extended attributes, mode and time (each best effort: what cannot be
    changed here -- a read-only entry, a folder owned by root -- cannot have been changed by the agent either)."""
    try:
        now = dict(_xattrs(path))
        for name in now.keys() - dict(kept.xattrs).keys():
            os.removexattr(path, name, follow_symlinks=False)
        for name, value in kept.xattrs:
            if now.get(name) != value:
                os.setxattr(path, name, value, follow_symlinks=False)
    except OSError:
        pass
    try:
        info = os.lstat(path)
        if stat.S_IMODE(info.st_mode) != kept.mode:
            os.chmod(path, kept.mode)
        if info.st_mtime_ns != kept.mtime_ns:
            os.utime(path, ns=(kept.mtime_ns, kept.mtime_ns), follow_symlinks=False)
    except OSError:
        pass


def _read_only(path: str) -> bool:
    """Whether ``path`` lies on a read-only mount (nothing under it can change)."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def remember(path: str, info: os.stat_result | None = None) -> EntryState:
    """What ``path`` is now (``info``: its ``lstat``, when already at hand)."""
    info = info if info is not None else os.lstat(path)
    kind = _kind(info.st_mode)
    data = None
    if kind == "file" and info.st_size <= KEPT_FILE_BYTES:
        try:
            data = Path(path).read_bytes()
        except OSError:  # unreadable (then not writable by the agent either)
            data = None
    link = os.readlink(path) if kind == "link" else None
    sealed = kind == "dir" and _read_only(path)
    return EntryState(kind, stat.S_IMODE(info.st_mode), info.st_mtime_ns,
                      _xattrs(path) if kind in ("dir", "file") else (), data, link, sealed)


class ScratchDirs:
    """An inventory of ``dirs`` at :meth:`snapshot`, and :meth:`clear`, which brings them back to it.

    Args:
        dirs: the folders to keep as the booted desktop left them (missing ones are skipped; one inside another
            is covered by the outer one).
    """

    def __init__(self, dirs: tuple[str, ...] | list[str] = SCRATCH_DIRS):
        roots = sorted(dict.fromkeys(os.path.realpath(d) for d in dirs))
        self.dirs = [Path(r) for r in roots if not any(r.startswith(o.rstrip("/") + "/") for o in roots if o != r)]
        self._inventory: dict[str, dict[str, EntryState]] = {}  # folder -> its entries' names -> what they were
        self._roots: dict[str, EntryState] = {}

    def snapshot(self) -> None:
        """Remember every entry under each folder now (the desktop's own)."""
        self._inventory, self._roots = {}, {}
        for root in self.dirs:
            if root.is_dir():
                self._roots[str(root)] = kept = remember(str(root))
                if not kept.sealed:
                    self._take(str(root))

    def _take(self, folder: str) -> None:
        entries: dict[str, EntryState] = {}
        try:
            listing = list(os.scandir(folder))
        except OSError:
            return
        for entry in listing:
            try:
                kept = remember(entry.path, entry.stat(follow_symlinks=False))
            except FileNotFoundError:
                continue
            entries[entry.name] = kept
            if kept.kind == "dir" and not kept.sealed:
                self._take(entry.path)
        self._inventory[folder] = entries

    def clear(self) -> Cleared:
        """Remove every entry made since :meth:`snapshot` and put the kept ones back as they were."""
        cleared = Cleared()
        for root, kept in self._roots.items():
            if not kept.sealed:
                self._restore(root, cleared)
                put_back(root, kept)
        return cleared

    def _restore(self, folder: str, cleared: Cleared) -> None:
        expected = self._inventory.get(folder, {})
        open_up(folder)  # its kept mode comes back after (put_back)
        try:
            listing = list(os.scandir(folder))
        except OSError:
            return
        seen = set()
        for entry in listing:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                kind = _kind(entry.stat(follow_symlinks=False).st_mode)
            except FileNotFoundError:
                continue
            kept = expected.get(entry.name)
            if kept is not None and kind == "link" and _link(entry.path) != kept.link:
                kept = None  # the agent pointed a kept link elsewhere: it goes (and is reported missing)
            if kept is None or kept.kind != kind:
                if remove_entry(entry.path, is_dir):
                    cleared.removed.append(entry.path)
                else:
                    cleared.left.append(entry.path)
                continue
            seen.add(entry.name)
            if kept.sealed:
                continue
            if kind == "dir":
                self._restore(entry.path, cleared)
            elif kind == "file" and kept.data is not None:
                self._restore_bytes(entry.path, kept.data)
            if kind in ("dir", "file"):
                put_back(entry.path, kept)
        for name in sorted(expected.keys() - seen):
            self._make_again(os.path.join(folder, name), expected[name], cleared)

    def _make_again(self, path: str, kept: EntryState, cleared: Cleared) -> None:
        """Make a kept entry that went (an app may delete and make again a file it owns, as dconf does with its
        flag) from the inventory; a socket or a file too large to remember cannot be, and is reported missing."""
        try:
            if kept.kind == "dir" and not kept.sealed:
                os.mkdir(path, kept.mode)
                self._restore(path, cleared)
            elif kept.kind == "file" and kept.data is not None:
                with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, kept.mode), "wb") as handle:
                    handle.write(kept.data)
            elif kept.kind == "link" and kept.link is not None:
                os.symlink(kept.link, path)
            else:
                cleared.missing.append(path)
                return
        except OSError:
            cleared.missing.append(path)
            return
        put_back(path, kept)

    @staticmethod
    def _restore_bytes(path: str, data: bytes) -> None:
        try:
            if Path(path).read_bytes() != data:
                Path(path).write_bytes(data)
        except OSError:  # read-only (then unchanged) or not ours
            pass
