"""From scored episodes to training samples: the policy's step samples and the reward model's judgment samples.

A GRPO group is the list of episodes of one task. For the policy, each step's completion becomes one
:class:`Sample` whose advantage is that step's reward z-scored across the group at
the same step index (:func:`rla_train.signals.rewards.step_advantages`), with the step reward chosen by the mode:

* outcome only:            R_i = O                       (GRPO on the outcome)
* integrated (the method): R_i = O + (λ/m)·Σ_j S_ij
* reward only:             R_i = (λ/m)·Σ_j S_ij

or, with ``RewardSpec(advantage="gigpo")`` (``train.mode=gigpo``), GiGPO's advantages from the outcome alone: the
group's episode-level advantage plus a step-level one among the steps taken from the same anchor state
(:func:`anchor_state`; the maths in :mod:`rla_train.signals.gigpo`), with no group filter.

O is +1 / −1 (``outcome_encoding="pm1"``, the paper) or 1 / 0 (``"01"``, the ALFWorld release; for the
policy the same as pm1 with 2λ). When the reward contains the outcome, a group trains the policy only if
its success rate passes ``group_filter`` (:func:`rla_train.signals.rewards.policy_task_filter`: ``mixed``
0 < s < 1, ``alfworld_release`` 1/8..7/8, ``none``). For the reward model, each of the m judgments of a step
becomes a sample rewarded by its consistency with the step reward, R_i·S_ij (unparseable: −2), z-scored
within the step's m judgments (a step judged once gives 0, i.e. no data), and only from tasks whose success
rate is in [low, high] (0.2–0.8). Episodes that ended with an env error are left out of both.

Functions: :func:`step_rewards`, :func:`group_success_rate`, :func:`policy_samples`,
:func:`reward_model_samples`, and :func:`advantage_changes` / :func:`advantage_change_fraction` — which
policy samples the judge's votes change compared with the outcome alone (the evidence that the judge
changes the policy's signal; the loop logs it as ``policy_advantage_changed_fraction``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rla_train.signals.gigpo import GIGPO_NORMS, GigpoStats, gigpo_advantages
from rla_train.signals.rewards import (GROUP_FILTERS, LABELLED_OBJECTIVES, OUTCOME_ENCODINGS, RM_OBJECTIVES,
                                       ROUNDING_TOLERANCE, class_balance_weights, consistency_rewards,
                                       integrated_rewards, label_rewards, outcome_balance_weights, outcome_value,
                                       policy_task_filter, reward_model_task_filter, step_advantages)

__all__ = ["Sample", "RewardSpec", "ADVANTAGES", "anchor_state", "step_rewards", "policy_samples", "reward_model_samples", "group_success_rate",
           "advantage_changes", "advantage_change_fraction"]


@dataclass
class Sample:
    """One (prompt, completion, advantage) triple for a policy-gradient update.

    Attributes:
        prompt_ids: the prompt's token ids (everything the model saw, env observations included).
        completion_ids: the model's tokens (the only tokens in the loss).
        advantage: applied to every completion token.
        logprobs: the sampler's per-token log-probabilities (kept for off-policy corrections; optional).
        info: anything to keep with the sample (episode, step, kind) for logs.
        alternatives: for a choice policy, the token ids of every candidate it chose among
            (``completion_ids`` is one of them); a trainer with ``choice_logprob=True`` needs them.
        choice_logprobs: for a choice, the log-probability with which the sampler would choose each alternative
            (the behaviour policy's distribution); a trainer takes it instead of scoring the state again.
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    advantage: float
    logprobs: list[float] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    alternatives: list[list[int]] | None = None
    choice_logprobs: list[float] | None = None


#: How the policy's advantages are formed: ``grpo`` (step rewards z-scored across the group at each step index) or
#: ``gigpo`` (GiGPO's episode + anchor-state step advantages, :mod:`rla_train.signals.gigpo`).
ADVANTAGES = ("grpo", "gigpo")


@dataclass(frozen=True)
class RewardSpec:
    """How step rewards are formed and which groups train the policy.

    Attributes:
        use_outcome: the outcome O is in R_i.
        use_judgments: the reward model's mean vote, weighted by ``lam``, is in R_i.
        lam: λ, the judge's weight against the outcome.
        outcome_encoding: ``pm1`` (O = +1 / −1) or ``01`` (O = 1 / 0, the ALFWorld release).
        group_filter: ``mixed``, ``alfworld_release`` or ``none`` (see
            :func:`rla_train.signals.rewards.policy_task_filter`); applies when the reward uses the outcome
            and ``advantage`` is ``grpo``.
        advantage: ``grpo`` or ``gigpo`` (:data:`ADVANTAGES`); ``gigpo`` reads the outcome alone.
        gamma: ``gigpo``: the discount of the step-level returns.
        step_advantage_weight: ``gigpo``: ω, the step-level advantage's weight.
        gigpo_norm: ``gigpo``: ``mean_std_norm`` or ``mean_norm`` (:data:`~rla_train.signals.gigpo.GIGPO_NORMS`).
    """

    use_outcome: bool = True
    use_judgments: bool = True
    lam: float = 1.0
    outcome_encoding: str = "pm1"
    group_filter: str = "mixed"
    advantage: str = "grpo"
    gamma: float = 0.95
    step_advantage_weight: float = 1.0
    gigpo_norm: str = "mean_std_norm"

    def __post_init__(self):
        if not (self.use_outcome or self.use_judgments):
            raise ValueError("a step reward needs the outcome, the judgments, or both")
        if self.lam < 0:
            raise ValueError(f"lam (λ) must be >= 0, got {self.lam}")
        if self.outcome_encoding not in OUTCOME_ENCODINGS:
            raise ValueError(f"outcome_encoding must be one of {OUTCOME_ENCODINGS}, got {self.outcome_encoding!r}; "
                             "pm1 is the paper's +1/-1, 01 the ALFWorld release's 1/0")
        if self.group_filter not in GROUP_FILTERS:
            raise ValueError(f"group_filter must be one of {GROUP_FILTERS}, got {self.group_filter!r}; "
                             "mixed is 0 < success < 1, alfworld_release 1/8..7/8, none keeps every group")
        if self.advantage not in ADVANTAGES:
            raise ValueError(f"advantage must be one of {ADVANTAGES}, got {self.advantage!r}")
        if self.advantage == "gigpo":
            if self.use_judgments or not self.use_outcome:
                raise ValueError("advantage='gigpo' forms its advantages from the outcome alone: use use_outcome=True, "
                                 "use_judgments=False")
            if not 0.0 <= self.gamma <= 1.0 or self.step_advantage_weight < 0:
                raise ValueError(f"gigpo needs 0 <= gamma <= 1 and step_advantage_weight >= 0, got gamma={self.gamma}, "
                                 f"step_advantage_weight={self.step_advantage_weight}")
            if self.gigpo_norm not in GIGPO_NORMS:
                raise ValueError(f"gigpo_norm must be one of {GIGPO_NORMS}, got {self.gigpo_norm!r}")


def anchor_state(episode, index: int) -> tuple[str, tuple[str, ...]]:
    """The environment state before step ``index`` of ``episode``, as GiGPO groups steps: the observation the step
    answered and the admissible actions the env listed with it (``info["admissible_actions"]``, empty when the env
    lists none). Two steps with equal keys were taken from what the agent sees as the same state."""
    if index >= len(episode.observations):
        raise ValueError(f"episode of task {episode.task_id} has {len(episode.observations)} observations for "
                         f"{episode.num_steps} steps; GiGPO needs the observation before every step")
    observation = episode.observations[index]
    if not isinstance(observation, str):  # str() of a screenshot array elides its pixels: different screens collide
        raise ValueError(f"GiGPO groups steps by their text observation; task {episode.task_id}'s observations are "
                         f"{type(observation).__name__}, not text (train.mode=gigpo needs a text env)")
    info = episode.infos[index] if index < len(episode.infos) and isinstance(episode.infos[index], dict) else {}
    admissible = info.get("admissible_actions") or ()
    return observation, tuple(str(a) for a in admissible)


def step_rewards(episode, spec: RewardSpec) -> np.ndarray:
    """R_i for every step of ``episode`` under ``spec`` (judgments must be present when the spec uses them)."""
    steps = episode.num_steps
    if spec.use_judgments and (episode.judgments is None or len(episode.judgments) != steps):
        raise ValueError(f"episode of task {episode.task_id} has {steps} steps but "
                         f"{'no' if episode.judgments is None else len(episode.judgments)} judged steps; "
                         "judge it with RewardModel.judge before building samples")
    outcome = outcome_value(episode.won, spec.outcome_encoding) if spec.use_outcome else 0.0
    if not spec.use_judgments:
        return np.full(steps, outcome)
    return integrated_rewards(outcome, episode.judgments, spec.lam)


def group_success_rate(group: Sequence) -> float:
    """The share of won episodes in a group."""
    return sum(bool(e.won) for e in group) / len(group) if group else 0.0


def _usable(group: Sequence) -> list:
    return [e for e in group if e.error is None and e.num_steps > 0]


def _trained_advantages(group: Sequence, spec: RewardSpec) -> tuple[list, list[np.ndarray], GigpoStats | None] | None:
    """The usable episodes of one group, their step advantages under ``spec`` and, for GiGPO, the group's step-level
    statistics; None when the group trains nothing."""
    episodes = _usable(group)
    if len(episodes) < 2:
        return None
    if spec.advantage == "gigpo":  # no group filter: a group that always wins still learns the shorter way
        anchors = [[anchor_state(e, t) for t in range(e.num_steps)] for e in episodes]
        advantages, stats = gigpo_advantages([e.won for e in episodes], anchors, gamma=spec.gamma,
                                             step_weight=spec.step_advantage_weight, norm=spec.gigpo_norm)
        return episodes, advantages, stats
    if spec.use_outcome and not policy_task_filter(group_success_rate(episodes), spec.group_filter):
        return None
    return episodes, step_advantages([step_rewards(e, spec) for e in episodes]), None


def _sample(prompt_ids, token_ids, value: float, logprobs, source, meta: dict[str, Any]) -> Sample:
    """One training row: ``token_ids`` after ``prompt_ids`` under ``value``, with the choice data ``source`` (a step
    or a judge's sample) carries when it was chosen from a list (its alternatives and their log-probabilities)."""
    return Sample(prompt_ids, token_ids, float(value), logprobs, meta, alternatives=getattr(source, "alternatives", None),
                  choice_logprobs=getattr(source, "choice_logprobs", None))


_GIGPO_COUNTS = ("shared_steps", "step_advantage_nonzero")


def policy_samples(groups: Sequence[Sequence], spec: RewardSpec) -> tuple[list[Sample], dict[str, float]]:
    """The policy's step samples from GRPO groups, and counts (groups used, filtered, zero-variance steps; for GiGPO
    the share of steps whose anchor state recurs in the group and whose step-level advantage is not 0)."""
    samples: list[Sample] = []
    stats = {"groups": float(len(groups)), "groups_filtered": 0.0, "steps": 0.0, "zero_advantage_steps": 0.0}
    if spec.advantage == "gigpo":
        stats.update({f"gigpo_{name}": 0.0 for name in _GIGPO_COUNTS})
    for group_index, group in enumerate(groups):
        trained = _trained_advantages(group, spec)
        if trained is None:
            stats["groups_filtered"] += 1
            continue
        episodes, group_advantages, gigpo_stats = trained
        for name in _GIGPO_COUNTS if gigpo_stats is not None else ():
            stats[f"gigpo_{name}"] += getattr(gigpo_stats, name)
        for episode, advantages in zip(episodes, group_advantages):
            for index, (step, advantage) in enumerate(zip(episode.steps, advantages)):
                stats["steps"] += 1
                stats["zero_advantage_steps"] += float(advantage == 0)
                samples.append(_sample(step.prompt_ids, step.completion_ids, advantage, step.logprobs, step,
                                       {"group": group_index, "task_id": episode.task_id, "step": index}))
    stats["zero_advantage_fraction"] = stats["zero_advantage_steps"] / stats["steps"] if stats["steps"] else 0.0
    if spec.advantage == "gigpo":  # how much step-level signal there was: shared anchor states, nonzero step terms
        total = stats["steps"] or 1.0  # every step of a GiGPO group is a sample
        stats["gigpo_shared_step_fraction"] = stats["gigpo_shared_steps"] / total
        stats["gigpo_step_advantage_fraction"] = stats["gigpo_step_advantage_nonzero"] / total
    return samples, stats


def _outcome_only(spec: RewardSpec) -> RewardSpec:
    return replace(spec, use_outcome=True, use_judgments=False, advantage="grpo")


def advantage_changes(groups: Sequence[Sequence], spec: RewardSpec,
                      baseline: RewardSpec | None = None) -> list[bool]:
    """Whether ``baseline`` gives each of ``spec``'s policy samples another advantage (policy_samples' order).

    ``baseline`` defaults to the outcome alone with ``spec``'s encoding and group filter (GRPO on the
    outcome). A sample is changed when its advantage differs by more than
    :data:`~rla_train.signals.rewards.ROUNDING_TOLERANCE`, which includes being trained by one (nonzero) and
    dropped by the other (zero, or its group filtered out by ``baseline``).
    """
    baseline = _outcome_only(spec) if baseline is None else baseline
    changed: list[bool] = []
    for group in groups:
        trained = _trained_advantages(group, spec)
        if trained is None:
            continue
        advantages = trained[1]
        reference = _trained_advantages(group, baseline)
        reference_advantages = reference[1] if reference is not None else [np.zeros_like(a) for a in advantages]
        for ours, theirs in zip(advantages, reference_advantages):
            changed.extend(bool(v) for v in np.abs(ours - theirs) > ROUNDING_TOLERANCE)
    return changed


def advantage_change_fraction(groups: Sequence[Sequence], spec: RewardSpec,
                              baseline: RewardSpec | None = None) -> float:
    """The share of ``spec``'s policy samples whose advantage ``baseline`` (default: outcome only) changes.

    0.0 when ``spec`` trains no sample. See :func:`advantage_changes`.
    """
    changed = advantage_changes(groups, spec, baseline)
    return sum(changed) / len(changed) if changed else 0.0


def _episode_labels(labels: dict[int, Sequence[bool | None]], episode) -> list[bool | None] | None:
    """The family's label of each of ``episode``'s judged steps, or None when the oracle gave none for every step."""
    episode_labels = list(labels.get(id(episode)) or [])
    return episode_labels if len(episode_labels) == len(episode.judgments) else None


def reward_model_samples(groups: Sequence[Sequence], generations: dict[int, list], spec: RewardSpec, *,
                         low: float = 0.2, high: float = 0.8, objective: str = "paper",
                         labels: dict[int, Sequence[bool | None]] | None = None) -> tuple[list[Sample], dict[str, float]]:
    """The reward model's judgment samples from judged GRPO groups, and counts.

    ``generations[id(episode)]`` holds the judge's Generation for each step of that episode (what
    :class:`~rla_train.reward_model.JudgeReport` returns), so each judgment's prompt and token ids are
    trained exactly as they were sampled. ``objective`` (:data:`~rla_train.signals.rewards.RM_OBJECTIVES`):
    ``paper``, the consistency reward with R_i under ``spec`` (its outcome encoding and λ); ``balanced``, the same
    scaled by :func:`~rla_train.signals.rewards.outcome_balance_weights` over the kept episodes; ``labelled``,
    agreement with ``labels[id(episode)]`` (the family's step labels; an episode without labels gives no data),
    on every group: the ``[low, high]`` success-rate filter exists for the outcome-based objectives;
    ``labelled_balanced``, the same with the good and the bad steps of the batch weighing alike
    (:func:`~rla_train.signals.rewards.class_balance_weights` over its labelled steps: most of a weak policy's steps
    are bad, and agreement on them alone teaches the judge to vote "bad"). Counts: ``groups_filtered``, ``judgments`` and ``zero_reward_judgments`` (samples the trainer will drop: all of
    a step's judgments agreed in value, or the step was judged once).
    """
    if objective not in RM_OBJECTIVES:
        raise ValueError(f"objective must be one of {RM_OBJECTIVES}, got {objective!r}")
    labelled = objective in LABELLED_OBJECTIVES
    if labelled and labels is None:
        raise ValueError(f"objective={objective!r} needs labels: " "{id(episode): [True | False | None per step]} from the "
                         "family's step-label oracle")
    samples: list[Sample] = []
    stats = {"groups_filtered": 0.0, "judgments": 0.0, "zero_reward_judgments": 0.0}
    kept = []
    for group_index, group in enumerate(groups):
        episodes = _usable(group)
        if not episodes or (not labelled  # labels need no spread of outcomes in the group
                            and not reward_model_task_filter(group_success_rate(episodes), low, high)):
            stats["groups_filtered"] += 1
            continue
        kept += [(group_index, episode) for episode in episodes]
    weights = (outcome_balance_weights([e.won for _, e in kept]) if objective == "balanced"
               else [1.0] * len(kept))
    kept_labels = [_episode_labels(labels, e) if labelled else None for _, e in kept]
    label_weight = {True: 1.0, False: 1.0}
    if objective == "labelled_balanced":  # over the batch's labelled steps: good and bad weigh alike
        step_labels = [label for found in kept_labels for label in found or () if label is not None]
        label_weight.update(zip(step_labels, map(float, class_balance_weights(step_labels))))
    for (group_index, episode), weight, episode_labels in zip(kept, weights, kept_labels):
        if labelled:
            if episode_labels is None:
                continue  # not labelled (an oracle failure): no data
            values = [label_rewards(label, votes) * (label_weight[label] if label is not None else 1.0)
                      for label, votes in zip(episode_labels, episode.judgments)]
        else:
            values = [consistency_rewards(float(reward), votes) * weight
                      for reward, votes in zip(step_rewards(episode, spec), episode.judgments)]
        for index, (step_values, generation) in enumerate(zip(values, generations[id(episode)])):
            for sample, value in zip(generation.samples, step_values):
                stats["judgments"] += 1
                stats["zero_reward_judgments"] += float(value == 0)
                samples.append(_sample(generation.prompt_ids, sample.token_ids, value, sample.logprobs, sample,
                                       {"group": group_index, "task_id": episode.task_id, "step": index}))
    return samples, stats
