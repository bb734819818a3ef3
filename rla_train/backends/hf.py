"""TransformersBackend: generation and scoring with a Hugging Face causal LM, on CPU or GPU.

It takes a model path (loaded locally) or a live model object, which is how the co-trainer samples with
the weights it is training::

    backend = TransformersBackend(trainer.model, tokenizer)          # current weights, every call
    [generation] = backend.generate([chat], n=4, sampling=SamplingParams(temperature=0.7))

Each ``generate`` call makes one left-padded, batched ``model.generate`` call (chunked by ``batch_size``)
for all prompts x ``n`` samples. Logprobs are computed from the raw logits ``generate`` returns
(``output_logits=True``) as ``log_softmax(logits / T)`` of the chosen token: the same numbers a plain
forward pass over ``prompt_ids + token_ids`` gives, which is what a policy-gradient loss needs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rla_train.backends.base import Generation, Prompt, Sample, SamplingParams, check_prompts, is_chat
from rla_train.backends.control_tokens import chat_token_ids

__all__ = ["TransformersBackend", "eval_mode"]

END_OF_TURN = "<|im_end|>"


def _resolve_dtype(dtype: Any):
    """A torch dtype from a torch dtype, its name (``"bfloat16"``) or None."""
    import torch

    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str) and isinstance(getattr(torch, dtype.removeprefix("torch."), None), torch.dtype):
        return getattr(torch, dtype.removeprefix("torch."))
    raise ValueError(f"dtype must be a torch dtype or its name (e.g. 'bfloat16', 'float32'), got {dtype!r}")


class _StopWatch:
    """A stopping criterion that ends each row on a stop token or stop string and records where it ended."""

    def __init__(self, tokenizer, prompt_length: int, stop_ids: set[int], stop_strings: Sequence[str]):
        self.tokenizer, self.prompt_length = tokenizer, prompt_length
        self.stop_ids, self.stop_strings = stop_ids, tuple(stop_strings)
        # a stop string ends in the newest token; a window this long always holds all of it
        self.window = max((len(s) for s in self.stop_strings), default=0) + 4
        self.ended_at: dict[int, int] = {}  # row -> generated length at its stop token / stop string

    def __call__(self, input_ids, scores, **kwargs):
        """``True`` for every row that has ended (now or before)."""
        import torch

        length = input_ids.shape[1] - self.prompt_length
        last = input_ids[:, -1].tolist()
        for row, token in enumerate(last):
            if row in self.ended_at:
                continue
            if token in self.stop_ids:
                self.ended_at[row] = length
            elif self.stop_strings:
                tail = input_ids[row, max(self.prompt_length, input_ids.shape[1] - self.window):].tolist()
                text = self.tokenizer.decode(tail, skip_special_tokens=True)
                if any(stop in text for stop in self.stop_strings):
                    self.ended_at[row] = length
        return torch.tensor([row in self.ended_at for row in range(len(last))], device=input_ids.device)


class TransformersBackend:
    """Generates with a transformers causal LM (a path, or a live model whose current weights are used).

    Args:
        model: a local path / hub id (loaded with ``AutoModelForCausalLM``; only local files are read if
            the network is down) or an already-loaded causal LM, used as is (not moved or cast).
        tokenizer: a tokenizer, or a path to load one; default: loaded from ``model``'s path.
        device: where a model loaded from a path goes (default ``"cuda"`` when available, else ``"cpu"``).
        dtype: the dtype a model loaded from a path gets (a torch dtype or its name; default: the checkpoint's).
        batch_size: the most sequences (prompts x n) per ``model.generate`` / forward call; None = all at once.

    Attributes:
        model: the causal LM (public: the co-trainer trains this very object).
        tokenizer: its tokenizer.
    """

    name = "transformers"

    def __init__(self, model, tokenizer=None, *, device=None, dtype=None, batch_size: int | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size is not None and (type(batch_size) is not int or batch_size < 1):
            raise ValueError(f"batch_size must be an int >= 1 or None, got {batch_size!r}")
        self.batch_size = batch_size
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            device = device or ("cuda" if torch.cuda.is_available() else "cpu")
            model = AutoModelForCausalLM.from_pretrained(path, dtype=_resolve_dtype(dtype)).to(device)
            tokenizer = tokenizer if tokenizer is not None else path
        else:
            if not callable(getattr(model, "generate", None)):
                raise TypeError(f"model must be a path or a causal LM with .generate(), got {type(model).__name__}")
            if device is not None or dtype is not None:
                raise ValueError("device and dtype apply only to a model loaded from a path; a model object is "
                                 "used as is: move or cast it yourself before passing it")
            if tokenizer is None:
                source = getattr(getattr(model, "config", None), "_name_or_path", "")
                if not source:
                    raise ValueError("pass tokenizer=...: the model object does not say where it was loaded from")
                tokenizer = source
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = AutoTokenizer.from_pretrained(os.fspath(tokenizer))
        self.model, self.tokenizer = model, tokenizer
        self.stop_ids = self._stop_ids()
        if self.tokenizer.pad_token_id is not None:
            self.pad_id = self.tokenizer.pad_token_id
        elif self.stop_ids:
            self.pad_id = min(self.stop_ids)
        else:
            raise ValueError("the tokenizer has neither a pad token nor an eos token; set tokenizer.pad_token")

    def _stop_ids(self) -> set[int]:
        """The tokenizer's eos id(s) and ``<|im_end|>`` when the vocabulary has it."""
        ids = set()
        eos = self.tokenizer.eos_token_id
        ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        end_of_turn = self.tokenizer.get_vocab().get(END_OF_TURN)
        if end_of_turn is not None:
            ids.add(end_of_turn)
        return ids

    # ------------------------------------------------------------------------------------------- prompts

    def render(self, prompt: Prompt) -> str:
        """The text the model sees: a chat through the chat template with a generation prompt; text as is."""
        if not is_chat(prompt):
            return prompt
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(f"the tokenizer of {self.model.config._name_or_path or 'this model'} has no chat "
                             "template; pass text prompts or set tokenizer.chat_template")
        return self.tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=False)

    def encode(self, prompt: Prompt) -> tuple[str, list[int]]:
        """(rendered text, token ids): a chat's control tokens come from its template only, text gets the tokenizer's.

        In a chat, a control-token string inside a message (an action or observation holding
        ``<|im_end|>``) is encoded as plain text (:func:`~rla_train.backends.control_tokens.chat_token_ids`);
        the rendered text still shows it as written. A plain-text prompt is the caller's own and is
        encoded as is, special-token strings included.
        """
        text = self.render(prompt)
        if is_chat(prompt):
            ids = chat_token_ids(self.tokenizer, prompt)
        else:
            ids = self.tokenizer(text, add_special_tokens=True)["input_ids"]
        if not ids:
            raise ValueError(f"prompt {str(prompt)[:60]!r} encodes to no tokens; pass a non-empty prompt")
        return text, list(ids)

    def _chunks(self, count: int) -> list[range]:
        """Row ranges of at most ``batch_size`` rows."""
        size = self.batch_size or max(count, 1)
        return [range(start, min(start + size, count)) for start in range(0, count, size)]

    def _left_pad(self, rows: list[list[int]]):
        """(input_ids, attention_mask) tensors, left-padded, on the model's device."""
        import torch

        width = max(map(len, rows))
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for index, row in enumerate(rows):
            ids[index, width - len(row):] = torch.tensor(row)
            mask[index, width - len(row):] = 1
        return ids.to(self.model.device), mask.to(self.model.device)

    # ---------------------------------------------------------------------------------------- generation

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt (in order) with ``n`` samples, from one batched generate call."""
        import torch

        prompts = check_prompts(prompts, n)
        sampling = sampling or SamplingParams()
        encoded = [self.encode(prompt) for prompt in prompts]
        rows = [ids for _, ids in encoded for _ in range(n)]  # prompt-major: prompt 0's n samples first
        samples: list[Sample] = []
        with eval_mode(self.model), torch.inference_mode(), self._seeded(sampling.seed):
            for chunk in self._chunks(len(rows)):
                samples.extend(self._generate_rows([rows[i] for i in chunk], sampling))
        return [Generation(prompt=text, prompt_ids=ids, samples=samples[i * n:(i + 1) * n])
                for i, (text, ids) in enumerate(encoded)]

    def _seeded(self, seed: int | None):
        """A context in which torch's RNG is seeded with ``seed`` and restored afterwards (None: untouched)."""
        import contextlib

        import torch

        if seed is None:
            return contextlib.nullcontext()
        devices = [self.model.device.index or 0] if self.model.device.type == "cuda" else []
        stack = contextlib.ExitStack()
        stack.enter_context(torch.random.fork_rng(devices=devices))
        torch.manual_seed(seed)
        return stack

    def _generate_rows(self, rows: list[list[int]], sampling: SamplingParams) -> list[Sample]:
        """One ``model.generate`` call over ``rows`` (token id lists); one Sample per row."""
        import torch
        from transformers import StoppingCriteriaList

        input_ids, attention_mask = self._left_pad(rows)
        watch = _StopWatch(self.tokenizer, input_ids.shape[1], self.stop_ids, sampling.stop)
        sampling_kwargs = ({"do_sample": False} if sampling.greedy else
                           {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p,
                            "top_k": sampling.top_k})
        output = self.model.generate(
            input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=sampling.max_new_tokens,
            eos_token_id=sorted(self.stop_ids) or None, pad_token_id=self.pad_id,
            stopping_criteria=StoppingCriteriaList([watch]), repetition_penalty=1.0, num_beams=1,
            num_return_sequences=1, output_logits=True, return_dict_in_generate=True, use_cache=True,
            **sampling_kwargs)
        generated = output.sequences[:, input_ids.shape[1]:]
        temperature = 1.0 if sampling.greedy else sampling.temperature
        # log_softmax(raw logits / T) of each chosen token, one step at a time (a [rows, vocab] slab each)
        step_logprobs = [torch.log_softmax(logits.float() / temperature, dim=-1)
                         .gather(1, generated[:, step:step + 1]).squeeze(1)
                         for step, logits in enumerate(output.logits)]
        logprobs = torch.stack(step_logprobs, dim=1).tolist() if step_logprobs else [[] for _ in rows]
        samples = []
        for row, ids in enumerate(generated.tolist()):
            length = watch.ended_at.get(row)
            finish = "length" if length is None else "stop"
            length = len(ids) if length is None else length
            ids = ids[:length]
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            cuts = [text.index(stop) for stop in sampling.stop if stop in text]
            if cuts:
                text, finish = text[:min(cuts)], "stop"
            samples.append(Sample(text=text, token_ids=ids, logprobs=logprobs[row][:length], finish_reason=finish))
        return samples

    # ------------------------------------------------------------------------------------------- scoring

    def score(self, prompts: Sequence[Prompt], continuations: Sequence[str]) -> list[float]:
        """The summed log-likelihood of each continuation given its prompt (temperature 1), batched.

        A chat prompt is rendered with the generation prompt, and the continuation is tokenized on its own
        (no special tokens added), as if the model had generated it. A continuation is the caller's text:
        a special-token string in it (``"go to fridge 1<|im_end|>"``) is that token. An empty
        continuation scores 0.0.
        """
        import torch

        prompts = check_prompts(prompts, 1)
        if isinstance(continuations, str) or len(continuations) != len(prompts):
            raise ValueError(f"score() needs one continuation per prompt: got {len(prompts)} prompts and "
                             f"{1 if isinstance(continuations, str) else len(continuations)} continuations")
        pairs = []
        for prompt, continuation in zip(prompts, continuations):
            if not isinstance(continuation, str):
                raise TypeError(f"continuations must be strings, got {type(continuation).__name__}")
            _, prompt_ids = self.encode(prompt)
            pairs.append((prompt_ids, self.tokenizer(continuation, add_special_tokens=False)["input_ids"]))
        scores: list[float] = []
        with eval_mode(self.model), torch.inference_mode():
            for chunk in self._chunks(len(pairs)):
                scores.extend(self._score_rows([pairs[i] for i in chunk]))
        return scores

    def _score_rows(self, pairs: list[tuple[list[int], list[int]]]) -> list[float]:
        """One right-padded forward pass over prompt + continuation rows; summed continuation logprobs."""
        import torch

        width = max(len(p) + len(c) for p, c in pairs)
        ids = torch.full((len(pairs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(pairs), width), dtype=torch.long)
        for row, (prompt_ids, continuation_ids) in enumerate(pairs):
            full = prompt_ids + continuation_ids
            ids[row, :len(full)] = torch.tensor(full)
            mask[row, :len(full)] = 1
        logits = self.model(input_ids=ids.to(self.model.device),
                            attention_mask=mask.to(self.model.device)).logits.float()
        scores = []
        for row, (prompt_ids, continuation_ids) in enumerate(pairs):
            if not continuation_ids:
                scores.append(0.0)
                continue
            # the logits at position t predict token t + 1
            start, end = len(prompt_ids) - 1, len(prompt_ids) + len(continuation_ids) - 1
            logprobs = torch.log_softmax(logits[row, start:end], dim=-1)
            targets = torch.tensor(continuation_ids, device=logprobs.device).unsqueeze(1)
            scores.append(float(logprobs.gather(1, targets).sum()))
        return scores

    def close(self) -> None:
        """Drop the references to the model and tokenizer (the caller may still hold the model)."""
        self.model = self.tokenizer = None


class eval_mode:
    """A context manager that puts a module in eval mode and restores every submodule's mode afterwards."""

    def __init__(self, module):
        self.module = module

    def __enter__(self):
        self.modes = [(sub, sub.training) for sub in self.module.modules()]
        self.module.eval()
        return self.module

    def __exit__(self, *exc):
        for sub, training in self.modes:
            sub.training = training
        return False
