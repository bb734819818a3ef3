"""When to rewrite and whether to keep a rewrite: the released rule exactly, ours with worked numbers."""

from math import comb

import numpy as np
import pytest

from rla_envs.curriculum.acceptance import (accept_rewrite, acceptance_probability, rewrite_direction,
                                            rlanything_accepts, rlanything_direction)


@pytest.mark.parametrize("success_rate, expected", [
    (1.0, "harder"), (0.875, "harder"), (0.8, "harder"),  # >= 0.8, edge included
    (0.79, None), (0.5, None), (0.25, None), (0.21, None),
    (0.2, "easier"), (0.125, "easier"), (0.0, "easier"),  # <= 0.2, edge included
])
def test_rlanything_direction_released_thresholds(success_rate, expected):
    assert rlanything_direction(success_rate) == expected


def test_rlanything_direction_custom_thresholds():
    assert rlanything_direction(0.7, alpha_low=0.3, alpha_high=0.7) == "harder"
    assert rlanything_direction(0.3, alpha_low=0.3, alpha_high=0.7) == "easier"
    assert rlanything_direction(0.69, alpha_low=0.3, alpha_high=0.7) is None


@pytest.mark.parametrize("direction, old_rate, new_rate, expected", [
    # harder: 0.2 <= new < old
    ("harder", 1.0, 0.875, True), ("harder", 1.0, 0.2, True), ("harder", 0.875, 0.5, True),
    ("harder", 1.0, 1.0, False),    # not below old
    ("harder", 0.875, 0.875, False),
    ("harder", 1.0, 0.125, False),  # overshoot below 0.2
    ("harder", 1.0, 0.0, False),    # never 0
    # easier: old < new <= 0.8
    ("easier", 0.0, 0.125, True), ("easier", 0.0, 0.8, True), ("easier", 0.125, 0.5, True),
    ("easier", 0.125, 0.125, False),  # not above old
    ("easier", 0.0, 0.875, False),    # overshoot above 0.8
    ("easier", 0.0, 0.0, False),      # never 0
    ("easier", 0.25, 0.2, False),
])
def test_rlanything_accepts_released_conditions(direction, old_rate, new_rate, expected):
    assert rlanything_accepts(direction, old_rate, new_rate) is expected


def test_rlanything_never_accepts_zero_even_with_a_zero_floor():
    assert rlanything_accepts("harder", 0.5, 0.0, alpha_low=0.0) is False
    assert rlanything_accepts("harder", 0.5, 0.25, alpha_low=0.0) is True


def test_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="'harder' or 'easier'"):
        rlanything_accepts("sideways", 0.5, 0.5)
    with pytest.raises(ValueError, match="'harder' or 'easier'"):
        accept_rewrite("up", 1, 16, 1, 16)


def test_rewrite_direction_from_a_confident_posterior():
    # Beta(1, 11): P(p < 0.2) = 1 - 0.8^11 = 0.914 >= 0.9 -> easier
    assert rewrite_direction(1, 11, episodes=10) == "easier"
    # Beta(1, 10): P(p < 0.2) = 1 - 0.8^10 = 0.893 < 0.9 -> leave it
    assert rewrite_direction(1, 10, episodes=10) is None
    # Beta(11, 1): P(p > 0.8) = 1 - 0.8^11 = 0.914 -> harder
    assert rewrite_direction(11, 1, episodes=10) == "harder"
    # too few observations: wait, however confident
    assert rewrite_direction(1, 11, episodes=7, min_observations=8) is None
    assert rewrite_direction(5, 5, episodes=100) is None


def test_rewrite_direction_from_zero_variance_streaks():
    # two all-fail groups in a row trigger "easier" even before min_observations
    assert rewrite_direction(1, 3, episodes=2, zero_variance_streak=2, zero_variance_kind="all_fail") == "easier"
    assert rewrite_direction(3, 1, episodes=2, zero_variance_streak=2, zero_variance_kind="all_pass") == "harder"
    assert rewrite_direction(3, 1, episodes=2, zero_variance_streak=1, zero_variance_kind="all_pass") is None
    assert rewrite_direction(3, 1, episodes=2, zero_variance_streak=5, zero_variance_kind="all_pass",
                             zero_variance_repeats=0) is None  # 0 turns it off


@pytest.mark.parametrize("args, reason", [
    # harder, 16/16 -> 8/16: move 0.5, P(moved) 0.9995, child mean 9/18 = 0.5
    (("harder", 16, 16, 8, 16), "accepted"),
    # 13/16 -> 9/16: move 0.25, P(moved) 0.93 >= 0.9, mean 10/18 = 0.56
    (("harder", 13, 16, 9, 16), "accepted"),
    # 13/16 -> 10/16: move 0.1875 >= 0.15 but P(moved) 0.87 < 0.9
    (("harder", 13, 16, 10, 16), "move_not_significant"),
    # 14/16 -> 12/16: move 0.125 < 0.15
    (("harder", 14, 16, 12, 16), "move_below_margin"),
    # 16/16 -> 2/16: moved far, but child mean 3/18 = 0.167 < 0.2 (overshoot)
    (("harder", 16, 16, 2, 16), "child_outside_band"),
    # 16/16 -> 3/16: child mean 4/18 = 0.222 is in the band
    (("harder", 16, 16, 3, 16), "accepted"),
    (("harder", 16, 16, 0, 16), "child_never_succeeds"),
    # easier, 0/16 -> 4/16: move 0.25, P(moved) 0.978, mean 5/18 = 0.278
    (("easier", 0, 16, 4, 16), "accepted"),
    # 2/16 -> 5/16: move 0.1875, P(moved) 0.888 < 0.9
    (("easier", 2, 16, 5, 16), "move_not_significant"),
    # 1/16 -> 14/16: mean 15/18 = 0.833 > 0.8 (overshoot)
    (("easier", 1, 16, 14, 16), "child_outside_band"),
    # moved the wrong way
    (("easier", 4, 16, 2, 16), "move_below_margin"),
])
def test_accept_rewrite_worked_examples(args, reason):
    decision = accept_rewrite(*args)
    assert decision.reason == reason
    assert decision.accepted is (reason == "accepted")


def test_accept_rewrite_evidence_and_input_checks():
    evidence = accept_rewrite("harder", 13, 16, 9, 16).evidence
    assert evidence["move"] == pytest.approx(0.25) and evidence["p_moved"] == pytest.approx(0.9295, abs=1e-3)
    assert evidence["child_posterior_mean"] == pytest.approx(10 / 18)
    with pytest.raises(ValueError, match="successes <= rollouts"):
        accept_rewrite("harder", 17, 16, 9, 16)


def test_acceptance_probability_matches_a_simulation():
    exact = acceptance_probability("harder", 0.9, 0.6)
    rng = np.random.default_rng(0)
    parent, child = rng.binomial(16, 0.9, 4000), rng.binomial(16, 0.6, 4000)
    simulated = np.mean([accept_rewrite("harder", int(p), 16, int(c), 16).accepted for p, c in zip(parent, child)])
    assert simulated == pytest.approx(exact, abs=0.025)


def test_our_rule_meets_the_issue_bars_at_default_rollouts():
    """Null rewrites <= 0.10 where the trigger fires; real moves of >= 0.3 into the band >= 0.80 on average."""
    parents_triggering = np.r_[np.linspace(0.0, 0.25, 26), np.linspace(0.75, 1.0, 26)]
    null = [acceptance_probability("harder" if p >= 0.5 else "easier", p, p) for p in parents_triggering]
    assert max(null) <= 0.10
    # anywhere (even parents in the band that never trigger) the null acceptance stays below 0.11
    assert max(acceptance_probability("harder", p, p) for p in np.linspace(0, 1, 51)) <= 0.11
    moves = [acceptance_probability("harder", p, c)
             for p in np.linspace(0.8, 1.0, 11) for c in np.linspace(0.2, p - 0.3, 8)]
    moves += [acceptance_probability("easier", p, c)
              for p in np.linspace(0.0, 0.2, 11) for c in np.linspace(p + 0.3, 0.8, 8)]
    assert np.mean(moves) >= 0.80


def test_released_rule_accepts_null_rewrites_often():
    """The weakness the issue computes: the same 8 rollouts that triggered serve as 'old'."""
    # parent p = 0.9 triggered by 8/8 (old = 1.0); an identical child is accepted if 0.2 <= new < 1:
    # P(new < 1) = 1 - 0.9^8 = 0.570 (and P(new < 0.2) is ~0)
    pmf = [comb(8, k) * 0.9**k * 0.1 ** (8 - k) for k in range(9)]
    accepted = sum(pmf[k] for k in range(9) if rlanything_accepts("harder", 1.0, k / 8))
    assert accepted == pytest.approx(1 - 0.9**8, abs=1e-6)
