"""The per-step learning measurements: the judge's balanced accuracy on the policy's steps, and how far an update
moved a choice policy (numbers worked out by hand)."""

from __future__ import annotations

import math

import pytest

from rla_train.signals.metrics import verdict_balanced_accuracy, vote_balanced_accuracy, vote_class_rates
from rla_train.signals.policy_shift import categorical_kl, chosen_probability_change, mean_choice_kl


def test_vote_balanced_accuracy_counts_every_vote_and_unparseable_ones_as_wrong():
    # good steps: 3 of 4 votes +1; the bad step: 1 of 2 votes -1 (the 0 is wrong): (0.75 + 0.5)/2 = 0.625
    assert vote_balanced_accuracy([[1, 1], [-1, 0], [1, -1]], [True, False, True]) == pytest.approx(0.625)
    # undetermined steps are left out: the same with a None step added
    assert vote_balanced_accuracy([[1, 1], [-1, 0], [-1, -1], [1, -1]], [True, False, None, True]) == \
        pytest.approx(0.625)
    # a judge that always says +1: recall 1 on good, 0 on bad = 0.5, whatever the share of good steps
    assert vote_balanced_accuracy([[1]] * 9 + [[1]], [True] * 9 + [False]) == 0.5
    # all-unparseable votes are wrong on both classes: 0.0
    assert vote_balanced_accuracy([[0, 0], [0, 0]], [True, False]) == 0.0
    assert vote_balanced_accuracy([[1], [1]], [True, True]) is None  # no bad step: undefined
    assert vote_balanced_accuracy([[1], []], [True, False]) is None  # a class without a vote
    with pytest.raises(ValueError, match="one label per vote list"):
        vote_balanced_accuracy([[1]], [True, False])


def test_verdict_balanced_accuracy_takes_the_majority_and_counts_ties_as_wrong():
    # majorities +1, 0 (tie), -1, +1: good 1 of 2, bad 1 of 2 right: (0.5 + 0.5)/2 = 0.5
    assert verdict_balanced_accuracy([[1, 1, -1], [1, -1, 0], [-1, -1, 1], [1, 1, 1]],
                                     [True, True, False, False]) == 0.5
    # good 2 of 2, bad 2 of 3 (the [0, 0, 0] step has no verdict): (1 + 2/3)/2 = 0.8333
    assert verdict_balanced_accuracy([[1, 1, -1], [1, 0, 0], [-1, -1, 1], [-1, 0, 0], [0, 0, 0]],
                                     [True, True, False, False, False]) == pytest.approx(5 / 6)
    # one vote per step: the verdict is the vote
    assert verdict_balanced_accuracy([[1], [-1], [1]], [True, False, False]) == pytest.approx((1 + 0.5) / 2)
    assert verdict_balanced_accuracy([[1]], [None]) is None


def test_categorical_kl_by_hand():
    # p = (1/2, 1/2), q = (1/4, 3/4): 0.5 ln 2 + 0.5 ln(2/3) = 0.5 ln(4/3) = 0.14384
    p, q = [math.log(0.5)] * 2, [math.log(0.25), math.log(0.75)]
    assert categorical_kl(p, q) == pytest.approx(0.5 * math.log(4 / 3), rel=1e-12)
    # q || p: 0.25 ln(0.5) + 0.75 ln(1.5) = 0.13081 (KL is not symmetric)
    assert categorical_kl(q, p) == pytest.approx(0.25 * math.log(0.5) + 0.75 * math.log(1.5), rel=1e-12)
    assert categorical_kl(p, p) == 0.0
    # a candidate without mass before adds nothing: p = (1, 0), q = (0.5, 0.5): ln 2
    assert categorical_kl([0.0, -math.inf], [math.log(0.5)] * 2) == pytest.approx(math.log(2))
    # the mean over two states: (0.14384 + 0) / 2
    assert mean_choice_kl([p, p], [q, p]) == pytest.approx(0.25 * math.log(4 / 3), rel=1e-12)
    assert mean_choice_kl([], []) is None
    with pytest.raises(ValueError, match="summing to 1"):
        categorical_kl([0.0, 0.0], [math.log(0.5)] * 2)
    with pytest.raises(ValueError, match="same candidates"):
        categorical_kl([0.0], [math.log(0.5)] * 2)


def test_chosen_probability_change_split_by_the_sign_of_the_advantage():
    # 0.5 -> 0.6 (A = +1), 0.2 -> 0.1 (A = -1), 0.4 -> 0.4 (A = +2): all (0.1 - 0.1 + 0)/3 = 0,
    # positive (0.1 + 0)/2 = 0.05, negative -0.1
    log = math.log
    change = chosen_probability_change([log(0.5), log(0.2), log(0.4)], [log(0.6), log(0.1), log(0.4)], [1, -1, 2])
    assert change["all"] == pytest.approx(0.0, abs=1e-12)
    assert change["positive_advantage"] == pytest.approx(0.05)
    assert change["negative_advantage"] == pytest.approx(-0.1)
    assert chosen_probability_change([log(0.5)], [log(0.7)], [1.0])["negative_advantage"] is None
    with pytest.raises(ValueError, match="one value per sample"):
        chosen_probability_change([0.0], [0.0, 0.0], [1.0])


def test_vote_class_rates_say_where_the_votes_err():
    # good steps: 3 of 4 votes say good; the bad step: 1 of 2 says good; the undetermined step is skipped
    rates = vote_class_rates([[1, 1], [1, 0], [1, 1], [1, -1]], [True, False, None, True])
    assert rates == {"good_recall": 0.75, "false_good_rate": 0.5}
    # an unparseable vote is not "good": it lowers the recall and never raises the false-good rate
    assert vote_class_rates([[0, 1], [0, -1]], [True, False]) == {"good_recall": 0.5, "false_good_rate": 0.0}
    # both rates give the balanced accuracy when no vote is unparseable: (recall + 1 - false-good) / 2
    votes, labels = [[1, -1, 1], [-1, -1, 1], [1, 1, 1], [-1, -1, -1]], [True, False, True, False]
    rates = vote_class_rates(votes, labels)
    assert (rates["good_recall"] + 1 - rates["false_good_rate"]) / 2 == pytest.approx(vote_balanced_accuracy(votes, labels))
    assert vote_class_rates([[1], [1]], [True, True]) == {"good_recall": 1.0, "false_good_rate": None}
    with pytest.raises(ValueError, match="one label per vote list"):
        vote_class_rates([[1]], [True, False])
