"""``python -m benchmarks.evaluate --policy RUN`` reproduces the run's own held-out evaluation (issue 16, item 1).

A real co-training run (tiny model, one step, small TextWorld games) whose held-out evaluation samples at a
temperature, with a batch smaller than the task list and agent settings that are not the defaults; then the
evaluator, given the run directory alone, must play the same tasks with the same seeds and sampling stream:
the same outcome for every episode, in order.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from benchmarks.evaluate.cli import build_parser, main  # noqa: E402
from rla_train.config import ConfigError, load_config, parse_options  # noqa: E402
from tests.rla_envs.alfworld.conftest import alfworld_cache  # noqa: E402, F401  (a private RLA_CACHE for the session)

RUN = ["env.id=rla/TextWorld-v0", "env.options={levels: [custom-1], games_per_level: 2}", "env.train_options={}",
       "env.eval_options={}", "env.max_steps=8", "env.num_envs=3", "env.workers=0", "train.mode=outcome_only",
       "reward_model.model=null", "rollout.group_size=2", "rollout.tasks_per_step=2", "train.steps=1",
       "train.warm_start_sft_steps=0", "train.eval_episodes=8", "train.probe_episodes=0",
       "reward_model.warm_start_steps=0", "reward_model.probe_episodes=0", "output.checkpoint_every=1",
       "policy.learning_rate=0.01", "train.seed=3",
       # not the evaluator's defaults: each must come from the run's config.yaml
       "policy.temperature=50", "train.eval_temperature=50",  # near-uniform choices at random init: mixed outcomes
       "policy.history_window=2", "policy.prompt_style=chat", "policy.show_admissible=last"]


def _transcript(episode: dict) -> dict:
    """What identifies how an episode was played: its task, reset seed, actions and the policy's log-probabilities."""
    return {"task_id": episode["task_id"], "seed": episode["seed"], "actions": [str(a) for a in episode["actions"]],
            "logprobs": [sum(step["logprobs"]) for step in episode["steps"]]}


@pytest.fixture(scope="module")
def run(alfworld_cache, tmp_path_factory):  # noqa: F811
    """A finished run directory, its summary, and the transcripts of its held-out evaluations (before, after)."""
    import torch

    from rla_train.cotrainer import loop

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on 2 shared cores, more threads make the tiny model far slower
    played, play = [], loop.play_heldout

    def recording(engine, tasks, **kwargs):  # the trainer's own held-out episodes, as it plays them
        episodes = play(engine, tasks, **kwargs)
        played.append([_transcript(e.to_dict()) for e in episodes])
        return episodes

    patch = pytest.MonkeyPatch()
    patch.setattr(loop, "play_heldout", recording)  # the name the loop calls
    run_dir = tmp_path_factory.mktemp("run")
    try:
        summary = loop.train(load_config(None, [*RUN, f"output.dir={run_dir}"]), progress=False)
    finally:
        patch.undo()
        torch.set_num_threads(threads)
    assert len(played) == 2  # before and after co-training
    return run_dir, summary, {"before": played[0], "after": played[1]}


def _evaluate(policy, out) -> tuple[dict, list[dict]]:
    """``python -m benchmarks.evaluate --policy POLICY`` and nothing else: its result and episode transcripts."""
    assert main(["--policy", str(policy), "--out", str(out), "--no-progress"]) == 0
    [result] = json.loads((out / "results.json").read_text())
    [path] = out.glob("episodes-*.jsonl")
    return result, [_transcript(json.loads(line)) for line in path.read_text().splitlines()]


def _same_transcripts(evaluated: list[dict], trained: list[dict]) -> None:
    assert [{k: e[k] for k in ("task_id", "seed", "actions")} for e in evaluated] == \
        [{k: e[k] for k in ("task_id", "seed", "actions")} for e in trained]
    for mine, theirs in zip(evaluated, trained):  # the same prompts: the same log-probabilities, up to float noise
        assert mine["logprobs"] == pytest.approx(theirs["logprobs"], rel=1e-4, abs=1e-4)


def test_a_run_directory_alone_reproduces_the_runs_final_heldout_evaluation(run, tmp_path):
    run_dir, summary, played = run
    result, transcripts = _evaluate(run_dir, tmp_path)
    after = summary["after"]
    assert (result["split"], result["episodes"], result["seed"]) == ("default", 8, 3)
    assert (result["temperature"], result["num_envs"], result["action_mode"]) == (50, 3, "choice")
    assert result["outcomes"] == after["outcomes"] and result["won"] == after["won"]
    assert result["mean_steps"] == after["mean_steps"]
    tasks = json.loads((tmp_path / "tasks-default.json").read_text())
    assert tasks["env_options"] == {"levels": ["custom-1"], "games_per_level": 2, "max_steps": 8}
    _same_transcripts(transcripts, played["after"])


def test_a_checkpoint_reproduces_the_evaluation_made_at_its_step(run, tmp_path):
    run_dir, summary, played = run
    result, transcripts = _evaluate(run_dir / "checkpoints" / "step-000000", tmp_path)
    assert result["outcomes"] == summary["before"]["outcomes"] and result["won"] == summary["before"]["won"]
    _same_transcripts(transcripts, played["before"])


def test_options_on_the_command_line_win_over_the_runs(run, tmp_path):
    run_dir, _, _ = run
    assert main(["--policy", str(run_dir), "--out", str(tmp_path), "--no-progress", "--episodes", "2",
                 "--temperature", "0", "--num-envs", "1", "--env-option", "max_steps=3"]) == 0
    [result] = json.loads((tmp_path / "results.json").read_text())
    assert (result["episodes"], result["temperature"], result["num_envs"]) == (2, 0, 1)
    assert result["mean_steps"] <= 3


def test_env_options_are_read_as_yaml_like_the_trainers_set():
    assert parse_options(["task_types=[pick_and_place_simple, clean]", "max_steps=30", "split=valid_seen",
                          "prompt=null"], "--env-option") == {
        "task_types": ["pick_and_place_simple", "clean"], "max_steps": 30, "split": "valid_seen", "prompt": None}
    with pytest.raises(ConfigError, match="--env-option must look like key=value"):
        parse_options(["task_types"], "--env-option")
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_options(["task_types=[a"], "--env-option")


def test_help_says_each_default_once():
    text = build_parser().format_help()
    entries = text.split("\n  --")[1:]
    assert entries and all(entry.count("default") <= 1 for entry in entries), text
    assert "the run's train.eval_temperature" in text
