"""The spec of a code Task (family ``"code"``): schema, validation, builders and test decoding.

A code task is a :class:`~rla_envs.core.task.Task` whose ``spec`` holds::

    {
      "form": "function" | "stdio",
      "entry_point": "solve",                  # function form only: the name the program must define
      "signature": "solve(x: int) -> int",     # optional, shown to the agent
      "starter_code": "...",                   # optional: code the agent completes (HumanEval's prompt)
      "public_tests": [...],                   # examples the agent may see (multi-turn feedback)
      "hidden_tests": [...],                   # what the reward is computed on
      "host_check": {"source": "humaneval", "task_id": "HumanEval/0"},   # optional, see below
      "reference_solution": "..." | null,      # a full program that passes every test
      "limits": {"timeout_s": 3.0, "memory_mb": 1024},
      "float_tolerance": null | {"rel": 1e-9, "abs": 1e-9}
    }

Tests. A function-form test is ``{"args": "<literal>", "expected": "<literal>"}`` where both are Python
literals (``repr`` text read back by :func:`decode_value`, which evaluates nothing): JSON cannot tell a tuple from a list, an
int key from a str key or a set from a list, and exact-type grading needs all of those. ``args`` is a tuple
(or list) of positional arguments. A stdio test is ``{"stdin": "...", "stdout": "..."}``.

Host check. HumanEval-style tasks are graded by a trusted ``check(candidate)`` instead of (or besides)
hidden tests. The task only **names** a check shipped with rla or its dependencies (``source`` and
``task_id``, see :mod:`rla_envs.code.tasks.host_checks`); its code is looked up there, executed on the host,
and called with a proxy that forwards each call into the sandbox; it passes when it returns without
raising. A ``host_check`` that carries code (``code``, ``setup``, ``function``) is refused: nothing from a
task's data runs on the host. Expected values never enter the sandbox.

Float tolerance. Values are compared with exact types (see :mod:`rla_envs.code.grading`); floats are equal
only when identical, unless the spec sets ``float_tolerance`` — then ``math.isclose(got, expected,
rel_tol=rel, abs_tol=abs)`` decides (and, in stdio form, tokens that both parse as floats are compared the
same way).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rla_envs.core.errors import InvalidTask
from rla_envs.core.task import Task, thaw

__all__ = [
    "FAMILY", "FORMS", "DEFAULT_LIMITS", "FunctionTest", "StdioTest", "CodeTest",
    "encode_value", "decode_value", "validate_code_spec", "validate_code_task",
    "function_task", "stdio_task", "task_tests", "limits_of", "float_tolerance_of",
]

FAMILY = "code"
FORMS = ("function", "stdio")
DEFAULT_LIMITS: dict[str, float] = {"timeout_s": 3.0, "memory_mb": 1024}
"""Per-execution wall-clock limit (seconds) and memory limit (MiB) when a task names none."""

_SPEC_KEYS = {"form", "entry_point", "signature", "starter_code", "public_tests", "hidden_tests",
              "host_check", "reference_solution", "limits", "float_tolerance"}
_LIMIT_KEYS = {"timeout_s", "memory_mb"}
# Builtin types a literal may hold; anything else cannot be sent to or compared from the sandbox.
_LITERAL_TYPES = (type(None), bool, int, float, str, bytes, list, tuple, dict, set, frozenset)


@dataclass(frozen=True)
class FunctionTest:
    """One call of the entry point: positional ``args`` and the exact value it must return."""

    args: tuple
    expected: Any


@dataclass(frozen=True)
class StdioTest:
    """One run of the program: text on ``stdin`` and the text it must print (compared after stripping)."""

    stdin: str
    stdout: str


CodeTest = FunctionTest | StdioTest


def encode_value(value: Any) -> str:
    """The literal text of ``value`` for a spec; raises ``InvalidTask`` unless it reads back identically."""
    _check_literal_types(value)
    text = repr(value)
    try:
        back = _read_literal(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise InvalidTask(f"value {text[:80]!r} has no literal form (a recursive container?)") from None
    if not _same_literal(back, value):
        raise InvalidTask(f"value {text[:80]!r} does not read back as itself")
    return text


def decode_value(text: Any, *, what: str = "value") -> Any:
    """Read a literal written by :func:`encode_value`; raises ``InvalidTask`` naming ``what`` on bad text.

    Accepts what :func:`ast.literal_eval` accepts, plus ``frozenset({...})``, ``inf`` and ``nan`` (the
    ``repr`` of those values); nothing is evaluated.
    """
    if not isinstance(text, str):
        raise InvalidTask(f"{what} must be a Python literal in a string (e.g. \"[1, 2]\"), "
                          f"got {type(text).__name__} {text!r:.80}")
    try:
        return _read_literal(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise InvalidTask(f"{what} {text[:80]!r} is not a Python literal ({type(exc).__name__}); "
                          "write it as repr() of plain builtins, e.g. \"(3, [1, 2])\"") from None


_SPECIAL_NAMES = {"inf": math.inf, "nan": math.nan}


def _read_literal(text: str) -> Any:
    return _literal(ast.parse(text.strip(), mode="eval").body)


def _literal(node: ast.AST) -> Any:
    """ast.literal_eval's rules, plus the reprs of frozenset, inf and nan."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id in ("frozenset", "set") and len(node.args) <= 1:
            items = _literal(node.args[0]) if node.args else ()
            if isinstance(items, (set, list, tuple, frozenset)):
                return frozenset(items) if node.func.id == "frozenset" else set(items)
        raise ValueError(f"call of {node.func.id!r} is not a literal")
    if isinstance(node, ast.Name) and node.id in _SPECIAL_NAMES:
        return _SPECIAL_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Name) and node.operand.id in _SPECIAL_NAMES:
        value = _SPECIAL_NAMES[node.operand.id]
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Tuple):
        return tuple(_literal(item) for item in node.elts)
    if isinstance(node, ast.List):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Set):
        return {_literal(item) for item in node.elts}
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("** in a dict literal")
        return {_literal(key): _literal(value) for key, value in zip(node.keys, node.values)}
    return ast.literal_eval(node)


def _check_literal_types(value: Any) -> None:
    if type(value) not in _LITERAL_TYPES:
        raise InvalidTask(f"test values must be plain builtins {[t.__name__ for t in _LITERAL_TYPES]}, "
                          f"got {type(value).__name__}")
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _check_literal_types(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_literal_types(key)
            _check_literal_types(item)


def _same_literal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_literal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(k in b and _same_literal(v, b[k]) for k, v in a.items())
    return a == b


# --------------------------------------------------------------------------- validation

def validate_code_spec(spec: Mapping[str, Any]) -> None:
    """Raise ``InvalidTask`` saying what is wrong unless ``spec`` is a well-formed code-task spec."""
    spec = thaw(spec)
    unknown = set(spec) - _SPEC_KEYS
    if unknown:
        raise InvalidTask(f"code spec has unknown keys {sorted(unknown)}; allowed: {sorted(_SPEC_KEYS)}")
    form = spec.get("form")
    if form not in FORMS:
        raise InvalidTask(f"code spec 'form' must be one of {FORMS}, got {form!r}")
    if form == "function":
        entry = spec.get("entry_point")
        if not isinstance(entry, str) or not entry.isidentifier():
            raise InvalidTask(f"a function task needs 'entry_point', a Python identifier; got {entry!r}")
    elif "host_check" in spec and spec["host_check"] is not None:
        raise InvalidTask("'host_check' needs a function task (it calls the entry point); this one is stdio")
    for key in ("signature", "starter_code", "reference_solution"):
        if spec.get(key) is not None and not isinstance(spec[key], str):
            raise InvalidTask(f"code spec {key!r} must be a string or null, got {type(spec[key]).__name__}")
    for split in ("public_tests", "hidden_tests"):
        tests = spec.get(split, [])
        if not isinstance(tests, list):
            raise InvalidTask(f"code spec {split!r} must be a list of tests, got {type(tests).__name__}")
        for index, test in enumerate(tests):
            _decode_test(form, test, f"{split}[{index}]")
    _validate_host_check(spec.get("host_check"))
    if not spec.get("hidden_tests") and not spec.get("host_check"):
        raise InvalidTask("a code task needs at least one hidden test or a host_check to compute its reward")
    _validate_limits(spec.get("limits"))
    _validate_tolerance(spec.get("float_tolerance"))


def validate_code_task(task: Task) -> None:
    """Raise ``InvalidTask`` unless ``task`` is a code task with a well-formed spec (no execution)."""
    if task.family != FAMILY:
        raise InvalidTask(f"expected a task of family {FAMILY!r}, got {task.family!r} ({task.id})")
    try:
        validate_code_spec(task.spec)
    except InvalidTask as exc:
        raise InvalidTask(f"task {task.id}: {exc}") from None


def _validate_host_check(check: Any) -> None:
    if check is None:
        return
    from rla_envs.code.tasks.host_checks import resolve_host_check

    resolve_host_check(check)  # refuses code; looks the named check up (nothing is executed)


def _validate_limits(limits: Any) -> None:
    if limits is None:
        return
    if not isinstance(limits, Mapping) or set(limits) - _LIMIT_KEYS:
        raise InvalidTask(f"'limits' must be a dict with keys among {sorted(_LIMIT_KEYS)}, got {limits!r}")
    for key, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise InvalidTask(f"'limits.{key}' must be a positive number, got {value!r}")


def _validate_tolerance(tolerance: Any) -> None:
    if tolerance is None:
        return
    if not isinstance(tolerance, Mapping) or set(tolerance) - {"rel", "abs"} or not tolerance:
        raise InvalidTask(f"'float_tolerance' must be null or {{\"rel\": x, \"abs\": y}}, got {tolerance!r}")
    for key, value in tolerance.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InvalidTask(f"'float_tolerance.{key}' must be a number >= 0, got {value!r}")


def _decode_test(form: str, test: Any, where: str) -> CodeTest:
    if not isinstance(test, Mapping):
        raise InvalidTask(f"{where} must be a dict, got {type(test).__name__}")
    if form == "stdio":
        if set(test) != {"stdin", "stdout"} or not all(isinstance(test[k], str) for k in test):
            raise InvalidTask(f"{where}: a stdio test is {{\"stdin\": str, \"stdout\": str}}, got {dict(test)!r:.120}")
        return StdioTest(stdin=test["stdin"], stdout=test["stdout"])
    if set(test) != {"args", "expected"}:
        raise InvalidTask(f"{where}: a function test is {{\"args\": literal, \"expected\": literal}}, "
                          f"got keys {sorted(test)}")
    args = decode_value(test["args"], what=f"{where}.args")
    if not isinstance(args, (tuple, list)):
        raise InvalidTask(f"{where}.args must be a tuple of positional arguments, e.g. \"(3,)\"; got {test['args']!r:.80}")
    return FunctionTest(args=tuple(args), expected=decode_value(test["expected"], what=f"{where}.expected"))


# --------------------------------------------------------------------------- reading a task

def task_tests(task: Task, *, hidden: bool = True) -> list[CodeTest]:
    """The decoded hidden (default) or public tests of a code task."""
    split = "hidden_tests" if hidden else "public_tests"
    form = task.spec["form"]
    return [_decode_test(form, test, f"{split}[{i}]") for i, test in enumerate(thaw(task.spec.get(split, ())))]


def limits_of(task: Task) -> dict[str, float]:
    """The task's execution limits, defaults filled in: ``{"timeout_s": ..., "memory_mb": ...}``."""
    return {**DEFAULT_LIMITS, **thaw(task.spec.get("limits") or {})}


def float_tolerance_of(task: Task) -> tuple[float, float] | None:
    """``(rel_tol, abs_tol)`` when the task allows approximate floats, else None (exact)."""
    tolerance = task.spec.get("float_tolerance")
    if not tolerance:
        return None
    return float(tolerance.get("rel", 0.0)), float(tolerance.get("abs", 0.0))


# --------------------------------------------------------------------------- building a task

def function_task(
    *,
    statement: str,
    entry_point: str,
    hidden: Sequence[tuple[tuple, Any]],
    public: Sequence[tuple[tuple, Any]] = (),
    reference_solution: str | None = None,
    signature: str | None = None,
    limits: Mapping[str, float] | None = None,
    float_tolerance: Mapping[str, float] | None = None,
    id: str = "",
    origin: str = "dataset",
    meta: Mapping[str, Any] | None = None,
) -> Task:
    """A validated function-form code task from Python values: tests are ``(args_tuple, expected)`` pairs."""
    spec: dict[str, Any] = {
        "form": "function",
        "entry_point": entry_point,
        "public_tests": [_encode_function_test(args, expected) for args, expected in public],
        "hidden_tests": [_encode_function_test(args, expected) for args, expected in hidden],
        "reference_solution": reference_solution,
    }
    if signature is not None:
        spec["signature"] = signature
    return _finish(spec, statement, limits, float_tolerance, id, origin, meta)


def stdio_task(
    *,
    statement: str,
    hidden: Sequence[tuple[str, str]],
    public: Sequence[tuple[str, str]] = (),
    reference_solution: str | None = None,
    limits: Mapping[str, float] | None = None,
    float_tolerance: Mapping[str, float] | None = None,
    id: str = "",
    origin: str = "dataset",
    meta: Mapping[str, Any] | None = None,
) -> Task:
    """A validated stdio-form code task: tests are ``(stdin, expected_stdout)`` pairs."""
    spec: dict[str, Any] = {
        "form": "stdio",
        "public_tests": [{"stdin": stdin, "stdout": stdout} for stdin, stdout in public],
        "hidden_tests": [{"stdin": stdin, "stdout": stdout} for stdin, stdout in hidden],
        "reference_solution": reference_solution,
    }
    return _finish(spec, statement, limits, float_tolerance, id, origin, meta)


def _encode_function_test(args: Any, expected: Any) -> dict[str, str]:
    if not isinstance(args, tuple):
        raise InvalidTask(f"function test args must be a tuple of positional arguments, got {type(args).__name__}")
    return {"args": encode_value(args), "expected": encode_value(expected)}


def _finish(spec, statement, limits, float_tolerance, id, origin, meta) -> Task:
    if limits:
        spec["limits"] = dict(limits)
    if float_tolerance:
        spec["float_tolerance"] = dict(float_tolerance)
    validate_code_spec(spec)
    return Task(family=FAMILY, instruction=statement, spec=spec, origin=origin, meta=dict(meta or {}), id=id)


