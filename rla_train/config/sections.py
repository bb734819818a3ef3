"""The config sections of ``python -m rla_train.run``: one documented dataclass per part of the run."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

from rla_envs.core.errors import did_you_mean
from rla_envs.core.labels import LABEL_RULES
from rla_envs.curriculum.pool_config import REWRITE_RULES, PoolConfig
from rla_envs.curriculum.sampling import STRATEGIES
from rla_train.config.fields import BACKENDS, MODES, REPORT_TO, TINY, TRAINABLE_BACKENDS, VLLM_MODES, ConfigError, Section, setting
from rla_train.agents.text_games import PROMPT_STYLES as POLICY_PROMPT_STYLES
from rla_train.reward_model.prompts import PROMPT_STYLES as JUDGE_PROMPT_STYLES
from rla_train.reward_model.warm_start import WARM_START_SCHEDULES
from rla_train.rollout.workers import ENV_BACKENDS


@dataclass
class EnvConfig(Section):
    """Which environment the policy plays, and where its training and held-out tasks come from."""

    section: ClassVar[str] = "env"
    id: str = setting("rla/AlfWorld-v0", "env id of a registered family, e.g. rla/TextWorld-v0 (rla_envs.families() lists them)")
    options: dict[str, Any] = setting({"task_types": ["pick_and_place_simple"]}, "keyword arguments for gym.make shared by training and evaluation envs "
                                          "(e.g. {n_per_type: 20, task_types: [pick, clean]} for AlfWorld)")
    train_options: dict[str, Any] = setting({"split": "train", "n_per_type": 128}, "keyword arguments for the training envs, over "
                                            "`options`: the training task source or split (Code: {source: bundled})")
    eval_options: dict[str, Any] = setting({"split": "valid_unseen", "n_per_type": 32}, "keyword arguments for the evaluation envs, over "
                                           "`options`: the held-out task source or split")
    max_steps: int = setting(30, "most policy turns per episode (the env's max_steps where it has one)", ge=1)
    num_envs: int = setting(8, "env instances playing at once, i.e. the policy's generate batch per turn", ge=1)
    workers: int = setting(1, "env workers: processes (0 = envs in the trainer's process), or Ray actors with backend=ray",
                           ge=0)
    backend: str = setting("process", "where the env workers run: process (on this machine) or ray (Ray actors, on a local "
                           "loopback cluster or the one at ray_address; pip install \"rla[ray]\")", choices=ENV_BACKENDS)
    ray_address: str | None = setting(None, "backend=ray: the cluster to join (auto, host:6379, ray://head:10001); null "
                                      "starts a local cluster listening on 127.0.0.1 only")
    ray_resources: dict[str, float] = setting({}, "backend=ray: Ray custom resources each env actor needs, so desktop or "
                                              "docker-backed envs land where their provider runs (e.g. {desktop: 1})")


_LORA = {"use_peft": "train a LoRA adapter (peft) instead of every weight: warm starts and updates train the adapter "
                     "alone, checkpoints hold it (TRL ModelConfig use_peft; rla_train.cotrainer.lora)",
         "lora_r": "LoRA rank (TRL lora_r)", "lora_alpha": "LoRA alpha, the adapter's scale alpha / r (TRL lora_alpha)",
         "lora_dropout": "dropout on the adapter's input (TRL lora_dropout; 0 here, TRL's is 0.05: with dropout an "
                         "update's forward passes differ from the sampling pass, so the clipped ratio starts away from 1)",
         "lora_target_modules": "modules that get an adapter: null (peft's default for the architecture), all-linear, "
                                "or a list of module names (TRL lora_target_modules)"}


@dataclass
class PolicyConfig(Section):
    """The policy model, how it generates, and its optimiser (names follow TRL's GRPOConfig where it has them)."""

    section: ClassVar[str] = "policy"
    model: str = setting(TINY, "model path or hub id; 'tiny' builds a tiny random-init Qwen2 locally (no download)")
    backend: str = setting("transformers", "generation backend of the trained policy: transformers (CPU/GPU) or vllm (TRL's "
                           "vLLM engine, weights synced after every update; a CUDA GPU and pip install \"rla[vllm]\")",
                           choices=TRAINABLE_BACKENDS,
                           fix="an OpenAI-compatible server does not follow the trained weights; use transformers or vllm")
    vllm_mode: str = setting("colocate", "backend=vllm: colocate (a vLLM engine in the training process, sharing its GPU; "
                             "TRL vllm_gpu_memory_utilization etc. through trl_args) or server (a `trl vllm-serve` server "
                             "at vllm_server_host:vllm_server_port, weights sent over NCCL)", choices=VLLM_MODES)
    vllm_server_host: str = setting("127.0.0.1", "backend=vllm, vllm_mode=server: host of the `trl vllm-serve` server")
    vllm_server_port: int = setting(8000, "backend=vllm, vllm_mode=server: port of the `trl vllm-serve` server",
                                    ge=1, le=65535)
    base_url: str | None = setting(None, "server URL for backend=openai, e.g. http://localhost:8000/v1")
    dtype: str | None = setting(None, "dtype the weights load in (bfloat16, float32; null = the checkpoint's)")
    action_mode: str = setting("choice", "how the policy acts: text (writes the command), index (answers its number "
                               "in the admissible list), choice (scores each admissible command's likelihood and "
                               "samples one: for tiny models; needs backend=transformers)",
                               choices=("text", "index", "choice"))
    history_window: int | None = setting(10, "past steps shown in each prompt (null = the whole episode)", ge=0)
    prompt_style: str = setting("compact", "text games: chat (one turn per step, history window) or compact (one turn: goal, "
                                "a memory of what the agent saw, the last answer; ~230 tokens, for tiny models)",
                                choices=POLICY_PROMPT_STYLES)
    show_admissible: str = setting("none", "text games: which turn lists the admissible commands (last, all, or none: the "
                                   "list then only travels with the prompt, for choice policies)",
                                   choices=("last", "all", "none"))
    system_prompt: str | None = setting(None, "replaces the agent's default system message (null = the default)")
    learning_rate: float = setting(1e-3, "AdamW learning rate of the policy (TRL learning_rate)", alias="lr", gt=0,
                                   fix="the paper uses 1e-6 for 7B models")
    optimizer: dict[str, Any] = setting({}, "optimizer fields that differ for the policy, over the shared `optimizer` "
                                        "section (e.g. {warmup_steps: 10})")
    max_completion_length: int = setting(16, "most tokens per policy turn (TRL max_completion_length)",
                                         alias="max_new_tokens", ge=1)
    temperature: float = setting(1.0, "sampling temperature of rollouts (TRL temperature)", gt=0,
                                 fix="at 0 every rollout of a group is the same and GRPO advantages are all zero; use 1.0")
    top_p: float = setting(1.0, "nucleus sampling mass of rollouts (TRL top_p)", gt=0, le=1)
    per_device_train_batch_size: int = setting(8, "sequences per micro-batch (TRL per_device_train_batch_size); a step's "
                                               "samples all accumulate into one optimizer step per iteration", ge=1)
    epsilon: float = setting(0.2, "lower clip range of the policy ratio (TRL epsilon)", gt=0, lt=1)
    epsilon_high: float | None = setting(None, "upper clip range (TRL epsilon_high; null = epsilon)", gt=0)
    beta: float = setting(0.0, "KL coefficient against the reference model (TRL beta; 0 = no reference model)", ge=0)
    num_iterations: int = setting(2, "optimisation passes over each batch of rollouts (TRL num_iterations)", ge=1)
    loss_type: str = setting("grpo", "policy-gradient loss normalisation (TRL loss_type)",
                             choices=("grpo", "dapo", "dr_grpo", "bnpo"))
    gradient_checkpointing: bool = setting(False, "trade compute for memory (TRL gradient_checkpointing)")
    trl_args: dict[str, Any] = setting({}, "more trl.GRPOConfig fields for the policy's trainer, passed as they are (those "
                                       "the config names, such as learning_rate, are refused: set them where they live)")
    choice_logprob: bool = setting(True, "action_mode=choice: the policy gradient's log-probability is the choice's "
                                   "(log-softmax over the admissible commands' scores, one per step) instead of the chosen "
                                   "command's tokens (ignored for other action modes)")
    mini_batches: int = setting(1, "optimizer steps per pass over a training step's samples, each on one slice of them "
                                "(the RLAnything release: 4 PPO mini-batches per step)", ge=1)
    group_filter: str = setting("mixed", "which GRPO groups train the policy: mixed (0 < success < 1), alfworld_release "
                                "(1/8 <= success <= 7/8, the ALFWorld release) or none (every group: all-fail groups then "
                                "train through the judge alone, as the OSWorld release does); train.mode=gigpo trains "
                                "every group",
                                choices=("mixed", "alfworld_release", "none"))
    gigpo_gamma: float = setting(0.95, "train.mode=gigpo: discount of the step-level returns G_t = gamma^(T-1-t) x won "
                                 "(verl-agent's algorithm.gamma for ALFWorld)", ge=0, le=1)
    gigpo_step_advantage_weight: float = setting(1.0, "train.mode=gigpo: weight of the step-level advantage added to the "
                                                 "episode-level one (verl-agent's algorithm.gigpo.step_advantage_w; 0 = "
                                                 "the episode level alone)", ge=0)
    gigpo_mode: str = setting("mean_std_norm", "train.mode=gigpo: how both levels are normalised within their groups: "
                              "mean_std_norm (centred and divided by the std: the episode level is then outcome_only's "
                              "scale) or mean_norm (centred only); verl-agent's algorithm.gigpo.mode",
                              choices=("mean_std_norm", "mean_norm"))
    use_peft: bool = setting(False, _LORA["use_peft"])
    lora_r: int = setting(16, _LORA["lora_r"], ge=1)
    lora_alpha: int = setting(32, _LORA["lora_alpha"], ge=1)
    lora_dropout: float = setting(0.0, _LORA["lora_dropout"], ge=0, lt=1)
    lora_target_modules: str | list[str] | None = setting(None, _LORA["lora_target_modules"])
    kl_reference: str = setting("initial", "what beta's KL penalty is measured against: initial (the model before "
                                "co-training, TRL's reference model) or pre_update (the policy before this step's updates, "
                                "k3, as the RLAnything release does)", choices=("initial", "pre_update"))
    max_update_kl: float | None = setting(None, "action_mode=choice: a trust region on each update, in nats: if the "
                                          "mean KL(before || after) of the choice distribution over the update's states "
                                          "(a sample of up to 128) exceeds it, the update is undone and taken again at half "
                                          "the learning rate, up to update_backtracks times, else rejected (null = off)",
                                          gt=0)
    update_backtracks: int = setting(3, "max_update_kl: how many times an update too large is halved before it is "
                                     "rejected", ge=0)

    def check(self) -> None:
        if not self.model:
            raise ConfigError("policy.model must be a model path, a hub id or 'tiny', got ''")
        if self.max_update_kl is not None and not (self.action_mode == "choice" and self.choice_logprob):
            raise ConfigError("policy.max_update_kl bounds the KL of the choice among admissible commands: it needs "
                              f"policy.action_mode=choice and policy.choice_logprob=true, got action_mode={self.action_mode}, "
                              f"choice_logprob={self.choice_logprob}; set those or remove policy.max_update_kl")
        server = self._changed(("vllm_server_host", "vllm_server_port"))
        if self.backend != "vllm" and (server or self._changed(("vllm_mode",))):
            raise ConfigError(f"policy.vllm_* fields apply to policy.backend=vllm, but policy.backend={self.backend}; "
                              "set policy.backend=vllm or remove them")
        if self.backend == "vllm" and self.vllm_mode != "server" and server:
            raise ConfigError(f"policy.{' and policy.'.join(server)} apply to policy.vllm_mode=server, got vllm_mode="
                              f"{self.vllm_mode}; set policy.vllm_mode=server or remove them")

    def _changed(self, names: tuple[str, ...]) -> list[str]:
        """Those of the fields ``names`` whose value differs from the default."""
        defaults = {spec.name: spec.default for spec in dataclasses.fields(self)}
        return [name for name in names if getattr(self, name) != defaults[name]]


@dataclass
class RewardModelConfig(Section):
    """The generative reward model that judges every step m times."""

    section: ClassVar[str] = "reward_model"
    model: str | None = setting(TINY, "model path or hub id, 'same-as-policy' (one model, both roles), 'tiny', or null "
                                      "(no reward model: only mode=outcome_only or gigpo)")
    backend: str = setting("transformers", "generation backend: transformers (CPU/GPU), vllm (GPU, pip install "
                           "\"rla[vllm]\"), openai (an OpenAI-compatible server); vllm and openai only for a frozen reward "
                           "model", choices=BACKENDS)
    base_url: str | None = setting(None, "server URL for backend=openai")
    verdict_mode: str = setting("choice", "how the judge answers: text (reasons, then writes \\boxed{1} or \\boxed{-1}; "
                                "paper scale) or choice (samples one of the two verdicts by its likelihood: for tiny "
                                "models, which cannot yet write a parseable verdict; needs backend=transformers)",
                                choices=("text", "choice"))
    judgments_per_step: int = setting(3, "m: independent judgments of every step", ge=1, fix="the paper uses m = 3")
    step_reward_weight: float = setting(1.0, "λ in R_i = O + (λ/m)·Σ_j S_ij (rla_train.signals.rewards.integrated_rewards lam)",
                                        alias="lam", ge=0, fix="the paper uses λ = 1")
    learning_rate: float = setting(3e-4, "AdamW learning rate of the reward model (TRL learning_rate)", alias="lr", gt=0)
    optimizer: dict[str, Any] = setting({"lr_scheduler_type": "linear"}, "optimizer fields that differ for the reward "
                                        "model, over the shared `optimizer` section ({} = the shared section as it is). The "
                                        "default decays the reward model's learning rate linearly to 0 over the run, what the "
                                        "README's default-run figures were measured with (then TRL's silent default)")
    per_device_train_batch_size: int = setting(8, "judgments per micro-batch of a reward-model update (TRL "
                                               "per_device_train_batch_size)", ge=1)
    loss_type: str = setting("dapo", "policy-gradient loss normalisation of the reward model's updates (TRL loss_type)",
                             choices=("grpo", "dapo", "dr_grpo", "bnpo"))
    epsilon: float = setting(0.2, "clip range of the reward model's probability ratio (TRL epsilon)", gt=0, lt=1)
    num_iterations: int = setting(1, "optimisation passes over each batch of judgments (TRL num_iterations)", ge=1)
    gradient_checkpointing: bool = setting(False, "trade compute for memory in the reward model's updates (TRL "
                                           "gradient_checkpointing)")
    trl_args: dict[str, Any] = setting({}, "more trl.GRPOConfig fields for the reward model's trainer, passed as they "
                                       "are (those the config names are refused: set them where they live)")
    updates_per_step: int = setting(1, "passes of reward-model updates over each training step's judgments, each "
                                    "num_iterations x mini_batches optimizer steps, all clipped against the judge that "
                                    "voted (0 = the reward model judges but is not trained)", ge=0)
    label_rule: str = setting("record", "what the family's step-label oracle calls a good step, for the noisy "
                              "oracle, the judge's warm start, its probe, the labelled objective and the judge metrics: "
                              "no_regress (the distance to the goal does not grow: a step that does nothing is good), "
                              "progress (the distance shrinks: undoing a step is progress) or record (the distance falls "
                              "below the episode's best so far: no round trip pays); rla_envs.core.labels",
                              choices=LABEL_RULES)
    objective: str = setting("labelled_balanced", "what co-training rewards the reward model for: paper (consistency with the step "
                             "reward, R_i·S_ij), balanced (the same, won and lost episodes weighted alike) or labelled "
                             "(agreement with the family's step-label oracle, e.g. ALFWorld's planner, on the policy's "
                             "own rollouts; privileged: needs a family with step labels) or labelled_balanced (the "
                             "same, the batch's good and bad steps weighted alike)",
                             choices=("paper", "balanced", "labelled", "labelled_balanced"))
    use_peft: bool = setting(False, _LORA["use_peft"])
    lora_r: int = setting(16, _LORA["lora_r"], ge=1)
    lora_alpha: int = setting(32, _LORA["lora_alpha"], ge=1)
    lora_dropout: float = setting(0.0, _LORA["lora_dropout"], ge=0, lt=1)
    lora_target_modules: str | list[str] | None = setting(None, _LORA["lora_target_modules"])
    task_filter_low: float = setting(0.2, "reward-model data only from tasks whose success rate is >= this", ge=0, le=1)
    task_filter_high: float = setting(0.8, "... and <= this (rla_train.signals.rewards.reward_model_task_filter)", ge=0, le=1)
    max_completion_length: int = setting(32, "most tokens per judgment (reasoning + \\boxed{±1})", alias="max_new_tokens",
                                         ge=1)
    temperature: float = setting(1.0, "sampling temperature of judgments (1 keeps the m votes independent)", gt=0)
    mini_batches: int = setting(1, "optimizer steps per reward-model update, each on one slice of the judgments "
                                "(the release: 4)", ge=1)
    kind: str = setting("model", "model (a generative judge: reward_model.model) or noisy_oracle (the family's step-label "
                        "oracle, e.g. the ALFWorld planner, with each vote flipped with probability 1 - oracle_accuracy: "
                        "a judge of known accuracy for checking the machinery; never trained)",
                        choices=("model", "noisy_oracle"))
    oracle_accuracy: float = setting(0.8, "kind=noisy_oracle: the probability that each vote equals the oracle's label "
                                     "(0.5 = pure noise)", ge=0, le=1)
    oracle_noise: str = setting("independent", "kind=noisy_oracle: how its wrong votes fall: independent (each vote "
                                "flipped on its own, so repeated visits average to the label) or persistent (all votes "
                                "on a (task, observation, action) flipped together on every visit, as a learned judge's "
                                "errors are: rla_train.reward_model.oracle)", choices=("independent", "persistent"))
    outcome_encoding: str = setting("pm1", "the outcome O in R_i = O + (λ/m)·Σ_j S_ij: pm1 (+1 won, -1 lost; the paper) or "
                                    "01 (1 won, 0 lost; the ALFWorld release, where after z-scoring the judge weighs as "
                                    "λ = 2 does with pm1)", choices=("pm1", "01"))
    prompt_style: str = setting("compact", "judge prompt: full (task, start of the game, earlier steps, the step, what "
                                "followed, admissible actions) or compact (the goal, the place, what the agent saw before and "
                                "after the step: for tiny choice judges)", choices=JUDGE_PROMPT_STYLES)
    warm_start_steps: int = setting(300, "steps of training the reward model to give the step-label oracle's verdicts "
                                    "(class-balanced cross-entropy of the two verdicts) before co-training (0 = none; needs "
                                    "verdict_mode=choice and a family with step labels)", ge=0)
    warm_start_episodes: int = setting(144, "episodes on the training games whose labelled steps the reward-model warm start "
                                       "trains on: half played by the searching expert, half by the warm-started policy", ge=0)
    warm_start_learning_rate: float = setting(1e-3, "learning rate of the reward-model warm start", gt=0)
    warm_start_schedule: str = setting("constant", "learning-rate schedule of the reward-model warm start after its "
                                       "10-step warm-up: constant, or linear down to 0 at the last step",
                                       choices=WARM_START_SCHEDULES)
    probe_episodes: int = setting(72, "episodes (expert, epsilon-expert and random) on valid_seen games whose labelled steps "
                                  "form a fixed probe of the reward model's balanced accuracy and AUC, judged at every "
                                  "evaluation (0 = no probe; needs a family with step labels)", ge=0)
    probe_policy_episodes: int = setting(24, "episodes the warm-started policy plays, one on each of the probe's "
                                         "first games (at most one per game: probe_episodes / 3), whose labelled steps "
                                         "join the probe, so that the judge is also measured on the policy's own steps "
                                         "(reported apart as well); 0 = none; ignored without a probe", ge=0)

    def check(self) -> None:
        if self.model == "":
            raise ConfigError("reward_model.model must be a model, 'same-as-policy', 'tiny' or null, got ''")
        if not self.task_filter_low < self.task_filter_high:
            raise ConfigError(f"reward_model.task_filter_low ({self.task_filter_low}) must be < task_filter_high "
                              f"({self.task_filter_high}); the paper uses 0.2 and 0.8")


@dataclass
class OptimizerConfig(Section):
    """The optimizer and schedule of both trained models (the policy and the reward model); each model's own
    learning rate is in its section, and ``policy.optimizer`` / ``reward_model.optimizer`` override any field here."""

    section: ClassVar[str] = "optimizer"
    optim: str = setting("adamw_torch_fused", "optimizer implementation (TRL optim); both are AdamW",
                         choices=("adamw_torch_fused", "adamw_torch"))
    lr_scheduler_type: str = setting("constant", "learning-rate schedule over the run's optimizer steps (TRL "
                                     "lr_scheduler_type)", choices=("constant", "constant_with_warmup", "linear", "cosine"))
    warmup_steps: int = setting(0, "optimizer steps of linear warm-up (TRL warmup_steps)", ge=0)
    weight_decay: float = setting(0.0, "AdamW weight decay (TRL weight_decay)", ge=0)
    adam_beta1: float = setting(0.9, "AdamW beta1 (TRL adam_beta1)", ge=0, lt=1)
    adam_beta2: float = setting(0.999, "AdamW beta2 (TRL adam_beta2)", ge=0, lt=1)
    adam_epsilon: float = setting(1e-8, "AdamW epsilon (TRL adam_epsilon)", gt=0)
    max_grad_norm: float = setting(1.0, "gradient clipping norm (TRL max_grad_norm)", gt=0)

    def overridden(self, overrides: dict[str, Any], where: str) -> OptimizerConfig:
        """These settings with ``overrides`` (``{field: value}``, from ``where``, e.g. ``policy.optimizer``) put over them."""
        names = [spec.name for spec in dataclasses.fields(self)]
        for key in overrides:
            if key not in names:
                raise ConfigError(f"{where}.{key} is not an optimizer field; expected one of {names} (the learning "
                                  f"rate is {where.split('.')[0]}.learning_rate).{did_you_mean(key, names)}")
        values = {**dataclasses.asdict(self), **overrides}
        try:
            return OptimizerConfig(**values)
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from error


SET_ELSEWHERE = {"group_size": "rollout.group_size", "seed": "train.seed"}
"""The :class:`PoolConfig` fields the pool section leaves to other sections."""


def _curriculum_fields() -> list[tuple[str, Any, Any]]:
    """Every :class:`PoolConfig` field but :data:`SET_ELSEWHERE`, as a config field with PoolConfig's type, default and
    help (a tuple is a list in YAML), so the pool section holds each pool setting once, with one default."""
    hints, choices = typing.get_type_hints(PoolConfig), {"strategy": STRATEGIES, "rewrite_rule": REWRITE_RULES}
    fields = []
    for spec in dataclasses.fields(PoolConfig):
        if spec.name in SET_ELSEWHERE:
            continue
        kind, default = hints[spec.name], spec.default
        if typing.get_origin(kind) is tuple:
            kind, default = list[typing.get_args(kind)[0]], list(default)
        fields.append((spec.name, kind, setting(default, spec.metadata["help"], choices=choices.get(spec.name))))
    return fields


_CurriculumFields = dataclasses.make_dataclass("_CurriculumFields", _curriculum_fields(), bases=(Section,))


@dataclass
class PoolSettings(_CurriculumFields):
    """The adaptive task pool: every rla_envs.curriculum.PoolConfig field (when tasks count as too hard / too easy,
    how tasks are sampled and rewrites accepted), plus how often and by whom tasks are rewritten."""

    section: ClassVar[str] = "pool"
    adapt_every: int = setting(96, "episodes between two rewrite rounds", ge=1)
    max_rewrites_per_round: int | None = setting(1, "most triggered tasks rewritten in one round (each costs up to "
                                                 "measure_rollouts x (1 + candidates) validation rollouts; null = all)", ge=1)
    rewriter: str = setting("mutator", "who rewrites: mutator (the family's LLM-free edits) or llm (a model given the "
                            "reward model's failure diagnoses)", choices=("mutator", "llm"))
    rewriter_model: str | None = setting(None, "the llm rewriter's model: a path or hub id, 'same-as-policy', or "
                                               "'same-as-reward-model'")
    rewriter_backend: str = setting("transformers", "the llm rewriter's backend", choices=BACKENDS)
    rewriter_base_url: str | None = setting(None, "server URL for rewriter_backend=openai")

    def check(self) -> None:
        self.pool_config()  # PoolConfig's own checks, now rather than at the first rewrite

    def pool_config(self, *, group_size: int = 8, seed: int = 0) -> PoolConfig:
        """The :class:`rla_envs.curriculum.PoolConfig` these settings describe (``rollout.group_size``, ``train.seed``)."""
        values = {name: getattr(self, name) for name, _, _ in _curriculum_fields()}
        try:
            return PoolConfig(**values, group_size=group_size, seed=seed)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"pool: {error}") from error


@dataclass
class RolloutConfig(Section):
    """How many rollouts each training step plays."""

    section: ClassVar[str] = "rollout"
    group_size: int = setting(8, "rollouts per task, one GRPO group (TRL num_generations)", alias="num_generations", ge=2,
                              fix="GRPO z-scores rewards within a group, which needs 2 rollouts or more; the paper uses 8")
    tasks_per_step: int = setting(6, "tasks (groups) per training step; per rank under a data-parallel launch "
                                     "(docs/scale-out.md)", ge=1)


@dataclass
class RunConfig(Section):
    """The training run: mode, length, seed, warm start and evaluation."""

    section: ClassVar[str] = "train"
    mode: str = setting("policy+reward+env", "what is trained: " + ", ".join(MODES) + " (RLAnything's ablation; "
                        "see rla_train.config.MODES)", choices=tuple(MODES))
    steps: int = setting(20, "training steps (each: rollouts, judgments, policy update, RM update, pool adaptation)", ge=0)
    seed: int = setting(0, "seed of everything: rollouts, sampling, the pool, model initialisation")
    training_stream: int = setting(0, "another random stream for training alone: shifts the seed of the training "
                                   "rollouts and of the pool's sampling by 1,000,000 x this, while the models, the warm start "
                                   "and every evaluation keep train.seed (the ablation's control arm: the same run again "
                                   "with other training draws, to measure run-to-run noise)", ge=0)
    warm_start_sft_steps: int = setting(600, "supervised steps on the env expert's demonstrations before RL (0 = none)",
                                        ge=0)
    warm_start_demos: int = setting(480, "demonstrations played by the env's (searching) expert for the warm start", ge=0)
    warm_start_learning_rate: float = setting(3e-3, "learning rate of the warm-start SFT (constant schedule)", gt=0)
    warm_start_listwise_steps: int = setting(700, "choice policies (policy.action_mode=choice): after the SFT, this many "
                                             "steps of listwise training on the same demonstrations (the cross-entropy of "
                                             "the expert's command among the admissible ones, scored as the policy acts; "
                                             "rla_train.cotrainer.warm_start.choice_sft) at warm_start_learning_rate (0 = none). "
                                             "Bounded by steps, never by time, so a seed gives the same start on any machine",
                                             ge=0)
    eval_every: int = setting(0, "evaluate on the held-out tasks (env.eval_options) every this many steps (0 = never)",
                              ge=0)
    eval_episodes: int = setting(64, "held-out episodes per evaluation", ge=1)
    probe_episodes: int = setting(64, "episodes on a fixed, seeded probe of training games, played at every evaluation: "
                                  "training success measured on the same tasks each time, not on the tasks the pool "
                                  "happened to draw (0 = none)", ge=0)
    eval_temperature: float = setting(1.0, "sampling temperature of held-out evaluations (0 = greedy); seeded, so the same "
                                      "run gives the same numbers (tiny choice policies loop when greedy)", ge=0)
    resume_from: str | None = setting(None, "a run directory to continue from (set by --resume DIR)")

    def check(self) -> None:
        if self.warm_start_sft_steps and not self.warm_start_demos:
            raise ConfigError(f"train.warm_start_sft_steps={self.warm_start_sft_steps} needs train.warm_start_demos "
                              ">= 1; set one, or train.warm_start_sft_steps=0 to skip the warm start")


@dataclass
class OutputConfig(Section):
    """Where a run writes its config, checkpoints, metrics and pool."""

    section: ClassVar[str] = "output"
    dir: str = setting("runs/cpu-tiny", "run directory: config.yaml, checkpoints, metrics.jsonl, pool.json")
    checkpoint_every: int = setting(5, "save policy, reward model, optimizers and pool every this many steps "
                                        "(0 = at the end only)", ge=0)
    keep_last: int | None = setting(None, "checkpoints kept (TRL save_total_limit; null = all)", ge=1)
    tensorboard: bool = setting(False, "also write TensorBoard event files (needs tensorboard installed; the same as "
                                "listing tensorboard in report_to)")
    report_to: str | list[str] = setting("none", "experiment trackers to mirror metrics.jsonl, a table of sampled "
                                         "trajectories with their judgments per evaluation and the summary to: none, "
                                         "tensorboard, trackio, wandb, or a list of them (TRL's report_to names; "
                                         "rla_train.cotrainer.trackers)")
    project: str = setting("rla", "report_to=wandb/trackio: the project the run is logged under")
    run_name: str | None = setting(None, "report_to=wandb/trackio: the run's name (null = the run directory's name)")

    def check(self) -> None:
        if not self.dir:
            raise ConfigError("output.dir must be a directory path, got ''")
        names = self._report_names()
        unknown = [name for name in names if name not in REPORT_TO]
        if unknown:
            raise ConfigError(f"output.report_to names {unknown}; known: {', '.join(REPORT_TO)} (one, or a list)"
                              f".{did_you_mean(unknown[0], REPORT_TO)}")
        if "none" in names and len(names) > 1:
            raise ConfigError(f"output.report_to={names} lists none beside trackers; drop none")

    def _report_names(self) -> list[str]:
        return [self.report_to] if isinstance(self.report_to, str) else list(self.report_to)

    def trackers(self) -> list[str]:
        """The trackers to open: ``report_to``'s, plus tensorboard when ``tensorboard`` is true."""
        names = [name for name in self._report_names() if name != "none"]
        return list(dict.fromkeys(names + (["tensorboard"] if self.tensorboard else [])))


@dataclass
class ScaleConfig(Section):
    """Precision and hardware settings (multi-GPU and vLLM generation while training: see docs/scale-out.md)."""

    section: ClassVar[str] = "scale"
    bf16: bool = setting(False, "load and train the policy and reward model in bfloat16 (TRL bf16; GPUs with bf16 support)")


SECTIONS: dict[str, type[Section]] = {"env": EnvConfig, "policy": PolicyConfig, "reward_model": RewardModelConfig,
                                       "optimizer": OptimizerConfig, "pool": PoolSettings, "rollout": RolloutConfig, "train": RunConfig,
                                       "output": OutputConfig, "scale": ScaleConfig}
"""Section name -> its dataclass, in the order files and ``--help`` list them."""

_MOVED_TO_OPTIMIZER = "moved to optimizer.{name}, shared by the policy and the reward model ({section}.optimizer: " \
                      "{{{name}: ...}} overrides it for one of them)"
_UNIT_TESTS = ("removed: the co-trainer does not run the reward model's unit-test writer (rla_train.reward_model."
               "UnitTestWriter takes its own arguments); delete the line")
RETIRED_KEYS: dict[str, str] = {
    **{f"policy.{name}": _MOVED_TO_OPTIMIZER.format(name=name, section="policy")
       for name in ("lr_scheduler_type", "warmup_steps", "max_grad_norm")},
    "train.logging_steps": "removed: it did nothing (metrics.jsonl gets every step's metrics); delete the line",
    "reward_model.unit_tests_per_answer": _UNIT_TESTS,
    "reward_model.unit_test_samples": _UNIT_TESTS,
    "pool.options": "removed: each PoolConfig field is a pool field now (pool.options.decay -> pool.decay)",
}
"""``section.field`` keys that older configs hold -> what became of them (the loader's error says so)."""
