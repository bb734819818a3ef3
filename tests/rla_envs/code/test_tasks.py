"""Code task formats and loaders: schema validation, JSON round trips, the bundled set, JSONL, task files."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

import pytest

from rla_envs.code.grading import grade
from rla_envs.code.tasks import function_task, load_task, load_tasks, stdio_task, task_tests
from rla_envs.code.tasks.bundled import LEVELS, bundled_task, bundled_tasks
from rla_envs.code.tasks.formats import FunctionTest, StdioTest, encode_value, validate_code_spec
from rla_envs.code.tasks.jsonl import load_jsonl
from rla_envs.code.tasks.taskfile import load_task_file, two_form_tasks
from rla_envs.core.errors import DataNotFound, InvalidTask, TaskNotFound
from rla_envs.core.task import Task
from tests.rla_envs.code.test_grading import ATTACKS, FakeSandbox, make_real_sandbox

# --------------------------------------------------------------------------- schema


def test_function_task_round_trips_through_json_with_exact_types():
    task = function_task(statement="s", entry_point="f", id="t:1",
                         hidden=[((1, (2, 3)), {1: {"a", "b"}}), ((True,), [None, 1.5, b"x"])],
                         public=[(([],), frozenset({1}))])
    back = Task.from_json(task.to_json())
    assert back == task and back.id == "t:1"
    tests = task_tests(back)
    assert tests[0] == FunctionTest(args=(1, (2, 3)), expected={1: {"a", "b"}})
    assert type(tests[0].args[1]) is tuple and type(tests[1].args[0]) is bool
    assert task_tests(back, hidden=False) == [FunctionTest(args=([],), expected=frozenset({1}))]


def test_stdio_task_round_trips():
    task = stdio_task(statement="s", hidden=[("1\n", "2\n")], public=[("", "x")], limits={"timeout_s": 1.5})
    back = Task.from_dict(json.loads(task.to_json()))
    assert back == task and back.id == task.id  # content-hash id when none is given
    assert task_tests(back) == [StdioTest("1\n", "2\n")]
    assert back.spec["limits"]["timeout_s"] == 1.5


@pytest.mark.parametrize("spec, message", [
    ({"form": "both", "hidden_tests": []}, "form"),
    ({"form": "function", "entry_point": "not valid", "hidden_tests": []}, "entry_point"),
    ({"form": "function", "entry_point": "f", "hidden_tests": []}, "at least one hidden test"),
    ({"form": "function", "entry_point": "f", "hidden_tests": [{"args": "(1,", "expected": "1"}]}, "not a Python literal"),
    ({"form": "function", "entry_point": "f", "hidden_tests": [{"args": "1", "expected": "1"}]}, "tuple of positional"),
    ({"form": "function", "entry_point": "f", "hidden_tests": [{"args": [1], "expected": "1"}]}, "in a string"),
    ({"form": "stdio", "hidden_tests": [{"stdin": "1", "stdout": 2}]}, "stdio test"),
    ({"form": "stdio", "hidden_tests": [{"stdin": "", "stdout": ""}], "limits": {"timeout_s": 0}}, "positive"),
    ({"form": "stdio", "hidden_tests": [{"stdin": "", "stdout": ""}], "surprise": 1}, "unknown keys"),
    ({"form": "stdio", "hidden_tests": [{"stdin": "", "stdout": ""}], "float_tolerance": {"rel": -1}}, ">= 0"),
])
def test_bad_specs_are_refused_with_the_reason(spec, message):
    with pytest.raises(InvalidTask, match=message):
        validate_code_spec(spec)


def test_literals_round_trip_and_nothing_is_evaluated():
    import math
    from rla_envs.code.tasks.formats import decode_value
    assert decode_value(encode_value([float("inf"), -float("inf"), frozenset({1, (2, 3)}), set()])) == \
        [math.inf, -math.inf, frozenset({1, (2, 3)}), set()]
    with pytest.raises(InvalidTask, match="not a Python literal"):
        decode_value("__import__('os').system('true')")
    with pytest.raises(InvalidTask, match="not a Python literal"):
        decode_value("frozenset(x for x in [1])")
    with pytest.raises(InvalidTask, match="plain builtins"):
        encode_value(object())


# --------------------------------------------------------------------------- bundled set

def test_bundled_set_shape():
    tasks = bundled_tasks()
    assert len(tasks) >= 40
    assert len({t.id for t in tasks}) == len(tasks)
    for level in LEVELS:
        forms = {t.spec["form"] for t in bundled_tasks(level)}
        assert forms == {"function", "stdio"}, f"level {level} has forms {forms}"
        assert len(bundled_tasks(level)) >= 8
    for task in tasks:
        assert task.id.startswith("bundled:") and task.family == "code"
        assert len(task.spec["public_tests"]) >= 3 and len(task.spec["hidden_tests"]) >= 5, task.id
        assert task.spec["reference_solution"]
        for test in task.spec["hidden_tests"]:  # no long hidden answer quoted in the statement
            answer = test.get("expected", test.get("stdout")).strip()
            assert len(answer) < 16 or answer not in task.instruction, task.id
    assert Task.from_json(bundled_task("fizzbuzz").to_json()) == bundled_task("bundled:fizzbuzz")
    with pytest.raises(TaskNotFound, match="bundled:fizzbuzz"):
        bundled_task("fizzbuz")


def wrong_variant(task: Task) -> str:
    """The reference solution changed so that every answer is wrong (a different value or text)."""
    reference = task.spec["reference_solution"]
    if task.spec["form"] == "function":
        entry = task.spec["entry_point"]
        return reference + f"""
_rla_original = {entry}
def _rla_perturb(value):
    if type(value) is bool:
        return not value
    if type(value) in (int, float):
        return value + 1
    if type(value) is str:
        return value + "~"
    if type(value) in (list, tuple):
        return value + type(value)([None])
    if type(value) is dict:
        return {{**value, "~": 0}}
    return 0
def {entry}(*args):
    return _rla_perturb(_rla_original(*args))
"""
    return f"""import contextlib, io
_rla_buffer = io.StringIO()
with contextlib.redirect_stdout(_rla_buffer):
    exec(compile({reference!r}, "reference", "exec"), {{"__name__": "__main__"}})
print(_rla_buffer.getvalue().rstrip() + " 0")
"""


def _check_bundled(sandbox, tasks):
    failures = []
    for task in tasks:
        for hidden in (True, False):
            result = grade(task, task.spec["reference_solution"], sandbox, hidden=hidden)
            if result.reward != 1.0:
                failures.append((task.id, "reference", hidden, result.error))
        wrong = grade(task, wrong_variant(task), sandbox)
        if wrong.reward != 0.0 or wrong.passed != 0:
            failures.append((task.id, "wrong variant", wrong.reward))
    assert failures == []


def test_bundled_references_pass_and_wrong_variants_fail_fake():
    # Through the unconfined fake, so grading is covered where no confining sandbox can be made.
    _check_bundled(FakeSandbox(), bundled_tasks())


def test_bundled_references_pass_and_wrong_variants_fail_real():
    sandbox = make_real_sandbox()
    try:
        _check_bundled(sandbox, bundled_tasks())
    finally:
        sandbox.close()


def test_load_task_and_load_tasks_dispatch(tmp_path):
    assert load_task("bundled:fizzbuzz").id == "bundled:fizzbuzz"
    assert load_task("humaneval:HumanEval/12").id == "humaneval:HumanEval/12"
    assert len(load_tasks("bundled")) == len(bundled_tasks())
    path = tmp_path / "task.json"
    path.write_text(bundled_task("digit_sum").to_json())
    assert load_task(str(path)) == bundled_task("digit_sum")
    with pytest.raises(TaskNotFound):
        load_task("nope:1")


# --------------------------------------------------------------------------- JSONL (LCB, CodeContests)

def _lcb_record(**over):
    record = {
        "question_title": "Add", "question_id": "abc001_a", "platform": "atcoder", "difficulty": "easy",
        "question_content": "Print A+B.",
        "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
        "private_test_cases": json.dumps([{"input": "5 5\n", "output": "10\n", "testtype": "stdin"},
                                          {"input": "0 0\n", "output": "0\n", "testtype": "stdin"}]),
        "metadata": "{}",
    }
    record.update(over)
    return record


def _codecontests_record():
    return {
        "name": "1000_A. Sum", "description": "Print the sum of two integers.",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": {"input": ["2 2\n"], "output": ["4\n"]},
        "generated_tests": {"input": ["7 8\n", "-1 1\n"], "output": ["15\n", "0\n"]},
        "solutions": {"language": [2, 3], "solution": ["int main(){}", "print(sum(map(int, input().split())))"]},
        "time_limit": {"seconds": 2, "nanos": 500000000}, "memory_limit_bytes": 268435456,
        "cf_rating": 800, "difficulty": 7, "source": 2,
    }


def test_jsonl_loads_livecodebench_and_codecontests(tmp_path):
    compressed = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(
        [{"input": "4 4\n", "output": "8\n", "testtype": "stdin"}])))).decode()
    path = tmp_path / "mixed.jsonl"
    lines = [_lcb_record(), _lcb_record(question_id="abc002_a", private_test_cases=compressed), _codecontests_record()]
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n\n")
    lcb, lcb_compressed, cc = load_jsonl(path)
    assert lcb.id == "lcb:abc001_a" and lcb.instruction == "Print A+B." and lcb.meta["platform"] == "atcoder"
    assert task_tests(lcb, hidden=False) == [StdioTest("1 2\n", "3\n")]
    assert [t.stdin for t in task_tests(lcb)] == ["5 5\n", "0 0\n"]
    assert task_tests(lcb_compressed) == [StdioTest("4 4\n", "8\n")]
    assert cc.id == "codecontests:1000_A. Sum" and cc.meta["cf_rating"] == 800
    assert [t.stdout for t in task_tests(cc)] == ["4\n", "15\n", "0\n"]  # private + generated
    assert dict(cc.spec["limits"]) == {"timeout_s": 2.5, "memory_mb": 256}
    assert cc.spec["reference_solution"].startswith("print(")
    assert Task.from_json(cc.to_json()) == cc
    assert len(task_tests(load_jsonl(path, max_hidden_tests=1)[2])) == 1
    sandbox = FakeSandbox()
    assert grade(cc, cc.spec["reference_solution"], sandbox).reward == 1.0
    assert grade(lcb, "a, b = map(int, input().split())\nprint(a + b)\n", sandbox).reward == 1.0


def test_jsonl_refuses_pickled_code_and_skips_functional_problems(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    evil = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    path = tmp_path / "evil.jsonl"
    path.write_text(json.dumps(_lcb_record(private_test_cases=evil)) + "\n")
    with pytest.raises(InvalidTask, match="refusing global"):
        load_jsonl(path)
    functional = _lcb_record(question_id="lc1", public_test_cases=json.dumps(
        [{"input": "[1]", "output": "1", "testtype": "functional"}]))
    path.write_text(json.dumps(functional) + "\n" + json.dumps(_lcb_record()) + "\n")
    with pytest.warns(UserWarning, match="skipped 1 problem"):
        assert [t.id for t in load_jsonl(path)] == ["lcb:abc001_a"]
    with pytest.raises(InvalidTask, match="functional"):
        load_jsonl(path, skip_unsupported=False)
    path.write_text('{"title": "x"}\n')
    with pytest.raises(InvalidTask, match="unknown layout"):
        load_jsonl(path)
    with pytest.raises(DataNotFound):
        load_jsonl(tmp_path / "missing.jsonl")


# --------------------------------------------------------------------------- two-form task files

@pytest.mark.skipif(not (ATTACKS / "task.json").is_file(), reason="../shared/sandbox-attacks is not here")
def test_attack_task_json_loads_in_both_forms():
    function = load_task_file(ATTACKS / "task.json", "function")
    stdio = load_task_file(ATTACKS / "task.json", "stdio")
    assert function.id == "square_plus_one/function" and stdio.id == "square_plus_one/stdio"
    assert function.spec["entry_point"] == "solve"
    assert task_tests(function)[4] == FunctionTest(args=(100000,), expected=10000000001)
    assert task_tests(stdio)[2] == StdioTest(stdin="-7\n", stdout="50")
    assert dict(function.spec["limits"]) == {"timeout_s": 3.0, "memory_mb": 2048}
    assert set(two_form_tasks(json.loads((ATTACKS / "task.json").read_text()))) == {"function", "stdio"}
    assert load_task(str(ATTACKS / "task.json"), form="stdio") == stdio
    with pytest.raises(InvalidTask, match="not offered"):
        load_task_file(ATTACKS / "task.json", "interactive")
