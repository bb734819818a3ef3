"""Loading OSWorld task JSON files, unchanged, as rla Tasks (family ``"desktop"``).

The JSON dict is kept as-is under ``spec["osworld"]``; the instruction is the task's own. ``meta`` records
the app (the folder the file sits in, else the task's ``snapshot``), the source path and OSWorld's task id.

Example::

    tasks = load_tasks("/work/shared/osworld-tasks/examples")      # 369 Tasks, sorted by app and id
    raw = tasks[0].spec["osworld"]                                   # the JSON dict (frozen)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rla_envs.core.errors import DataNotFound, InvalidTask
from rla_envs.core.task import Task, thaw
from rla_envs.desktop.osworld.errors import BadTaskFile

__all__ = ["load_task", "load_tasks", "osworld_json", "FAMILY"]

FAMILY = "desktop"
_REQUIRED = ("id", "instruction", "evaluator")


def osworld_json(task: Task | Mapping[str, Any]) -> dict[str, Any]:
    """The OSWorld JSON dict of ``task`` (a Task from :func:`load_task`, or the dict itself), as plain data."""
    if isinstance(task, Task):
        try:
            return thaw(task.spec["osworld"])
        except KeyError:
            raise BadTaskFile(f"task {task.id} has no spec['osworld']; it was not loaded from OSWorld JSON "
                              f"(spec keys: {sorted(task.spec)})") from None
    if isinstance(task, Mapping):
        return thaw(task)
    raise BadTaskFile(f"expected a Task or an OSWorld task dict, got {type(task).__name__}")


def _check(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise BadTaskFile(f"{where}: expected an OSWorld task (a JSON object), got {type(raw).__name__}")
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise BadTaskFile(f"{where}: an OSWorld task needs {list(_REQUIRED)}; missing {missing} "
                          f"(it has {sorted(raw)})")
    if not isinstance(raw["instruction"], str) or not isinstance(raw["id"], str):
        raise BadTaskFile(f"{where}: 'id' and 'instruction' must be strings")
    evaluator = raw["evaluator"]
    if not isinstance(evaluator, Mapping) or "func" not in evaluator:
        raise BadTaskFile(f"{where}: 'evaluator' must be an object with a 'func' (got {evaluator!r:.200})")
    config = raw.get("config", [])
    if not isinstance(config, list) or not all(isinstance(step, Mapping) and "type" in step for step in config):
        raise BadTaskFile(f"{where}: 'config' must be a list of steps like {{'type': ..., 'parameters': ...}}")
    return dict(raw)


def load_task(source: str | os.PathLike | Mapping[str, Any], *, app: str | None = None) -> Task:
    """One OSWorld task (a path to its JSON file, or the dict) as a Task; the JSON is kept unchanged.

    Raises:
        BadTaskFile: the file is not JSON or not an OSWorld task (the message says what is missing).
        DataNotFound: the path does not exist.
    """
    if isinstance(source, Mapping):
        return _task(_check(source, "task dict"), None, app)
    if not isinstance(source, (str, os.PathLike)):
        raise BadTaskFile(f"expected an OSWorld task dict or the path of its JSON file, got {type(source).__name__}")
    path = Path(source)
    if not path.is_file():
        raise DataNotFound(f"no OSWorld task file at {path}")
    return _task(_check(_read_json(path), str(path)), path, app)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadTaskFile(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise BadTaskFile(f"{path}: JSON nested too deeply (thousands of levels); no OSWorld task is") from None


def _task(raw: dict[str, Any], path: Path | None, app: str | None) -> Task:
    """The Task of a checked OSWorld dict (``app``: default the file's folder, else the JSON's ``snapshot``)."""
    if app is None:
        app = path.parent.name if path is not None else raw.get("snapshot")
    meta: dict[str, Any] = {"osworld_id": raw["id"], "app": app if isinstance(app, str) else "",
                            "source": str(path) if path else ""}
    try:
        return Task(family=FAMILY, instruction=raw["instruction"], spec={"osworld": raw}, origin="dataset",
                    meta=meta)
    except InvalidTask as exc:  # text that is not Unicode, nesting too deep: name the file
        raise BadTaskFile(f"{path or 'task dict'}: {exc}".replace("Task.spec.osworld", "the task JSON")) from None


def _is_index(data: Any) -> bool:
    """OSWorld's ``test_all.json``-style index: ``{app: [task ids]}``."""
    return isinstance(data, Mapping) and bool(data) and all(
        isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in data.values())


def load_tasks(directory: str | os.PathLike) -> list[Task]:
    """Every OSWorld task under ``directory`` (``<app>/<id>.json``, searched recursively), sorted by path.

    Index files such as OSWorld's ``test_all.json`` (``{app: [ids]}``) are skipped; any other JSON file that
    is not a task raises :class:`BadTaskFile` naming it.
    """
    root = Path(directory)
    if not root.is_dir():
        raise DataNotFound(f"no OSWorld task directory at {root} (expected <dir>/<app>/<task-id>.json files)")
    tasks = []
    for path in sorted(root.rglob("*.json")):
        data = _read_json(path)  # read once: an index file is skipped, a task file becomes a Task
        if _is_index(data):
            continue
        tasks.append(_task(_check(data, str(path)), path, None))
    if not tasks:
        raise DataNotFound(f"{root} holds no OSWorld task files (expected <dir>/<app>/<task-id>.json)")
    return tasks
