"""The fixed task list of one split, drawn from the seed alone and written beside the results.

Every policy of a comparison plays the same tasks: :func:`task_list` draws them with the engine's
``sample_tasks`` and writes ``out/tasks-SPLIT.json``, and a rerun reads them back. :func:`task_type` names the
row of the results table a task counts in.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.evaluate.agents import echo_backend
from benchmarks.evaluate.checkpoints import safe_name
from benchmarks.evaluate.settings import split_options
from rla_envs.core.files import atomic_write_json
from rla_envs.core.task import Task
from rla_train.rollout.engine import RolloutEngine
from rla_train.rollout.envs import EnvSpec

__all__ = ["task_list", "task_type", "file_part"]


def task_type(task: Task) -> str:
    """The row a task counts in: ALFWorld's task type, a code problem's level, else the family."""
    for value in (task.spec.get("task_type"), task.meta.get("task_type"), task.meta.get("level_name"),
                  task.meta.get("level")):
        if value not in (None, ""):
            return str(value)
    return task.family


def task_list(env_id: str, split: str, *, episodes: int, seed: int, out: Path,
              env_options: Mapping[str, Any] | None = None) -> list[Task]:
    """The ``episodes`` tasks of ``split`` drawn with ``seed``; written to (or read back from) ``out/tasks-SPLIT.json``.

    Raises:
        ValueError: ``out`` already holds a task list made with other settings (use another ``--out``).
    """
    options = {**dict(env_options or {}), **split_options(env_id, split)}
    header = {"env_id": env_id, "split": split, "episodes": episodes, "seed": seed, "env_options": options}
    path = Path(out) / f"tasks-{file_part(split)}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        differs = {k: (saved.get(k), v) for k, v in header.items() if saved.get(k) != json.loads(json.dumps(v))}
        if differs:
            raise ValueError(f"{path} holds the tasks of another evaluation ({differs}: saved vs now); use a new "
                             "--out, or the settings it was made with")
        return [Task.from_dict(t) for t in saved["tasks"]]
    spec = EnvSpec(env_id, **options)
    with RolloutEngine(spec, _NoAgent(), echo_backend(), num_envs=1, progress=False) as engine:
        tasks = engine.sample_tasks(episodes, seed=seed)
    Path(out).mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {**header, "task_ids": [t.id for t in tasks], "tasks": [t.to_dict() for t in tasks]})
    return tasks


class _NoAgent:
    """Placeholder agent for an engine used only to draw tasks."""


def file_part(text: str) -> str:
    """``text`` (a split name, or a task file's path: its base name) made safe for a file name."""
    return safe_name(os.path.basename(os.fspath(text)) if os.sep in text else text)
