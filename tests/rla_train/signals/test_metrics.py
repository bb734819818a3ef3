"""Reward-model and success-rate metrics, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from rla_train.signals import metrics as m


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


# the same matrix as tests/rla_train/signals/test_rewards.py: p0, p1 correct; p2, p3 wrong; t0..t2 correct tests
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


def test_balanced_accuracy():
    predicted = [True, True, False, True, False, True]
    labels = [True, True, True, False, False, None]
    # good steps 0-2: predicted good twice -> recall 2/3; bad steps 3-4: step 4 right -> 1/2; step 5 unlabelled
    # (2/3 + 1/2) / 2 = 7/12 = 0.5833 (plain accuracy would be 3/5 = 0.6)
    assert m.balanced_accuracy(predicted, labels) == pytest.approx(7 / 12)
    # a judge that always says "good" scores 0.5 however rare bad steps are (plain accuracy: 9/10)
    assert m.balanced_accuracy([True] * 10, [True] * 9 + [False]) == 0.5
    assert m.balanced_accuracy([False, True], [False, True]) == 1.0
    assert m.balanced_accuracy([True, True], [True, None]) is None  # no bad step: undefined, not 1.0
    assert m.balanced_accuracy([], []) is None
    with pytest.raises(ValueError, match="one label per prediction"):
        m.balanced_accuracy([True], [True, False])


def test_roc_auc():
    # pairs (good, bad): (0.9, 0.4) 1, (0.9, 0.1) 1, (0.4, 0.4) tie 0.5, (0.4, 0.1) 1 -> 3.5 / 4 = 0.875
    assert m.roc_auc([0.9, 0.4, 0.4, 0.1], [True, True, False, False]) == pytest.approx(0.875)
    assert m.roc_auc([0.1, 0.9, 0.5], [True, False, None]) == 0.0  # reversed; the unlabelled step is skipped
    assert m.roc_auc([0.3] * 4, [True, False, True, False]) == 0.5  # all tied: no information
    # 3 good (0.8, 0.6, 0.2) vs 2 bad (0.7, 0.1): 0.8 beats 2, 0.6 beats 1, 0.2 beats 1 -> 4 / 6
    assert m.roc_auc([0.8, 0.7, 0.6, 0.2, 0.1], [True, False, True, True, False]) == pytest.approx(4 / 6)
    assert m.roc_auc([0.5, 0.7], [True, True]) is None
    with pytest.raises(ValueError, match="finite"):
        m.roc_auc([float("nan"), 0.1], [True, False])


def test_balanced_accuracy_interval():
    # Wilson 5/10: centre 0.5, half-width 1.96 * sqrt(0.025 + 3.8416/400) / 1.38416 = 0.263413, so each recall's
    # variance is (0.263413 / 1.96)^2 = 0.018062; the mean of two: sqrt(2 * 0.018062 / 4) = 0.095032 -> ± 0.186262
    low, high = m.balanced_accuracy_interval(5, 10, 5, 10)
    assert (low, high) == (pytest.approx(0.313738, abs=1e-5), pytest.approx(0.686262, abs=1e-5))
    narrow = m.balanced_accuracy_interval(50, 100, 50, 100)
    assert narrow[1] - narrow[0] < high - low  # more steps, narrower
    assert m.balanced_accuracy_interval(10, 10, 10, 10)[1] == 1.0  # clipped to [0, 1]
    with pytest.raises(ValueError, match="each class"):
        m.balanced_accuracy_interval(3, 3, 0, 0)


def test_auc_interval():
    # A = 0.5, 10 good and 10 bad: Q1 = Q2 = 1/3, SE^2 = (0.25 + 9 * (1/12) + 9 * (1/12)) / 100 = 0.0175,
    # SE = 0.132288, 1.96 * SE = 0.259284
    low, high = m.auc_interval(0.5, 10, 10)
    assert (low, high) == (pytest.approx(0.240716, abs=1e-5), pytest.approx(0.759284, abs=1e-5))
    assert m.auc_interval(1.0, 5, 5) == (1.0, 1.0)  # SE 0 at a perfect ranking (Hanley-McNeil's known edge)
    with pytest.raises(ValueError):
        m.auc_interval(0.5, 0, 4)


def test_paired_improvement_is_the_exact_one_sided_mcnemar():
    from rla_train.signals.metrics import paired_improvement

    before = [0, 0, 0, 1, 1, 0, 1]
    after = [1, 1, 0, 1, 0, 1, 1]
    # improved: episodes 0, 1, 5 (3); worsened: episode 4 (1); P(X >= 3 | n=4, 1/2) = (4 + 1) / 16 = 0.3125
    assert paired_improvement(before, after) == {"episodes": 7, "improved": 3, "worsened": 1, "p_one_sided": 0.3125}
    # 10 improved, 2 worsened: P(X >= 10 | 12) = (66 + 12 + 1) / 4096 = 0.019287...
    result = paired_improvement([0] * 10 + [1, 1] + [1] * 5, [1] * 10 + [0, 0] + [1] * 5)
    assert result["p_one_sided"] == 79 / 4096
    assert paired_improvement([1, 0], [1, 0])["p_one_sided"] == 1.0  # nothing changed
    assert paired_improvement([0, 0], [0, 1])["p_one_sided"] == 0.5
    import pytest

    with pytest.raises(ValueError, match="same episodes"):
        paired_improvement([0], [0, 1])
