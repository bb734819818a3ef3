"""What one evaluation command evaluates with: :class:`EvalSettings`, the split names, and the settings a run gives.

:func:`run_defaults` reads the held-out evaluation of the runs among the ``--policy`` values (env, split, episodes,
seed, env options), so every policy of a comparison plays the run's tasks; :func:`split_options` turns a split
name into the env options that select it.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from rla_envs.core.registry import family_spec
from rla_train.cotrainer.play_setup import heldout_plan

__all__ = ["EvalSettings", "DEFAULT_SPLIT", "OWN_REWARD_MODEL", "split_options", "run_defaults"]

DEFAULT_SPLIT = "default"
"""The split name of envs without splits (TextWorld): their default task set."""


OWN_REWARD_MODEL = "own"
"""``--reward-model own``: each checkpoint is judged by its own run's reward model (reference rows: none)."""


@dataclass
class EvalSettings:
    """How to evaluate (shared by every policy and split of one command)."""

    env_id: str = "rla/AlfWorld-v0"
    episodes: int = 32
    seed: int = 0
    backend: str = "transformers"
    base_url: str | None = None
    action_mode: str | None = None             # None: the run's config, else "text"
    agent_options: dict[str, Any] = field(default_factory=dict)
    env_options: dict[str, Any] = field(default_factory=dict)
    num_envs: int | None = None                # None: the run's env.num_envs, else 16
    workers: int = 0
    max_new_tokens: int | None = None          # None: the run's policy.max_completion_length, else 64
    temperature: float | None = None           # held-out episodes; None: the run's train.eval_temperature, else 0
    reward_model: str | None = None
    judge_mode: str | None = None              # "choice" | "text"; None: the run's verdict_mode, else text
    judgments: int = 3
    label_rule: str | None = None              # the step labels votes are scored against; None: the run's, else progress
    judge_temperature: float = 1.0
    judge_max_new_tokens: int = 128
    samples: int = 0                           # code: sampled programs per task for pass@k (0 = off)
    samples_temperature: float = 1.0           # sampling temperature of those samples
    tests_per_answer: int = 4                  # code + reward model: unit tests asked for per answer
    test_samples: int = 2                      # ... answers per task
    progress: bool = True

    def __post_init__(self):
        if type(self.episodes) is not int or self.episodes < 1:
            raise ValueError(f"episodes must be an int >= 1, got {self.episodes!r}")
        if self.action_mode not in (None, "text", "index", "choice"):
            raise ValueError(f"action_mode must be text, index or choice, got {self.action_mode!r}")
        if self.judge_mode not in (None, "text", "choice"):
            raise ValueError(f"judge_mode must be text or choice, got {self.judge_mode!r}")
        if self.samples < 0 or self.judgments < 1 or (self.num_envs is not None and self.num_envs < 1):
            raise ValueError("samples must be >= 0, judgments >= 1 and num_envs >= 1")
        if self.temperature is not None and not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature!r}")


def split_options(env_id: str, split: str) -> dict[str, Any]:
    """The env options that select ``split``: the family's ``FamilySpec.split_option`` set to it (ALFWorld's
    ``split``; Code's task ``source``: bundled, humaneval, a JSONL)."""
    option = family_spec(env_id).split_option
    if option is None:
        if split != DEFAULT_SPLIT:
            raise ValueError(f"{env_id} has no splits; use --split {DEFAULT_SPLIT} (its default task set) or pass "
                             "the tasks with --env-option")
        return {}
    return {option: split}


def run_defaults(sources: Sequence[Any]) -> dict[str, Any]:
    """What the runs among ``sources`` set for the whole command: ``env_id``, ``split``, ``episodes``, ``seed`` and
    ``env_options`` of their held-out evaluation ({} without a run), so every policy plays the run's tasks.

    Raises:
        ValueError: two runs evaluated differently (names the flag that makes them play alike).
    """
    found: dict[str, tuple[Any, str]] = {}
    flags = {"env_id": "--env", "split": "--split", "episodes": "--episodes", "seed": "--seed",
             "env_options": "--env-option"}
    for source in sources:
        config = getattr(source, "run_config", None)
        if config is None:
            continue
        plan = heldout_plan(config)
        options = dict(plan.env.kwargs)
        key = family_spec(config.env.id).split_option
        split = options.pop(key, _default_split(config.env.id)) if key else DEFAULT_SPLIT
        values = {"env_id": config.env.id, "split": split, "episodes": plan.episodes, "seed": plan.task_seed,
                  "env_options": options}
        for name, value in values.items():
            earlier, who = found.setdefault(name, (value, source.name))
            if earlier != value:
                raise ValueError(f"--policy {who} and {source.name} come from runs evaluated with different "
                                 f"{flags[name]} ({earlier!r} vs {value!r}); pass {flags[name]} to evaluate both alike")
    return {name: value for name, (value, _) in found.items()}


def _default_split(env_id: str) -> str:
    """The split (task source) an env plays when its options name none: its constructor's default."""

    creator = gym.envs.registration.load_env_creator(gym.spec(env_id).entry_point)
    return inspect.signature(creator).parameters[family_spec(env_id).split_option].default
