"""What a co-training run is made of, built from a :class:`~rla_train.config.TrainConfig`.

:func:`build_components` loads (or builds, for ``"tiny"``) the policy and reward model, wraps them in
generation backends, makes the agent, the training and held-out rollout engines, the task pool with its
feeder (rewriter, diagnoser, measure) and the two TRL trainers. The agent, backends, judge, env specs and the
held-out evaluation come from :mod:`rla_train.cotrainer.play_setup`, which ``benchmarks.evaluate`` shares, so evaluating a
run plays as the run did. The loop in :mod:`rla_train.cotrainer.loop` only uses the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

from rla_envs.core.errors import did_you_mean
from rla_envs.curriculum.diagnosers import RuleDiagnoser
from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.rewriters import LLMRewriter, MutatorRewriter
from rla_envs.curriculum.wrapper import TaskFeeder
from rla_train.backends import make_backend
from rla_train.backends.base import SamplingParams
from rla_train.backends.hf import TransformersBackend
from rla_train.config import MODES, ConfigError, TrainConfig
from rla_train.cotrainer.lora import base_model_path, with_adapter
from rla_train.cotrainer.play_setup import (PROBE_SEED_OFFSET, build_agent, build_judge, env_spec, env_workers,
                                            heldout_engine, heldout_plan, heldout_tasks, load_model, policy_backends,
                                            policy_dtype, policy_sampling)
from rla_train.cotrainer.policy_update import SampleTrainer
from rla_train.reward_model import RewardModelDiagnoser
from rla_train.reward_model.probe import build_probe, probe_reward_model
from rla_train.rollout.engine import RolloutEngine, SamplingStream

__all__ = ["Components", "build_components", "load_model", "EngineMeasure", "grpo_args", "vllm_args", "policy_sampling"]


@dataclass
class Components:
    """The parts of a run (see :func:`build_components`)."""

    policy_model: Any
    policy_tokenizer: Any
    policy_backend: Any
    eval_backend: Any
    reward_model: Any | None          # rla_train.reward_model.RewardModel
    rm_model: Any | None
    rm_tokenizer: Any | None
    agent: Any
    engine: Any                       # training rollouts
    eval_engine: Any                  # held-out evaluation (seeded: same tasks, same numbers)
    eval_tasks: list
    feeder: Any                       # rla_envs.curriculum.TaskFeeder over the pool
    policy_trainer: Any               # rla_train.cotrainer.policy_update.SampleTrainer
    rm_trainer: Any | None
    probe_engine: Any | None = None   # training games at evaluation settings (train.probe_episodes)
    probe_tasks: list | None = None   # the fixed probe of training games, drawn once per run
    rm_probe: Any | None = None       # RewardModelProbe: the judge's balanced accuracy on fixed labelled steps

    def close(self) -> None:
        """Stop the env workers."""
        self.engine.close()
        self.eval_engine.close()
        if self.probe_engine is not None:
            self.probe_engine.close()


VALIDATION_STREAM = 1
"""The sampling stream (:class:`~rla_train.rollout.engine.SamplingStream` index) of the pool's validation rollouts."""


class EngineMeasure:
    """``measure(task, n)`` for the task pool: ``n`` rollouts of ``task`` with the current policy, 1.0 per win.

    The rollouts sample on a stream of their own (``stream``, index :data:`VALIDATION_STREAM` of the engine's
    seed; its ``turns`` are saved on checkpoints), so a rewrite round leaves the training rollouts' draws as they
    would have been without it: the env arm differs from the arm without it only by the rewritten tasks it plays.
    """

    def __init__(self, engine):
        self.engine = engine
        self.stream = SamplingStream(engine.seed, index=VALIDATION_STREAM)

    def __call__(self, task, n: int) -> list[float]:
        return [float(e.won) for e in self.engine.run([task], group_size=n, desc="measure", stream=self.stream)]


def vllm_args(policy) -> dict[str, Any]:
    """The GRPOConfig fields that decide whether the policy's trainer builds TRL's vLLM engine, and how it reaches it."""
    if policy.backend != "vllm":
        return {"use_vllm": False}
    return {"use_vllm": True, "vllm_mode": policy.vllm_mode, "vllm_server_host": policy.vllm_server_host,
            "vllm_server_port": policy.vllm_server_port}


def grpo_args(section, optimizer, out_dir: Path, *, seed: int, temperature: float, bf16: bool = False,
              beta: float = 0.0, epsilon_high: float | None = None, generation: dict[str, Any] | None = None):
    """A ``trl.GRPOConfig`` for the policy or the reward model, every value that shapes its updates given explicitly.

    ``section`` is the model's config section (learning rate, batch, loss, and ``trl_args``: further GRPOConfig
    fields passed through), ``optimizer`` its :meth:`~rla_train.config.TrainConfig.optimizer_for`; ``beta`` and
    ``epsilon_high`` are the policy's (the reward model has no KL term), ``generation`` the policy's
    :func:`vllm_args` (default: no vLLM). ``report_to`` stays ``none``: the run's trackers (``output.report_to``)
    get the co-trainer's metrics on the training step's axis (:mod:`rla_train.cotrainer.trackers`), while TRL's
    profiling timers, given ``wandb``, call ``wandb.log`` once per loss computation without a step: measured, they
    advanced W&B's step to 15 in a 2-step run, and W&B then dropped the co-trainer's step-2 records as out of
    order. ``num_generations`` only sizes TRL's
    placeholder dataset: samples arrive scored. A ``trl_args`` key that the config names elsewhere, or that GRPOConfig
    does not have, is a :class:`~rla_train.config.ConfigError`.
    """
    import torch
    from trl import GRPOConfig

    named = dict(
        output_dir=str(out_dir), seed=seed, temperature=temperature, report_to="none",
        use_cpu=not torch.cuda.is_available(), bf16=bf16, fp16=False, num_generations=2, logging_steps=1,
        save_strategy="no", disable_tqdm=True, learning_rate=section.learning_rate,
        per_device_train_batch_size=section.per_device_train_batch_size, loss_type=section.loss_type,
        epsilon=section.epsilon, epsilon_high=epsilon_high, beta=beta, num_iterations=section.num_iterations,
        max_completion_length=section.max_completion_length,
        # transformers 5 renamed gradient_checkpointing (TRL turns it on by default: pure overhead for small models)
        activation_checkpointing=section.gradient_checkpointing,
        optim=optimizer.optim, lr_scheduler_type=optimizer.lr_scheduler_type, warmup_steps=optimizer.warmup_steps,
        weight_decay=optimizer.weight_decay, adam_beta1=optimizer.adam_beta1, adam_beta2=optimizer.adam_beta2,
        adam_epsilon=optimizer.adam_epsilon, max_grad_norm=optimizer.max_grad_norm,
        **(generation or {"use_vllm": False}))
    where = f"{section.section}.trl_args"
    fields = {field.name for field in dataclass_fields(GRPOConfig)}
    for key in section.trl_args:
        if key in named:
            raise ConfigError(f"{where}.{key}: the config sets {key} itself (see python -m rla_train.run --help); set "
                              "it there, not in trl_args")
        if key not in fields:
            raise ConfigError(f"{where}.{key} is not a trl.GRPOConfig field.{did_you_mean(key, fields)}")
    return GRPOConfig(**named, **section.trl_args)


class RewardModelProbe:
    """``probe(judge) -> {"balanced_accuracy", "auc", ...}`` on a fixed labelled probe of steps (built once per run)."""

    def __init__(self, probe):
        self.probe = probe

    def __call__(self, judge) -> dict[str, Any]:
        return probe_reward_model(judge, self.probe)


def _rm_probe(config: TrainConfig, progress: bool) -> RewardModelProbe | None:
    """The reward model's probe: labelled steps of expert, epsilon-expert and random episodes on generated games of
    the family's first (in-distribution) evaluation split, e.g. ALFWorld's valid_seen."""
    section = config.reward_model
    if not section.probe_episodes or not MODES[config.train.mode].reward_model:
        return None

    spec = config.family_spec
    episodes_per_task = 3
    n_tasks = -(-section.probe_episodes // episodes_per_task)
    split = spec.splits[0]
    options = {k: v for k, v in config.env.options.items() if k != spec.split_option}
    tasks = spec.hook("generate_tasks")(split, n_tasks, 0, progress=progress, **options)[:n_tasks]
    return RewardModelProbe(build_probe(tasks, episodes_per_task=episodes_per_task, seed=config.train.seed,
                                        rule=section.label_rule,
                                        max_steps=config.env.max_steps, split=split))


class BackendText:
    """``[prompt texts] -> [answer texts]`` through a generation backend: the LLM rewriter's ``generate``."""

    def __init__(self, backend, sampling):
        self.backend, self.sampling = backend, sampling

    def __call__(self, prompts: list[str]) -> list[str]:
        chats = [[{"role": "user", "content": prompt}] for prompt in prompts]
        return [g.samples[0].text for g in self.backend.generate(chats, sampling=self.sampling)]


def _rewriter(config: TrainConfig, policy_backend, rm_text):
    """The pool's rewriter: the family's LLM-free mutator, or an LLM given the reward model's diagnoses."""
    section = config.pool
    if section.rewriter == "mutator":
        return MutatorRewriter()
    if section.rewriter_model == "same-as-policy":
        backend = getattr(policy_backend, "backend", policy_backend)  # the text backend under a choice policy
    elif section.rewriter_model == "same-as-reward-model":
        backend = rm_text
    elif section.rewriter_backend == "transformers":
        backend = TransformersBackend(*load_model(section.rewriter_model, seed=config.train.seed + 2))
    else:
        backend = make_backend(section.rewriter_backend, model=section.rewriter_model,
                               **({"base_url": section.rewriter_base_url} if section.rewriter_base_url else {}))
    return LLMRewriter(BackendText(backend, SamplingParams(max_new_tokens=1024, temperature=1.0)), batch=True)


TRAINING_STREAM_STRIDE = 1_000_000
"""``train.training_stream`` k shifts the training rollouts' and the pool's seeds by k x this (ranks add 0..N-1)."""


def _feeder(config: TrainConfig, tasks, engine, reward_model, rewriter):
    stream_seed = config.train.seed + TRAINING_STREAM_STRIDE * config.train.training_stream
    pool = TaskPool(tasks, config.pool.pool_config(group_size=config.rollout.group_size, seed=stream_seed))
    if reward_model is not None:
        diagnoser = RewardModelDiagnoser(reward_model)
    else:
        diagnoser = RuleDiagnoser()
    return TaskFeeder(pool, rewriter, diagnoser, EngineMeasure(engine), adapt_every=config.pool.adapt_every,
                      rollouts=config.pool.measure_rollouts, max_slots=config.pool.max_rewrites_per_round)


def _policy_trainer(config: TrainConfig, run_dir: Path, model, tokenizer) -> SampleTrainer:
    """The policy's trainer (with ``policy.backend=vllm``, the owner of the vLLM engine that generates rollouts)."""
    policy = config.policy
    return SampleTrainer(model, tokenizer,  # choice or text: trained at the temperature the rollouts sample at
                         grpo_args(policy, config.optimizer_for("policy"), run_dir / "trl-policy", seed=config.train.seed,
                                   temperature=policy.temperature, bf16=config.scale.bf16, beta=policy.beta,
                                   epsilon_high=policy.epsilon_high, generation=vllm_args(policy)),
                         total_steps=max(1, config.train.steps),
                         choice_logprob=policy.action_mode == "choice" and policy.choice_logprob,
                         mini_batches=policy.mini_batches, kl_reference=policy.kl_reference,
                         max_update_kl=policy.max_update_kl, update_backtracks=policy.update_backtracks)


def build_components(config: TrainConfig, run_dir: Path, *, progress: bool = True, rank: int = 0) -> Components:
    """Every part of the run, freshly built (a resume then loads the saved states into them).

    ``rank`` (data-parallel runs, :mod:`rla_train.cotrainer.distributed`): the training engine samples and resets
    with ``train.seed + rank`` and a noisy-oracle judge draws with its own seed; models, held-out tasks and the pool
    are the same on every rank.
    """
    seed = config.train.seed
    policy_model, policy_tokenizer = load_model(config.policy.model, seed=seed, dtype=policy_dtype(config))
    if config.policy.use_peft:  # before anything trains it: warm starts and updates train the adapter alone
        policy_model = with_adapter(policy_model, config.policy, base=base_model_path(config.policy.model, seed=seed))
    policy_trainer = _policy_trainer(config, run_dir, policy_model, policy_tokenizer)
    policy_backend, eval_backend = policy_backends(config, policy_model, policy_tokenizer, policy_trainer)
    reward_model, rm_model, rm_tokenizer, rm_text = build_judge(config, policy_model, policy_tokenizer, rank=rank)
    agent = build_agent(config)
    engine = RolloutEngine(env_spec(config, config.env.train_options), agent, policy_backend,
                           num_envs=config.env.num_envs, **env_workers(config),
                           sampling=policy_sampling(config),
                           seed=seed + TRAINING_STREAM_STRIDE * config.train.training_stream + rank, progress=progress)
    plan = heldout_plan(config)
    eval_engine = heldout_engine(plan, agent, eval_backend, progress=progress)
    eval_tasks = heldout_tasks(eval_engine, plan)
    probe_engine = probe_tasks = None
    if config.train.probe_episodes:
        probe_engine = RolloutEngine(env_spec(config, config.env.train_options), agent, eval_backend,
                                     num_envs=config.env.num_envs, **env_workers(config),
                                     sampling=policy_sampling(config, evaluation=True), seed=seed + PROBE_SEED_OFFSET,
                                     progress=progress)
        probe_tasks = probe_engine.sample_tasks(config.train.probe_episodes, seed=seed + 1)
    rewriter = _rewriter(config, policy_backend, rm_text)
    feeder = _feeder(config, engine.env.tasks(), engine, reward_model, rewriter)
    rm_trainer = None
    if MODES[config.train.mode].train_reward_model and rm_model is not None:
        rm_trainer = SampleTrainer(rm_model, rm_tokenizer,
                                   grpo_args(config.reward_model, config.optimizer_for("reward_model"),
                                             run_dir / "trl-reward-model", seed=seed,
                                             temperature=config.reward_model.temperature, bf16=config.scale.bf16),
                                   total_steps=max(1, config.train.steps * config.reward_model.updates_per_step),
                                   mini_batches=config.reward_model.mini_batches,
                                   choice_logprob=config.reward_model.verdict_mode == "choice",
                                   sampled_by_these_weights=rm_model is not policy_model)
    return Components(policy_model, policy_tokenizer, policy_backend, eval_backend, reward_model, rm_model, rm_tokenizer,
                      agent, engine, eval_engine, eval_tasks, feeder, policy_trainer, rm_trainer, probe_engine,
                      probe_tasks, _rm_probe(config, progress))
