"""A played episode as plain data (:class:`Trajectory`), and playing one with a policy (:func:`play_episode`).

Every part of rla reads episodes through this type: the curriculum's diagnosers, the reward model's prompts,
step labels and the rollout engine's :class:`~rla_train.rollout.episode.Episode` (a subclass).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rla_envs.core.files import jsonable
from rla_envs.core.task import Task

__all__ = ["Trajectory", "play_episode"]


@dataclass
class Trajectory:
    """One played episode, as plain data.

    Attributes:
        task_id: the id of the task played.
        observations: the reset observation followed by one observation per step (``len(actions) + 1``).
        actions: the actions taken, one per step.
        infos: the reset info followed by one info per step (``len(actions) + 1``), as the env returned them.
        won: whether the episode ended with ``info["won"]``.
        truncated: whether it ended by running out of steps.
        judgments: optional per-step reward-model judgments (``judgments[i]`` lists the votes on step ``i``,
            each +1 / -1 / 0 for unparseable).
    """

    task_id: str
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    won: bool = False
    truncated: bool = False
    judgments: list[list[int]] | None = None

    @property
    def num_steps(self) -> int:
        """How many actions were taken."""
        return len(self.actions)

    def to_dict(self) -> dict[str, Any]:
        """The trajectory as a JSON-ready dict (infos reduced to JSON-able values)."""
        return {"task_id": self.task_id, "observations": list(self.observations), "actions": list(self.actions),
                "infos": [jsonable(i) for i in self.infos], "won": self.won, "truncated": self.truncated,
                "judgments": self.judgments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trajectory":
        """The inverse of :meth:`to_dict` (infos come back as the JSON-able dicts that were written)."""
        return cls(task_id=data["task_id"], observations=list(data["observations"]), actions=list(data["actions"]),
                   infos=list(data["infos"]), won=bool(data["won"]), truncated=bool(data["truncated"]),
                   judgments=data.get("judgments"))


def play_episode(env, policy: Callable[[Any, dict], Any], task: Task | None = None, *,
                 seed: int | None = None) -> Trajectory:
    """Play one episode of ``task`` (or the env's own draw) with ``policy(observation, info) -> action``."""
    observation, info = env.reset(seed=seed, options={"task": task} if task is not None else None)
    trajectory = Trajectory(task_id=str(info.get("task_id", task.id if task else "")),
                            observations=[observation], infos=[dict(info)])
    while True:
        action = policy(observation, info)
        observation, _, terminated, truncated, info = env.step(action)
        trajectory.actions.append(action)
        trajectory.observations.append(observation)
        trajectory.infos.append(dict(info))
        if terminated or truncated:
            trajectory.won, trajectory.truncated = bool(info.get("won")), bool(truncated and not terminated)
            return trajectory
