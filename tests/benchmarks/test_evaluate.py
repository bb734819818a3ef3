"""``python -m benchmarks.evaluate`` end to end on a handful of generated ALFWorld games.

The sanity rows (the searching expert wins, random admissible commands almost never do), a tiny random-init
checkpoint acting by choice and judged by a tiny reward model, same seed -> same JSON, resume after a crash
mid-evaluation, and the Table-1 files.
"""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")

from benchmarks.evaluate.checkpoints import resolve_policy  # noqa: E402
from benchmarks.evaluate.cli import main  # noqa: E402
from benchmarks.evaluate.scores import pass_at_k  # noqa: E402
from rla_train.rollout.records import read_records  # noqa: E402

GAMES = ["--env-option", "n_per_type=1"]  # 6 games per split, one per task type


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on 2 shared cores, more threads make the tiny model far slower
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    """A private RLA_CACHE holding one generated game per task type of valid_seen and valid_unseen."""
    from rla_envs.alfworld.generated import generated_tasks

    root = tmp_path_factory.mktemp("rla-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("RLA_CACHE", str(root))
    for split in ("valid_seen", "valid_unseen"):
        generated_tasks(split, n_per_type=1, seed=0, workers=2, progress=False)
    yield root
    patch.undo()


@pytest.fixture(scope="module")
def reference_out(games, tmp_path_factory):
    """expert and random on both splits (6 games each), as one command."""
    out = tmp_path_factory.mktemp("reference")
    assert main(["--policy", "expert", "--policy", "random", "--split", "valid_seen", "--split", "valid_unseen",
                 "--episodes", "6", "--out", str(out), "--no-progress", *GAMES]) == 0
    return out


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A run directory as rla_train.cotrainer.loop lays it out: config.yaml + two checkpoints of a tiny random-init model."""
    from rla_train.backends.tiny import build_tiny_model
    from rla_train.config import TrainConfig

    run = tmp_path_factory.mktemp("run")
    model = build_tiny_model(run / "model")
    for step in (1, 3):
        checkpoint = run / "checkpoints" / f"step-{step:06d}"
        checkpoint.mkdir(parents=True)
        shutil.copytree(model, checkpoint / "policy")
        shutil.copytree(model, checkpoint / "reward_model")
        (checkpoint / "meta.json").write_text(json.dumps({"step": step}))
    config = TrainConfig.from_dict({"policy": {"action_mode": "choice", "history_window": 2}})
    config.save(run / "config.yaml")
    return run


def results(out):
    return {(r["policy"], r["split"]): r for r in json.loads((out / "results.json").read_text())}


def test_expert_wins_and_random_does_not(reference_out):
    found = results(reference_out)
    for split in ("valid_seen", "valid_unseen"):
        expert, random = found["expert", split], found["random", split]
        assert expert["episodes"] == random["episodes"] == 6
        assert expert["success_rate"] >= 0.95, expert
        assert random["success_rate"] <= 1 / 6, random
        assert len(expert["by_task_type"]) == 6  # one game per task type, each its own row
        assert expert["ci_low"] < expert["success_rate"] <= expert["ci_high"]
        assert 0 < expert["mean_steps"] < random["mean_steps"]
    saved = json.loads((reference_out / "tasks-valid_unseen.json").read_text())
    assert saved["seed"] == 0 and len(saved["task_ids"]) == 6
    played = [r["task_id"] for r in read_records(reference_out / "episodes-random-valid_unseen.jsonl")]
    assert played == saved["task_ids"]  # the written task list is the one played, in order


def test_table_has_rlanything_layout(reference_out):
    markdown = (reference_out / "table.md").read_text()
    header = markdown.splitlines()[0]
    assert "in-domain (valid_seen) success" in header and "OOD (valid_unseen) success" in header
    assert "| expert (reference) | 100.0% [" in markdown and "| random (reference) |" in markdown
    table = json.loads((reference_out / "table.json").read_text())
    assert [row["policy"] for row in table["rows"]] == ["expert", "random"]
    assert [c["key"] for c in table["columns"]] == ["success/valid_seen", "success/valid_unseen"]
    assert (reference_out / "table.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_dir_resolves_to_latest_checkpoint_and_its_settings(tiny_run):
    source = resolve_policy(tiny_run)
    assert source.checkpoint.name == "step-000003" and source.model.endswith("step-000003/policy")
    assert source.action_mode == "choice" and source.agent_options["history_window"] == 2
    assert source.name.endswith("step-000003")
    with pytest.raises(FileNotFoundError, match="neither a model directory"):
        resolve_policy(tiny_run / "checkpoints")


def test_tiny_checkpoint_with_reward_model_is_reproducible(games, tiny_run, tmp_path):
    command = ["--policy", str(tiny_run), "--action-mode", "choice", "--reward-model", str(tiny_run),
               "--judge-mode", "choice", "--split", "valid_unseen", "--episodes", "3", "--env-option", "max_steps=4",
               "--no-progress", *GAMES]
    assert main([*command, "--out", str(tmp_path / "a")]) == 0
    assert main([*command, "--out", str(tmp_path / "b")]) == 0
    first = (tmp_path / "a" / "results.json").read_text()
    assert first == (tmp_path / "b" / "results.json").read_text()  # same seed -> identical numbers
    [result] = json.loads(first)
    assert result["action_mode"] == "choice" and result["episodes"] == 3
    assert result["ci_low"] <= result["success_rate"] <= result["ci_high"] and result["ci_high"] > 0
    assert 0 <= result["rm_process_accuracy"] <= 1 and result["rm_labelled_steps"] > 0
    assert 0 <= result["rm_outcome_accuracy"] <= 1
    table = json.loads((tmp_path / "a" / "table.json").read_text())
    assert [c["key"] for c in table["columns"]] == ["success/valid_unseen", "rm_process/valid_unseen",
                                                    "rm_outcome/valid_unseen"]


def test_resume_after_a_crash_plays_only_the_rest(reference_out, tmp_path, monkeypatch):
    from rla_train.rollout.engine import RolloutEngine

    run, played = RolloutEngine.run, []

    def crash_on_second_batch(self, tasks, **kwargs):
        if played:
            raise KeyboardInterrupt("killed mid-evaluation")
        played.append(len(tasks))
        return run(self, tasks, **kwargs)

    command = ["--policy", "random", "--split", "valid_unseen", "--episodes", "6", "--num-envs", "2",
               "--out", str(tmp_path), "--no-progress", *GAMES]
    monkeypatch.setattr(RolloutEngine, "run", crash_on_second_batch)
    with pytest.raises(KeyboardInterrupt):
        main(command)
    path = tmp_path / "episodes-random-valid_unseen.jsonl"
    assert len(read_records(path)) == 2  # the first batch was written before the crash
    with open(path, "a") as handle:
        handle.write('{"task_id": "torn')  # and a line cut by the crash
    played.clear()

    def count(self, tasks, **kwargs):
        played.append(len(tasks))
        return run(self, tasks, **kwargs)

    monkeypatch.setattr(RolloutEngine, "run", count)
    assert main(command) == 0
    assert played == [2, 2]  # only the 4 missing tasks, in engine batches of 2
    resumed = results(tmp_path)["random", "valid_unseen"]
    fresh = results(reference_out)["random", "valid_unseen"]
    assert {k: resumed[k] for k in ("won", "mean_steps", "by_task_type")} == \
        {k: fresh[k] for k in ("won", "mean_steps", "by_task_type")}  # as if never interrupted


def test_other_task_list_in_same_out_is_refused(reference_out, capsys):
    before = (reference_out / "results.json").read_text()
    assert main(["--policy", "random", "--split", "valid_unseen", "--episodes", "5", "--out", str(reference_out),
                 "--no-progress", *GAMES]) == 2
    assert "holds the tasks of another evaluation" in capsys.readouterr().err
    assert (reference_out / "results.json").read_text() == before


def test_episodes_of_another_checkpoint_with_the_same_name_are_refused_not_resumed(games, tiny_run, tmp_path, capsys):
    # a run made again into the same directory: the same policy name, other weights
    command = ["--policy", str(tiny_run), "--action-mode", "choice", "--split", "valid_unseen", "--episodes", "2",
               "--env-option", "max_steps=2", "--out", str(tmp_path), "--no-progress", *GAMES]
    assert main(command) == 0
    played = sorted(tmp_path.glob("episodes-*.jsonl"))
    assert len(played) == 1 and played[0].with_suffix(".identity.json").is_file()
    before = (tmp_path / "results.json").read_text()
    assert main(command) == 0 and (tmp_path / "results.json").read_text() == before  # the same policy: resumed
    other = tmp_path / "other-run"
    shutil.copytree(tiny_run, other)
    weights = next((other / "checkpoints" / "step-000003" / "policy").glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-1] + bytes([weights.read_bytes()[-1] ^ 1]))  # one bit of the weights
    same_name = tmp_path / "renamed"
    shutil.move(str(tiny_run), str(same_name))  # keep the fixture's run ...
    try:
        shutil.move(str(other), str(tiny_run))  # ... and put the other one where it was: the same --policy path
        capsys.readouterr()
        assert main(command) == 2
        assert "holds episodes of another policy or settings (policy differ" in capsys.readouterr().err
        assert (tmp_path / "results.json").read_text() == before
    finally:
        shutil.rmtree(tiny_run)
        shutil.move(str(same_name), str(tiny_run))


def test_pass_at_k_matches_hand_computed_values():
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)  # c/n
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)   # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 1, 4) == 1.0
