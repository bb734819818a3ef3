"""A judge that answers with a verdict chosen by likelihood: for tiny reward models that cannot yet write one.

:class:`VerdictChoiceBackend` wraps a :class:`~rla_train.policies.ChoiceBackend` and answers every judge prompt
with ``\\boxed{1}`` or ``\\boxed{-1}``, sampled from the softmax of their log-likelihoods (``n`` samples = the m
judgments). The answers parse like any judge's, and their token ids and logprobs are the tokens scored, so
the reward model trains on them like on free-text judgments. Paper-scale judges reason in text instead
(``reward_model.verdict_mode=text``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rla_train.backends.base import Generation, Prompt, SamplingParams

__all__ = ["VERDICTS", "VerdictChoiceBackend"]

VERDICTS = ("\\boxed{1}", "\\boxed{-1}")
"""The two answers a choice judge picks from: good step, bad step."""


class VerdictChoiceBackend:
    """Answers each prompt with one of :data:`VERDICTS`, chosen by likelihood (see the module docstring).

    Args:
        choice_backend: a ChoiceBackend over the reward model's TransformersBackend.
    """

    name = "verdict-choice"

    def __init__(self, choice_backend):
        if not callable(getattr(choice_backend, "choose", None)):
            raise TypeError(f"VerdictChoiceBackend needs a ChoiceBackend, got {type(choice_backend).__name__}")
        self.choice_backend = choice_backend

    def render(self, prompt: Prompt) -> str:
        """The text the reward model sees."""
        return self.choice_backend.render(prompt)

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[Generation]:
        """``n`` verdicts per prompt, sampled at ``sampling.temperature`` (0 = the likelier one)."""
        return self.choice_backend.choose(prompts, [list(VERDICTS)] * len(prompts), n=n, sampling=sampling)

    def close(self) -> None:
        """Close the wrapped backend."""
        self.choice_backend.close()
