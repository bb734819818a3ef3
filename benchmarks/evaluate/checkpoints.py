"""What ``--policy PATH`` names: a model directory, one checkpoint of a run, or a whole run (its latest checkpoint).

::

    source = resolve_policy("runs/cpu-tiny")          # run dir -> runs/cpu-tiny/checkpoints/step-000020/policy
    source.name, source.model, source.action_mode, source.agent_options

A run directory (``RUN/checkpoints/step-NNNNNN/{policy,reward_model}/`` beside ``RUN/config.yaml``, as
:mod:`rla_train.cotrainer.loop` writes it) resolves to its latest checkpoint. A checkpoint directory resolves to its
``policy/`` model. When the run's ``config.yaml`` is there, :attr:`PolicySource.run_config` holds it and the
policy is evaluated the way the run evaluated it (:mod:`rla_train.cotrainer.play_setup`: agent, action mode, env options,
held-out task list, seeds, sampling; command-line options still win). ``expert`` and ``random`` name the
reference agents (:mod:`benchmarks.evaluate.agents`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rla_train.config.preflight import is_hub_id

__all__ = ["PolicySource", "REFERENCE_POLICIES", "resolve_policy", "resolve_reward_model", "safe_name"]

REFERENCE_POLICIES = ("expert", "random")
"""``--policy`` values that name a reference agent instead of a model."""

ACTION_MODES = ("text", "index", "choice")


def safe_name(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``.``, ``_`` and ``-`` only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "policy"


def model_fingerprint(model: str) -> str:
    """A local model directory's contents as one digest; a hub id as it is named (its revision is not known here)."""
    if not Path(model).is_dir():
        return str(model)
    from rla_train.cotrainer.checkpoint import directory_fingerprint

    return "sha256:" + directory_fingerprint(model)


@dataclass
class PolicySource:
    """A policy to evaluate, resolved from ``--policy``.

    Attributes:
        name: the row name in tables and the file-name part of its episodes files.
        kind: ``"model"``, ``"expert"`` or ``"random"``.
        model: the model directory (or hub id) for ``kind == "model"``.
        checkpoint: the checkpoint directory it came from (None for a plain model directory).
        action_mode: ``text`` / ``index`` / ``choice`` from the run's config (None: not recorded).
        agent_options: agent options from the run's config (:func:`rla_train.cotrainer.play_setup.agent_options`).
        env_options: the env options of the run's held-out evaluation (``env.options`` + ``env.eval_options``
            + ``max_steps``).
        verdict_mode: the run's ``reward_model.verdict_mode`` (None: not recorded).
        label_rule: the run's ``reward_model.label_rule``, the step labels its judge is measured against (None: not
            recorded).
        reward_model: the checkpoint's ``reward_model/`` directory when it has one.
        run_config: the run's :class:`~rla_train.config.TrainConfig` (None: no ``config.yaml`` beside it).
    """

    name: str
    kind: str
    model: str | None = None
    checkpoint: Path | None = None
    action_mode: str | None = None
    agent_options: dict[str, Any] = field(default_factory=dict)
    env_options: dict[str, Any] = field(default_factory=dict)
    verdict_mode: str | None = None
    label_rule: str | None = None
    reward_model: str | None = None
    run_config: Any | None = None

    def fingerprint(self) -> str:
        """What plays its episodes: the model's :func:`model_fingerprint`, or a reference policy's name."""
        return model_fingerprint(self.model) if self.kind == "model" and self.model else self.kind

    def describe(self) -> dict[str, Any]:
        """JSON-able facts about the source (written beside the results)."""
        return {"name": self.name, "kind": self.kind, "model": self.model,
                "checkpoint": None if self.checkpoint is None else str(self.checkpoint),
                "action_mode": self.action_mode, "agent_options": self.agent_options, "env_options": self.env_options}


def _is_model_dir(path: Path) -> bool:
    """A full model (config.json) or a LoRA adapter (adapter_config.json: transformers loads it over its base)."""
    return (path / "config.json").is_file() or (path / "adapter_config.json").is_file()


def _run_config(run_dir: Path):
    """The run's :class:`~rla_train.config.TrainConfig` from ``run_dir/config.yaml`` (None when there is none)."""
    from rla_train.config import CONFIG_FILENAME, TrainConfig

    path = run_dir / CONFIG_FILENAME
    return TrainConfig.load(path) if path.is_file() else None


def _run_settings(config) -> dict[str, Any]:
    """The :class:`PolicySource` fields a run's config sets ({} without one)."""
    if config is None:
        return {}
    from rla_train.cotrainer.play_setup import agent_options, heldout_plan

    return {"action_mode": config.policy.action_mode, "agent_options": agent_options(config),
            "env_options": dict(heldout_plan(config).env.kwargs), "verdict_mode": config.reward_model.verdict_mode,
            "label_rule": config.reward_model.label_rule, "run_config": config}


def _latest(run_dir: Path) -> Path:
    """The run's newest intact checkpoint (a corrupt newer one is skipped with a warning)."""
    from rla_train.cotrainer.checkpoint import latest_checkpoint

    checkpoint = latest_checkpoint(run_dir)  # CorruptCheckpoint (a ValueError) when none is intact
    if checkpoint is None:
        raise FileNotFoundError(f"{run_dir} looks like a run directory but holds no finished checkpoint under "
                                f"{run_dir / 'checkpoints'}; pass a model directory or wait for the run to save one")
    return Path(checkpoint)


def _checkpoint_source(checkpoint: Path, name: str) -> PolicySource:
    from rla_train.cotrainer.checkpoint import verify_checkpoint

    if (checkpoint / "meta.json").is_file():
        verify_checkpoint(checkpoint)  # a checkpoint named on purpose: corrupt is an error, not a fallback
    model = checkpoint / "policy"
    if not _is_model_dir(model):
        raise FileNotFoundError(f"checkpoint {checkpoint} has no policy model ({model}/config.json); "
                                "pass a checkpoint written by rla_train.cotrainer.loop or a model directory")
    rm = checkpoint / "reward_model"
    return PolicySource(name=name, kind="model", model=str(model), checkpoint=checkpoint,
                        reward_model=str(rm) if _is_model_dir(rm) else None,
                        **_run_settings(_run_config(checkpoint.parent.parent)))


def resolve_policy(spec: str | os.PathLike) -> PolicySource:
    """The :class:`PolicySource` for a ``--policy`` value (see the module docstring).

    Raises:
        FileNotFoundError: a path that is neither a model, a checkpoint nor a run directory (says which).
        CorruptCheckpoint: a named checkpoint whose files changed since the save, or a run with no intact one.
    """
    text = os.fspath(spec)
    if text in REFERENCE_POLICIES:
        return PolicySource(name=text, kind=text)
    path = Path(text)
    if not path.exists():
        if is_hub_id(text):  # such as Qwen/Qwen2.5-1.5B
            return PolicySource(name=safe_name(text), kind="model", model=text)
        raise FileNotFoundError(f"--policy {text!r}: no such path; pass a model directory, a checkpoint directory "
                                f"(RUN/checkpoints/step-NNNNNN), a run directory, or one of {REFERENCE_POLICIES}")
    path = path.resolve()
    if (path / "checkpoints").is_dir():                                   # a run directory
        checkpoint = _latest(path)
        return _checkpoint_source(checkpoint, safe_name(f"{path.name}-{checkpoint.name}"))
    if (path / "policy").is_dir():                                        # one checkpoint
        return _checkpoint_source(path, safe_name(f"{path.parent.parent.name}-{path.name}"))
    if _is_model_dir(path):                                               # a model directory
        if path.name in ("policy", "reward_model") and (path.parent / "meta.json").is_file():
            source = _checkpoint_source(path.parent, safe_name(f"{path.parent.parent.parent.name}-{path.parent.name}"))
            source.model = str(path)
            return source
        return PolicySource(name=safe_name(path.name), kind="model", model=str(path))
    raise FileNotFoundError(f"--policy {text!r} is a path but neither a model directory (config.json), a checkpoint "
                            "(policy/) nor a run directory (checkpoints/)")


def resolve_reward_model(spec: str | os.PathLike) -> tuple[str, str | None]:
    """``(model directory or hub id, recorded verdict mode or None)`` for a ``--reward-model`` value.

    A run or checkpoint directory gives its ``reward_model/`` model, or its ``policy/`` model when the run
    judged with the policy's own model (``same-as-policy``).
    """
    text = os.fspath(spec)
    path = Path(text)
    if not path.exists():
        if is_hub_id(text):
            return text, None
        raise FileNotFoundError(f"--reward-model {text!r}: no such path (cwd {os.getcwd()}); pass a model, checkpoint "
                                "or run directory, or a hub id written org/name")
    path = path.resolve()
    if (path / "checkpoints").is_dir():
        path = _latest(path)
    if (path / "policy").is_dir():
        from rla_train.cotrainer.checkpoint import verify_checkpoint

        if (path / "meta.json").is_file():
            verify_checkpoint(path)
        config = _run_config(path.parent.parent)
        model = path / "reward_model" if _is_model_dir(path / "reward_model") else path / "policy"
        return str(model), None if config is None else config.reward_model.verdict_mode
    if _is_model_dir(path):
        return str(path), None
    raise FileNotFoundError(f"--reward-model {text!r} is neither a model, a checkpoint nor a run directory")
