"""policy.backend=vllm on CPU: TRL's VLLMGeneration replaced by a fake that records its calls and answers fixed tokens.

What runs for real: the config, ``build_components``, TRL's ``GRPOTrainer.__init__`` building the (fake) engine
from the GRPOConfig, our backend's rendering and parsing, ``SampleTrainer.update`` with TRL's loss and the
importance-sampling ratio. What the fake stands for: vLLM's sampling and weight loading (the ``gpu`` tests in
``test_trl_vllm_gpu.py`` run the real one).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from rla_train.backends.base import SamplingParams
from rla_train.backends.hf import TransformersBackend
from rla_train.backends.trl_vllm import TRLVLLMBackend
from rla_train.config import load_config
from rla_train.cotrainer.components import build_components
from rla_train.cotrainer.policy_update import SampleTrainer
from rla_train.signals.samples import Sample

CHAT = [{"role": "user", "content": "You are in a kitchen. Where now?"}]
ANSWERS = ["go north<|im_end|>", "look around the room"]  # the second never ends: cut by max_new_tokens
ANSWER_LOGPROBS = [-0.5, -1.5, -2.5, -3.5, -4.5, -5.5, -6.5, -7.5]


class FakeVLLMGeneration:
    """Stands for ``trl.generation.vllm_generation.VLLMGeneration``: the same constructor and calls, fixed answers."""

    built: list[FakeVLLMGeneration] = []

    def __init__(self, **kwargs):
        self.kwargs, self.calls, self.syncs = kwargs, [], 0
        self.tokenizer = kwargs["processing_class"]
        for name in ("temperature", "top_p", "top_k", "max_completion_length", "generation_kwargs"):
            setattr(self, name, kwargs[name])
        if kwargs["mode"] == "server":  # TRL asks the server how it reports logprobs
            server_info = {"model_config": {"logprobs_mode": "processed_logprobs"}}
            self.vllm_client = SimpleNamespace(get_server_info=lambda: server_info)
        FakeVLLMGeneration.built.append(self)

    def sync_weights(self):
        self.syncs += 1

    def generate(self, prompts, images, num_generations, profiler=None):
        self.calls.append({"prompts": prompts, "images": images, "n": num_generations, "temperature": self.temperature,
                           "top_p": self.top_p, "top_k": self.top_k, "max_tokens": self.max_completion_length,
                           "generation_kwargs": dict(self.generation_kwargs)})
        answers = [self.tokenizer(ANSWERS[i % 2], add_special_tokens=False)["input_ids"][:self.max_completion_length]
                   for i in range(len(prompts))]
        logprobs = [[[lp] for lp in ANSWER_LOGPROBS[:len(ids)]] for ids in answers]
        logprobs[-1][-1] = [None]  # vLLM may give no logprob for a token
        return prompts, answers, logprobs, None


@pytest.fixture
def fake_vllm(monkeypatch):
    import trl.trainer.grpo_trainer

    FakeVLLMGeneration.built = []
    monkeypatch.setattr(trl.trainer.grpo_trainer, "VLLMGeneration", FakeVLLMGeneration)
    return FakeVLLMGeneration.built


@pytest.fixture
def vllm_trainer(fake_vllm, tiny_model_path, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    def make(mini_batches=1, **options):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
        tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
        options = {"use_vllm": True, "vllm_mode": "colocate", "loss_type": "grpo", "learning_rate": 1e-2,
                   "lr_scheduler_type": "constant", "beta": 0.0, "max_grad_norm": 0.0, "num_iterations": 1, **options}
        args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2, use_cpu=True,
                          report_to="none", bf16=False, max_completion_length=8, **options)
        return SampleTrainer(model, tokenizer, args, total_steps=10, mini_batches=mini_batches)
    return make


def test_generate_renders_like_the_transformers_backend_and_returns_vllms_tokens_and_logprobs(vllm_trainer, fake_vllm):
    trainer = vllm_trainer()
    backend = TRLVLLMBackend(trainer)
    reference = TransformersBackend(trainer.model, trainer.processing_class)
    sampling = SamplingParams(max_new_tokens=3, temperature=0.7, top_p=0.9, top_k=5, stop=("nor",))
    generations = backend.generate([CHAT, "plain text prompt"], n=2, sampling=sampling)

    [call] = fake_vllm[0].calls
    chat_text, chat_ids = reference.encode(CHAT)
    _, text_ids = reference.encode("plain text prompt")
    assert call["prompts"] == [chat_ids, chat_ids, text_ids, text_ids] and call["n"] == 2 and call["images"] is None
    assert (call["temperature"], call["top_p"], call["top_k"], call["max_tokens"]) == (0.7, 0.9, 5, 3)
    assert call["generation_kwargs"] == {"stop": ["nor"], "stop_token_ids": sorted(reference.stop_ids)}
    assert [g.prompt for g in generations] == [chat_text, "plain text prompt"]
    assert [g.prompt_ids for g in generations] == [chat_ids, text_ids]
    assert backend.render(CHAT) == chat_text

    tokenizer = trainer.processing_class
    go_north = tokenizer("go north<|im_end|>", add_special_tokens=False)["input_ids"][:3]
    look = tokenizer("look around the room", add_special_tokens=False)["input_ids"][:3]
    first, second = generations[0].samples
    assert first.token_ids == go_north and first.logprobs == ANSWER_LOGPROBS[:3]
    assert first.text == "go " and first.finish_reason == "stop"  # cut before the stop string
    assert second.token_ids == look and second.finish_reason == "length"
    assert second.text == tokenizer.decode(look, skip_special_tokens=True)
    last = generations[1].samples[1]
    assert last.logprobs[:2] == ANSWER_LOGPROBS[:2] and math.isnan(last.logprobs[2])  # no logprob from vLLM: NaN


def test_a_vllm_policy_builds_trls_engine_from_the_config_and_plays_with_it(fake_vllm, tmp_path):
    config = load_config(None, ["policy.backend=vllm", "policy.action_mode=text", "policy.show_admissible=last",
                                "policy.vllm_mode=server", "policy.vllm_server_host=10.0.0.2", "policy.vllm_server_port=8001",
                                "policy.trl_args={vllm_importance_sampling_mode: token_truncate}",
                                "reward_model.kind=noisy_oracle", "reward_model.model=null", "train.mode=policy",
                                "env.workers=0", f"output.dir={tmp_path}"], check_hardware=False)
    parts = build_components(config, tmp_path, progress=False)
    try:
        [engine] = fake_vllm
        assert (engine.kwargs["mode"], engine.kwargs["server_host"], engine.kwargs["server_port"]) == \
            ("server", "10.0.0.2", 8001)
        assert parts.policy_trainer.vllm_generation is engine
        assert parts.policy_trainer.vllm_importance_sampling_mode == "token_truncate"
        assert isinstance(parts.policy_backend, TRLVLLMBackend) and parts.policy_backend.generation is engine
        assert isinstance(parts.eval_backend, TRLVLLMBackend)
        [episode] = parts.engine.run(parts.engine.sample_tasks(1, seed=0), group_size=1)
        assert engine.calls and episode.steps[0].completion_ids
        assert episode.steps[0].logprobs[:2] == ANSWER_LOGPROBS[:2]  # vLLM's logprobs reach the samples
    finally:
        parts.close()


def test_the_engine_gets_the_new_weights_after_every_update_that_steps(vllm_trainer, fake_vllm):
    trainer = vllm_trainer(num_iterations=2, mini_batches=2)
    sample = Sample([5, 6, 7], [8, 9], 1.0, [-1.0, -1.0])
    trainer.update([sample, Sample([5, 6], [9], -1.0, [-2.0])])
    assert fake_vllm[0].syncs == 1 and trainer.state.global_step == 4  # once per update, after all its steps
    trainer.update([sample])
    assert fake_vllm[0].syncs == 2
    trainer.update([Sample([5], [9], 0.0, [-1.0])])  # nothing trained: the weights did not change
    assert fake_vllm[0].syncs == 2


def samples_with_sampler_logprobs(sampler_logprob):
    # advantages 1 and 0.5: at the first step the clipped ratio is 1, so TRL's grpo loss is -mean(A) = -0.75
    # before the importance-sampling weight
    return [Sample([5, 6, 7], [8, 9, 10], 1.0, [sampler_logprob] * 3), Sample([5, 6], [11, 12], 0.5, [sampler_logprob] * 2)]


def test_unknown_sampler_logprobs_leave_the_loss_uncorrected(vllm_trainer):
    metrics = vllm_trainer().update(samples_with_sampler_logprobs(math.nan))
    assert metrics["loss"] == pytest.approx(-0.75, rel=1e-4)


def test_a_truncated_importance_weight_scales_the_loss_to_the_cap(vllm_trainer):
    # the tiny model's logprobs are far above -60: every token's ratio exp(old + 60) is cut to the cap 3: -0.75 x 3
    trainer = vllm_trainer(vllm_importance_sampling_mode="token_truncate", vllm_importance_sampling_clip_max=3.0)
    assert trainer.update(samples_with_sampler_logprobs(-60.0))["loss"] == pytest.approx(-2.25, rel=1e-4)


def test_a_masked_sequence_does_not_train(vllm_trainer):
    # sequence_mask (TRL's default): ratio exp(sum(old + 60)) is far above 3, so both samples are masked out
    trainer = vllm_trainer()
    before = [p.detach().clone() for p in trainer.model.parameters()]
    metrics = trainer.update(samples_with_sampler_logprobs(-60.0))
    assert metrics["loss"] == 0.0
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))


def test_wrong_combinations_are_refused(vllm_trainer):
    with pytest.raises(ValueError, match="build the trainer with GRPOConfig\\(use_vllm=True"):
        TRLVLLMBackend(SimpleNamespace(args=SimpleNamespace(use_vllm=False)))
    trainer = vllm_trainer()
    with pytest.raises(ValueError, match="one sampler log-probability per completion token"):
        trainer.update([Sample([5, 6], [8, 9, 10], 1.0, [-1.0])])


def test_a_lora_policy_reaches_the_engine_as_merged_weights_under_vllms_names(fake_vllm, tiny_model_path, tmp_path):
    """policy.use_peft with policy.backend=vllm: the trainer hands TRL's VLLMGeneration the peft model, and TRL's own
    sync_weights (run here for real, colocate mode, with a stand-in engine that records load_weights) pushes the
    adapter merged into the base under the base model's parameter names, then unmerges it. Not yet run on a GPU."""
    from contextlib import nullcontext

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig
    from trl.generation.vllm_generation import VLLMGeneration

    torch.manual_seed(0)
    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_path),
                                LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    with torch.no_grad():  # a trained adapter: B away from its zero start
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(std=0.05)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2, use_cpu=True,
                      report_to="none", bf16=False, max_completion_length=8, use_vllm=True, vllm_mode="colocate")
    trainer = SampleTrainer(peft_model, AutoTokenizer.from_pretrained(tiny_model_path), args, total_steps=2)
    assert fake_vllm[0].kwargs["model"] is trainer.model  # the peft model, adapters and all

    loaded: dict[str, torch.Tensor] = {}
    engine_model = SimpleNamespace(load_weights=lambda pairs: loaded.update({n: p.clone() for n, p in pairs}))
    llm = SimpleNamespace(llm_engine=SimpleNamespace(model_executor=SimpleNamespace(driver_worker=SimpleNamespace(
        model_runner=SimpleNamespace(model=engine_model)))), reset_prefix_cache=lambda: None)
    generation = object.__new__(VLLMGeneration)  # TRL's class, its engine replaced by the stand-in
    generation.__dict__.update(mode="colocate", enable_sleep_mode=False, llm=llm, model=trainer.model,
                               accelerator=SimpleNamespace(is_main_process=True),
                               _dist=SimpleNamespace(gather_params=lambda params: nullcontext(), is_fsdp=False))
    ids = torch.arange(1, 20).unsqueeze(0)
    with torch.no_grad():
        before = trainer.model(ids).logits
    base_before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" not in n}
    VLLMGeneration.sync_weights(generation)

    reference = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    merged = get_peft_model(reference, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    merged.load_state_dict(trainer.model.state_dict())
    expected = merged.merge_and_unload().state_dict()
    assert set(loaded) == set(expected) - {"lm_head.weight"} or set(loaded) == set(expected)
    assert all(torch.allclose(loaded[name], expected[name], atol=1e-6) for name in loaded)
    assert any(not torch.equal(loaded[name], reference_weight) for name, reference_weight in
               AutoModelForCausalLM.from_pretrained(tiny_model_path).state_dict().items() if name in loaded)
    # unmerged again: W + BA - BA comes back within float32 rounding (measured: max |change| 7.5e-9 on weights up to
    # 1.0), so the trained model computes what it did before the sync
    drift = max(float((p.detach() - base_before[n]).abs().max()) for n, p in trainer.model.named_parameters()
                if "lora_" not in n)
    assert drift < 1e-5
    with torch.no_grad():
        assert torch.allclose(trainer.model(ids).logits, before, atol=1e-4)
