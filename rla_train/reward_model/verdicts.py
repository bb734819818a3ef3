"""A judge that answers with a verdict chosen by likelihood: for tiny reward models that cannot yet write one.

:class:`VerdictChoiceBackend` answers every judge prompt with ``\\boxed{+1}`` (good step) or ``\\boxed{-1}``
(bad step), ``n`` samples per prompt (the m judgments), drawn from the model's preference between them.

**Only the token where the two verdicts part decides.** Both verdicts tokenize as a shared prefix, then
one token that differs, then formatting: with the tiny tokenizer ``\\boxed{`` then ``+`` / ``-``; a
tokenizer that merges punctuation (Qwen's pre-tokenizer keeps ``{-`` and ``{+`` together) parts one token
earlier, at ``{+`` / ``{-`` or ``{`` / ``{-`` (whichever its vocabulary holds). The choice is
``softmax([log p(good token | prompt + prefix), log p(bad token | prompt + prefix)] / T)``: a comparison
between two continuations of equal length (one token each) in the same context. Comparing the verdicts'
*summed* log-likelihoods instead (what this class did before) is biased by length: ``\\boxed{1}`` is one
token shorter than ``\\boxed{-1}``, so an untrained model, paying ~log(vocabulary) nats per token, "preferred"
+1 on every step (~7 nats with a 1,024-token vocabulary); the tokens after the parting one are each
conditioned on a different verdict, so they are noise for an untrained model and formatting for a trained one.

**What the reward model trains on is what decided.** Each returned :class:`~rla_train.backends.base.Generation`
has the prompt's ids followed by the shared prefix as ``prompt_ids``; each sample's ``token_ids`` is the one
parting token chosen, its ``logprobs`` that token's log-probability, and its ``alternatives`` the two parting
tokens. A :class:`~rla_train.cotrainer.policy_update.SampleTrainer` built with ``choice_logprob=True`` therefore trains
exactly ``log softmax`` over the two verdicts, the distribution the verdicts were drawn from (at
temperature 1); without it, it trains the parting token's log-probability over the whole vocabulary. The
sample's ``text`` is the whole verdict, which :func:`~rla_train.reward_model.parsing.parse_verdict` reads.

**The probability of "good" is kept** per judged step: each Generation is a :class:`VerdictGeneration` whose
``good_probability`` is the chance that a vote on that step is +1 (so ``report.generations[t][i]
.good_probability`` after :meth:`RewardModel.judge`), and :attr:`VerdictChoiceBackend.last_choices` holds
one :class:`~rla_train.backends.choice.Choice` per prompt of the latest call. Paper-scale judges reason in text
instead (``reward_model.verdict_mode=text``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rla_train.backends.base import Generation, Prompt, Sample, SamplingParams, check_prompts
from rla_train.reward_model.parsing import parse_verdict

__all__ = ["VERDICTS", "VerdictChoiceBackend", "VerdictGeneration", "parting_tokens", "good_verdict_probability"]

VERDICTS = ("\\boxed{+1}", "\\boxed{-1}")
"""The two answers a choice judge picks from: good step, bad step (written with equal length on purpose)."""


@dataclass
class VerdictGeneration(Generation):
    """A :class:`~rla_train.backends.base.Generation` that also says how likely a vote on its step was +1.

    Attributes:
        good_probability: the probability with which each of the step's votes is +1 (the judge's
            continuous score of the step, e.g. for an AUC against step labels).
    """

    good_probability: float = 0.5


def parting_tokens(good_ids: Sequence[int], bad_ids: Sequence[int]) -> tuple[list[int], int, int]:
    """``(shared prefix, good verdict's parting token, bad verdict's parting token)`` of two token lists.

    The parting token is the first position where the lists differ:
    ``parting_tokens([62, 629, 93, 13, 19], [62, 629, 93, 15, 19]) == ([62, 629, 93], 13, 15)``.
    Raises ``ValueError`` when one list is a prefix of the other (no token tells them apart).
    """
    shared = 0
    while shared < min(len(good_ids), len(bad_ids)) and good_ids[shared] == bad_ids[shared]:
        shared += 1
    if shared == min(len(good_ids), len(bad_ids)):
        raise ValueError(f"the two verdicts' tokens {list(good_ids)} and {list(bad_ids)} never differ before one "
                         "of them ends; choose verdict strings that differ in a token (e.g. \\boxed{+1}, \\boxed{-1})")
    return list(good_ids[:shared]), int(good_ids[shared]), int(bad_ids[shared])


def good_verdict_probability(good_logprob: float, bad_logprob: float, temperature: float) -> float:
    """The probability of choosing the good verdict: ``softmax([good, bad] / T)[0] = sigmoid((good - bad) / T)``.

    Temperature 0 is greedy: 1.0 when ``good >= bad`` (a tie goes to the first verdict, as
    :class:`~rla_train.backends.choice.ChoiceBackend` breaks ties), else 0.0. For example
    ``good_verdict_probability(-6.0, -7.0, 1.0) = 1 / (1 + e^-1) = 0.7311`` and at ``T = 2``
    ``1 / (1 + e^-0.5) = 0.6225``.
    """
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature!r}")
    if temperature == 0:
        return 1.0 if good_logprob >= bad_logprob else 0.0
    margin = (good_logprob - bad_logprob) / temperature
    if margin >= 0:
        return 1.0 / (1.0 + math.exp(-margin))
    odds = math.exp(margin)
    return odds / (1.0 + odds)


class VerdictChoiceBackend:
    """Answers each prompt with one of ``verdicts``, chosen at the token where they part (see the module docstring).

    Args:
        choice_backend: a :class:`~rla_train.backends.choice.ChoiceBackend` over the reward model's
            TransformersBackend (its scorer, tokenizer and end-of-turn token are used; its ``temperature``,
            when set, overrides each call's sampling temperature, as it does for the policy).
        verdicts: ``(good, bad)`` answer strings; they must parse as +1 and -1 and differ in a token.

    Attributes:
        prefix_ids: the tokens both verdicts start with (part of every Generation's ``prompt_ids``).
        good_token, bad_token: the parting tokens.
        last_choices: one :class:`~rla_train.backends.choice.Choice` per prompt of the latest :meth:`generate`
            call (``scores``: the two parting tokens' log-probabilities; ``probabilities``: the choice's).
    """

    name = "verdict-choice"

    def __init__(self, choice_backend, verdicts: Sequence[str] = VERDICTS):
        if not callable(getattr(choice_backend, "token_logprobs", None)) or not hasattr(choice_backend, "end_id"):
            raise TypeError(f"VerdictChoiceBackend needs a ChoiceBackend, got {type(choice_backend).__name__}")
        verdicts = tuple(verdicts)
        if len(verdicts) != 2 or [parse_verdict(v) for v in verdicts] != [1, -1]:
            raise ValueError(f"verdicts must be (good, bad) answers that parse as +1 and -1, e.g. {VERDICTS}; "
                             f"got {verdicts!r}")
        self.choice_backend, self.verdicts = choice_backend, verdicts
        tokenizer = choice_backend.backend.tokenizer
        ids = [list(tokenizer(v, add_special_tokens=False)["input_ids"]) + [choice_backend.end_id] for v in verdicts]
        self.prefix_ids, self.good_token, self.bad_token = parting_tokens(*ids)
        self.prefix_text = tokenizer.decode(self.prefix_ids)
        self.last_choices: list = []

    def render(self, prompt: Prompt) -> str:
        """The text the reward model sees before its verdict's shared prefix."""
        return self.choice_backend.render(prompt)

    def scored_inputs(self, prompts: Sequence[Prompt]) -> list[tuple[str, list[int]]]:
        """``(text, token ids)`` after which the parting token is scored: each prompt, then the shared prefix.

        A listwise warm start of the judge should train on these ids with candidates
        ``[[good_token], [bad_token]]``: exactly what :meth:`generate` scores.
        """
        encode = self.choice_backend.backend.encode
        return [(text + self.prefix_text, ids + self.prefix_ids) for text, ids in map(encode, prompts)]

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[VerdictGeneration]:
        """``n`` verdicts per prompt, sampled at ``sampling.temperature`` (0 = the likelier one)."""
        import torch

        from rla_train.backends.choice import Choice

        prompts = check_prompts(prompts, n)
        sampling = sampling or SamplingParams()
        override = getattr(self.choice_backend, "temperature", None)
        temperature = sampling.temperature if override is None else override
        inputs = self.scored_inputs(prompts)
        tokens = [[self.good_token], [self.bad_token]]
        scored = self.choice_backend.unique_token_logprobs([ids for _, ids in inputs], [tokens] * len(inputs))
        generator = torch.Generator().manual_seed(sampling.seed) if sampling.seed is not None else None
        generations, self.last_choices = [], []
        for (text, ids), ((good,), (bad,)) in zip(inputs, scored):
            p_good = good_verdict_probability(good, bad, temperature)
            picks = (torch.rand(n, generator=generator, dtype=torch.float64) >= p_good).long().tolist()  # 0 = good
            self.last_choices.append(Choice(list(self.verdicts), [good, bad], [p_good, 1.0 - p_good], picks[0]))
            choice_logprobs = [math.log(p) if p > 0 else float("-inf") for p in (p_good, 1.0 - p_good)]
            samples = [Sample(text=self.verdicts[k], token_ids=[tokens[k][0]], logprobs=[(good, bad)[k]],
                              finish_reason="stop", alternatives=[list(t) for t in tokens],
                              choice_logprobs=choice_logprobs) for k in picks]
            generations.append(VerdictGeneration(prompt=text, prompt_ids=list(ids), samples=samples,
                                                 good_probability=p_good))
        return generations

    def close(self) -> None:
        """Close the wrapped backend."""
        self.choice_backend.close()
