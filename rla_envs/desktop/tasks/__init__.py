"""The bundled desktop tasks: original tasks in OSWorld's JSON format, with their files and scripted solutions.

``examples/<app>/<id>.json`` are OSWorld task files (loaded unchanged by
:func:`rla_envs.desktop.osworld.tasks.load_task`); their input and gold files live in ``files/<id>/`` and are
referenced as ``rla-bundled://<id>/<file>``. Each JSON also carries keys OSWorld ignores: ``rla_solution``
(the scripted solution: pyautogui code steps, then ``DONE`` or ``FAIL``), ``rla_hints`` and, for some tasks,
``rla_variants``/``rla_variant`` (see :mod:`rla_envs.desktop.tasks.build`, which regenerates everything).

Example::

    from rla_envs.desktop.tasks import bundled_tasks, solution_steps
    task = bundled_tasks()[0]
    for action in solution_steps(task):   # play these in rla/OSWorld-v0 to score 1
        ...
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rla_envs.core.errors import InvalidTask
from rla_envs.core.task import Task

__all__ = ["EXAMPLES_DIR", "FILES_DIR", "bundled_tasks", "solution_steps", "SOLUTION_KEY", "HINTS_KEY",
           "VARIANTS_KEY", "VARIANT_KEY"]

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
FILES_DIR = Path(__file__).resolve().parent / "files"
SOLUTION_KEY = "rla_solution"
HINTS_KEY = "rla_hints"
VARIANTS_KEY = "rla_variants"
VARIANT_KEY = "rla_variant"

_CACHE: list[Task] | None = None


def bundled_tasks() -> list[Task]:
    """Every bundled task (family ``desktop``), sorted by app and id."""
    global _CACHE
    if _CACHE is None:
        from rla_envs.desktop.osworld.tasks import load_task

        tasks = []
        for path in sorted(EXAMPLES_DIR.glob("*/*.json")):
            task = load_task(path)
            # The source path is machine-specific; keep it relative so the same task is equal everywhere.
            meta = dict(task.meta, source=f"bundled:{path.parent.name}/{path.name}")
            tasks.append(Task(family=task.family, instruction=task.instruction, spec=task.spec,
                              origin=task.origin, meta=meta))
        _CACHE = tasks
    return list(_CACHE)


def solution_steps(task: Task | Mapping[str, Any]) -> list[Any]:
    """The task's scripted solution (``rla_solution``): actions for the env, the last one DONE or FAIL."""
    from rla_envs.desktop.osworld.tasks import osworld_json

    raw = osworld_json(task)
    steps = raw.get(SOLUTION_KEY)
    if not isinstance(steps, list) or not steps or steps[-1] not in ("DONE", "FAIL"):
        raise InvalidTask(f"task {raw.get('id')!r} has no scripted solution: expected '{SOLUTION_KEY}', a list of "
                          f"actions ending with DONE or FAIL, got {steps!r:.200}")
    return list(steps)
