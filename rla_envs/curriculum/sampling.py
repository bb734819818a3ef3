"""Sampling weights over a pool's active tasks, as pure functions over arrays.

Each function returns a probability vector (non-negative, sums to 1) with one entry per active task.
The pool composes them: ``learnability_weights`` (or ``uniform_weights`` / ``rlanything_weights``), then
``cap_root_share`` so that no single root task takes more than its share of the batch.

Strategies:
- ``uniform``: every active task equally likely. A strong baseline in the literature.
- ``rlanything``: what the released RLAnything trains on. Its environment keeps one slot per original
  task and swaps the slot's task in place when a rewrite is accepted; batches are drawn from that
  task list without any difficulty weighting, so the sampling itself is uniform over active versions.
  (All of RLAnything's adaptivity is in the rewriting, see ``acceptance.rlanything_direction``.)
- ``learnability`` (the project's own option; ``uniform`` is the default): prioritised replay in the style
  of PLR (Jiang et al. 2021), scored by the expected learnability E[p (1 - p)] under each task's Beta
  posterior, with rank-based temperature, a staleness mix (tasks not seen for a while come back) and a
  share reserved for tasks never played.
"""

from __future__ import annotations

import numpy as np

from rla_envs.curriculum.stats import expected_learnability

__all__ = [
    "uniform_weights",
    "rlanything_weights",
    "rank_weights",
    "staleness_weights",
    "learnability_weights",
    "cap_root_share",
    "mix",
    "STRATEGIES",
]

STRATEGIES = ("learnability", "uniform", "rlanything")


def _normalised(weights: np.ndarray) -> np.ndarray:
    total = weights.sum()
    if total <= 0:
        return np.full(len(weights), 1.0 / len(weights)) if len(weights) else weights
    return weights / total


def uniform_weights(n_tasks: int) -> np.ndarray:
    """Equal weight 1/n for each of ``n_tasks`` tasks."""
    if n_tasks < 1:
        raise ValueError(f"need at least one task to sample from, got n_tasks={n_tasks}")
    return np.full(n_tasks, 1.0 / n_tasks)


def rlanything_weights(n_tasks: int) -> np.ndarray:
    """The released RLAnything sampling: uniform over the active version of every slot (see module doc)."""
    return uniform_weights(n_tasks)


def mix(weights_a: np.ndarray, weights_b: np.ndarray, share_b: float) -> np.ndarray:
    """``(1 - share_b) * weights_a + share_b * weights_b``: a probability mixture of two distributions."""
    if not 0.0 <= share_b <= 1.0:
        raise ValueError(f"share_b must be in [0, 1], got {share_b}")
    return (1.0 - share_b) * np.asarray(weights_a, dtype=float) + share_b * np.asarray(weights_b, dtype=float)


def rank_weights(scores: np.ndarray, temperature: float) -> np.ndarray:
    """PLR's rank prioritisation: weight ∝ (1 / rank) ** (1 / temperature), rank 1 = highest score.

    Tied scores share the best rank among them (competition ranking), so ties get equal weight.
    Lower temperature concentrates on the top-ranked tasks; high temperature approaches uniform.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    scores = np.asarray(scores, dtype=float)
    ranks = 1.0 + (scores[None, :] > scores[:, None]).sum(axis=1)  # 1 + number of strictly higher scores
    return _normalised(ranks ** (-1.0 / temperature))


def staleness_weights(last_seen: np.ndarray, now: int) -> np.ndarray:
    """Weight ∝ episodes since a task was last played (``now - last_seen``); uniform if all are fresh."""
    age = np.maximum(now - np.asarray(last_seen, dtype=float), 0.0)
    return _normalised(age)


def learnability_weights(alpha: np.ndarray, beta: np.ndarray, last_seen: np.ndarray, now: int,
                         never_played: np.ndarray, *, temperature: float = 0.3,
                         staleness_weight: float = 0.1, fresh_share: float = 0.1) -> np.ndarray:
    """The learnability strategy: rank-prioritised learnability mixed with staleness and fresh tasks.

    ``(1 - fresh_share) * [(1 - staleness_weight) * rank_weights(E[p(1-p)]) + staleness_weight *
    staleness] + fresh_share * uniform(never played)``. When no task is unplayed, ``fresh_share`` goes
    to the scored part instead.
    """
    scores = expected_learnability(alpha, beta)
    scored = mix(rank_weights(scores, temperature), staleness_weights(last_seen, now), staleness_weight)
    never_played = np.asarray(never_played, dtype=bool)
    if not never_played.any():
        return scored
    fresh = never_played / never_played.sum()
    return mix(scored, fresh, fresh_share)


def cap_root_share(weights: np.ndarray, root_index: np.ndarray, max_share: float) -> np.ndarray:
    """Weights rescaled so that no root (group of tasks) holds more than ``max_share`` of the total.

    ``root_index[i]`` names the root of task ``i``. Roots above the cap are cut to it and the excess is
    shared among the other roots in proportion to their weight (repeated until no root exceeds the cap;
    roots with zero weight share it equally when all uncapped weight is zero). Within a root, tasks keep
    their relative weights. If the cap is infeasible (``max_share * n_roots < 1``) it is raised to
    ``1 / n_roots``, which makes every root equally likely.
    """
    weights = _normalised(np.asarray(weights, dtype=float).copy())
    root_index = np.asarray(root_index)
    roots, inverse = np.unique(root_index, return_inverse=True)
    cap = max(float(max_share), 1.0 / len(roots))
    root_mass = np.bincount(inverse, weights=weights, minlength=len(roots))
    capped = np.zeros(len(roots), dtype=bool)
    for _ in range(len(roots)):
        over = (root_mass > cap + 1e-12) & ~capped
        if not over.any():
            break
        capped |= over
        free = 1.0 - cap * capped.sum()
        uncapped_mass = root_mass[~capped].sum()
        if uncapped_mass > 0:
            root_mass[~capped] *= free / uncapped_mass
        else:
            root_mass[~capped] = free / max((~capped).sum(), 1)
        root_mass[capped] = cap
    # spread each root's new mass over its tasks in proportion to their old weights
    old_mass = np.bincount(inverse, weights=weights, minlength=len(roots))
    counts = np.bincount(inverse, minlength=len(roots))
    within = np.where(old_mass[inverse] > 0, weights / np.where(old_mass[inverse] > 0, old_mass[inverse], 1.0),
                      1.0 / counts[inverse])
    return _normalised(root_mass[inverse] * within)
