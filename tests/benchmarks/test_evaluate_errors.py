"""``python -m benchmarks.evaluate``: bad input is one line and exit status 2 before any task list or model is
loaded, and ``--policy RUN`` skips a corrupt checkpoint for the newest intact one (issue 15, items 5 and 6)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from benchmarks.evaluate.checkpoints import resolve_policy, resolve_reward_model  # noqa: E402
from benchmarks.evaluate.cli import main  # noqa: E402
from rla_train.cotrainer.checkpoint import CheckpointWarning, CorruptCheckpoint, save_checkpoint  # noqa: E402


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run with checkpoints 1 and 2 of a tiny model (policy and reward model), as rla_train.cotrainer.loop saves them."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rla_train.backends.tiny import build_tiny_model

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("eval-errors")
    path = build_tiny_model(root / "model")
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    run = root / "run"
    for step in (1, 2):
        save_checkpoint(run, step, models={"policy": (model, tokenizer), "reward_model": (model, tokenizer)})
    return run


def _error(capsys, argv) -> str:
    """The command's one-line error (exit status 2 asserted)."""
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def test_out_that_is_a_file_is_refused_at_once(tmp_path, capsys):
    (tmp_path / "out").write_text("not a directory")
    assert "--out" in _error(capsys, ["--policy", "expert", "--out", str(tmp_path / "out")])


def test_a_missing_reward_model_is_refused_before_any_evaluation(tmp_path, capsys):
    err = _error(capsys, ["--policy", "expert", "--reward-model", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert "--reward-model" in err and "no such path" in err
    assert not (tmp_path / "o").exists()  # no task list was drawn


def test_an_unknown_env_option_names_the_closest(tmp_path, capsys):
    err = _error(capsys, ["--policy", "expert", "--env-option", "n_per_typ=1", "--out", str(tmp_path)])
    assert "--env-option" in err and "Did you mean 'n_per_type'?" in err


def test_an_unknown_code_split_names_the_flag_and_the_sets(tmp_path, capsys):
    err = _error(capsys, ["--policy", "expert", "--env", "rla/Code-v0", "--split", "bogus", "--out", str(tmp_path)])
    assert "--split bogus" in err and "bundled" in err


def test_a_run_with_a_corrupt_latest_checkpoint_falls_back_to_the_intact_one(run_dir):
    newest = run_dir / "checkpoints" / "step-000002"
    weights = newest / "policy" / "model.safetensors"
    data = weights.read_bytes()
    try:
        weights.write_bytes(data[:100])
        with pytest.warns(CheckpointWarning, match="step-000002.*model.safetensors has 100 bytes"):
            source = resolve_policy(run_dir)
        assert source.checkpoint == run_dir.resolve() / "checkpoints" / "step-000001"
        with pytest.raises(CorruptCheckpoint, match="model.safetensors has 100 bytes"):
            resolve_policy(newest)  # named on purpose: an error, not a fallback
        with pytest.raises(CorruptCheckpoint):
            resolve_reward_model(newest)
    finally:
        weights.write_bytes(data)
    assert resolve_policy(run_dir).checkpoint.name == "step-000002"


def test_a_run_with_no_intact_checkpoint_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    for step in (1, 2):
        save_checkpoint(run, step, states={"step": step})
        (run / "checkpoints" / f"step-{step:06d}" / "rng.pt").unlink()
    err = _error(capsys, ["--policy", str(run), "--out", str(tmp_path / "out")])
    assert "no intact checkpoint" in err and "rng.pt is missing" in err
