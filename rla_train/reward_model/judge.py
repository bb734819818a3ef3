"""The generative reward model: every step of every trajectory judged ``m`` times in one generate call.

    rm = RewardModel(backend, judgments_per_step=3)
    report = rm.judge(task, trajectories)       # or a list of tasks, or None for Episodes (episode.task)
    trajectories[0].judgments                   # [[1, -1, 1], [-1, -1, -1], ...]: m votes per step
    report.unparseable_fraction                 # share of answers with no readable \\boxed{...}

Votes are +1 (good step), -1 (bad step) or 0 (the answer had no readable box, or was cut at the token
limit: see :func:`~rla_train.reward_model.parsing.parse_verdict`). The answers are kept:
:attr:`Episode.judgment_texts` for episodes and :attr:`JudgeReport.texts` for every trajectory. The
policy and reward-model rewards computed from these votes live in :mod:`rla_train.signals.rewards`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory
from rla_train.backends.base import Chat, Generation, SamplingParams
from rla_train.reward_model.parsing import UNPARSEABLE, parse_verdict
from rla_train.reward_model.prompts import DEFAULT_MAX_CHARS, DEFAULT_MAX_HISTORY, PROMPT_STYLES, judge_chat

__all__ = ["DEFAULT_JUDGE_SAMPLING", "JudgeReport", "RewardModel", "resolve_tasks"]

DEFAULT_JUDGE_SAMPLING = SamplingParams(max_new_tokens=256, temperature=1.0, top_p=1.0)
"""Sampling for step judgments: temperature 1 so the ``m`` votes on a step are independent samples."""


@dataclass
class JudgeReport:
    """What one :meth:`RewardModel.judge` call did.

    Attributes:
        trajectories: trajectories judged.
        steps: steps judged (over all trajectories).
        judgments: answers received (``steps * judgments_per_step``).
        unparseable: answers with no readable verdict, or cut at the token limit (vote 0).
        texts: per trajectory, per step, the judge's answers (``texts[t][i][j]``).
        generations: per trajectory, per step, the backend's Generation (prompt ids, the m samples' token ids and
            logprobs): what training the reward model needs.
    """

    trajectories: int = 0
    steps: int = 0
    judgments: int = 0
    unparseable: int = 0
    texts: list[list[list[str]]] = field(default_factory=list, repr=False)
    generations: list[list[Generation]] = field(default_factory=list, repr=False)

    @property
    def unparseable_fraction(self) -> float:
        """The share of answers with no readable verdict (0.0 when nothing was judged)."""
        return self.unparseable / self.judgments if self.judgments else 0.0

    def summary(self) -> dict[str, Any]:
        """The counts and the unparseable fraction as a dict (for logs)."""
        return {"trajectories": self.trajectories, "steps": self.steps, "judgments": self.judgments,
                "unparseable": self.unparseable, "unparseable_fraction": self.unparseable_fraction}


def resolve_tasks(task_or_tasks: Task | Sequence[Task | None] | None,
                  trajectories: Sequence[Trajectory]) -> list[Task]:
    """The task of each trajectory: one task for all, a list aligned with them, or each Episode's ``task``.

    Raises ``ValueError`` when a list has the wrong length, or a trajectory has no task to judge it by.
    """
    if isinstance(task_or_tasks, Task):
        return [task_or_tasks] * len(trajectories)
    if task_or_tasks is None:
        given: list[Task | None] = [None] * len(trajectories)
    else:
        given = list(task_or_tasks)
        if len(given) != len(trajectories):
            raise ValueError(f"expected one task per trajectory ({len(trajectories)}), got {len(given)} tasks; "
                             "pass a single Task for all, or a list aligned with the trajectories")
    tasks = []
    for index, (task, trajectory) in enumerate(zip(given, trajectories)):
        task = task if task is not None else getattr(trajectory, "task", None)
        if not isinstance(task, Task):
            raise ValueError(f"trajectory {index} (task id {trajectory.task_id!r}) has no task to judge it by; "
                             f"got {type(task).__name__}: pass the Task (or a list of Tasks) to judge()")
        tasks.append(task)
    return tasks


class RewardModel:
    """A generative reward model that votes on each step of a trajectory, ``m`` times, via a backend.

    Args:
        backend: any :class:`~rla_train.backends.base.GenerationBackend`.
        judgments_per_step: ``m``, the votes per step (>= 1).
        sampling: sampling for the judge (default :data:`DEFAULT_JUDGE_SAMPLING`).
        max_history: earlier steps shown in each prompt (see :func:`~rla_train.reward_model.prompts.judge_chat`).
        max_chars: longest observation shown in each prompt.
        prompt_style: ``"full"`` or ``"compact"`` (for tiny choice judges; see :mod:`~rla_train.reward_model.prompts`).
    """

    def __init__(self, backend, *, judgments_per_step: int = 3, sampling: SamplingParams | None = None,
                 max_history: int = DEFAULT_MAX_HISTORY, max_chars: int = DEFAULT_MAX_CHARS,
                 prompt_style: str = "full"):
        if not callable(getattr(backend, "generate", None)):
            raise TypeError(f"backend must be a generation backend with generate(prompts, n, sampling), got "
                            f"{type(backend).__name__}; build one with rla_train.backends")
        if type(judgments_per_step) is not int or judgments_per_step < 1:
            raise ValueError(f"judgments_per_step must be an int >= 1 (votes per step; the method uses 3), "
                             f"got {judgments_per_step!r}")
        if sampling is not None and not isinstance(sampling, SamplingParams):
            raise TypeError(f"sampling must be a SamplingParams, got {type(sampling).__name__}")
        if type(max_history) is not int or max_history < 0:
            raise ValueError(f"max_history must be an int >= 0 (earlier steps shown), got {max_history!r}")
        if prompt_style not in PROMPT_STYLES:
            raise ValueError(f"prompt_style must be one of {PROMPT_STYLES}, got {prompt_style!r}")
        self.backend = backend
        self.prompt_style = prompt_style
        self.judgments_per_step = judgments_per_step
        self.sampling = sampling or DEFAULT_JUDGE_SAMPLING
        self.max_history = max_history
        self.max_chars = max_chars

    def prompts(self, task_or_tasks: Task | Sequence[Task | None] | None,
                trajectories: Sequence[Trajectory]) -> list[tuple[int, int, Chat]]:
        """``(trajectory index, step index, chat)`` for every step of every trajectory, in order."""
        tasks = resolve_tasks(task_or_tasks, trajectories)
        return [(t, i, judge_chat(task, trajectory, i, max_history=self.max_history, max_chars=self.max_chars,
                                  style=self.prompt_style))
                for t, (task, trajectory) in enumerate(zip(tasks, trajectories))
                for i in range(len(trajectory.actions))]

    def judge(self, task_or_tasks: Task | Sequence[Task | None] | None,
              trajectories: Trajectory | Sequence[Trajectory]) -> JudgeReport:
        """Fill ``judgments`` (and an Episode's ``judgment_texts``) of every trajectory, in one generate call.

        ``task_or_tasks`` is one Task for all trajectories, a list aligned with them (None entries fall back
        to the Episode's ``task``), or None to use each Episode's ``task``; a given task wins over the
        Episode's. Existing judgments are replaced. Trajectories with no steps get ``[]``.
        """
        if isinstance(trajectories, Trajectory):
            trajectories = [trajectories]
        trajectories = list(trajectories)
        prompts = self.prompts(task_or_tasks, trajectories)
        texts: list[list[list[str]]] = [[] for _ in trajectories]
        votes_of: list[list[list[int]]] = [[] for _ in trajectories]
        kept: list[list[Generation]] = [[] for _ in trajectories]
        if prompts:
            generations = self.backend.generate([chat for _, _, chat in prompts], n=self.judgments_per_step,
                                                sampling=self.sampling)
            if len(generations) != len(prompts):
                raise RuntimeError(f"backend {getattr(self.backend, 'name', '?')!r} returned {len(generations)} "
                                   f"generations for {len(prompts)} prompts; a backend must return one per prompt")
            for (t, _, _), generation in zip(prompts, generations):
                texts[t].append([sample.text for sample in generation.samples])
                # an answer cut at max_new_tokens is unparseable (it may end quoting the policy's own box)
                votes_of[t].append([parse_verdict(sample.text, finish_reason=sample.finish_reason)
                                    for sample in generation.samples])
                kept[t].append(generation)
        report = JudgeReport(trajectories=len(trajectories), texts=texts, generations=kept)
        for trajectory, answers, votes in zip(trajectories, texts, votes_of):
            trajectory.judgments = votes
            if hasattr(trajectory, "judgment_texts"):
                trajectory.judgment_texts = answers
            report.steps += len(votes)
            report.judgments += sum(len(step) for step in votes)
            report.unparseable += sum(vote == UNPARSEABLE for step in votes for vote in step)
        return report
