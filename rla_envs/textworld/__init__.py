"""rla/TextWorld-v0: TextWorld games (tw-custom, tw-simple, tw-cooking or your own ``.z8``) as a Gymnasium env.

Importing this package is cheap; textworld itself is imported when a game is built or played::

    import gymnasium as gym
    import rla_envs  # noqa: F401
    env = gym.make("rla/TextWorld-v0")
    observation, info = env.reset(seed=0)
    plan = env.unwrapped.expert_actions()   # commands that win from here

Modules: ``tasks`` (default task set, user game files), ``generate`` (specs -> cached game files),
``game`` (one loaded game, safe command path, expert), ``env`` (TextWorldEnv), ``family`` (curriculum hooks).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["TextWorldEnv", "TextWorldFamily", "default_tasks", "tasks_from_game_files", "task_from_spec"]

_LAZY = {
    "TextWorldEnv": "rla_envs.textworld.env",
    "TextWorldFamily": "rla_envs.textworld.family",
    "default_tasks": "rla_envs.textworld.tasks",
    "tasks_from_game_files": "rla_envs.textworld.tasks",
    "task_from_spec": "rla_envs.textworld.tasks",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rla_envs.textworld' has no attribute {name!r}")
