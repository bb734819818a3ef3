"""Data-parallel co-training: the pure sharing maths, and two gloo ranks on CPU launched by ``torchrun``.

The two-rank test (marker ``distributed``, run by .ci/run) trains the tiny TextWorld setup of test_cotrain.py with
``torchrun --nproc_per_node 2`` through ``ddp_worker.py`` (``python -m rla_train.run`` that records, after each
step, each rank's weight hashes and the episodes it played), then kills a second run with SIGKILL after its first
checkpoint and resumes it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from rla_train.cotrainer.distributed import (ONE_PROCESS, Ranks, aligned_micro_batches, merge_rank_metrics,
                                             pooled_mean, rank_share)
from rla_train.cotrainer.policy_update import NOT_LOSS_INPUTS, ROW_SCALE
from rla_train.signals.samples import Sample
from tests.rla_envs.alfworld.conftest import alfworld_cache  # noqa: F401  (a private RLA_CACHE for the session)
from tests.rla_train.cotrainer.test_cotrain import SMALL, stable
from tests.rla_train.cotrainer.test_policy_update import trainer_factory  # noqa: F401  (a fixture)

WORKER = Path(__file__).with_name("ddp_worker.py")
STEPS, TASKS_PER_STEP, GROUP_SIZE = 2, 1, 4
SETTINGS = [*SMALL, f"train.steps={STEPS}", f"rollout.tasks_per_step={TASKS_PER_STEP}",
            f"rollout.group_size={GROUP_SIZE}", "env.num_envs=4", "train.probe_episodes=0", "train.eval_episodes=1"]


# ----------------------------------------------------------------------------------------------- pure
def test_rank_share_gives_each_rank_a_contiguous_equal_slice():
    tasks = ["a", "b", "c", "d", "e", "f"]
    assert [rank_share(tasks, r, 3) for r in range(3)] == [["a", "b"], ["c", "d"], ["e", "f"]]
    assert rank_share(tasks, 0, 1) == tasks
    with pytest.raises(ValueError, match="do not split evenly"):
        rank_share(tasks, 0, 4)
    with pytest.raises(ValueError, match="rank must be in"):
        rank_share(tasks, 2, 2)


def test_aligned_micro_batches_takes_the_busiest_rank():
    # rank 0: 5 samples in 2 steps (3 + 2 rows) -> ceil(3/2) = 2 micro-batches; rank 1: 9 in 2 steps (5 + 4) -> 3
    assert aligned_micro_batches([5, 9], mini_batches=2, micro_batch=2) == (2, 3)
    # rank 1 has one sample: one step of its own, but rank 0's 4 steps set the count
    assert aligned_micro_batches([8, 1], mini_batches=4, micro_batch=1) == (4, 2)
    # a rank with no sample runs padding only; no rank with one: nobody steps
    assert aligned_micro_batches([0, 3], mini_batches=1, micro_batch=4) == (1, 1)
    assert aligned_micro_batches([0, 0], mini_batches=4, micro_batch=4) == (0, 0)


def test_merge_rank_metrics_sums_counts_and_averages_the_rest():
    merged = merge_rank_metrics([{"policy_samples": 3.0, "policy_loss": 1.0, "only_here": 5.0},
                                 {"policy_samples": 4.0, "policy_loss": 2.0}])
    assert merged == {"policy_samples": 7.0, "policy_loss": 1.5, "only_here": 5.0}
    one = {"policy_samples": 3.0, "policy_loss": 0.1}
    assert merge_rank_metrics([one]) == one


def test_merge_rank_metrics_pools_the_policy_shift_by_the_states_each_rank_measured():
    # rank 0 measured 3 states (KL 0.3, 2 of them with a positive advantage), rank 1 one state (KL 0.1, negative)
    rank0 = {"policy_choice_kl": 0.3, "policy_choice_shift_states": 3.0, "policy_chosen_prob_change": 0.02,
             "policy_chosen_prob_change_pos_adv": 0.04, "policy_choice_shift_states_pos_adv": 2.0,
             "policy_chosen_prob_change_neg_adv": -0.02, "policy_choice_shift_states_neg_adv": 1.0}
    rank1 = {"policy_choice_kl": 0.1, "policy_choice_shift_states": 1.0, "policy_chosen_prob_change": -0.06,
             "policy_chosen_prob_change_neg_adv": -0.06, "policy_choice_shift_states_neg_adv": 1.0,
             "policy_choice_shift_states_pos_adv": 0.0}
    merged = merge_rank_metrics([rank0, rank1])
    assert merged["policy_choice_kl"] == pytest.approx((3 * 0.3 + 0.1) / 4)     # not (0.3 + 0.1) / 2
    assert merged["policy_chosen_prob_change"] == pytest.approx((3 * 0.02 - 0.06) / 4)
    assert merged["policy_chosen_prob_change_pos_adv"] == pytest.approx(0.04)   # rank 1 had none
    assert merged["policy_chosen_prob_change_neg_adv"] == pytest.approx(-0.04)
    assert (merged["policy_choice_shift_states"], merged["policy_choice_shift_states_pos_adv"],
            merged["policy_choice_shift_states_neg_adv"]) == (4.0, 2.0, 2.0)
    # a rank of padding only measured no state: it weighs nothing
    padding = {"policy_choice_kl": 0.0, "policy_choice_shift_states": 0.0}
    assert merge_rank_metrics([rank0, padding])["policy_choice_kl"] == pytest.approx(0.3)
    # a count missing on a rank that has the mean: the plain average, as before counts were logged
    assert merge_rank_metrics([{"policy_choice_kl": 0.3}, rank1])["policy_choice_kl"] == pytest.approx(0.2)


def test_pooled_mean_weighs_each_rank_by_its_items():
    # the trust region's KL: rank 0 measured 3 states at a mean 0.3, rank 1 only padding, rank 2 one state at 0.1
    assert pooled_mean([(0.3, 3), (0.0, 0), (0.1, 1)]) == pytest.approx(0.25)
    assert pooled_mean([(0.2, 5), (0.4, 5)]) == pytest.approx(0.3)  # equal counts: the plain mean
    assert pooled_mean([(0.0, 0), (0.0, 0)]) == 0.0
    assert ONE_PROCESS.pooled_mean(0.7, 4) == 0.7


def test_one_process_collectives_hand_back_what_they_get():
    assert (ONE_PROCESS.world_size, ONE_PROCESS.rank, ONE_PROCESS.is_main, ONE_PROCESS.distributed) == (1, 0, True, False)
    assert ONE_PROCESS.scatter(("t1", "t2")) == ["t1", "t2"]
    assert ONE_PROCESS.gather({"x": 1}) == [{"x": 1}]
    assert ONE_PROCESS.broadcast("same") == "same"
    ONE_PROCESS.barrier()
    assert Ranks(2, 1).is_main is False
    with pytest.raises(ValueError, match="rank must be in"):
        Ranks(2, 2)


# ----------------------------------------------------------------------------------------------- two ranks
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launch(record: Path, args: list[str], cache: Path) -> subprocess.Popen:
    """``torchrun`` with two gloo ranks on 127.0.0.1 running ddp_worker.py (one torch thread per rank)."""
    record.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "RLA_CACHE": str(cache), "PYTHONHASHSEED": "0", "GLOO_SOCKET_IFNAME": "lo",
           "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path.cwd())}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
               "--master_port", str(_free_port()), str(WORKER), str(record), *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _settings(*extra: str) -> list[str]:
    return [arg for setting in (*SETTINGS, *extra) for arg in ("--set", setting)]


def _records(record: Path, rank: int) -> list[dict]:
    return [json.loads(line) for line in (record / f"rank{rank}.jsonl").read_text().splitlines()]


def _metrics(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [stable(row) for row in rows]


def _kill_ranks(launcher: subprocess.Popen, record: Path) -> None:
    """SIGKILL both ranks (each in a session of its own) and the launcher, as a preempted job dies."""
    for pid_file in record.glob("pid*"):
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()


@pytest.mark.distributed  # three torchrun launches of two ranks (~3-5 min on 2 busy cores); .ci/run runs it
@pytest.mark.timeout(1500)
def test_two_gloo_ranks_train_in_step_and_resume_exactly(alfworld_cache, tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run = _launch(tmp_path / "straight-record", _settings(f"output.dir={straight}"), alfworld_cache)
    assert run.wait(timeout=600) == 0, run.stderr.read()[-3000:]
    ranks = [_records(tmp_path / "straight-record", r) for r in (0, 1)]

    # (a) after every step both ranks hold the same policy and reward model, and the step changed them
    assert len(ranks[0]) == len(ranks[1]) == STEPS
    for zero, one in zip(*ranks):
        assert (zero["policy"], zero["reward_model"]) == (one["policy"], one["reward_model"])
        assert zero["world_size"] == one["world_size"] == 2
        assert zero["before"] != [zero["policy"], zero["reward_model"]]  # the step trained them (else (a) says nothing)
    # each rank played its own share: tasks_per_step tasks x group_size episodes, and rank 1 not rank 0's tasks
    share = TASKS_PER_STEP * GROUP_SIZE
    assert [r["episodes"] for rank in ranks for r in rank] == [share] * (2 * STEPS)
    assert any(zero["tasks"] != one["tasks"] for zero, one in zip(*ranks))

    # (b) the pool saw every rank's outcomes; (d) twice what one rank plays per step
    pool = json.loads((straight / "checkpoints" / f"step-{STEPS:06d}" / "pool.json").read_text())
    assert pool["episodes"] == sum(r["episodes"] for rank in ranks for r in rank) == 2 * STEPS * share
    rows = _metrics(straight)
    assert [(row["step"], row["episodes"], row["ranks"]) for row in rows] == [(s, 2 * share, 2) for s in (1, 2)]
    assert json.loads((straight / "summary.json").read_text())["ranks"] == 2

    # (c) SIGKILL after the first checkpoint, then --resume: the same weights, metrics and pool as the straight run
    record = tmp_path / "killed-record"
    process = _launch(record, _settings(f"output.dir={killed}"), alfworld_cache)
    try:
        deadline = time.time() + 600
        while not (killed / "checkpoints" / "step-000001").exists():
            assert process.poll() is None and time.time() < deadline, process.stderr.read()[-3000:]
            time.sleep(0.05)
    finally:
        _kill_ranks(process, record)
    assert not (killed / "checkpoints" / f"step-{STEPS:06d}").exists()
    resumed_record = tmp_path / "resumed-record"
    resumed = _launch(resumed_record, ["--resume", str(killed)], alfworld_cache)
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()[-3000:]
    for rank in (0, 1):
        after = _records(resumed_record, rank)
        assert [(r["policy"], r["reward_model"], r["tasks"]) for r in after] == [
            (r["policy"], r["reward_model"], r["tasks"]) for r in ranks[rank][-len(after):]]
    assert _metrics(killed) == rows
    final = Path("checkpoints") / f"step-{STEPS:06d}"
    assert json.loads((killed / final / "pool.json").read_text()) == pool
    for role in ("policy", "reward_model"):
        assert (killed / final / role / "model.safetensors").read_bytes() == \
            (straight / final / role / "model.safetensors").read_bytes(), role


# ----------------------------------------------------------------------------------------------- padding rows
@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
def test_padding_rows_add_nothing_to_the_gradient(trainer_factory, loss_type):
    """A micro-batch filled up with padding rows (as data-parallel ranks do) gives the gradient of its real rows."""
    torch.set_num_threads(1)
    trainer, tokenizer = trainer_factory(loss_type=loss_type)
    prompt = tokenizer("where now?", add_special_tokens=False)["input_ids"]
    real = Sample(prompt, tokenizer("go to fridge 1", add_special_tokens=False)["input_ids"], 1.0)
    filler = Sample(prompt, tokenizer("look", add_special_tokens=False)["input_ids"], -1.0)

    def gradient(batch):
        trainer.model.zero_grad()
        trainer.current_gradient_accumulation_steps = 1
        inputs = {k: v for k, v in batch.items() if k not in NOT_LOSS_INPUTS}
        (trainer.compute_loss(trainer.model, inputs) * batch.get(ROW_SCALE, 1.0)).backward()
        return torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None])

    alone = trainer._micro_batches([real])[0]
    padded = trainer._padded_batch([real], filler, 2)  # two rows: the real one and a padding row
    padded["num_items_in_batch"] = alone["num_items_in_batch"]  # the step's real tokens (set by _aligned_steps)
    expected, got = gradient(alone), gradient(padded)
    assert expected.abs().sum() > 0
    assert torch.allclose(got, expected, rtol=1e-4, atol=1e-6), float((got - expected).abs().max())
