"""Configuration of the co-trainer ``python -m rla_train.run``: dataclasses, YAML files, ``--set`` overrides.

A :class:`TrainConfig` is made of one dataclass per section (``env``, ``policy``, ``reward_model``,
``pool``, ``rollout``, ``train``, ``output``, ``scale``); every field carries its ``help`` in its metadata,
as TRL and Hugging Face configs do, so ``--help`` prints each one with its default. Values resolve as
defaults <- YAML file <- ``--set section.field=value`` (values read as YAML: ``1e-6``, ``true``, ``[a, b]``)::

    config = load_config("configs/alfworld-qwen2.5-7b.yaml", ["policy.learning_rate=2e-6", "train.steps=10"])
    config.save(run_dir / CONFIG_FILENAME)        # atomic; TrainConfig.load() reads it back
    config = parse_args(sys.argv[1:])             # python -m rla_train.run [--config F] [--set k=v ...]

``TrainConfig()`` is the CPU default that ``configs/cpu-tiny.yaml`` spells out: a tiny local policy and
reward model, generated ALFWorld tasks, choice actions, a few minutes of training. Checks run when a config
is built (types, choices, ranges, cross-field rules) and say how to fix the value; :meth:`TrainConfig.
check_hardware` (run by :func:`load_config` unless ``check_hardware=False``) checks what this machine must
offer (a GPU for vLLM, the files named).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from rla_envs.core.errors import RlaError, did_you_mean

__all__ = ["ConfigError", "Mode", "MODES", "SECTIONS", "CONFIG_FILENAME", "EnvConfig", "PolicyConfig", "RewardModelConfig",
           "PoolSettings", "RolloutConfig", "RunConfig", "OutputConfig", "ScaleConfig", "TrainConfig",
           "load_config", "apply_overrides", "build_arg_parser", "parse_args", "fields_help"]

CONFIG_FILENAME = "config.yaml"
"""The resolved config a run records in its output directory (and ``--resume DIR`` reads back)."""


class ConfigError(RlaError, ValueError):
    """A config that cannot be used: an unknown key, a wrong type, a value out of range; the message says the fix."""


class Mode(NamedTuple):
    """What a training mode uses: the outcome in the policy reward, a reward model, RM training, env adaptation."""

    outcome: bool
    reward_model: bool
    train_reward_model: bool
    adapt_env: bool


MODES: dict[str, Mode] = {
    "outcome_only": Mode(outcome=True, reward_model=False, train_reward_model=False, adapt_env=False),
    "policy": Mode(outcome=True, reward_model=True, train_reward_model=False, adapt_env=False),
    "policy+reward": Mode(outcome=True, reward_model=True, train_reward_model=True, adapt_env=False),
    "policy+reward+env": Mode(outcome=True, reward_model=True, train_reward_model=True, adapt_env=True),
    "reward_only": Mode(outcome=False, reward_model=True, train_reward_model=False, adapt_env=False),
}
"""RLAnything's ablation. ``outcome_only``: GRPO on O_τ; ``policy``: integrated reward R_i = O + (λ/m)ΣS with a
frozen reward model; ``policy+reward``: the reward model trained too; ``policy+reward+env``: and tasks rewritten
(the full method); ``reward_only``: the policy rewarded by the (frozen, e.g. already optimised) reward model's
step votes alone, no outcome."""

SAME_AS_POLICY = "same-as-policy"
TINY = "tiny"
BACKENDS = ("transformers", "vllm", "openai")
TEXT_FAMILIES = ("alfworld", "textworld")


def _f(default: Any, help: str, *, choices: Sequence[str] | None = None, alias: str | None = None,
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


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
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
            except ConfigError:
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
            except ValueError:
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
    raise ConfigError(f"{where} expects {_type_name(tp)}, got {type(value).__name__} {value!r}; "
                      f"fix it in the YAML file or with --set {where}=VALUE"
                      + ("" if tp is not str else " (quote it to make it text)"))


class _Section:
    """Base of the config sections: coerces and checks every field (type, choices, bounds), then :meth:`check`."""

    section: ClassVar[str] = ""

    def __post_init__(self):
        hints = typing.get_type_hints(type(self))
        for spec in dataclasses.fields(self):
            where, meta = f"{self.section}.{spec.name}", spec.metadata
            value = _coerce(getattr(self, spec.name), hints[spec.name], where)
            if meta["choices"] and value is not None and value not in meta["choices"]:
                raise ConfigError(f"{where} must be one of {list(meta['choices'])}, got {value!r}."
                                  f"{did_you_mean(value, meta['choices'])}")
            if value is not None and not all(_BOUNDS[k][1](value, b) for k, b in meta["bounds"].items()):
                expected = " and ".join(f"{_BOUNDS[k][0]} {b}" for k, b in meta["bounds"].items())
                raise ConfigError(f"{where} must be {expected}, got {value!r}" + (f"; {meta['fix']}" if meta["fix"] else ""))
            setattr(self, spec.name, value)
        self.check()

    def check(self) -> None:
        """Rules between this section's fields (rules across sections live in :meth:`TrainConfig.check`)."""


@dataclass
class EnvConfig(_Section):
    """Which environment the policy plays, and where its training and held-out tasks come from."""

    section: ClassVar[str] = "env"
    id: str = _f("rla/AlfWorld-v0", "registered env id: rla/AlfWorld-v0, rla/TextWorld-v0, rla/Code-v0, rla/OSWorld-v0")
    options: dict[str, Any] = _f({}, "keyword arguments for gym.make shared by training and evaluation envs "
                                     "(e.g. {n_per_type: 20, task_types: [pick, clean]} for AlfWorld)")
    train_options: dict[str, Any] = _f({"split": "train"}, "keyword arguments for the training envs, over "
                                       "`options`: the training task source or split (Code: {source: bundled})")
    eval_options: dict[str, Any] = _f({"split": "valid_unseen"}, "keyword arguments for the evaluation envs, over "
                                      "`options`: the held-out task source or split")
    max_steps: int = _f(30, "most policy turns per episode (the env's max_steps where it has one)", ge=1)
    num_envs: int = _f(8, "env instances playing at once, i.e. the policy's generate batch per turn", ge=1)
    workers: int = _f(1, "env worker processes (0 = envs in the trainer's process)", ge=0)


@dataclass
class PolicyConfig(_Section):
    """The policy model, how it generates, and its optimiser (names follow TRL's GRPOConfig where it has them)."""

    section: ClassVar[str] = "policy"
    model: str = _f(TINY, "model path or hub id; 'tiny' builds a tiny random-init Qwen2 locally (no download)")
    backend: str = _f("transformers", "generation backend: transformers (CPU/GPU), vllm (GPU, pip install "
                      "\"rla[vllm]\"), openai (an OpenAI-compatible server)", choices=BACKENDS)
    base_url: str | None = _f(None, "server URL for backend=openai, e.g. http://localhost:8000/v1")
    dtype: str | None = _f(None, "dtype the weights load in (bfloat16, float32; null = the checkpoint's)")
    action_mode: str = _f("choice", "how the policy acts: text (writes the command), index (answers its number "
                          "in the admissible list), choice (scores each admissible command's likelihood and "
                          "samples one: for tiny models; needs backend=transformers)",
                          choices=("text", "index", "choice"))
    history_window: int | None = _f(10, "past steps shown in each prompt (null = the whole episode)", ge=0)
    system_prompt: str | None = _f(None, "replaces the agent's default system message (null = the default)")
    learning_rate: float = _f(1e-4, "AdamW learning rate of the policy (TRL learning_rate)", alias="lr", gt=0,
                              fix="the paper uses 1e-6 for 7B models")
    lr_scheduler_type: str = _f("constant", "learning-rate schedule (TRL lr_scheduler_type)",
                                choices=("constant", "constant_with_warmup", "linear", "cosine"))
    warmup_steps: int = _f(0, "optimizer steps of linear warm-up (TRL warmup_steps)", ge=0)
    max_completion_length: int = _f(16, "most tokens per policy turn (TRL max_completion_length)",
                                    alias="max_new_tokens", ge=1)
    temperature: float = _f(1.0, "sampling temperature of rollouts (TRL temperature)", gt=0,
                            fix="at 0 every rollout of a group is the same and GRPO advantages are all zero; use 1.0")
    top_p: float = _f(1.0, "nucleus sampling mass of rollouts (TRL top_p)", gt=0, le=1)
    gradient_accumulation_steps: int = _f(1, "micro-batches per optimizer step (TRL gradient_accumulation_steps)", ge=1)
    per_device_train_batch_size: int = _f(8, "sequences per micro-batch (TRL per_device_train_batch_size)", ge=1)
    max_grad_norm: float = _f(1.0, "gradient clipping norm (TRL max_grad_norm)", gt=0)
    epsilon: float = _f(0.2, "lower clip range of the policy ratio (TRL epsilon)", gt=0, lt=1)
    epsilon_high: float | None = _f(None, "upper clip range (TRL epsilon_high; null = epsilon)", gt=0)
    beta: float = _f(0.0, "KL coefficient against the reference model (TRL beta; 0 = no reference model)", ge=0)
    num_iterations: int = _f(1, "optimisation passes over each batch of rollouts (TRL num_iterations)", ge=1)
    loss_type: str = _f("grpo", "policy-gradient loss normalisation (TRL loss_type)",
                        choices=("grpo", "dapo", "dr_grpo", "bnpo"))
    gradient_checkpointing: bool = _f(False, "trade compute for memory (TRL gradient_checkpointing)")

    def check(self) -> None:
        if not self.model:
            raise ConfigError("policy.model must be a model path, a hub id or 'tiny', got ''")


@dataclass
class RewardModelConfig(_Section):
    """The generative reward model that judges every step m times (and writes unit tests for code)."""

    section: ClassVar[str] = "reward_model"
    model: str | None = _f(TINY, "model path or hub id, 'same-as-policy' (one model, both roles), 'tiny', or null "
                                 "(no reward model: only mode=outcome_only)")
    backend: str = _f("transformers", "generation backend (see policy.backend); openai only for a frozen reward "
                      "model", choices=BACKENDS)
    base_url: str | None = _f(None, "server URL for backend=openai")
    judgments_per_step: int = _f(3, "m: independent judgments of every step", ge=1, fix="the paper uses m = 3")
    step_reward_weight: float = _f(1.0, "λ in R_i = O + (λ/m)·Σ_j S_ij (rla_train.rewards.integrated_rewards lam)",
                                   alias="lam", ge=0, fix="the paper uses λ = 1")
    learning_rate: float = _f(1e-4, "AdamW learning rate of the reward model", alias="lr", gt=0)
    updates_per_step: int = _f(1, "reward-model optimizer steps per training step", ge=1)
    task_filter_low: float = _f(0.2, "reward-model data only from tasks whose success rate is >= this", ge=0, le=1)
    task_filter_high: float = _f(0.8, "... and <= this (rla_train.rewards.reward_model_task_filter)", ge=0, le=1)
    max_completion_length: int = _f(32, "most tokens per judgment (reasoning + \\boxed{±1})", alias="max_new_tokens",
                                    ge=1)
    temperature: float = _f(1.0, "sampling temperature of judgments (1 keeps the m votes independent)", gt=0)
    unit_tests_per_answer: int = _f(4, "code only: unit tests asked for in each answer", ge=1)
    unit_test_samples: int = _f(2, "code only: answers (each with tests) per problem", ge=1)

    def check(self) -> None:
        if self.model == "":
            raise ConfigError("reward_model.model must be a model, 'same-as-policy', 'tiny' or null, got ''")
        if not self.task_filter_low < self.task_filter_high:
            raise ConfigError(f"reward_model.task_filter_low ({self.task_filter_low}) must be < task_filter_high "
                              f"({self.task_filter_high}); the paper uses 0.2 and 0.8")


@dataclass
class PoolSettings(_Section):
    """The adaptive task pool: when tasks count as too hard / too easy, and who rewrites them."""

    section: ClassVar[str] = "pool"
    strategy: str = _f("learnability", "task sampling: learnability (p near 0.5 first), uniform, or rlanything "
                       "(the released rule)", choices=("learnability", "uniform", "rlanything"))
    rewrite_rule: str | None = _f(None, "when to rewrite (null = 'rlanything' for strategy rlanything, else 'ours')",
                                  choices=("ours", "rlanything", "none"))
    alpha_low: float = _f(0.2, "success rate at or below which a task is rewritten easier (α_low)", gt=0, lt=1)
    alpha_high: float = _f(0.8, "success rate at or above which a task is rewritten harder (α_high)", gt=0, lt=1)
    adapt_every: int = _f(64, "episodes between two rewrite rounds", ge=1)
    measure_rollouts: int = _f(8, "fresh validation rollouts each for parent and child of a rewrite", ge=1)
    rewriter: str = _f("mutator", "who rewrites: mutator (the family's LLM-free edits) or llm (a model given the "
                       "reward model's failure diagnoses)", choices=("mutator", "llm"))
    rewriter_model: str | None = _f(None, "the llm rewriter's model: a path or hub id, 'same-as-policy', or "
                                          "'same-as-reward-model'")
    rewriter_backend: str = _f("transformers", "the llm rewriter's backend", choices=BACKENDS)
    rewriter_base_url: str | None = _f(None, "server URL for rewriter_backend=openai")
    options: dict[str, Any] = _f({}, "other rla_envs.curriculum.PoolConfig fields (decay, confidence, margin, ...)")

    def check(self) -> None:
        if not self.alpha_low < self.alpha_high:
            raise ConfigError(f"pool.alpha_low ({self.alpha_low}) must be < pool.alpha_high ({self.alpha_high}); "
                              "the paper uses 0.2 and 0.8")
        self.pool_config()  # PoolConfig's own checks, now rather than at the first rewrite

    def pool_config(self, *, group_size: int = 8, seed: int = 0):
        """The :class:`rla_envs.curriculum.PoolConfig` these settings describe."""
        from rla_envs.curriculum.pool import PoolConfig

        set_here = {"alpha_low", "alpha_high", "strategy", "rewrite_rule", "measure_rollouts", "group_size", "seed"}
        free = sorted({f.name for f in dataclasses.fields(PoolConfig)} - set_here)
        for key in self.options:
            if key not in free:
                raise ConfigError(f"pool.options.{key} is not a PoolConfig field left to options; expected one of "
                                  f"{free} (pool.*, rollout.group_size and train.seed set the others)."
                                  f"{did_you_mean(key, free)}")
        try:
            return PoolConfig(strategy=self.strategy, rewrite_rule=self.rewrite_rule, alpha_low=self.alpha_low,
                              alpha_high=self.alpha_high, measure_rollouts=self.measure_rollouts,
                              group_size=group_size, seed=seed, **self.options)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"pool.options: {error}") from error


@dataclass
class RolloutConfig(_Section):
    """How many rollouts each training step plays."""

    section: ClassVar[str] = "rollout"
    group_size: int = _f(8, "rollouts per task, one GRPO group (TRL num_generations)", alias="num_generations", ge=2,
                         fix="GRPO z-scores rewards within a group, which needs 2 rollouts or more; the paper uses 8")
    tasks_per_step: int = _f(2, "tasks (groups) per training step", ge=1)


@dataclass
class RunConfig(_Section):
    """The training run: mode, length, seed, warm start and evaluation."""

    section: ClassVar[str] = "train"
    mode: str = _f("policy+reward+env", "what is trained: " + ", ".join(MODES) + " (RLAnything's ablation; "
                   "see rla_train.config.MODES)", choices=tuple(MODES))
    steps: int = _f(20, "training steps (each: rollouts, judgments, policy update, RM update, pool adaptation)", ge=0)
    seed: int = _f(0, "seed of everything: rollouts, sampling, the pool, model initialisation")
    warm_start_sft_steps: int = _f(300, "supervised steps on the env expert's demonstrations before RL (0 = none)",
                                   ge=0)
    warm_start_demos: int = _f(120, "demonstrations played by the env's (searching) expert for the warm start", ge=0)
    warm_start_learning_rate: float = _f(1e-3, "learning rate of the warm-start SFT", gt=0)
    eval_every: int = _f(10, "evaluate on the held-out tasks (env.eval_options) every this many steps (0 = never)",
                         ge=0)
    eval_episodes: int = _f(32, "held-out episodes per evaluation", ge=1)
    logging_steps: int = _f(1, "log metrics every this many steps (TRL logging_steps)", ge=1)
    resume_from: str | None = _f(None, "a run directory to continue from (set by --resume DIR)")

    def check(self) -> None:
        if self.warm_start_sft_steps and not self.warm_start_demos:
            raise ConfigError(f"train.warm_start_sft_steps={self.warm_start_sft_steps} needs train.warm_start_demos "
                              ">= 1; set one, or train.warm_start_sft_steps=0 to skip the warm start")


@dataclass
class OutputConfig(_Section):
    """Where a run writes its config, checkpoints, metrics and pool."""

    section: ClassVar[str] = "output"
    dir: str = _f("runs/cpu-tiny", "run directory: config.yaml, checkpoints, metrics.jsonl, pool.json")
    checkpoint_every: int = _f(10, "save policy, reward model, optimizers and pool every this many steps "
                                   "(0 = at the end only)", ge=0)
    keep_last: int | None = _f(2, "checkpoints kept (TRL save_total_limit; null = all)", ge=1)
    tensorboard: bool = _f(False, "also write TensorBoard event files (needs tensorboard installed)")

    def check(self) -> None:
        if not self.dir:
            raise ConfigError("output.dir must be a directory path, got ''")


@dataclass
class ScaleConfig(_Section):
    """Multi-GPU and vLLM settings (ignored on CPU)."""

    section: ClassVar[str] = "scale"
    accelerate_config: str | None = _f(None, "accelerate config file (`accelerate launch --config_file`)")
    deepspeed: str | None = _f(None, "DeepSpeed JSON config file (TRL deepspeed)")
    bf16: bool = _f(False, "train in bfloat16 mixed precision (TRL bf16)")
    vllm_mode: str = _f("colocate", "where vLLM runs: colocate (in the trainer's processes) or server (a separate "
                        "`trl vllm-serve`) (TRL vllm_mode)", choices=("colocate", "server"))
    vllm_server_base_url: str | None = _f(None, "the vLLM server's URL when vllm_mode=server (TRL vllm_server_base_url)")
    vllm_gpu_memory_utilization: float = _f(0.3, "GPU memory share vLLM takes when colocated "
                                                 "(TRL vllm_gpu_memory_utilization)", gt=0, le=1)
    vllm_tensor_parallel_size: int = _f(1, "GPUs per vLLM engine (TRL vllm_tensor_parallel_size)", ge=1)

    def check(self) -> None:
        if self.vllm_mode == "server" and not self.vllm_server_base_url:
            raise ConfigError("scale.vllm_mode=server needs scale.vllm_server_base_url; start `trl vllm-serve --model M`"
                              " and set it to http://HOST:8000, or use scale.vllm_mode=colocate")



SECTIONS: dict[str, type[_Section]] = {"env": EnvConfig, "policy": PolicyConfig, "reward_model": RewardModelConfig,
                                       "pool": PoolSettings, "rollout": RolloutConfig, "train": RunConfig,
                                       "output": OutputConfig, "scale": ScaleConfig}
"""Section name -> its dataclass, in the order files and ``--help`` list them."""


def _paths() -> list[str]:
    """Every ``section.field`` path (and alias path) a config accepts."""
    paths = []
    for name, cls in SECTIONS.items():
        for spec in dataclasses.fields(cls):
            paths += [f"{name}.{spec.name}"] + ([f"{name}.{spec.metadata['alias']}"] if spec.metadata["alias"] else [])
    return paths


def _unknown(path: str, where: str) -> ConfigError:
    return ConfigError(f"unknown config key {path!r}{where}; expected section.field with a section in "
                       f"{list(SECTIONS)} (python -m rla_train.run --help lists every field).{did_you_mean(path, _paths())}")


def _field_name(section: str, key: str, where: str = "") -> str:
    """The field of ``section`` that ``key`` names (its own name or its alias); ConfigError with a hint if none."""
    for spec in dataclasses.fields(SECTIONS[section]):
        if key in (spec.name, spec.metadata["alias"]):
            return spec.name
    raise _unknown(f"{section}.{key}", where)


def _merge(data: dict[str, dict], update: Any, where: str = "") -> None:
    """Put ``update`` (``{section: {field: value}}``) over ``data``; fields are replaced whole (dicts too)."""
    if update is None:
        return
    if not isinstance(update, Mapping):
        raise ConfigError(f"a config{where} must be a mapping of sections ({list(SECTIONS)}), got {type(update).__name__}")
    for section, values in update.items():
        if section not in SECTIONS:
            raise _unknown(str(section), where)
        if not isinstance(values, Mapping):
            raise ConfigError(f"section {section!r}{where} must be a mapping of fields, got {type(values).__name__} "
                              f"{values!r}; write e.g. `{section}:` then indented `field: value` lines")
        seen: dict[str, str] = {}
        for key, value in values.items():
            name = _field_name(section, str(key), where)
            if name in seen:
                raise ConfigError(f"{section}.{name}{where} is given twice (as {seen[name]!r} and {key!r}); keep one")
            seen[name] = str(key)
            data[section][name] = copy.deepcopy(value)


@dataclass
class TrainConfig:
    """Everything ``python -m rla_train.run`` needs; ``TrainConfig()`` is the CPU default (configs/cpu-tiny.yaml)."""

    env: EnvConfig = field(default_factory=EnvConfig, metadata={"help": EnvConfig.__doc__})
    policy: PolicyConfig = field(default_factory=PolicyConfig, metadata={"help": PolicyConfig.__doc__})
    reward_model: RewardModelConfig = field(default_factory=RewardModelConfig,
                                            metadata={"help": RewardModelConfig.__doc__})
    pool: PoolSettings = field(default_factory=PoolSettings, metadata={"help": PoolSettings.__doc__})
    rollout: RolloutConfig = field(default_factory=RolloutConfig, metadata={"help": RolloutConfig.__doc__})
    train: RunConfig = field(default_factory=RunConfig, metadata={"help": RunConfig.__doc__})
    output: OutputConfig = field(default_factory=OutputConfig, metadata={"help": OutputConfig.__doc__})
    scale: ScaleConfig = field(default_factory=ScaleConfig, metadata={"help": ScaleConfig.__doc__})

    def __post_init__(self):
        for name, cls in SECTIONS.items():
            value = getattr(self, name)
            if isinstance(value, Mapping):
                data = {name: {}}
                _merge(data, {name: value})
                value = cls(**data[name])
            if not isinstance(value, cls):
                raise ConfigError(f"TrainConfig.{name} must be a {cls.__name__} or a mapping, got {type(value).__name__}")
            setattr(self, name, value)
        self.check()

    @property
    def mode(self) -> Mode:
        """What ``train.mode`` uses and trains (see :data:`MODES`)."""
        return MODES[self.train.mode]

    @property
    def family(self) -> str:
        """The env family (``"alfworld"``, ``"textworld"``, ``"code"``, ``"desktop"``) of ``env.id``."""
        from rla_train.agents import ENV_FAMILIES

        if self.env.id not in ENV_FAMILIES:
            raise ConfigError(f"env.id must be an env the co-trainer has an agent for, one of {sorted(ENV_FAMILIES)}, "
                              f"got {self.env.id!r}.{did_you_mean(self.env.id, ENV_FAMILIES)}")
        return ENV_FAMILIES[self.env.id]

    def check(self) -> None:
        """Cross-section rules; each error names the fields and the fix."""
        mode, family, policy, rm, pool = self.mode, self.family, self.policy, self.reward_model, self.pool
        name = self.train.mode
        if mode.reward_model and rm.model is None:
            raise ConfigError(f"train.mode={name} needs a reward model, but reward_model.model is null; set it to a "
                              f"model path, '{SAME_AS_POLICY}' or '{TINY}', or use train.mode=outcome_only")
        if policy.backend == "openai":
            raise ConfigError("policy.backend=openai cannot train the policy (its weights live on the server); use "
                              "policy.backend=vllm (scale.vllm_mode=server for a separate vLLM server) or transformers")
        if mode.reward_model and mode.train_reward_model and rm.backend == "openai":
            raise ConfigError(f"train.mode={name} trains the reward model, which reward_model.backend=openai cannot "
                              "do; use reward_model.backend=transformers or vllm, or train.mode=policy (frozen RM)")
        if rm.model == SAME_AS_POLICY and rm.backend != policy.backend:
            raise ConfigError(f"reward_model.model={SAME_AS_POLICY} shares the policy's backend, but reward_model.backend"
                              f"={rm.backend} and policy.backend={policy.backend}; set both to the same")
        for section, backend, url in (("reward_model", rm.backend, rm.base_url), ("pool", pool.rewriter_backend,
                                                                                  pool.rewriter_base_url)):
            if backend == "openai" and not url:
                key = "base_url" if section == "reward_model" else "rewriter_base_url"
                raise ConfigError(f"{section}: backend openai needs {section}.{key} (e.g. http://localhost:8000/v1)")
        if policy.action_mode != "text" and family not in TEXT_FAMILIES:
            raise ConfigError(f"policy.action_mode={policy.action_mode} needs a list of admissible actions, which "
                              f"{self.env.id} does not give; use policy.action_mode=text")
        if policy.action_mode == "choice" and policy.backend != "transformers":
            raise ConfigError(f"policy.action_mode=choice scores candidates with the transformers backend, got "
                              f"policy.backend={policy.backend}; use policy.backend=transformers or action_mode=text")
        if mode.adapt_env and pool.rewriter == "llm":
            if not pool.rewriter_model:
                raise ConfigError("pool.rewriter=llm needs pool.rewriter_model (a model, 'same-as-policy' or "
                                  "'same-as-reward-model'), or use pool.rewriter=mutator (no model)")
            if pool.rewriter_model == "same-as-reward-model" and rm.model is None:
                raise ConfigError("pool.rewriter_model=same-as-reward-model but reward_model.model is null")

    def check_hardware(self) -> None:
        """Checks of this machine: vLLM importable with a CUDA GPU when a backend is vllm; named files exist."""
        import importlib.util

        mode = self.mode
        uses = {("policy.backend", self.policy.backend)}
        if mode.reward_model:
            uses.add(("reward_model.backend", self.reward_model.backend))
        if mode.adapt_env and self.pool.rewriter == "llm":
            uses.add(("pool.rewriter_backend", self.pool.rewriter_backend))
        for key, backend in sorted(uses):
            if backend != "vllm":
                continue
            if importlib.util.find_spec("vllm") is None:
                raise ConfigError(f"{key}=vllm but vllm is not installed; pip install \"rla[vllm]\" on a GPU machine, "
                                  f"or use --set {key}=transformers")
            import torch

            if not torch.cuda.is_available():
                raise ConfigError(f"{key}=vllm needs a CUDA GPU and this machine has none; on CPU use --set "
                                  f"{key}=transformers (with a small model, e.g. policy.model=tiny, or configs/cpu-tiny.yaml)")
        files = [("scale.accelerate_config", self.scale.accelerate_config), ("scale.deepspeed", self.scale.deepspeed)]
        files += [(f"{s}.model", m) for s, m in (("policy", self.policy.model), ("reward_model", self.reward_model.model))
                  if m and m.startswith((".", "/", "~"))]
        for key, path in files:
            if path and not Path(path).expanduser().exists():
                raise ConfigError(f"{key}={path!r} does not exist (cwd {os.getcwd()}); fix the path or set it to null")

    # ----------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{section: {field: value}}``, plain YAML/JSON-ready data."""
        return {name: dataclasses.asdict(getattr(self, name)) for name in SECTIONS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """A config from ``{section: {field: value}}``; missing fields keep their defaults, unknown ones fail."""
        merged: dict[str, dict] = {name: {} for name in SECTIONS}
        _merge(merged, data)
        return cls(**{name: SECTIONS[name](**values) for name, values in merged.items()})

    def to_yaml(self) -> str:
        """The config as a YAML document (every field, in declaration order)."""
        import yaml

        return ("# rla co-trainer config (python -m rla_train.run --config THIS_FILE)\n"
                + yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=120))

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_yaml` to ``path`` atomically (a run records its resolved config beside its checkpoints)."""
        from rla_envs.core.files import atomic_write_text

        return atomic_write_text(path, self.to_yaml())

    @classmethod
    def load(cls, path: str | os.PathLike) -> TrainConfig:
        """The config saved at ``path`` (fields it lacks take today's defaults); no hardware check."""
        return load_config(path, check_hardware=False)


def _read_yaml(path: str | os.PathLike) -> Any:
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist (cwd {os.getcwd()}); pass an existing YAML "
                          f"file, e.g. configs/cpu-tiny.yaml")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {error}") from error


def apply_overrides(data: dict[str, dict], overrides: Iterable[str]) -> dict[str, dict]:
    """Apply ``section.field=value`` overrides to ``data`` in place (values read as YAML); dict fields take deeper keys."""
    import yaml

    for override in overrides:
        key, sep, raw = str(override).partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) < 2 or not all(parts):
            raise ConfigError(f"--set expects section.field=value (e.g. policy.learning_rate=1e-6), got {override!r}")
        if parts[0] not in SECTIONS:
            raise _unknown(key.strip(), " in --set")
        name = _field_name(parts[0], parts[1], " in --set")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as error:
            raise ConfigError(f"--set {override!r}: the value is not valid YAML ({error}); quote text") from error
        if len(parts) == 2:
            data[parts[0]][name] = value
            continue
        target = data[parts[0]].get(name)
        if not isinstance(target, dict):
            raise ConfigError(f"--set {override!r}: {parts[0]}.{name} is not a mapping, so it has no key "
                              f"{'.'.join(parts[2:])!r}; use --set {parts[0]}.{name}=VALUE")
        for part in parts[2:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise ConfigError(f"--set {override!r}: {part!r} holds a value, not a mapping")
        target[parts[-1]] = value
    return data


def load_config(path: str | os.PathLike | None = None, overrides: Iterable[str] = (), *,
                check_hardware: bool = True) -> TrainConfig:
    """Defaults <- the YAML file at ``path`` <- ``section.field=value`` overrides, checked (and the machine too).

    Raises:
        ConfigError: an unknown key (with the closest field), a wrong type, a value out of range, a rule between
            fields, or (``check_hardware``) a vLLM backend without a GPU or a named file that is missing.
    """
    data = TrainConfig().to_dict()
    if path is not None:
        _merge(data, _read_yaml(path), f" in {os.fspath(path)}")
    config = TrainConfig.from_dict(apply_overrides(data, overrides))
    if check_hardware:
        config.check_hardware()
    return config


def fields_help(width: int = 100) -> str:
    """Every field, grouped by section: ``section.field (type, default ...)`` and its help, indented."""
    import textwrap

    lines = ["config fields (set in a YAML file as section: {field: value}, or with --set section.field=value):"]
    defaults = TrainConfig().to_dict()
    for section, cls in SECTIONS.items():
        lines += ["", f"{section}: {cls.__doc__}"]
        hints = typing.get_type_hints(cls)
        for spec in dataclasses.fields(cls):
            extra = [f"default: {defaults[section][spec.name]!r}"]
            if spec.metadata["choices"]:
                extra.append("one of: " + ", ".join(spec.metadata["choices"]))
            if spec.metadata["alias"]:
                extra.append(f"alias: {section}.{spec.metadata['alias']}")
            lines.append(f"  {section}.{spec.name} ({_type_name(hints[spec.name])}; {'; '.join(extra)})")
            lines += textwrap.wrap(spec.metadata["help"], width, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


def build_arg_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m rla_train.run``; its ``--help`` documents every config field."""
    parser = argparse.ArgumentParser(
        prog="python -m rla_train.run", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=fields_help(),
        description="Train a policy, its reward model and its tasks together (RLAnything). With no arguments it "
                    "runs the CPU default (configs/cpu-tiny.yaml).")
    parser.add_argument("--config", metavar="FILE", help="YAML config file (see configs/); fields it omits keep "
                                                         "their defaults")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override one field (repeatable); the value is read as YAML: 1e-6, true, [a, b], null")
    parser.add_argument("--resume", metavar="DIR", help=f"continue the run in DIR with the config it recorded "
                                                        f"(DIR/{CONFIG_FILENAME}); --set still applies")
    return parser


def parse_args(argv: Sequence[str] | None = None, *, check_hardware: bool = True) -> TrainConfig:
    """The config the command line describes; a bad config exits with status 2 and the fix (argparse style)."""
    parser = build_arg_parser()
    args = parser.parse_args(argv)
    path = args.config
    if args.resume is not None:
        if args.config is not None:
            parser.error(f"--resume uses the config recorded in {args.resume}/{CONFIG_FILENAME}; drop --config "
                         "(change fields with --set)")
        path = Path(args.resume) / CONFIG_FILENAME
        if not path.is_file():
            parser.error(f"--resume {args.resume}: no {CONFIG_FILENAME} there; pass the output.dir of an earlier run")
    try:
        config = load_config(path, args.overrides, check_hardware=check_hardware)
    except ConfigError as error:
        parser.error(str(error))
    if args.resume is not None:
        config.train.resume_from = str(args.resume)
    return config
