"""The co-trainer end to end with tiny models on small TextWorld games: every mode trains, and a run killed
with SIGKILL mid-step resumes to exactly the numbers of an uninterrupted run.

TextWorld's ``custom-1`` games (2 rooms, a 2-action quest) are won by random admissible commands 10-40% of
the time in 8 steps, so GRPO groups have mixed outcomes and every mode has something to learn from.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

from rla_train.config import MODES, load_config
from rla_train.cotrainer.checkpoint import load_states
from rla_train.cpu_kernels import cpu_model
from tests.rla_envs.alfworld.conftest import alfworld_cache  # noqa: F401  (a private RLA_CACHE for the session)

SMALL = ["env.id=rla/TextWorld-v0", "env.options={levels: [custom-1], games_per_level: 2}", "env.train_options={}",
         "env.eval_options={}", "env.max_steps=8", "env.num_envs=8", "env.workers=0", "rollout.group_size=4",
         "rollout.tasks_per_step=2", "train.steps=2", "train.warm_start_sft_steps=0", "train.eval_episodes=2",
         "train.eval_every=0", "train.probe_episodes=2", "reward_model.warm_start_steps=0",
         "reward_model.probe_episodes=0", "output.checkpoint_every=1", "output.keep_last=null", "pool.adapt_every=8",
         "pool.measure_rollouts=2", "reward_model.task_filter_low=0.0", "reward_model.task_filter_high=1.0",
         "policy.learning_rate=0.01", "reward_model.learning_rate=0.01", "policy.history_window=2",
         "policy.temperature=50", "reward_model.temperature=20",  # near-uniform choices at random init
         "policy.prompt_style=chat", "policy.show_admissible=last"]
VOLATILE = ("time", "episodes_per_second", "step_seconds")


def stable(row: dict) -> dict:
    """A metrics.jsonl row without its wall times (which differ between equal runs)."""
    from rla_train.cotrainer.loop import TIMING_PREFIX

    return {k: v for k, v in row.items() if k not in VOLATILE and not k.startswith(TIMING_PREFIX)}


def weights(path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path).state_dict()


def changed(a, b) -> bool:
    return any(not torch.equal(a[k], b[k]) for k in a)


def metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


# The full method runs in the default suite; the other modes (1-2.5 min each under load) are marked slow and .ci/run
# runs them.
@pytest.mark.parametrize("mode", [mode if mode == "policy+reward+env" else pytest.param(mode, marks=pytest.mark.slow)
                                  for mode in MODES])
def test_every_mode_trains_what_it_should(mode, alfworld_cache, tmp_path, capsys):
    from rla_train.cotrainer.loop import train
    from rla_train.run import where_the_run_is

    extra = [] if MODES[mode].reward_model else ["reward_model.model=null"]
    config = load_config(None, [*SMALL, f"train.mode={mode}", f"output.dir={tmp_path}", *extra])
    shown = mode == "policy+reward+env"  # one mode with its output on: a line per phase
    summary = train(config, progress=shown)
    phases = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[rla] ")]
    if shown:
        assert [p.split(":")[0] for p in phases] == [
            f"[rla] run {tmp_path} (fresh, mode policy+reward+env)", "[rla] evaluating before co-training",
            "[rla] co-training steps 1-2", "[rla] evaluating after co-training"]
    else:
        assert phases == []
    # TRL's scratch output directories are not left behind empty
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "checkpoints", "config.yaml", "learning_curves.png", "metrics.jsonl", "summary.json"]
    assert where_the_run_is(str(tmp_path)).splitlines() == [
        f"wrote {tmp_path}: config.yaml, summary.json, metrics.jsonl, learning_curves.png, checkpoints/ (step-000000, "
        "step-000001, step-000002)", f"evaluate it: python -m benchmarks.evaluate --policy {tmp_path}"]
    rows = metrics(tmp_path)
    assert summary["steps"] == 2 and [r["step"] for r in rows] == [1, 2]
    assert summary["machine"] == cpu_model() != "unknown"  # where its seeded figures were computed
    assert all(math.isfinite(r["policy_loss"]) for r in rows) and sum(r["policy_samples"] for r in rows) > 0
    first, last = tmp_path / "checkpoints" / "step-000000", tmp_path / "checkpoints" / "step-000002"
    assert changed(weights(first / "policy"), weights(last / "policy"))
    if MODES[mode].train_reward_model:
        assert changed(weights(first / "reward_model"), weights(last / "reward_model"))
        assert all(math.isfinite(r["rm_loss"]) for r in rows) and sum(r["rm_samples"] for r in rows) > 0
    elif MODES[mode].reward_model:  # a judge that votes but is not trained is kept as it is, so a resume has it
        assert not changed(weights(first / "reward_model"), weights(last / "reward_model")) and "rm_loss" not in rows[0]
    else:
        assert not (last / "reward_model").exists() and "rm_loss" not in rows[0]
    if MODES[mode].adapt_env:  # how far the env arm reached: episodes on rewritten tasks, per step and in all
        assert all(0 <= r["pool_rewritten_episode_fraction"] <= 1 for r in rows)
        pool = json.loads((tmp_path / "summary.json").read_text())["pool"]
        assert pool["training_episodes"] == 2 * 2 * 4 and 0 <= pool["episodes_on_rewrites"] <= 16
    if MODES[mode].advantage == "gigpo":  # a group's rollouts all start from the game's one first state
        assert all(r["gigpo_shared_step_fraction"] > 0 and "policy_advantage_changed_fraction" in r for r in rows)
    # every step's profile: where its wall time went, phase by phase (disjoint parts of step_seconds)
    phases = {"rollout_generate", "rollout_env", "rollout_other", "policy_update", "step_metrics"}
    phases |= ({"judge"} if MODES[mode].reward_model else set()) | ({"rm_update"} if MODES[mode].train_reward_model
                                                                    else set())
    phases |= {"pool"} if MODES[mode].adapt_env else set()
    for r in rows:
        timed = {k.removeprefix("seconds_"): v for k, v in r.items() if k.startswith("seconds_")}
        assert set(timed) >= phases and all(v >= 0 for v in timed.values()), timed
        assert timed["rollout_generate"] > 0 and timed["rollout_env"] > 0 and timed["policy_update"] > 0
        assert sum(timed.values()) <= r["step_seconds"] * (1 + 1e-9)  # float rounding only: the parts are disjoint
    assert (tmp_path / "learning_curves.png").stat().st_size > 10_000
    assert {"before", "after"} <= set(json.loads((tmp_path / "summary.json").read_text()))


def _run(args, cache, **popen):
    env = {**os.environ, "RLA_CACHE": str(cache), "PYTHONHASHSEED": "0"}
    return subprocess.Popen([sys.executable, "-m", "rla_train.run", *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, **popen)


@pytest.mark.slow  # three training processes (~2.5 min alone, ~6 min under load); .ci/run runs it
@pytest.mark.parametrize("adapters", [[], ["policy.use_peft=true", "reward_model.use_peft=true"]],
                         ids=["full-weights", "lora"])
def test_sigkill_mid_step_then_resume_matches_an_uninterrupted_run(adapters, alfworld_cache, tmp_path):
    common = [arg for pair in (("--set", s) for s in [*SMALL, "train.steps=3", *adapters]) for arg in pair]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    assert _run([*common, "--set", f"output.dir={straight}"], alfworld_cache).wait(timeout=600) == 0
    process = _run([*common, "--set", f"output.dir={killed}"], alfworld_cache)
    try:
        deadline = time.time() + 600
        while not (killed / "checkpoints" / "step-000001").exists():  # wait for step 1's checkpoint
            assert process.poll() is None and time.time() < deadline, process.stderr.read()
            time.sleep(0.05)
        time.sleep(0.5)  # now in the middle of step 2 (the resumed run then takes two steps)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert not (killed / "checkpoints" / "step-000002").exists()
    resumed = _run(["--resume", str(killed)], alfworld_cache)
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    assert [stable(row) for row in metrics(killed)] == [stable(row) for row in metrics(straight)]
    final = "checkpoints/step-000003"
    for role in ("policy", "reward_model"):
        a, b = weights(straight / final / role), weights(killed / final / role)
        assert all(torch.equal(a[k], b[k]) for k in a), role
    assert json.loads((straight / final / "pool.json").read_text()) == json.loads((killed / final / "pool.json").read_text())
    # the pool's validation rollouts' own sampling stream goes on where it was, not from its start
    turns = [load_states(run / final)["feeder"]["validation_turns"] for run in (straight, killed)]
    assert turns[0] == turns[1] > 0


WARM_START = ["env.options={task_types: [pick_and_place_simple]}", "env.train_options={split: train, n_per_type: 2}",
              "env.eval_options={split: valid_unseen, n_per_type: 1}", "env.max_steps=10", "env.num_envs=2",
              "env.workers=0", "train.mode=outcome_only", "reward_model.model=null", "train.steps=0",
              "train.warm_start_demos=2", "train.warm_start_sft_steps=8", "train.warm_start_listwise_steps=8",
              "train.eval_episodes=1", "train.probe_episodes=0"]


@pytest.mark.slow  # two warm starts in subprocesses (~1.5 min under load); .ci/run runs it
@pytest.mark.skipif(not shutil.which("taskset") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs taskset and two cores to pin one run to")
def test_the_warm_start_gives_the_same_weights_on_one_core_as_on_two(alfworld_cache, tmp_path):
    """Bounded by steps, not seconds: a run pinned to one core, beside one that is not, starts from the same weights."""
    common = [arg for pair in (("--set", s) for s in WARM_START) for arg in pair]
    runs = {"pinned": tmp_path / "pinned", "free": tmp_path / "free"}
    env = {**os.environ, "RLA_CACHE": str(alfworld_cache), "PYTHONHASHSEED": "0"}
    env.pop("RLA_TORCH_THREADS", None)
    subprocess.run([sys.executable, "-m", "rla_train.run", *common, "--set", f"output.dir={tmp_path / 'games'}"],
                   env=env, check=True, capture_output=True, timeout=600)  # generate the games once, unloaded
    processes = [subprocess.Popen(["taskset", "-c", "0"] * (name == "pinned") +
                                  [sys.executable, "-m", "rla_train.run", *common, "--set", f"output.dir={path}"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for name, path in runs.items()]  # both at once: each slows the other down
    for process in processes:
        assert process.wait(timeout=600) == 0, process.stderr.read()
    start = "checkpoints/step-000000/policy"
    pinned, free = weights(runs["pinned"] / start), weights(runs["free"] / start)
    assert all(torch.equal(pinned[k], free[k]) for k in pinned)
    assert changed(weights(tmp_path / "games" / start), pinned) is False  # the same again, run alone
    summary = json.loads((runs["pinned"] / "summary.json").read_text())
    assert summary["warm_start"]["warm_start_listwise_steps"] == 8  # every step ran: none cut short by a clock


def test_a_run_resumed_right_after_its_warm_starts_takes_the_uninterrupted_run_s_first_step(alfworld_cache, tmp_path):
    """The warm starts leave no gradient behind for the first co-training update to add to its own: a run stopped
    after its step-0 checkpoint (both warm starts in it) and resumed takes the same first step as one never stopped."""
    from rla_train.cotrainer.loop import train

    base = [*[s for s in WARM_START if not s.startswith(("train.mode=", "reward_model.model=", "train.steps="))],
            "train.mode=policy+reward", "reward_model.warm_start_episodes=2", "reward_model.warm_start_steps=4",
            "reward_model.probe_episodes=0", "reward_model.task_filter_low=0.0", "reward_model.task_filter_high=1.0",
            "rollout.tasks_per_step=2", "rollout.group_size=4", "output.checkpoint_every=1", "output.keep_last=null",
            "policy.temperature=50", "reward_model.temperature=20"]  # near-uniform choices: mixed outcomes to learn from
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    train(load_config(None, [*base, "train.steps=1", f"output.dir={straight}"]), progress=False)
    train(load_config(None, [*base, "train.steps=0", f"output.dir={stopped}"]), progress=False)
    train(load_config(None, [*base, "train.steps=1", f"train.resume_from={stopped}"]), progress=False)
    [row] = metrics(straight)
    assert row["rm_samples"] > 0  # the judge took a step: its gradient is what a leftover one would add to
    assert [stable(row) for row in metrics(stopped)] == [stable(row)]
    for role in ("policy", "reward_model"):
        a, b = (weights(run / "checkpoints" / "step-000001" / role) for run in (straight, stopped))
        assert not changed(a, b), role
