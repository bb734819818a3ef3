"""The coding variant: the reward model writes unit tests, run in the local sandbox against programs."""

from __future__ import annotations

import json

import pytest

from rla_envs.code.tasks.bundled import bundled_task
from rla_envs.code.tasks.formats import task_tests
from rla_envs.core.task import Task, thaw
from rla_train.backends.scripted import ScriptedBackend
from rla_train.reward_model import (
    GeneratedTest, UnitTestWriter, parse_tests, program_correct, run_tests, trivial_programs, trivially_passed,
)

GCD_WRONG = "def gcd_lcm(a, b):\n    return (1, a * b)\n"          # right only for coprime a, b
FIZZ_WRONG = "n = int(input())\nfor i in range(1, n + 1):\n    print(i)\n"


def fenced(tests) -> str:
    return f"Here are my tests:\n```json\n{json.dumps(tests)}\n```"


def writer_answer(prompt: str) -> str:
    """A test writer that knows gcd_lcm and fizzbuzz; garbage for anything else."""
    if "gcd_lcm" in prompt:
        return fenced([{"args": [4, 6], "expected": [2, 12]},        # list read as a tuple (public examples)
                       {"args": [7, 5], "expected": [1, 35]},
                       {"args": [6, 9], "expected": [3, 19]},        # a wrong test: lcm is 18
                       {"args": "4, 6", "expected": [2, 12]},        # wrong type: invalid
                       {"args": [1, 1], "expected": [1, 1]}])        # over tests_per_answer: ignored
    if "FizzBuzz" in prompt:
        return fenced([{"input": "3\n", "output": "1\n2\nFizz\n"}, {"input": "2", "output": 2}])
    return "I cannot write tests for this ```json [oops```"


@pytest.fixture(scope="module")
def sandbox():
    from rla_envs.code.sandbox import ConfinementUnavailable, make_sandbox

    try:
        box = make_sandbox("local")
    except ConfinementUnavailable:
        box = make_sandbox("local", unsafe=True)     # these tests run only their own programs
    yield box
    box.close()


def test_writer_makes_one_call_and_stores_tests_in_the_task_format():
    gcd, fizz, digits = bundled_task("gcd_lcm"), bundled_task("fizzbuzz"), bundled_task("digit_sum")
    backend = ScriptedBackend(writer_answer)
    written = UnitTestWriter(backend, tests_per_answer=4, samples=2).write([gcd, fizz, digits])

    assert backend.batch_sizes == [3]
    assert "```json" in backend.prompts_seen[0] and '"expected"' in backend.prompts_seen[0]
    assert '"input"' in backend.prompts_seen[1] and '"output"' in backend.prompts_seen[1]

    gcd_tests = written[0]
    assert [t.sample for t in gcd_tests] == [0] * 4 + [1] * 4
    assert [t.valid for t in gcd_tests[:4]] == [True, True, True, False]
    assert gcd_tests[0].test == {"args": "(4, 6)", "expected": "(2, 12)"}
    assert "must be a JSON list" in gcd_tests[3].reason and gcd_tests[3].test is None

    fizz_tests = written[1]
    assert fizz_tests[0].test == {"stdin": "3\n", "stdout": "1\n2\nFizz\n"}
    assert not fizz_tests[1].valid and "stdio test" in fizz_tests[1].reason

    assert [(t.valid, t.sample) for t in written[2]] == [(False, 0), (False, 1)]   # one entry per bad answer
    assert "JSON" in written[2][0].reason


@pytest.mark.parametrize("answer, reason", [
    ("no tests today", "no ```json block"),
    ("```json\n{\"args\": [1]}\n```", "expected a JSON list"),
    ("```json\n[]\n```", "empty"),
    ("```json\n[{\"args\": [1]}]\n```", "got keys ['args']"),
    ("```json\n[{\"args\": [{\"x\": [1, 2]}], \"expected\": 3}]\n```", None),      # valid: dict arg
    ("```json\n[{\"args\": [1], \"expected\": 3}, 7]\n```", "JSON object"),
])
def test_parse_tests_records_garbage_with_the_reason(answer, reason):
    tests = parse_tests(bundled_task("digit_sum"), answer)
    assert all(isinstance(t, GeneratedTest) for t in tests)
    if reason is None:
        assert all(t.valid for t in tests)
    else:
        assert reason in tests[-1].reason and not tests[-1].valid


@pytest.mark.parametrize("name, test, reason", [
    ("fizzbuzz", {"input": "3\n", "output": ""}, "prints nothing"),
    ("fizzbuzz", {"input": "3\n", "output": " \n\t\n"}, "prints nothing"),
    ("gcd_lcm", {"args": [4, 6], "expected": None}, "returns nothing"),
])
def test_a_test_the_empty_program_passes_is_refused_when_read(name, test, reason):
    task = bundled_task(name)
    [read] = parse_tests(task, fenced([test]))
    assert not read.valid and read.test is None and reason in read.reason


def test_tests_a_program_solving_nothing_passes_get_a_column_of_false(sandbox):
    """Storage-format tests skip the reading checks; the sandbox run of the trivial programs still finds them."""
    fizz = bundled_task("fizzbuzz")
    real = dict(fizz.spec["hidden_tests"][0])
    tests = [{"stdin": "3\n", "stdout": ""}, real, {"stdin": "", "stdout": "\n \n"}]
    silent = "import sys\nsys.stdin.read()\n"                           # reads, prints nothing
    assert trivially_passed(fizz, tests, sandbox).tolist() == [True, False, True]
    passes = run_tests(fizz, [fizz.spec["reference_solution"], silent], tests, sandbox)
    assert passes.tolist() == [[False, True, False], [False, False, False]]

    gcd = bundled_task("gcd_lcm")
    assert trivial_programs(gcd) == ["def gcd_lcm(*args, **kwargs):\n    return None\n"]
    tests = [{"args": "(4, 6)", "expected": "None"}, {"args": "(4, 6)", "expected": "(2, 12)"}]
    lazy = "def gcd_lcm(a, b):\n    pass\n"
    assert trivially_passed(gcd, tests, sandbox).tolist() == [True, False]
    assert run_tests(gcd, [gcd.spec["reference_solution"], lazy], tests, sandbox).tolist() == [[False, True],
                                                                                             [False, False]]


def test_pass_matrix_against_a_correct_and_a_wrong_program(sandbox):
    task = bundled_task("gcd_lcm")
    [tests] = UnitTestWriter(ScriptedBackend(writer_answer), tests_per_answer=4, samples=1).write(task)
    reference = task.spec["reference_solution"]
    answer = f"My solution:\n```python\n{GCD_WRONG}```"                 # a policy answer, read like the env does
    passes = run_tests(task, [reference, answer, "this is not python ((("], tests, sandbox)

    assert passes.dtype == bool and passes.shape == (3, 4)
    assert passes.tolist() == [[True, True, False, False],       # the reference fails only the wrong test
                               [False, True, False, False],      # the wrong program passes the coprime case
                               [False, False, False, False]]     # no program: fails everything
    assert program_correct(task, [reference, answer, ""], sandbox).tolist() == [True, False, False]


def test_stdio_tests_and_storage_dicts_run_too(sandbox):
    task = bundled_task("fizzbuzz")
    real = [dict(test) for test in task.spec["hidden_tests"][:2]]            # storage-format dicts work as is
    written = parse_tests(task, writer_answer("FizzBuzz"))
    passes = run_tests(task, [task.spec["reference_solution"], FIZZ_WRONG], real + written, sandbox)
    assert passes.tolist() == [[True, True, True, False], [False, False, False, False]]
    assert run_tests(task, [FIZZ_WRONG], [written[1]], sandbox).tolist() == [[False]]   # nothing valid to run
    assert run_tests(task, [], written, sandbox).shape == (0, 2)


def test_host_check_tasks_run_generated_tests_and_grade_correctness_on_the_check(sandbox, monkeypatch):
    """A HumanEval-style task (host check, no listed tests): generated tests still run."""
    from rla_envs.code.tasks import host_checks

    monkeypatch.setitem(host_checks._SOURCES, "test", lambda name: host_checks.HostCheck(
        code="def check(candidate):\n    assert candidate(123) == 6\n"))
    base = bundled_task("digit_sum")
    spec = dict(thaw(base.spec))
    spec["hidden_tests"] = []
    spec["host_check"] = {"source": "test", "task_id": "digit_sum"}
    task = Task(family="code", instruction=base.instruction, spec=spec)
    tests = parse_tests(task, fenced([{"args": [99], "expected": 18}, {"args": [0], "expected": 0}]))
    reference = base.spec["reference_solution"]
    wrong = "def digit_sum(n):\n    return n % 10\n"
    assert run_tests(task, [reference, wrong], tests, sandbox).tolist() == [[True, True], [False, True]]
    assert program_correct(task, [reference, wrong], sandbox).tolist() == [True, False]
    assert len(task_tests(task)) == 0


def test_writer_validates_its_arguments():
    backend = ScriptedBackend(["x"])
    with pytest.raises(ValueError, match="samples must be an int >= 1"):
        UnitTestWriter(backend, samples=0)
    with pytest.raises(ValueError, match="must be a code Task"):
        UnitTestWriter(backend).write([Task(family="alfworld", instruction="x", spec={})])
    assert UnitTestWriter(backend).write([]) == [] and backend.batch_sizes == []
