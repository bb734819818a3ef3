"""The bundled code problems: 45 original problems written for rla, over four difficulty levels.

Levels: 1 basics (arithmetic, conditions, loops), 2 strings and lists, 3 classic algorithms (binary search,
sieve, BFS, Kadane, fast doubling), 4 harder algorithms (DP, graphs, O(n log n) requirements, backtracking).
Both forms appear at every level. Each problem has a reference solution, 3 public and at least 5 hidden
tests, and ids ``bundled:<name>``. The data lives in ``bundled_problems.json`` next to this module.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from rla_envs.code.tasks.formats import FAMILY
from rla_envs.core.errors import TaskNotFound, did_you_mean
from rla_envs.core.task import Task

__all__ = ["PREFIX", "LEVELS", "DATA_FILE", "bundled_tasks", "bundled_task", "bundled_ids"]

PREFIX = "bundled:"
LEVELS = {1: "basics", 2: "strings and lists", 3: "algorithms", 4: "harder algorithms"}
DATA_FILE = Path(__file__).with_name("bundled_problems.json")
"""The bundled problems: ``{"format": ..., "problems": [{"name", "level", "statement", "spec"}, ...]}``."""


@lru_cache(maxsize=1)
def _load() -> dict[str, Task]:
    data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    tasks: dict[str, Task] = {}
    for problem in data["problems"]:
        task = Task(
            id=PREFIX + problem["name"],
            family=FAMILY,
            instruction=problem["statement"],
            spec=problem["spec"],
            origin="dataset",
            meta={"source": "bundled", "level": problem["level"], "level_name": LEVELS[problem["level"]],
                  "form": problem["spec"]["form"]},
        )
        tasks[task.id] = task
    return tasks


def bundled_tasks(level: int | None = None) -> list[Task]:
    """Every bundled task (or those of one ``level``, 1-4), in a fixed order."""
    if level is not None and level not in LEVELS:
        raise ValueError(f"level must be one of {sorted(LEVELS)} ({LEVELS}), got {level!r}")
    return [task for task in _load().values() if level is None or task.meta["level"] == level]


def bundled_ids() -> list[str]:
    """The ids of the bundled tasks (``bundled:<name>``)."""
    return list(_load())


def bundled_task(task_id: str) -> Task:
    """The bundled task ``bundled:<name>`` (the prefix may be omitted)."""
    key = task_id if task_id.startswith(PREFIX) else PREFIX + task_id
    try:
        return _load()[key]
    except KeyError:

        hint = did_you_mean(key, _load())
        raise TaskNotFound(f"no bundled code task {task_id!r}.{hint} See bundled_ids().") from None
