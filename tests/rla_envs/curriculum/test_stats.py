"""Beta posterior with decay, counts and zero-variance streaks: numbers worked out by hand."""

import random

import pytest

from rla_envs.curriculum.stats import (TaskStats, beta_cdf, beta_mean, decayed_update, expected_learnability, observe,
                                       observe_group, prob_greater)


def test_decayed_update_scales_old_evidence_above_the_prior():
    # decay 1 is the plain conjugate update: (1, 1) + success -> (2, 1)
    assert decayed_update(1.0, 1.0, 1.0, decay=1.0) == (2.0, 1.0)
    # (3, 1) holds 2 successes of evidence; decay 0.5 halves it, then a failure:
    # alpha = 1 + 0.5 * (3 - 1) + 0 = 2 ; beta = 1 + 0.5 * (1 - 1) + 1 = 2
    assert decayed_update(3.0, 1.0, 0.0, decay=0.5) == (2.0, 2.0)
    # prior (2, 2), state (4, 2), decay 0.5, a half success 0.5:
    # alpha = 2 + 0.5 * 2 + 0.5 = 3.5 ; beta = 2 + 0.5 * 0 + 0.5 = 2.5
    assert decayed_update(4.0, 2.0, 0.5, decay=0.5, prior_alpha=2.0, prior_beta=2.0) == (3.5, 2.5)


def test_decayed_update_refuses_outcomes_outside_0_1():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        decayed_update(1.0, 1.0, 2.0, decay=1.0)


def test_evidence_saturates_at_one_over_one_minus_decay():
    alpha, beta = 1.0, 1.0
    for _ in range(500):
        alpha, beta = decayed_update(alpha, beta, 1.0, decay=0.95)
    # evidence above the prior -> 1 / (1 - 0.95) = 20 successes, 0 failures
    assert alpha == pytest.approx(21.0) and beta == pytest.approx(1.0)


def test_observe_counts_last_seen_and_window():
    stats = TaskStats()
    for episode, success in enumerate([1, 0, 1, 1], start=1):
        stats = observe(stats, success, episode, decay=1.0, window=3)
    assert (stats.alpha, stats.beta) == (4.0, 2.0)  # 1 + 3 successes, 1 + 1 failure
    assert stats.episodes == 4 and stats.successes == 3.0 and stats.last_seen == 4
    assert stats.recent == (0.0, 1.0, 1.0)  # the last 3 outcomes
    assert stats.recent_success_rate == pytest.approx(2 / 3)
    assert stats.mean == pytest.approx(4 / 6)


def test_zero_variance_streaks():
    stats = observe_group(TaskStats(), [0, 0, 0])
    assert (stats.zero_variance_streak, stats.zero_variance_kind, stats.groups) == (1, "all_fail", 1)
    stats = observe_group(stats, [0.0, 0.0])
    assert (stats.zero_variance_streak, stats.zero_variance_kind) == (2, "all_fail")
    stats = observe_group(stats, [1, 1])  # a different kind starts a new streak
    assert (stats.zero_variance_streak, stats.zero_variance_kind) == (1, "all_pass")
    stats = observe_group(stats, [1, 0, 1])
    assert (stats.zero_variance_streak, stats.zero_variance_kind, stats.groups) == (0, None, 4)
    stats = observe_group(stats, [1])  # one outcome says nothing about variance
    assert (stats.zero_variance_streak, stats.groups) == (0, 5)


def test_stats_round_trip_through_dict():
    stats = observe(TaskStats(), 1, 3, decay=0.9)
    assert TaskStats.from_dict(stats.to_dict()) == stats


def test_expected_learnability_by_hand():
    # alpha beta / ((alpha + beta) (alpha + beta + 1))
    assert expected_learnability(1, 1) == pytest.approx(1 / 6)  # 1 / (2 * 3)
    assert expected_learnability(2, 2) == pytest.approx(0.2)  # 4 / (4 * 5)
    assert expected_learnability(1, 3) == pytest.approx(0.15)  # 3 / (4 * 5)
    assert list(expected_learnability([1, 1000], [1, 1])) == pytest.approx([1 / 6, 1000 / (1001 * 1002)])
    assert beta_mean(3, 1) == 0.75


@pytest.mark.parametrize("x, alpha, beta, expected", [
    (0.3, 1, 1, 0.3),                      # uniform: x
    (0.5, 2, 1, 0.25),                     # x^2
    (0.3, 1, 2, 0.51),                     # 1 - (1 - x)^2 = 1 - 0.49
    (0.2, 2, 2, 0.104),                    # 3x^2 - 2x^3 = 0.12 - 0.016
    (0.2, 1, 11, 1 - 0.8 ** 11),           # 1 - (1 - x)^11 = 0.91410...
    (0.8, 11, 1, 0.8 ** 11),               # x^11 = 0.08590...
    (0.0, 3, 4, 0.0), (1.0, 3, 4, 1.0),
])
def test_beta_cdf_closed_forms(x, alpha, beta, expected):
    assert beta_cdf(x, alpha, beta) == pytest.approx(expected, abs=1e-12)


def test_beta_cdf_matches_scipy_on_fractional_parameters():
    special = pytest.importorskip("scipy.special")
    rng = random.Random(0)
    for _ in range(300):
        alpha, beta, x = rng.uniform(0.3, 60), rng.uniform(0.3, 60), rng.random()
        assert beta_cdf(x, alpha, beta) == pytest.approx(special.betainc(alpha, beta, x), abs=1e-10)


def test_beta_cdf_rejects_bad_parameters():
    with pytest.raises(ValueError, match="> 0"):
        beta_cdf(0.5, 0, 1)


def test_prob_greater_by_hand():
    assert prob_greater(1, 1, 1, 1) == pytest.approx(0.5, abs=1e-12)  # same law
    assert prob_greater(7, 3, 7, 3) == pytest.approx(0.5, abs=1e-12)
    # X ~ Beta(2,1), Y uniform: P(X > Y) = E[X] = 2/3
    assert prob_greater(2, 1, 1, 1) == pytest.approx(2 / 3, abs=1e-5)
    # X ~ Beta(2,1) (pdf 2x), Y ~ Beta(1,2) (cdf 2y - y^2): integral 2x (2x - x^2) = 4/3 - 1/2 = 5/6
    assert prob_greater(2, 1, 1, 2) == pytest.approx(5 / 6, abs=1e-5)
    assert prob_greater(1, 2, 2, 1) == pytest.approx(1 / 6, abs=1e-5)
