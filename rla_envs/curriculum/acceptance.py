"""When to rewrite a task, and whether to keep the rewrite: the released RLAnything rule and ours.

All functions are pure (numbers in, decision out).

**Released rule** (faithful). The success rate over the step's rollouts (8 by default) decides:
``>= alpha_high`` (0.8) -> rewrite harder, ``<= alpha_low`` (0.2) -> rewrite easier. The child is
accepted if, measured next step, harder: ``alpha_low <= new < old``; easier: ``old < new <= alpha_high``;
a new rate of 0 is never accepted. ``old`` is the rate of the same rollouts that triggered the rewrite,
so it is biased towards the extreme (selection on noise): a child identical to its parent is accepted
25-79 % of the time (see ``benchmarks/perf/curriculum.py``).

**Our rule.** Trigger (:func:`rewrite_direction`): after ``min_observations`` outcomes, the task's Beta
posterior says ``P(p < alpha_low) >= confidence`` (easier) or ``P(p > alpha_high) >= confidence``
(harder); or ``zero_variance_repeats`` groups in a row were all-fail (easier) / all-pass (harder).
Acceptance (:func:`accept_rewrite`): parent and child are measured **fresh** with the same policy (16
rollouts each by default), and the child is kept only if all of

1. it succeeded at least once (never 0, as in the release);
2. the observed move in the intended direction is at least ``margin`` (0.15);
3. the move is significant: ``P(p_child < p_parent | data) >= accept_confidence`` (harder; the mirror
   for easier) under independent Beta(1 + successes, 1 + failures) posteriors;
4. the child lands in the band: its posterior mean ``(s + 1) / (n + 2)`` lies in ``[alpha_low, alpha_high]``
   (the posterior mean rather than the raw rate, so that a child whose true rate sits on the band edge is
   not rejected half the time by noise alone).

Trade-off (exact binomial sums at 16 + 16 rollouts, margin 0.15, computed by
:func:`acceptance_probability`): with ``accept_confidence = 0.9`` (default) a null rewrite (child ==
parent) is accepted at most 0.106 for any parent rate (the worst case, p ≈ 0.53, is a parent that is
never triggered) and at most 0.09 for parents at p >= 0.75 or <= 0.25 where the trigger fires; real moves
of >= 0.3 into the band are accepted 0.86 on average (0.70 for a move of exactly 0.3 from the band edge).
``0.95`` halves false accepts (<= 0.054) but accepts only 0.82 / 0.56 of real moves; ``0`` (margin only)
accepts up to 0.19 of null rewrites. More rollouts improve both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import comb

import numpy as np

from rla_envs.curriculum.stats import beta_cdf, prob_greater

__all__ = [
    "rlanything_direction",
    "rlanything_accepts",
    "rewrite_direction",
    "accept_rewrite",
    "AcceptanceDecision",
    "acceptance_probability",
    "REJECTION_REASONS",
]

REJECTION_REASONS = ("child_never_succeeds", "move_below_margin", "move_not_significant", "child_outside_band")


def _check_direction(direction: str) -> None:
    if direction not in ("harder", "easier"):
        raise ValueError(f"direction must be 'harder' or 'easier', got {direction!r}")


def rlanything_direction(success_rate: float, alpha_low: float = 0.2, alpha_high: float = 0.8) -> str | None:
    """The released trigger: ``"harder"`` if ``success_rate >= alpha_high``, ``"easier"`` if ``<= alpha_low``, else None."""
    if success_rate >= alpha_high:
        return "harder"
    if success_rate <= alpha_low:
        return "easier"
    return None


def rlanything_accepts(direction: str, old_rate: float, new_rate: float,
                       alpha_low: float = 0.2, alpha_high: float = 0.8) -> bool:
    """The released acceptance: harder ``alpha_low <= new < old``; easier ``old < new <= alpha_high``; never new == 0."""
    _check_direction(direction)
    if new_rate == 0:
        return False
    if direction == "harder":
        return alpha_low <= new_rate < old_rate
    return old_rate < new_rate <= alpha_high


def rewrite_direction(alpha: float, beta: float, episodes: int, zero_variance_streak: int = 0,
                      zero_variance_kind: str | None = None, *, alpha_low: float = 0.2, alpha_high: float = 0.8,
                      min_observations: int = 8, confidence: float = 0.9,
                      zero_variance_repeats: int = 2) -> str | None:
    """Our trigger: the direction a task should be rewritten in, or None to leave it alone.

    ``"easier"`` when, after ``min_observations`` outcomes, P(p < alpha_low) >= ``confidence`` under
    Beta(alpha, beta), or the last ``zero_variance_repeats`` groups all failed; ``"harder"`` for the
    mirror case (P(p > alpha_high), all passed).
    """
    if zero_variance_repeats > 0 and zero_variance_streak >= zero_variance_repeats:
        if zero_variance_kind == "all_fail":
            return "easier"
        if zero_variance_kind == "all_pass":
            return "harder"
    if episodes < min_observations:
        return None
    if beta_cdf(alpha_low, alpha, beta) >= confidence:
        return "easier"
    if 1.0 - beta_cdf(alpha_high, alpha, beta) >= confidence:
        return "harder"
    return None


@dataclass(frozen=True)
class AcceptanceDecision:
    """Whether a measured rewrite is kept, why, and the numbers behind it (JSON-ready ``evidence``)."""

    accepted: bool
    reason: str
    evidence: dict = field(default_factory=dict)


def accept_rewrite(direction: str, parent_successes: int, parent_rollouts: int, child_successes: int,
                   child_rollouts: int, *, alpha_low: float = 0.2, alpha_high: float = 0.8, margin: float = 0.15,
                   accept_confidence: float = 0.9) -> AcceptanceDecision:
    """Our acceptance rule for a child measured fresh beside its parent (see the module doc for the four checks).

    ``reason`` is ``"accepted"`` or the first failed check, one of :data:`REJECTION_REASONS`.
    """
    _check_direction(direction)
    for name, successes, rollouts in (("parent", parent_successes, parent_rollouts),
                                      ("child", child_successes, child_rollouts)):
        if rollouts < 1 or not 0 <= successes <= rollouts:
            raise ValueError(f"{name}: need 0 <= successes <= rollouts and rollouts >= 1, "
                             f"got successes={successes}, rollouts={rollouts}")
    parent_rate, child_rate = parent_successes / parent_rollouts, child_successes / child_rollouts
    move = parent_rate - child_rate if direction == "harder" else child_rate - parent_rate
    parent_posterior = (1 + parent_successes, 1 + parent_rollouts - parent_successes)
    child_posterior = (1 + child_successes, 1 + child_rollouts - child_successes)
    if direction == "harder":
        p_moved = prob_greater(*parent_posterior, *child_posterior)
    else:
        p_moved = prob_greater(*child_posterior, *parent_posterior)
    child_mean = child_posterior[0] / sum(child_posterior)
    evidence = {
        "direction": direction, "parent_successes": parent_successes, "parent_rollouts": parent_rollouts,
        "child_successes": child_successes, "child_rollouts": child_rollouts, "parent_rate": parent_rate,
        "child_rate": child_rate, "move": move, "p_moved": p_moved, "child_posterior_mean": child_mean,
    }
    if child_successes == 0:
        reason = "child_never_succeeds"
    elif move < margin - 1e-12:
        reason = "move_below_margin"
    elif p_moved < accept_confidence:
        reason = "move_not_significant"
    elif not alpha_low <= child_mean <= alpha_high:
        reason = "child_outside_band"
    else:
        reason = "accepted"
    return AcceptanceDecision(reason == "accepted", reason, evidence)


def _binomial_pmf(rollouts: int, p: float) -> np.ndarray:
    return np.array([comb(rollouts, k) * p**k * (1 - p) ** (rollouts - k) for k in range(rollouts + 1)])


@lru_cache(maxsize=64)
def _acceptance_table(direction: str, parent_rollouts: int, child_rollouts: int, rule_items: tuple) -> np.ndarray:
    """accepted[parent_successes, child_successes] for every outcome pair (cached per rule)."""
    accepted = np.zeros((parent_rollouts + 1, child_rollouts + 1))
    for parent_successes in range(parent_rollouts + 1):
        for child_successes in range(child_rollouts + 1):
            decision = accept_rewrite(direction, parent_successes, parent_rollouts, child_successes,
                                      child_rollouts, **dict(rule_items))
            accepted[parent_successes, child_successes] = decision.accepted
    accepted.setflags(write=False)
    return accepted


def acceptance_probability(direction: str, parent_p: float, child_p: float, parent_rollouts: int = 16,
                           child_rollouts: int = 16, **rule) -> float:
    """Exact probability that :func:`accept_rewrite` keeps a child of true rate ``child_p`` (parent ``parent_p``).

    Sums the decision over every pair of binomial outcomes; ``rule`` passes thresholds to
    :func:`accept_rewrite` (``margin``, ``accept_confidence``, ``alpha_low``, ``alpha_high``).
    """
    accepted = _acceptance_table(direction, parent_rollouts, child_rollouts, tuple(sorted(rule.items())))
    return float(_binomial_pmf(parent_rollouts, parent_p) @ accepted @ _binomial_pmf(child_rollouts, child_p))
