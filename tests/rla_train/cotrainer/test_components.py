"""Pieces of a co-training run built from the config: the LLM rewriter and GRPO arguments."""

from __future__ import annotations

import pytest

from rla_envs.code.tasks.bundled import bundled_tasks
from rla_envs.curriculum.rewriters import LLMRewriter, MutatorRewriter
from rla_train.backends.scripted import ScriptedBackend
from rla_train.config import ConfigError, TrainConfig, load_config
from rla_train.cotrainer.components import BackendText, _rewriter, grpo_args


def test_llm_rewriter_runs_on_the_policy_backend_and_rejects_garbage_with_reasons():
    config = load_config(None, ["pool.rewriter=llm", "pool.rewriter_model=same-as-policy"], check_hardware=False)
    backend = ScriptedBackend(["no idea", '{"instruction": 3}'])
    rewriter = _rewriter(config, backend, None)
    assert isinstance(rewriter, LLMRewriter) and isinstance(rewriter.generate, BackendText)
    task = bundled_tasks(1)[0]
    proposals = rewriter.propose(task, "harder", success_rate=0.9, diagnoses=["solved too quickly"])
    assert proposals and all(not p.ok and p.reason for p in proposals)
    assert backend.batch_sizes == [len(proposals)]  # one batched call for every attempt
    assert "solved too quickly" in backend.prompts_seen[0]
    assert isinstance(_rewriter(load_config(None, check_hardware=False), backend, None), MutatorRewriter)


def test_grpo_args_take_trl_names_from_the_section(tmp_path):
    config = load_config(None, ["policy.learning_rate=2e-5", "policy.loss_type=dapo", "policy.epsilon=0.3"],
                         check_hardware=False)
    args = grpo_args(config.policy, config.optimizer_for("policy"), tmp_path, seed=3, temperature=0.7)
    assert (args.learning_rate, args.loss_type, args.epsilon, args.seed, args.temperature) == (2e-5, "dapo", 0.3, 3, 0.7)
    assert args.gradient_accumulation_steps == 1 and args.steps_per_generation == 1 and not args.activation_checkpointing


def test_both_trainers_take_the_shared_optimizer_and_their_own_overrides_not_trl_defaults(tmp_path):
    # every value differs from TRL's default (linear schedule, no warm-up, no decay, betas 0.9/0.999, eps 1e-8, norm 1)
    config = load_config(None, ["optimizer.lr_scheduler_type=cosine", "optimizer.warmup_steps=3",
                                "optimizer.weight_decay=0.01", "optimizer.adam_beta1=0.8", "optimizer.adam_beta2=0.99",
                                "optimizer.adam_epsilon=1e-6", "optimizer.max_grad_norm=0.5", "optimizer.optim=adamw_torch",
                                "reward_model.optimizer={lr_scheduler_type: constant_with_warmup, max_grad_norm: 2.0}",
                                "reward_model.loss_type=grpo", "reward_model.epsilon=0.1", "reward_model.num_iterations=2",
                                "reward_model.per_device_train_batch_size=4"], check_hardware=False)
    policy = grpo_args(config.policy, config.optimizer_for("policy"), tmp_path, seed=0, temperature=1.0,
                       beta=0.02, epsilon_high=0.28)
    judge = grpo_args(config.reward_model, config.optimizer_for("reward_model"), tmp_path, seed=0, temperature=1.0)
    shared = ("warmup_steps", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "optim")
    for args in (policy, judge):
        assert [getattr(args, name) for name in shared] == [3, 0.01, 0.8, 0.99, 1e-6, "adamw_torch"]
    assert (policy.lr_scheduler_type, policy.max_grad_norm, policy.learning_rate) == ("cosine", 0.5, 1e-3)
    assert (policy.beta, policy.epsilon_high) == (0.02, 0.28)
    assert (judge.lr_scheduler_type, judge.max_grad_norm, judge.learning_rate) == ("constant_with_warmup", 2.0, 3e-4)
    assert (judge.loss_type, judge.epsilon, judge.num_iterations, judge.per_device_train_batch_size) == ("grpo", 0.1, 2, 4)
    assert (judge.beta, judge.epsilon_high) == (0.0, None)


def test_the_default_run_trains_both_models_with_the_schedules_it_was_measured_with(tmp_path):
    # the policy's schedule: constant 1e-3 (gate A's rate); the reward model's linear decay from 3e-4, which
    # TRL's default gave it silently when the README's figures were measured, now explicit (reward_model.optimizer)
    config = TrainConfig()
    for role, lr, schedule in (("policy", 1e-3, "constant"), ("reward_model", 3e-4, "linear")):
        args = grpo_args(getattr(config, role), config.optimizer_for(role), tmp_path, seed=0, temperature=1.0)
        assert (args.learning_rate, args.lr_scheduler_type, args.warmup_steps, args.max_grad_norm) == \
            (lr, schedule, 0, 1.0)
        assert (args.weight_decay, args.adam_beta1, args.adam_beta2, args.adam_epsilon) == (0.0, 0.9, 0.999, 1e-8)


def test_trl_args_pass_grpo_config_fields_the_config_does_not_name(tmp_path):
    config = load_config(None, ["policy.trl_args={logging_first_step: true, seed_per_rank: 0}"], check_hardware=False)
    with pytest.raises(ConfigError, match=r"policy.trl_args.seed_per_rank is not a trl.GRPOConfig field"):
        grpo_args(config.policy, config.optimizer_for("policy"), tmp_path, seed=0, temperature=1.0)
    config = load_config(None, ["policy.trl_args={logging_first_step: true, shuffle_dataset: false}",
                                "reward_model.trl_args={learning_rate: 0.5}"], check_hardware=False)
    args = grpo_args(config.policy, config.optimizer_for("policy"), tmp_path, seed=0, temperature=1.0)
    assert (args.logging_first_step, args.shuffle_dataset, args.learning_rate) == (True, False, 1e-3)
    with pytest.raises(ConfigError, match=r"reward_model.trl_args.learning_rate: the config sets learning_rate itself"):
        grpo_args(config.reward_model, config.optimizer_for("reward_model"), tmp_path, seed=0, temperature=1.0)


def test_a_judge_sharing_the_policys_model_is_trained_against_states_scored_again(tmp_path):
    from rla_train.config import load_config
    from rla_train.cotrainer.components import build_components

    for model, trusted in (("same-as-policy", False), ("tiny", True)):
        config = load_config(None, [f"reward_model.model={model}", "reward_model.warm_start_steps=0",
                                    "reward_model.probe_episodes=0", "train.probe_episodes=0",
                                    "train.warm_start_sft_steps=0", "train.warm_start_listwise_steps=0",
                                    "env.eval_options.n_per_type=1", "env.train_options.n_per_type=1",
                                    f"output.dir={tmp_path / model}"], check_hardware=False)
        parts = build_components(config, tmp_path / model, progress=False)
        try:
            assert parts.rm_trainer.sampled_by_these_weights is trusted
            assert parts.policy_trainer.sampled_by_these_weights  # the policy samples and updates in that order
        finally:
            parts.close()
