"""Episodes as the rollout engine records them: the env's trajectory plus, per step, the model's tokens.

An :class:`Episode` is a :class:`rla_envs.core.trajectory.Trajectory` (so diagnosers and the task pool
take it as is) with one :class:`StepRecord` per action: the prompt the policy saw, the completion it
produced (text, token ids, logprobs) and the action that went to the env. Per step,

    input_ids = prompt_ids + completion_ids
    mask      = [0] * len(prompt_ids) + [1] * len(completion_ids)      # 1 = model tokens, 0 = env/prompt tokens
    logprobs  = one per completion token

and :meth:`Episode.sequence` lays a whole multi-turn episode out as one token sequence (first prompt, then
each completion followed by the env's next message) with a mask and the step index of every model token,
when each prompt extends the previous prompt + completion (a full-history chat does; a history window
does not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rla_envs.core.task import Task
from rla_envs.core.files import jsonable
from rla_envs.core.trajectory import Trajectory

__all__ = ["StepRecord", "Episode", "EpisodeSequence"]


@dataclass
class StepRecord:
    """What the policy did at one step.

    Attributes:
        prompt: the prompt text the model saw (chat rendered with its template).
        prompt_ids: its token ids.
        completion: the model's answer (text).
        completion_ids: the generated token ids.
        logprobs: one log-probability per completion token (see ``Sample.logprobs``).
        action: what was sent to the env (the parsed action, or the raw answer when it did not parse).
        parse_error: why the answer did not parse into an action (None when it did).
        finish_reason: ``"stop"`` or ``"length"``.
        alternatives: a choice policy's candidates' token ids (``completion_ids`` is one of them), else None.
        choice_logprobs: a choice policy's log-probability of choosing each alternative (the distribution it
            sampled from; see ``Sample.choice_logprobs``), else None.
    """

    prompt: str
    prompt_ids: list[int]
    completion: str
    completion_ids: list[int]
    logprobs: list[float]
    action: str
    parse_error: str | None = None
    finish_reason: str = "stop"
    alternatives: list[list[int]] | None = None
    choice_logprobs: list[float] | None = None

    @property
    def input_ids(self) -> list[int]:
        """Prompt then completion token ids."""
        return list(self.prompt_ids) + list(self.completion_ids)

    @property
    def mask(self) -> list[int]:
        """1 for each model (completion) token, 0 for each prompt token; aligned with :attr:`input_ids`."""
        return [0] * len(self.prompt_ids) + [1] * len(self.completion_ids)

    def to_dict(self) -> dict[str, Any]:
        """The step as a JSON-ready dict."""
        return {"prompt": self.prompt, "prompt_ids": list(self.prompt_ids), "completion": self.completion,
                "completion_ids": list(self.completion_ids), "logprobs": [float(x) for x in self.logprobs],
                "action": self.action, "parse_error": self.parse_error, "finish_reason": self.finish_reason,
                **({"alternatives": [list(c) for c in self.alternatives]} if self.alternatives is not None else {}),
                **({"choice_logprobs": [float(x) for x in self.choice_logprobs]}
                   if self.choice_logprobs is not None else {})}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepRecord:
        """The inverse of :meth:`to_dict`."""
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})


@dataclass
class EpisodeSequence:
    """A whole episode as one sequence: ``prompt_ids`` then ``completion_ids`` (model and env tokens).

    Attributes:
        prompt_ids: the first prompt.
        completion_ids: every step's completion followed by the env's next message.
        env_mask: per completion token, 1 for model tokens and 0 for env tokens (TRL's ``env_mask``).
        logprobs: per completion token; 0.0 on env tokens.
        step_index: per completion token, the step that produced it (-1 on env tokens).
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]
    step_index: list[int]


@dataclass
class Episode(Trajectory):
    """One episode played by the rollout engine (a :class:`Trajectory` plus the model's tokens).

    Attributes (beyond :class:`Trajectory`'s):
        task: the task played.
        group: index of the episode's group (episodes of one group share the task: a GRPO group).
        seed: the seed passed to ``env.reset``.
        steps: one :class:`StepRecord` per action.
        reward: the env's summed reward (the outcome: 1.0 won, else 0.0).
        judgment_texts: the reward model's answers per step (``judgment_texts[i][j]``), when judged.
        error: an infrastructure failure: the env could not be built or reset, so the episode has no action
            and is not trained on (it is counted apart, ``RolloutStats.infrastructure_failures``).
        action_error: the env raised on the agent's last action (e.g. a program whose output crashed the
            grader). Such an episode is a lost one (``won`` False, nothing more earned) and is trained on and
            counted like any other, so a crash never costs less than a wrong answer.
    """

    task: Task | None = None
    group: int = 0
    seed: int | None = None
    steps: list[StepRecord] = field(default_factory=list)
    reward: float = 0.0
    judgment_texts: list[list[str]] | None = None
    error: str | None = None
    action_error: str | None = None

    def sequence(self) -> EpisodeSequence | None:
        """The episode as one token sequence, or None when a prompt does not extend the one before.

        Each prompt must start with the previous prompt + completion (text and token ids): the env's
        message is what the next prompt adds. With a history window or a template that rewrites old
        turns this does not hold, and the episode is only available step by step (:attr:`steps`).
        """
        if not self.steps:
            return None
        first = self.steps[0]
        prompt_ids = list(first.prompt_ids)
        ids: list[int] = []
        mask: list[int] = []
        logprobs: list[float] = []
        step_index: list[int] = []
        running = prompt_ids.copy()
        for index, step in enumerate(self.steps):
            if step.prompt_ids[: len(running)] != running:
                return None
            env_part = step.prompt_ids[len(running):]
            ids += env_part
            mask += [0] * len(env_part)
            logprobs += [0.0] * len(env_part)
            step_index += [-1] * len(env_part)
            ids += step.completion_ids
            mask += [1] * len(step.completion_ids)
            logprobs += list(step.logprobs) if step.logprobs else [0.0] * len(step.completion_ids)
            step_index += [index] * len(step.completion_ids)
            running = list(step.prompt_ids) + list(step.completion_ids)
        return EpisodeSequence(prompt_ids, ids, mask, logprobs, step_index)

    def to_dict(self) -> dict[str, Any]:
        """The episode as a JSON-ready dict (what ``python -m rla_train.collect`` writes per line)."""
        data = super().to_dict()
        data.update({"task": self.task.to_dict() if self.task is not None else None, "group": self.group,
                     "seed": self.seed, "steps": [s.to_dict() for s in self.steps], "reward": self.reward,
                     "judgment_texts": self.judgment_texts, "error": self.error,
                     "action_error": self.action_error})
        return jsonable(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        """The inverse of :meth:`to_dict` (infos come back as the JSON-able dicts that were written)."""
        base = Trajectory.from_dict(data)
        return cls(**{f: getattr(base, f) for f in Trajectory.__dataclass_fields__},
                   task=Task.from_dict(data["task"]) if data.get("task") else None, group=int(data.get("group", 0)),
                   seed=data.get("seed"), steps=[StepRecord.from_dict(s) for s in data.get("steps", [])],
                   reward=float(data.get("reward", 0.0)), judgment_texts=data.get("judgment_texts"),
                   error=data.get("error"), action_error=data.get("action_error"))
