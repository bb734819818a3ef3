"""Config building blocks: the error, the training modes, documented fields and their type/range checks."""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, ClassVar, NamedTuple

from rla_envs.core.errors import RlaError, did_you_mean

CONFIG_FILENAME = "config.yaml"
"""The resolved config a run records in its output directory (and ``--resume DIR`` reads back)."""


class ConfigError(RlaError, ValueError):
    """A config that cannot be used: an unknown key, a wrong type, a value out of range; the message says the fix."""


class Mode(NamedTuple):
    """What a training mode uses: the outcome in the policy reward, a reward model, RM training, env adaptation, and
    how the policy's advantages are formed (``grpo`` or ``gigpo``: :data:`rla_train.signals.samples.ADVANTAGES`)."""

    outcome: bool
    reward_model: bool
    train_reward_model: bool
    adapt_env: bool
    advantage: str = "grpo"


MODES: dict[str, Mode] = {
    "outcome_only": Mode(outcome=True, reward_model=False, train_reward_model=False, adapt_env=False),
    "policy": Mode(outcome=True, reward_model=True, train_reward_model=False, adapt_env=False),
    "policy+reward": Mode(outcome=True, reward_model=True, train_reward_model=True, adapt_env=False),
    "policy+reward+env": Mode(outcome=True, reward_model=True, train_reward_model=True, adapt_env=True),
    "reward_only": Mode(outcome=False, reward_model=True, train_reward_model=False, adapt_env=False),
    "gigpo": Mode(outcome=True, reward_model=False, train_reward_model=False, adapt_env=False, advantage="gigpo"),
}
"""RLAnything's ablation. ``outcome_only``: GRPO on O_τ; ``policy``: integrated reward R_i = O + (λ/m)ΣS with a
frozen reward model; ``policy+reward``: the reward model trained too; ``policy+reward+env``: and tasks rewritten
(the full method); ``reward_only``: the policy rewarded by the (frozen, e.g. already optimised) reward model's
step votes alone, no outcome; ``gigpo``: no reward model, the outcome's credit spread over steps by GiGPO
(verl-agent's step-level baseline: steps from the same state compared by their discounted returns,
:mod:`rla_train.signals.gigpo`)."""

SAME_AS_POLICY = "same-as-policy"
TINY = "tiny"
BACKENDS = ("transformers", "vllm", "openai")
TRAINABLE_BACKENDS = ("transformers", "vllm")
"""The backends a trained policy can generate with (rollouts must come from the live weights: vllm is TRL's engine,
whose weights the policy's trainer syncs after every update)."""
REPORT_TO = ("none", "tensorboard", "trackio", "wandb")
"""The experiment trackers ``output.report_to`` can name (TRL's names; ``none`` = none)."""
VLLM_MODES = ("colocate", "server")
"""TRL's ``vllm_mode``: an engine in the training process, or a ``trl vllm-serve`` server."""


def setting(default: Any, help: str, *, choices: Sequence[str] | None = None, alias: str | None = None,
            ge: float | None = None, gt: float | None = None, le: float | None = None, lt: float | None = None,
            fix: str = "") -> Any:
    """A dataclass field with its ``help`` in its metadata, plus the ``choices``, ``alias`` and bounds it accepts."""
    metadata = {"help": help, "choices": tuple(choices) if choices else None, "alias": alias,
                "bounds": {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt)) if v is not None},
                "fix": fix}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


_BOUNDS = {"ge": (">=", lambda v, b: v >= b), "gt": (">", lambda v, b: v > b), "le": ("<=", lambda v, b: v <= b),
           "lt": ("<", lambda v, b: v < b)}


def type_name(tp: Any) -> str:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp)) if typing.get_origin(tp) is None else str(tp).replace("typing.", "")


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """``value`` as type ``tp`` (ints widen to float, ``"1e-6"`` reads as a float); ConfigError if it is not one."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(value, arg, where)
            except ConfigError:  # not this member of the union: the next one may take it (none: the error below)
                pass
    elif tp is Any:
        return value
    elif tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 1e-6 (no dot) as a string
            try:
                return float(value)
            except ValueError:  # not a number: the type error below names the field and the value
                pass
    elif tp is str:
        if isinstance(value, str):
            return value
    elif origin is list:
        if isinstance(value, (list, tuple)):
            return [_coerce(item, args[0], f"{where}[{i}]") for i, item in enumerate(value)]
    elif origin is dict:
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return {k: copy.deepcopy(v) for k, v in value.items()}
    raise ConfigError(f"{where} expects {type_name(tp)}, got {type(value).__name__} {value!r}; "
                      f"fix it in the YAML file or with --set {where}=VALUE"
                      + ("" if tp is not str else " (quote it to make it text)"))


class Section:
    """Base of the config sections: coerces and checks every field (type, choices, bounds), then :meth:`check`."""

    section: ClassVar[str] = ""

    def __post_init__(self):
        hints = typing.get_type_hints(type(self))
        for spec in dataclasses.fields(self):
            where, meta = f"{self.section}.{spec.name}", spec.metadata
            value = _coerce(getattr(self, spec.name), hints[spec.name], where)
            if meta["choices"] and value is not None and value not in meta["choices"]:
                raise ConfigError(f"{where} must be one of {list(meta['choices'])}, got {value!r}"
                                  + (f"; {meta['fix']}" if meta["fix"] else "") + f".{did_you_mean(value, meta['choices'])}")
            if value is not None and not all(_BOUNDS[k][1](value, b) for k, b in meta["bounds"].items()):
                expected = " and ".join(f"{_BOUNDS[k][0]} {b}" for k, b in meta["bounds"].items())
                raise ConfigError(f"{where} must be {expected}, got {value!r}" + (f"; {meta['fix']}" if meta["fix"] else ""))
            setattr(self, spec.name, value)
        self.check()

    def check(self) -> None:
        """Rules between this section's fields (rules across sections live in :meth:`TrainConfig.check`)."""
