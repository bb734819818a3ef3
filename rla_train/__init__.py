"""rla_train: generation backends, agents, the rollout engine, the generative reward model and the co-trainer.

The names a user needs are importable from here, each loaded on first use (so ``import rla_train`` stays light)::

    from rla_train import load_config, train

    summary = train(load_config("configs/cpu-tiny.yaml"))        # the whole co-training run

    from rla_train import RewardModel, RolloutEngine, SamplingParams, build_tiny_model, make_agent, make_backend

    policy = make_backend("transformers", model=str(build_tiny_model("runs/tiny-model")))
    with RolloutEngine("rla/AlfWorld-v0", make_agent("rla/AlfWorld-v0"), policy, num_envs=8,
                       sampling=SamplingParams(max_new_tokens=16)) as engine:
        episodes = engine.run(engine.sample_tasks(2), group_size=4)
    RewardModel(policy, judgments_per_step=3).judge(None, episodes)   # fills episode.judgments

The packages follow the loop: ``backends/`` (generation), ``agents/`` (prompts, action parsing), ``rollout/``
(episodes), ``reward_model/`` (the judge), ``signals/`` (reward maths, training samples, metrics),
``cotrainer/`` (build, loop, policy update, checkpoints, logs), ``adapters/`` (TRL's environment_factory),
``config/``; ``run.py`` and ``collect.py`` are the command lines.

Heavy dependencies (torch, transformers, trl, vllm) are imported only by the modules that need them.

Nothing here reaches the network unless asked: TRL's trainers report usage to the Hugging Face Hub from a
background thread when they are built, which on an offline machine tries (and here once crashed in) a DNS lookup,
so importing ``rla_train`` turns that telemetry off unless the user has set ``HF_HUB_DISABLE_TELEMETRY`` already.
"""

import importlib as _importlib
import importlib.util as _importlib_util
import os as _os
import sys as _sys

_os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

TRAIN_MODULES = ("torch", "transformers", "trl", "datasets", "yaml")
"""What the co-trainer and the benchmarks import; ``pip install "rla[train]"`` installs them."""

TRAIN_MIN_PYTHON = (3, 11)
"""The oldest Python ``rla[train]`` installs on: transformers 5.24 and trl 1.16 require 3.11 (the envs alone: 3.10)."""

PUBLIC_API = {
    "TrainConfig": "rla_train.config",
    "load_config": "rla_train.config",
    "train": "rla_train.cotrainer.loop",
    "SampleTrainer": "rla_train.cotrainer.policy_update",
    "make_backend": "rla_train.backends",
    "SamplingParams": "rla_train.backends",
    "ChoiceBackend": "rla_train.backends.choice",
    "build_tiny_model": "rla_train.backends.tiny",
    "make_agent": "rla_train.agents",
    "EnvSpec": "rla_train.rollout.envs",
    "RolloutEngine": "rla_train.rollout.engine",
    "Episode": "rla_train.rollout.episode",
    "RewardModel": "rla_train.reward_model",
    "environment_factory": "rla_train.adapters.trl_env",
}
"""Public name -> the module that defines it, imported when the name is first read (PEP 562)."""

__all__ = [*PUBLIC_API, "missing_train_extra", "TRAIN_MODULES", "TRAIN_MIN_PYTHON"]


def __getattr__(name: str):
    if name not in PUBLIC_API:
        raise AttributeError(f"module 'rla_train' has no attribute {name!r}")
    value = getattr(_importlib.import_module(PUBLIC_API[name]), name)
    globals()[name] = value  # the next read skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC_API})


def missing_train_extra(command: str) -> str | None:
    """The one-line error for ``command`` when ``rla[train]`` is not installed (``pip install rla`` is the envs
    alone), else None. The co-trainer's command lines print it and exit with status 2 before any work."""
    if _sys.version_info[:2] < TRAIN_MIN_PYTHON:
        have = ".".join(map(str, _sys.version_info[:3]))
        return (f"{command}: error: the co-trainer needs Python >= {'.'.join(map(str, TRAIN_MIN_PYTHON))} "
                f"(transformers 5.24 and trl 1.16 require it) and this is Python {have}; make a venv with Python 3.11+ "
                f"and install \"rla[train]\" there (the envs alone, pip install ., run on 3.10)")
    missing = [name for name in TRAIN_MODULES if _importlib_util.find_spec(name) is None]
    if not missing:
        return None
    return (f"{command}: error: it needs the co-trainer's dependencies ({', '.join(missing)} not installed); install "
            f"them with: pip install \"rla[train]\"")
