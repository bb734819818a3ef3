"""Pieces of a co-training run built from the config: the LLM rewriter and GRPO arguments."""

from __future__ import annotations

from rla_envs.code.tasks.bundled import bundled_tasks
from rla_envs.curriculum.rewriters import LLMRewriter, MutatorRewriter
from rla_train.backends.scripted import ScriptedBackend
from rla_train.config import load_config
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
    args = grpo_args(config.policy, tmp_path, seed=3, temperature=0.7)
    assert (args.learning_rate, args.loss_type, args.epsilon, args.seed, args.temperature) == (2e-5, "dapo", 0.3, 3, 0.7)
    assert args.gradient_accumulation_steps == 1 and args.steps_per_generation == 1 and not args.activation_checkpointing
