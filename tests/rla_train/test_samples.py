"""Training samples from scored GRPO groups, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from rla_train.backends.base import Generation, Sample as GenSample
from rla_train.rollout.episode import Episode, StepRecord
from rla_train.samples import RewardSpec, policy_samples, reward_model_samples, step_rewards


def episode(won, judgments, error=None):
    steps = [StepRecord(f"p{i}", [10, i], f"a{i}", [20 + i], [-0.5], f"a{i}") for i in range(len(judgments))]
    return Episode(task_id="t", actions=[s.action for s in steps], observations=["o"] * (len(steps) + 1),
                   infos=[{}] * (len(steps) + 1), won=won, judgments=judgments, steps=steps, error=error)


def test_step_rewards_per_mode():
    e = episode(True, [[1, 1, -1], [-1, -1, 0]])
    # integrated: 1 + (1+1-1)/3 = 1.333, 1 + (-1-1+0)/3 = 0.333
    assert step_rewards(e, RewardSpec()) == pytest.approx([4 / 3, 1 / 3])
    assert step_rewards(e, RewardSpec(use_judgments=False)) == pytest.approx([1.0, 1.0])
    # reward only, λ = 2: 2·(1/3) = 0.667, 2·(-2/3) = -1.333
    assert step_rewards(e, RewardSpec(use_outcome=False, lam=2.0)) == pytest.approx([2 / 3, -4 / 3])
    with pytest.raises(ValueError, match="judge it"):
        step_rewards(Episode(task_id="t", actions=["a"], judgments=None), RewardSpec())
    with pytest.raises(ValueError, match="needs the outcome"):
        RewardSpec(use_outcome=False, use_judgments=False)


def test_policy_samples_z_score_at_the_same_step_index():
    won = episode(True, [[1, 1, 1], [1, 1, 1]])        # R = [2, 2]
    lost = episode(False, [[-1, -1, -1]])              # R = [-2]
    samples, stats = policy_samples([[won, lost]], RewardSpec())
    # step 0: values 2 and -2 -> mean 0, std 2 -> +1, -1; step 1: only the won episode -> raw R = 2
    assert [(s.info["step"], s.advantage) for s in samples] == [(0, 1.0), (1, 2.0), (0, -1.0)]
    assert samples[0].prompt_ids == [10, 0] and samples[0].completion_ids == [20]
    assert stats["groups_filtered"] == 0 and stats["zero_advantage_fraction"] == 0


def test_all_equal_outcomes_are_filtered_unless_the_reward_ignores_the_outcome():
    group = [episode(False, [[1, 1, 1]]), episode(False, [[-1, -1, -1]])]
    samples, stats = policy_samples([group], RewardSpec())
    assert samples == [] and stats["groups_filtered"] == 1
    samples, _ = policy_samples([group], RewardSpec(use_outcome=False))
    assert [s.advantage for s in samples] == [1.0, -1.0]  # R = 1, -1 -> z-scores
    errored = [episode(True, [[1]]), episode(False, [[1]], error="env died")]
    assert policy_samples([errored], RewardSpec())[1]["groups_filtered"] == 1  # one usable episode is no group


def test_reward_model_samples_reward_consistency_within_the_step():
    won, lost = episode(True, [[1, -1, 0]]), episode(False, [[1, 1, 1]])
    generations = {id(e): [Generation("judge", [7], [GenSample("v", [30 + j], [-0.1]) for j in range(3)])]
                   for e in (won, lost)}
    samples, stats = reward_model_samples([[won, lost]], generations, RewardSpec())
    # won: R = 1 + 0/3 = 1; consistency R·S = [1, -1, -2 (unparseable)] -> mean -2/3, std 1.247
    z = [(1 + 2 / 3) / 1.2472, (-1 + 2 / 3) / 1.2472, (-2 + 2 / 3) / 1.2472]
    assert [s.advantage for s in samples[:3]] == pytest.approx(z, abs=1e-3)
    # lost: R = -1 + 3/3 = 0 -> all consistency 0 -> zero std -> 0
    assert [s.advantage for s in samples[3:]] == [0.0, 0.0, 0.0]
    assert samples[0].prompt_ids == [7] and samples[1].completion_ids == [31] and stats["judgments"] == 6
    filtered, stats = reward_model_samples([[lost, lost]], generations, RewardSpec())  # success 0 < 0.2
    assert filtered == [] and stats["groups_filtered"] == 1
