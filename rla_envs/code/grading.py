"""Grading a program against a code task, on the host: the sandbox only runs it and returns plain values.

Expected outputs never enter the sandbox. Function-form tests send only the arguments; the values come
back decoded into plain builtins and are compared here with **exact types** (:func:`same_value`): ``True``
is not ``1``, ``1`` is not ``1.0``, a tuple is not a list, an int subclass is not an int. Floats must be
identical unless the task sets ``float_tolerance`` (then ``math.isclose`` with its ``rel``/``abs``).
Stdio-form tests compare stdout after :func:`normalize_stdout` (surrounding whitespace and each line's
trailing whitespace removed); the exit code does not count, a timeout or resource kill does.

HumanEval-style tasks name a trusted ``host_check`` shipped with rla (:mod:`rla_envs.code.tasks.host_checks`;
a task never carries the code): its ``check(candidate)`` runs here, on the host, with
a proxy ``candidate`` that forwards each call into a sandbox :class:`Session` and returns the decoded value.
So an ``__eq__`` override, a printed "PASSED" or a forged exit code inside the sandbox cannot make a
comparison succeed. The check's own assertions decide, with Python's ``==`` as in HumanEval's harness (so
there ``5.0 == 5`` passes); the exact-type rule applies to tasks graded on their listed tests. A crash, timeout or missing result fails every test it covers.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

from rla_envs.code.sandbox.base import Call, CallResult, Limits
from rla_envs.code.tasks.formats import (
    FunctionTest, StdioTest, float_tolerance_of, limits_of, task_tests, validate_code_task,
)
from rla_envs.code.tasks.host_checks import resolve_host_check
from rla_envs.core.errors import InvalidTask
from rla_envs.core.task import Task, thaw

__all__ = ["GradeResult", "TestOutcome", "grade", "same_value", "normalize_stdout", "stdout_matches",
           "sandbox_limits", "HOST_CHECK_BUDGET_FACTOR"]

HOST_CHECK_BUDGET_FACTOR = 10.0
"""A host check may spend at most this many times the task's ``timeout_s`` in sandbox calls in total."""
_SHOWN_CHARS = 200  # how much of a returned value or stdout a TestOutcome keeps


@dataclass(frozen=True)
class TestOutcome:
    """The verdict on one test.

    Attributes:
        index: position of the test in the graded split (0 for a host check).
        passed: whether the program's answer matched exactly.
        verdict: ``"passed"``, ``"wrong_answer"``, or the sandbox status that failed it (``"error"``,
            ``"timeout"``, ``"memory"``, ``"output_limit"``, ``"crashed"``, ``"no_result"``).
        seconds: sandbox time of the execution (summed over calls for a host check).
        error: the exception text or reason, when there is one.
        got: a short repr of the returned value (function form) or the start of stdout (stdio form).
        expected: a short repr of the expected answer — only when grading public tests, never hidden ones.
    """

    __test__ = False  # not a pytest class

    index: int
    passed: bool
    verdict: str
    seconds: float = 0.0
    error: str | None = None
    got: str | None = None
    expected: str | None = None


@dataclass(frozen=True)
class GradeResult:
    """The outcome of grading one program: ``reward = passed / total`` and what happened per test."""

    reward: float
    passed: int
    total: int
    timed_out: bool
    error: str | None
    per_test: tuple[TestOutcome, ...] = ()

    def summary(self) -> dict[str, Any]:
        """The one-line JSON record of the grading CLI: reward, passed, total, timed_out, error."""
        return {"reward": self.reward, "passed": self.passed, "total": self.total,
                "timed_out": self.timed_out, "error": self.error}

    def to_dict(self) -> dict[str, Any]:
        """Everything, as plain data (for ``info``)."""
        return {**self.summary(), "per_test": [asdict(outcome) for outcome in self.per_test]}


# --------------------------------------------------------------------------- comparisons

def same_value(got: Any, expected: Any, float_tolerance: tuple[float, float] | None = None) -> bool:
    """True when ``got`` equals ``expected`` with exactly the same types, recursively.

    ``float_tolerance`` is ``(rel_tol, abs_tol)`` for floats (also inside containers);
    None means floats must be identical (two NaNs count as identical).
    """
    kind = type(expected)
    if type(got) is not kind:
        return False
    if kind is float:
        return _floats_match(got, expected, float_tolerance)
    if kind in (list, tuple):
        return len(got) == len(expected) and all(
            same_value(g, e, float_tolerance) for g, e in zip(got, expected))
    if kind is dict:
        if len(got) != len(expected):
            return False
        got_by_key = {_exact_key(k): v for k, v in got.items()}
        return all(_exact_key(k) in got_by_key and same_value(got_by_key[_exact_key(k)], v, float_tolerance)
                   for k, v in expected.items())
    if kind in (set, frozenset):
        return {_exact_key(x) for x in got} == {_exact_key(x) for x in expected}
    if kind in (type(None), bool, int, str, bytes):
        return got == expected
    return False  # not a plain builtin: never trusted


def _floats_match(got: float, expected: float, tolerance: tuple[float, float] | None) -> bool:
    if math.isnan(expected):
        return math.isnan(got)
    if tolerance is None:
        return got == expected
    rel, abs_ = tolerance
    return math.isclose(got, expected, rel_tol=rel, abs_tol=abs_)


def _exact_key(value: Any) -> Any:
    """A hashable form of ``value`` that differs whenever the exact types differ (for dict keys, sets)."""
    kind = type(value)
    if kind in (tuple, frozenset):
        items = tuple(_exact_key(v) for v in value)
        return (kind.__name__, items if kind is tuple else frozenset(items))
    if kind is float and math.isnan(value):
        return ("float", "nan")
    return (kind.__name__, value)


def normalize_stdout(text: str) -> str:
    """Stdout as compared: surrounding whitespace stripped, each line's trailing whitespace removed."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def stdout_matches(got: str, expected: str, float_tolerance: tuple[float, float] | None = None) -> bool:
    """True when ``got`` prints what ``expected`` says (tokens as floats within the tolerance, if any)."""
    got, expected = normalize_stdout(got), normalize_stdout(expected)
    if got == expected:
        return True
    if float_tolerance is None:
        return False
    got_lines, expected_lines = got.split("\n"), expected.split("\n")
    if len(got_lines) != len(expected_lines):
        return False
    for got_line, expected_line in zip(got_lines, expected_lines):
        got_tokens, expected_tokens = got_line.split(), expected_line.split()
        if len(got_tokens) != len(expected_tokens):
            return False
        for g, e in zip(got_tokens, expected_tokens):
            if g != e and not _float_tokens_match(g, e, float_tolerance):
                return False
    return True


def _float_tokens_match(got: str, expected: str, tolerance: tuple[float, float]) -> bool:
    try:
        return _floats_match(float(got), float(expected), tolerance)
    except ValueError:
        return False


# --------------------------------------------------------------------------- grading

def sandbox_limits(task: Task) -> Limits:
    """The sandbox :class:`Limits` for running programs of ``task`` (its timeout and memory)."""
    limits = limits_of(task)
    return Limits(timeout_s=float(limits["timeout_s"]), memory_mb=int(limits["memory_mb"]))


def grade(task: Task, program: str, sandbox, *, hidden: bool = True) -> GradeResult:
    """Run ``program`` on the hidden (default) or public tests of ``task`` in ``sandbox`` and score it here.

    ``sandbox`` is any object with the :class:`~rla_envs.code.sandbox.base.Sandbox` interface (``run`` and,
    for tasks with a ``host_check``, ``session``). Tasks with a host check are graded by it when
    ``hidden`` is True (one test: the whole check). A task with no tests in the requested split scores 0
    with an ``error`` saying so.
    """
    validate_code_task(task)
    limits = sandbox_limits(task)
    if hidden and task.spec.get("host_check"):
        return _grade_host_check(task, program, sandbox, limits)
    tests = task_tests(task, hidden=hidden)
    if not tests:
        split = "hidden" if hidden else "public"
        return GradeResult(0.0, 0, 0, False, f"task {task.id} has no {split} tests", ())
    tolerance = float_tolerance_of(task)
    if task.spec["form"] == "function":
        calls = [Call(function=task.spec["entry_point"], args=test.args) for test in tests]
    else:
        calls = [Call(stdin=test.stdin) for test in tests]
    results = list(sandbox.run(program, calls, limits))
    outcomes = tuple(_judge(index, test, results[index] if index < len(results) else None, tolerance, hidden)
                     for index, test in enumerate(tests))
    return _summarise(outcomes)


def _judge(index: int, test, result: CallResult | None, tolerance, hidden: bool) -> TestOutcome:
    """The verdict on one test from its sandbox result (None: the sandbox returned no result for it)."""
    expected_shown = None if hidden else _short(test.expected if isinstance(test, FunctionTest) else test.stdout,
                                                as_repr=isinstance(test, FunctionTest))
    if result is None:
        return TestOutcome(index, False, "no_result", 0.0, "the sandbox returned no result for this test",
                           None, expected_shown)
    seconds = float(result.seconds or 0.0)
    if isinstance(test, StdioTest):
        # The exit code does not count in stdio form; being killed (timeout, memory, output) does.
        if result.status not in ("ok", "error"):
            return TestOutcome(index, False, result.status, seconds, _reason(result), _short(result.stdout),
                               expected_shown)
        passed = stdout_matches(result.stdout or "", test.stdout, tolerance)
        verdict = "passed" if passed else ("error" if result.status == "error" else "wrong_answer")
        return TestOutcome(index, passed, verdict, seconds, None if passed else _reason(result),
                           _short(result.stdout), expected_shown)
    if result.status != "ok":
        return TestOutcome(index, False, result.status, seconds, _reason(result), None, expected_shown)
    passed = same_value(result.value, test.expected, tolerance)
    return TestOutcome(index, passed, "passed" if passed else "wrong_answer", seconds, None,
                       _short(result.value, as_repr=True), expected_shown)


def _summarise(outcomes: tuple[TestOutcome, ...]) -> GradeResult:
    passed = sum(outcome.passed for outcome in outcomes)
    total = len(outcomes)
    failed = [outcome for outcome in outcomes if not outcome.passed]
    error = None
    if failed:
        first = failed[0]
        error = f"test {first.index}: {first.verdict}" + (f": {first.error}" if first.error else "")
    return GradeResult(reward=passed / total if total else 0.0, passed=passed, total=total,
                       timed_out=any(outcome.verdict == "timeout" for outcome in outcomes),
                       error=error, per_test=outcomes)


def _reason(result: CallResult) -> str | None:
    text = result.error or (result.stderr or "").strip()[-_SHOWN_CHARS:] or None
    if result.status == "timeout" and not text:
        text = "time limit exceeded"
    return text


def _short(value: Any, *, as_repr: bool = False) -> str | None:
    if value is None and not as_repr:
        return None
    text = repr(value) if as_repr else str(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


# --------------------------------------------------------------------------- host checks (HumanEval)

class _CandidateFailed(BaseException):
    """Raised into a host check when a sandbox call did not return a value.

    A BaseException, so a check's ``except Exception`` cannot swallow it; the proxy also records every
    failure, so even a bare ``except:`` cannot turn a failed call into a pass.
    """


class _SandboxCandidate:
    """The ``candidate`` a host check calls: each call runs the entry point in the sandbox session."""

    def __init__(self, session, entry_point: str, budget_s: float):
        self._session = session
        self._entry_point = entry_point
        self._budget_s = budget_s
        self.seconds = 0.0
        self.calls = 0
        self.failures: list[CallResult] = []

    def __call__(self, *args, **kwargs):
        if kwargs:  # the sandbox call protocol carries positional arguments only
            raise TypeError(f"{self._entry_point}() is called with positional arguments only")
        if self.failures:
            raise _CandidateFailed(self.failures[0].status)
        if self.seconds > self._budget_s:
            self.failures.append(_budget_exceeded(self._budget_s))
            raise _CandidateFailed("timeout")
        result = self._session.call(Call(function=self._entry_point, args=tuple(args)))
        self.calls += 1
        self.seconds += float(result.seconds or 0.0)
        if result.status != "ok":
            self.failures.append(result)
            raise _CandidateFailed(result.status)
        return result.value


def _budget_exceeded(budget_s: float) -> CallResult:
    return CallResult(status="timeout", value=None, stdout="", stderr="",
                      error=f"the check's sandbox calls took more than {budget_s:.1f} s in total",
                      exit_code=None, seconds=0.0)


def _grade_host_check(task: Task, program: str, sandbox, limits: Limits) -> GradeResult:
    """Run the shipped check the task names on the host against a sandboxed candidate: one test, pass or fail."""
    try:
        check = resolve_host_check(thaw(task.spec["host_check"]))
    except InvalidTask as exc:
        raise InvalidTask(f"task {task.id}: {exc}") from None
    namespace: dict[str, Any] = {"__name__": "__rla_host_check__"}
    # Code shipped with rla or its dependencies (resolved by name above), never text from the task dict.
    exec(compile(check.setup, f"<{task.id} setup>", "exec"), namespace)
    exec(compile(check.code, f"<{task.id} check>", "exec"), namespace)
    check_function = namespace[check.function]
    started = time.monotonic()
    with sandbox.session(program, limits) as session:
        candidate = _SandboxCandidate(session, task.spec["entry_point"],
                                      HOST_CHECK_BUDGET_FACTOR * limits.timeout_s)
        # As in HumanEval's own harness, the entry point's name means the program's function (HumanEval/33
        # compares ``candidate(x)`` with ``sort_third(x)``); the setup's stub must not answer for it.
        namespace[task.spec["entry_point"]] = candidate
        verdict, error = "passed", None
        try:
            check_function(candidate)
        except _CandidateFailed:
            pass  # recorded in candidate.failures
        except AssertionError as exc:
            verdict, error = "wrong_answer", f"assertion failed{': ' + str(exc) if str(exc) else ''}"
        except Exception as exc:  # the check choked on what came back (e.g. None where a list was due)
            verdict, error = "wrong_answer", f"check raised {type(exc).__name__}: {exc}"[:_SHOWN_CHARS]
    if candidate.failures:
        failure = candidate.failures[0]
        verdict, error = failure.status, _reason(failure)
    elif candidate.calls == 0 and verdict == "passed":
        verdict, error = "no_result", "the check never called the program"
    seconds = candidate.seconds or (time.monotonic() - started)
    outcome = TestOutcome(0, verdict == "passed", verdict, seconds, error)
    return _summarise((outcome,))
