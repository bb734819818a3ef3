"""rla_envs: Gymnasium environments for LLM agents, and the curriculum that adapts their tasks.

Importing this package registers the env ids below with string entry points, so each env's heavy
dependencies are imported only when it is made::

    import gymnasium as gym
    import rla_envs  # noqa: F401
    env = gym.make("rla/AlfWorld-v0")
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from rla_envs.core import Task  # re-exported: the one data type users handle

__all__ = ["Task", "ENV_IDS"]
__version__ = "0.1.0"

ENV_IDS: dict[str, str] = {
    "rla/AlfWorld-v0": "rla_envs.alfworld.env:AlfWorldEnv",
    "rla/TextWorld-v0": "rla_envs.textworld.env:TextWorldEnv",
    "rla/Code-v0": "rla_envs.code.env:CodeEnv",
    "rla/OSWorld-v0": "rla_envs.desktop.env:OSWorldEnv",
}

for _env_id, _entry_point in ENV_IDS.items():
    if _env_id not in registry:
        # Episodes truncate inside the env (max_steps), so no TimeLimit wrapper is added here. Gymnasium's passive
        # checker is off: after a failed reset() it answers every step() with its own TypeError, hiding the env's
        # "reset failed, reset again" (ResetNeeded); gym.make(..., disable_env_checker=False) turns it back on.
        register(id=_env_id, entry_point=_entry_point, disable_env_checker=True)
