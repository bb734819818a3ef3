"""A co-training step measures what matters (issue 24): the judge's balanced accuracy on the votes the policy's own
rollouts got, how far the update moved the policy, and reward-model updates that take several clipped passes or none.

Runs on the toy corridor family (tests/rla_train/cotrainer/test_toy_family.py), the fastest end-to-end run.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from rla_train.config import load_config
from tests.rla_train.cotrainer.test_toy_family import RUN, changed, weights

TINY_JUDGE = ["reward_model.kind=model", "reward_model.model=tiny", "reward_model.task_filter_low=0.0",
              "reward_model.task_filter_high=1.0", "reward_model.learning_rate=0.001",
              "reward_model.optimizer={lr_scheduler_type: constant}"]


def rows(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_every_step_logs_the_judges_accuracy_on_the_policys_rollouts_and_how_far_the_policy_moved(tmp_path):
    from rla_train.cotrainer.loop import train

    torch.set_num_threads(1)
    # the oracle judge at accuracy 0.75: every vote is the planner's label, flipped with probability 0.25
    config = load_config(None, [*RUN, "reward_model.oracle_accuracy=0.75", "train.steps=2", "policy.group_filter=none",
                                f"output.dir={tmp_path}"],
                         check_hardware=False)
    summary = train(config, progress=False)
    logged = rows(tmp_path)
    assert [r["step"] for r in logged] == [1, 2]
    for row in logged:
        assert 0 < row["judge_labelled_bad_steps"] < row["judge_labelled_steps"]
        for key in ("judge_vote_balanced_accuracy", "judge_verdict_balanced_accuracy", "judge_vote_good_recall",
                    "judge_vote_false_good_rate", "policy_clip_fraction"):
            assert 0.0 <= row[key] <= 1.0, key
        assert row["policy_choice_kl"] > 0 and math.isfinite(row["policy_choice_kl"])
        assert -1 <= row["policy_chosen_prob_change"] <= 1
        assert {"policy_chosen_prob_change_pos_adv", "policy_chosen_prob_change_neg_adv"} <= set(row)
    judge = summary["judge_vote_balanced_accuracy"]
    assert judge["first_step"] == logged[0]["judge_vote_balanced_accuracy"]
    assert judge["last_step"] == logged[1]["judge_vote_balanced_accuracy"]
    assert judge["before"] is None and judge["after"] is None  # the toy family has no probe games
    assert json.loads((tmp_path / "summary.json").read_text())["judge_vote_balanced_accuracy"] == judge


def test_the_step_metrics_by_hand_and_nothing_for_a_family_without_an_oracle():
    from rla_train.cotrainer.loop import _episode_metrics, reward_spec
    from rla_train.config import MODES
    from rla_train.rollout.episode import Episode
    from rla_envs.core.task import Task
    from tests.rla_train.cotrainer.test_toy_family import corridor_tasks

    # one corridor of 2 cells: forward (good), back (bad), forward, forward (won); votes as a perfect judge gives
    task = corridor_tasks()[0]
    won = Episode(task_id=task.id, task=task, actions=["forward", "back", "forward", "forward"], won=True,
                  judgments=[[1, 1], [-1, -1], [1, 1], [1, 1]])
    wrong = Episode(task_id=task.id, task=task, actions=["back", "forward"], won=False,
                    judgments=[[0, 0], [-1, 1]])  # 'back' at the start changes nothing: good, judged 0 (wrong)
    config = load_config(None, [*RUN], check_hardware=False)
    metrics = _episode_metrics([[won, wrong]], reward_spec(config), MODES["policy"])
    # labels: won [good, bad, good, good], wrong [good, good]; good steps' votes: 6 right in the won episode, then
    # 0 of 2 and 1 of 2 = 7/10; the bad step's: 2/2: (0.7 + 1)/2 = 0.85
    assert metrics["judge_vote_balanced_accuracy"] == pytest.approx(0.85)
    # verdicts: good steps +1, +1, +1, 0, 0 -> 3/5; the bad step -1 -> 1/1: (0.6 + 1)/2 = 0.8
    assert metrics["judge_verdict_balanced_accuracy"] == pytest.approx(0.8)
    assert metrics["judge_labelled_steps"] == 6 and metrics["judge_labelled_bad_steps"] == 1
    # where the votes err: 7 of the good steps' 10 votes say good; none of the bad step's 2 does
    assert metrics["judge_vote_good_recall"] == pytest.approx(0.7)
    assert metrics["judge_vote_false_good_rate"] == 0.0
    code = Task(family="code", instruction="add two numbers", spec={})
    unlabelled = Episode(task_id="c", task=code, actions=["x"], won=True, judgments=[[1]])
    assert "judge_vote_balanced_accuracy" not in _episode_metrics([[unlabelled]], reward_spec(config), MODES["policy"])


@pytest.mark.parametrize("updates", [0, 2])
def test_reward_model_updates_per_step_zero_trains_nothing_and_two_clips_against_the_judge_that_voted(tmp_path, updates):
    from rla_train.cotrainer.loop import train

    torch.set_num_threads(1)
    config = load_config(None, [*RUN, *TINY_JUDGE, f"reward_model.updates_per_step={updates}",
                                "reward_model.epsilon=0.001", f"output.dir={tmp_path}"], check_hardware=False)
    train(config, progress=False)
    (row,) = rows(tmp_path)
    first, last = tmp_path / "checkpoints" / "step-000000", tmp_path / "checkpoints" / "step-000001"
    assert changed(weights(first / "policy"), weights(last / "policy"))
    if updates == 0:  # judged with, not trained (it was a NameError)
        assert "rm_loss" not in row and not changed(weights(first / "reward_model"), weights(last / "reward_model"))
    else:  # two passes in one update: the second's ratio is against the judge that voted, so it is clipped
        assert row["rm_optimizer_steps"] == 2 and row["rm_clip_fraction"] > 0
        assert changed(weights(first / "reward_model"), weights(last / "reward_model"))


def test_an_oracle_that_fails_on_an_episode_leaves_it_out_with_a_warning(monkeypatch):
    import rla_envs.core.labels
    from rla_train.cotrainer.judge_metrics import judge_step_metrics
    from rla_train.rollout.episode import Episode
    from tests.rla_train.cotrainer.test_toy_family import corridor_tasks

    def broken(task, actions, **options):
        raise KeyError("the planner cannot load this game")

    monkeypatch.setattr(rla_envs.core.labels, "step_labels", broken)
    task = corridor_tasks()[0]
    episode = Episode(task_id=task.id, task=task, actions=["forward"], judgments=[[1]])
    with pytest.warns(RuntimeWarning, match="could not label an episode of task .*KeyError"):
        assert judge_step_metrics([episode]) == {}
