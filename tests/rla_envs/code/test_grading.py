"""Host-side grading: exact-type comparison, stdout normalisation, verdicts, host checks, the attack task.

Unit tests run programs through ``FakeSandbox`` below: the Sandbox interface implemented with plain,
UNCONFINED subprocesses (test-only, trusted programs). Tests marked by the ``real_sandbox`` fixture use
``make_sandbox("local")`` and skip with the reason when this machine or checkout cannot provide it.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.paths import SANDBOX_ATTACKS

from rla_envs.code.grading import GradeResult, grade, normalize_stdout, same_value, stdout_matches
from rla_envs.code.sandbox.base import Call, CallResult, Limits, decode_value
from rla_envs.code.tasks import function_task, load_task, stdio_task
from rla_envs.code.tasks.taskfile import load_task_file

ATTACKS = SANDBOX_ATTACKS

# --------------------------------------------------------------------------- the fake sandbox

_WORKER = r"""
import base64, json, os, pickle, sys, types
def encode(value):  # the tagged record of rla_envs.code.sandbox.base.encode_value, stdlib only
    kind = type(value)
    if value is None: return ["none", None]
    if kind is bool: return ["bool", value]
    if kind is int: return ["int", str(value)]
    if kind is float: return ["float", repr(value)]
    if kind is str: return ["str", value]
    if kind is bytes: return ["bytes", base64.b64encode(value).decode("ascii")]
    if kind in (list, tuple, set, frozenset): return [kind.__name__, [encode(v) for v in value]]
    if kind is dict: return ["dict", [[encode(k), encode(v)] for k, v in value.items()]]
    raise TypeError(f"type {kind.__qualname__} is not an exact builtin type")
calls_in = os.fdopen(int(sys.argv[2]), "rb")
results_out = os.fdopen(int(sys.argv[3]), "w")
module = types.ModuleType("solution")
load_error = None
try:
    exec(compile(open(sys.argv[1]).read(), "solution.py", "exec"), module.__dict__)
except BaseException as exc:
    load_error = f"{type(exc).__name__}: {exc}"
for line in calls_in:
    function, args = pickle.loads(base64.b64decode(line))  # from the test itself: trusted
    if load_error:
        record = {"status": "error", "error": load_error}
    else:
        try:
            record = {"status": "ok", "value": encode(getattr(module, function)(*args))}
        except BaseException as exc:
            record = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    results_out.write(json.dumps(record) + "\n")
    results_out.flush()
"""


class FakeSession:
    """A function-form session in one unconfined subprocess; calls go over a pipe as tagged JSON."""

    def __init__(self, program: str, limits: Limits):
        self._limits = limits
        self._dir = tempfile.TemporaryDirectory()
        path = Path(self._dir.name) / "solution.py"
        path.write_text(program)
        calls_r, self._calls_w = os.pipe()
        self._results_r, results_w = os.pipe()
        self._process = subprocess.Popen(
            [sys.executable, "-S", "-c", _WORKER, str(path), str(calls_r), str(results_w)],
            pass_fds=(calls_r, results_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, cwd=self._dir.name)
        os.close(calls_r)
        os.close(results_w)
        self._reader = os.fdopen(self._results_r, "r")
        self._dead = False

    def call(self, call: Call) -> CallResult:
        if self._dead:
            return CallResult(status="no_result", error="the session ended")
        started = time.monotonic()
        os.write(self._calls_w, base64.b64encode(pickle.dumps((call.function, tuple(call.args)))) + b"\n")
        ready, _, _ = select.select([self._reader], [], [], self._limits.timeout_s)
        seconds = time.monotonic() - started
        if not ready:
            self._kill()
            return CallResult(status="timeout", error="time limit exceeded", seconds=seconds)
        line = self._reader.readline()
        if not line:
            self._kill()
            return CallResult(status="crashed", error="the program died", seconds=seconds)
        record = json.loads(line)
        value = decode_value(record["value"]) if record["status"] == "ok" else None
        return CallResult(status=record["status"], value=value, error=record.get("error", ""), seconds=seconds)

    def _kill(self):
        self._dead = True
        self._process.kill()
        self._process.wait()

    def close(self):
        if not self._dead:
            os.close(self._calls_w)
            self._process.wait(timeout=10)
            self._dead = True
        self._reader.close()
        self._dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FakeSandbox:
    """The Sandbox interface over unconfined subprocesses — for tests of the grader only."""

    name = "fake-unconfined"

    def run(self, program, calls, limits=Limits()):
        if calls and calls[0].form == "function":
            with self.session(program, limits) as session:
                return [session.call(call) for call in calls]
        return [self._stdio(program, call, limits) for call in calls]

    def session(self, program, limits=Limits()):
        return FakeSession(program, limits)

    def _stdio(self, program, call, limits):
        started = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-S", "-c", program], input=call.stdin, capture_output=True,
                                  text=True, timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            return CallResult(status="timeout", error="time limit exceeded", seconds=time.monotonic() - started)
        return CallResult(status="ok" if done.returncode == 0 else "error", stdout=done.stdout,
                          stderr=done.stderr, exit_code=done.returncode, seconds=time.monotonic() - started)

    def close(self):
        pass

    def capabilities(self):
        return {"confined": False}


class ScriptedSandbox:
    """Returns the CallResults it was given, whatever the program: for verdict logic without processes."""

    name = "scripted"

    def __init__(self, results):
        self.results = results
        self.calls = []

    def run(self, program, calls, limits=Limits()):
        self.calls.extend(calls)
        return list(self.results)


@pytest.fixture(scope="module")
def fake_sandbox():
    return FakeSandbox()


def make_real_sandbox():
    """``make_sandbox("local")``, or pytest.skip with the reason it cannot be had here."""
    try:
        from rla_envs.code.sandbox import make_sandbox
        from rla_envs.code.sandbox.base import ConfinementUnavailable
    except ImportError as exc:
        pytest.skip(f"sandbox package not importable: {exc}")
    try:
        return make_sandbox("local")
    except ImportError as exc:
        pytest.skip(f"local sandbox backend not available yet: {exc}")
    except ConfinementUnavailable as exc:
        pytest.skip(f"this machine cannot confine: {exc}")


@pytest.fixture(scope="module")
def real_sandbox():
    sandbox = make_real_sandbox()
    yield sandbox
    sandbox.close()


# --------------------------------------------------------------------------- exact-type comparison

@pytest.mark.parametrize("got, expected, equal", [
    (1, 1, True),
    (True, 1, False),          # bool is not int
    (1, True, False),
    (1, 1.0, False),           # int is not float
    (1.0, 1, False),
    ((1, 2), [1, 2], False),   # tuple is not list
    ([1, 2], [1, 2], True),
    ([1, (2, 3)], [1, [2, 3]], False),
    ({"a": [1]}, {"a": [1]}, True),
    ({1: "x"}, {True: "x"}, False),    # dict keys compared with exact types
    ({1: "x"}, {1.0: "x"}, False),
    ({(1, True)}, {(1, 1)}, False),    # inside a set too
    (frozenset({1}), {1}, False),
    (None, 0, False),
    ("1", 1, False),
    (b"a", "a", False),
    (float("nan"), float("nan"), True),
    (0.1 + 0.2, 0.3, False),           # no tolerance unless the task says so
])
def test_same_value_requires_exact_types(got, expected, equal):
    assert same_value(got, expected) is equal


def test_int_subclass_never_equals_int():
    class Sneaky(int):
        def __eq__(self, other):
            return True
        __hash__ = int.__hash__

    assert not same_value(Sneaky(5), 5)
    assert not same_value([Sneaky(5)], [5])


def test_float_tolerance_only_when_given():
    assert not same_value(0.1 + 0.2, 0.3)
    assert same_value(0.1 + 0.2, 0.3, (1e-9, 0.0))
    assert same_value([1.0000001], [1.0], (1e-6, 0.0))
    assert not same_value(1, 1.0, (1e-6, 1e-6))  # a tolerance never makes int equal float


def test_stdout_normalisation():
    assert normalize_stdout("  \n1 2  \n3\t\n\n") == "1 2\n3"
    assert stdout_matches("1 2   \r\n3\r\n", "1 2\n3\n")
    assert not stdout_matches("1  2\n3", "1 2\n3")  # inner whitespace counts
    assert not stdout_matches("0.3333", "0.333333")
    assert stdout_matches("0.3333334", "0.333333", (1e-5, 0.0))
    assert not stdout_matches("abc 0.3", "abd 0.3", (1e-5, 0.0))


# --------------------------------------------------------------------------- verdict logic

def _square_task(**kw):
    return function_task(statement="square", entry_point="f", hidden=[((2,), 4), ((3,), 9), ((4,), 16)],
                         public=[((1,), 1)], **kw)


def test_missing_results_fail_the_tests_they_cover():
    sandbox = ScriptedSandbox([CallResult(status="ok", value=4)])  # one result for three calls
    result = grade(_square_task(), "irrelevant", sandbox)
    assert (result.passed, result.total, result.reward) == (1, 3, pytest.approx(1 / 3))
    assert [o.verdict for o in result.per_test] == ["passed", "no_result", "no_result"]
    assert all(call.function == "f" for call in sandbox.calls) and sandbox.calls[1].args == (3,)


def test_timeout_and_wrong_type_verdicts():
    sandbox = ScriptedSandbox([CallResult(status="ok", value=4.0), CallResult(status="timeout", seconds=3.0),
                               CallResult(status="ok", value=True)])
    result = grade(_square_task(), "irrelevant", sandbox)
    assert result.reward == 0.0 and result.timed_out
    assert [o.verdict for o in result.per_test] == ["wrong_answer", "timeout", "wrong_answer"]
    assert result.error.startswith("test 0: wrong_answer")


def test_expected_values_are_not_sent_and_hidden_ones_not_reported():
    sandbox = ScriptedSandbox([CallResult(status="ok", value=0)] * 3)
    result = grade(_square_task(), "irrelevant", sandbox)
    assert [call.args for call in sandbox.calls] == [(2,), (3,), (4,)]
    assert all(outcome.expected is None for outcome in result.per_test)
    public = grade(_square_task(), "irrelevant", ScriptedSandbox([CallResult(status="ok", value=0)]), hidden=False)
    assert public.total == 1 and public.per_test[0].expected == "1"


def test_stdio_exit_code_does_not_count_but_a_kill_does():
    task = stdio_task(statement="echo", hidden=[("1\n", "1"), ("2\n", "2"), ("3\n", "3")])
    sandbox = ScriptedSandbox([CallResult(status="error", stdout="1\n", exit_code=1),
                               CallResult(status="output_limit", stdout="2\n"),
                               CallResult(status="ok", stdout="4\n", exit_code=0)])
    result = grade(task, "irrelevant", sandbox)
    assert [o.verdict for o in result.per_test] == ["passed", "output_limit", "wrong_answer"]
    assert [call.stdin for call in sandbox.calls] == ["1\n", "2\n", "3\n"]


def test_result_summary_is_the_cli_record():
    result = GradeResult(0.5, 1, 2, False, "test 1: wrong_answer", ())
    assert json.loads(json.dumps(result.summary())) == {
        "reward": 0.5, "passed": 1, "total": 2, "timed_out": False, "error": "test 1: wrong_answer"}


# --------------------------------------------------------------------------- through a sandbox

def test_fake_sandbox_grades_a_function_task(fake_sandbox):
    task = _square_task()
    assert grade(task, "def f(x):\n    return x * x\n", fake_sandbox).reward == 1.0
    assert grade(task, "def f(x):\n    return x * x * 1.0\n", fake_sandbox).reward == 0.0  # floats
    broken = grade(task, "def f(x):\n    return x +\n", fake_sandbox)
    assert broken.reward == 0.0 and "SyntaxError" in broken.error


def test_eq_override_cannot_forge_a_pass(fake_sandbox):
    program = ("class Always(int):\n    def __eq__(self, other):\n        return True\n"
               "def f(x):\n    return Always(0)\n")
    result = grade(_square_task(), program, fake_sandbox)
    assert result.reward == 0.0  # the int subclass cannot even leave the sandbox


def test_stdio_task_through_fake_sandbox(fake_sandbox):
    task = stdio_task(statement="add", hidden=[("1 2\n", "3"), ("5 5\n", "10"), ("0 0\n", "0")])
    good = "a, b = map(int, input().split())\nprint(a + b, '  ')\n"
    assert grade(task, good, fake_sandbox).reward == 1.0
    slow = "import time\ntime.sleep(10)\n"
    result = grade(stdio_task(statement="x", hidden=[("", "1")], limits={"timeout_s": 0.5}), slow, fake_sandbox)
    assert result.reward == 0.0 and result.timed_out


def _grade_attack_pair(sandbox):
    rewards = {}
    for form in ("function", "stdio"):
        task = load_task_file(ATTACKS / "task.json", form)
        for name in ("good_solution", "wrong_solution"):
            rewards[form, name] = grade(task, (ATTACKS / f"{name}.py").read_text(), sandbox).reward
    return rewards


EXPECTED_ATTACK_REWARDS = {("function", "good_solution"): 1.0, ("function", "wrong_solution"): 0.0,
                           ("stdio", "good_solution"): 1.0, ("stdio", "wrong_solution"): 0.0}


@pytest.mark.skipif(not (ATTACKS / "task.json").is_file(), reason="../shared/sandbox-attacks is not here")
def test_attack_corpus_honest_files_score_1_and_0_fake(fake_sandbox):
    assert _grade_attack_pair(fake_sandbox) == EXPECTED_ATTACK_REWARDS


@pytest.mark.skipif(not (ATTACKS / "task.json").is_file(), reason="../shared/sandbox-attacks is not here")
def test_attack_corpus_honest_files_score_1_and_0_real(real_sandbox):
    assert _grade_attack_pair(real_sandbox) == EXPECTED_ATTACK_REWARDS


def test_host_check_with_scripted_proxy(fake_sandbox):
    # A host check runs on the host; the candidate's answers come back from the sandbox as plain values.
    task = load_task("humaneval:HumanEval/0")
    good = task.spec["reference_solution"]
    assert grade(task, good, fake_sandbox).reward == 1.0
    forged = good + "\nclass Yes:\n    def __eq__(self, o):\n        return True\n" \
                    "def has_close_elements(numbers, threshold):\n    return Yes()\n"
    result = grade(task, forged, fake_sandbox)
    assert result.reward == 0.0 and result.per_test[0].verdict == "error"  # Yes() cannot be sent back
    swallow = good + "\ndef has_close_elements(numbers, threshold):\n    import time\n    time.sleep(5)\n"
    slow_task = task.derive(instruction=task.instruction, origin="mutated",
                            spec={**dict(task.spec), "limits": {"timeout_s": 0.3, "memory_mb": 1024}})
    result = grade(slow_task, swallow, fake_sandbox)
    assert result.reward == 0.0 and result.timed_out
