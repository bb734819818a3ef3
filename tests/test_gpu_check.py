"""scripts/gpu_check.py, the phases of scripts/gpu-check.sh, run small on the CPU so that the GPU check cannot rot.

The phases run as the script runs them (a subprocess, its env workers spawned), on a tiny model; only the GPU and the
sizes differ. It once could not have run anywhere: its phases were a heredoc, which spawned env workers cannot import.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["rollout.tasks_per_step=1", "rollout.group_size=2", "env.num_envs=2", "env.max_steps=3",
         "train.eval_episodes=2", "policy.max_completion_length=4"]


def _phase(tmp_path: Path, phase: str) -> str:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "tiny", "transformers", "1",
                             str(tmp_path / phase), phase, *SMALL], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.parametrize("phase, printed", [
    ("rollouts", r"policy\.backend=transformers +rollouts: 2 episodes, \d+ generated tokens in [\d.]+ s = \d+ tokens/s"),
    ("train-lora", r"co-training \(LoRA adapter\): 1 steps, [\d.]+ s/step .*peak GPU memory n/a \(no CUDA\)"),
])
def test_a_gpu_check_phase_runs_and_prints_its_figures(tmp_path, phase, printed):
    assert re.search(printed, _phase(tmp_path, phase))
    if phase == "train-lora":  # the adapter was what trained
        assert (tmp_path / phase / "checkpoints" / "step-000001" / "policy" / "adapter_config.json").is_file()
