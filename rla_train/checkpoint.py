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
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["save_checkpoint", "latest_checkpoint", "list_checkpoints", "load_meta", "load_states", "capture_rng",
           "restore_rng", "CHECKPOINTS_DIR"]

CHECKPOINTS_DIR = "checkpoints"
_STEP_DIR = re.compile(r"^step-(\d+)$")
_META, _STATES, _RNG, _POOL = "meta.json", "states.pt", "rng.pt", "pool.json"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def capture_rng() -> dict[str, Any]:
    """The RNG states of Python's ``random``, NumPy's global generator and torch (CPU and CUDA)."""
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["torch_cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(checkpoint: str | os.PathLike) -> None:
    """Put back the RNG states saved in ``checkpoint`` (see :func:`capture_rng`)."""
    import torch

    state = torch.load(Path(checkpoint) / _RNG, weights_only=False)
    random.setstate(state["python"])
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


def latest_checkpoint(run_dir: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint of the run, or None."""
    found = list_checkpoints(run_dir)
    return found[-1][1] if found else None


def save_checkpoint(run_dir: str | os.PathLike, step: int, *, models: Mapping[str, Any] | None = None,
                    states: Mapping[str, Any] | None = None, pool=None, meta: Mapping[str, Any] | None = None,
                    keep_last: int | None = 3) -> Path:
    """Write checkpoint ``step`` of the run atomically and return its directory.

    Args:
        models: ``{name: model}`` or ``{name: (model, tokenizer)}``, saved with ``save_pretrained`` into
            ``name/``.
        states: ``{name: state}`` (optimizer and scheduler ``state_dict()``s, counters), saved together
            with ``torch.save`` (read back with :func:`load_states`).
        pool: a ``TaskPool`` (saved with its own ``save``).
        meta: JSON-able facts (step, metrics); ``step`` is always recorded.
        keep_last: keep only this many newest checkpoints (None = all).
    """
    import torch

    if type(step) is not int or step < 0:
        raise ValueError(f"step must be an int >= 0, got {step!r}")
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
        torch.save(dict(states or {}), tmp / _STATES)
        torch.save(capture_rng(), tmp / _RNG)
        if pool is not None:
            pool.save(tmp / _POOL)
        (tmp / _META).write_text(json.dumps({**dict(meta or {}), "step": step}, indent=2, sort_keys=True))
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
    """The ``meta`` dict saved with the checkpoint (with its ``step``)."""
    return json.loads((Path(checkpoint) / _META).read_text())


def load_states(checkpoint: str | os.PathLike) -> dict[str, Any]:
    """The ``states`` dict saved with the checkpoint (optimizer / scheduler states, counters)."""
    import torch

    return torch.load(Path(checkpoint) / _STATES, weights_only=False)
