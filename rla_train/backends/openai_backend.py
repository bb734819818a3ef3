"""OpenAICompatibleBackend: generation through any OpenAI-compatible HTTP server (vLLM, SGLang, hosted APIs).

Chats go to ``POST {base_url}/chat/completions`` (the server applies the model's chat template), plain text
to ``POST {base_url}/completions``. One request per prompt asks for all ``n`` samples; the requests of one
``generate`` call run concurrently (at most ``max_concurrency`` at a time) and come back in prompt order::

    backend = OpenAICompatibleBackend("http://localhost:8000/v1", "Qwen/Qwen2.5-1.5B-Instruct")
    generations = backend.generate(chats, n=4, sampling=SamplingParams(temperature=0.7, max_new_tokens=64))

Logprobs are filled when the server returns them; token ids only when it reports them (vLLM's
``return_tokens_as_token_ids`` gives tokens as ``"token_id:123"``, and ``return_token_ids`` adds
``token_ids`` and ``prompt_token_ids``; pass either through ``extra_body``). Server errors (5xx, 429) and
dropped connections are retried ``max_retries`` times, then raise :class:`BackendError`.

**Control tokens.** The server renders the chat and tokenizes it, usually with special-token strings
parsed, and its tokenizer is not known here. So before sending, every control-token string in the messages
(:data:`~rla_train.backends.control_tokens.GENERIC_CONTROL_TOKENS`: ChatML / Llama 3 / Phi ``<|...|>``,
DeepSeek ``<｜...｜>``, ``<s>``, Gemma's turn markers, Mistral's ``[INST]`` ..., plus the strings given as
``control_tokens``) gets a zero-width space after its first character
(:func:`~rla_train.backends.control_tokens.neutralise_control_tokens`): a policy action or env observation
holding ``<|im_end|><|im_start|>assistant`` reaches the model as text, never as a turn boundary. Messages
with no such string are sent unchanged. A plain-text prompt (``/completions``) is the caller's own and is
sent as is.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from rla_train.backends.base import (BackendError, Generation, Prompt, Sample, SamplingParams, check_prompts,
                                     is_chat, render_plain)
from rla_train.backends.control_tokens import GENERIC_CONTROL_TOKENS, neutralise_control_tokens

__all__ = ["OpenAICompatibleBackend"]

_TOKEN_ID_PREFIX = "token_id:"
_RETRY_STATUS = {429, 500, 502, 503, 504}


class OpenAICompatibleBackend:
    """Generates through an OpenAI-compatible server's ``/chat/completions`` and ``/completions`` endpoints.

    Args:
        base_url: the API root, e.g. ``"http://localhost:8000/v1"``.
        model: the model name the server serves.
        api_key: bearer token; default ``$OPENAI_API_KEY``; none is sent when neither is set (local servers).
        timeout_s: seconds per request.
        max_concurrency: the most requests in flight at once.
        max_retries: retries after a 5xx/429 answer or a connection error, before :class:`BackendError`.
        retry_backoff_s: wait before the first retry, doubled for each next one.
        extra_body: extra JSON fields sent with every request (e.g. ``{"top_k": 20}`` or vLLM's
            ``{"return_tokens_as_token_ids": True}``).
        control_tokens: the served model's control-token strings beyond the common formats', neutralised in
            chat messages too (see the module docstring).
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout_s: float = 120,
                 max_concurrency: int = 8, max_retries: int = 2, retry_backoff_s: float = 0.5,
                 extra_body: Mapping[str, Any] | None = None, control_tokens: Sequence[str] = ()):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL such as 'http://localhost:8000/v1', got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be the served model's name, got {model!r}")
        if type(max_concurrency) is not int or max_concurrency < 1:
            raise ValueError(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
        if type(max_retries) is not int or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self.base_url, self.model = base_url.rstrip("/"), model
        self.max_concurrency, self.max_retries, self.retry_backoff_s = max_concurrency, max_retries, retry_backoff_s
        self.extra_body = dict(extra_body or {})
        if isinstance(control_tokens, str) or not all(isinstance(t, str) and len(t) > 1 for t in control_tokens):
            raise ValueError(f"control_tokens must be a list of strings of 2 or more characters (the served "
                             f"model's special tokens, e.g. ['<|eot_id|>']), got {control_tokens!r}")
        extra = "|".join(re.escape(t) for t in sorted(set(control_tokens), key=len, reverse=True))
        self.control_tokens = re.compile(f"{extra}|{GENERIC_CONTROL_TOKENS.pattern}" if extra
                                         else GENERIC_CONTROL_TOKENS.pattern)
        api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers, timeout=timeout_s,
                                    limits=httpx.Limits(max_connections=max_concurrency))

    def render(self, prompt: Prompt) -> str:
        """A readable rendering for reports: chats as ``role: content`` lines (the server applies the template)."""
        return render_plain(prompt)

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt (in order), each with ``n`` samples; requests run concurrently."""
        prompts = check_prompts(prompts, n)
        sampling = sampling or SamplingParams()
        if len(prompts) <= 1 or self.max_concurrency == 1:
            return [self._generate_one(prompt, n, sampling) for prompt in prompts]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(prompts))) as pool:
            return list(pool.map(lambda prompt: self._generate_one(prompt, n, sampling), prompts))

    def _payload(self, prompt: Prompt, n: int, sampling: SamplingParams) -> tuple[str, dict]:
        """(endpoint, JSON body) for one prompt."""
        body: dict[str, Any] = {"model": self.model, "n": n, "max_tokens": sampling.max_new_tokens,
                                "temperature": sampling.temperature, "top_p": sampling.top_p}
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if sampling.top_k:  # not in OpenAI's API; vLLM and SGLang accept it
            body["top_k"] = sampling.top_k
        if is_chat(prompt):
            endpoint = "/chat/completions"
            messages = neutralise_control_tokens([dict(message) for message in prompt], self.control_tokens)
            body.update(messages=messages, logprobs=True)
        else:
            endpoint = "/completions"
            body.update(prompt=prompt, logprobs=1)
        body.update(self.extra_body)
        return endpoint, body

    def _generate_one(self, prompt: Prompt, n: int, sampling: SamplingParams) -> Generation:
        """Send one prompt's request and parse its ``n`` choices."""
        endpoint, body = self._payload(prompt, n, sampling)
        url = self.base_url + endpoint
        response = self._post(url, body)
        choices = response.get("choices") if isinstance(response, dict) else None
        if not isinstance(choices, list) or len(choices) != n:
            got = len(choices) if isinstance(choices, list) else "no"
            raise BackendError(f"POST {url} answered with {got} choices where {n} were asked for; does the server "
                               f"support n > 1? Response starts: {json.dumps(response)[:300]}")
        choices = sorted(choices, key=lambda choice: choice.get("index", 0))
        samples = [_parse_choice(choice, chat=is_chat(prompt), stop=sampling.stop) for choice in choices]
        prompt_ids = response.get("prompt_token_ids") or choices[0].get("prompt_token_ids") or []
        return Generation(prompt=self.render(prompt), prompt_ids=list(prompt_ids), samples=samples)

    def _post(self, url: str, body: dict) -> dict:
        """POST ``body`` as JSON and return the decoded answer, retrying server errors; BackendError on failure."""
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = self._client.post(url, json=body)
            except httpx.TransportError as error:
                if last:
                    raise BackendError(f"POST {url} failed after {attempt + 1} attempts: {type(error).__name__}: "
                                       f"{error}; is the server running at {self.base_url}?") from error
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError as error:
                        raise BackendError(f"POST {url} answered {response.status_code} with a body that is not "
                                           f"JSON: {response.text[:300]!r}") from error
                if last or response.status_code not in _RETRY_STATUS:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise BackendError(f"POST {url} answered HTTP {response.status_code}{tries}: "
                                       f"{response.text[:300]!r}; check the server log, the model name "
                                       f"({self.model!r}) and the request fields")
            time.sleep(self.retry_backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()


def _parse_choice(choice: Mapping[str, Any], *, chat: bool, stop: Sequence[str]) -> Sample:
    """A Sample from one chat or completion choice (text, finish reason, logprobs, token ids if reported)."""
    if chat:
        text = (choice.get("message") or {}).get("content") or ""
        entries = ((choice.get("logprobs") or {}).get("content")) or []
        tokens = [entry.get("token", "") for entry in entries]
        logprobs = [float(entry["logprob"]) for entry in entries if entry.get("logprob") is not None]
    else:
        text = choice.get("text") or ""
        block = choice.get("logprobs") or {}
        tokens = list(block.get("tokens") or [])
        logprobs = [float(value) for value in block.get("token_logprobs") or [] if value is not None]
    for string in stop:  # servers cut already; this guards ones that do not
        if string in text:
            text = text[:text.index(string)]
    token_ids = list(choice.get("token_ids") or [])
    if not token_ids and tokens and all(isinstance(t, str) and t.startswith(_TOKEN_ID_PREFIX) for t in tokens):
        token_ids = [int(t[len(_TOKEN_ID_PREFIX):]) for t in tokens]
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
    return Sample(text=text, token_ids=token_ids, logprobs=logprobs, finish_reason=finish)
