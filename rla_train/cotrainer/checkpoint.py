"""Checkpoints of a training run, written atomically: a step's directory appears whole or not at all.

::

    path = save_checkpoint(run_dir, step=12, models={"policy": (model, tokenizer)},
                           states={"policy_optimizer": optimizer.state_dict()}, pool=pool,
                           meta={"step": 12}, keep_last=3)
    latest = latest_checkpoint(run_dir)                 # run_dir/checkpoints/step-000012 (or None)
    meta = load_meta(latest); restore_rng(latest)       # then models / states / pool from the same dir

Everything goes into ``checkpoints/.tmp-step-000012-*`` first (models with ``save_pretrained``, tensors and
optimizer states with ``torch.save``, the task pool with its own atomic ``save``, the RNG states of Python,
NumPy and torch, then ``meta.json``); the directory is fsynced and renamed to ``step-000012`` in one
``os.replace``. A crash at any point leaves the previous checkpoints intact and at worst a ``.tmp-*``
directory, which :func:`latest_checkpoint` ignores and the next save removes.

``meta.json`` also records the size and SHA-256 of every other file of the checkpoint (``"files"``).
:func:`verify_checkpoint` checks them, and :func:`latest_checkpoint` skips a checkpoint that fails (a file
truncated, changed or deleted after the save) with a :class:`CheckpointWarning` naming it, falling back to the
newest intact one. Checkpoints written before the manifest existed are taken as they are.

Nothing in a checkpoint is unpickled as code: whoever can write ``states.pt`` can write ``meta.json`` too, so
the manifest proves nothing about trust. ``states.pt`` and ``rng.pt`` hold only tensors and plain containers
(NumPy values are turned into Python numbers and lists when saved, see :func:`plain_state`) and are read with
``torch.load(weights_only=True)``; a file holding anything else (an object whose unpickling would run code) is
refused with :class:`CorruptCheckpoint`. Model weights are read by ``from_pretrained`` (safetensors).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rla_envs.core.errors import RlaError

__all__ = ["save_checkpoint", "latest_checkpoint", "list_checkpoints", "verify_checkpoint", "load_meta", "load_states",
           "capture_rng", "restore_rng", "apply_rng", "plain_state", "directory_fingerprint", "CorruptCheckpoint",
           "CheckpointWarning", "CHECKPOINTS_DIR"]

CHECKPOINTS_DIR = "checkpoints"
_STEP_DIR = re.compile(r"^step-(\d+)$")
_META, _STATES, _RNG, _POOL = "meta.json", "states.pt", "rng.pt", "pool.json"
_FILES = "files"
"""The key of ``meta.json`` that holds ``{relative path: [size, sha256]}`` of every other file."""


class CorruptCheckpoint(RlaError, ValueError):
    """A checkpoint whose files do not match what its ``meta.json`` recorded at save time (or no intact one)."""


class CheckpointWarning(UserWarning):
    """A corrupt checkpoint was skipped in favour of an older, intact one."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def plain_state(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays turned into Python numbers and lists, recursively.

    What is left is tensors and plain containers, which ``torch.load(weights_only=True)`` reads back without
    running any code.
    """
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if type(value) in (dict, OrderedDict):
        return type(value)((key, plain_state(item)) for key, item in value.items())
    if type(value) in (list, tuple):
        return type(value)(plain_state(item) for item in value)
    return value


def _load_plain(path: Path) -> Any:
    """A ``torch.save`` file of tensors and plain containers; anything else is refused, never unpickled."""
    import pickle

    import torch

    try:
        return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as error:
        first_line = str(error).strip().splitlines()[-1][:200] if str(error).strip() else type(error).__name__
        raise CorruptCheckpoint(
            f"{path} holds objects other than tensors and plain containers ({first_line}); it is not unpickled, since "
            "unpickling can run code. A checkpoint written by this rla never does: the file was written elsewhere "
            "or by an older rla; start the run again (python -m rla_train.run --overwrite)") from None


def capture_rng() -> dict[str, Any]:
    """The RNG states of Python's ``random``, NumPy's global generator and torch (CPU and CUDA), as plain data."""
    import torch

    state = {"python": random.getstate(), "numpy": plain_state(np.random.get_state(legacy=False)),
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["torch_cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(checkpoint: str | os.PathLike) -> None:
    """Put back the RNG states saved in ``checkpoint`` (see :func:`capture_rng`)."""
    apply_rng(_load_plain(Path(checkpoint) / _RNG))


def apply_rng(state: Mapping[str, Any]) -> None:
    """Put back RNG states that :func:`capture_rng` returned."""
    import torch

    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "torch_cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["torch_cuda"])


def list_checkpoints(run_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(step, path)`` of every complete checkpoint of the run, oldest first."""
    root = Path(run_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name)) and (p / _META).is_file()]
    return sorted(found)


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def directory_fingerprint(directory: str | os.PathLike) -> str:
    """One SHA-256 over :func:`_manifest` (the relative path, size and SHA-256 of every file under ``directory``): what
    a model directory is, whatever its name (an evaluation's episodes are only resumed by the model that played them)."""
    return hashlib.sha256(json.dumps(_manifest(Path(directory)), sort_keys=True).encode()).hexdigest()


def _manifest(directory: Path) -> dict[str, list]:
    """``{relative path: [size, sha256]}`` of every file under ``directory`` but ``meta.json``."""
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.relative_to(directory).as_posix() != _META)
    return {p.relative_to(directory).as_posix(): [p.stat().st_size, _sha256(p)] for p in files}


def verify_checkpoint(checkpoint: str | os.PathLike) -> None:
    """Check every file of ``checkpoint`` against the sizes and SHA-256 sums its ``meta.json`` recorded.

    Raises:
        CorruptCheckpoint: ``meta.json`` unreadable, or a recorded file missing, of another size or content (the
            message names the first such file).
    """
    path = Path(checkpoint)
    try:
        meta = json.loads((path / _META).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CorruptCheckpoint(f"checkpoint {path}: {_META} is unreadable ({error})") from error
    files = meta.get(_FILES) if isinstance(meta, dict) else {}
    if files is None:  # written before checkpoints recorded their files: nothing to check against
        return
    entries = files.items() if isinstance(files, dict) else ()
    if not entries or not all(isinstance(e, list) and len(e) == 2 for _, e in entries):
        raise CorruptCheckpoint(f"checkpoint {path}: {_META} holds no valid file list (key {_FILES!r})")
    for name, (size, digest) in sorted(entries):
        file = path / name
        if not file.is_file():
            raise CorruptCheckpoint(f"checkpoint {path}: {name} is missing")
        if file.stat().st_size != size:
            raise CorruptCheckpoint(f"checkpoint {path}: {name} has {file.stat().st_size} bytes, {size} were saved")
        if _sha256(file) != digest:
            raise CorruptCheckpoint(f"checkpoint {path}: {name} differs from the saved file (SHA-256)")


def latest_checkpoint(run_dir: str | os.PathLike, *, verify: bool = True) -> Path | None:
    """The newest intact checkpoint of the run, or None when the run has none.

    With ``verify`` (the default) each candidate, newest first, goes through :func:`verify_checkpoint`; a corrupt
    one is skipped with a :class:`CheckpointWarning`.

    Raises:
        CorruptCheckpoint: the run has checkpoints but none is intact (the message lists each one's fault).
    """
    found = list_checkpoints(run_dir)
    if not verify:
        return found[-1][1] if found else None
    faults = []
    for _, path in reversed(found):
        try:
            verify_checkpoint(path)
        except CorruptCheckpoint as error:
            faults.append(str(error))
            continue
        for fault in faults:
            warnings.warn(f"skipping a corrupt checkpoint, {fault}; using {path.name}", CheckpointWarning, stacklevel=2)
        return path
    if faults:
        raise CorruptCheckpoint(f"no intact checkpoint in {Path(run_dir) / CHECKPOINTS_DIR}: " + "; ".join(faults)
                                + "; start the run again (python -m rla_train.run --overwrite)")
    return None


def save_checkpoint(run_dir: str | os.PathLike, step: int, *, models: Mapping[str, Any] | None = None,
                    states: Mapping[str, Any] | None = None, pool=None, meta: Mapping[str, Any] | None = None,
                    keep_last: int | None = 3) -> Path:
    """Write checkpoint ``step`` of the run atomically and return its directory.

    Args:
        models: ``{name: model}`` or ``{name: (model, tokenizer)}``, saved with ``save_pretrained`` into
            ``name/``.
        states: ``{name: state}`` (optimizer and scheduler ``state_dict()``s, counters): tensors and plain
            containers (NumPy values become Python numbers and lists), saved together with ``torch.save`` and read
            back by :func:`load_states` without unpickling anything else.
        pool: a ``TaskPool`` (saved with its own ``save``).
        meta: JSON-able facts (step, metrics); ``step`` is always recorded, and ``files`` (every other file's size
            and SHA-256, for :func:`verify_checkpoint`).
        keep_last: keep only this many newest checkpoints (None = all).
    """
    import torch

    if type(step) is not int or step < 0:
        raise ValueError(f"step must be an int >= 0, got {step!r}")
    if meta is not None and _FILES in meta:
        raise ValueError(f"meta[{_FILES!r}] is reserved for the checkpoint's file manifest; use another key")
    if keep_last is not None and keep_last < 1:
        raise ValueError(f"keep_last must be >= 1 or None (keep all), got {keep_last}")
    root = Path(run_dir) / CHECKPOINTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(".tmp-*"):  # left by a crash during an earlier save
        shutil.rmtree(stale, ignore_errors=True)
    final = root / f"step-{step:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=root))
    try:
        for name, item in (models or {}).items():
            model, tokenizer = item if isinstance(item, tuple) else (item, None)
            model.save_pretrained(tmp / name)
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp / name)
        torch.save(plain_state(dict(states or {})), tmp / _STATES)
        torch.save(capture_rng(), tmp / _RNG)
        if pool is not None:
            pool.save(tmp / _POOL)
        record = {**dict(meta or {}), "step": step, _FILES: _manifest(tmp)}
        (tmp / _META).write_text(json.dumps(record, indent=2, sort_keys=True))
        for path in [*tmp.rglob("*"), tmp]:
            if path.is_file():
                with open(path, "rb") as handle:
                    os.fsync(handle.fileno())
        _fsync_dir(tmp)
        if final.exists():  # the same step saved again (e.g. after a resume): replace it
            shutil.rmtree(final)
        os.replace(tmp, final)
        _fsync_dir(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if keep_last is not None:
        for _, old in list_checkpoints(run_dir)[:-keep_last]:
            shutil.rmtree(old, ignore_errors=True)
    return final


def load_meta(checkpoint: str | os.PathLike) -> dict[str, Any]:
    """The ``meta`` dict saved with the checkpoint (with its ``step``; without the file manifest)."""
    meta = json.loads((Path(checkpoint) / _META).read_text())
    meta.pop(_FILES, None)
    return meta


def load_states(checkpoint: str | os.PathLike) -> dict[str, Any]:
    """The ``states`` dict saved with the checkpoint (optimizer / scheduler states, counters).

    Raises:
        CorruptCheckpoint: ``states.pt`` holds something other than tensors and plain containers (not unpickled).
    """
    return _load_plain(Path(checkpoint) / _STATES)
