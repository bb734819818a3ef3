"""Generation backends: one interface over transformers, vLLM, OpenAI-compatible servers and a scripted stub.

::

    from rla_train.backends import SamplingParams, make_backend

    backend = make_backend("transformers", model="path/to/model")      # CPU or GPU, live weights
    backend = make_backend("vllm", model="Qwen/Qwen2.5-1.5B-Instruct")  # needs pip install "rla[vllm]"
    backend = make_backend("openai", base_url="http://localhost:8000/v1", model="served-name")
    backend = make_backend("scripted", respond=lambda prompt: "look")

Importing this package imports no torch, transformers or vllm: each backend loads what it needs when built.
"""

from __future__ import annotations

from rla_envs.core.errors import did_you_mean
from rla_train.backends.base import (BackendError, Chat, Generation, GenerationBackend, Prompt, Sample,
                                     SamplingParams, check_prompts, is_chat)
from rla_train.backends.scripted import ScriptedBackend

__all__ = ["Chat", "Prompt", "SamplingParams", "Sample", "Generation", "GenerationBackend", "BackendError",
           "ScriptedBackend", "is_chat", "check_prompts", "make_backend", "BACKENDS"]

BACKENDS = {
    "transformers": "rla_train.backends.hf:TransformersBackend",
    "vllm": "rla_train.backends.vllm_backend:VLLMBackend",
    "openai": "rla_train.backends.openai_backend:OpenAICompatibleBackend",
    "scripted": "rla_train.backends.scripted:ScriptedBackend",
}
"""Backend name -> ``"module:Class"`` entry point, imported only when that backend is made."""


def make_backend(name: str, **kwargs) -> GenerationBackend:
    """Build the generation backend called ``name`` with ``kwargs`` (see each backend's class for them).

    Raises:
        ValueError: an unknown name (the closest known one is suggested).
        MissingDependency: ``"vllm"`` without vllm installed (names ``pip install "rla[vllm]"``).
    """
    import importlib

    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; expected one of {sorted(BACKENDS)}."
                         f"{did_you_mean(name, BACKENDS)}")
    module_name, class_name = BACKENDS[name].split(":")
    backend_class = getattr(importlib.import_module(module_name), class_name)
    return backend_class(**kwargs)
