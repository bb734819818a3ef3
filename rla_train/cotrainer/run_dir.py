"""Who may write a run directory: one run at a time, and never over an earlier run unless told.

::

    with claim_run_dir("runs/a", resume=False, overwrite=False):   # RunDirError if another run holds it,
        ...                                                          # or it holds an earlier run's files

A run holds an exclusive ``fcntl.flock`` on ``RUN/.rla-run.lock`` (which records its pid) for its whole life;
the kernel drops the lock when the process ends, even by SIGKILL, so a crashed run never blocks the next. A
second run on the directory is refused with the holder's pid. A fresh run (neither ``resume`` nor
``overwrite``) is refused when the directory holds anything else; ``overwrite`` first removes what a run
writes (:data:`RUN_FILES`), and nothing else; ``resume`` keeps everything (the caller then checks that there
is a checkpoint to continue from).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rla_envs.core.errors import RlaError

__all__ = ["RunDirError", "claim_run_dir", "check_run_dir", "lock_holder", "LOCK_FILE", "RUN_FILES", "SCRATCH_DIRS",
           "PROBE_POLICY_FILE"]

LOCK_FILE = ".rla-run.lock"
"""The file in a run directory whose ``flock`` the running run holds; it records the holder's pid."""

SCRATCH_DIRS = ("warm-start", "trl-policy", "trl-reward-model")
"""TRL trainers' ``output_dir`` folders inside a run directory (they save nothing there; a run removes them empty)."""

PROBE_POLICY_FILE = "rm-probe-policy-steps.json"
"""The policy's labelled steps on the reward model's probe games (:mod:`rla_train.cotrainer.judge_metrics`), written
once by a fresh run and read back by ``--resume``."""

RUN_FILES = ("config.yaml", "checkpoints", "metrics.jsonl", "summary.json", "learning_curves.png", "tensorboard",
             PROBE_POLICY_FILE, *SCRATCH_DIRS)
"""What ``python -m rla_train.run`` writes into its run directory: all that ``overwrite`` removes."""


class RunDirError(RlaError, RuntimeError):
    """A run directory that this run may not use now (held by another run, or holding an earlier run)."""


def lock_holder(run_dir: str | os.PathLike) -> int | None:
    """The pid recorded by the run that holds (or last held) ``run_dir``'s lock, or None."""
    try:
        text = (Path(run_dir) / LOCK_FILE).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _refuse_earlier_run(run_dir: Path, overwrite: bool) -> None:
    """Refuse a fresh run into a directory that holds files, or (``overwrite``) remove the run's own files."""
    if overwrite:
        for name in RUN_FILES:
            path = run_dir / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
        return
    entries = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK_FILE)
    if entries:
        shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
        raise RunDirError(f"{run_dir} is not empty ({shown}): continue that run with --resume {run_dir}, clear it with "
                          "--overwrite, or choose another output.dir")


def _refuse_bad_request(run_dir: str | os.PathLike, resume: bool, overwrite: bool) -> Path:
    """The checks that need no lock: not both ``resume`` and ``overwrite``, and not a file; returns the path."""
    if resume and overwrite:
        raise RunDirError("--resume continues a run and --overwrite clears it; pass one of them")
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"{run_dir} is a file, not a run directory; choose another output.dir")
    return run_dir


def _lock_or_refuse(fd: int, run_dir: Path) -> None:
    """Take the exclusive lock on the open lock file ``fd``, or raise naming the live run that holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = lock_holder(run_dir)
        raise RunDirError(f"{run_dir} is in use by another run (pid {holder if holder else 'unknown'}); wait for "
                          "it to finish, or choose another output.dir") from None


def check_run_dir(run_dir: str | os.PathLike, *, resume: bool = False, overwrite: bool = False) -> None:
    """Raise the :class:`RunDirError` that :func:`claim_run_dir` would raise now, changing nothing on disk.

    The command line calls it before its heavy imports (torch, transformers: seconds), so a run directory in
    use or holding an earlier run is refused at once; :func:`claim_run_dir` still checks again when it takes the lock.
    """
    run_dir = _refuse_bad_request(run_dir, resume, overwrite)
    if not run_dir.exists():
        return
    lock = run_dir / LOCK_FILE
    if lock.exists():
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            fd = None
        if fd is not None:
            try:
                _lock_or_refuse(fd, run_dir)
            finally:
                os.close(fd)
    if not resume and not overwrite:
        _refuse_earlier_run(run_dir, overwrite=False)


@contextmanager
def claim_run_dir(run_dir: str | os.PathLike, *, resume: bool = False, overwrite: bool = False) -> Iterator[Path]:
    """Hold ``run_dir`` for a run (see the module docstring); yields its path, releases it on exit.

    Raises:
        RunDirError: another live process holds the directory (its pid is named); or a fresh run finds it not
            empty; or both ``resume`` and ``overwrite`` were asked for.
    """
    run_dir = _refuse_bad_request(run_dir, resume, overwrite)
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock_or_refuse(fd, run_dir)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        if not resume:
            _refuse_earlier_run(run_dir, overwrite)
        yield run_dir
    finally:
        os.close(fd)  # drops the lock
