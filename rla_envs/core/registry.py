"""The family registry: what each env family is and offers, in one place that the trainer and benchmarks read.

A family is one folder plus one registration. Its light ``registration`` module (imported by
``rla_envs/__init__.py`` for the built-in families, or by your own code) builds a :class:`FamilySpec` and
calls :func:`register_family`, which also registers its gym ids::

    from rla_envs.core.registry import FamilySpec, register_family

    register_family(FamilySpec(
        name="toy", env_ids={"toy/Toy-v0": "my_package.toy.env:ToyEnv"}, agent="text_game", text_game=True,
        expert_options={"expert": True}, step_labels="my_package.toy.oracle:toy_step_labels"))

Every hook is a ``"module:attribute"`` string imported on first use, so registering (and ``import rla_envs``)
stays light: no torch, no game engine. :func:`family_spec` finds a spec by family name or env id (with a
did-you-mean hint); :func:`families` lists them. See docs/adding-a-family.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import register, registry

from rla_envs.core.errors import UnknownFamily, did_you_mean
from rla_envs.core.task import Task

__all__ = ["FamilySpec", "register_family", "family_spec", "families", "tasks_family", "load_entry_point"]


def load_entry_point(entry_point: str) -> Any:
    """The object a ``"module:attribute"`` string names (the module is imported now)."""
    module_name, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def _check_entry_point(owner: str, what: str, value: str | None) -> None:
    if value is None:
        return
    module_name, colon, attr = value.partition(":") if isinstance(value, str) else ("", "", "")
    if not (module_name and colon and attr):
        raise ValueError(f"family {owner!r}: {what} must be a 'module:attribute' string such as "
                         f"'my_package.env:MyEnv', got {value!r}")


@dataclass(frozen=True)
class FamilySpec:
    """What an env family is and which optional hooks it offers (the trainer asks for capabilities, not names).

    Attributes:
        name: the family name, the ``Task.family`` of its tasks (``"alfworld"``).
        env_ids: env id -> env class entry point (``{"rla/AlfWorld-v0": "rla_envs.alfworld.env:AlfWorldEnv"}``);
            the first is the family's main env, the one its tasks are played in by default.
        agent: the kind of agent that plays it, a name the trainer maps to an agent class: ``"text_game"``
            (observation text + admissible commands), ``"code"`` (a program), ``"desktop"`` (pyautogui).
        text_game: the env lists ``info["admissible_actions"]`` and takes ``max_steps`` (choice and index
            policies, the random reference agent and the text-game judge prompts need that list).
        task_family: entry point of the curriculum's :class:`~rla_envs.core.family.TaskFamily` hooks
            (describe, rewrite, validate, mutate); None: the family's tasks are not rewritten.
        splits: the evaluation splits (in-distribution first), the names ``split_option`` accepts.
        split_option: the env option a split name sets (``"split"``); None: the env has one task set.
        expert_options: env options under which every ``info`` carries ``"expert_action"``, a searching
            expert's command from the current state (None when it has none); None: no such expert (no
            demonstrations, no epsilon-expert episodes).
        step_labels: entry point of the step-label oracle, ``f(task, actions, *, max_expert_steps=50,
            rule="no_regress", **options) -> list[bool | None]`` (see :mod:`rla_envs.core.labels`); None: no step
            labels.
        generate_tasks: entry point of ``f(split, n, seed=0, *, progress=False, **env_options) -> list[Task]``,
            at least ``n`` tasks of ``split`` (seeded; ``env_options`` are the run's env options, of which it
            reads the ones that select tasks); None: the trainer uses the env's own task set.
    """

    name: str
    env_ids: Mapping[str, str]
    agent: str
    text_game: bool = False
    task_family: str | None = None
    splits: tuple[str, ...] = ()
    split_option: str | None = None
    expert_options: Mapping[str, Any] | None = None
    step_labels: str | None = None
    generate_tasks: str | None = None
    _loaded: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a family needs a name (a non-empty string), got {self.name!r}")
        if not isinstance(self.env_ids, Mapping) or not self.env_ids:
            raise ValueError(f"family {self.name!r}: env_ids must map at least one env id to its entry point, "
                             f"got {self.env_ids!r}")
        for env_id, entry_point in self.env_ids.items():
            _check_entry_point(self.name, f"the entry point of {env_id!r}", entry_point)
        for what in ("task_family", "step_labels", "generate_tasks"):
            _check_entry_point(self.name, what, getattr(self, what))
        if not isinstance(self.agent, str) or not self.agent:
            raise ValueError(f"family {self.name!r}: agent must name an agent kind such as 'text_game', "
                             f"got {self.agent!r}")
        if bool(self.splits) != (self.split_option is not None):
            raise ValueError(f"family {self.name!r}: splits and split_option go together (the option selects a "
                             f"split), got splits={self.splits!r}, split_option={self.split_option!r}")
        object.__setattr__(self, "env_ids", MappingProxyType(dict(self.env_ids)))
        object.__setattr__(self, "splits", tuple(self.splits))
        if self.expert_options is not None:
            object.__setattr__(self, "expert_options", MappingProxyType(dict(self.expert_options)))

    @property
    def env_id(self) -> str:
        """The family's main env id (the first of :attr:`env_ids`)."""
        return next(iter(self.env_ids))

    def hook(self, name: str) -> Callable[..., Any]:
        """The hook ``name`` (``"step_labels"``, ``"generate_tasks"``, ``"task_family"``), imported on first use.

        Raises NotImplementedError naming the family when it does not offer that hook.
        """
        if name not in ("task_family", "step_labels", "generate_tasks"):
            raise ValueError(f"unknown hook {name!r}; expected task_family, step_labels or generate_tasks")
        entry_point = getattr(self, name)
        if entry_point is None:
            raise NotImplementedError(f"family {self.name!r} has no {name} hook (its FamilySpec.{name} is None)")
        if name not in self._loaded:
            self._loaded[name] = load_entry_point(entry_point)
        return self._loaded[name]

    def expert_env(self, tasks: Iterable[Task], *, split: str | None = None, **options: Any) -> gym.Env:
        """The family's main env on ``tasks`` with its expert on: every ``info`` carries ``"expert_action"``.

        ``split`` sets :attr:`split_option` where the family has one (it names where the tasks come from);
        ``options`` are more env options (``max_steps``, ...). NotImplementedError without ``expert_options``.
        """
        if self.expert_options is None:
            raise NotImplementedError(f"family {self.name!r} has no expert that plays along (its "
                                      "FamilySpec.expert_options is None): no demonstrations or expert episodes")
        if split is not None and self.split_option is not None:
            options = {self.split_option: split, **options}
        return gym.make(self.env_id, **{"disable_env_checker": True, **self.expert_options, "tasks": list(tasks),
                                        **options})


_FAMILIES: dict[str, FamilySpec] = {}
_BY_ENV_ID: dict[str, str] = {}


def register_family(spec: FamilySpec) -> FamilySpec:
    """Register ``spec`` and its gym ids (string entry points, env checker off); returns it.

    Registering an equal spec again does nothing; another spec under a taken family name or env id raises
    ValueError.
    """
    if not isinstance(spec, FamilySpec):
        raise TypeError(f"register_family takes a FamilySpec, got {type(spec).__name__}")
    known = _FAMILIES.get(spec.name)
    if known is not None:
        if known == spec:
            return known
        raise ValueError(f"family {spec.name!r} is already registered with another spec; pick another name")
    for env_id in spec.env_ids:
        if env_id in _BY_ENV_ID:
            raise ValueError(f"env id {env_id!r} already belongs to family {_BY_ENV_ID[env_id]!r}; pick another id")
    for env_id, entry_point in spec.env_ids.items():
        if env_id not in registry:
            # Episodes truncate inside the env (max_steps), so no TimeLimit wrapper is added here. Gymnasium's
            # passive checker is off: after a failed reset() it answers every step() with its own TypeError,
            # hiding the env's "reset failed, reset again" (ResetNeeded); gym.make(..., disable_env_checker=False)
            # turns it back on.
            register(id=env_id, entry_point=entry_point, disable_env_checker=True)
        _BY_ENV_ID[env_id] = spec.name
    _FAMILIES[spec.name] = spec
    return spec


def family_spec(name_or_env_id: str) -> FamilySpec:
    """The spec of a family, by its name (``"alfworld"``) or one of its env ids (``"rla/AlfWorld-v0"``)."""
    name = _BY_ENV_ID.get(name_or_env_id, name_or_env_id)
    try:
        return _FAMILIES[name]
    except (KeyError, TypeError):
        choices = [*_FAMILIES, *_BY_ENV_ID]
        raise UnknownFamily(f"unknown family or env id {name_or_env_id!r}; known families {sorted(_FAMILIES)}, env ids "
                            f"{sorted(_BY_ENV_ID)} (register yours with rla_envs.core.registry.register_family)."
                            f"{did_you_mean(name_or_env_id, choices)}") from None


def families() -> Mapping[str, FamilySpec]:
    """Every registered family, by name, in registration order (a read-only view)."""
    return MappingProxyType(_FAMILIES)


def tasks_family(tasks: Iterable[Task]) -> FamilySpec:
    """The spec of the one family ``tasks`` belong to (ValueError if they are of several families, or none)."""
    names = sorted({task.family for task in tasks})
    if len(names) != 1:
        raise ValueError(f"expected tasks of one family, got families {names or 'none (no tasks)'}")
    return family_spec(names[0])
