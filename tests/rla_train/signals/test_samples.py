"""Training samples from scored GRPO groups, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from rla_train.backends.base import Generation, Sample as GenSample
from rla_train.rollout.episode import Episode, StepRecord
from rla_train.signals.samples import (RewardSpec, advantage_change_fraction, advantage_changes, policy_samples,
                                       reward_model_samples, step_rewards)


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


def judge_generations(episodes):
    """One judge Generation per step with one sample per vote, as RewardModel.judge reports them."""
    return {id(e): [Generation("judge", [7], [GenSample("v", [30 + j], [-0.1]) for j in range(len(votes))])
                    for votes in e.judgments] for e in episodes}


def test_reward_spec_rejects_unknown_options():
    with pytest.raises(ValueError, match="outcome_encoding must be one of"):
        RewardSpec(outcome_encoding="0/1")
    with pytest.raises(ValueError, match="group_filter must be one of"):
        RewardSpec(group_filter="release")


def test_step_rewards_with_the_01_outcome():
    lost = episode(False, [[1, 1, -1], [-1, -1, -1]])
    # 0 + (1+1-1)/3 = 0.333;  0 - 1 = -1   (pm1 would be -0.667, -2)
    assert step_rewards(lost, RewardSpec(outcome_encoding="01")) == pytest.approx([1 / 3, -1.0])
    assert step_rewards(lost, RewardSpec(outcome_encoding="01", use_judgments=False)) == pytest.approx([0.0, 0.0])
    assert step_rewards(lost, RewardSpec()) == pytest.approx([-2 / 3, -2.0])


def test_policy_samples_01_with_lambda_equal_pm1_with_two_lambda():
    group = [episode(True, [[1, 1, -1], [1, 0, 1]]), episode(False, [[1, -1, -1], [1, 1, 1]]),
             episode(False, [[1, 1, 1]]), episode(True, [[-1, -1, -1], [-1, 1, 1]])]
    # step 0, 01 with λ = 1: R = [1.333, -0.333, 1, 0] ; pm1 with λ = 2: R = [1.667, -1.667, 1, -1] = 2·R01 - 1
    as_01, _ = policy_samples([group], RewardSpec(outcome_encoding="01", lam=1.0))
    as_pm1, _ = policy_samples([group], RewardSpec(outcome_encoding="pm1", lam=2.0))
    assert [s.advantage for s in as_01] == pytest.approx([s.advantage for s in as_pm1], rel=1e-12, abs=1e-12)
    same_lambda, _ = policy_samples([group], RewardSpec(lam=1.0))
    # pm1 with λ = 1, step 0: R = [1.333, -1.333, 0, 0] -> z [1.41421, -1.41421, 0, 0], not 01's
    assert [s.advantage for s in same_lambda][0] == pytest.approx(1.41421, rel=1e-5)
    assert as_01[0].advantage != pytest.approx(same_lambda[0].advantage, rel=1e-3)


def test_policy_samples_group_filter_rules():
    one_of_nine = [episode(True, [[1]])] + [episode(False, [[-1 if k % 2 else 1]]) for k in range(8)]  # 1/9
    all_fail = [episode(False, [[1, 1, 1]]), episode(False, [[1, -1, -1]])] * 4                     # 0/8
    mixed, stats = policy_samples([one_of_nine, all_fail], RewardSpec())
    assert stats["groups_filtered"] == 1 and {s.info["group"] for s in mixed} == {0}
    release, stats = policy_samples([one_of_nine, all_fail], RewardSpec(group_filter="alfworld_release"))
    assert release == [] and stats["groups_filtered"] == 2  # 1/9 = 0.111 < 1/8, 0/8 < 1/8
    everything, stats = policy_samples([one_of_nine, all_fail], RewardSpec(group_filter="none"))
    assert stats["groups_filtered"] == 0 and len(everything) == 9 + 8
    # all-fail group under "none": R = -1 + 1 = 0 and -1 - 1/3 = -1.333 alternating -> mean -0.667, std 0.667
    assert [s.advantage for s in everything if s.info["group"] == 1] == pytest.approx([1.0, -1.0] * 4)


def test_advantage_changes_where_the_votes_vary_within_a_step_index():
    a = episode(True, [[1, 1, 1], [1, 1, 1], [1, 1, 1]])
    b = episode(True, [[1, -1, -1], [1, 1, 1], [-1, -1, -1]])
    c = episode(False, [[1, 1, 1], [1, 1, 1]])
    d = episode(False, [[-1, -1, -1], [1, 1, 1]])
    group, spec = [a, b, c, d], RewardSpec()
    # outcome only: steps 0 and 1: O = [1, 1, -1, -1] -> z [1, 1, -1, -1]; step 2 (a, b both won): [1, 1] -> 0, 0
    # integrated, step 0: R = [2, 0.667, 0, -2] -> votes vary -> every z differs from outcome only
    #   mean 1/6, deviations [1.8333, 0.5, -0.1667, -2.1667], std sqrt(8.3333/4) = 1.44338
    #   -> z [1.27017, 0.34641, -0.11547, -1.50111]
    # step 1: every vote +1 -> R = O + 1, a shift of the outcome -> the same z as outcome only
    # step 2: R = [2, 0] -> z [1, -1]: kept here, dropped (0) by outcome only -> changed
    samples, _ = policy_samples([group], spec)
    assert [s.advantage for s in samples] == pytest.approx(
        [1.27017, 1.0, 1.0, 0.34641, 1.0, -1.0, -0.11547, -1.0, -1.50111, -1.0], rel=1e-5)
    #                       a0    a1     a2    b0    b1     b2    c0     c1    d0    d1
    assert advantage_changes([group], spec) == [True, False, True, True, False, True, True, False, True, False]
    assert advantage_change_fraction([group], spec) == 0.6
    outcome_only = RewardSpec(use_judgments=False)
    assert advantage_change_fraction([group], spec, baseline=outcome_only) == 0.6
    assert advantage_change_fraction([group], outcome_only) == 0.0


@pytest.mark.parametrize("votes", [
    {"a": [[1, 1, 1]] * 3, "b": [[1, 1, 1]] * 3, "c": [[1, 1, 1]] * 2, "d": [[1, 1, 1]] * 2},  # all +1
    {"a": [[1, -1, 0], [1, 1, -1], [-1, -1, -1]], "b": [[1, -1, 0], [1, 1, -1], [-1, -1, -1]],  # same per step
     "c": [[1, -1, 0], [1, 1, -1]], "d": [[1, -1, 0], [1, 1, -1]]},
])
def test_advantages_equal_outcome_only_when_the_votes_do_not_vary_within_a_step_index(votes):
    # R = O + c_t for every rollout at step t: a shift, so the z-scores are the outcome's
    group = [episode(True, votes["a"]), episode(True, votes["b"]), episode(False, votes["c"]),
             episode(False, votes["d"])]
    integrated, _ = policy_samples([group], RewardSpec())
    outcome_only, _ = policy_samples([group], RewardSpec(use_judgments=False))
    assert [s.advantage for s in integrated] == pytest.approx([s.advantage for s in outcome_only], abs=1e-12)
    assert [s.advantage for s in outcome_only] == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, -1.0, -1.0, -1.0, -1.0]
    assert advantage_change_fraction([group], RewardSpec()) == 0.0
    assert not any(advantage_changes([group], RewardSpec()))


def test_advantage_changes_count_groups_only_the_judge_trains():
    all_fail = [episode(False, [[1, 1, 1]]), episode(False, [[-1, -1, -1]]), episode(False, [[1, 1, 1]])]
    # mixed filter: 0/3 trains nothing -> no samples -> 0.0
    assert advantage_change_fraction([all_fail], RewardSpec()) == 0.0
    # none: R = [0, -2, 0] -> z [0.70711, -1.41421, 0.70711]; the outcome alone gives 0 to all -> all changed
    assert advantage_changes([all_fail], RewardSpec(group_filter="none")) == [True, True, True]
    # reward only (no outcome, so no filter): R = [1, -1, 1]; the baseline (outcome only, mixed) drops the group
    assert advantage_change_fraction([all_fail], RewardSpec(use_outcome=False)) == 1.0


def test_reward_model_samples_under_the_01_outcome():
    won, lost = episode(True, [[1, 1, -1]]), episode(False, [[1, 1, -1]])
    generations = judge_generations([won, lost])
    pm1, _ = reward_model_samples([[won, lost]], generations, RewardSpec())
    as_01, _ = reward_model_samples([[won, lost]], generations, RewardSpec(outcome_encoding="01"))
    # won: R = 1 + 1/3 under both encodings -> raw [4/3, 4/3, -4/3] -> z [0.70711, 0.70711, -1.41421]
    assert [s.advantage for s in pm1[:3]] == pytest.approx([0.70711, 0.70711, -1.41421], rel=1e-4)
    assert [s.advantage for s in as_01[:3]] == pytest.approx([s.advantage for s in pm1[:3]], rel=1e-12)
    # lost: pm1 R = -2/3 -> raw [-2/3, -2/3, 2/3] -> the -1 vote (agreeing with the loss) is rewarded;
    # 01 R = +1/3 -> raw [1/3, 1/3, -1/3] -> the +1 votes are rewarded: the sign flips
    assert [s.advantage for s in pm1[3:]] == pytest.approx([-0.70711, -0.70711, 1.41421], rel=1e-4)
    assert [s.advantage for s in as_01[3:]] == pytest.approx([0.70711, 0.70711, -1.41421], rel=1e-4)


def test_reward_model_samples_give_nothing_for_a_step_judged_once():
    won, lost = episode(True, [[1], [-1]]), episode(False, [[1], [0]])
    samples, stats = reward_model_samples([[won, lost]], judge_generations([won, lost]), RewardSpec())
    assert [s.advantage for s in samples] == [0.0, 0.0, 0.0, 0.0]  # the trainer drops zero advantages
    assert stats["judgments"] == 4 and stats["zero_reward_judgments"] == 4


def test_reward_model_objectives_balanced_and_labelled():
    won, lost1, lost2 = episode(True, [[1, -1, -1]]), episode(False, [[1, -1, -1]]), episode(False, [[1, -1, -1]])
    generations = judge_generations([won, lost1, lost2])
    paper, _ = reward_model_samples([[won, lost1, lost2]], generations, RewardSpec(), high=1.0)
    balanced, _ = reward_model_samples([[won, lost1, lost2]], generations, RewardSpec(), high=1.0, objective="balanced")
    # weights: 3 / (2 x 1) = 1.5 for the won episode, 3 / (2 x 2) = 0.75 for each lost one
    assert [b.advantage for b in balanced] == pytest.approx([1.5 * p.advantage for p in paper[:3]]
                                                            + [0.75 * p.advantage for p in paper[3:]])
    labels = {id(won): [False], id(lost1): [True], id(lost2): None}   # lost2: not labelled, gives nothing
    labelled, stats = reward_model_samples([[won, lost1, lost2]], generations, RewardSpec(), high=1.0,
                                           objective="labelled", labels=labels)
    # won, label bad, votes [1, -1, -1] -> raw [-1, 1, 1] -> [-1.41421, 0.70711, 0.70711]; lost1 labelled good: the mirror
    assert [s.advantage for s in labelled] == pytest.approx([-1.41421, 0.70711, 0.70711, 1.41421, -0.70711, -0.70711],
                                                            abs=1e-4)
    assert stats["judgments"] == 6
    # a group all lost (success rate 0, outside [0.2, 0.8]) trains the labelled judge; the outcome objectives skip it
    all_lost = [[lost1, lost2]]
    assert reward_model_samples(all_lost, generations, RewardSpec())[1]["groups_filtered"] == 1
    kept, stats = reward_model_samples(all_lost, generations, RewardSpec(), objective="labelled", labels=labels)
    assert stats["groups_filtered"] == 0 and [s.advantage for s in kept] == pytest.approx([1.41421, -0.70711, -0.70711],
                                                                                          abs=1e-4)
    with pytest.raises(ValueError, match="needs labels"):
        reward_model_samples([[won]], generations, RewardSpec(), objective="labelled")
    with pytest.raises(ValueError, match="needs labels"):
        reward_model_samples([[won]], generations, RewardSpec(), objective="labelled_balanced")
    with pytest.raises(ValueError, match="objective must be one of"):
        reward_model_samples([[won]], generations, RewardSpec(), objective="consistency")


def test_labelled_balanced_weighs_the_batchs_good_and_bad_steps_alike():
    # three episodes, four judged steps each; labelled: one good step, the rest bad (a weak policy's steps)
    votes = [[1, -1, -1], [1, 1, -1], [-1, -1, 1], [1, -1, 1]]
    eps = [episode(won, votes) for won in (True, False, False)]
    generations = judge_generations(eps)
    labels = {id(eps[0]): [True, False, False, None], id(eps[1]): [False, False, False, False],
              id(eps[2]): [True, True, False, False]}
    plain, _ = reward_model_samples([eps], generations, RewardSpec(), objective="labelled", labels=labels)
    balanced, stats = reward_model_samples([eps], generations, RewardSpec(), objective="labelled_balanced",
                                           labels=labels)
    # 11 labelled steps: 3 good, 8 bad -> weights 11 / (2 x 3) for good steps' judgments, 11 / (2 x 8) for bad ones
    flat = [label for e in eps for label in labels[id(e)]]
    weight = {True: 11 / 6, False: 11 / 16, None: 1.0}
    expected = [p.advantage * weight[flat[i // 3]] for i, p in enumerate(plain)]
    assert [b.advantage for b in balanced] == pytest.approx(expected, rel=1e-12)
    assert stats["judgments"] == 36
    # summed over the batch, a good step's judgments now pull as much as a bad step's: |advantage| mass per class alike
    mass = {True: 0.0, False: 0.0}
    for i, b in enumerate(balanced):
        if flat[i // 3] is not None:
            mass[flat[i // 3]] += abs(b.advantage)
    plain_mass = {c: sum(abs(p.advantage) for i, p in enumerate(plain) if flat[i // 3] is c) for c in (True, False)}
    assert mass[True] / mass[False] == pytest.approx(plain_mass[True] / plain_mass[False] * (11 / 6) / (11 / 16))
    # one class only: nothing to balance, the plain labelled rewards
    one_class = {id(e): [False] * 4 for e in eps}
    assert ([s.advantage for s in reward_model_samples([eps], generations, RewardSpec(), objective="labelled_balanced",
                                                       labels=one_class)[0]]
            == [s.advantage for s in reward_model_samples([eps], generations, RewardSpec(), objective="labelled",
                                                          labels=one_class)[0]])
