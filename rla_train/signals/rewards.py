"""Reward maths of the RLAnything method: policy step rewards, advantages, reward-model rewards, task filters.

Pure functions over numbers and numpy arrays (no torch, no models), one per line of the method
(see ``DESIGN.md``, "The method in five lines"):

- :func:`outcome_value` — the outcome O_τ: +1 won, −1 otherwise (``encoding="pm1"``, the paper), or 1 / 0
  (``encoding="01"``, the ALFWorld release).
- :func:`integrated_rewards` — policy step reward R_i = O_τ + (λ/m)·Σ_j S_ij.
- :func:`step_advantages` / :func:`nonzero_mask` — z-scores across the rollouts of one task at the same
  step index; zero-advantage samples are dropped.
- :func:`consistency_rewards` / :func:`episode_consistency_rewards` — reward-model reward R_i·S_ij
  (unparseable vote → −2), z-scored within the m judgments of a step (a lone judgment gets 0).
- :func:`label_rewards`, :func:`outcome_balance_weights` and :func:`class_balance_weights` — the reward model's other
  objectives (:data:`RM_OBJECTIVES`): agreement with the family's step label (as it comes, or with good and bad
  steps weighing alike), and consistency weighted so that won and lost episodes count alike.
- :func:`policy_task_filter` / :func:`reward_model_task_filter` — which tasks give training data; the policy
  filter has three named rules (:data:`GROUP_FILTERS`).
- :func:`unit_test_correctness` / :func:`unit_test_rewards` — the coding variant: rewards for generated
  unit tests.

Votes are +1 (good step), −1 (bad step) or 0 (the judgment did not parse).

Where the RLAnything release (Gen-Verse/Open-AgentRL, ``reward/alfworld_rl_reward.py`` and
``reward/osworld_rl_reward.py``) differs from the paper, the choice is a named option:

* outcome 0/1 (ALFWorld release) or ±1 (paper, OSWorld release): ``outcome_value(won, encoding)``. Since
  O01 = (Opm1 + 1)/2, R01(λ) = O01 + λ·mean S = ½·(Opm1 + 2λ·mean S) + ½ = ½·Rpm1(2λ) + ½: an affine map
  with a positive scale, so the policy's z-scored advantages under 01 with λ are those of pm1 with 2λ.
  The reward model's R_i·S_ij is *not* invariant: on a lost trajectory pm1 gives R_i = −1 + λ·mean S ≤ 0
  (for λ ≤ 1), so a −1 vote pays on every step, good ones included; 01 gives
  R_i = λ·mean S, so the vote that agrees with the step's majority pays.
* the policy's group filter (:func:`policy_task_filter`): ``mixed`` 0 < s < 1, ``alfworld_release``
  1/8 ≤ s ≤ 7/8, ``none`` (OSWorld release: every group).
* a step judged once gives the reward model nothing (both releases): no spread to standardise.

Float rounding: equal rewards need not be bitwise equal (0.1 + 0.2 vs 0.3), and even bitwise-equal
ones can have a mean that is not (three lost rollouts voted [1, 1, −1]: R = −1 + 1/3 = −0.6666666666666667
each, mean −0.6666666666666666), which leaves a std of ~1e-16 and turns every rollout's advantage into ±1
of arbitrary sign. Spreads below :data:`ROUNDING_TOLERANCE` are treated as zero (the ALFWorld release's
policy advantages use the same 1e-8; its reward-model z-scores and the OSWorld release's test std == 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "INVALID_JUDGMENT_REWARD", "ROUNDING_TOLERANCE", "OUTCOME_ENCODINGS", "GROUP_FILTERS", "zscores", "outcome_value",
    "integrated_rewards", "step_advantages", "nonzero_mask",
    "consistency_rewards", "episode_consistency_rewards", "RM_OBJECTIVES", "LABELLED_OBJECTIVES", "label_rewards",
    "outcome_balance_weights", "class_balance_weights",
    "policy_task_filter", "reward_model_task_filter",
    "unit_test_correctness", "unit_test_rewards",
]

#: Reward-model reward of a judgment that did not parse (vote 0).
INVALID_JUDGMENT_REWARD = -2.0

#: Below this, a std (or a z-score, or a difference of advantages) is float rounding, not signal. Rewards
#: are O(1) sums of ±1, 1/m and λ, whose rounding errors are ~1e-16; 1e-8 is the ALFWorld release's
#: threshold. Real differences are λ/m apart at least, so a λ/m below ~1e-7 would be lost as rounding.
ROUNDING_TOLERANCE = 1e-8

#: How the outcome enters R_i: ``pm1`` (+1 won, −1 lost; the paper) or ``01`` (1 / 0; the ALFWorld release).
OUTCOME_ENCODINGS = ("pm1", "01")

#: Which success rates let a GRPO group train the policy (see :func:`policy_task_filter`).
GROUP_FILTERS = ("mixed", "alfworld_release", "none")


def _votes_array(votes: Sequence[int] | np.ndarray, where: str) -> np.ndarray:
    """``votes`` as a 1-D float array after checking every vote is +1, -1 or 0."""
    array = np.asarray(votes, dtype=float).reshape(-1) if len(votes) else np.zeros(0)
    if not np.all(np.isin(array, (-1.0, 0.0, 1.0))):
        raise ValueError(f"{where}: votes must be +1 (good), -1 (bad) or 0 (unparseable), got {list(votes)}; "
                         "map the reward model's answers to these three values first")
    return array


def zscores(values: np.ndarray) -> np.ndarray:
    """Population z-scores (ddof=0) of ``values``; rounding-sized std or z-scores count as 0.

    All zeros when the std is below :data:`ROUNDING_TOLERANCE` (the values are equal up to rounding), and a
    z-score within it of 0 is 0 (a value equal to the mean up to rounding), so zero-advantage samples are
    dropped whatever the encoding of the same rewards.
    """
    std = values.std()
    if std < ROUNDING_TOLERANCE:
        return np.zeros_like(values)
    scores = (values - values.mean()) / std
    scores[np.abs(scores) < ROUNDING_TOLERANCE] = 0.0
    return scores


def outcome_value(won: bool, encoding: str = "pm1") -> float:
    """The outcome O_τ of a trajectory: +1.0 won / -1.0 lost (``pm1``), or 1.0 / 0.0 (``01``)."""
    if encoding not in OUTCOME_ENCODINGS:
        raise ValueError(f"outcome encoding must be one of {OUTCOME_ENCODINGS}, got {encoding!r}; "
                         "pm1 is the paper's +1/-1, 01 the ALFWorld release's 1/0")
    if bool(won):
        return 1.0
    return -1.0 if encoding == "pm1" else 0.0


def integrated_rewards(outcome: float, judgments: Sequence[Sequence[int]], lam: float = 1.0) -> np.ndarray:
    """Per-step policy rewards R_i = O + (λ/m_i)·Σ_j S_ij of one trajectory.

    Args:
        outcome: O_τ (see :func:`outcome_value`).
        judgments: ``judgments[i]`` lists the m_i votes on step i (+1 / -1, 0 = unparseable). m_i may
            differ per step: each step is averaged over its own votes, and a step without votes gets
            R_i = O (an unparseable vote counts in m_i, as a 0).
        lam: λ, the weight of the reward model against the outcome.

    Returns:
        A float array with one reward per step.
    """
    if not np.isfinite(outcome):
        raise ValueError(f"outcome must be a finite number (+1 won, -1 lost), got {outcome!r}")
    rewards = np.full(len(judgments), float(outcome))
    for index, votes in enumerate(judgments):
        array = _votes_array(votes, f"judgments[{index}]")
        if array.size:
            rewards[index] += lam * array.mean()
    return rewards


def step_advantages(group_rewards: Sequence[Sequence[float] | np.ndarray]) -> list[np.ndarray]:
    """Advantages of one task's rollouts: rewards z-scored across the rollouts at each step index.

    At step index t only the rollouts that have a step t take part (episodes have different lengths).
    With fewer than 2 such rollouts the advantage is the raw reward R (as in both releases); when all of
    them have the same reward, up to :data:`ROUNDING_TOLERANCE`, it is 0. The std is the population one
    (ddof=0).

    Args:
        group_rewards: one array of per-step rewards per rollout of the same task (ragged).

    Returns:
        One advantage array per rollout, the same lengths as the inputs.
    """
    rewards = [np.asarray(r, dtype=float).reshape(-1) for r in group_rewards]
    for index, array in enumerate(rewards):
        if not np.all(np.isfinite(array)):
            raise ValueError(f"group_rewards[{index}] has non-finite rewards {array.tolist()}; "
                             "check the outcome and the votes that built them")
    advantages = [np.zeros_like(r) for r in rewards]
    longest = max((len(r) for r in rewards), default=0)
    for t in range(longest):
        members = [k for k, r in enumerate(rewards) if len(r) > t]
        column = np.array([rewards[k][t] for k in members])
        scores = column if len(members) < 2 else zscores(column)
        for k, score in zip(members, scores):
            advantages[k][t] = score
    return advantages


def nonzero_mask(advantages: Sequence[float] | np.ndarray) -> np.ndarray:
    """Which samples to keep for training: True where the advantage is not zero."""
    return np.asarray(advantages, dtype=float) != 0.0


def consistency_rewards(step_reward: float, votes: Sequence[int]) -> np.ndarray:
    """Reward-model rewards of the m judgments of one step: z-scores of c_j = R_i·S_ij (S_ij = 0 → −2).

    A vote that agrees with the step's reward earns |R_i|, one that disagrees −|R_i|, and an
    unparseable judgment :data:`INVALID_JUDGMENT_REWARD`. The values are then z-scored within the
    step (ddof=0; all equal → zeros). A single judgment gets 0 — nothing to standardise it against —
    so, like any zero-advantage sample, it is not trained on (both releases drop it; with m = 1 the
    reward model gets no data at all).
    """
    if not np.isfinite(step_reward):
        raise ValueError(f"step_reward must be a finite number, got {step_reward!r}")
    array = _votes_array(votes, "votes")
    raw = np.where(array == 0.0, INVALID_JUDGMENT_REWARD, float(step_reward) * array)
    if raw.size < 2:
        return np.zeros_like(raw)
    return zscores(raw)


def episode_consistency_rewards(step_rewards: Sequence[float] | np.ndarray,
                                judgments: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """:func:`consistency_rewards` for every step of one episode (``judgments[i]`` are step i's votes)."""
    step_rewards = np.asarray(step_rewards, dtype=float).reshape(-1)
    if len(step_rewards) != len(judgments):
        raise ValueError(f"one step reward per judged step expected: got {len(step_rewards)} rewards and "
                         f"{len(judgments)} judgment lists; pass the output of integrated_rewards for this episode")
    return [consistency_rewards(reward, votes) for reward, votes in zip(step_rewards, judgments)]


#: What the reward model is rewarded for (``reward_model.objective``): ``paper`` the consistency R_i·S_ij above;
#: ``balanced`` the same, each episode weighted so that won and lost episodes weigh alike
#: (:func:`outcome_balance_weights`); ``labelled`` agreement with the family's step label (:func:`label_rewards`).
RM_OBJECTIVES = ("paper", "balanced", "labelled", "labelled_balanced")
LABELLED_OBJECTIVES = ("labelled", "labelled_balanced")
"""The objectives trained on the family's step labels (privileged: the planner's), not on outcomes."""


def label_rewards(label: bool | None, votes: Sequence[int]) -> np.ndarray:
    """Reward-model rewards of the m judgments of a step with a known label: agreement, z-scored within the step.

    A vote equal to the label (good → +1, bad → −1) earns +1, the other vote −1, an unparseable one
    :data:`INVALID_JUDGMENT_REWARD`; z-scored like :func:`consistency_rewards` (all equal or a lone judgment → 0).
    An undetermined step (``label`` None) gives zeros: nothing to agree with. By hand: label bad, votes
    [-1, 1, 1] → raw [1, -1, -1], mean -1/3, std 0.94281 → [1.41421, -0.70711, -0.70711].
    """
    array = _votes_array(votes, "votes")
    if label is None or array.size < 2:
        return np.zeros_like(array)
    truth = 1.0 if label else -1.0
    raw = np.where(array == 0.0, INVALID_JUDGMENT_REWARD, np.where(array == truth, 1.0, -1.0))
    return zscores(raw)


def outcome_balance_weights(won: Sequence[bool]) -> np.ndarray:
    """Per-episode weights under which won and lost episodes weigh alike (:func:`class_balance_weights` of the outcomes).

    With O = ±1 and λ <= 1 the consistency reward has the sign of the outcome, so a batch of mostly lost episodes
    pays the judge for voting "bad" far more often than for "good": the judge learns the base rate. Weighting each
    class to half the total removes that pull.
    """
    return class_balance_weights(won)


def class_balance_weights(flags: Sequence[bool]) -> np.ndarray:
    """Weights under which the True and the False items weigh alike: n / (2 · n_class), 1 with one class.

    By hand: [True, False, False, False] → [2, 2/3, 2/3, 2/3] (4/2 and 4/6).
    """
    array = np.asarray([bool(f) for f in flags], dtype=bool)
    if array.size == 0:
        return np.zeros(0)
    true = int(array.sum())
    if true in (0, array.size):
        return np.ones(array.size)
    return np.where(array, array.size / (2 * true), array.size / (2 * (array.size - true)))


def _check_rate(success_rate: float) -> float:
    rate = float(success_rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"success_rate must be in [0, 1], got {success_rate!r}")
    return rate


def policy_task_filter(success_rate: float, rule: str = "mixed") -> bool:
    """Whether a GRPO group gives the policy training data, by the rule named in :data:`GROUP_FILTERS`.

    * ``mixed``: 0 < success rate < 1 — groups with both outcomes (with all outcomes equal, the outcome
      adds nothing to the advantages).
    * ``alfworld_release``: 1/8 ≤ success rate ≤ 7/8 (the ALFWorld release); differs from ``mixed`` only
      for groups of 9 or more, e.g. 1 won of 9 (0.111) is dropped.
    * ``none``: every group (the OSWorld release): all-fail and all-win groups train through the
      judge's votes alone.
    """
    rate = _check_rate(success_rate)
    if rule == "mixed":
        return 0.0 < rate < 1.0
    if rule == "alfworld_release":
        return 1 / 8 <= rate <= 7 / 8
    if rule == "none":
        return True
    raise ValueError(f"group filter rule must be one of {GROUP_FILTERS}, got {rule!r}; "
                     "mixed is 0 < success < 1, alfworld_release 1/8..7/8, none keeps every group")


def reward_model_task_filter(success_rate: float, low: float = 0.2, high: float = 0.8) -> bool:
    """Whether a task gives reward-model training data: low ≤ success rate ≤ high."""
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"need 0 <= low <= high <= 1, got low={low!r}, high={high!r}; swap them if reversed")
    rate = _check_rate(success_rate)
    return low <= rate <= high


def _check_passes(passes, program_correct) -> tuple[np.ndarray, np.ndarray]:
    """``passes`` as a (programs × tests) bool matrix and ``program_correct`` as a bool vector, checked."""
    matrix = np.asarray(passes, dtype=bool)
    correct = np.asarray(program_correct, dtype=bool).reshape(-1)
    if matrix.ndim != 2:
        raise ValueError(f"passes must be a (programs x tests) matrix, got shape {matrix.shape}; "
                         "use passes[p][t] = program p passes generated test t")
    if matrix.shape[0] != correct.shape[0]:
        raise ValueError(f"program_correct needs one entry per program (row of passes): passes has "
                         f"{matrix.shape[0]} programs, program_correct has {correct.shape[0]}")
    return matrix, correct


def unit_test_correctness(passes, program_correct) -> np.ndarray:
    """Which generated unit tests are correct: test t is correct iff every correct program passes it.

    Args:
        passes: (programs × tests) booleans, ``passes[p, t]`` = program p passes generated test t.
        program_correct: per program, whether it passes all ground-truth tests.

    Returns:
        An object array with one entry per test: True / False, or None (undetermined) when no program
        is correct, since then there is nothing to check a test against.
    """
    matrix, correct = _check_passes(passes, program_correct)
    result = np.empty(matrix.shape[1], dtype=object)
    if not correct.any():
        result[:] = None
        return result
    result[:] = [bool(v) for v in matrix[correct].all(axis=0)]
    return result


def unit_test_rewards(passes, program_correct) -> np.ndarray:
    """Rewards of generated unit tests: + wrong programs a correct test catches, − those a wrong one lets pass.

    Reading of the method ("a test is rewarded by how many wrong programs it catches"): a correct test
    (see :func:`unit_test_correctness`) earns +k where k is the number of wrong programs (not passing
    the ground truth) that fail it; an incorrect test (one a correct program fails) earns −k' where k'
    is the number of wrong programs that pass it (it rejects a right answer and still lets wrong ones
    through). When no program is correct, correctness is undetermined and every reward is 0.

    Returns:
        A float array, one reward per test.
    """
    matrix, correct = _check_passes(passes, program_correct)
    if not correct.any():
        return np.zeros(matrix.shape[1])
    test_correct = matrix[correct].all(axis=0)
    wrong = matrix[~correct]
    caught = (~wrong).sum(axis=0).astype(float)
    let_through = wrong.sum(axis=0).astype(float)
    return np.where(test_correct, caught, -let_through)
