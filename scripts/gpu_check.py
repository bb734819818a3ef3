"""One phase of scripts/gpu-check.sh: ``python scripts/gpu_check.py MODEL BACKEND STEPS OUT PHASE [SECTION.FIELD=VALUE ...]``.

PHASE ``rollouts``: the rollout engine plays 8 AlfWorld tasks x 8 rollouts (``rollout.tasks_per_step`` x
``rollout.group_size``) with the policy and prints the generated tokens per second. ``train`` / ``train-lora``: a
short outcome-only co-training run with full weights / a LoRA adapter, printing seconds per step and the peak GPU
memory. ``summary``: seconds per step of the run in OUT (the full method).
Overrides after PHASE replace the defaults below (the CPU test runs the phases small). A file, not a heredoc: the
env workers are spawned processes, which import the main module again.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def _memory() -> str:
    import torch

    return f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB" if torch.cuda.is_available() else "n/a (no CUDA)"


def _step_seconds(out: Path) -> tuple[int, float]:
    """The run in ``out``: how many steps metrics.jsonl records, and their mean ``step_seconds``."""
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return len(lines), sum(line["step_seconds"] for line in lines) / max(1, len(lines))


def main(model: str, backend: str, steps: int, out: Path, phase: str, extra: list[str] = ()) -> None:
    if phase == "summary":
        count, seconds = _step_seconds(out)
        print(f"full method: {count} steps, {seconds:.1f} s/step")
        return
    from rla_train.config import load_config
    from rla_train.cotrainer.components import build_components
    from rla_train.cotrainer.loop import train

    overrides = [f"policy.model={model}", f"policy.backend={backend}", "policy.action_mode=text",
                 "policy.show_admissible=last", "policy.max_completion_length=32", "train.mode=outcome_only",
                 "train.warm_start_sft_steps=0", "reward_model.warm_start_steps=0", "train.eval_episodes=8",
                 "train.probe_episodes=0", "reward_model.probe_episodes=0", "rollout.tasks_per_step=8",
                 "rollout.group_size=8", "env.num_envs=64", f"train.steps={steps}", f"output.dir={out}"]
    if phase == "train-lora":
        overrides.append("policy.use_peft=true")
    config = load_config(None, [*overrides, *extra])
    if phase == "rollouts":
        parts = build_components(config, out, progress=False)
        try:
            tasks = parts.engine.sample_tasks(config.rollout.tasks_per_step, seed=0)
            parts.engine.run(tasks[:1], group_size=2)  # warm-up (CUDA graphs, caches)
            started = time.perf_counter()
            episodes = parts.engine.run(tasks, group_size=config.rollout.group_size)
            seconds = time.perf_counter() - started
        finally:
            parts.close()
        tokens = sum(len(step.completion_ids) for episode in episodes for step in episode.steps)
        print(f"policy.backend={backend:12s} rollouts: {len(episodes)} episodes, {tokens} generated tokens in "
              f"{seconds:.1f} s = {tokens / seconds:.0f} tokens/s, peak GPU memory {_memory()}")
        return
    started = time.perf_counter()
    train(config, progress=False, overwrite=True)
    train_seconds = time.perf_counter() - started
    count, step_seconds = _step_seconds(out)
    adapter = "LoRA adapter" if phase == "train-lora" else "full weights"
    print(f"policy.backend={backend:12s} co-training ({adapter}): {count} steps, {step_seconds:.1f} s/step "
          f"({train_seconds:.0f} s with the evaluations), peak GPU memory {_memory()}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5], sys.argv[6:])
