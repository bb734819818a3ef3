"""Benchmark: seconds per co-training step and per ablation arm-seed, against scoring every state again.

The learning issue asks that one arm-seed of the ablation (>= 30 co-training steps plus its evaluations) cost at
most 15 CPU-minutes, so that the whole ablation fits about 3 hours on two cores. Measured here, on the CPU default's
policy after a short warm start (so that groups have both outcomes and the update has samples):

* **cotrain_step_speedup**: seconds per ``outcome_only`` co-training step at the gate settings (4 tasks x 8
  rollouts, lr 1e-3, one pass in two mini-batches) as rla runs it, against the same step as it ran before this
  benchmark existed: rollouts scored on copies of the prompt's KV cache, and the update scoring every state again
  for the old policy and for the choice-shift metrics (the samples' ``choice_logprobs`` dropped). Both sides start
  from the same weights and play the same tasks with the same seeds, in the same run.
* **arm_seed_cpu_minutes**: 30 of those steps plus the evaluations an arm-seed of the gates runs (held-out and
  training-game probe before, at step 15 and after, out of domain after: seven passes of 64 episodes), against
  the 15-minute goal.

One torch thread; the engine waits for its env worker and the worker for the engine, so the wall time measured is
the CPU time of the two together. The first step of each side (the env workers load their games) is not counted.
Run it with ``python -m benchmarks.perf cotrain [--quick]`` (minutes: it warm-starts a policy first).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.perf.report import Metric

__all__ = ["run", "GATE_OVERRIDES"]

GATE_OVERRIDES = ("train.mode=outcome_only", "policy.learning_rate=0.001", "rollout.tasks_per_step=4",
                  "policy.num_iterations=1", "policy.mini_batches=2", "reward_model.probe_episodes=0",
                  "train.probe_episodes=0", "reward_model.probe_policy_episodes=0", "reward_model.warm_start_steps=0")
"""The settings of the gates' arms (docs/ablation.md), without the warm start."""

ARM_STEPS = 30
EVALUATION_PASSES = 7
"""64-episode evaluations of one gate arm-seed: held-out and probe before, at step 15 and after, and out of domain."""


def _warm_policy(out: Path, sft_steps: int) -> Path:
    """A policy warm-started on the expert's demonstrations (the CPU default's warm start, shortened)."""
    from rla_train.config import load_config
    from rla_train.cotrainer.loop import train

    config = load_config(None, [*GATE_OVERRIDES, "train.steps=0", f"train.warm_start_sft_steps={sft_steps}",
                                f"train.warm_start_listwise_steps={sft_steps}", "train.eval_episodes=8",
                                f"output.dir={out}"], check_hardware=False)
    train(config, progress=False, overwrite=True)
    return out / "checkpoints" / "step-000000" / "policy"


def _side(policy: Path, run_dir: Path, steps: int, *, rescore: bool) -> tuple[float, float, dict[str, float]]:
    """(seconds per co-training step, seconds per 64-episode evaluation, mean seconds per step of each phase) for
    one side of the comparison."""
    from rla_train.backends.choice import ChoiceBackend
    from rla_train.config import load_config
    from rla_train.cotrainer.components import build_components
    from rla_train.cotrainer.loop import TIMING_PREFIX, evaluate, train_step

    config = load_config(None, [*GATE_OVERRIDES, f"policy.model={policy}", "train.warm_start_sft_steps=0",
                                "train.warm_start_listwise_steps=0", "train.eval_episodes=16",
                                f"output.dir={run_dir}"], check_hardware=False)
    parts = build_components(config, run_dir, progress=False)
    try:
        if rescore:  # as before: KV-cache scoring, every state scored again by the update
            backend = parts.engine.backend
            parts.engine.backend = ChoiceBackend(backend.backend, method="cache", max_batch_tokens=32_768)
            parts.eval_engine.backend = parts.engine.backend
            trainer, update = parts.policy_trainer, parts.policy_trainer.update
            trainer.choice_shift_rows = 10**9

            def update_scoring_again(samples, **kwargs):
                for sample in samples:
                    sample.choice_logprobs = None
                return update(samples, **kwargs)

            trainer.update = update_scoring_again
        train_step(config, parts)  # not counted: the env worker loads its games
        started, phases = time.perf_counter(), {}
        for _ in range(steps):
            for name, seconds in train_step(config, parts).items():
                if name.startswith(TIMING_PREFIX):
                    phase = name.removeprefix(TIMING_PREFIX)
                    phases[phase] = phases.get(phase, 0) + seconds
        step_seconds = (time.perf_counter() - started) / steps
        evaluate(parts.eval_engine, parts.eval_tasks[:8])  # not counted: loads the held-out games
        started = time.perf_counter()
        evaluate(parts.eval_engine, parts.eval_tasks)
        eval_seconds = (time.perf_counter() - started) * 64 / len(parts.eval_tasks)
    finally:
        parts.close()
    return step_seconds, eval_seconds, {name: seconds / steps for name, seconds in phases.items()}


def run(quick: bool = False) -> list[Metric]:
    """Both metrics (see the module docstring); ``quick``: a shorter warm start and 2 counted steps a side."""
    from rla_train.cpu_kernels import set_torch_threads

    set_torch_threads()
    steps = 2 if quick else 4
    with tempfile.TemporaryDirectory() as tmp:
        policy = _warm_policy(Path(tmp) / "warm", sft_steps=150 if quick else 400)
        ours, ours_eval, phases = _side(policy, Path(tmp) / "ours", steps, rescore=False)
        before, before_eval, _ = _side(policy, Path(tmp) / "before", steps, rescore=True)
    arm = (ARM_STEPS * ours + EVALUATION_PASSES * ours_eval) / 60
    setting = f"outcome_only, 4 tasks x 8 rollouts, lr 1e-3, 1 pass in 2 mini-batches, {steps} steps a side"
    profile = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in sorted(phases.items(), key=lambda kv: -kv[1]))
    return [
        Metric("cotrain_step_speedup", ours, before, "s/step", higher_is_better=False, goal=1.5,
               note=f"{setting}; baseline: KV-cache scoring and every state scored again by the update; a step of "
                    f"rla's side by phase (seconds_* in metrics.jsonl): {profile}"),
        Metric("arm_seed_cpu_minutes", arm, 15.0, "CPU-min", higher_is_better=False, goal=1.0,
               note=f"{ARM_STEPS} steps x {ours:.1f} s + {EVALUATION_PASSES} evaluations x {ours_eval:.1f} s "
                    f"(64 episodes; before this benchmark {before:.1f} s/step, {before_eval:.1f} s/evaluation); "
                    "baseline: the 15-minute goal"),
    ]
