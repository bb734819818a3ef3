"""Checkpoints: a step's directory appears whole or not at all, and everything in it comes back."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from rla_envs.core.task import Task
from rla_envs.curriculum.pool import TaskPool
from rla_train.cotrainer.checkpoint import (latest_checkpoint, list_checkpoints, load_meta, load_states, restore_rng,
                                            save_checkpoint)


def _tasks():
    return [Task(family="code", instruction=f"task {i}", spec={"n": i}) for i in range(3)]


def test_round_trip_of_model_optimizer_pool_rng_and_meta(tiny_model_path, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss.backward()
    optimizer.step()
    pool = TaskPool(_tasks())
    pool.record(pool.active_tasks()[0].id, 1.0)
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    path = save_checkpoint(tmp_path, 7, models={"policy": (model, tokenizer)},
                           states={"policy_optimizer": optimizer.state_dict(), "episodes": 42}, pool=pool,
                           meta={"success_rate": 0.5})
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    assert path == tmp_path / "checkpoints" / "step-000007" and latest_checkpoint(tmp_path) == path
    assert load_meta(path) == {"step": 7, "success_rate": 0.5}
    restore_rng(path)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected
    reloaded = AutoModelForCausalLM.from_pretrained(path / "policy")
    for (name, a), b in zip(model.state_dict().items(), reloaded.state_dict().values()):
        assert torch.equal(a, b), name
    assert AutoTokenizer.from_pretrained(path / "policy")("go to fridge 1")["input_ids"] == \
        tokenizer("go to fridge 1")["input_ids"]
    states = load_states(path)
    fresh = torch.optim.AdamW(reloaded.parameters(), lr=1e-3)
    fresh.load_state_dict(states["policy_optimizer"])
    assert states["episodes"] == 42 and fresh.state_dict()["state"][0]["step"] == optimizer.state_dict()["state"][0]["step"]
    assert TaskPool.load(path / "pool.json").to_dict() == pool.to_dict()


def test_keep_last_prunes_old_steps_and_stale_temporaries_are_ignored(tmp_path):
    for step in (1, 2, 3, 4):
        save_checkpoint(tmp_path, step, states={"x": step}, keep_last=2)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [3, 4]
    stale = tmp_path / "checkpoints" / ".tmp-step-000005-crashed"
    stale.mkdir()
    (stale / "meta.json").write_text("{}")
    assert latest_checkpoint(tmp_path).name == "step-000004"
    save_checkpoint(tmp_path, 5, states={"x": 5}, keep_last=2)
    assert not stale.exists() and load_states(latest_checkpoint(tmp_path)) == {"x": 5}
    with pytest.raises(ValueError, match="keep_last"):
        save_checkpoint(tmp_path, 6, keep_last=0)
    assert latest_checkpoint(tmp_path / "nowhere") is None


def test_sigkill_during_saves_never_leaves_a_torn_checkpoint(tmp_path):
    script = textwrap.dedent(f"""
        import torch
        from rla_train.cotrainer.checkpoint import save_checkpoint
        big = {{"weights": torch.randn(500_000)}}
        step = 0
        while True:
            step += 1
            save_checkpoint({str(tmp_path)!r}, step, states={{**big, "step": step}}, keep_last=2)
            print(step, flush=True)
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        while int(process.stdout.readline() or 0) < 3:
            pass
        time.sleep(0.05)  # most likely in the middle of the next save
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    latest = latest_checkpoint(tmp_path)
    assert latest is not None
    states = load_states(latest)
    assert states["step"] == load_meta(latest)["step"] and states["weights"].numel() == 500_000
