"""Statistics of the ablation: intervals over seeds, paired tests between arms, a trend test, detectable differences.

Pure functions over numbers (``math`` and numpy only; no scipy, which is a dev-only dependency):

- :func:`mean_interval` — mean over seeds with its 95% Student-t interval.
- :func:`mcnemar_exact` — exact McNemar (two-sided sign test on the discordant pairs) for two arms played on the
  SAME episode list: each episode gives a pair (success under arm A, success under arm B).
- :func:`paired_difference` — the paired difference of success rates (B − A) with its 95% interval.
- :func:`cochran_armitage` — the trend test over ordered arms (Cochran–Armitage on pooled successes, scores
  0, 1, 2, ...). It assumes independent episodes; the arms here share episodes, which correlates their
  successes positively and makes the test conservative (it under-states the evidence for a trend).
- :func:`minimum_detectable_difference` — the smallest difference two arms of ``n`` episodes each detect at
  two-sided alpha 0.05 with power 0.8 around a baseline success ``p`` (unpaired two-proportion z-test);
  :func:`paired_minimum_detectable_difference` — the same for the paired (McNemar) design, which needs the
  rate of discordant pairs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["normal_cdf", "normal_quantile", "t_quantile_975", "mean_interval", "seed_differences", "McNemarResult",
           "mcnemar_exact",
           "paired_difference", "TrendResult", "cochran_armitage", "minimum_detectable_difference",
           "paired_minimum_detectable_difference"]

# Student-t 0.975 quantiles for 1..30 degrees of freedom (scipy.stats.t.ppf(0.975, df), 4 decimals; the tests
# compare them with scipy). Beyond 30 the Cornish-Fisher expansion in normal quantiles is used (error < 1e-4).
_T_975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010, 2.1788, 2.1604,
          2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555,
          2.0518, 2.0484, 2.0452, 2.0423)


def normal_cdf(x: float) -> float:
    """P(Z <= x) for a standard normal Z."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def normal_quantile(q: float) -> float:
    """The standard normal quantile z with P(Z <= z) = q (bisection on :func:`normal_cdf`, to ~1e-12)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"a quantile needs 0 < q < 1, got {q!r}")
    low, high = -40.0, 40.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if normal_cdf(middle) < q:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (the half-width factor of a 95% interval)."""
    if int(df) != df or df < 1:
        raise ValueError(f"degrees of freedom must be an integer >= 1, got {df!r}")
    df = int(df)
    if df <= len(_T_975):
        return _T_975[df - 1]
    z = normal_quantile(0.975)
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def mean_interval(values: Sequence[float]) -> dict[str, float]:
    """Mean of ``values`` (one per seed) with its 95% t-interval; one value gives a zero-width interval.

    Returns ``{"mean", "ci_low", "ci_high", "n"}``.
    """
    array = np.asarray(values, dtype=float).reshape(-1)
    if array.size == 0:
        raise ValueError("mean_interval needs at least one value (one per seed)")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"mean_interval got non-finite values {array.tolist()}")
    mean = float(array.mean())
    if array.size == 1:
        return {"mean": mean, "ci_low": mean, "ci_high": mean, "n": 1}
    half = t_quantile_975(array.size - 1) * float(array.std(ddof=1)) / math.sqrt(array.size)
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half, "n": int(array.size)}


def seed_differences(first: Mapping[int, float], second: Mapping[int, float]) -> dict[str, Any]:
    """``second - first`` on each seed both have, and over those seeds the mean with its 95% t-interval.

    Returns ``{"per_seed": {seed: difference}, "mean", "ci_low", "ci_high", "n"}``; only ``{"per_seed": {}}`` when the
    two share no seed.

    >>> found = seed_differences({0: 0.2, 1: 0.4, 2: 0.1}, {0: 0.3, 1: 0.6})   # seed 2 has no pair
    >>> {seed: round(d, 2) for seed, d in found["per_seed"].items()}, round(found["mean"], 2), found["n"]
    ({0: 0.1, 1: 0.2}, 0.15, 2)
    >>> seed_differences({0: 0.2}, {1: 0.3})
    {'per_seed': {}}
    """
    per_seed = {seed: second[seed] - first[seed] for seed in sorted(set(first) & set(second))}
    return {"per_seed": per_seed, **(mean_interval(list(per_seed.values())) if per_seed else {})}


def _pairs(successes_a: Sequence, successes_b: Sequence) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(successes_a, dtype=float).reshape(-1)
    b = np.asarray(successes_b, dtype=float).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"a paired comparison needs one outcome per episode from each arm on the same episode "
                         f"list: got {a.size} and {b.size} outcomes; evaluate both arms on the same tasks and seeds")
    if not np.all(np.isin(a, (0.0, 1.0))) or not np.all(np.isin(b, (0.0, 1.0))):
        raise ValueError("paired outcomes must be 0/1 (lost/won) per episode")
    return a, b


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test: discordant pairs (``a_only`` won only under A, ``b_only`` only under B) and the p-value."""

    episodes: int
    a_only: int
    b_only: int
    p_value: float

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return asdict(self)


def mcnemar_exact(successes_a: Sequence, successes_b: Sequence) -> McNemarResult:
    """Two-sided exact McNemar test of arms A and B on the same episodes (0/1 each, episode i paired).

    Under H0 each discordant pair is A-only or B-only with probability 1/2, so the p-value is
    min(1, 2·P(X <= min(a_only, b_only))) with X ~ Binomial(a_only + b_only, 1/2); no discordant pair gives 1.
    """
    a, b = _pairs(successes_a, successes_b)
    a_only, b_only = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
    discordant = a_only + b_only
    tail = sum(math.comb(discordant, k) for k in range(min(a_only, b_only) + 1)) / 2.0**discordant
    return McNemarResult(episodes=int(a.size), a_only=a_only, b_only=b_only, p_value=min(1.0, 2.0 * tail))


def paired_difference(successes_a: Sequence, successes_b: Sequence) -> dict[str, float]:
    """Success rate of B minus A on the same episodes, with its 95% (Wald, paired) interval.

    difference = (b_only − a_only)/n; its variance is (a_only + b_only − n·difference²)/n² (the variance of
    the per-episode difference b_i − a_i, population form, over n).
    """
    a, b = _pairs(successes_a, successes_b)
    n = a.size
    if n == 0:
        raise ValueError("paired_difference needs at least one episode")
    a_only, b_only = float(np.sum((a == 1) & (b == 0))), float(np.sum((a == 0) & (b == 1)))
    difference = (b_only - a_only) / n
    half = normal_quantile(0.975) * math.sqrt(max(0.0, a_only + b_only - n * difference**2)) / n
    return {"difference": difference, "ci_low": difference - half, "ci_high": difference + half, "episodes": int(n)}


@dataclass(frozen=True)
class TrendResult:
    """Cochran–Armitage trend test over ordered arms: the z statistic (> 0 = success rises along the order) and p."""

    z: float
    p_value: float
    successes: tuple[int, ...]
    episodes: tuple[int, ...]

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"z": self.z, "p_value": self.p_value, "successes": list(self.successes),
                "episodes": list(self.episodes), "test": "Cochran-Armitage, scores 0..k-1, two-sided"}


def cochran_armitage(successes: Sequence[int], episodes: Sequence[int]) -> TrendResult:
    """Two-sided Cochran–Armitage trend test: does the success rate change linearly along the arms' order?

    With scores t_i = i, N = Σn_i and p̄ = Σx_i/N:
    T = Σ t_i (x_i − n_i p̄), Var T = p̄(1 − p̄)(Σ n_i t_i² − (Σ n_i t_i)²/N), z = T/√Var T, p = 2(1 − Φ(|z|)).
    All arms at 0% or 100% (no variance) give z = 0, p = 1.
    """
    x = np.asarray(successes, dtype=float).reshape(-1)
    n = np.asarray(episodes, dtype=float).reshape(-1)
    if x.shape != n.shape or x.size < 2:
        raise ValueError(f"cochran_armitage needs successes and episodes for >= 2 ordered arms (same length), "
                         f"got {x.size} and {n.size}")
    if np.any(n <= 0) or np.any(x < 0) or np.any(x > n):
        raise ValueError(f"each arm needs episodes > 0 and 0 <= successes <= episodes, got {x.tolist()} / {n.tolist()}")
    scores = np.arange(x.size, dtype=float)
    total = n.sum()
    p_bar = x.sum() / total
    variance = p_bar * (1 - p_bar) * (np.sum(n * scores**2) - np.sum(n * scores) ** 2 / total)
    if variance <= 0:
        z = 0.0
    else:
        z = float(np.sum(scores * (x - n * p_bar)) / math.sqrt(variance))
    return TrendResult(z=z, p_value=min(1.0, math.erfc(abs(z) / math.sqrt(2.0))),   # = 2(1 − Φ(|z|)), no underflow
                       successes=tuple(int(v) for v in x), episodes=tuple(int(v) for v in n))


def _power_terms(alpha: float, power: float) -> tuple[float, float]:
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"need 0 < alpha < 1 and 0 < power < 1, got alpha={alpha!r}, power={power!r}")
    return normal_quantile(1 - alpha / 2), normal_quantile(power)


def minimum_detectable_difference(episodes: int, baseline: float, *, alpha: float = 0.05,
                                  power: float = 0.8) -> float:
    """Smallest rise d above ``baseline`` that arms of ``episodes`` episodes each detect (two-proportion z-test).

    Solves n = (z_{1−α/2}·√(2·p̄q̄) + z_power·√(p₁q₁ + p₂q₂))² / d² for d, with p₁ = baseline, p₂ = p₁ + d,
    p̄ = (p₁ + p₂)/2 (bisection; d is capped at 1 − baseline: at that point nothing smaller is detectable).
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes!r}")
    if not 0.0 <= baseline < 1.0:
        raise ValueError(f"baseline success must be in [0, 1), got {baseline!r}")
    z_alpha, z_power = _power_terms(alpha, power)

    def needed(d: float) -> float:
        p1, p2 = baseline, baseline + d
        p_bar = (p1 + p2) / 2
        return (z_alpha * math.sqrt(2 * p_bar * (1 - p_bar)) + z_power * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2 / d**2

    return _smallest_detectable(needed, episodes, 1.0 - baseline)


def paired_minimum_detectable_difference(episodes: int, discordant_rate: float, *, alpha: float = 0.05,
                                         power: float = 0.8) -> float:
    """Smallest paired difference d that ``episodes`` pairs with discordance ψ detect (McNemar, normal form).

    Solves n = (z_{1−α/2}·√ψ + z_power·√(ψ − d²))² / d² for d (Connor 1987), by bisection on (0, ψ].
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes!r}")
    if not 0.0 < discordant_rate <= 1.0:
        raise ValueError(f"discordant_rate must be in (0, 1], got {discordant_rate!r}; with no discordant pairs "
                         "there is no paired difference to detect")
    z_alpha, z_power = _power_terms(alpha, power)
    psi = discordant_rate

    def needed(d: float) -> float:
        return (z_alpha * math.sqrt(psi) + z_power * math.sqrt(max(0.0, psi - d * d))) ** 2 / d**2

    return _smallest_detectable(needed, episodes, psi)


def _smallest_detectable(needed, episodes: int, high: float) -> float:
    """The smallest d in (0, high] with ``needed(d) <= episodes`` (``needed`` falls as d grows), by bisection."""
    low = 1e-9
    if needed(high) > episodes:
        return high
    for _ in range(100):
        middle = 0.5 * (low + high)
        if needed(middle) > episodes:
            low = middle
        else:
            high = middle
    return high
