"""Task JSON files: a :class:`Task` dict, or the two-form format of ``../shared/sandbox-attacks/task.json``.

The two-form format describes one problem that can be posed as a function or as a program::

    {"id": "square_plus_one", "statement": "...",
     "forms": {"function": {"entry_point": "solve", "signature": "solve(x: int) -> int", ...},
               "stdio": {...}},
     "hidden_tests": [{"input": 3, "output": 10}, ...],
     "public_tests": [...],                         # optional, same shape
     "limits_assumed": {"timeout_s": 3, "memory_max": "2 GiB", ...}}

Function form: ``input`` is the single positional argument (``args``, a list, gives several) and ``output``
the exact return value. Stdio form: a non-string ``input`` becomes its decimal/text form plus a newline on
stdin, and ``output`` is compared as text. Task ids are ``<id>/<form>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rla_envs.code.tasks.formats import FAMILY, FORMS, encode_value, validate_code_task
from rla_envs.core.errors import DataNotFound, InvalidTask
from rla_envs.core.task import Task

__all__ = ["load_task_file", "two_form_tasks", "two_form_task"]

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|KB|MB|GB|K|M|G)?\s*$", re.IGNORECASE)
_MIB = {None: 1 / (1 << 20), "k": 1 / 1024, "kb": 1 / 1024, "kib": 1 / 1024, "m": 1, "mb": 1, "mib": 1,
        "g": 1024, "gb": 1024, "gib": 1024}


def load_task_file(path: str | Path, form: str | None = None) -> Task:
    """The code task in a JSON file: a Task dict, or a two-form file posed in ``form`` (default: its first)."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFound(f"no task file at {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidTask(f"{path} is not UTF-8 JSON: {exc}") from None
    except RecursionError:
        raise InvalidTask(f"{path}: the JSON is nested too deeply (thousands of levels)") from None
    try:
        return _task_of(data, form, path)
    except InvalidTask as exc:
        raise InvalidTask(f"{path}: {exc}") from None


def _task_of(data: Any, form: str | None, path: Path) -> Task:
    if isinstance(data, Mapping) and "forms" in data:
        return two_form_task(data, form)
    if isinstance(data, Mapping) and "family" in data:
        task = Task.from_dict(data)
        validate_code_task(task)
        if form is not None and task.spec["form"] != form:
            raise InvalidTask(f"it holds a {task.spec['form']} task; it cannot be posed as {form!r}")
        return task
    raise InvalidTask("expected a Task dict ('family') or a two-form task ('forms'), "
                      f"got keys {sorted(data)[:12] if isinstance(data, Mapping) else type(data).__name__}")


def two_form_tasks(data: Mapping[str, Any]) -> dict[str, Task]:
    """Every form a two-form task description offers, as ``{form: Task}``."""
    return {form: two_form_task(data, form) for form in data.get("forms", {}) if form in FORMS}


def two_form_task(data: Mapping[str, Any], form: str | None = None) -> Task:
    """One form (``"function"`` or ``"stdio"``; default the first listed) of a two-form task description."""
    forms = data.get("forms")
    if not isinstance(forms, Mapping) or not forms:
        raise InvalidTask("a two-form task needs 'forms': {\"function\": {...}} and/or {\"stdio\": {...}}")
    form = form or next(iter(forms))
    if form not in FORMS or form not in forms:
        raise InvalidTask(f"form {form!r} is not offered; this task has {sorted(forms)}")
    for key in ("id", "statement", "hidden_tests"):
        if key not in data:
            raise InvalidTask(f"a two-form task needs {key!r}; it has {sorted(data)}")
    for key, kind in (("id", str), ("statement", str), ("hidden_tests", list), ("public_tests", list)):
        if key in data and not isinstance(data[key], kind):
            raise InvalidTask(f"'{key}' must be a {kind.__name__}, got {type(data[key]).__name__}")
    if not isinstance(forms[form], Mapping):
        raise InvalidTask(f"'forms.{form}' must be an object, got {type(forms[form]).__name__}")
    convert = _function_test if form == "function" else _stdio_test
    spec: dict[str, Any] = {
        "form": form,
        "public_tests": [convert(t, f"public_tests[{i}]") for i, t in enumerate(data.get("public_tests", []))],
        "hidden_tests": [convert(t, f"hidden_tests[{i}]") for i, t in enumerate(data["hidden_tests"])],
        "reference_solution": None,
        "limits": _limits(data.get("limits_assumed") or data.get("limits") or {}),
    }
    if form == "function":
        spec["entry_point"] = forms[form].get("entry_point", "solve")
        if forms[form].get("signature"):
            spec["signature"] = forms[form]["signature"]
    task = Task(id=f"{data['id']}/{form}", family=FAMILY, instruction=data["statement"], spec=spec,
                origin="dataset", meta={"source": "task-file", "form": form})
    validate_code_task(task)
    return task


def _function_test(test: Any, where: str) -> dict[str, str]:
    if not isinstance(test, Mapping) or "output" not in test or ("input" in test) == ("args" in test):
        raise InvalidTask(f"{where} must be {{\"input\": x, \"output\": y}} or {{\"args\": [...], \"output\": y}}")
    if "args" in test and not isinstance(test["args"], list):
        raise InvalidTask(f"{where}.args must be a list of positional arguments, got {type(test['args']).__name__}")
    args = tuple(test["args"]) if "args" in test else (test["input"],)
    return {"args": encode_value(args), "expected": encode_value(test["output"])}


def _stdio_test(test: Any, where: str) -> dict[str, str]:
    if not isinstance(test, Mapping) or "input" not in test or "output" not in test:
        raise InvalidTask(f"{where} must be {{\"input\": x, \"output\": y}}")
    stdin = test["input"] if isinstance(test["input"], str) else f"{test['input']}\n"
    stdout = test["output"] if isinstance(test["output"], str) else str(test["output"])
    return {"stdin": stdin, "stdout": stdout}


def _limits(assumed: Any) -> dict[str, float]:
    if not isinstance(assumed, Mapping):
        raise InvalidTask(f"'limits_assumed' must be an object such as {{\"timeout_s\": 3}}, got {assumed!r:.60}")
    limits: dict[str, float] = {}
    if assumed.get("timeout_s") is not None:
        timeout = assumed["timeout_s"]
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise InvalidTask(f"'limits_assumed.timeout_s' must be a number of seconds, got {timeout!r:.40}")
        limits["timeout_s"] = float(timeout)
    memory = assumed.get("memory_mb", assumed.get("memory_max"))
    if isinstance(memory, (int, float)) and not isinstance(memory, bool):
        if not 0 < memory < 1 << 30:  # NaN, infinities and 10**400 too
            raise InvalidTask(f"'limits_assumed' memory must be a positive number of MiB, got {memory!r:.40}")
        limits["memory_mb"] = int(memory)
    elif isinstance(memory, str):
        match = _SIZE.match(memory)
        if not match:
            raise InvalidTask(f"cannot read memory limit {memory!r}; write e.g. \"2 GiB\" or \"512 MiB\"")
        unit = match.group(2).lower() if match.group(2) else None
        limits["memory_mb"] = max(64, int(float(match.group(1)) * _MIB[unit]))
    return limits
