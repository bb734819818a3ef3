#!/usr/bin/env bash
# The GPU check (docs/scale-out.md): on a machine with a CUDA GPU, from the repository root,
#
#     bash scripts/gpu-check.sh                   # a local random-init model shaped like Qwen2-0.5B (no download)
#     MODEL=Qwen/Qwen2-0.5B-Instruct bash scripts/gpu-check.sh    # the real model, on a machine with network
#
# 1. installs rla[vllm] with the pinned versions (constraints.txt; INSTALL=0 skips it, for a machine where rla's
#    requirements are already importable);
# 2. runs the tests marked gpu (TRL's colocated vLLM engine: generation, weight sync, logprobs vs the trainer's;
#    they skip, saying so, without vllm);
# 3. for each policy.backend in BACKENDS (default "vllm transformers"; a backend whose package is missing is reported
#    and skipped): a short co-training job (AlfWorld, outcome only, text actions) with full weights and again with a
#    LoRA adapter (policy.use_peft), printing rollout tokens/s, seconds per training step and peak GPU memory;
# 4. the CPU default's full method (choice actions, the learned judge trained beside the policy, the env arm) for
#    STEPS steps on the GPU, its warm starts shortened: every part of the co-trainer runs on CUDA.
set -euo pipefail
MODEL=${MODEL:-local}
STEPS=${STEPS:-3}
INSTALL=${INSTALL:-1}
BACKENDS=${BACKENDS:-vllm transformers}
OUT=${OUT:-$(mktemp -d)}

if [ "$INSTALL" = 1 ]; then
  python -m pip install -q -e ".[vllm]" -c constraints.txt
fi
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU visible'; print('GPU:', torch.cuda.get_device_name(0), '| torch', torch.__version__)"
python -m pytest -m gpu -q -p no:cacheprovider -rs $(grep -rl "mark.gpu" tests/) || echo "gpu-marked tests: FAILED (above)"

if [ "$MODEL" = local ]; then
  MODEL="$OUT/qwen2-0.5b-shaped"
  python -c "from rla_train.backends.tiny import build_tiny_model as b; b('$MODEL', hidden_size=896, num_layers=24, num_heads=14)"
fi

for BACKEND in $BACKENDS; do
  if [ "$BACKEND" = vllm ] && ! python -c "import vllm" 2>/dev/null; then
    echo "policy.backend=vllm: skipped, vllm is not importable here (pip install \".[vllm]\")"
    continue
  fi
  for PHASE in rollouts train train-lora; do  # one process each: a colocated vLLM engine keeps its GPU memory until exit
    python scripts/gpu_check.py "$MODEL" "$BACKEND" "$STEPS" "$OUT/$BACKEND-$PHASE" "$PHASE"
  done
done

# The full method as the CPU default configures it (tiny models), on the GPU: choice actions, the judge's votes, its
# consistency update, the task pool's rewrites.
python -m rla_train.run --set train.steps="$STEPS" --set train.warm_start_sft_steps=50 \
  --set train.warm_start_listwise_steps=50 --set reward_model.warm_start_steps=50 --set train.eval_episodes=8 \
  --set train.probe_episodes=8 --set reward_model.probe_episodes=8 --set output.dir="$OUT/full-method" --overwrite
python scripts/gpu_check.py "$MODEL" - "$STEPS" "$OUT/full-method" summary
