"""VLLMBackend: fast GPU generation with an in-process ``vllm.LLM`` (the ``rla[vllm]`` extra).

Chats are rendered with the model's chat template (the tokenizer of ``llm.get_tokenizer()``) and sent as
token ids, so the prompt ids the backend reports are exactly what the model saw; as in the transformers
backend, a control-token string inside a message is encoded as text
(:func:`~rla_train.backends.control_tokens.chat_token_ids`), so only the template yields control tokens::

    backend = VLLMBackend("Qwen/Qwen2.5-1.5B-Instruct", gpu_memory_utilization=0.5)
    generations = backend.generate(chats, n=8, sampling=SamplingParams(temperature=1.0, max_new_tokens=256))

The engine is built with ``logprobs_mode="processed_logprobs"`` unless ``llm_kwargs`` says otherwise, so a
sample's logprobs are ``log_softmax(logits / T)`` like the other backends' (vLLM's default,
``raw_logprobs``, ignores the temperature). With top-p/top-k truncation on, vLLM renormalises over the
kept tokens, which the transformers backend does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rla_envs.core.errors import MissingDependency
from rla_train.backends.base import Generation, Prompt, Sample, SamplingParams, check_prompts, is_chat
from rla_train.backends.control_tokens import chat_token_ids

__all__ = ["VLLMBackend", "import_vllm"]

END_OF_TURN = "<|im_end|>"


def import_vllm():
    """The ``vllm`` module, or :class:`MissingDependency` naming ``pip install "rla[vllm]"``."""
    try:
        import vllm
    except ImportError as error:
        raise MissingDependency.for_extra("vllm", "vllm") from error
    return vllm


class VLLMBackend:
    """Generates with ``vllm.LLM`` (one ``llm.generate`` call per batch; vLLM schedules it).

    Args:
        model: a model path / hub id (``llm_kwargs`` go to ``vllm.LLM``), or an existing ``vllm.LLM``.
        **llm_kwargs: e.g. ``gpu_memory_utilization``, ``max_model_len``, ``dtype``, ``enable_prefix_caching``.

    Attributes:
        llm: the ``vllm.LLM`` engine.
        tokenizer: its tokenizer.
    """

    name = "vllm"

    def __init__(self, model, **llm_kwargs: Any):
        self._vllm = import_vllm()
        if isinstance(model, str):
            llm_kwargs.setdefault("logprobs_mode", "processed_logprobs")
            self.llm = self._vllm.LLM(model=model, **llm_kwargs)
        elif callable(getattr(model, "generate", None)) and callable(getattr(model, "get_tokenizer", None)):
            if llm_kwargs:
                raise ValueError(f"llm_kwargs {sorted(llm_kwargs)} apply only when VLLMBackend builds the engine "
                                 "from a model path; pass them to vllm.LLM yourself")
            self.llm = model
        else:
            raise TypeError(f"model must be a model path or a vllm.LLM, got {type(model).__name__}")
        self.tokenizer = self.llm.get_tokenizer()
        end_of_turn = self.tokenizer.get_vocab().get(END_OF_TURN)
        self.stop_token_ids = [end_of_turn] if end_of_turn is not None else []

    def render(self, prompt: Prompt) -> str:
        """The text the model sees: a chat through the chat template with a generation prompt; text as is."""
        if not is_chat(prompt):
            return prompt
        return self.tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=False)

    def _inputs(self, prompt: Prompt):
        """What ``llm.generate`` takes: a chat's token ids (template control tokens only, no second BOS), else the text."""
        if not is_chat(prompt):
            return prompt
        return {"prompt_token_ids": chat_token_ids(self.tokenizer, prompt)}

    def sampling_params(self, sampling: SamplingParams, n: int, seed: int | None):
        """The ``vllm.SamplingParams`` for ``sampling`` with ``n`` samples and this prompt's ``seed``."""
        return self._vllm.SamplingParams(
            n=n, temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k or -1,
            max_tokens=sampling.max_new_tokens, stop=list(sampling.stop) or None,
            stop_token_ids=self.stop_token_ids or None, seed=seed, logprobs=0)

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt (in order) with ``n`` samples, from one ``llm.generate`` call."""
        prompts = check_prompts(prompts, n)
        sampling = sampling or SamplingParams()
        # vLLM seeds sample j of a request with seed + j; spacing prompts by n keeps every sample distinct
        params = [self.sampling_params(sampling, n, None if sampling.seed is None else sampling.seed + i * n)
                  for i in range(len(prompts))]
        outputs = self.llm.generate([self._inputs(p) for p in prompts], params, use_tqdm=False)
        if len(outputs) != len(prompts):
            raise RuntimeError(f"vllm returned {len(outputs)} outputs for {len(prompts)} prompts")
        return [Generation(prompt=self.render(prompt), prompt_ids=list(output.prompt_token_ids or []),
                           samples=[_sample(completion) for completion in
                                    sorted(output.outputs, key=lambda c: c.index)])
                for prompt, output in zip(prompts, outputs)]

    def close(self) -> None:
        """Drop the engine so its GPU memory can be freed."""
        self.llm = None


def _sample(completion) -> Sample:
    """A Sample from a vLLM ``CompletionOutput`` (logprobs: one ``{token_id: Logprob}`` dict per token)."""
    token_ids = list(completion.token_ids)
    logprobs = []
    for token_id, entry in zip(token_ids, completion.logprobs or []):
        logprobs.append(float(entry[token_id].logprob))
    finish = "length" if completion.finish_reason == "length" else "stop"
    return Sample(text=completion.text, token_ids=token_ids, logprobs=logprobs, finish_reason=finish)
