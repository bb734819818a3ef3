"""``python -m rla_train.run`` for one data-parallel rank, recording after every training step what the test checks.

Launched by ``torchrun`` (tests/rla_train/cotrainer/test_distributed.py): ``ddp_worker.py RECORD_DIR [run args]``.
After each step, rank ``r`` appends to ``RECORD_DIR/rank<r>.jsonl`` the SHA-256 of its policy's and reward model's
weights (and of those before the step), the ids of the tasks it played and how many training episodes it played.
At start it writes its pid to ``RECORD_DIR/pid<r>`` (the test kills the ranks by pid: torchrun starts each in a
session of its own).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import torch

from rla_train import run
from rla_train.cotrainer import loop


def weights_sha256(model) -> str | None:
    """A hash of every tensor of ``model``'s state dict, by name."""
    if model is None:
        return None
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


class CountingRun:
    """``engine.run`` that counts the training episodes it plays (not the pool's measuring rollouts)."""

    def __init__(self, run):
        self.run, self.episodes, self.task_ids = run, 0, []

    def __call__(self, tasks, **options):
        episodes = self.run(tasks, **options)
        if options.get("desc") != "measure":
            self.episodes += len(episodes)
            self.task_ids = [task.id for task in tasks]
        return episodes


def main() -> int:
    rank = os.environ.get("RANK", "0")
    record = Path(sys.argv[1]) / f"rank{rank}.jsonl"
    (Path(sys.argv[1]) / f"pid{rank}").write_text(str(os.getpid()))
    step = loop.train_step

    def recorded_step(config, parts, ranks=loop.ONE_PROCESS, played=None):
        if not isinstance(parts.engine.run, CountingRun):
            parts.engine.run = CountingRun(parts.engine.run)
        before = parts.engine.run.episodes
        weights_before = [weights_sha256(parts.policy_model), weights_sha256(parts.rm_model)]
        metrics = step(config, parts, ranks, played=played)
        line = {"policy": weights_sha256(parts.policy_model), "reward_model": weights_sha256(parts.rm_model),
                "before": weights_before,
                "episodes": parts.engine.run.episodes - before, "tasks": parts.engine.run.task_ids,
                "world_size": ranks.world_size}
        with open(record, "a") as handle:
            handle.write(json.dumps(line) + "\n")
        return metrics

    loop.train_step = recorded_step
    return run.main(sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
