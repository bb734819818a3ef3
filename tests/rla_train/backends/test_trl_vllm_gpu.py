"""policy.backend=vllm on a GPU: TRL's real colocated vLLM engine generates, follows the weights, agrees with the trainer.

Marked ``gpu`` (deselected by default; ``scripts/gpu-check.sh`` runs them) and skipped, saying why, without CUDA or
vllm.
"""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from rla_train.backends.base import SamplingParams
from rla_train.backends.trl_vllm import TRLVLLMBackend
from rla_train.cotrainer.policy_update import SampleTrainer
from rla_train.signals.samples import Sample

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason='needs vllm: pip install "rla[vllm]"'),
]

CHAT = [{"role": "user", "content": "You are in a kitchen. Where now?"}]


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from rla_train.backends.tiny import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny-model"))
    model = AutoModelForCausalLM.from_pretrained(path).to("cuda")
    tokenizer = AutoTokenizer.from_pretrained(path)
    args = GRPOConfig(output_dir=str(tmp_path_factory.mktemp("trl")), use_vllm=True, vllm_mode="colocate",
                      vllm_gpu_memory_utilization=0.2, per_device_train_batch_size=8, num_generations=2,
                      report_to="none", bf16=False, max_completion_length=8, loss_type="grpo", learning_rate=0.05,
                      lr_scheduler_type="constant", beta=0.0, num_iterations=1)
    return SampleTrainer(model, tokenizer, args, total_steps=10)


def trainer_logprobs(trainer, prompt_ids, token_ids) -> list[float]:
    model = trainer.accelerator.unwrap_model(trainer.model)
    ids = torch.tensor([prompt_ids + token_ids], device=model.device)
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt_ids) - 1:-1].float()
    return logits.log_softmax(-1).gather(1, torch.tensor(token_ids, device=model.device)[:, None])[:, 0].tolist()


def greedy(backend):
    [generation] = backend.generate([CHAT], n=1, sampling=SamplingParams(max_new_tokens=6, temperature=0))
    return generation.prompt_ids, generation.samples[0]


def test_vllm_samples_carry_logprobs_the_trainer_agrees_with(trainer):
    backend = TRLVLLMBackend(trainer)
    [generation] = backend.generate([CHAT], n=4, sampling=SamplingParams(max_new_tokens=8, temperature=1.0))
    assert len(generation.samples) == 4
    for sample in generation.samples:
        assert len(sample.logprobs) == len(sample.token_ids) > 0
        ours = trainer_logprobs(trainer, generation.prompt_ids, sample.token_ids)
        assert max(abs(a - b) for a, b in zip(sample.logprobs, ours)) < 0.05  # fp32 tiny model: kernels differ only


def test_after_an_update_vllm_generates_from_the_new_weights(trainer):
    backend = TRLVLLMBackend(trainer)
    prompt_ids, before = greedy(backend)
    # push the greedy answer's first token down hard (no sampler logprobs: no correction), then it must change
    for _ in range(5):
        trainer.update([Sample(prompt_ids, before.token_ids[:1], -1.0)])
    _, after = greedy(backend)
    assert after.token_ids[0] != before.token_ids[0]
    [generation] = backend.generate([CHAT], n=4, sampling=SamplingParams(max_new_tokens=8, temperature=1.0))
    for sample in generation.samples:  # vLLM's logprobs are the trained weights', not the initial ones'
        ours = trainer_logprobs(trainer, prompt_ids, sample.token_ids)
        assert all(math.isfinite(x) for x in sample.logprobs)
        assert max(abs(a - b) for a, b in zip(sample.logprobs, ours)) < 0.05
