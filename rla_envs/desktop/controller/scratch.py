"""The session's scratch folders (``/tmp``, ``/var/tmp``): what the desktop made at boot stays, the rest goes at reset.

A reset restores the home (:mod:`controller.home`), but an episode can also leave files in the scratch
folders -- a script, a half-written answer, a marker that tells the next episode what the last one saw -- and
the next episode, perhaps of another task, would find them. The controller lists the scratch folders once
the desktop has booted (the X server's socket and lock, the session's runtime dir, the controller's own
files) and every reset removes each entry that was not there then, after the apps are killed.

The entries kept are kept whole: an episode could still write inside one of them (say the runtime dir).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["ScratchDirs", "SCRATCH_DIRS"]

SCRATCH_DIRS = ("/tmp", "/var/tmp")


class ScratchDirs:
    """The entries of ``dirs`` at :meth:`snapshot`, and :meth:`clear`, which removes every other entry."""

    def __init__(self, dirs: tuple[str, ...] = SCRATCH_DIRS):
        self.dirs = [Path(d) for d in dirs]
        self._at_boot: dict[Path, set[str]] = {}

    def snapshot(self) -> None:
        """Remember what each folder holds now (the desktop's own entries)."""
        self._at_boot = {d: set(os.listdir(d)) for d in self.dirs if d.is_dir()}

    def clear(self) -> list[str]:
        """Remove every entry made since :meth:`snapshot`; returns their paths (one that cannot go is skipped)."""
        removed = []
        for directory, kept in self._at_boot.items():
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if entry.name in kept:
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.unlink(entry.path)
                except FileNotFoundError:  # it went meanwhile: the aim is met
                    pass
                except OSError:  # not this session's to remove (another user's, a mount point)
                    continue
                removed.append(entry.path)
        return removed
