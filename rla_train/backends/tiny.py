"""Tiny local causal LMs for tests, benchmarks and the CPU default run: nothing is ever downloaded.

:func:`build_tiny_model` trains a byte-level BPE tokenizer on a small built-in corpus (ALFWorld/TextWorld
game text and Python code), wraps it with a ChatML chat template, and saves it beside a randomly
initialised ``Qwen2ForCausalLM``; the directory loads with ``AutoModelForCausalLM.from_pretrained`` and
``AutoTokenizer.from_pretrained``. :func:`tiny_model_path` builds that model once into the rla cache::

    from rla_train.backends.tiny import tiny_model_path
    backend = make_backend("transformers", model=str(tiny_model_path()))

The model's weights are random, so its text is gibberish; what it offers is the real machinery (a real
tokenizer, chat template, ``generate`` and gradients) at a size that trains on one CPU core.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from rla_envs.code.tasks.bundled import DATA_FILE as BUNDLED_PROBLEMS

__all__ = ["build_tiny_model", "tiny_model_path", "default_corpus", "CHATML_TEMPLATE"]

PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"

QWEN2_PRETOKENIZE_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
                           r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")

BUILD_VERSION = 1
"""Bumped whenever the corpus, tokenizer or model recipe changes, so cached models are rebuilt."""

CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- else %}{%- for part in message['content'] %}"
    "{%- if part['type'] == 'text' %}{{- part['text'] }}{%- endif %}"
    "{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""ChatML: ``<|im_start|>{role}\\n{content}<|im_end|>\\n`` per message, then ``<|im_start|>assistant\\n``.

Assistant content is rendered verbatim, so a chat that appends a generated reply (which ended with the
``<|im_end|>`` token) renders as the previous prompt + completion + ``"\\n"`` + the next turn."""

_VERBS = ("go to {r}", "take {o} from {r}", "put {o} in/on {r}", "open {r}", "close {r}", "heat {o} with {r}",
          "cool {o} with {r}", "clean {o} with {r}", "examine {o}", "examine {r}", "use {o}", "look",
          "inventory", "slice {o} with {o2}", "toggle {o}")
_GOALS = ("put a {o} in {r}.", "put some {o} on {r}.", "put a clean {o} in {r}.", "put a hot {o} in {r}.",
          "put a cool {o} in {r}.", "find two {o} and put them in {r}.", "look at {o} under the desklamp.")
_CODE = '''def solve():
    import sys
    data = sys.stdin.read().split()
    n = int(data[0])
    total = 0
    for i in range(1, n + 1):
        if i % 3 == 0 and i % 5 == 0:
            print("FizzBuzz")
        elif i % 3 == 0:
            print("Fizz")
        else:
            total += i
    return total


class Solution:
    def two_sum(self, nums: list[int], target: int) -> list[int]:
        seen = {}
        for index, value in enumerate(nums):
            if target - value in seen:
                return [seen[target - value], index]
            seen[value] = index
        return []


if __name__ == "__main__":
    solve()
'''


def _names() -> tuple[list[str], list[str]]:
    """(object names, receptacle names), lower-case, from the alfworld package data (a base dependency)."""
    from alfworld.gen import constants  # light: a module of lists

    receptacles = sorted({name.lower() for name in constants.RECEPTACLES})
    objects = sorted({name.lower() for name in constants.OBJECTS} - set(receptacles))
    return objects, receptacles


def _code_text() -> list[str]:
    """Problem statements from rla_envs' bundled code problems, plus a little Python."""
    problems = json.loads(BUNDLED_PROBLEMS.read_text(encoding="utf-8"))["problems"]
    return [_CODE, *(str(problem["statement"]) for problem in problems)]


def default_corpus(*, seed: int = 0, episodes: int = 300) -> list[str]:
    """A deterministic training corpus: ALFWorld/TextWorld-style episodes in ChatML, and Python code."""
    rng = random.Random(seed)
    objects, receptacles = _names()
    texts = []
    for _ in range(episodes):
        o, o2, r = rng.choice(objects), rng.choice(objects), rng.choice(receptacles)
        goal = rng.choice(_GOALS).format(o=o, r=r)
        room = ", ".join(f"a {name} {rng.randint(1, 3)}" for name in rng.sample(receptacles, 4))
        actions = [rng.choice(_VERBS).format(o=f"{o} {rng.randint(1, 3)}", o2=f"{o2} 1",
                                             r=f"{r} {rng.randint(1, 3)}") for _ in range(3)]
        turns = [f"{IM_START}system\nYou are an agent in a household. Answer with one action.{IM_END}\n",
                 f"{IM_START}user\nYou are in the middle of a room. Looking quickly around you, you see {room}."
                 f"\nYour task is to: {goal}{IM_END}\n"]
        for action in actions:
            turns.append(f"{IM_START}assistant\n{action}{IM_END}\n")
            turns.append(f"{IM_START}user\nYou arrive at {r}. On the {r}, you see a {o} 1. Nothing happens."
                         f"{IM_END}\n")
        texts.append("".join(turns))
    return texts + _code_text()


def _train_tokenizer(corpus: Iterable[str], vocab_size: int):
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on ``corpus`` with the ChatML special tokens."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    # Qwen2's own normalizer and pre-tokenizer: AutoTokenizer loads a qwen2 model's tokenizer as
    # Qwen2Tokenizer, which installs them, so training with anything else would tokenize differently.
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[PAD_TOKEN, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    return tokenizer


def build_tiny_model(out_dir: str | os.PathLike, *, corpus: Iterable[str] | None = None, vocab_size: int = 1024,
                     hidden_size: int = 64, num_layers: int = 2, num_heads: int = 4, max_positions: int = 2048,
                     seed: int = 0) -> Path:
    """Build a tiny random-init Qwen2 causal LM with a trained ChatML tokenizer into ``out_dir``; returns it.

    Args:
        out_dir: directory to write (created; existing model files are overwritten).
        corpus: texts to train the tokenizer on (default: :func:`default_corpus`).
        vocab_size: the most tokens in the vocabulary (fewer if the corpus has fewer merges).
        hidden_size, num_layers, num_heads: model shape; ``hidden_size`` must divide by ``num_heads``.
        max_positions: longest sequence the model accepts.
        seed: seeds the corpus and the weight initialisation (same seed, same model).
    """
    if hidden_size % num_heads or hidden_size // num_heads % 2:
        raise ValueError(f"hidden_size ({hidden_size}) must divide by num_heads ({num_heads}) into an even "
                         f"head size; pick e.g. hidden_size=64, num_heads=4")
    if vocab_size < 300:
        raise ValueError(f"vocab_size must be >= 300 (256 byte tokens + specials + merges), got {vocab_size}")
    import torch
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    corpus = list(default_corpus(seed=seed) if corpus is None else corpus)
    if not corpus or not all(isinstance(text, str) for text in corpus):
        raise ValueError("corpus must be a non-empty list of strings (or None for the built-in corpus)")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(corpus, vocab_size), eos_token=IM_END, pad_token=PAD_TOKEN,
        additional_special_tokens=[IM_START, IM_END], chat_template=CHATML_TEMPLATE, padding_side="left",
        model_max_length=max_positions, clean_up_tokenization_spaces=False)
    pad_id, eos_id = tokenizer.convert_tokens_to_ids([PAD_TOKEN, IM_END])
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_heads,
        max_position_embeddings=max_positions, tie_word_embeddings=True, pad_token_id=pad_id,
        eos_token_id=eos_id, bos_token_id=None)
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def _options_key(name: str, options: dict) -> str:
    """A short hash of the build options (a corpus counts by content)."""
    options = dict(options)
    if options.get("corpus") is not None:
        options["corpus"] = hashlib.sha256("\x00".join(options["corpus"]).encode()).hexdigest()
    blob = json.dumps({"name": name, "version": BUILD_VERSION, **options}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _distributed_rank() -> int:
    """This process's torch.distributed rank (0 without a process group, or when torch is not even imported)."""
    dist = sys.modules.get("torch.distributed")
    return dist.get_rank() if dist is not None and dist.is_available() and dist.is_initialized() else 0


def _built_by_rank_zero(target: Path, timeout: float = 600.0) -> Path:
    """``target`` once rank 0 of a data-parallel run has built it (it appears whole: built elsewhere, renamed)."""
    deadline = time.monotonic() + timeout
    while not (target / "config.json").is_file():
        if time.monotonic() > deadline:
            raise RuntimeError(f"rank {_distributed_rank()} waited {timeout:.0f} s for rank 0 to build the tiny model "
                               f"{target}; does rank 0 build the same model?")
        time.sleep(0.2)
    return target


def tiny_model_path(name: str = "tiny-qwen2", **options) -> Path:
    """The path of a tiny model built with ``options`` (see :func:`build_tiny_model`), built once and cached.

    The model lives under ``cache_dir("models")`` in a directory keyed by a hash of ``options``; it is
    built into a temporary directory and renamed into place, so a crash or a concurrent build never leaves
    a half-written model behind.
    """
    from rla_envs.core.files import cache_dir

    if "corpus" in options and options["corpus"] is not None:
        options["corpus"] = list(options["corpus"])
    root = cache_dir("models")
    target = root / f"{name}-{_options_key(name, options)}"
    if (target / "config.json").is_file():
        return target
    if _distributed_rank() > 0:  # once torch.distributed is up, save_pretrained writes no weights off rank 0
        return _built_by_rank_zero(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
    try:
        build_tiny_model(tmp, **options)
        try:
            os.rename(tmp, target)
        except OSError:  # another process finished first: keep its copy
            if not (target / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
