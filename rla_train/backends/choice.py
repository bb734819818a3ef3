"""Choice policies: a causal LM that picks one of the env's admissible commands by its log-likelihood.

A from-scratch tiny model decodes free text that is almost never an admissible command (~95% invalid on
ALFWorld). :class:`ChoiceBackend` constrains it: for every prompt it scores each admissible command
``c`` as ``log p(c + <|im_end|> | prompt)`` (summed token log-probabilities), then picks greedily (argmax)
or samples from ``softmax(scores / temperature)``. It is a :class:`~rla_train.backends.base.GenerationBackend`,
so the rollout engine, the agents and everything downstream use it unchanged::

    backend = ChoiceBackend(TransformersBackend(model_path))          # temperature from the sampling params
    engine = RolloutEngine("rla/AlfWorld-v0", TextGameAgent(), backend, num_envs=16)

The candidates are read from the prompt's last user turn, where :class:`~rla_train.agents.TextGameAgent`
lists them (``"Admissible actions: a, b, c"`` or the numbered list of ``action_format="index"``), or given
explicitly with :meth:`ChoiceBackend.choose`. Each returned sample is the chosen command: its text, its
token ids (the command's tokens + the end-of-turn token, exactly the tokens scored) and one log-probability
per token under the model at temperature 1, so a trainer recomputing logprobs on ``prompt_ids +
token_ids`` gets the same numbers, and ``choice_logprobs``: the log-probability of choosing each candidate, the
distribution the command was drawn from (what a policy-gradient update takes as the behaviour policy's, without
scoring the states again). By default each prompt and all of its candidates share one packed row (a block
attention mask lets each candidate see the prompt and itself only; ~1.9x faster on CPU than running the prompt
once and its candidates on copies of its KV cache, measured on the CPU default's prompts), identical (prompt,
candidates) pairs in a call are scored once (the rollouts of one task often share their first states), and all
rows go through in as few forward passes as ``max_batch_tokens`` allows. The last call's scores and choice
probabilities are kept in :attr:`ChoiceBackend.last_choices`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rla_train.backends.base import Generation, Prompt, Sample, SamplingParams, check_prompts, is_chat
from rla_train.backends.control_tokens import text_token_ids
from rla_train.backends.hf import eval_mode

__all__ = ["ChoiceBackend", "Choice", "decoder_of", "admissible_from_prompt", "score_each_state_once", "SCORING_METHODS",
           "SCORE_REDUCTIONS"]

SCORING_METHODS = ("packed", "cache", "full")

COMMAND_IDS_CACHE = 65_536
"""Most distinct commands whose token ids a :class:`ChoiceBackend` keeps (an env's commands recur every turn: their
tokenization was ~7% of a co-training step's time); past it the cache starts again."""

SCORE_REDUCTIONS = ("sum", "mean")
"""How a candidate's token log-probabilities make its score: summed (the sequence log-likelihood) or averaged."""

_LISTING = re.compile(r"\n\nAdmissible actions: (?P<flat>[^\n]*)\n"
                      r"|\n\nAdmissible actions:\n(?P<numbered>(?:\d+\. [^\n]*\n?)+)")


T = TypeVar("T")


def decoder_of(model):
    """The decoder stack of a causal LM (its hidden states, before the output head); through a peft adapter's
    wrapper too, whose ``base_model`` is peft's tuner, not the decoder (the adapter's layers stay active)."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return inner.base_model


def score_each_state_once(prompt_ids: Sequence[list[int]], candidate_ids: Sequence[Sequence[list[int]]],
                          score: Callable[[list, list], list[T]]) -> list[T]:
    """``score(prompts, candidates)`` called on each distinct (prompt, candidates) pair once, in the order each
    first occurs; its results handed back for every pair in input order (a repeated state shares one result).

    >>> calls = []
    >>> score_each_state_once([[1], [2], [1]], [[[5]], [[6]], [[5]]], lambda p, c: calls.append(p) or p)
    [[1], [2], [1]]
    >>> calls
    [[[1], [2]]]
    """
    keys = [(tuple(p), tuple(map(tuple, cs))) for p, cs in zip(prompt_ids, candidate_ids)]
    first: dict = {}
    for index, key in enumerate(keys):
        first.setdefault(key, index)
    unique = list(first.values())
    scored = score([prompt_ids[i] for i in unique], [candidate_ids[i] for i in unique])
    by_key = {keys[i]: result for i, result in zip(unique, scored)}
    return [by_key[key] for key in keys]


def admissible_from_prompt(prompt: Prompt) -> list[str]:
    """The admissible commands a :class:`TextGameAgent` listed in the prompt's last user turn ([] if none).

    A user turn that carries the commands itself (an ``"admissible_actions"`` key beside ``content``, as
    compact prompts with ``show_admissible="none"`` do: the model does not see them, chat templates
    render ``role`` and ``content`` only) gives those. Otherwise reads both listings: ``"Admissible
    actions: a, b, c"`` (``action_format="text"``) and the numbered list of ``action_format="index"``.
    A command containing ``", "`` cannot be told apart in the flat listing: pass candidates to
    :meth:`ChoiceBackend.choose` explicitly for such games.
    """
    if is_chat(prompt):
        users = [m for m in prompt if m.get("role") == "user"]
        if users and users[-1].get("admissible_actions"):  # given beside the text (compact prompts)
            return list(users[-1]["admissible_actions"])
        text = users[-1].get("content", "") if users else ""
        if not isinstance(text, str):  # content parts
            text = "".join(part.get("text", "") for part in text if isinstance(part, dict))
    else:
        text = str(prompt)
    matches = list(_LISTING.finditer(text))
    if not matches:
        return []
    match = matches[-1]
    if match.group("flat") is not None:
        return [c for c in match.group("flat").split(", ") if c]
    return [re.sub(r"^\d+\. ", "", line) for line in match.group("numbered").splitlines() if line.strip()]


@dataclass
class Choice:
    """How one prompt's command was chosen.

    Attributes:
        candidates: the commands scored.
        scores: ``log p(command + end-of-turn | prompt)`` for each, at temperature 1 (per token with ``score="mean"``).
        probabilities: the choice distribution (``softmax(scores / T)``; one-hot for greedy).
        index: the chosen candidate.
    """

    candidates: list[str]
    scores: list[float]
    probabilities: list[float]
    index: int

    @property
    def command(self) -> str:
        """The chosen command."""
        return self.candidates[self.index]

    @property
    def choice_logprob(self) -> float:
        """log of the probability with which the command was chosen (the constrained policy's logprob)."""
        p = self.probabilities[self.index]
        return math.log(p) if p > 0 else float("-inf")


class ChoiceBackend:
    """A generation backend that answers each prompt with one admissible command, chosen by likelihood.

    Args:
        backend: a :class:`~rla_train.backends.hf.TransformersBackend` (its model and tokenizer are used,
            and stay live: training the model changes the choices).
        temperature: the choice temperature; None (default) takes ``sampling.temperature`` of each call.
            0 = greedy (argmax of the scores).
        max_batch_tokens: bounds one forward pass (rows x padded length), to bound memory.
        method: how candidates are scored, all giving the same numbers up to float rounding:
            ``"packed"`` (default): one row per prompt, holding the prompt then every candidate, with a block
            attention mask that lets each candidate see the prompt and itself only (on CPU, 14 ms per prompt of
            the CPU default: 222 prompt tokens, 24 candidates);
            ``"cache"``: run each prompt once, then its candidates as rows on a copy of its KV cache (26 ms);
            ``"full"``: one prompt + candidate row per candidate, from scratch (the reference).
        fallback: the command for a prompt that lists no candidates (default ``"look"``).
        score: ``"sum"`` (default: ``log p(command + end-of-turn | prompt)``) or ``"mean"`` (that divided by
            the number of tokens). A barely trained model pays for every token of a long command
            (``take creditcard 1 from diningtable 1`` is ~14 tokens, ``go to sofa 1`` 5), so with ``"sum"``
            it almost never picks one even when it ranks its verb first; ``"mean"`` removes that bias.

    Attributes:
        last_choices: one :class:`Choice` per prompt of the latest :meth:`generate` call.
    """

    name = "choice"

    def __init__(self, backend, temperature: float | None = None, *, max_batch_tokens: int = 8_192,
                 method: str = "packed", fallback: str = "look", score: str = "sum"):
        if not (hasattr(backend, "model") and hasattr(backend, "tokenizer") and hasattr(backend, "render")):
            raise TypeError("ChoiceBackend needs a TransformersBackend (model + tokenizer), "
                            f"got {type(backend).__name__}")
        if temperature is not None and not temperature >= 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy) or None (from sampling), got {temperature!r}")
        if method not in SCORING_METHODS:
            raise ValueError(f"method must be one of {SCORING_METHODS}, got {method!r}")
        if score not in SCORE_REDUCTIONS:
            raise ValueError(f"score must be one of {SCORE_REDUCTIONS}, got {score!r}")
        if type(max_batch_tokens) is not int or max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be an int >= 1, got {max_batch_tokens!r}")
        self.backend, self.temperature = backend, temperature
        self.max_batch_tokens, self.method, self.fallback, self.score = max_batch_tokens, method, fallback, score
        vocab = backend.tokenizer.get_vocab()
        end = vocab.get("<|im_end|>", backend.tokenizer.eos_token_id)
        if end is None:
            raise ValueError("the tokenizer has neither <|im_end|> nor an eos token to end a command with")
        self.end_id = int(end)
        self.last_choices: list[Choice] = []
        self.forward_passes = 0
        self._command_ids: dict[str, tuple[int, ...]] = {}

    # ------------------------------------------------------------------------------------ interface
    def render(self, prompt: Prompt) -> str:
        """The text the model sees (see the wrapped backend)."""
        return self.backend.render(prompt)

    def close(self) -> None:
        """Close the wrapped backend."""
        self.backend.close()

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt with ``n`` chosen commands (candidates read from each prompt)."""
        prompts = check_prompts(prompts, n)
        return self.choose(prompts, [admissible_from_prompt(p) for p in prompts], n=n, sampling=sampling)

    def choose(self, prompts: Sequence[Prompt], candidates: Sequence[Sequence[str]], n: int = 1,
               sampling: SamplingParams | None = None) -> list[Generation]:
        """Like :meth:`generate`, with each prompt's candidate commands given explicitly."""
        import torch

        prompts = check_prompts(prompts, n)
        if len(candidates) != len(prompts):
            raise ValueError(f"choose() needs one candidate list per prompt: {len(prompts)} prompts, "
                             f"{len(candidates)} candidate lists")
        sampling = sampling or SamplingParams()
        temperature = sampling.temperature if self.temperature is None else self.temperature
        encoded = [self.backend.encode(prompt) for prompt in prompts]
        candidates = [list(dict.fromkeys(c)) or [self.fallback] for c in candidates]  # unique, in order
        tokens = [[self.command_ids(c) for c in cs] for cs in candidates]
        token_logprobs = self.unique_token_logprobs([ids for _, ids in encoded], tokens)
        generator = torch.Generator().manual_seed(sampling.seed) if sampling.seed is not None else None
        generations, self.last_choices = [], []
        for (text, prompt_ids), commands, ids, logprobs in zip(encoded, candidates, tokens, token_logprobs):
            scores = torch.tensor([sum(lp) / (len(lp) if self.score == "mean" else 1) for lp in logprobs],
                                  dtype=torch.float64)
            if temperature == 0:
                probabilities = torch.zeros_like(scores)
                probabilities[int(torch.argmax(scores))] = 1.0
            else:
                probabilities = torch.softmax(scores / temperature, dim=0)
            picks = torch.multinomial(probabilities, n, replacement=True, generator=generator).tolist()
            choice = Choice(commands, scores.tolist(), probabilities.tolist(), picks[0])
            self.last_choices.append(choice)
            choice_logprobs = torch.log(probabilities).tolist()  # -inf where greedy ruled a candidate out
            samples = [Sample(text=commands[k], token_ids=list(ids[k]), logprobs=list(logprobs[k]),
                              finish_reason="stop", alternatives=[list(c) for c in ids],
                              choice_logprobs=list(choice_logprobs)) for k in picks]
            generations.append(Generation(prompt=text, prompt_ids=prompt_ids, samples=samples))
        return generations

    # ------------------------------------------------------------------------------------ scoring
    def command_ids(self, command: str) -> list[int]:
        """A command's token ids as the model would generate them: its tokens as plain text, then end-of-turn.

        A command comes from the env: a control-token string in it (``<|im_end|>``) is encoded as text,
        so the only end-of-turn token is the one appended here. Each command is tokenized once (a fresh list is
        returned every call; at most :data:`COMMAND_IDS_CACHE` commands are kept).
        """
        ids = self._command_ids.get(command)
        if ids is None:
            if len(self._command_ids) >= COMMAND_IDS_CACHE:
                self._command_ids.clear()
            ids = self._command_ids[command] = (*text_token_ids(self.backend.tokenizer, command), self.end_id)
        return list(ids)

    def unique_token_logprobs(self, prompt_ids: Sequence[list[int]],
                              candidate_ids: Sequence[Sequence[list[int]]]) -> list[list[list[float]]]:
        """:meth:`token_logprobs`, scoring each distinct (prompt, candidates) pair once (the same numbers)."""
        return score_each_state_once(prompt_ids, candidate_ids, self.token_logprobs)

    def token_logprobs(self, prompt_ids: Sequence[list[int]],
                       candidate_ids: Sequence[Sequence[list[int]]]) -> list[list[list[float]]]:
        """Per-token log-probabilities (temperature 1) of every candidate token list given its prompt's ids."""
        import torch

        model = self.backend.model
        rows = [(p, c) for p, cs in enumerate(candidate_ids) for c in range(len(cs))]
        flat: list[list[float]] = []
        with eval_mode(model), torch.inference_mode():
            if self.method == "packed":
                lengths = [len(p) + sum(map(len, cs)) for p, cs in zip(prompt_ids, candidate_ids)]
                for chunk in self.row_chunks(lengths):
                    flat.extend(self._packed_logprobs([prompt_ids[p] for p in chunk],
                                                      [candidate_ids[p] for p in chunk]))
            elif self.method == "cache":
                for group in self._prompt_groups(prompt_ids, candidate_ids):
                    flat.extend(self._cached_logprobs(group, prompt_ids, candidate_ids))
            else:
                pairs = [(prompt_ids[p], candidate_ids[p][c]) for p, c in rows]
                for chunk in self.row_chunks([len(a) + len(b) for a, b in pairs]):
                    flat.extend(self._full_logprobs([pairs[i] for i in chunk]))
        out, index = [[] for _ in candidate_ids], 0
        for p, _ in rows:
            out[p].append(flat[index])
            index += 1
        return out

    def row_chunks(self, lengths: list[int]) -> list[list[int]]:
        """Consecutive row indices grouped so that rows x longest row stays within ``max_batch_tokens``."""
        chunks, current, width = [], [], 0
        for i, length in enumerate(lengths):
            if current and (len(current) + 1) * max(width, length) > self.max_batch_tokens:
                chunks.append(current)
                current, width = [], 0
            current.append(i)
            width = max(width, length)
        return chunks + ([current] if current else [])

    def _prompt_groups(self, prompt_ids, candidate_ids) -> list[list[int]]:
        """Prompts grouped so that the candidate rows of a group (over prompt + candidate) fit the budget."""
        cost = [len(cs) * (len(prompt_ids[p]) + max(map(len, cs))) for p, cs in enumerate(candidate_ids)]
        groups, current, total = [], [], 0
        for p, c in enumerate(cost):
            if current and total + c > self.max_batch_tokens:
                groups.append(current)
                current, total = [], 0
            current.append(p)
            total += c
        return groups + ([current] if current else [])

    def _packed_logprobs(self, prompts: list[list[int]], candidates: list[list[list[int]]]) -> list[list[float]]:
        """One forward pass, one row per prompt: the prompt, then all its candidates side by side."""
        return [tokens.tolist() for row in self.packed_token_logprobs(prompts, candidates) for tokens in row]

    def packed_token_logprobs(self, prompts: Sequence[list[int]], candidates: Sequence[Sequence[list[int]]]):
        """Per-token log-probabilities of every candidate, one packed forward pass, as differentiable tensors.

        One row per prompt holds the prompt, then all its candidates side by side; every candidate token
        sees the prompt and the earlier tokens of its own candidate (a block mask), and is placed at the
        positions it would have right after the prompt, so each candidate scores exactly as if it followed
        the prompt alone. Runs in the caller's grad mode and the model's current mode (train or eval): the
        listwise warm start (:func:`rla_train.cotrainer.warm_start.choice_sft`) trains through it.

        Returns:
            for each prompt, one 1-D float tensor per candidate (``len(tokens)`` log-probabilities).
        """
        import torch

        model, pad = self.backend.model, self.backend.pad_id
        width = max(len(p) + sum(map(len, cs)) for p, cs in zip(prompts, candidates))
        # built as lists, one tensor each at the end: per-candidate tensors and slice copies cost more than the rows
        ids, positions, segments = [], [], []  # segments: -1 pad, 0 prompt, j + 1 candidate j
        where, targets, owners = [], [], []  # per candidate token: the predicting position, the token, its row
        for row, (prompt, cands) in enumerate(zip(prompts, candidates)):
            row_ids, row_positions, row_segments = list(prompt), list(range(len(prompt))), [0] * len(prompt)
            at = len(prompt)
            for j, tokens in enumerate(cands):
                row_ids.extend(tokens)
                row_positions.extend(range(len(prompt), len(prompt) + len(tokens)))
                row_segments.extend([j + 1] * len(tokens))
                # token 0 is predicted by the prompt's last position, token t > 0 by the one before it
                where.extend([len(prompt) - 1] + list(range(at, at + len(tokens) - 1)))
                targets.extend(tokens)
                owners.extend([row] * len(tokens))
                at += len(tokens)
            padding = width - at
            ids.append(row_ids + [pad] * padding)
            positions.append(row_positions + [0] * padding)
            segments.append(row_segments + [-1] * padding)
        ids, positions = torch.tensor(ids, dtype=torch.long), torch.tensor(positions, dtype=torch.long)
        segments = torch.tensor(segments, dtype=torch.long)
        query, key = segments.unsqueeze(2), segments.unsqueeze(1)
        causal = torch.ones(width, width, dtype=torch.bool).tril()
        allowed = causal & (key >= 0) & ((key == 0) | (key == query))
        allowed |= torch.eye(width, dtype=torch.bool)  # padding rows attend to themselves (no all-masked rows)
        dtype = next(model.parameters()).dtype
        mask = torch.where(allowed, torch.tensor(0, dtype=dtype), torch.tensor(torch.finfo(dtype).min, dtype=dtype))
        mask = mask.unsqueeze(1)
        device = model.device
        # the decoder's hidden states, then the output head on the scored positions only (not rows x width x vocab)
        hidden = decoder_of(model)(input_ids=ids.to(device), attention_mask=mask.to(device),
                                  position_ids=positions.to(device), use_cache=False).last_hidden_state
        self.forward_passes += 1
        picked = hidden[torch.tensor(owners, device=device), torch.tensor(where, device=device)]
        logprobs = torch.log_softmax(model.get_output_embeddings()(picked).float(), dim=-1)
        flat = logprobs.gather(1, torch.tensor(targets, device=device).unsqueeze(1)).squeeze(1)
        sizes = [len(tokens) for cands in candidates for tokens in cands]
        pieces, result, index = flat.split(sizes), [], 0
        for cands in candidates:
            result.append(list(pieces[index:index + len(cands)]))
            index += len(cands)
        return result

    def _cached_logprobs(self, group: list[int], prompt_ids, candidate_ids) -> list[list[float]]:
        """Run the group's prompts once (left-padded), then all their candidates on the shared KV cache."""
        import torch
        from transformers import DynamicCache

        model, pad = self.backend.model, self.backend.pad_id
        device = model.device
        prompts = [prompt_ids[p] for p in group]
        width = max(map(len, prompts))
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, tokens in enumerate(prompts):
            ids[row, width - len(tokens):] = torch.tensor(tokens)
            mask[row, width - len(tokens):] = 1
        positions = (mask.cumsum(1) - 1).clamp(min=0)
        out = model(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                    use_cache=True, logits_to_keep=1)
        self.forward_passes += 1
        first = torch.log_softmax(out.logits[:, -1].float(), dim=-1)  # predicts each candidate's first token
        cache = out.cache
        layers = [(layer.keys, layer.values) for layer in cache.layers]
        rows = [(g, c) for g, p in enumerate(group) for c in range(len(candidate_ids[p]))]
        length = max(len(candidate_ids[group[g]][c]) for g, c in rows)
        cand = torch.full((len(rows), length), pad, dtype=torch.long)
        cand_mask = torch.zeros((len(rows), length), dtype=torch.long)
        for r, (g, c) in enumerate(rows):
            tokens = candidate_ids[group[g]][c]
            cand[r, :len(tokens)] = torch.tensor(tokens)
            cand_mask[r, :len(tokens)] = 1
        select = torch.tensor([g for g, _ in rows], device=device)
        expanded = DynamicCache(ddp_cache_data=[(k[select], v[select]) for k, v in layers], config=model.config)
        lengths = mask.sum(1)[select.cpu()]
        cand_positions = lengths.unsqueeze(1) + torch.arange(length).unsqueeze(0)
        full_mask = torch.cat([mask[select.cpu()], cand_mask], 1)
        logits = model(input_ids=cand.to(device), attention_mask=full_mask.to(device),
                       position_ids=cand_positions.to(device), cache=expanded, use_cache=True).logits
        self.forward_passes += 1
        # logits[r, t] predicts candidate token t + 1; the first token comes from the prompt's last logits
        logprobs = torch.log_softmax(logits[:, :-1].float(), dim=-1) if length > 1 else None
        result = []
        for r, (g, c) in enumerate(rows):
            tokens = candidate_ids[group[g]][c]
            values = [float(first[g, tokens[0]])]
            if len(tokens) > 1:
                rest = logprobs[r, :len(tokens) - 1].gather(1, torch.tensor(tokens[1:], device=device).unsqueeze(1))
                values.extend(rest.squeeze(1).tolist())
            result.append(values)
        return result

    def _full_logprobs(self, pairs: list[tuple[list[int], list[int]]]) -> list[list[float]]:
        """One right-padded forward pass over prompt + candidate rows; per-token candidate logprobs."""
        import torch

        model, pad = self.backend.model, self.backend.pad_id
        width = max(len(p) + len(c) for p, c in pairs)
        ids = torch.full((len(pairs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(pairs), width), dtype=torch.long)
        for row, (p, c) in enumerate(pairs):
            ids[row, :len(p) + len(c)] = torch.tensor(p + c)
            mask[row, :len(p) + len(c)] = 1
        logits = model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device)).logits
        self.forward_passes += 1
        result = []
        for row, (p, c) in enumerate(pairs):
            logprobs = torch.log_softmax(logits[row, len(p) - 1:len(p) + len(c) - 1].float(), dim=-1)
            targets = torch.tensor(c, device=logprobs.device).unsqueeze(1)
            result.append(logprobs.gather(1, targets).squeeze(1).tolist())
        return result
