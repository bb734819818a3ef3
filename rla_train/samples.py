"""From scored episodes to training samples: the policy's step samples and the reward model's judgment samples.

A GRPO group is the list of episodes of one task. For the policy, each step's completion becomes one
:class:`~rla_train.policy_update.Sample` whose advantage is that step's reward z-scored across the group at
the same step index (:func:`rla_train.rewards.step_advantages`), with the step reward chosen by the mode:

* outcome only:            R_i = O                       (GRPO on the outcome)
* integrated (the method): R_i = O + (λ/m)·Σ_j S_ij
* reward only:             R_i = (λ/m)·Σ_j S_ij

Groups whose outcomes are all equal (success rate 0 or 1) give the policy nothing when the outcome is in
the reward (the task filter 0 < s < 1). For the reward model, each of the m judgments of a step becomes a
sample rewarded by its consistency with the step reward, R_i·S_ij (unparseable: −2), z-scored within the
step's m judgments, and only from tasks whose success rate is in [low, high] (0.2–0.8).
Episodes that ended with an env error are left out of both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rla_train.policy_update import Sample
from rla_train.rewards import (consistency_rewards, integrated_rewards, outcome_value, policy_task_filter,
                               reward_model_task_filter, step_advantages)

__all__ = ["RewardSpec", "step_rewards", "policy_samples", "reward_model_samples", "group_success_rate"]


@dataclass(frozen=True)
class RewardSpec:
    """How step rewards are formed: with the outcome, with the judgments (weight λ), or both."""

    use_outcome: bool = True
    use_judgments: bool = True
    lam: float = 1.0

    def __post_init__(self):
        if not (self.use_outcome or self.use_judgments):
            raise ValueError("a step reward needs the outcome, the judgments, or both")
        if self.lam < 0:
            raise ValueError(f"lam (λ) must be >= 0, got {self.lam}")


def step_rewards(episode, spec: RewardSpec) -> np.ndarray:
    """R_i for every step of ``episode`` under ``spec`` (judgments must be present when the spec uses them)."""
    steps = episode.num_steps
    if spec.use_judgments and (episode.judgments is None or len(episode.judgments) != steps):
        raise ValueError(f"episode of task {episode.task_id} has {steps} steps but "
                         f"{'no' if episode.judgments is None else len(episode.judgments)} judged steps; "
                         "judge it with RewardModel.judge before building samples")
    outcome = outcome_value(episode.won) if spec.use_outcome else 0.0
    if not spec.use_judgments:
        return np.full(steps, outcome)
    return integrated_rewards(outcome, episode.judgments, spec.lam)


def group_success_rate(group: Sequence) -> float:
    """The share of won episodes in a group."""
    return sum(bool(e.won) for e in group) / len(group) if group else 0.0


def _usable(group: Sequence) -> list:
    return [e for e in group if e.error is None and e.num_steps > 0]


def policy_samples(groups: Sequence[Sequence], spec: RewardSpec) -> tuple[list[Sample], dict[str, float]]:
    """The policy's step samples from GRPO groups, and counts (groups used, filtered, zero-variance steps)."""
    samples: list[Sample] = []
    stats = {"groups": float(len(groups)), "groups_filtered": 0.0, "steps": 0.0, "zero_advantage_steps": 0.0}
    for group_index, group in enumerate(groups):
        episodes = _usable(group)
        if len(episodes) < 2 or (spec.use_outcome and not policy_task_filter(group_success_rate(episodes))):
            stats["groups_filtered"] += 1
            continue
        rewards = [step_rewards(e, spec) for e in episodes]
        for episode, advantages in zip(episodes, step_advantages(rewards)):
            for index, (step, advantage) in enumerate(zip(episode.steps, advantages)):
                stats["steps"] += 1
                stats["zero_advantage_steps"] += float(advantage == 0)
                samples.append(Sample(step.prompt_ids, step.completion_ids, float(advantage), step.logprobs,
                                      {"group": group_index, "task_id": episode.task_id, "step": index},
                                      alternatives=getattr(step, "alternatives", None)))
    stats["zero_advantage_fraction"] = stats["zero_advantage_steps"] / stats["steps"] if stats["steps"] else 0.0
    return samples, stats


def reward_model_samples(groups: Sequence[Sequence], generations: dict[int, list], spec: RewardSpec, *,
                         low: float = 0.2, high: float = 0.8) -> tuple[list[Sample], dict[str, float]]:
    """The reward model's judgment samples from judged GRPO groups.

    ``generations[id(episode)]`` holds the judge's Generation for each step of that episode (what
    :class:`~rla_train.reward_model.JudgeReport` returns), so each judgment's prompt and token ids are
    trained exactly as they were sampled.
    """
    samples: list[Sample] = []
    stats = {"groups_filtered": 0.0, "judgments": 0.0}
    for group_index, group in enumerate(groups):
        episodes = _usable(group)
        if not episodes or not reward_model_task_filter(group_success_rate(episodes), low, high):
            stats["groups_filtered"] += 1
            continue
        for episode in episodes:
            rewards = step_rewards(episode, spec)
            for index, (reward, votes, generation) in enumerate(zip(rewards, episode.judgments,
                                                                    generations[id(episode)])):
                for sample, value in zip(generation.samples, consistency_rewards(float(reward), votes)):
                    stats["judgments"] += 1
                    samples.append(Sample(generation.prompt_ids, sample.token_ids, float(value), sample.logprobs,
                                          {"group": group_index, "task_id": episode.task_id, "step": index}))
    return samples, stats
