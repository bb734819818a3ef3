"""GiGPO's advantages: an episode-level advantage from a group's outcomes plus a step-level one from anchor states.

GiGPO (Feng et al., 2025, "Group-in-Group Policy Optimization for LLM Agent Training"; verl-agent's
``adv_estimator=gigpo``) credits steps without a reward model. Within one group (the rollouts of one task):

* **Episode level**: A^E(τ_i) = normalise over the group of the episode returns; every step of τ_i gets it.
* **Step level**: steps taken from the same environment state (an *anchor state*: the same observation, here with
  the same admissible actions) in any rollout of the group form a step group; each member's discounted return
  G_t = Σ_k γ^k r_{t+k} is normalised within that step group: A^S. A state visited once gives 0.
* A = A^E + ω · A^S.

The reward is the env's sparse success reward: r = 1 on the last step of a won episode, 0 elsewhere, so the
episode return is won ∈ {0, 1} and G_t = γ^(T−1−t) · won — from the same state, the rollout that wins in fewer
steps gets the larger return (the step term prefers the shorter way even in a group that always wins).

Normalisation (``norm``, verl-agent's ``algorithm.gigpo.mode``): ``mean_std_norm`` divides the centred values by
their std, ``mean_norm`` only centres them. rla's std is the population one (ddof=0, as every z-score of
:mod:`rla_train.signals.rewards`; verl-agent's torch.std is ddof=1, a factor sqrt(n/(n−1)) apart), so under
``mean_std_norm`` the episode term is on the same scale as ``outcome_only``'s GRPO advantages. Values within
:data:`~rla_train.signals.rewards.ROUNDING_TOLERANCE` of the mean are 0.

Pure functions over numbers and hashable keys; building the keys from episodes is
:func:`rla_train.signals.samples.anchor_state`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from rla_train.signals.rewards import ROUNDING_TOLERANCE, zscores

__all__ = ["GIGPO_NORMS", "GigpoStats", "success_rewards", "discounted_returns", "normalise", "gigpo_advantages"]

#: verl-agent's ``algorithm.gigpo.mode`` values: centre and divide by the std, or centre only.
GIGPO_NORMS = ("mean_std_norm", "mean_norm")


@dataclass(frozen=True)
class GigpoStats:
    """How much step-level signal a group had.

    Attributes:
        steps: steps in the group.
        shared_steps: steps whose anchor state another step of the group also had (a step group of 2 or more).
        step_groups: distinct anchor states.
        step_advantage_nonzero: steps whose step-level advantage is not 0.
    """

    steps: int
    shared_steps: int
    step_groups: int
    step_advantage_nonzero: int


def success_rewards(steps: int, won: bool) -> np.ndarray:
    """The env's sparse success reward per step: 1 on the last step of a won episode, 0 elsewhere."""
    rewards = np.zeros(steps)
    if steps and won:
        rewards[-1] = 1.0
    return rewards


def discounted_returns(rewards: Sequence[float] | np.ndarray, gamma: float) -> np.ndarray:
    """G_t = r_t + γ·G_{t+1} for every step of one episode (G after the last step is 0).

    By hand, rewards [0, 0, 1] and γ = 0.5: G = [0.25, 0.5, 1.0].
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma!r}; verl-agent uses 0.95 for ALFWorld")
    values = np.asarray(rewards, dtype=float).reshape(-1)
    returns = np.zeros_like(values)
    running = 0.0
    for t in range(len(values) - 1, -1, -1):
        running = values[t] + gamma * running
        returns[t] = running
    return returns


def normalise(values: Sequence[float] | np.ndarray, norm: str) -> np.ndarray:
    """``values`` centred on their mean (``mean_norm``) or z-scored (``mean_std_norm``); a single value gives 0.

    By hand, [1, 0, 0, 0]: mean 0.25, std 0.4330 → mean_norm [0.75, -0.25, -0.25, -0.25], mean_std_norm
    [1.7321, -0.5774, -0.5774, -0.5774].
    """
    if norm not in GIGPO_NORMS:
        raise ValueError(f"norm must be one of {GIGPO_NORMS}, got {norm!r}; mean_std_norm divides by the std, "
                         "mean_norm only subtracts the mean")
    array = np.asarray(values, dtype=float).reshape(-1)
    if array.size < 2:
        return np.zeros_like(array)
    if norm == "mean_std_norm":
        return zscores(array)
    centred = array - array.mean()
    centred[np.abs(centred) < ROUNDING_TOLERANCE] = 0.0
    return centred


def gigpo_advantages(won: Sequence[bool], anchors: Sequence[Sequence[Hashable]], *, gamma: float = 0.95,
                     step_weight: float = 1.0, norm: str = "mean_std_norm") -> tuple[list[np.ndarray], GigpoStats]:
    """GiGPO's per-step advantages of one group's rollouts, and how much step-level signal the group had.

    Args:
        won: per rollout, whether it won (its return: 1 or 0).
        anchors: per rollout, one hashable anchor state per step (equal keys = the same environment state); its
            length is the rollout's number of steps.
        gamma: the discount of the step-level returns.
        step_weight: ω, the step-level advantage's weight (0 = the episode level alone).
        norm: ``mean_std_norm`` or ``mean_norm`` (:data:`GIGPO_NORMS`), for both levels.

    Returns:
        One advantage array per rollout (the lengths of ``anchors``), and :class:`GigpoStats`.

    By hand: two rollouts, γ = 0.5, mean_norm, ω = 1. Rollout 0 won in 2 steps from states [a, b]; rollout 1
    lost in 2 steps from [a, c]. Episode level: returns [1, 0] → [0.5, -0.5]. Returns G: rollout 0 [0.5, 1.0],
    rollout 1 [0, 0]. Step group a = {0.5, 0} → [0.25, -0.25]; b and c are single → 0. Advantages:
    rollout 0 [0.75, 0.5], rollout 1 [-0.75, -0.5].
    """
    if len(won) != len(anchors):
        raise ValueError(f"one outcome per rollout expected: got {len(won)} outcomes and {len(anchors)} anchor lists")
    if step_weight < 0:
        raise ValueError(f"step_weight (ω) must be >= 0, got {step_weight!r}")
    outcomes = np.asarray([1.0 if w else 0.0 for w in won])
    episode_level = normalise(outcomes, norm)
    returns = [discounted_returns(success_rewards(len(keys), bool(w)), gamma) for keys, w in zip(anchors, won)]
    members: dict[Hashable, list[tuple[int, int]]] = {}
    for rollout, keys in enumerate(anchors):
        for step, key in enumerate(keys):
            members.setdefault(key, []).append((rollout, step))
    step_level = [np.zeros(len(keys)) for keys in anchors]
    for places in members.values():
        values = normalise([returns[r][t] for r, t in places], norm)
        for (rollout, step), value in zip(places, values):
            step_level[rollout][step] = value
    advantages = []
    for rollout in range(len(anchors)):
        combined = episode_level[rollout] + step_weight * step_level[rollout]
        combined[np.abs(combined) < ROUNDING_TOLERANCE] = 0.0
        advantages.append(combined)
    stats = GigpoStats(steps=sum(len(k) for k in anchors),
                       shared_steps=sum(len(p) for p in members.values() if len(p) > 1),
                       step_groups=len(members),
                       step_advantage_nonzero=int(sum(np.count_nonzero(s) for s in step_level)))
    return advantages, stats
