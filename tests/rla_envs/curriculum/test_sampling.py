"""Sampling weights: pure functions over arrays, with hand-computed numbers."""

import numpy as np
import pytest

from rla_envs.curriculum.sampling import (cap_root_share, learnability_weights, mix, rank_weights, rlanything_weights,
                                          staleness_weights, uniform_weights)


def test_uniform_and_rlanything_weights():
    assert list(uniform_weights(4)) == [0.25] * 4
    assert list(rlanything_weights(5)) == [0.2] * 5
    with pytest.raises(ValueError, match="at least one task"):
        uniform_weights(0)


def test_mix():
    # 0.75 * [1, 0] + 0.25 * [0, 1]
    assert list(mix(np.array([1.0, 0.0]), np.array([0.0, 1.0]), 0.25)) == [0.75, 0.25]
    with pytest.raises(ValueError):
        mix([1.0], [1.0], 1.5)


def test_rank_weights_by_hand():
    scores = [0.2, 0.1, 0.2, 0.05]  # competition ranks 1, 3, 1, 4
    # temperature 1: 1, 1/3, 1, 1/4 -> sum 31/12
    expected = np.array([1, 1 / 3, 1, 1 / 4]) / (31 / 12)
    assert rank_weights(scores, 1.0) == pytest.approx(expected)
    # temperature 0.5: rank^-2 -> 1, 1/9, 1, 1/16 -> sum 313/144
    expected = np.array([1, 1 / 9, 1, 1 / 16]) / (313 / 144)
    assert rank_weights(scores, 0.5) == pytest.approx(expected)
    # a high temperature approaches uniform
    assert rank_weights(scores, 1e6) == pytest.approx([0.25] * 4, abs=1e-5)
    with pytest.raises(ValueError, match="temperature"):
        rank_weights(scores, 0.0)


def test_staleness_weights_by_hand():
    # ages 10, 5, 0 -> 10/15, 5/15, 0
    assert staleness_weights(np.array([0, 5, 10]), 10) == pytest.approx([2 / 3, 1 / 3, 0])
    assert staleness_weights(np.array([4, 4]), 4) == pytest.approx([0.5, 0.5])  # all fresh: uniform


def test_learnability_weights_by_hand():
    alpha, beta = np.array([1.0, 9.0]), np.array([1.0, 1.0])
    # scores 1/6 and 9/110 -> ranks 1, 2 -> temperature 1: [2/3, 1/3]
    # staleness: now 10, last seen 8 and 4 -> ages 2, 6 -> [0.25, 0.75]
    # 0.5 * [2/3, 1/3] + 0.5 * [0.25, 0.75] = [0.458333, 0.541667]
    weights = learnability_weights(alpha, beta, np.array([8, 4]), 10, np.array([False, False]),
                                   temperature=1.0, staleness_weight=0.5, fresh_share=0.2)
    assert weights == pytest.approx([0.458333333, 0.541666667])
    # task 0 never played: 0.8 * [0.458333, 0.541667] + 0.2 * [1, 0] = [0.566667, 0.433333]
    weights = learnability_weights(alpha, beta, np.array([8, 4]), 10, np.array([True, False]),
                                   temperature=1.0, staleness_weight=0.5, fresh_share=0.2)
    assert weights == pytest.approx([0.566666667, 0.433333333])


def test_learnability_prefers_tasks_near_one_half():
    # known p ~ 0.5 (Beta(20, 20)) beats known p ~ 0.95 (Beta(38, 2)) and p ~ 0.05
    weights = learnability_weights(np.array([20.0, 38.0, 2.0]), np.array([20.0, 2.0, 38.0]),
                                   np.array([0, 0, 0]), 0, np.zeros(3, bool), temperature=0.3,
                                   staleness_weight=0.0, fresh_share=0.0)
    assert weights[0] > 0.8 and weights[1] == pytest.approx(weights[2])


def test_cap_root_share_by_hand():
    # root 0 holds 0.7 -> cut to 0.4; the 0.6 left goes to the others in proportion (equal here)
    assert cap_root_share([0.7, 0.1, 0.1, 0.1], [0, 1, 2, 3], 0.4) == pytest.approx([0.4, 0.2, 0.2, 0.2])
    # two tasks share root 0 (mass 0.7 -> 0.5, split 5:2 -> 0.357, 0.143); roots 1, 2 get 0.5 * (2:1)
    weights = cap_root_share([0.5, 0.2, 0.2, 0.1], ["a", "a", "b", "c"], 0.5)
    assert weights == pytest.approx([0.5 * 5 / 7, 0.5 * 2 / 7, 1 / 3, 1 / 6])
    # capping root 0 pushes root 1 over the cap; the rest is shared by the zero-weight roots equally
    assert cap_root_share([0.7, 0.3, 0.0, 0.0], [0, 1, 2, 3], 0.3) == pytest.approx([0.3, 0.3, 0.2, 0.2])
    # an infeasible cap (0.1 * 4 roots < 1) is raised to 1/4: uniform over roots
    assert cap_root_share([0.7, 0.1, 0.1, 0.1], [0, 1, 2, 3], 0.1) == pytest.approx([0.25] * 4)
    # a cap that binds nowhere changes nothing
    assert cap_root_share([0.3, 0.3, 0.4], [0, 1, 2], 0.5) == pytest.approx([0.3, 0.3, 0.4])
