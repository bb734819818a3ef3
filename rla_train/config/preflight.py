"""Checks made before any work: model names that resolve without the network, env options that build an env.

::

    check_model_name("policy.model", "runs/a/checkpoints/step-000004/policy")    # a local model directory
    check_model_name("policy.model", "Qwen/Qwen2.5-7B-Instruct")                 # a hub id: the hub, when asked
    check_env_options("rla/AlfWorld-v0", {"split": "bogus"}, "env.train_options")  # ConfigError, with the fix

A model name is ``tiny``, an existing model directory, or a hub id written ``org/name`` (whose ``org`` is no local
directory); nothing else goes to the model hub, so a mistyped path fails at once instead of after the hub's
network timeouts. With
``HF_HUB_OFFLINE`` set, a hub id must already be in the local cache. Env options are checked against the env
class's keyword arguments (with the closest name for a typo), then by building the env once, which runs its
own checks of the values; envs build lazily, so this costs milliseconds.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rla_envs.core.errors import RlaError, did_you_mean
from rla_train.config.fields import TINY, ConfigError

__all__ = ["check_model_name", "check_env_options", "is_hub_id"]

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_GYM_MAKE_OPTIONS = {"max_episode_steps", "disable_env_checker", "autoreset", "apply_api_compatibility"}


def is_hub_id(name: str) -> bool:
    """Whether ``name`` is written as a model-hub id, ``org/name``, and reads as no local path (neither it nor its
    ``org`` part is an existing directory here: ``runs/typo`` beside a ``runs/`` directory is a mistyped path)."""
    return (bool(_HUB_ID.match(name)) and ".." not in name and not Path(name).exists()
            and not Path(name.split("/")[0]).is_dir())


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def check_model_name(field: str, name: str) -> None:
    """Refuse a model name that is neither ``tiny``, a model directory, nor a hub id (see the module docstring).

    Raises:
        ConfigError: naming ``field``, the value and the fix.
    """
    if name == TINY:
        return
    path = Path(name).expanduser()
    if path.is_dir():
        if (path / "config.json").is_file():
            return
        if (path / "adapter_config.json").is_file():
            raise ConfigError(f"{field}={name!r} is a LoRA adapter, not a model; merge it into its base first "
                              f"(python -m rla_train.merge_lora {name} --out DIR, then {field}=DIR), or continue its run "
                              "with --resume RUN")
        hint = f"; its model is {path / 'policy'}" if (path / "policy" / "config.json").is_file() else ""
        raise ConfigError(f"{field}={name!r} is a directory without a model (no config.json){hint}; pass a model "
                          "directory (e.g. RUN/checkpoints/step-NNNNNN/policy)")
    if path.exists():
        raise ConfigError(f"{field}={name!r} is a file, not a model directory; pass the directory that holds config.json")
    if not is_hub_id(name):
        raise ConfigError(f"{field}={name!r} is not {TINY!r}, an existing model directory (cwd {os.getcwd()}) or a "
                          "hub id written org/name; fix the path, or name the hub model in full (e.g. Qwen/Qwen2.5-7B)")
    if _offline():
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(name, "config.json"), str):
            raise ConfigError(f"{field}={name!r} is a hub id that is not in the local cache, and HF_HUB_OFFLINE is set; "
                              "download it first or pass a local model directory")


def _env_class(env_id: str):
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    import rla_envs  # noqa: F401  (registers the rla/ ids)

    try:
        spec = gym.spec(env_id)
    except gym.error.Error as error:
        raise ConfigError(f"env id {env_id!r} is not registered ({error})") from error
    entry = spec.entry_point
    return load_env_creator(entry) if isinstance(entry, str) else entry


def check_env_options(env_id: str, options: Mapping[str, Any], field: str) -> None:
    """Refuse env options that ``env_id`` does not take, or whose values its constructor rejects.

    Raises:
        ConfigError: naming ``field`` and the option, with the options the env takes.
    """
    import gymnasium as gym

    creator = _env_class(env_id)
    parameters = inspect.signature(creator).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        own = sorted(name for name, p in parameters.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL)
        for key in options:
            if key not in own and key not in _GYM_MAKE_OPTIONS:
                raise ConfigError(f"{field}: {env_id} takes no option {key!r}; it takes {own}."
                                  f"{did_you_mean(str(key), own)}")
    try:
        env = gym.make(env_id, **{**dict(options), "disable_env_checker": True})
    except (TypeError, ValueError, RlaError) as error:
        raise ConfigError(f"{field}: {env_id} rejects {dict(options)}: {error}") from error
    env.close()
