"""Fixtures for rla_train tests: a tiny local Qwen2 model (built once per session) and a backend on it."""

from __future__ import annotations

import pytest

try:  # one thread: on 2 cores, 2 threads make tiny models ~10x slower
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - torch is a core dependency
    torch = None


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    """A tiny random-init Qwen2 model with a trained ChatML tokenizer, in a session temp dir."""
    pytest.importorskip("transformers")
    from rla_train.backends.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture
def tiny_backend(tiny_model_path):
    """A TransformersBackend on a fresh copy of the tiny model (tests may change its weights)."""
    from rla_train.backends.hf import TransformersBackend

    backend = TransformersBackend(str(tiny_model_path), device="cpu")
    yield backend
    backend.close()
