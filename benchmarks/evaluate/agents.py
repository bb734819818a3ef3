"""The reference agents of the comparison table: ``expert`` and ``random``, played through the same rollout engine.

A reference agent decides in :meth:`ReferenceAgent.prompt`: the "prompt" it hands the engine is the command
it chose, an :func:`echo_backend` answers every prompt with the prompt itself, and :meth:`ReferenceAgent.parse`
passes that command to the env. So the reference rows go through the very engine, task list, seeds, episodes
files and metrics as the checkpoints, and each step's ``completion`` is the command played.

* ``expert``: the env's expert, read from ``info["expert_action"]``. ALFWorld keeps its searching hand-coded
  expert with ``expert="handcoded"`` (see :func:`env_spec`); envs that only offer
  ``env.unwrapped.expert_action()`` (TextWorld's plan, Code's reference solution) are wrapped by
  :class:`ExpertInfoSpec`, which copies it into ``info`` after every reset and step.
* ``random``: a uniformly random admissible command, drawn from ``default_rng((episode seed, step))``, so an
  episode plays the same whatever batch it runs in and whether or not the evaluation was resumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from rla_envs.core.registry import families, family_spec
from rla_train.agents.parsing import ParsedAction
from rla_train.rollout.envs import EnvSpec

__all__ = ["ReferenceAgent", "ExpertInfo", "ExpertInfoSpec", "echo_backend", "env_spec", "NO_EXPERT_ACTION"]

NO_EXPERT_ACTION = "look"
"""What the expert row plays when its expert has no command (it gave up): a harmless command."""


class ReferenceAgent:
    """Plays ``expert`` or ``random`` (see the module docstring); builds prompts like the family's own agent.

    Args:
        kind: ``"expert"`` or ``"random"``.
        family: the env family (the random agent needs a text game's admissible commands).
    """

    def __init__(self, kind: str, family: str = ""):
        if kind not in ("expert", "random"):
            raise ValueError(f"kind must be 'expert' or 'random', got {kind!r}")
        if kind == "random" and not (family and family_spec(family).text_game):
            text_games = sorted(name for name, spec in families().items() if spec.text_game)
            raise ValueError(f"the random agent picks among admissible commands, which only text-game families "
                             f"({', '.join(text_games)}) list; the {family!r} env has none: leave --policy random out")
        self.kind, self.family = kind, family

    def prompt(self, episode) -> str:
        """The command this agent plays next (the echo backend hands it back as the completion)."""
        info = episode.infos[-1] if episode.infos else {}
        if self.kind == "expert":
            if "expert_action" not in info:
                raise KeyError(f"the env gave no info['expert_action'] (family {self.family!r}); build it through "
                               "env_spec(..., 'expert')")
            action = info["expert_action"]
            return NO_EXPERT_ACTION if action is None else str(action)
        admissible = list(info.get("admissible_actions") or ())
        if not admissible:
            raise ValueError(f"the random agent picks among info['admissible_actions'], which the {self.family!r} "
                             "env does not provide; use it on a text game (FamilySpec.text_game)")
        rng = np.random.default_rng((int(episode.seed or 0) % 2**63, len(episode.actions)))
        return admissible[int(rng.integers(len(admissible)))]

    def parse(self, completion: str, info: Mapping[str, Any]) -> ParsedAction:
        """The command as chosen (it was echoed unchanged)."""
        return ParsedAction(completion)


def echo_backend():
    """A generation backend that answers each prompt with the prompt itself (no model)."""
    from rla_train.backends.scripted import ScriptedBackend

    return ScriptedBackend(_echo, name="reference")


def _echo(prompt: str) -> str:
    return prompt


class ExpertInfo(gym.Wrapper):
    """Adds ``info["expert_action"]`` (``env.unwrapped.expert_action()``; None when it has none) after each call."""

    def _with_expert(self, info):
        info = dict(info)
        try:
            info["expert_action"] = self.env.unwrapped.expert_action()
        except Exception:  # noqa: BLE001 - the expert has no command in this state
            info["expert_action"] = None
        return info

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        return observation, self._with_expert(info)

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, self._with_expert(info)


class ExpertInfoSpec(EnvSpec):
    """An :class:`EnvSpec` whose env is wrapped in :class:`ExpertInfo` (picklable, for env worker processes)."""

    def __call__(self):
        return ExpertInfo(super().__call__())


def env_spec(env_id: str, kind: str, **options: Any) -> EnvSpec:
    """The env factory under which ``kind`` (``model``, ``expert`` or ``random``) plays ``env_id``.

    The expert needs ``info["expert_action"]``: the family's own expert where it has one (``FamilySpec.expert_options``,
    e.g. ALFWorld's searching hand-coded expert), else :class:`ExpertInfoSpec`. Models and the random agent play the
    plain env.
    """
    expert_options = family_spec(env_id).expert_options
    if kind == "expert" and expert_options is not None:
        return EnvSpec(env_id, **{**expert_options, **options})
    if kind == "expert":
        return ExpertInfoSpec(env_id, **options)
    return EnvSpec(env_id, **options)
