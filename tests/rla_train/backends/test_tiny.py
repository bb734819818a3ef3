"""Tests for rla_train.backends.tiny: tiny local models that load with the Auto classes and never download anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rla_envs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rla_train.backends import tiny  # noqa: E402
from rla_train.backends.tiny import build_tiny_model, default_corpus  # noqa: E402


@pytest.fixture(scope="module")
def loaded(tiny_model_path):
    """(tokenizer, model) loaded with the Auto classes from the session's tiny model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path), AutoModelForCausalLM.from_pretrained(tiny_model_path)


def test_loads_with_auto_classes_as_a_small_qwen2(loaded):
    tokenizer, model = loaded
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert (model.config.hidden_size, model.config.num_hidden_layers, model.config.num_attention_heads) == (64, 2, 4)
    assert model.config.vocab_size == len(tokenizer) <= 1024
    assert sum(p.numel() for p in model.parameters()) < 500_000
    assert tokenizer.pad_token == "<|endoftext|>" and tokenizer.eos_token == "<|im_end|>"
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id
    for special in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        assert tokenizer.tokenize(f"a{special}b") == ["a", special, "b"]


def test_loaded_tokenizer_tokenizes_like_the_trained_one(loaded, tiny_model_path):
    # AutoTokenizer builds a Qwen2Tokenizer (its own pre-tokenizer) for a qwen2 model: it must agree
    from tokenizers import Tokenizer

    tokenizer, _ = loaded
    raw = Tokenizer.from_file(str(tiny_model_path / "tokenizer.json"))
    text = "put 12 apples in fridge 1, then   x = nums[3] * 4\n\n\tdef f(): return 'ok'  # café"
    assert tokenizer(text, add_special_tokens=False).input_ids == raw.encode(text).ids
    assert tokenizer.decode(tokenizer(text).input_ids) == text


def test_tokenizer_is_fitted_to_game_text(loaded):
    tokenizer, _ = loaded
    observation = "You arrive at countertop 1. On the countertop 1, you see a mug 2, and a apple 1."
    assert len(tokenizer.tokenize(observation)) <= len(observation) // 3
    for word in (" fridge", " countertop", " microwave", "take", " cabinet"):
        assert len(tokenizer.tokenize(word)) == 1, word


def test_chat_template_is_chatml_and_extends_turn_by_turn(loaded):
    tokenizer, _ = loaded
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "look"}]
    prompt = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    assert prompt == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nlook<|im_end|>\n"
                      "<|im_start|>assistant\n")
    reply = "go to  fridge 1\n"  # rendered verbatim, odd spacing included
    longer = chat + [{"role": "assistant", "content": reply}, {"role": "user", "content": "ok"}]
    assert tokenizer.apply_chat_template(longer, add_generation_prompt=True, tokenize=False) == \
        prompt + reply + "<|im_end|>\n<|im_start|>user\nok<|im_end|>\n<|im_start|>assistant\n"
    parts = [{"role": "user", "content": [{"type": "text", "text": "look"}]}]
    assert tokenizer.apply_chat_template(parts, tokenize=False) == "<|im_start|>user\nlook<|im_end|>\n"


def test_model_generates_and_trains(loaded):
    tokenizer, model = loaded
    ids = tokenizer("go to fridge 1", return_tensors="pt").input_ids
    out = model(input_ids=ids, labels=ids)
    assert torch.isfinite(out.loss) and out.logits.shape == (1, ids.shape[1], len(tokenizer))
    out.loss.backward()
    assert model.model.embed_tokens.weight.grad.abs().sum() > 0


def test_same_seed_same_model_other_seed_other_weights(tmp_path):
    corpus = default_corpus(episodes=20)
    a = build_tiny_model(tmp_path / "a", corpus=corpus, vocab_size=400, seed=1)
    b = build_tiny_model(tmp_path / "b", corpus=corpus, vocab_size=400, seed=1)
    c = build_tiny_model(tmp_path / "c", corpus=corpus, vocab_size=400, seed=2)
    assert (a / "tokenizer.json").read_text() == (b / "tokenizer.json").read_text()
    from safetensors.torch import load_file

    weights = {name: load_file(path / "model.safetensors") for name, path in (("a", a), ("b", b), ("c", c))}
    assert all(torch.equal(weights["a"][k], weights["b"][k]) for k in weights["a"])
    assert not torch.equal(weights["a"]["model.embed_tokens.weight"], weights["c"]["model.embed_tokens.weight"])
    assert json.loads((a / "config.json").read_text())["vocab_size"] <= 400


def test_default_corpus_is_deterministic_and_covers_games_and_code():
    corpus = default_corpus()
    assert corpus == default_corpus()
    text = "\n".join(corpus)
    for needle in ("go to", "take", "heat", "cool", "clean", "examine", "inventory", "fridge", "FizzBuzz", "def "):
        assert needle in text, needle
    bundled = json.loads((Path(rla_envs.__file__).parent / "code" / "tasks" / "bundled_problems.json").read_text())
    assert all(problem["statement"] in text for problem in bundled["problems"])  # the code problems' own words


def test_bad_shapes_are_refused_with_the_fix(tmp_path):
    with pytest.raises(ValueError, match="divide by num_heads"):
        build_tiny_model(tmp_path, hidden_size=60, num_heads=8)
    with pytest.raises(ValueError, match="vocab_size must be >= 300"):
        build_tiny_model(tmp_path, vocab_size=100)


def test_tiny_model_path_builds_once_per_options(monkeypatch, tmp_path):
    monkeypatch.setenv("RLA_CACHE", str(tmp_path))
    builds = []
    real_build = tiny.build_tiny_model

    def counting_build(out_dir, **options):
        builds.append(options)
        return real_build(out_dir, **options)

    monkeypatch.setattr(tiny, "build_tiny_model", counting_build)
    corpus = default_corpus(episodes=10)
    first = tiny.tiny_model_path(corpus=corpus, vocab_size=320)
    again = tiny.tiny_model_path(corpus=corpus, vocab_size=320)
    other = tiny.tiny_model_path(corpus=corpus, vocab_size=330)
    assert first == again != other and len(builds) == 2
    assert first.parent == tmp_path / "models" and (first / "config.json").is_file()
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == sorted([first.name, other.name])  # no temp


def test_tiny_model_path_leaves_nothing_behind_when_the_build_fails(monkeypatch, tmp_path):
    monkeypatch.setenv("RLA_CACHE", str(tmp_path))
    with pytest.raises(ValueError):
        tiny.tiny_model_path(hidden_size=60, num_heads=8)
    assert list((tmp_path / "models").iterdir()) == []
