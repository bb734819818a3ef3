"""Code tasks: the spec format, the bundled problems, HumanEval, user JSONL files and task JSON files.

``load_task("bundled:fizzbuzz")``, ``load_task("humaneval:HumanEval/12")`` or ``load_task("task.json",
form="stdio")``; ``load_tasks("bundled" | "humaneval" | "file.jsonl")`` for a whole set.
"""

from __future__ import annotations

from pathlib import Path

from rla_envs.code.tasks.formats import (
    DEFAULT_LIMITS, FAMILY, FORMS, FunctionTest, StdioTest, decode_value, encode_value, function_task,
    limits_of, stdio_task, task_tests, validate_code_spec, validate_code_task,
)
from rla_envs.core.errors import TaskNotFound
from rla_envs.core.task import Task

__all__ = [
    "load_task", "load_tasks", "TASK_SETS",
    "FAMILY", "FORMS", "DEFAULT_LIMITS", "FunctionTest", "StdioTest", "encode_value", "decode_value",
    "function_task", "stdio_task", "task_tests", "limits_of", "validate_code_spec", "validate_code_task",
]

TASK_SETS = ("bundled", "humaneval")


def load_task(ref: str, form: str | None = None) -> Task:
    """A code task by id (``bundled:<name>``, ``humaneval:HumanEval/<n>``) or from a task JSON file."""
    if ref.startswith("bundled:"):
        from rla_envs.code.tasks.bundled import bundled_task

        return bundled_task(ref)
    if ref.startswith("humaneval:"):
        from rla_envs.code.tasks.humaneval import humaneval_task

        return humaneval_task(ref)
    if Path(ref).is_file():
        from rla_envs.code.tasks.taskfile import load_task_file

        return load_task_file(ref, form)
    raise TaskNotFound(f"{ref!r} is neither a code task id (bundled:<name>, humaneval:HumanEval/<n>) "
                       "nor an existing task JSON file")


def load_tasks(source: str) -> list[Task]:
    """A whole task set: ``"bundled"``, ``"humaneval"`` or the path of a LiveCodeBench/CodeContests JSONL."""
    if source == "bundled":
        from rla_envs.code.tasks.bundled import bundled_tasks

        return bundled_tasks()
    if source == "humaneval":
        from rla_envs.code.tasks.humaneval import humaneval_tasks

        return humaneval_tasks()
    if Path(source).is_file():
        from rla_envs.code.tasks.jsonl import load_jsonl

        return load_jsonl(source)
    raise TaskNotFound(f"unknown code task set {source!r}; expected one of {TASK_SETS} or a .jsonl path")
