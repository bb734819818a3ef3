"""ScriptedBackend: answers from a function or a list, instantly — for tests, demos and overhead benchmarks.

It implements the full :class:`~rla_train.backends.base.GenerationBackend` interface without a model:
token ids are the UTF-8 bytes of the text (so ids, text and logprobs always line up) and every logprob
is 0.0. It counts its calls, so a test can check that a rollout engine batches::

    backend = ScriptedBackend(lambda prompt: "look")
    ...
    assert backend.batch_sizes == [16, 16, 12, ...]   # one call per turn
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rla_train.backends.base import Generation, Prompt, Sample, SamplingParams, check_prompts, render_plain

__all__ = ["ScriptedBackend"]


class ScriptedBackend:
    """A backend whose answers come from ``respond`` (a function of the prompt text) or a cycled list.

    Args:
        respond: ``respond(prompt_text) -> str``, or a sequence of answers used in turn (cycled).
        name: the backend's name in reports.

    Attributes:
        batch_sizes: the number of prompts in each ``generate`` call, in order.
        prompts_seen: every rendered prompt, in order.
    """

    def __init__(self, respond: Callable[[str], str] | Sequence[str], *, name: str = "scripted"):
        if callable(respond):
            self._respond = respond
        else:
            answers = list(respond)
            if not answers or not all(isinstance(a, str) for a in answers):
                raise ValueError("respond must be a function prompt -> str or a non-empty list of strings")
            self._answers, self._next = answers, 0
            self._respond = self._cycle
        self.name = name
        self.batch_sizes: list[int] = []
        self.prompts_seen: list[str] = []

    def _cycle(self, prompt: str) -> str:
        answer = self._answers[self._next % len(self._answers)]
        self._next += 1
        return answer

    def render(self, prompt: Prompt) -> str:
        """Chats as ``role: content`` lines; text as is."""
        return render_plain(prompt)

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[Generation]:
        """One generation per prompt with ``n`` answers from ``respond`` (cut at stop strings)."""
        prompts = check_prompts(prompts, n)
        sampling = sampling or SamplingParams()
        self.batch_sizes.append(len(prompts))
        generations = []
        for prompt in prompts:
            text = self.render(prompt)
            self.prompts_seen.append(text)
            samples = [self._sample(self._respond(text), sampling) for _ in range(n)]
            generations.append(Generation(prompt=text, prompt_ids=list(text.encode()), samples=samples))
        return generations

    @staticmethod
    def _sample(answer: str, sampling: SamplingParams) -> Sample:
        if not isinstance(answer, str):
            raise TypeError(f"respond() must return text, got {type(answer).__name__}")
        finish = "stop"
        for stop in sampling.stop:
            if stop in answer:
                answer = answer[: answer.index(stop)]
        ids = list(answer.encode())
        if len(ids) > sampling.max_new_tokens:
            ids, finish = ids[: sampling.max_new_tokens], "length"
            answer = bytes(ids).decode(errors="ignore")
        return Sample(text=answer, token_ids=ids, logprobs=[0.0] * len(ids), finish_reason=finish)

    def close(self) -> None:
        """Nothing to release."""
