"""GiGPO's advantages (rla_train.signals.gigpo) and its samples (rla_train.signals.samples), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rla_train.rollout.episode import Episode, StepRecord
from rla_train.signals.gigpo import discounted_returns, gigpo_advantages, normalise, success_rewards
from rla_train.signals.samples import RewardSpec, advantage_change_fraction, anchor_state, policy_samples

GIGPO = RewardSpec(use_judgments=False, advantage="gigpo", gamma=0.5, gigpo_norm="mean_norm")


def test_returns_discount_the_success_reward_back_from_the_last_step():
    assert success_rewards(3, True).tolist() == [0, 0, 1] and success_rewards(3, False).tolist() == [0, 0, 0]
    assert success_rewards(0, True).tolist() == []
    assert discounted_returns([0, 0, 1], 0.5).tolist() == [0.25, 0.5, 1.0]
    assert discounted_returns([1, 0, 1], 1.0).tolist() == [2.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns([1], 1.5)


def test_normalise_centres_or_z_scores_and_a_lone_value_gets_zero():
    # [1, 0, 0, 0]: mean 0.25, population std sqrt(0.1875) = 0.43301
    assert normalise([1, 0, 0, 0], "mean_norm").tolist() == [0.75, -0.25, -0.25, -0.25]
    assert normalise([1, 0, 0, 0], "mean_std_norm") == pytest.approx([1.73205, -0.57735, -0.57735, -0.57735], abs=1e-5)
    assert normalise([0.7], "mean_std_norm").tolist() == [0.0] and normalise([2, 2], "mean_norm").tolist() == [0, 0]
    with pytest.raises(ValueError, match="mean_std_norm"):
        normalise([1, 2], "std")


def test_the_worked_example_of_the_docstring():
    # episode level [1, 0] -> [0.5, -0.5]; returns [0.5, 1.0] and [0, 0]; state a = {0.5, 0} -> [0.25, -0.25]
    advantages, stats = gigpo_advantages([True, False], [["a", "b"], ["a", "c"]], gamma=0.5, norm="mean_norm")
    assert [a.tolist() for a in advantages] == [[0.75, 0.5], [-0.75, -0.5]]
    assert (stats.steps, stats.shared_steps, stats.step_groups, stats.step_advantage_nonzero) == (4, 2, 3, 2)


def test_a_group_that_always_wins_still_prefers_the_shorter_way_from_the_same_state():
    # both won: episode level 0. From state s the short rollout's return is 0.5 (s -> goal in 2 steps), the long
    # one's 0.25 (s, x, goal): mean 0.375 -> +0.125 / -0.125; every other state is visited once
    advantages, stats = gigpo_advantages([True, True], [["s", "g"], ["s", "x", "g2"]], gamma=0.5, norm="mean_norm")
    assert [a.tolist() for a in advantages] == [[0.125, 0.0], [-0.125, 0.0, 0.0]]
    assert stats.shared_steps == 2 and stats.step_advantage_nonzero == 2


def test_a_state_revisited_in_one_episode_is_two_members_of_its_step_group():
    # one rollout loops s -> s -> goal (won, returns [0.25, 0.5, 1]), the other goes s -> goal (won, [0.5, 1]);
    # step group s = {0.25, 0.5, 0.5}: mean 0.41667 -> [-0.16667, 0.08333, 0.08333]; goal g = {1, 1} -> 0
    advantages, _ = gigpo_advantages([True, True], [["s", "s", "g"], ["s", "g"]], gamma=0.5, norm="mean_norm")
    assert advantages[0] == pytest.approx([-1 / 6, 1 / 12, 0.0]) and advantages[1] == pytest.approx([1 / 12, 0.0])


def test_step_weight_scales_the_step_level_alone():
    won, anchors = [True, False, False], [["a", "b"], ["a", "c", "d"], ["e"]]
    episode_only, _ = gigpo_advantages(won, anchors, gamma=0.5, step_weight=0.0)
    expected = normalise([1, 0, 0], "mean_std_norm")  # [1.41421, -0.70711, -0.70711] on every step
    assert [a.tolist() for a in episode_only] == [[expected[0]] * 2, [expected[1]] * 3, [expected[2]]]
    doubled, _ = gigpo_advantages(won, anchors, gamma=0.5, step_weight=2.0)
    single, _ = gigpo_advantages(won, anchors, gamma=0.5, step_weight=1.0)
    for d, s, e in zip(doubled, single, episode_only):
        np.testing.assert_allclose(d - e, 2 * (s - e))
    with pytest.raises(ValueError, match="one outcome per rollout"):
        gigpo_advantages([True], anchors)
    with pytest.raises(ValueError, match="step_weight"):
        gigpo_advantages(won, anchors, step_weight=-1)


def episode(won, observations, admissible=None):
    """An episode with one step per observation (the last observation follows the last step)."""
    steps = [StepRecord(f"p{i}", [10, i], f"a{i}", [20 + i], [-0.5], f"a{i}") for i in range(len(observations) - 1)]
    infos = [{"admissible_actions": list(admissible[i])} if admissible else {} for i in range(len(observations))]
    return Episode(task_id="t", actions=[s.action for s in steps], observations=list(observations), infos=infos,
                   won=won, steps=steps)


def test_the_anchor_state_is_the_observation_with_its_admissible_actions():
    e = episode(True, ["Nothing happens.", "Nothing happens.", "done"], admissible=[["go a"], ["go b"], []])
    assert anchor_state(e, 0) == ("Nothing happens.", ("go a",)) and anchor_state(e, 1) == ("Nothing happens.", ("go b",))
    assert anchor_state(episode(False, ["o", "p"]), 0) == ("o", ())
    short = Episode(task_id="t", actions=["x"], observations=[], steps=episode(False, ["o", "p"]).steps)
    with pytest.raises(ValueError, match="observation before every step"):
        anchor_state(short, 0)
    screens = Episode(task_id="t", actions=["click"], observations=[{"screenshot": [0] * 2000}, "after"],
                      infos=[{}, {}], steps=episode(False, ["o", "p"]).steps)
    with pytest.raises(ValueError, match="needs a text env"):
        anchor_state(screens, 0)


def test_gigpo_samples_train_every_group_and_report_their_step_signal():
    # an all-won group: GRPO's mixed filter drops it; GiGPO trains the shorter way from the shared start
    short, long = episode(True, ["s", "g", "end"]), episode(True, ["s", "x", "g2", "end"])
    samples, stats = policy_samples([[short, long]], GIGPO)
    assert [(s.info["step"], s.advantage) for s in samples] == [(0, 0.125), (1, 0.0), (0, -0.125), (1, 0.0), (2, 0.0)]
    assert stats["groups_filtered"] == 0 and stats["gigpo_shared_step_fraction"] == pytest.approx(2 / 5)
    assert stats["gigpo_step_advantage_fraction"] == pytest.approx(2 / 5)
    assert policy_samples([[short, long]], RewardSpec(use_judgments=False))[1]["groups_filtered"] == 1
    # a mixed group: every GiGPO sample differs from GRPO on the outcome at the same step index
    won, lost = episode(True, ["a", "b", "end"]), episode(False, ["a", "c", "end"])
    samples, _ = policy_samples([[won, lost]], GIGPO)
    assert [s.advantage for s in samples] == [0.75, 0.5, -0.75, -0.5]
    assert advantage_change_fraction([[won, lost]], GIGPO) == 1.0


def test_gigpo_refuses_a_judge_in_the_reward():
    with pytest.raises(ValueError, match="outcome alone"):
        RewardSpec(advantage="gigpo")
    with pytest.raises(ValueError, match="gigpo_norm"):
        RewardSpec(use_judgments=False, advantage="gigpo", gigpo_norm="std")
    with pytest.raises(ValueError, match="advantage must be one of"):
        RewardSpec(advantage="ppo")
