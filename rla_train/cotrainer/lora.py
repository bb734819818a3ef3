"""LoRA adapters (peft) for the policy and the reward model, configured with TRL ``ModelConfig``'s names.

``policy.use_peft: true`` (or ``reward_model.use_peft``) wraps the loaded model in a peft LoRA adapter before anything
trains it: the warm starts and every co-training update then train the adapter's weights alone (the base stays as
loaded), and a checkpoint's ``policy/`` (``reward_model/``) holds ``adapter_config.json`` + ``adapter_model.safetensors``
and the tokenizer, not the base weights. The adapter's ``base_model_name_or_path`` names the base it was trained on
(a hub id, a path, or for ``tiny`` the cached tiny model's directory), so ``AutoModelForCausalLM.from_pretrained`` on
the checkpoint's directory loads base + adapter (what ``benchmarks.evaluate`` does), and
``python -m rla_train.merge_lora CHECKPOINT --out DIR`` writes one merged model for serving.

Settings (per section, TRL's names): ``use_peft``, ``lora_r`` (16), ``lora_alpha`` (32), ``lora_dropout`` (0; TRL's 0.05),
``lora_target_modules`` (null = peft's default for the architecture, ``all-linear``, or a list of module names).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from rla_envs.core.errors import MissingDependency

__all__ = ["PEFT_INSTALL", "ADAPTER_CONFIG", "base_model_path", "with_adapter", "is_adapter_dir",
           "load_saved_weights", "merge_adapter_dir"]

PEFT_INSTALL = 'pip install "rla[train]"'
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


def _peft():
    try:
        import peft
    except ImportError as exc:
        raise MissingDependency(f"use_peft needs the 'peft' package ({exc}); install it with: {PEFT_INSTALL}") from exc
    return peft


def base_model_path(spec: str, *, seed: int) -> str:
    """What ``spec`` (a model path, hub id or ``tiny``) loads from, as the adapter records it: a local directory as an
    absolute path, for ``tiny`` the cached tiny model's directory (rebuilt from the seed if the cache is cleared: pass
    ``--base`` to ``merge_lora``), a hub id as it is."""
    if spec == "tiny":
        from rla_train.backends.tiny import tiny_model_path

        return str(tiny_model_path(seed=seed))
    path = Path(spec).expanduser()
    return str(path.resolve()) if path.is_dir() else spec


def with_adapter(model, section, *, base: str):
    """``model`` with a fresh LoRA adapter from ``section``'s ``lora_*`` settings (only the adapter is trainable);
    ``base`` (:func:`base_model_path`) is recorded as the adapter's base model."""
    peft = _peft()
    targets = section.lora_target_modules
    config = peft.LoraConfig(r=section.lora_r, lora_alpha=section.lora_alpha, lora_dropout=section.lora_dropout,
                             target_modules=targets if targets else None, task_type="CAUSAL_LM",
                             base_model_name_or_path=base)
    with warnings.catch_warnings():  # peft asks transformers 5 for is_gradient_checkpointing, which it deprecates
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        wrapped = peft.get_peft_model(model, config)
    wrapped.peft_config["default"].base_model_name_or_path = base
    if getattr(section, "gradient_checkpointing", False):
        # the frozen embeddings' outputs must carry a gradient, or a checkpointed segment leaves the adapters without
        # one (what TRL does for the peft models it wraps itself)
        wrapped.enable_input_require_grads()
    return wrapped


def is_adapter_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds a saved adapter (``adapter_config.json``) rather than a full model."""
    return (Path(path) / ADAPTER_CONFIG).is_file()


def load_saved_weights(model, directory: str | os.PathLike) -> None:
    """Load what ``save_pretrained`` wrote to ``directory`` into the built ``model``: the adapter's weights into a
    peft model, or a full model's state dict (a resumed run's models are built first, then given their saved
    weights)."""
    directory = Path(directory)
    if is_adapter_dir(directory):
        if not hasattr(model, "peft_config"):
            raise ValueError(f"{directory} holds a LoRA adapter but the model was built without one; resume with the "
                             "run's own config (use_peft: true)")
        from safetensors.torch import load_file

        _same_adapter(model, directory)
        result = _peft().set_peft_model_state_dict(model, load_file(directory / ADAPTER_WEIGHTS))
        unexpected = list(getattr(result, "unexpected_keys", []))
        missing = [key for key in getattr(result, "missing_keys", []) if ".lora_" in key]
        if unexpected or missing:
            raise ValueError(f"{directory}: the saved adapter does not fit the model's (unexpected {unexpected[:3]}, "
                             f"missing {missing[:3]}); resume with the run's own lora_* settings")
        return
    if hasattr(model, "peft_config"):
        raise ValueError(f"{directory} holds a full model but the run's model has a LoRA adapter (use_peft: true); "
                         "resume with the config the run was saved with")
    from transformers import AutoModelForCausalLM

    model.load_state_dict(AutoModelForCausalLM.from_pretrained(directory).state_dict())


def _same_adapter(model, directory: Path) -> None:
    """Refuse to load an adapter saved with another rank, scale or set of modules than ``model``'s (a resume with
    changed ``lora_*`` settings would load part of it, or rescale it, without a word)."""
    import json

    def targets(value):  # peft holds a set, its JSON a list, "all-linear" a string
        return sorted(value) if isinstance(value, (list, set, tuple)) else value

    saved = json.loads((directory / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    built = model.peft_config["default"]
    pairs = {"r": built.r, "lora_alpha": built.lora_alpha, "target_modules": targets(built.target_modules)}
    saved_values = {"r": saved.get("r"), "lora_alpha": saved.get("lora_alpha"),
                    "target_modules": targets(saved.get("target_modules"))}
    differ = {key: (saved_values[key], value) for key, value in pairs.items() if saved_values[key] != value}
    if differ:
        raise ValueError(f"{directory} holds an adapter saved with {', '.join(f'{k}={v[0]}' for k, v in differ.items())}"
                         f", but the model was built with {', '.join(f'{k}={v[1]}' for k, v in differ.items())}; resume "
                         "with the run's own lora_* settings")


def merge_adapter_dir(directory: str | os.PathLike, out: str | os.PathLike, *, base: str | None = None) -> Path:
    """Base + the adapter in ``directory``, merged into one model saved (with the tokenizer) to ``out``.

    ``base`` overrides the base recorded in ``adapter_config.json`` (a moved or renamed base model).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, out = Path(directory), Path(out)
    if not is_adapter_dir(directory):
        raise FileNotFoundError(f"{directory} holds no {ADAPTER_CONFIG}: not a LoRA checkpoint (a full model needs no "
                                "merging)")
    peft = _peft()
    config = peft.PeftConfig.from_pretrained(directory)
    base_path = base or config.base_model_name_or_path
    merged = peft.PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_path), directory).merge_and_unload()
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(out)
    tokenizer_source = directory if (directory / "tokenizer_config.json").is_file() else base_path
    AutoTokenizer.from_pretrained(tokenizer_source).save_pretrained(out)
    return out

