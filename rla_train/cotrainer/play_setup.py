"""What a run plays with, built from its :class:`~rla_train.config.TrainConfig`: one place for trainer and evaluator.

The trainer (:func:`rla_train.cotrainer.components.build_components`) and ``python -m benchmarks.evaluate --policy RUN``
both build the agent, the policy's backends, the judge, the env specs and the held-out evaluation here, so
evaluating a run directory plays its held-out episodes exactly as the run did::

    config = TrainConfig.load(run_dir / "config.yaml")
    agent = build_agent(config)
    train_backend, eval_backend = policy_backends(config, model, tokenizer, policy_trainer)
    plan = heldout_plan(config)                   # env spec, episodes, seeds, sampling, num_envs of its evaluation
    with heldout_engine(plan, agent, eval_backend) as engine:
        episodes = play_heldout(engine, heldout_tasks(engine, plan))

:func:`play_heldout` is the trainer's own evaluation pass (``rla_train.cotrainer.loop.evaluate`` calls it): the engine's
sampling stream restarts at turn 0, so the result depends on the weights alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rla_envs.core.labels import StepLabeller
from rla_train.agents import make_agent
from rla_train.backends import make_backend
from rla_train.backends.base import SamplingParams
from rla_train.backends.choice import ChoiceBackend
from rla_train.backends.hf import TransformersBackend
from rla_train.backends.tiny import tiny_model_path
from rla_train.backends.trl_vllm import TRLVLLMBackend
from rla_train.config import MODES, TrainConfig
from rla_train.reward_model import NoisyOracleJudge, RewardModel
from rla_train.reward_model.verdicts import VerdictChoiceBackend
from rla_train.rollout.engine import RolloutEngine
from rla_train.rollout.envs import EnvSpec

__all__ = ["HELDOUT_SEED_OFFSET", "PROBE_SEED_OFFSET", "HeldOutPlan", "load_model", "env_spec",
           "agent_options", "build_agent", "policy_sampling", "policy_dtype", "policy_backend", "policy_backends",
           "build_judge", "heldout_engine_seed", "heldout_plan", "heldout_engine", "heldout_tasks", "play_heldout"]

HELDOUT_SEED_OFFSET = 7919
"""The held-out engine's seed is ``train.seed`` + this: its episodes reset with seeds of their own."""

PROBE_SEED_OFFSET = 104729
"""The training-game probe engine's seed is ``train.seed`` + this."""


def load_model(spec: str, *, seed: int, dtype: str | None = None, tiny_options: dict | None = None):
    """``(model, tokenizer)`` for a model path or hub id, or a tiny local model for ``"tiny"``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if spec == "tiny":
        spec = str(tiny_model_path(seed=seed, **(tiny_options or {})))
    options = {"dtype": dtype} if dtype else {}
    model = AutoModelForCausalLM.from_pretrained(spec, **options)
    tokenizer = AutoTokenizer.from_pretrained(spec)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def env_spec(config: TrainConfig, extra: dict[str, Any]):
    """The env factory for ``env.options`` updated by ``extra`` (``env.train_options`` or ``env.eval_options``)."""
    options = {**config.env.options, **extra}
    if config.family_spec.text_game:  # text games take max_steps
        options.setdefault("max_steps", config.env.max_steps)
    return EnvSpec(config.env.id, **options)


def agent_options(config: TrainConfig) -> dict[str, Any]:
    """The agent's keyword arguments (``make_agent``) from the ``policy`` section."""
    options: dict[str, Any] = {"history_window": config.policy.history_window}
    if config.policy.system_prompt is not None:
        options["system_prompt"] = config.policy.system_prompt
    if config.policy.action_mode == "index":
        options["action_format"] = "index"
    if config.family_spec.text_game:  # the text-game agent takes these
        options.update(prompt_style=config.policy.prompt_style, show_admissible=config.policy.show_admissible)
    return options


def build_agent(config: TrainConfig):
    """The agent that builds the policy's prompts and parses its answers."""
    return make_agent(config.env.id, **agent_options(config))


def policy_sampling(config: TrainConfig, *, evaluation: bool = False):
    """The policy's sampling parameters for training rollouts, or for held-out evaluation (train.eval_temperature)."""
    temperature = config.train.eval_temperature if evaluation else config.policy.temperature
    return SamplingParams(max_new_tokens=config.policy.max_completion_length, temperature=temperature,
                          top_p=config.policy.top_p)


def policy_dtype(config: TrainConfig) -> str | None:
    """The dtype the policy's weights load in (``policy.dtype``, else bfloat16 with ``scale.bf16``, else theirs)."""
    return config.policy.dtype or ("bfloat16" if config.scale.bf16 else None)


def policy_backend(base, action_mode: str):
    """The policy's backend over a text backend ``base``: for ``choice``, a choice backend over it, else ``base``.

    A choice backend follows each call's sampling temperature (0 = the most likely command), so the engine's
    sampling decides between training and evaluation.
    """
    if action_mode != "choice":
        return base

    return ChoiceBackend(base)


def policy_backends(config: TrainConfig, model, tokenizer, trainer):
    """(training backend, evaluation backend) over ``model`` (see :func:`policy_backend`).

    With ``policy.backend=vllm`` both generate with the vLLM engine of the policy's ``trainer`` (a
    :class:`~rla_train.cotrainer.policy_update.SampleTrainer` built with ``use_vllm``), which its updates keep in sync.
    """
    base = TRLVLLMBackend(trainer) if config.policy.backend == "vllm" else TransformersBackend(model, tokenizer)
    return policy_backend(base, config.policy.action_mode), policy_backend(base, config.policy.action_mode)


def build_judge(config: TrainConfig, policy_model, policy_tokenizer, *, rank: int = 0):
    """(judge, rm model, rm tokenizer, its plain text backend) as the config says; Nones without one.

    ``rank`` (data-parallel runs) shifts the noisy oracle's seed, so that each rank's judge draws its own numbers (not for
    ``oracle_noise=persistent``, whose errors fall on the same steps on every rank).

    The judge is a :class:`~rla_train.reward_model.RewardModel` (``reward_model.kind=model``; with
    ``verdict_mode=choice`` over a :class:`~rla_train.reward_model.VerdictChoiceBackend`), or a
    :class:`~rla_train.reward_model.NoisyOracleJudge` (``kind=noisy_oracle``, seeded from ``train.seed``), which
    has no model: its rm model, tokenizer and text backend are None, so no reward-model trainer is built for it.
    """
    section = config.reward_model
    if not MODES[config.train.mode].reward_model:
        return None, None, None, None
    if section.kind == "noisy_oracle":
        judge = NoisyOracleJudge(section.oracle_accuracy, judgments_per_step=section.judgments_per_step,
                                 labeller=StepLabeller(section.label_rule), noise=section.oracle_noise,
                                 # +1: the rm model, +2: the rewriter; persistent errors are the same on every rank
                                 seed=config.train.seed + 3 + (0 if section.oracle_noise == "persistent" else rank))
        return judge, None, None, None
    if section.model is None:
        return None, None, None, None
    sampling = SamplingParams(max_new_tokens=section.max_completion_length, temperature=section.temperature)
    if section.model == "same-as-policy":
        backend, model, tokenizer = TransformersBackend(policy_model, policy_tokenizer), policy_model, policy_tokenizer
    elif section.backend == "transformers":
        model, tokenizer = load_model(section.model, seed=config.train.seed + 1)
        if section.use_peft:
            from rla_train.cotrainer.lora import base_model_path, with_adapter

            model = with_adapter(model, section, base=base_model_path(section.model, seed=config.train.seed + 1))
        backend = TransformersBackend(model, tokenizer)
    else:
        backend, model, tokenizer = make_backend(section.backend, model=section.model,
                                                 **({"base_url": section.base_url} if section.base_url else {})), None, None
    raw = backend
    if section.verdict_mode == "choice":
        backend = VerdictChoiceBackend(ChoiceBackend(backend))
    judge = RewardModel(backend, judgments_per_step=section.judgments_per_step, sampling=sampling,
                        prompt_style=section.prompt_style)
    return judge, model, tokenizer, raw


# ----------------------------------------------------------------------------------------------- held-out
def heldout_engine_seed(seed: int) -> int:
    """The held-out engine's seed for a run (or evaluation) seeded ``seed``: episode ``k`` resets with it + ``k``."""
    return int(seed) + HELDOUT_SEED_OFFSET


@dataclass(frozen=True)
class HeldOutPlan:
    """How a run evaluates on its held-out tasks (see :func:`heldout_plan`).

    Attributes:
        env: the env factory (``env.options`` + ``env.eval_options`` + ``max_steps``).
        episodes: held-out episodes, one per task drawn (``train.eval_episodes``).
        task_seed: the seed the task list is drawn with (``train.seed``).
        engine_seed: the engine's seed: episode ``k`` resets with ``engine_seed + k`` and generate call ``t``
            samples with a seed derived from ``(engine_seed, t)``.
        sampling: the policy's sampling at evaluation (``train.eval_temperature``, 0 = greedy).
        num_envs: episodes in flight, i.e. the generate batch (the sampling stream depends on it).
        env_workers: the engine's env-worker arguments (:func:`env_workers`; the numbers do not depend on them).
    """

    env: Any
    episodes: int
    task_seed: int
    engine_seed: int
    sampling: Any
    num_envs: int
    env_workers: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def replace(self, **changes: Any) -> HeldOutPlan:
        """A copy with ``changes`` (``seed=`` sets both seeds as a run seeded so would)."""
        if "seed" in changes:
            seed = changes.pop("seed")
            changes.update(task_seed=int(seed), engine_seed=heldout_engine_seed(seed))
        return dataclasses.replace(self, **changes)


def env_workers(config: TrainConfig) -> dict[str, Any]:
    """The rollout engine's env-worker arguments: ``env.workers`` processes, or Ray actors (``env.backend: ray``)."""
    options = {"address": config.env.ray_address, "resources": dict(config.env.ray_resources)}
    return {"workers": config.env.workers, "env_backend": config.env.backend,
            "env_backend_options": options if config.env.backend == "ray" else {}}


def heldout_plan(config: TrainConfig) -> HeldOutPlan:
    """The held-out evaluation the run with ``config`` makes before, during and after co-training."""
    return HeldOutPlan(env=env_spec(config, config.env.eval_options), episodes=config.train.eval_episodes,
                       task_seed=config.train.seed, engine_seed=heldout_engine_seed(config.train.seed),
                       sampling=policy_sampling(config, evaluation=True), num_envs=config.env.num_envs,
                       env_workers=env_workers(config))


def heldout_engine(plan: HeldOutPlan, agent, backend, *, progress: bool = True):
    """The rollout engine that plays ``plan``'s episodes with ``agent`` and ``backend`` (close it after use)."""
    return RolloutEngine(plan.env, agent, backend, num_envs=plan.num_envs, **plan.env_workers,
                         sampling=plan.sampling, seed=plan.engine_seed, progress=progress)


def heldout_tasks(engine, plan: HeldOutPlan) -> list:
    """The plan's task list: ``plan.episodes`` tasks of the engine's env drawn with ``plan.task_seed``."""
    return engine.sample_tasks(plan.episodes, seed=plan.task_seed)


def play_heldout(engine, tasks, *, desc: str = "held-out") -> list:
    """One seeded episode of every task in one engine pass, the sampling stream restarted: the episodes, in order.

    Episode ``k`` resets with ``engine.seed + k`` and the engine's turn counter starts at 0, so the episodes depend
    on the weights, the tasks, the sampling and ``engine.num_envs`` alone: every evaluation of a run (before, at
    ``eval_every``, after) and ``benchmarks.evaluate --policy RUN`` play the same random numbers.
    """
    engine.turns = 0
    return engine.run(tasks, desc=desc)
