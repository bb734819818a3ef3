"""The generation-backend interface: prompts or chats in, n samples with text, token ids and logprobs out.

Every backend (transformers, vLLM, any OpenAI-compatible server, the scripted one used in tests and
benchmarks) implements :class:`GenerationBackend`::

    backend = make_backend("transformers", model="path/to/model")
    [generation] = backend.generate([[{"role": "user", "content": "Hi"}]], n=2,
                                    sampling=SamplingParams(max_new_tokens=32, temperature=0.7))
    generation.prompt_ids, generation.samples[0].text, generation.samples[0].token_ids, generation.samples[0].logprobs

A prompt is either plain text (sent as is) or a chat (a list of ``{"role", "content"}`` messages), which the
backend renders with the model's chat template and a generation prompt. ``generate`` takes the whole batch
in one call: the rollout engine issues one call per turn for all live episodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union, runtime_checkable

from rla_envs.core.errors import RlaError

__all__ = ["Chat", "Prompt", "SamplingParams", "Sample", "Generation", "GenerationBackend", "BackendError",
           "is_chat", "check_prompts", "render_plain"]

Chat = list[Mapping[str, Any]]
"""A conversation: ``[{"role": "system" | "user" | "assistant", "content": str | list[content parts]}, ...]``."""

Prompt = Union[str, Chat]
"""Plain text, or a chat rendered by the backend with the model's chat template."""

FINISH_REASONS = ("stop", "length")


class BackendError(RlaError, RuntimeError):
    """A generation backend that could not answer (e.g. an HTTP server that kept failing); says why."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample completions.

    Attributes:
        max_new_tokens: the most tokens generated per sample.
        temperature: softmax temperature; 0 means greedy decoding (then ``n`` samples are identical).
        top_p: nucleus sampling mass (1.0 = off).
        top_k: keep the k most likely tokens (0 = off).
        stop: strings that end a sample; the text is cut before the stop string (token ids and logprobs
            keep the tokens generated up to and including the one that completed it).
        seed: seed for this call's sampling (None = the backend's own stream).
    """

    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self):
        if type(self.max_new_tokens) is not int or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an int >= 1, got {self.max_new_tokens!r}")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if type(self.top_k) is not int or self.top_k < 0:
            raise ValueError(f"top_k must be an int >= 0 (0 = off), got {self.top_k!r}")
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        object.__setattr__(self, "stop", tuple(self.stop))
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"stop must be non-empty strings, got {self.stop!r}")

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy (temperature 0)."""
        return self.temperature == 0


@dataclass
class Sample:
    """One completion.

    Attributes:
        text: the decoded completion (special tokens removed, cut at a stop string).
        token_ids: the generated token ids, including the end-of-turn token when one was generated.
        logprobs: one log-probability per token in ``token_ids``, under the model's distribution at the
            sampling temperature (temperature 1 for greedy decoding), before top-p/top-k truncation.
            Empty when the backend cannot report them (some OpenAI-compatible servers).
        finish_reason: ``"stop"`` (end-of-turn token or stop string) or ``"length"`` (max_new_tokens).
        alternatives: for a choice policy (:class:`~rla_train.backends.choice.ChoiceBackend`), the token ids of
            every candidate it chose among, ``token_ids`` being one of them (None for free text): what a
            policy-gradient update on the choice distribution needs.
        choice_logprobs: for a choice, the log-probability of choosing each of ``alternatives`` (in their
            order) at the temperature it was sampled at: the behaviour policy's choice distribution (None for
            free text).
    """

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str = "stop"
    alternatives: list[list[int]] | None = None
    choice_logprobs: list[float] | None = None


@dataclass
class Generation:
    """The samples for one prompt.

    Attributes:
        prompt: the prompt text the model saw (a chat rendered with its template).
        prompt_ids: the prompt's token ids (empty when the backend cannot report them).
        samples: ``n`` samples.
    """

    prompt: str
    prompt_ids: list[int]
    samples: list[Sample]


@runtime_checkable
class GenerationBackend(Protocol):
    """Generates completions for a batch of prompts in one call."""

    name: str

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt (in order), each with ``n`` samples."""

    def render(self, prompt: Prompt) -> str:
        """The text the model sees for ``prompt`` (a chat through the chat template, with generation prompt)."""

    def close(self) -> None:
        """Release the model / connections."""


def is_chat(prompt: Any) -> bool:
    """Whether ``prompt`` is a chat (a list of role/content messages) rather than plain text."""
    return isinstance(prompt, (list, tuple)) and all(isinstance(m, Mapping) and "role" in m for m in prompt)


def check_prompts(prompts: Sequence[Prompt], n: int) -> list[Prompt]:
    """The prompts as a list, after checking each is text or a chat and ``n >= 1``; a clear error otherwise."""
    if isinstance(prompts, (str, bytes)) or is_chat(prompts) and prompts:
        raise TypeError("generate() takes a batch: pass a list of prompts (e.g. [prompt] for one)")
    prompts = list(prompts)
    if type(n) is not int or n < 1:
        raise ValueError(f"n (samples per prompt) must be an int >= 1, got {n!r}")
    for index, prompt in enumerate(prompts):
        if not isinstance(prompt, str) and not (is_chat(prompt) and prompt):
            raise TypeError(f"prompt {index} must be text or a non-empty chat (list of {{'role', 'content'}} "
                            f"dicts), got {type(prompt).__name__}: {str(prompt)[:80]!r}")
    return prompts


def render_plain(prompt: Prompt) -> str:
    """A prompt as plain text: text as is; a chat as ``role: content`` lines, then ``assistant: ``.

    For backends with no chat template of their own (scripted answers, reports of a remote server).

    A generation prompt ends with ``"assistant: "``, so the next turn's prompt extends prompt + completion.
    """
    if not is_chat(prompt):
        return prompt
    lines = []
    for message in prompt:
        content = message.get("content", "")
        if not isinstance(content, str):  # content parts: keep the text parts
            content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        lines.append(f"{message['role']}: {content}")
    return "\n".join(lines) + "\nassistant: "
