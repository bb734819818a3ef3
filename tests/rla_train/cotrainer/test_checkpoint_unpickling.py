"""A checkpoint's states.pt and rng.pt are read as tensors and plain data only: a hostile pickle never runs."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import torch

from rla_train.cotrainer.checkpoint import (CorruptCheckpoint, latest_checkpoint, load_states, restore_rng,
                                            save_checkpoint)
from rla_train.cotrainer.checkpoint import _manifest as manifest


class _Hostile:
    """Unpickling this creates the marker file (what a planted checkpoint would do with a shell command)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _plant(checkpoint, name, payload):
    """Replace ``checkpoint/name`` and rewrite the SHA-256 manifest as its writer would (it writes meta.json too)."""
    torch.save(payload, checkpoint / name)
    meta = json.loads((checkpoint / "meta.json").read_text())
    meta["files"] = manifest(checkpoint)
    (checkpoint / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("name", ["states.pt", "rng.pt"])
def test_a_hostile_pickle_in_a_checkpoint_is_refused_and_never_run(tmp_path, name):
    checkpoint = save_checkpoint(tmp_path / "run", 1, states={"step": 1})
    marker = tmp_path / "unpickled"
    _plant(checkpoint, name, {"step": 1, "python": _Hostile(marker)})
    assert latest_checkpoint(tmp_path / "run") == checkpoint  # the manifest matches: it proves nothing
    load = load_states if name == "states.pt" else restore_rng
    with pytest.raises(CorruptCheckpoint, match=f"{name} holds objects other than tensors .* not unpickled"):
        load(checkpoint)
    assert not marker.exists()


def test_numpy_values_and_rng_states_come_back_exactly_as_plain_data(tmp_path):
    random.seed(3), np.random.seed(3), torch.manual_seed(3)
    np.random.randn()  # a cached Gaussian in NumPy's legacy state
    checkpoint = save_checkpoint(tmp_path, 2, states={"history": {"reward": np.float64(0.25), "n": np.int64(4),
                                                                   "curve": np.arange(3)},
                                                       "bit_generator": np.random.default_rng(5).bit_generator.state})
    expected = (random.random(), np.random.randn(), np.random.rand(), torch.rand(1).item())
    restore_rng(checkpoint)
    assert (random.random(), np.random.randn(), np.random.rand(), torch.rand(1).item()) == expected
    states = load_states(checkpoint)
    assert states["history"] == {"reward": 0.25, "n": 4, "curve": [0, 1, 2]}
    assert type(states["history"]["reward"]) is float and type(states["history"]["n"]) is int
    generator = np.random.default_rng(0)
    generator.bit_generator.state = states["bit_generator"]
    assert generator.random() == np.random.default_rng(5).random()
