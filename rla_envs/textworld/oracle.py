"""TextWorld's step-label oracle: d(s) = the length of textworld's own plan from the current state.

The plan is the rest of the walkthrough, or one re-derived by textworld's quest tracker after a detour (not
guaranteed shortest); lost games have d = inf. Labels follow :mod:`rla_envs.core.labels`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rla_envs.core.labels import INF, as_task, labels_from_distances
from rla_envs.core.task import Task
from rla_envs.textworld.env import TextWorldEnv

__all__ = ["textworld_step_labels"]


def textworld_step_labels(task: Task | Mapping[str, Any], actions: Sequence[str], *, max_expert_steps: int = 50,
                          env: Any = None, rule: str = "no_regress") -> list[bool | None]:
    """One label per action of a TextWorld trajectory, d(s) = length of textworld's plan from s.

    ``env``: a ``TextWorldEnv`` (``rla/TextWorld-v0``) to play in; default: a new one, closed after use.
    Steps after the episode ended (won, lost or truncated by the env) are labelled None.
    """
    task = as_task(task)
    own = env is None
    env = TextWorldEnv(tasks=[task], max_steps=len(actions) + 1) if own else env
    game = env.unwrapped
    if not hasattr(game, "expert_actions"):
        raise TypeError(f"env must be a TextWorldEnv (rla/TextWorld-v0), got {type(game).__name__}")
    try:
        _, info = env.reset(options={"task": task})
        distances: list[float | None] = [_textworld_distance(game, info, max_expert_steps)]
        ended = False
        for action in actions:
            if ended:
                distances.append(None)
                continue
            _, _, terminated, truncated, info = env.step(action)
            distances.append(_textworld_distance(game, info, max_expert_steps))
            ended = terminated or truncated
    finally:
        if own:
            env.close()
    return labels_from_distances(distances, rule)


def _textworld_distance(game: Any, info: Mapping[str, Any], cap: int) -> float:
    if info.get("won"):
        return 0.0
    plan = game.expert_actions()
    return float(len(plan)) if plan and len(plan) <= cap else INF
