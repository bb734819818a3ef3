"""Per-task success statistics: a Beta posterior that forgets old evidence, plus raw counts.

Everything here is pure: functions take numbers (or a frozen :class:`TaskStats`) and return new ones.

The success probability ``p`` of a task under the current policy is modelled as ``Beta(alpha, beta)``.
The policy changes while it trains, so old outcomes should weigh less than new ones: before each new
outcome the evidence gathered so far (what lies above the prior) is multiplied by ``decay``::

    alpha <- prior_alpha + decay * (alpha - prior_alpha) + success
    beta  <- prior_beta  + decay * (beta  - prior_beta)  + (1 - success)

With ``decay = 0.95`` the evidence saturates at ``1 / (1 - 0.95) = 20`` outcomes (half-life ~13.5 updates
of that task); ``decay = 1`` is the plain conjugate update.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

__all__ = [
    "TaskStats",
    "decayed_update",
    "observe",
    "observe_group",
    "beta_mean",
    "expected_learnability",
    "beta_cdf",
    "prob_greater",
    "ZERO_VARIANCE_KINDS",
]

ZERO_VARIANCE_KINDS = ("all_fail", "all_pass")


@dataclass(frozen=True)
class TaskStats:
    """What the pool knows about one task's success under the current policy.

    Attributes:
        alpha: Beta posterior parameter (prior + decayed successes).
        beta: Beta posterior parameter (prior + decayed failures).
        episodes: outcomes recorded for this task (raw count, no decay).
        successes: sum of those outcomes (raw, no decay; outcomes may be fractional in [0, 1]).
        last_seen: the pool's episode counter at the last outcome, or -1 if never played.
        zero_variance_streak: how many groups in a row had identical outcomes (all fail or all pass).
        zero_variance_kind: ``"all_fail"`` or ``"all_pass"`` for the current streak, else None.
        groups: groups (GRPO-style batches of rollouts of this task) recorded.
        recent: the last outcomes, newest last, at most the pool's ``group_size`` of them (the window the
            released RLAnything rule reads its success rate from).
    """

    alpha: float = 1.0
    beta: float = 1.0
    episodes: int = 0
    successes: float = 0.0
    last_seen: int = -1
    zero_variance_streak: int = 0
    zero_variance_kind: str | None = None
    groups: int = 0
    recent: tuple[float, ...] = ()

    @property
    def mean(self) -> float:
        """Posterior mean success probability."""
        return beta_mean(self.alpha, self.beta)

    @property
    def n(self) -> int:
        """Alias of :attr:`episodes` (raw outcomes recorded)."""
        return self.episodes

    @property
    def recent_success_rate(self) -> float | None:
        """Mean of :attr:`recent`, or None if nothing was recorded."""
        return sum(self.recent) / len(self.recent) if self.recent else None

    def to_dict(self) -> dict:
        """A JSON-ready dict; ``TaskStats(**d)`` (with ``recent`` as a tuple) rebuilds it."""
        return {
            "alpha": self.alpha, "beta": self.beta, "episodes": self.episodes, "successes": self.successes,
            "last_seen": self.last_seen, "zero_variance_streak": self.zero_variance_streak,
            "zero_variance_kind": self.zero_variance_kind, "groups": self.groups, "recent": list(self.recent),
        }

    @classmethod
    def from_dict(cls, data: dict) -> "TaskStats":
        """Rebuild from :meth:`to_dict` output."""
        return cls(**{**data, "recent": tuple(data.get("recent", ()))})


def decayed_update(alpha: float, beta: float, success: float, decay: float,
                   prior_alpha: float = 1.0, prior_beta: float = 1.0) -> tuple[float, float]:
    """The Beta posterior after one outcome ``success`` in [0, 1], old evidence scaled by ``decay``."""
    if not 0.0 <= success <= 1.0:
        raise ValueError(f"success must be in [0, 1] (a bool or a rate), got {success!r}")
    new_alpha = prior_alpha + decay * (alpha - prior_alpha) + success
    new_beta = prior_beta + decay * (beta - prior_beta) + (1.0 - success)
    return new_alpha, new_beta


def observe(stats: TaskStats, success: float, episode: int, *, decay: float,
            prior: tuple[float, float] = (1.0, 1.0), window: int = 8) -> TaskStats:
    """``stats`` after one episode outcome observed at pool episode ``episode``."""
    success = float(success)
    alpha, beta = decayed_update(stats.alpha, stats.beta, success, decay, prior[0], prior[1])
    recent = (stats.recent + (success,))[-window:] if window > 0 else ()
    return replace(stats, alpha=alpha, beta=beta, episodes=stats.episodes + 1,
                   successes=stats.successes + success, last_seen=episode, recent=recent)


def observe_group(stats: TaskStats, successes: Sequence[float]) -> TaskStats:
    """``stats`` with the zero-variance streak updated for one group of outcomes (already observed one by one).

    A group whose outcomes are all 0 (``all_fail``) or all 1 (``all_pass``) extends the streak if the
    previous group was of the same kind, else starts a streak of 1; any other group ends the streak.
    A group of one outcome says nothing about variance and leaves the streak as it was.
    """
    outcomes = [float(s) for s in successes]
    if len(outcomes) < 2:
        return replace(stats, groups=stats.groups + 1)
    kind = "all_fail" if all(s == 0.0 for s in outcomes) else "all_pass" if all(s == 1.0 for s in outcomes) else None
    if kind is None:
        streak = 0
    elif kind == stats.zero_variance_kind:
        streak = stats.zero_variance_streak + 1
    else:
        streak = 1
    return replace(stats, groups=stats.groups + 1, zero_variance_streak=streak, zero_variance_kind=kind)


def beta_mean(alpha: float, beta: float) -> float:
    """Mean of Beta(alpha, beta): alpha / (alpha + beta)."""
    return alpha / (alpha + beta)


def expected_learnability(alpha, beta):
    """E[p (1 - p)] under Beta(alpha, beta) = alpha beta / ((alpha + beta) (alpha + beta + 1)); arrays work.

    This is the expected variance of one outcome, the learnability score of Tzannetos et al. / Foster &
    Foerster: 0 for tasks surely solved or surely failed, at most 1/4 for a task known to be at p = 0.5;
    an unplayed task under Beta(1, 1) scores 1/6 (uncertainty counts as learnable).
    """
    alpha = np.asarray(alpha, dtype=float)
    beta = np.asarray(beta, dtype=float)
    total = alpha + beta
    return alpha * beta / (total * (total + 1.0))


_TINY = 1e-300


def _beta_continued_fraction(alpha: float, beta: float, x: float) -> float:
    """Continued fraction of the incomplete Beta function (modified Lentz), as in Numerical Recipes."""
    qab, qap, qam = alpha + beta, alpha + 1.0, alpha - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for numerator in (m * (beta - m) * x / ((qam + m2) * (alpha + m2)),
                          -(alpha + m) * (qab + m) * x / ((alpha + m2) * (qap + m2))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            step = d * c
            h *= step
        if abs(step - 1.0) < 1e-14:
            break
    return h


def beta_cdf(x: float, alpha: float, beta: float) -> float:
    """P(p <= x) for p ~ Beta(alpha, beta): the regularised incomplete Beta function I_x(alpha, beta)."""
    if alpha <= 0 or beta <= 0:
        raise ValueError(f"Beta parameters must be > 0, got alpha={alpha}, beta={beta}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(alpha + beta) - math.lgamma(alpha) - math.lgamma(beta)
                 + alpha * math.log(x) + beta * math.log1p(-x))
    front = math.exp(log_front)
    if x < (alpha + 1.0) / (alpha + beta + 2.0):
        return front * _beta_continued_fraction(alpha, beta, x) / alpha
    return 1.0 - front * _beta_continued_fraction(beta, alpha, 1.0 - x) / beta


_GRID_POINTS = 4096
_GRID = (np.arange(_GRID_POINTS) + 0.5) / _GRID_POINTS  # midpoints of equal cells on (0, 1)
_LOG_GRID, _LOG1M_GRID = np.log(_GRID), np.log1p(-_GRID)


def _beta_cell_masses(alpha: float, beta: float) -> np.ndarray:
    log_density = (alpha - 1.0) * _LOG_GRID + (beta - 1.0) * _LOG1M_GRID
    masses = np.exp(log_density - log_density.max())
    return masses / masses.sum()


def prob_greater(alpha_x: float, beta_x: float, alpha_y: float, beta_y: float) -> float:
    """P(X > Y) for independent X ~ Beta(alpha_x, beta_x), Y ~ Beta(alpha_y, beta_y).

    Computed on a 4096-cell grid of (0, 1) (error well below 1e-4 for parameters >= 1; identical
    distributions give exactly 0.5). Used to ask whether a rewrite really moved the success rate.
    """
    mass_x = _beta_cell_masses(alpha_x, beta_x)
    mass_y = _beta_cell_masses(alpha_y, beta_y)
    cdf_x = np.cumsum(mass_x) - 0.5 * mass_x  # P(X <= cell midpoint), half of the own cell
    return float(np.clip(np.dot(mass_y, 1.0 - cdf_x), 0.0, 1.0))
