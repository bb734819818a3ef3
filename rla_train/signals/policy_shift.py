"""How far one update moved a choice policy (pure numpy): the KL of its choice distributions, and the change in
the chosen action's probability.

A choice policy (:class:`~rla_train.backends.choice.ChoiceBackend`) acts from a categorical distribution over the
admissible candidates of each state. Measured before and after an update on the states of its batch:

- :func:`categorical_kl` — ``KL(before || after)`` of one state's distribution, in nats;
- :func:`mean_choice_kl` — its mean over the batch's states;
- :func:`chosen_probability_change` — the mean of ``p_after(chosen) - p_before(chosen)`` over the samples,
  overall and split by the sign of their advantage (a positive advantage should raise it, a negative one lower it).

Distributions arrive as log-probabilities (what the trainer computes), one list per state.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["categorical_kl", "mean_choice_kl", "chosen_probability_change"]


def _log_distribution(log_probs: Sequence[float], what: str) -> np.ndarray:
    values = np.asarray(list(log_probs), dtype=float)
    if values.ndim != 1 or not values.size:
        raise ValueError(f"{what} must be a non-empty list of log-probabilities, got {list(log_probs)!r}")
    if not abs(float(np.exp(values).sum()) - 1.0) <= 1e-6:
        raise ValueError(f"{what} must be log-probabilities summing to 1 (a log-softmax), got exp-sum "
                         f"{float(np.exp(values).sum())!r}")
    return values


def categorical_kl(before: Sequence[float], after: Sequence[float]) -> float:
    """``KL(before || after) = sum_k p_k (log p_k - log q_k)`` in nats, from log-probabilities over the same candidates.

    By hand: ``p = (0.5, 0.5)``, ``q = (0.25, 0.75)``: ``0.5 ln 2 + 0.5 ln(2/3) = 0.5 ln(4/3) = 0.1438``.
    Candidates with p = 0 (log -inf) add nothing.
    """
    p, q = _log_distribution(before, "before"), _log_distribution(after, "after")
    if p.shape != q.shape:
        raise ValueError(f"before and after must cover the same candidates, got {p.size} and {q.size}")
    mass = np.exp(p)
    terms = np.where(mass > 0, mass * (p - np.where(mass > 0, q, 0.0)), 0.0)
    return max(0.0, float(terms.sum()))


def mean_choice_kl(before: Sequence[Sequence[float]], after: Sequence[Sequence[float]]) -> float | None:
    """The mean over states of :func:`categorical_kl` (None when there is no state)."""
    if len(before) != len(after):
        raise ValueError(f"one distribution per state before and after expected, got {len(before)} and {len(after)}")
    if not len(before):
        return None
    return float(np.mean([categorical_kl(b, a) for b, a in zip(before, after)]))


def chosen_probability_change(before: Sequence[float], after: Sequence[float],
                              advantages: Sequence[float]) -> dict[str, float | None]:
    """Mean change of the chosen action's probability: ``{"all", "positive_advantage", "negative_advantage"}``.

    ``before`` / ``after``: the chosen candidate's log-probability per sample; ``advantages``: each sample's. A
    group with no sample is None. By hand: probabilities 0.5 -> 0.6 (advantage +1), 0.2 -> 0.1 (advantage -1),
    0.4 -> 0.4 (advantage +2): all ``(0.1 - 0.1 + 0) / 3 = 0``, positive ``(0.1 + 0) / 2 = 0.05``, negative ``-0.1``.
    """
    if not len(before) == len(after) == len(advantages):
        raise ValueError(f"one value per sample expected: {len(before)} before, {len(after)} after, "
                         f"{len(advantages)} advantages")
    change = np.exp(np.asarray(after, dtype=float)) - np.exp(np.asarray(before, dtype=float))
    signs = np.sign(np.asarray(advantages, dtype=float))

    def mean(mask) -> float | None:
        return float(change[mask].mean()) if mask.any() else None

    return {"all": mean(np.ones_like(signs, dtype=bool)), "positive_advantage": mean(signs > 0),
            "negative_advantage": mean(signs < 0)}
