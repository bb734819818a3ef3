"""The co-training loop: policy, reward model and environment improving each other (RLAnything), on TRL.

One training step, top to bottom (:func:`train_step`):

1. draw ``tasks_per_step`` tasks from the adaptive pool;
2. play ``group_size`` rollouts of each (one GRPO group per task) with the rollout engine;
3. the reward model judges every step ``m`` times (modes that use it);
4. step rewards and advantages (:mod:`rla_train.samples`, maths in :mod:`rla_train.rewards`);
5. one policy update with TRL's GRPO loss, optimizer and scheduler (:class:`~rla_train.policy_update.SampleTrainer`);
6. reward-model updates on the consistency reward (modes that train it);
7. the groups' outcomes go to the pool, which rewrites tasks that are too hard or too easy when a round is due,
   guided by the reward model's failure diagnoses (the full method).

:func:`train` runs the warm start, the steps, held-out evaluations before and after, logs, and atomic
checkpoints from which ``--resume`` continues exactly.
"""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from rla_train.config import CONFIG_FILENAME, MODES, TrainConfig

__all__ = ["train", "train_step", "evaluate"]


def evaluate(engine, tasks, *, desc: str = "held-out") -> dict[str, float]:
    """Success rate on ``tasks`` (one seeded episode each) with its 95% Wilson interval and mean steps."""
    from rla_train.metrics import success_summary

    episodes = engine.run(tasks, desc=desc)
    return success_summary([e.won for e in episodes], [e.num_steps for e in episodes])


def train_step(config: TrainConfig, parts) -> dict[str, float]:
    """One step of the loop (see the module docstring); returns its metrics."""
    from rla_train.metrics import outcome_accuracy
    from rla_train.rewards import outcome_value
    from rla_train.samples import RewardSpec, policy_samples, reward_model_samples, step_rewards

    mode = MODES[config.train.mode]
    started = time.perf_counter()
    tasks = parts.feeder.draw(config.rollout.tasks_per_step)                                     # 1
    episodes = parts.engine.run(tasks, group_size=config.rollout.group_size)                     # 2
    size = config.rollout.group_size
    groups = [episodes[g * size:(g + 1) * size] for g in range(len(tasks))]
    metrics: dict[str, float] = {}
    generations = {}
    if mode.reward_model:                                                                         # 3
        report = parts.reward_model.judge(None, episodes)
        generations = {id(e): g for e, g in zip(episodes, report.generations)}
        metrics["judge_unparseable_fraction"] = report.unparseable_fraction
        accuracy = outcome_accuracy([e.judgments for e in episodes], [e.won for e in episodes])
        if accuracy is not None:
            metrics["rm_outcome_accuracy"] = accuracy
    spec = RewardSpec(use_outcome=mode.outcome, use_judgments=mode.reward_model,
                      lam=config.reward_model.step_reward_weight)
    samples, stats = policy_samples(groups, spec)                                                # 4
    rewards = [step_rewards(e, spec) for e in episodes if e.error is None and e.num_steps]
    if rewards:
        metrics["integrated_reward_mean"] = float(np.mean(np.concatenate(rewards)))
    metrics["outcome_reward_mean"] = float(np.mean([outcome_value(e.won) for e in episodes]))
    policy = parts.policy_trainer.update(samples)                                                 # 5
    metrics.update({f"policy_{k}": v for k, v in policy.items() if not k.startswith("trl/")})
    if parts.rm_trainer is not None:                                                              # 6
        rm_samples, rm_stats = reward_model_samples(groups, generations, spec, low=config.reward_model.task_filter_low,
                                                    high=config.reward_model.task_filter_high)
        for _ in range(config.reward_model.updates_per_step):
            rm = parts.rm_trainer.update(rm_samples)
        metrics.update({f"rm_{k}": v for k, v in rm.items() if not k.startswith("trl/")})
        metrics["rm_groups_filtered"] = rm_stats["groups_filtered"]
    for task, group in zip(tasks, groups):                                                        # 7
        usable = [e for e in group if e.error is None]
        if usable:
            parts.feeder.report_group(task.id, [float(e.won) for e in usable], usable)
    if mode.adapt_env and parts.feeder.adapt_due():
        adapt = parts.feeder.adapt()
        metrics.update({f"pool_{k}": float(v) for k, v in adapt.funnel.items()})
    seconds = time.perf_counter() - started
    won = [bool(e.won) for e in episodes]
    metrics.update({
        "success_rate": float(np.mean(won)), "episodes": float(len(episodes)),
        "mean_steps": float(np.mean([e.num_steps for e in episodes])),
        "zero_variance_fraction": float(np.mean([len({e.won for e in g}) == 1 for g in groups])),
        "zero_advantage_fraction": stats["zero_advantage_fraction"], "groups_filtered": stats["groups_filtered"],
        "env_errors": float(sum(e.error is not None for e in episodes)),
        "pool_tasks": float(len(parts.feeder.pool.active_tasks())),
        "episodes_per_second": len(episodes) / seconds, "step_seconds": seconds,
    })
    return metrics


# ----------------------------------------------------------------------------------------------- state
def _state(parts, step: int, history: dict) -> dict[str, Any]:
    """Everything besides models, pool and RNG that a resumed run needs to continue exactly."""
    feeder = parts.feeder
    return {"step": step, "history": history,
            "policy_trainer": parts.policy_trainer.state_dicts(),
            "rm_trainer": parts.rm_trainer.state_dicts() if parts.rm_trainer is not None else None,
            "engine_turns": parts.engine.turns, "eval_engine_turns": parts.eval_engine.turns,
            "feeder": {"episodes_since_adapt": feeder.episodes_since_adapt,
                       "failures": {k: [t.to_dict() for t in v] for k, v in feeder.failures.items()}}}


def _save(run_dir: Path, config: TrainConfig, parts, step: int, history: dict) -> Path:
    from rla_train.checkpoint import save_checkpoint

    models = {"policy": (parts.policy_model, parts.policy_tokenizer)}
    if parts.rm_trainer is not None and parts.rm_model is not parts.policy_model:
        models["reward_model"] = (parts.rm_model, parts.rm_tokenizer)
    return save_checkpoint(run_dir, step, models=models, states=_state(parts, step, history), pool=parts.feeder.pool,
                           meta={"step": step, "before": history.get("before")}, keep_last=config.output.keep_last)


def _restore(checkpoint: Path, parts) -> tuple[int, dict]:
    """Load a checkpoint's weights and states into freshly built parts; returns (step, history)."""
    from transformers import AutoModelForCausalLM

    from rla_envs.curriculum.diagnosers import Trajectory
    from rla_envs.curriculum.pool import TaskPool
    from rla_train.checkpoint import load_states, restore_rng

    states = load_states(checkpoint)
    parts.policy_model.load_state_dict(AutoModelForCausalLM.from_pretrained(checkpoint / "policy").state_dict())
    if (checkpoint / "reward_model").is_dir() and parts.rm_model is not None:
        parts.rm_model.load_state_dict(AutoModelForCausalLM.from_pretrained(checkpoint / "reward_model").state_dict())
    parts.policy_trainer.load_state_dicts(states["policy_trainer"])
    if parts.rm_trainer is not None and states["rm_trainer"] is not None:
        parts.rm_trainer.load_state_dicts(states["rm_trainer"])
    parts.engine.turns, parts.eval_engine.turns = states["engine_turns"], states["eval_engine_turns"]
    feeder = parts.feeder
    feeder.pool = TaskPool.load(checkpoint / "pool.json")
    feeder.episodes_since_adapt = states["feeder"]["episodes_since_adapt"]
    feeder.failures = {k: deque([Trajectory.from_dict(t) for t in v], maxlen=feeder.keep_failures)
                       for k, v in states["feeder"]["failures"].items()}
    restore_rng(checkpoint)
    return int(states["step"]), states["history"]


# ----------------------------------------------------------------------------------------------- run
def _warm_start(config: TrainConfig, parts, run_dir: Path) -> dict[str, float]:
    """Supervised warm start on the searching expert's demonstrations (fresh runs only).

    The expert plays the training env's own tasks (``env.options`` + ``env.train_options``: the same task
    types and task set the policy then trains on). TRL's SFT first; then, for a choice policy and
    ``train.warm_start_listwise_steps > 0``, listwise training on the same states (:func:`choice_sft`).
    Both are bounded by steps, never by wall time, so a seed gives the same starting weights on any machine.
    """
    from rla_train.warmstart import choice_sft, expert_demonstrations, sft_warm_start

    tasks = parts.engine.env.tasks() if config.family == "alfworld" else None
    demos = expert_demonstrations("train", n_tasks=config.train.warm_start_demos, seed=config.train.seed,
                                  agent=parts.agent, tasks=tasks, max_steps=max(50, config.env.max_steps))
    history: list = []
    sft_warm_start(parts.policy_model, parts.policy_tokenizer, demos, steps=config.train.warm_start_sft_steps,
                   lr=config.train.warm_start_learning_rate, output_dir=run_dir / "warm-start",
                   seed=config.train.seed, log_history=history, lr_scheduler_type="constant")
    losses = [h["loss"] for h in history if "loss" in h]
    summary = {"warm_start_examples": float(len(demos)), "warm_start_final_loss": float(losses[-1]) if losses else 0.0}
    if config.policy.action_mode == "choice" and config.train.warm_start_listwise_steps > 0:
        listwise: list = []
        choice_sft(parts.policy_model, parts.policy_tokenizer, demos, steps=config.train.warm_start_listwise_steps,
                   lr=config.train.warm_start_learning_rate, seed=config.train.seed, log_history=listwise)
        tail = listwise[-50:]
        summary.update({"warm_start_listwise_steps": float(len(listwise)),
                        "warm_start_listwise_loss": float(sum(h["loss"] for h in tail) / len(tail)) if tail else 0.0,
                        "warm_start_listwise_accuracy": float(sum(h["choice_accuracy"] for h in tail) / len(tail))
                        if tail else 0.0})
    return summary


def train(config: TrainConfig, *, progress: bool = True) -> dict[str, Any]:
    """Run the whole co-training job the config describes; returns the summary (also in ``summary.json``)."""
    import torch
    from transformers import set_seed

    from rla_envs.core.files import atomic_write_json
    from rla_train.checkpoint import latest_checkpoint
    from rla_train.components import build_components
    from rla_train.run_log import RunLog, plot_run

    run_dir = Path(config.train.resume_from or config.output.dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    config.save(run_dir / CONFIG_FILENAME)
    set_seed(config.train.seed)
    parts = build_components(config, run_dir, progress=progress)
    checkpoint = latest_checkpoint(run_dir) if config.train.resume_from else None
    try:
        if checkpoint is not None:
            step, history = _restore(checkpoint, parts)
        else:
            step, history = 0, {}
            if config.train.warm_start_sft_steps:
                history["initial"] = evaluate(parts.eval_engine, parts.eval_tasks, desc="held-out initial")
                history["warm_start"] = _warm_start(config, parts, run_dir)
            history["before"] = evaluate(parts.eval_engine, parts.eval_tasks, desc="held-out before")
            _save(run_dir, config, parts, 0, history)
        with RunLog(run_dir, total_steps=config.train.steps, start_step=step, progress=progress,
                    tensorboard=config.output.tensorboard) as log:
            while step < config.train.steps:
                metrics = train_step(config, parts)
                step += 1
                if config.train.eval_every and step % config.train.eval_every == 0 and step < config.train.steps:
                    metrics.update({f"heldout_{k}": v for k, v in
                                    evaluate(parts.eval_engine, parts.eval_tasks).items()})
                log.log(step, metrics)
                if config.output.checkpoint_every and step % config.output.checkpoint_every == 0:
                    _save(run_dir, config, parts, step, history)
        history["after"] = evaluate(parts.eval_engine, parts.eval_tasks, desc="held-out after")
        _save(run_dir, config, parts, step, history)
    finally:
        parts.close()
    plot_run(run_dir, run_dir / "learning_curves.png", pool=parts.feeder.pool)
    summary = {"mode": config.train.mode, "steps": step, "run_dir": str(run_dir), **history,
               "threads": torch.get_num_threads()}
    atomic_write_json(run_dir / "summary.json", summary)
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    """Held-out success at the start, after the warm start (before co-training) and at the end, as the run prints it."""
    rows = [("initial", "initial model"), ("before", "before co-training" + (" (after the warm start)"
                                                                             if "initial" in summary else "")),
            ("after", "after co-training")]
    lines = ["held-out success:"]
    for key, label in rows:
        result = summary.get(key)
        if result:
            lines.append(f"  {label:<42} {result['success_rate']:6.1%}  ({int(result['won'])}/{int(result['episodes'])}, "
                         f"95% CI {result['ci_low']:.1%}-{result['ci_high']:.1%}, mean steps {result['mean_steps']:.1f})")
    lines.append(json.dumps({k: v for k, v in summary.items() if k not in ("initial", "before", "after")}))
    return "\n".join(lines)
