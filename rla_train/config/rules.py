"""The rules that hold across the sections of a :class:`~rla_train.config.loading.TrainConfig`.

Each section checks its own fields when it is built (``sections``); these rules need several sections at once (the
mode, the env's family, the backends, the reward model, the pool) and run in ``TrainConfig.check``, so a config
that cannot run fails when it is built, with a one-line error naming the fields and the fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rla_envs.core.registry import families
from rla_train.config.fields import SAME_AS_POLICY, TINY, ConfigError
from rla_train.signals.rewards import LABELLED_OBJECTIVES

if TYPE_CHECKING:
    from rla_train.config.loading import TrainConfig

__all__ = ["check_sections"]


def _check_env_workers(config: TrainConfig) -> None:
    """The env backend's settings agree: Ray actors for env.backend=ray, Ray options only with it."""
    env = config.env
    if env.backend == "ray" and env.workers == 0:
        raise ConfigError("env.backend=ray needs env.workers >= 1 (the number of Ray actors holding the envs)")
    if env.backend != "ray" and (env.ray_address is not None or env.ray_resources):
        raise ConfigError(f"env.ray_address and env.ray_resources apply to env.backend=ray, but env.backend="
                          f"{env.backend}; set env.backend=ray or remove them")


def check_sections(config: TrainConfig) -> None:
    """Cross-section rules of ``config`` (``TrainConfig.check``); each error names the fields and the fix."""
    mode, spec, policy, rm, pool = config.mode, config.family_spec, config.policy, config.reward_model, config.pool
    name, family = config.train.mode, spec.name
    for role in ("policy", "reward_model"):
        config.optimizer_for(role)  # an override that is not an optimizer field, or out of range, fails here
    _check_env_workers(config)
    with_labels = sorted(f.name for f in families().values() if f.step_labels is not None)
    if mode.reward_model and rm.kind == "noisy_oracle" and spec.step_labels is None:
        raise ConfigError(f"reward_model.kind=noisy_oracle votes the expert's step labels, which exist for the "
                          f"families with a step-label oracle ({', '.join(with_labels)}), not {family}; use "
                          "reward_model.kind=model")
    if mode.train_reward_model and rm.objective in LABELLED_OBJECTIVES and spec.step_labels is None:
        raise ConfigError(f"reward_model.objective={rm.objective} rewards agreeing with the family's step labels, which exist "
                          f"for the families with a step-label oracle ({', '.join(with_labels)}), not {family}; use "
                          "reward_model.objective=paper or balanced")
    if mode.reward_model and rm.kind == "model" and rm.model is None:
        raise ConfigError(f"train.mode={name} needs a reward model, but reward_model.model is null; set it to a "
                          f"model path, '{SAME_AS_POLICY}' or '{TINY}', or use train.mode=outcome_only or gigpo")
    if mode.train_reward_model and rm.model != SAME_AS_POLICY and rm.backend != "transformers":
        raise ConfigError(f"train.mode={name} trains the reward model, which reward_model.backend={rm.backend} cannot "
                          "do in this version; use reward_model.backend=transformers, or train.mode=policy to keep "
                          "a frozen reward model on vllm/openai")
    if mode.train_reward_model and rm.model == SAME_AS_POLICY and policy.backend == "vllm":
        raise ConfigError(f"train.mode={name} trains a reward model that shares the policy's weights (reward_model.model="
                          f"{SAME_AS_POLICY}), whose updates the policy's vLLM engine would not see; name a separate "
                          "reward model, use train.mode=policy, or policy.backend=transformers")
    if policy.use_peft and policy.beta and policy.kl_reference == "initial":
        raise ConfigError("policy.use_peft with policy.beta > 0 and policy.kl_reference=initial: TRL measures that KL "
                          "against a separate reference adapter, which this trainer does not build; use "
                          "policy.kl_reference=pre_update (the RLAnything release's) or policy.beta=0")
    if rm.use_peft and (rm.model == SAME_AS_POLICY or rm.backend != "transformers" or rm.kind != "model"):
        raise ConfigError("reward_model.use_peft adapts a reward model rla loads itself (reward_model.kind=model, backend "
                          f"transformers, its own model), not model={rm.model}, backend={rm.backend}, kind={rm.kind}; a "
                          "judge that shares the policy's model shares its adapter: set policy.use_peft instead")
    if rm.model == SAME_AS_POLICY and rm.backend != policy.backend:
        raise ConfigError(f"reward_model.model={SAME_AS_POLICY} shares the policy's backend, but reward_model.backend"
                          f"={rm.backend} and policy.backend={policy.backend}; set both to the same")
    for section, backend, url in (("reward_model", rm.backend, rm.base_url), ("pool", pool.rewriter_backend,
                                                                              pool.rewriter_base_url)):
        if backend == "openai" and not url:
            key = "base_url" if section == "reward_model" else "rewriter_base_url"
            raise ConfigError(f"{section}: backend openai needs {section}.{key} (e.g. http://localhost:8000/v1)")
    if policy.action_mode != "text" and not spec.text_game:
        raise ConfigError(f"policy.action_mode={policy.action_mode} needs a list of admissible actions, which "
                          f"{config.env.id} does not give; use policy.action_mode=text")
    if policy.show_admissible == "none" and policy.action_mode != "choice" and spec.text_game:
        raise ConfigError(f"policy.show_admissible=none hides the commands from a policy that must write or number "
                          f"one (action_mode={policy.action_mode}); use it with action_mode=choice")
    if policy.action_mode == "choice" and policy.backend != "transformers":
        raise ConfigError(f"policy.action_mode=choice scores candidates with the transformers backend, got "
                          f"policy.backend={policy.backend}; use policy.backend=transformers or action_mode=text")
    if mode.reward_model and rm.verdict_mode == "choice" and rm.backend != "transformers":
        raise ConfigError(f"reward_model.verdict_mode=choice scores the two verdicts with the transformers backend, "
                          f"got reward_model.backend={rm.backend}; use verdict_mode=text with that backend")
    if mode.train_reward_model and rm.kind == "model" and rm.judgments_per_step < 2:
        raise ConfigError(f"train.mode={name} trains the reward model on the z-scores of each step's judgments, "
                          f"which need reward_model.judgments_per_step >= 2 (got {rm.judgments_per_step}: a single "
                          "judgment gives nothing to standardise, as in the release); the paper uses 3")
    if mode.adapt_env and pool.rewriter == "llm":
        if not pool.rewriter_model:
            raise ConfigError("pool.rewriter=llm needs pool.rewriter_model (a model, 'same-as-policy' or "
                              "'same-as-reward-model'), or use pool.rewriter=mutator (no model)")
        if pool.rewriter_model == "same-as-reward-model" and (rm.model is None or rm.kind == "noisy_oracle"):
            raise ConfigError("pool.rewriter_model=same-as-reward-model but the reward model has no weights "
                              "(reward_model.model is null or kind is noisy_oracle); name a rewriter model")
    if config.train.warm_start_sft_steps and spec.expert_options is None:
        raise ConfigError(f"train.warm_start_sft_steps={config.train.warm_start_sft_steps} imitates the env's "
                          f"expert, which family {family} does not offer (FamilySpec.expert_options); set "
                          "train.warm_start_sft_steps=0")
    labelled_episodes = spec.step_labels is not None and spec.expert_options is not None
    if rm.warm_start_steps and mode.reward_model and rm.kind == "model":
        if rm.verdict_mode != "choice" or not labelled_episodes:
            raise ConfigError(f"reward_model.warm_start_steps={rm.warm_start_steps} trains a choice judge on the "
                              f"step labels of expert episodes; it needs reward_model.verdict_mode=choice and an env "
                              f"whose family has an expert and a step-label oracle, e.g. env.id=rla/AlfWorld-v0 "
                              f"(got {rm.verdict_mode}, {config.env.id}); set reward_model.warm_start_steps=0")
        if not rm.warm_start_episodes:
            raise ConfigError("reward_model.warm_start_steps needs reward_model.warm_start_episodes >= 1 (the "
                              "episodes whose labelled steps it trains on)")
    if rm.probe_episodes and mode.reward_model and not (labelled_episodes and spec.generate_tasks and spec.splits):
        raise ConfigError(f"reward_model.probe_episodes labels expert episodes on generated held-out tasks with the "
                          f"family's step-label oracle; family {family} ({config.env.id}) lacks an expert, a step-label "
                          "oracle, a task generator or splits: set reward_model.probe_episodes=0")
