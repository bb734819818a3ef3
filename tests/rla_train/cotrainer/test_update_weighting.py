"""SampleTrainer's updates weigh every sample alike and clip against the sampling policy (issue 24, item 10)."""

from __future__ import annotations

import pytest
import torch

from rla_train.cotrainer.policy_update import SampleTrainer
from rla_train.signals.samples import Sample

PROMPT = "<|im_start|>user\nwhere now?<|im_end|>\n<|im_start|>assistant\n"
COMMANDS = ("go to fridge 1", "look", "open drawer 2", "take apple 1 from table 1", "inventory", "go to shelf 3",
            "put apple 1 in/on fridge 1", "examine table 1", "close drawer 2", "go to countertop 1")


def make_trainer(path, tmp_path, **options):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64)
    tokenizer = AutoTokenizer.from_pretrained(path)
    settings = {"learning_rate": 1e-3, "lr_scheduler_type": "constant", "beta": 0.0, "max_grad_norm": 0.0,
                "per_device_train_batch_size": 8, **options}
    args = GRPOConfig(output_dir=str(tmp_path), num_generations=2, use_cpu=True, report_to="none", bf16=False,
                      max_completion_length=16, **settings)
    return SampleTrainer(model, tokenizer, args, total_steps=10), tokenizer


def ten_samples(tokenizer):
    prompt = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    return [Sample(prompt, tokenizer(c + "<|im_end|>", add_special_tokens=False)["input_ids"], a)
            for c, a in zip(COMMANDS, (1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1.5, -1.5, 0.25, 1.0))]


def step_gradients(trainer, samples) -> list[torch.Tensor]:
    """The gradients of one optimizer step of ``trainer.update(samples)`` (taken just before the step)."""
    captured = []

    def capture(*args, **kwargs):
        captured.append([p.grad.detach().clone() for p in trainer.model.parameters() if p.grad is not None])

    trainer.optimizer.step = capture
    trainer.update(samples)
    assert len(captured) == 1
    return captured[0]


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo"])
def test_a_partial_last_micro_batch_weighs_its_rows_as_the_others(tiny_model_path, tmp_path, loss_type):
    # 10 rows in micro-batches of 8 + 2 must give the gradient of one micro-batch of 10: before the fix TRL's
    # per-micro-batch mean / 2 micro-batches gave each of the last 2 rows 8/2 = 4 times the others' weight
    split, _ = make_trainer(tiny_model_path, tmp_path / "a", loss_type=loss_type, per_device_train_batch_size=8)
    whole, tokenizer = make_trainer(tiny_model_path, tmp_path / "b", loss_type=loss_type,
                                    per_device_train_batch_size=10)
    samples = ten_samples(tokenizer)
    a = torch.cat([g.flatten() for g in step_gradients(split, samples)])
    b = torch.cat([g.flatten() for g in step_gradients(whole, samples)])
    # the split's rounding (TRL computes log-probabilities in float32) stays near 1e-7 of the gradient's norm; the
    # old weighting was off by ~1e-1
    assert float((a - b).norm() / b.norm()) < 1e-5
