"""Tests for make_backend, TransformersBackend (on a tiny local model) and VLLMBackend's vLLM plumbing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types

import pytest

from rla_envs.core.errors import MissingDependency, RlaError
from rla_train.backends import BACKENDS, SamplingParams, ScriptedBackend, make_backend

torch = pytest.importorskip("torch")

ANSWER = "go to fridge 1"
CHATS = [
    [{"role": "user", "content": "You see a fridge 1."}],
    [{"role": "system", "content": "You are an agent in a household. Answer with one action."},
     {"role": "user", "content": "You are in the middle of a room. Your task is to: put a clean mug in "
                                 "cabinet 1. You arrive at countertop 1. On the countertop 1, you see a mug 2."}],
]
PROMPTS = CHATS + ["def solve():\n    n = int(input())\n    return"]  # three lengths, chats and text


def forward_logprobs(model, prompt_ids, token_ids, temperature):
    """log_softmax(logits / T) of each token in token_ids, from one unpadded forward pass."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt_ids + token_ids])).logits[0].float()
    logprobs = torch.log_softmax(logits / temperature, dim=-1)
    return [logprobs[len(prompt_ids) - 1 + i, token].item() for i, token in enumerate(token_ids)]


# ------------------------------------------------------------------------------------------- make_backend

def test_importing_backends_does_not_import_torch():
    code = "import rla_train.backends, sys; assert 'torch' not in sys.modules, 'torch was imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_make_backend_unknown_name_suggests_the_closest():
    with pytest.raises(ValueError, match="Did you mean 'transformers'"):
        make_backend("transfomers", model="x")
    assert set(BACKENDS) == {"transformers", "vllm", "openai", "scripted"}


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_make_backend_vllm_without_vllm_names_the_install_command():
    with pytest.raises(MissingDependency) as caught:
        make_backend("vllm", model="some/model")
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, RlaError)
    assert 'pip install "rla[vllm]"' in str(caught.value)


def test_make_backend_builds_scripted_and_transformers(tiny_model_path):
    scripted = make_backend("scripted", respond=["look"])
    assert isinstance(scripted, ScriptedBackend)
    backend = make_backend("transformers", model=str(tiny_model_path), device="cpu")
    assert backend.name == "transformers"
    [generation] = backend.generate(["go to"], sampling=SamplingParams(max_new_tokens=3))
    assert len(generation.samples[0].token_ids) == 3


# ---------------------------------------------------------------------------- transformers: ids & logprobs

@pytest.mark.parametrize("temperature", [0.7, 0.0])
def test_recorded_logprobs_match_an_unpadded_forward_pass(tiny_backend, temperature):
    sampling = SamplingParams(max_new_tokens=10, temperature=temperature, seed=3)
    generations = tiny_backend.generate(PROMPTS, n=2, sampling=sampling)
    assert len(generations) == len(PROMPTS)
    assert len({len(g.prompt_ids) for g in generations}) == 3  # the batch really was padded
    for prompt, generation in zip(PROMPTS, generations):
        assert generation.prompt == tiny_backend.render(prompt)
        assert generation.prompt_ids == tiny_backend.tokenizer(generation.prompt, add_special_tokens=False).input_ids
        assert len(generation.samples) == 2
        for sample in generation.samples:
            assert len(sample.token_ids) == len(sample.logprobs) == 10  # random weights: never ends early
            assert sample.finish_reason == "length"
            assert sample.text == tiny_backend.tokenizer.decode(sample.token_ids, skip_special_tokens=True)
            expected = forward_logprobs(tiny_backend.model, generation.prompt_ids, sample.token_ids,
                                        temperature or 1.0)
            assert sample.logprobs == pytest.approx(expected, abs=1e-4)
    if temperature == 0:
        for generation in generations:
            assert generation.samples[0].token_ids == generation.samples[1].token_ids


def test_chunked_batches_give_the_same_greedy_samples(tiny_model_path):
    from rla_train.backends.hf import TransformersBackend

    sampling = SamplingParams(max_new_tokens=6, temperature=0)
    whole = TransformersBackend(str(tiny_model_path), device="cpu").generate(PROMPTS, n=2, sampling=sampling)
    chunked = TransformersBackend(str(tiny_model_path), device="cpu", batch_size=2).generate(
        PROMPTS, n=2, sampling=sampling)
    for a, b in zip(whole, chunked):
        assert [s.token_ids for s in a.samples] == [s.token_ids for s in b.samples]
        assert a.samples[0].logprobs == pytest.approx(b.samples[0].logprobs, abs=1e-4)


def test_seed_makes_sampling_reproducible_and_unseeded_calls_vary(tiny_backend):
    def ids(seed):
        sampling = SamplingParams(max_new_tokens=8, temperature=1.0, seed=seed)
        return [s.token_ids for g in tiny_backend.generate(CHATS, n=2, sampling=sampling) for s in g.samples]

    assert ids(7) == ids(7)
    assert ids(7) != ids(8)
    assert ids(None) != ids(None)  # seeding one call must not freeze the global stream
    first = ids(7)
    assert len({tuple(x) for x in first}) == 4  # the n samples of a prompt differ


def test_rejects_a_model_object_with_device_and_bad_batch_size(tiny_backend):
    from rla_train.backends.hf import TransformersBackend

    with pytest.raises(ValueError, match="used as is"):
        TransformersBackend(tiny_backend.model, tiny_backend.tokenizer, device="cpu")
    with pytest.raises(ValueError, match="batch_size"):
        TransformersBackend(tiny_backend.model, tiny_backend.tokenizer, batch_size=0)
    with pytest.raises(TypeError, match="batch"):
        tiny_backend.generate(CHATS[0])  # one chat instead of a list of prompts


# ----------------------------------------------------------------- transformers: a model taught one answer

@pytest.fixture(scope="module")
def taught(tiny_model_path):
    """A backend on a live model object, then that object trained in place to answer ANSWER + <|im_end|>."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rla_train.backends.hf import TransformersBackend

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    backend = TransformersBackend(model, AutoTokenizer.from_pretrained(tiny_model_path))
    before = backend.generate(CHATS, sampling=SamplingParams(max_new_tokens=6, temperature=0))
    tokenizer = backend.tokenizer
    rows = []
    for chat in CHATS:
        prompt_ids = tokenizer(backend.render(chat), add_special_tokens=False).input_ids
        answer_ids = tokenizer(ANSWER + "<|im_end|>", add_special_tokens=False).input_ids
        rows.append((torch.tensor([prompt_ids + answer_ids]), len(prompt_ids)))
    torch.manual_seed(0)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(40):
        loss = 0
        for ids, prompt_length in rows:
            labels = ids.clone()
            labels[0, :prompt_length] = -100
            loss = loss + model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return backend, before


def test_generation_uses_the_live_weights_and_keeps_training_mode(taught):
    backend, before = taught
    assert all(g.samples[0].text != ANSWER for g in before)
    backend.model.train()
    # the text prompt gets a shorter answer, so its row is padded after its end-of-turn token
    generations = backend.generate(PROMPTS, n=2, sampling=SamplingParams(max_new_tokens=12, temperature=0))
    assert backend.model.training and all(m.training for m in backend.model.modules())
    assert [g.samples[0].text for g in generations[:2]] == [ANSWER, ANSWER]
    assert len({len(g.samples[0].token_ids) for g in generations}) == 2
    end_of_turn = backend.tokenizer.convert_tokens_to_ids("<|im_end|>")
    for generation in generations:
        for sample in generation.samples:
            assert sample.finish_reason == "stop"
            assert sample.token_ids[-1] == end_of_turn  # the end-of-turn token is kept ...
            assert len(sample.token_ids) == len(sample.logprobs) < 12  # ... and nothing after it
            expected = forward_logprobs(backend.model, generation.prompt_ids, sample.token_ids, 1.0)
            assert sample.logprobs == pytest.approx(expected, abs=1e-4)
    backend.model.eval()
    backend.generate(CHATS[:1], sampling=SamplingParams(max_new_tokens=2, temperature=0))
    assert not backend.model.training


def test_stop_strings_cut_the_text_and_keep_the_completing_token(taught):
    backend, _ = taught
    generations = backend.generate(CHATS, sampling=SamplingParams(max_new_tokens=12, temperature=0, stop=("fri",)))
    for generation in generations:
        [sample] = generation.samples
        assert sample.text == "go to " and sample.finish_reason == "stop"
        assert backend.tokenizer.decode(sample.token_ids).endswith("fridge")
        assert len(sample.logprobs) == len(sample.token_ids)


def test_max_new_tokens_ends_with_length(taught):
    backend, _ = taught
    [generation] = backend.generate(CHATS[:1], sampling=SamplingParams(max_new_tokens=2, temperature=0))
    sample = generation.samples[0]
    assert sample.finish_reason == "length" and len(sample.token_ids) == 2 and sample.text == "go to"


def test_next_turn_prompt_extends_prompt_plus_completion(taught):
    backend, _ = taught
    [generation] = backend.generate(CHATS[:1], sampling=SamplingParams(max_new_tokens=12, temperature=0))
    sample = generation.samples[0]
    next_chat = CHATS[0] + [{"role": "assistant", "content": sample.text},
                            {"role": "user", "content": "The fridge 1 is closed."}]
    [next_generation] = backend.generate([next_chat], sampling=SamplingParams(max_new_tokens=1))
    assert next_generation.prompt.startswith(generation.prompt + sample.text + "<|im_end|>")
    assert next_generation.prompt_ids[:len(generation.prompt_ids) + len(sample.token_ids)] == \
        generation.prompt_ids + sample.token_ids


def test_score_prefers_the_taught_answer_and_matches_generation_logprobs(taught):
    backend, _ = taught
    [generation] = backend.generate(CHATS[:1], sampling=SamplingParams(max_new_tokens=12, temperature=0))
    sample = generation.samples[0]
    assert backend.tokenizer(ANSWER, add_special_tokens=False).input_ids == sample.token_ids[:-1]
    scores = backend.score([CHATS[0], CHATS[0], CHATS[1]], [ANSWER, "take mug 2 from countertop 1", ""])
    assert scores[0] == pytest.approx(sum(sample.logprobs[:-1]), abs=1e-4)
    assert scores[0] > scores[1] and scores[2] == 0.0


def test_score_batched_equals_one_by_one(tiny_backend):
    continuations = ["open fridge 1", " x = 3", "take mug 2 from countertop 1"]
    batched = tiny_backend.score(PROMPTS, continuations)
    single = [tiny_backend.score([p], [c])[0] for p, c in zip(PROMPTS, continuations)]
    assert batched == pytest.approx(single, abs=1e-4)
    assert all(score < 0 for score in batched)
    with pytest.raises(ValueError, match="one continuation per prompt"):
        tiny_backend.score(PROMPTS, continuations[:2])


# ------------------------------------------------------------------------------- vLLM plumbing (fake vllm)

class _Logprob:
    def __init__(self, logprob):
        self.logprob = logprob


def _fake_vllm(calls):
    """A stand-in ``vllm`` module with the parts of vLLM's API VLLMBackend uses, recording its calls."""
    from transformers import AutoTokenizer

    class SamplingParams:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

    class LLM:
        def __init__(self, model, **kwargs):
            calls["llm"] = {"model": model, **kwargs}
            self.tokenizer = AutoTokenizer.from_pretrained(model)

        def get_tokenizer(self):
            return self.tokenizer

        def generate(self, prompts, params, use_tqdm=True):
            calls["generate"] = (prompts, params)
            outputs = []
            for prompt, param in zip(prompts, params):
                completions = [types.SimpleNamespace(
                    index=j, text=f"sample {j}", token_ids=[5 + j, 6], finish_reason=["stop", "length"][j % 2],
                    logprobs=[{5 + j: _Logprob(-0.5), 99: _Logprob(-9.0)}, {6: _Logprob(-0.25)}])
                    for j in reversed(range(param.n))]
                prompt_ids = prompt["prompt_token_ids"] if isinstance(prompt, dict) else [1, 2, 3]
                outputs.append(types.SimpleNamespace(prompt_token_ids=prompt_ids, outputs=completions))
            return outputs

    return types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams)


def test_vllm_backend_maps_params_and_outputs(monkeypatch, tiny_model_path):
    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(calls))
    backend = make_backend("vllm", model=str(tiny_model_path), gpu_memory_utilization=0.3)
    assert calls["llm"]["logprobs_mode"] == "processed_logprobs" and calls["llm"]["gpu_memory_utilization"] == 0.3
    sampling = SamplingParams(max_new_tokens=9, temperature=0.5, top_p=0.9, stop=("\n",), seed=10)
    generations = backend.generate([CHATS[0], "plain text"], n=2, sampling=sampling)
    inputs, params = calls["generate"]
    assert inputs[0] == {"prompt_token_ids": backend.tokenizer(backend.render(CHATS[0]),
                                                              add_special_tokens=False).input_ids}
    assert inputs[1] == "plain text"
    assert [p.seed for p in params] == [10, 12]  # sample j of prompt i gets 10 + 2i + j: all distinct
    first = params[0]
    assert (first.n, first.temperature, first.top_p, first.top_k, first.max_tokens, first.stop, first.logprobs) == \
        (2, 0.5, 0.9, -1, 9, ["\n"], 0)
    assert first.stop_token_ids == [backend.tokenizer.convert_tokens_to_ids("<|im_end|>")]
    assert generations[0].prompt_ids == inputs[0]["prompt_token_ids"] and generations[1].prompt_ids == [1, 2, 3]
    samples = generations[0].samples
    assert [s.text for s in samples] == ["sample 0", "sample 1"]
    assert [s.finish_reason for s in samples] == ["stop", "length"]
    assert samples[1].token_ids == [6, 6] and samples[1].logprobs == [-0.5, -0.25]
