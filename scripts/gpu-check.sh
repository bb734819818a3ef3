#!/usr/bin/env bash
# The GPU check of policy.backend=vllm (docs/scale-out.md): on a machine with a CUDA GPU, from the repository root,
#
#     bash scripts/gpu-check.sh                   # a local random-init model shaped like Qwen2-0.5B (no download)
#     MODEL=Qwen/Qwen2-0.5B-Instruct bash scripts/gpu-check.sh    # the real model, on a machine with network
#
# 1. installs rla[vllm] with the pinned versions (constraints.txt);
# 2. runs the tests marked gpu (TRL's colocated vLLM engine: generation, weight sync, logprobs vs the trainer's);
# 3. runs a short co-training job (AlfWorld, outcome only, text actions) with policy.backend=vllm and with
#    policy.backend=transformers, and prints the rollout tokens/s and seconds per training step of each.
set -euo pipefail
MODEL=${MODEL:-local}
STEPS=${STEPS:-3}
OUT=${OUT:-$(mktemp -d)}

python -m pip install -q -e ".[vllm]" -c constraints.txt
python -m pytest -m gpu -q -p no:cacheprovider -rs tests/

if [ "$MODEL" = local ]; then
  MODEL="$OUT/qwen2-0.5b-shaped"
  python -c "from rla_train.backends.tiny import build_tiny_model as b; b('$MODEL', hidden_size=896, num_layers=24, num_heads=14)"
fi

for BACKEND in vllm transformers; do
  for PHASE in rollouts train; do  # one process each: a colocated vLLM engine keeps its GPU memory until exit
  python - "$MODEL" "$BACKEND" "$STEPS" "$OUT/$BACKEND" "$PHASE" <<'PY'
import json, sys, time
from pathlib import Path

from rla_train.config import load_config
from rla_train.cotrainer.components import build_components
from rla_train.cotrainer.loop import train

model, backend, steps, out, phase = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
overrides = [f"policy.model={model}", f"policy.backend={backend}", "policy.action_mode=text",
             "policy.show_admissible=last", "policy.max_completion_length=32", "train.mode=outcome_only",
             "train.warm_start_sft_steps=0", "reward_model.warm_start_steps=0", "train.eval_episodes=8",
             "train.probe_episodes=0", "rollout.tasks_per_step=8", "rollout.group_size=8", "env.num_envs=64",
             f"train.steps={steps}", f"output.dir={out}"]
config = load_config(None, overrides)
if phase == "rollouts":
    parts = build_components(config, out / "rollouts", progress=False)
    try:
        tasks = parts.engine.sample_tasks(8, seed=0)
        parts.engine.run(tasks[:1], group_size=2)  # warm-up (CUDA graphs, caches)
        started = time.perf_counter()
        episodes = parts.engine.run(tasks, group_size=8)
        seconds = time.perf_counter() - started
    finally:
        parts.close()
    tokens = sum(len(step.completion_ids) for episode in episodes for step in episode.steps)
    print(f"policy.backend={backend:12s} rollouts: {len(episodes)} episodes, {tokens} generated tokens in "
          f"{seconds:.1f} s = {tokens / seconds:.0f} tokens/s")
else:
    started = time.perf_counter()
    train(config, progress=False, overwrite=True)
    train_seconds = time.perf_counter() - started
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    step_seconds = sum(line["step_seconds"] for line in lines) / max(1, len(lines))
    print(f"policy.backend={backend:12s} co-training: {len(lines)} steps, {step_seconds:.1f} s/step "
          f"({train_seconds:.0f} s with the evaluations)")
PY
  done
done
