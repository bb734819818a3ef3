"""Reward maths, checked against numbers worked out by hand (see the comment next to each)."""

from __future__ import annotations

import numpy as np
import pytest

from rla_train import rewards as rw


def test_outcome_value():
    assert rw.outcome_value(True) == 1.0
    assert rw.outcome_value(False) == -1.0


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


def test_nonzero_mask():
    np.testing.assert_array_equal(rw.nonzero_mask([0.0, 1.2, -0.1, 0.0]), [False, True, True, False])


def test_consistency_rewards_zscored_within_the_step():
    got = rw.consistency_rewards(4 / 3, [1, -1, 0])
    # raw: [4/3, -4/3, -2] (invalid -> -2); mean -2/3; deviations [2, -2/3, -4/3]
    # var = (4 + 4/9 + 16/9)/3 = 56/27 = 2.07407, std 1.44016 -> [1.38873, -0.46291, -0.92582]
    np.testing.assert_allclose(got, [1.38873, -0.46291, -0.92582], rtol=1e-4)


def test_consistency_rewards_edge_cases():
    np.testing.assert_allclose(rw.consistency_rewards(0.5, [-1]), [-0.5])  # one judgment: 0.5 * -1 raw
    np.testing.assert_allclose(rw.consistency_rewards(0.5, [0]), [-2.0])  # one invalid judgment: -2 raw
    np.testing.assert_array_equal(rw.consistency_rewards(2.0, [1, 1, 1]), [0.0, 0.0, 0.0])  # all equal -> 0
    # R = 0: agreeing and disagreeing both earn 0, the invalid one -2: raw [0, 0, -2], mean -2/3,
    # std sqrt((4/9+4/9+16/9)/3) = 0.94281 -> [0.70711, 0.70711, -1.41421]
    np.testing.assert_allclose(rw.consistency_rewards(0.0, [1, -1, 0]), [0.70711, 0.70711, -1.41421], rtol=1e-4)


def test_episode_consistency_rewards():
    got = rw.episode_consistency_rewards([1.0, -2.0], [[1, -1], [1]])
    # step 0: raw [1, -1] -> z [1, -1];  step 1: one judgment -> raw -2 * 1 = -2
    np.testing.assert_allclose(got[0], [1.0, -1.0])
    np.testing.assert_allclose(got[1], [-2.0])
    with pytest.raises(ValueError, match="one step reward per judged step"):
        rw.episode_consistency_rewards([1.0], [[1], [1]])


def test_task_filters():
    assert [rw.policy_task_filter(s) for s in (0.0, 0.125, 0.5, 1.0)] == [False, True, True, False]
    assert [rw.reward_model_task_filter(s) for s in (0.19, 0.2, 0.5, 0.8, 0.81)] == [False, True, True, True, False]
    assert rw.reward_model_task_filter(0.1, low=0.0, high=0.1)
    with pytest.raises(ValueError, match="low <= high"):
        rw.reward_model_task_filter(0.5, low=0.8, high=0.2)
    with pytest.raises(ValueError, match="success_rate"):
        rw.policy_task_filter(1.5)


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
