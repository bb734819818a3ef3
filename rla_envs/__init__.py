"""rla_envs: Gymnasium environments for LLM agents, and the curriculum that adapts their tasks.

Importing this package registers the built-in families (:mod:`rla_envs.core.registry`) and their env ids with
string entry points, so each env's heavy dependencies are imported only when it is made::

    import gymnasium as gym
    import rla_envs  # noqa: F401
    env = gym.make("rla/AlfWorld-v0")
"""

from __future__ import annotations

# Each family's light registration module registers its FamilySpec and gym ids (nothing heavy is imported).
import rla_envs.alfworld.registration  # noqa: F401
import rla_envs.code.registration  # noqa: F401
import rla_envs.desktop.registration  # noqa: F401
import rla_envs.textworld.registration  # noqa: F401
from rla_envs.core import Task  # re-exported: the one data type users handle
from rla_envs.core.registry import FamilySpec, families, family_spec, register_family

__all__ = ["Task", "FamilySpec", "register_family", "family_spec", "families"]
__version__ = "0.1.0"
