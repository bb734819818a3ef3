"""Reward maths, checked against numbers worked out by hand (see the comment next to each)."""

from __future__ import annotations

import numpy as np
import pytest

from rla_train.signals import rewards as rw


def test_outcome_value():
    assert rw.outcome_value(True) == 1.0
    assert rw.outcome_value(False) == -1.0
    assert (rw.outcome_value(True, "01"), rw.outcome_value(False, "01")) == (1.0, 0.0)
    with pytest.raises(ValueError, match="pm1"):
        rw.outcome_value(True, "plus-minus")


def test_integrated_rewards_average_each_steps_own_votes():
    got = rw.integrated_rewards(1.0, [[1, -1, 1], [-1, -1, -1], [1, 0], []])
    # (1 + (1-1+1)/3) = 1.333;  1 + (-3)/3 = 0;  1 + (1+0)/2 = 1.5;  no votes -> O = 1
    np.testing.assert_allclose(got, [4 / 3, 0.0, 1.5, 1.0])


def test_integrated_rewards_lambda_and_loss():
    # -1 + 0.5 * (1+1+1)/3 = -0.5;  -1 + 0.5 * (-1+1)/2 = -1
    np.testing.assert_allclose(rw.integrated_rewards(-1.0, [[1, 1, 1], [-1, 1]], lam=0.5), [-0.5, -1.0])


def test_integrated_rewards_rejects_bad_votes():
    with pytest.raises(ValueError, match="votes must be"):
        rw.integrated_rewards(1.0, [[1, 2]])
    with pytest.raises(ValueError, match="finite"):
        rw.integrated_rewards(float("nan"), [[1]])


def test_step_advantages_zscore_per_step_index_over_ragged_rollouts():
    got = rw.step_advantages([[1.0, 2.0], [3.0], [-1.0, 0.0, 5.0]])
    # t=0: [1, 3, -1], mean 1, population var (0+4+4)/3 = 8/3, std 1.63299 -> [0, 1.22474, -1.22474]
    # t=1: [2, 0] (rollout 1 has no step 1), mean 1, std 1 -> [1, -1]
    # t=2: only [5] -> fewer than 2 values: the raw reward 5
    np.testing.assert_allclose(got[0], [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(got[1], [1.2247449], rtol=1e-6)
    np.testing.assert_allclose(got[2], [-1.2247449, -1.0, 5.0], rtol=1e-6)
    assert [len(a) for a in got] == [2, 1, 3]


def test_step_advantages_equal_rewards_give_zero():
    got = rw.step_advantages([[1.0, 0.5], [1.0, 0.5]])
    np.testing.assert_array_equal(np.concatenate(got), [0.0, 0.0, 0.0, 0.0])
    assert rw.step_advantages([]) == []


def test_step_advantages_rewards_equal_up_to_rounding_give_zero():
    # 0.1 + 0.2 = 0.30000000000000004: "equal" to 0.3 but not bitwise; std 3.2e-17 would give [0, -1.73, 0]
    got = rw.step_advantages([[0.1 + 0.2], [0.3], [0.30000000000000004]])
    np.testing.assert_array_equal(np.concatenate(got), [0.0, 0.0, 0.0])
    # bitwise equal rewards whose mean is not: three lost rollouts, votes [1, 1, -1] at the step:
    # R = -1 + 1/3 = -0.6666666666666667 each, mean -0.6666666666666666, std 1.1e-16 -> was -1 for all three
    lost = rw.integrated_rewards(-1.0, [[1, 1, -1]])
    got = rw.step_advantages([lost, lost, lost])
    np.testing.assert_array_equal(np.concatenate(got), [0.0, 0.0, 0.0])


def test_step_advantages_z_score_of_the_mean_is_exactly_zero():
    # three lost rollouts, λ = 2, votes [-1,-1,-1], [-1,-1,0], [-1,0,0]:
    # R = -1 + 2·(-1) = -3,  -1 + 2·(-2/3) = -2.3333,  -1 + 2·(-1/3) = -1.6667; the middle one is the mean,
    # but in floats (R - mean)/std = 8e-16, not 0: it must be 0 so the sample is dropped
    # std = sqrt((4/9 + 0 + 4/9)/3) = 0.54433 -> z = ±(2/3)/0.54433 = ±1.22474
    rewards = [rw.integrated_rewards(-1.0, [votes], lam=2.0) for votes in ([-1, -1, -1], [-1, -1, 0], [-1, 0, 0])]
    got = np.concatenate(rw.step_advantages(rewards))
    np.testing.assert_allclose(got, [-1.2247449, 0.0, 1.2247449], rtol=1e-6)
    assert got[1] == 0.0


def test_outcome_01_with_lambda_gives_the_advantages_of_pm1_with_two_lambda():
    # R01(λ) = O01 + λ·mean S, O01 = (Opm1 + 1)/2  =>  R01(λ) = ½·(Opm1 + 2λ·mean S) + ½ = ½·Rpm1(2λ) + ½,
    # and z-scores ignore a positive scale and a shift.  Group of three, one step each, λ = 1:
    #   won,  votes [1, 1, -1]:  R01 = 1 + 1/3 = 1.3333    Rpm1(2) =  1 + 2/3 =  1.6667
    #   lost, votes [1, -1, -1]: R01 = 0 - 1/3 = -0.3333   Rpm1(2) = -1 - 2/3 = -1.6667
    #   lost, votes [1, 1, 1]:   R01 = 0 + 1 = 1            Rpm1(2) = -1 + 2 =   1
    # R01 mean 2/3, deviations [2/3, -1, 1/3], var (4/9 + 1 + 1/9)/3 = 14/27, std 0.72008
    # -> z = [0.92582, -1.38873, 0.46291]; Rpm1(2): deviations doubled, std doubled -> the same z
    votes = [[[1, 1, -1]], [[1, -1, -1]], [[1, 1, 1]]]
    won = [True, False, False]
    r01 = [rw.integrated_rewards(rw.outcome_value(w, "01"), v, lam=1.0) for w, v in zip(won, votes)]
    rpm1 = [rw.integrated_rewards(rw.outcome_value(w, "pm1"), v, lam=2.0) for w, v in zip(won, votes)]
    z01, zpm1 = np.concatenate(rw.step_advantages(r01)), np.concatenate(rw.step_advantages(rpm1))
    np.testing.assert_allclose(z01, [0.92582, -1.38873, 0.46291], rtol=1e-4)
    np.testing.assert_allclose(z01, zpm1, rtol=1e-12)
    # ... while pm1 with the same λ = 1 is another signal: R = [1.3333, -1.3333, 0] -> z = [1.22474, -1.22474, 0]
    same_lambda = [rw.integrated_rewards(rw.outcome_value(w), v, lam=1.0) for w, v in zip(won, votes)]
    np.testing.assert_allclose(np.concatenate(rw.step_advantages(same_lambda)), [1.2247449, -1.2247449, 0.0],
                               rtol=1e-6)


def test_nonzero_mask():
    np.testing.assert_array_equal(rw.nonzero_mask([0.0, 1.2, -0.1, 0.0]), [False, True, True, False])


def test_consistency_rewards_zscored_within_the_step():
    got = rw.consistency_rewards(4 / 3, [1, -1, 0])
    # raw: [4/3, -4/3, -2] (invalid -> -2); mean -2/3; deviations [2, -2/3, -4/3]
    # var = (4 + 4/9 + 16/9)/3 = 56/27 = 2.07407, std 1.44016 -> [1.38873, -0.46291, -0.92582]
    np.testing.assert_allclose(got, [1.38873, -0.46291, -0.92582], rtol=1e-4)


def test_consistency_rewards_edge_cases():
    # one judgment (m = 1): nothing to standardise against -> 0, not trained on (as both releases do)
    np.testing.assert_array_equal(rw.consistency_rewards(0.5, [-1]), [0.0])
    np.testing.assert_array_equal(rw.consistency_rewards(0.5, [0]), [0.0])  # also when it did not parse
    np.testing.assert_array_equal(rw.consistency_rewards(0.5, []), np.zeros(0))
    np.testing.assert_array_equal(rw.consistency_rewards(2.0, [1, 1, 1]), [0.0, 0.0, 0.0])  # all equal -> 0
    # R = 0: agreeing and disagreeing both earn 0, the invalid one -2: raw [0, 0, -2], mean -2/3,
    # std sqrt((4/9+4/9+16/9)/3) = 0.94281 -> [0.70711, 0.70711, -1.41421]
    np.testing.assert_allclose(rw.consistency_rewards(0.0, [1, -1, 0]), [0.70711, 0.70711, -1.41421], rtol=1e-4)


def test_episode_consistency_rewards():
    got = rw.episode_consistency_rewards([1.0, -2.0], [[1, -1], [1]])
    # step 0: raw [1, -1] -> z [1, -1];  step 1: one judgment -> 0 (nothing to standardise)
    np.testing.assert_allclose(got[0], [1.0, -1.0])
    np.testing.assert_array_equal(got[1], [0.0])
    with pytest.raises(ValueError, match="one step reward per judged step"):
        rw.episode_consistency_rewards([1.0], [[1], [1]])


def test_consistency_rewards_depend_on_the_outcome_encoding():
    # lost step, votes [1, 1, -1], λ = 1.  pm1: R = -1 + 1/3 = -2/3 -> raw R·S = [-2/3, -2/3, 2/3]:
    #   mean -2/9, deviations [-4/9, -4/9, 8/9], std sqrt((16+16+64)/81/3) = 0.62854 -> [-0.70711, -0.70711, 1.41421]
    #   (the lone -1 vote, which agrees with the loss, is rewarded)
    pm1 = rw.consistency_rewards(-1.0 + 1 / 3, [1, 1, -1])
    np.testing.assert_allclose(pm1, [-0.70711, -0.70711, 1.41421], rtol=1e-4)
    # 01: R = 0 + 1/3 -> raw [1/3, 1/3, -1/3] -> the mirror image: the +1 votes are rewarded on a lost trajectory
    np.testing.assert_allclose(rw.consistency_rewards(0.0 + 1 / 3, [1, 1, -1]), -pm1, rtol=1e-12)


def test_task_filters():
    assert [rw.policy_task_filter(s) for s in (0.0, 0.125, 0.5, 1.0)] == [False, True, True, False]
    assert [rw.reward_model_task_filter(s) for s in (0.19, 0.2, 0.5, 0.8, 0.81)] == [False, True, True, True, False]
    assert rw.reward_model_task_filter(0.1, low=0.0, high=0.1)
    with pytest.raises(ValueError, match="low <= high"):
        rw.reward_model_task_filter(0.5, low=0.8, high=0.2)
    with pytest.raises(ValueError, match="success_rate"):
        rw.policy_task_filter(1.5)


@pytest.mark.parametrize("won, size, mixed, alfworld_release, none", [
    (0, 8, False, False, True),   # 0/8: only "none" keeps an all-fail group
    (1, 8, True, True, True),     # 1/8 = 0.125: the release's lower edge, inclusive
    (7, 8, True, True, True),     # 7/8 = 0.875: the upper edge, inclusive
    (8, 8, False, False, True),   # 8/8
    (1, 9, True, False, True),    # 1/9 = 0.111 < 1/8: mixed keeps, the release drops
    (8, 9, True, False, True),    # 8/9 = 0.889 > 7/8
    (2, 16, True, True, True),    # 2/16 = 0.125 exactly
    (1, 2, True, True, True),
])
def test_policy_task_filter_rules(won, size, mixed, alfworld_release, none):
    rate = won / size
    assert rw.policy_task_filter(rate) == mixed  # the default rule is "mixed"
    assert rw.policy_task_filter(rate, "mixed") == mixed
    assert rw.policy_task_filter(rate, "alfworld_release") == alfworld_release
    assert rw.policy_task_filter(rate, "none") == none


def test_policy_task_filter_unknown_rule():
    with pytest.raises(ValueError, match="alfworld_release"):
        rw.policy_task_filter(0.5, "release")


# programs p0, p1 correct; p2, p3 wrong.  tests (columns):
#   t0 all pass                -> correct, catches nobody           -> 0
#   t1 p2 fails                -> correct, catches p2               -> +1
#   t2 p2, p3 fail             -> correct, catches both             -> +2
#   t3 p1 fails (a right one)  -> incorrect, lets p2 and p3 pass    -> -2
#   t4 only p3 passes          -> incorrect, lets p3 pass           -> -1
PASSES = np.array([[1, 1, 1, 1, 0],
                   [1, 1, 1, 0, 0],
                   [1, 0, 0, 1, 0],
                   [1, 1, 0, 1, 1]], dtype=bool)
PROGRAM_CORRECT = [True, True, False, False]


def test_unit_test_correctness_and_rewards():
    assert list(rw.unit_test_correctness(PASSES, PROGRAM_CORRECT)) == [True, True, True, False, False]
    np.testing.assert_array_equal(rw.unit_test_rewards(PASSES, PROGRAM_CORRECT), [0.0, 1.0, 2.0, -2.0, -1.0])


def test_unit_tests_undetermined_without_a_correct_program():
    assert list(rw.unit_test_correctness(PASSES, [False] * 4)) == [None] * 5
    np.testing.assert_array_equal(rw.unit_test_rewards(PASSES, [False] * 4), np.zeros(5))


def test_unit_test_shapes_are_checked():
    with pytest.raises(ValueError, match="one entry per program"):
        rw.unit_test_rewards(PASSES, [True, False])
    with pytest.raises(ValueError, match="matrix"):
        rw.unit_test_correctness([True, False], [True])


def test_label_rewards_pay_agreement_with_the_label_zscored_within_the_step():
    # label bad, votes [-1, 1, 1]: raw [1, -1, -1], mean -1/3, std sqrt((16/9 + 4/9 + 4/9)/3) = 0.94281
    np.testing.assert_allclose(rw.label_rewards(False, [-1, 1, 1]), [1.41421, -0.70711, -0.70711], rtol=1e-4)
    # label good, votes [1, -1, 0]: raw [1, -1, -2], mean -2/3, std 1.24722 -> [1.33631, -0.26726, -1.06904]
    np.testing.assert_allclose(rw.label_rewards(True, [1, -1, 0]), [1.33631, -0.26726, -1.06904], rtol=1e-4)
    np.testing.assert_array_equal(rw.label_rewards(None, [1, -1, 1]), [0.0, 0.0, 0.0])   # undetermined: no data
    np.testing.assert_array_equal(rw.label_rewards(True, [1, 1, 1]), [0.0, 0.0, 0.0])    # all agree: no spread
    np.testing.assert_array_equal(rw.label_rewards(True, [-1]), [0.0])                   # one judgment: nothing


def test_outcome_balance_weights_give_each_outcome_half_the_weight():
    # 1 won of 4: 4 / (2 x 1) = 2 for it, 4 / (2 x 3) = 2/3 for each lost one; the classes then weigh 2 and 2
    np.testing.assert_allclose(rw.outcome_balance_weights([True, False, False, False]), [2, 2 / 3, 2 / 3, 2 / 3])
    np.testing.assert_array_equal(rw.outcome_balance_weights([False, False]), [1.0, 1.0])  # one class: unchanged
    assert rw.outcome_balance_weights([]).size == 0
    np.testing.assert_allclose(rw.class_balance_weights([False, True, True]), [1.5, 0.75, 0.75])
