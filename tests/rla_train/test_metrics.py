"""Reward-model and success-rate metrics, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from rla_train import metrics as m


def test_majority_vote():
    assert m.majority_vote([1, 1, -1]) == 1
    assert m.majority_vote([-1, 0]) == -1  # unparseable votes abstain
    assert m.majority_vote([1, 0, 0]) == 1
    assert m.majority_vote([1, -1]) == 0  # tie
    assert m.majority_vote([0, 0]) == 0
    assert m.majority_vote([]) == 0
    with pytest.raises(ValueError):
        m.majority_vote([3])


def test_process_accuracy():
    votes = [[1, 1, -1], [-1, -1, 1], [1, -1], [1, 1, 1]]
    labels = [True, True, False, None]
    # step 0: +1 = good -> right; step 1: -1 vs good -> wrong; step 2: tie -> wrong; step 3 unlabelled -> 1/3
    assert m.process_accuracy(votes, labels) == pytest.approx(1 / 3)
    assert m.process_accuracy([[-1], [1]], [False, True]) == 1.0
    assert m.process_accuracy([[1]], [None]) is None
    with pytest.raises(ValueError, match="one label per judged step"):
        m.process_accuracy([[1]], [True, False])


def test_outcome_accuracy():
    episodes = [[[1, 1], [-1]], [[1, -1]], [[-1, -1, 0]]]
    # means: 1/3 > 0 -> won (won: right); 0 -> not won (lost: right); -2/3 -> not won (won: wrong) -> 2/3
    assert m.outcome_accuracy(episodes, [True, False, True]) == pytest.approx(2 / 3)
    assert m.outcome_accuracy([], []) is None
    with pytest.raises(ValueError):
        m.outcome_accuracy(episodes, [True])


def test_ut_accuracy():
    assert m.ut_accuracy([True, False, None, True]) == pytest.approx(2 / 3)  # 2 of the 3 determined
    assert m.ut_accuracy([None, None]) is None


# the same matrix as tests/rla_train/test_rewards.py: p0, p1 correct; p2, p3 wrong; t0..t2 correct tests
PASSES = [[1, 1, 1, 1, 0],
          [1, 1, 1, 0, 0],
          [1, 0, 0, 1, 0],
          [1, 1, 0, 1, 1]]
CORRECT = [True, True, False, False]
TESTS = [True, True, True, False, False]


def test_detect_rate():
    # p2 fails t1 and t2, p3 fails t2 (both correct tests) -> 2/2
    assert m.detect_rate(PASSES, CORRECT, TESTS) == 1.0
    # keep tests t0, t1, t3: p2 fails t1 (caught); p3 passes all three, and t3 is not a correct test -> 1/2
    sub = [[row[0], row[1], row[3]] for row in PASSES]
    assert m.detect_rate(sub, CORRECT, [True, True, False]) == 0.5
    # no correct test is known -> nobody is caught
    assert m.detect_rate(PASSES, CORRECT, [None] * 5) == 0.0
    assert m.detect_rate(PASSES[:2], CORRECT[:2], TESTS) is None  # no wrong program
    with pytest.raises(ValueError, match="programs x tests"):
        m.detect_rate(PASSES, CORRECT, TESTS[:2])


def test_wilson_interval():
    # 8/10, z=1.96: z^2=3.8416, denominator 1+0.38416 = 1.38416, centre (0.8+0.19208)/1.38416 = 0.71674,
    # half 1.96*sqrt(0.016+0.009604)/1.38416 = 0.22658 -> (0.49016, 0.94332)
    low, high = m.wilson_interval(8, 10)
    assert (low, high) == (pytest.approx(0.49016, abs=1e-4), pytest.approx(0.94332, abs=1e-4))
    # 0/10: centre 0.19208/1.38416 = 0.13877 = half -> (0, 0.27755)
    low, high = m.wilson_interval(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.27755, abs=1e-4)
    assert m.wilson_interval(0, 0) == (0.0, 1.0)
    assert m.wilson_interval(10, 10)[1] == 1.0 and m.wilson_interval(0, 10)[0] == 0.0  # exact at the edges
    summary = m.success_summary([True, False, True, True], [3, 50, 5, 4])
    assert summary["success_rate"] == 0.75 and summary["won"] == 3 and summary["mean_steps"] == 15.5
    assert summary["ci_low"] < 0.75 < summary["ci_high"]
    with pytest.raises(ValueError, match="successes <= n"):
        m.wilson_interval(11, 10)
