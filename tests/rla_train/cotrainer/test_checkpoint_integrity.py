"""Checkpoints verified on load: a truncated, changed or deleted file is found, named, and skipped for an older one."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
import torch

from rla_train.cotrainer.checkpoint import (CheckpointWarning, CorruptCheckpoint, latest_checkpoint, load_meta, save_checkpoint,
                                            verify_checkpoint)


@pytest.fixture
def run_with_two_checkpoints(tiny_model_path, tmp_path):
    """A run directory with checkpoints 1 and 2, each a tiny model, optimizer-like states and the RNG states."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    for step in (1, 2):
        save_checkpoint(tmp_path, step, models={"policy": (model, tokenizer)},
                        states={"optimizer": {"exp_avg": torch.full((1000,), float(step))}})
    return tmp_path


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _flip_last_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


CORRUPTIONS = {
    "policy/model.safetensors": ("policy/model.safetensors has", _truncate),
    "states.pt": ("states.pt has", _truncate),
    "rng.pt": ("rng.pt has", _truncate),
    "policy/config.json": ("policy/config.json differs", _flip_last_byte),  # same size, other content
    "policy": ("is missing", lambda path: shutil.rmtree(path)),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_a_corrupt_latest_checkpoint_is_skipped_with_a_warning_naming_it(run_with_two_checkpoints, name):
    run = run_with_two_checkpoints
    expected, corrupt = CORRUPTIONS[name]
    newest = run / "checkpoints" / "step-000002"
    corrupt(newest / name)
    with pytest.raises(CorruptCheckpoint, match=expected):
        verify_checkpoint(newest)
    with pytest.warns(CheckpointWarning, match=f"step-000002.*{expected}.*using step-000001"):
        assert latest_checkpoint(run) == run / "checkpoints" / "step-000001"
    assert latest_checkpoint(run, verify=False) == newest  # the unverified listing still sees it


def test_intact_checkpoints_verify_silently_and_meta_hides_the_manifest(run_with_two_checkpoints):
    run = run_with_two_checkpoints
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert latest_checkpoint(run) == run / "checkpoints" / "step-000002"
    recorded = json.loads((run / "checkpoints" / "step-000002" / "meta.json").read_text())["files"]
    assert {"states.pt", "rng.pt", "policy/config.json", "policy/model.safetensors"} <= set(recorded)
    assert load_meta(run / "checkpoints" / "step-000002") == {"step": 2}
    with pytest.raises(ValueError, match="reserved"):
        save_checkpoint(run, 3, meta={"files": []})


def test_no_intact_checkpoint_is_one_line_listing_each_fault(run_with_two_checkpoints):
    run = run_with_two_checkpoints
    _truncate(run / "checkpoints" / "step-000002" / "states.pt")
    (run / "checkpoints" / "step-000001" / "meta.json").write_text('{"step": 1, "fil')  # torn by hand
    with pytest.raises(CorruptCheckpoint) as caught:
        latest_checkpoint(run)
    message = str(caught.value)
    assert "\n" not in message and "no intact checkpoint" in message
    assert "step-000002: states.pt has" in message and "step-000001: meta.json is unreadable" in message


def test_checkpoints_from_before_the_manifest_are_taken_as_they_are(tmp_path):
    old = tmp_path / "checkpoints" / "step-000004"
    old.mkdir(parents=True)
    (old / "meta.json").write_text(json.dumps({"step": 4}))
    verify_checkpoint(old)
    assert latest_checkpoint(tmp_path) == old
