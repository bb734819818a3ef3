"""The models one evaluation plays and judges with: the policy's agent and backend, its held-out plan, the judge.

A policy from a run is built as :mod:`rla_train.cotrainer.play_setup` builds the run's (agent, action mode,
dtype, sampling); a reference agent plays through the echo backend. The reward model judges steps
(:class:`~rla_train.reward_model.RewardModel`) or, for code, writes unit tests. The last two loaded backends are
kept, so a policy and its judge load once for all splits.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from benchmarks.evaluate.agents import ReferenceAgent, echo_backend, env_spec
from benchmarks.evaluate.checkpoints import resolve_reward_model
from benchmarks.evaluate.settings import OWN_REWARD_MODEL, EvalSettings, split_options
from rla_envs.core.registry import family_spec
from rla_train.agents import make_agent
from rla_train.backends import make_backend
from rla_train.backends.base import SamplingParams
from rla_train.backends.choice import ChoiceBackend
from rla_train.cotrainer.play_setup import HeldOutPlan, heldout_engine_seed, heldout_plan, policy_backend, policy_dtype
from rla_train.reward_model import RewardModel, UnitTestWriter
from rla_train.reward_model.verdicts import VerdictChoiceBackend

__all__ = ["build_policy", "heldout_plan_for", "reward_model_spec", "build_judge", "build_test_writer"]


def build_policy(source, settings: EvalSettings):
    """(agent, backend, action mode) for a resolved policy (a run's as :mod:`rla_train.cotrainer.play_setup` builds them)."""
    if source.kind != "model":
        return ReferenceAgent(source.kind, family_spec(settings.env_id).name), echo_backend(), source.kind
    mode = settings.action_mode or source.action_mode or "text"
    options = {**source.agent_options, **settings.agent_options}
    if mode == "index":
        options["action_format"] = "index"
    elif options.get("action_format") == "index":
        options.pop("action_format")
    agent = make_agent(settings.env_id, **options)
    if mode == "choice" and settings.backend != "transformers":
        raise ValueError(f"--action-mode choice scores candidates with the model itself: it needs --backend "
                         f"transformers, not {settings.backend!r}")
    dtype = None if source.run_config is None else policy_dtype(source.run_config)
    return agent, policy_backend(_loaded_backend(source.model, settings, dtype=dtype), mode), mode


def heldout_plan_for(source, settings: EvalSettings, split: str):
    """How ``source`` plays ``split``: its run's held-out evaluation, with the command's settings over it.

    A :class:`rla_train.cotrainer.play_setup.HeldOutPlan`: the env (the run's env options, then ``--env-option``, then the
    split), ``settings.episodes`` tasks drawn with ``settings.seed``, the engine seeded as the trainer seeds its
    held-out engine, and the sampling and ``num_envs`` of the run (``--temperature``, ``--max-new-tokens`` and
    ``--num-envs`` win; without a run: greedy, 64 tokens, 16 envs). Reference agents play greedily.
    """
    config = source.run_config if source.kind == "model" else None
    run = heldout_plan(config) if config is not None else None
    sampling = run.sampling if run is not None else SamplingParams(max_new_tokens=64, temperature=0.0)
    if source.kind != "model":  # a reference agent's command comes back whole through the echo backend
        sampling = SamplingParams(max_new_tokens=10**9, temperature=0.0)
    else:
        changes = {k: v for k, v in (("temperature", settings.temperature), ("max_new_tokens", settings.max_new_tokens))
                   if v is not None}
        sampling = dataclasses.replace(sampling, **changes)
    options = {**source.env_options, **settings.env_options, **split_options(settings.env_id, split)}
    num_envs = settings.num_envs or (run.num_envs if run is not None else 16)
    return HeldOutPlan(env=env_spec(settings.env_id, source.kind, **options), episodes=settings.episodes,
                       task_seed=settings.seed, engine_seed=heldout_engine_seed(settings.seed), sampling=sampling,
                       num_envs=num_envs, env_workers={"workers": settings.workers})


_LOADED: dict[tuple, Any] = {}
"""The two most recently loaded backends (the policy's and the reward model's), reused across splits."""


def _loaded_backend(model: str, settings: EvalSettings, *, dtype: str | None = None):
    """A backend on ``model``; the last two are kept, so a policy and its judge load once for all splits."""
    key = (model, settings.backend, settings.base_url, dtype)
    if key not in _LOADED:
        while len(_LOADED) >= 2:
            _LOADED.pop(next(iter(_LOADED))).close()
        if settings.backend == "transformers":
            from rla_train.backends.hf import TransformersBackend  # lazy: imports torch and transformers

            _LOADED[key] = TransformersBackend(model, dtype=dtype)
        else:
            _LOADED[key] = make_backend(settings.backend, model=model,
                                        **({"base_url": settings.base_url} if settings.base_url else {}))
    return _LOADED[key]


def _text_backend(model: str, settings: EvalSettings, *, choice: bool = False):
    """The reward model's backend on ``model``; ``choice``: it picks the likelier verdict (greedy)."""
    if choice and settings.backend != "transformers":
        raise ValueError(f"--judge-mode choice scores the verdicts with the model itself: it needs --backend "
                         f"transformers, not {settings.backend!r}")
    backend = _loaded_backend(model, settings)
    if choice:
        return ChoiceBackend(backend, temperature=0.0)
    return backend


def reward_model_spec(settings: EvalSettings, source) -> tuple[str, str] | None:
    """``(model, verdict mode)`` of the reward model judging ``source`` (None without one)."""
    if settings.reward_model is None:
        return None
    if settings.reward_model == OWN_REWARD_MODEL:
        if source.checkpoint is None:
            return None
        model, mode = resolve_reward_model(source.checkpoint)
    else:
        model, mode = resolve_reward_model(settings.reward_model)
    return model, settings.judge_mode or mode or source.verdict_mode or "text"


def build_judge(settings: EvalSettings, spec: tuple[str, str] | None):
    """The step judge on the reward model ``spec`` (None without one)."""
    if spec is None:
        return None
    model, mode = spec
    backend = _text_backend(model, settings, choice=mode == "choice")
    if mode == "choice":
        backend = VerdictChoiceBackend(backend)
    sampling = SamplingParams(max_new_tokens=settings.judge_max_new_tokens, temperature=settings.judge_temperature,
                              seed=settings.seed)
    return RewardModel(backend, judgments_per_step=settings.judgments, sampling=sampling)


def build_test_writer(settings: EvalSettings, spec: tuple[str, str]):
    """The reward model as a unit-test writer (code): free text, seeded sampling."""
    sampling = SamplingParams(max_new_tokens=max(256, settings.judge_max_new_tokens), temperature=1.0,
                              seed=settings.seed)
    return UnitTestWriter(_text_backend(spec[0], settings), tests_per_answer=settings.tests_per_answer,
                          samples=settings.test_samples, sampling=sampling)
