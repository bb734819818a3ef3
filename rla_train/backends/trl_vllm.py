"""TRLVLLMBackend: rollouts from the vLLM engine TRL keeps in step with the weights being trained (``rla[vllm]``).

With ``GRPOConfig(use_vllm=True, vllm_mode="colocate" | "server")`` TRL's ``GRPOTrainer`` builds a
``trl.generation.vllm_generation.VLLMGeneration``: a vLLM engine in the training process (colocate) or a client
of ``trl vllm-serve`` (server), into which ``sync_weights()`` pushes the trainer's weights. This backend generates
with it, for the :class:`~rla_train.cotrainer.policy_update.SampleTrainer` that trains the policy (whose
``update`` calls ``sync_weights()``)::

    trainer = SampleTrainer(model, tokenizer, GRPOConfig(..., use_vllm=True, vllm_mode="colocate"), total_steps=200)
    backend = TRLVLLMBackend(trainer)
    generations = backend.generate(chats, n=8, sampling=SamplingParams(temperature=1.0, max_new_tokens=64))

Chats are rendered and encoded with the trainer's tokenizer exactly as
:class:`~rla_train.backends.hf.TransformersBackend` does, and sent to vLLM as token ids. A sample's logprobs are
vLLM's, after temperature scaling (TRL builds the engine with ``logprobs_mode="processed_logprobs"``; a server
must be started with ``--logprobs-mode processed_logprobs``); a token vLLM gave none for gets NaN, which the
trainer's importance-sampling correction treats as agreeing with the trainer.

Sampling settings are the ``VLLMGeneration``'s attributes (``temperature``, ``top_p``, ``top_k``,
``max_completion_length``, ``generation_kwargs``), set from each call's :class:`SamplingParams`. vLLM samples
from its own random stream: ``SamplingParams.seed`` is not used (one seed for the n copies of a prompt that TRL
sends in colocate mode would make them identical).
"""

from __future__ import annotations

from collections.abc import Sequence

from rla_train.backends.base import Generation, Prompt, Sample, SamplingParams, check_prompts
from rla_train.backends.hf import TransformersBackend

__all__ = ["TRLVLLMBackend"]


class TRLVLLMBackend:
    """Generates with a :class:`~rla_train.cotrainer.policy_update.SampleTrainer`'s ``vllm_generation``.

    Args:
        trainer: a ``SampleTrainer`` built with ``use_vllm=True``.

    Attributes:
        generation: the trainer's ``VLLMGeneration``.
        tokenizer: the trainer's tokenizer.
    """

    name = "vllm"

    def __init__(self, trainer):
        if not getattr(trainer.args, "use_vllm", False):
            raise ValueError("TRLVLLMBackend generates with the trainer's vLLM engine; build the trainer with "
                             "GRPOConfig(use_vllm=True, vllm_mode='colocate' or 'server')")
        self.trainer, self.generation = trainer, trainer.vllm_generation
        self.tokenizer = trainer.processing_class
        # the transformers backend's chat rendering and stop tokens, over the trained model (it never generates here)
        self.encoder = TransformersBackend(trainer.accelerator.unwrap_model(trainer.model), self.tokenizer)

    def render(self, prompt: Prompt) -> str:
        """The text the model sees: a chat through the chat template with a generation prompt; text as is."""
        return self.encoder.render(prompt)

    def generate(self, prompts: Sequence[Prompt], n: int = 1,
                 sampling: SamplingParams | None = None) -> list[Generation]:
        """One :class:`Generation` per prompt (in order) with ``n`` samples, from one ``VLLMGeneration.generate`` call."""
        prompts = check_prompts(prompts, n)
        sampling = sampling or SamplingParams()
        encoded = [self.encoder.encode(prompt) for prompt in prompts]
        self._configure(sampling)
        # TRL's convention: each prompt repeated n times in a row (the server samples n per distinct prompt)
        repeated = [ids for _, ids in encoded for _ in range(n)]
        _, completion_ids, logprobs, _ = self.generation.generate(prompts=repeated, images=None, num_generations=n)
        if len(completion_ids) != len(repeated):
            raise RuntimeError(f"vLLM returned {len(completion_ids)} completions for {len(prompts)} prompts x {n}")
        logprobs = logprobs if logprobs is not None else [None] * len(repeated)
        samples = [self._sample(list(ids), per_token, sampling) for ids, per_token in zip(completion_ids, logprobs)]
        return [Generation(prompt=text, prompt_ids=list(ids), samples=samples[i * n:(i + 1) * n])
                for i, (text, ids) in enumerate(encoded)]

    def _configure(self, sampling: SamplingParams) -> None:
        """Set the engine's sampling attributes (which TRL reads on every ``generate``) from ``sampling``."""
        generation = self.generation
        generation.temperature, generation.top_p, generation.top_k = sampling.temperature, sampling.top_p, sampling.top_k
        generation.max_completion_length = sampling.max_new_tokens
        generation.generation_kwargs = {"stop": list(sampling.stop) or None,
                                        "stop_token_ids": sorted(self.encoder.stop_ids) or None}

    def _sample(self, token_ids: list[int], per_token, sampling: SamplingParams) -> Sample:
        """A Sample from one completion's token ids and its top-1 logprob lists (``[[lp], ...]``; None = unknown)."""
        nan = float("nan")
        logprobs = [nan if not entry or entry[0] is None else float(entry[0]) for entry in per_token or []]
        if len(logprobs) != len(token_ids):
            logprobs = [nan] * len(token_ids)
        text = self.tokenizer.decode(token_ids, skip_special_tokens=True)
        cuts = [text.index(stop) for stop in sampling.stop if stop in text]
        ended = bool(cuts) or bool(token_ids and token_ids[-1] in self.encoder.stop_ids)
        finish = "length" if not ended and len(token_ids) >= sampling.max_new_tokens else "stop"
        return Sample(text=text[:min(cuts)] if cuts else text, token_ids=token_ids, logprobs=logprobs,
                      finish_reason=finish)

    def close(self) -> None:
        """Nothing to release: the engine belongs to the trainer."""
