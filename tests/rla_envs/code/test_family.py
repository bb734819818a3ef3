"""CodeFamily: describe, apply_rewrite (curator-shaped JSON), validate and LLM-free mutations."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rla_envs.code.family import HINT_MARKER, REWRITE_FORMAT, CodeFamily, leaked_tests
from rla_envs.code.tasks.formats import function_task, stdio_task
from rla_envs.core import InvalidTask, RewriteRejected, TaskFamily, get_family

SQUARE = "def solve(x):\n    y = x * x\n    return y + 1\n"


@pytest.fixture(scope="module")
def family():
    from rla_envs.code.sandbox import ConfinementUnavailable, make_sandbox

    try:
        box = make_sandbox("local")
    except ConfinementUnavailable:  # the tests run only their own programs
        box = make_sandbox("local", unsafe=True)
    yield CodeFamily(sandbox=box)
    box.close()


@pytest.fixture(scope="module")
def square_task():
    return function_task(statement="Write solve(x) that returns x*x + 1.", entry_point="solve",
                         public=[((2,), 5)], hidden=[((7,), 50), ((-3,), 10), ((0,), 1)], reference_solution=SQUARE)


@pytest.fixture(scope="module")
def bundled():
    from rla_envs.code.tasks.bundled import bundled_tasks

    return bundled_tasks()


def test_get_family_returns_the_code_hooks():
    hooks = get_family("code")
    assert isinstance(hooks, CodeFamily) and isinstance(hooks, TaskFamily) and hooks.name == "code"


def test_describe_shows_statement_tests_solution_and_format(family, bundled):
    task = bundled[0]
    text = family.describe(task)
    assert task.instruction in text and task.spec["reference_solution"] in text
    assert "Public examples (3)" in text and REWRITE_FORMAT in text
    assert json.dumps(dict(task.spec["hidden_tests"][0])) in text


def test_validate_accepts_one_bundled_task_per_level(family, bundled):
    for level in (1, 2, 3, 4):
        family.validate(next(t for t in bundled if t.meta["level"] == level))


@pytest.mark.slow
def test_validate_accepts_every_bundled_task(family, bundled):
    for task in bundled:
        family.validate(task)


def test_validate_rejects_missing_or_wrong_reference_solutions(family, square_task):
    spec = dict(square_task.spec)
    with pytest.raises(InvalidTask, match="no reference solution"):
        family.validate(square_task.derive(instruction=square_task.instruction,
                                           spec={**spec, "reference_solution": None}, origin="mutated"))
    wrong = square_task.derive(instruction=square_task.instruction, origin="mutated",
                               spec={**spec, "reference_solution": "def solve(x):\n    return x * x\n"})
    with pytest.raises(InvalidTask, match="passes 0 of 3 hidden tests"):
        family.validate(wrong)


def test_validate_rejects_nondeterministic_results(family):
    noisy = "import os\ndef solve(x):\n    return 0.5 + int.from_bytes(os.urandom(2), 'big') * 1e-12\n"
    task = function_task(statement="Return one half.", entry_point="solve", hidden=[((1,), 0.5), ((2,), 0.5)],
                         reference_solution=noisy, float_tolerance={"rel": 1e-6, "abs": 1e-6})
    with pytest.raises(InvalidTask, match="not deterministic"):
        family.validate(task)


def test_validate_rejects_a_statement_that_gives_away_hidden_outputs(family, square_task):
    leaky = square_task.derive(instruction="Write solve(x) that returns x*x + 1. Note: solve(7) returns 50.",
                               spec=square_task.spec, origin="mutated")
    assert leaked_tests(leaky) == [0]
    with pytest.raises(InvalidTask, match=r"gives away .* hidden tests \[0\]"):
        family.validate(leaky)
    # the public example shown on purpose, and numbers that merely occur, are not leaks
    shown = stdio_task(statement="Print n + 1. Input: 4 Output: 5. n is at most 1000.", public=[("4\n", "5\n")],
                       hidden=[("4\n", "5\n"), ("999\n", "1000\n")], reference_solution="print(int(input()) + 1)\n")
    assert leaked_tests(shown) == []


def test_apply_rewrite_builds_a_validated_task_from_a_curator_proposal(family, square_task):
    proposal = ("I will make it about cubes.\n```json\n" + json.dumps({
        "question": "Write solve(x) that returns x**3 - x.",
        "tests": [{"input": [2], "output": 6}, {"input": [-3], "output": -24}, {"input": [5], "output": 120}],
        "solution": "def solve(x):\n    return x ** 3 - x\n",
        "reasoning": "cubes are harder than squares",
    }) + "\n```")
    new = family.apply_rewrite(square_task, proposal)
    assert new.origin == "rewritten" and new.parent == square_task.id and new.family == "code"
    assert new.instruction == "Write solve(x) that returns x**3 - x."
    assert [dict(t) for t in new.spec["hidden_tests"]][1] == {"args": "(-3,)", "expected": "-24"}
    assert len(new.spec["public_tests"]) == 1 and new.spec["public_tests"][0] == new.spec["hidden_tests"][0]
    assert list(new.meta["rewrite"]) == ["question", "solution", "tests"]


def test_apply_rewrite_keeps_the_old_solution_and_accepts_stdio_text(family, bundled):
    task = next(t for t in bundled if t.id == "bundled:fizzbuzz")
    proposal = json.dumps({"question": task.instruction + " (n may be as large as 40.)",
                           "tests": [{"input": "7", "output": "1\n2\nFizz\n4\nBuzz\nFizz\n7"},
                                     {"input": 2, "output": "1\n2"}]})
    new = family.apply_rewrite(task, proposal)
    assert new.spec["hidden_tests"][0]["stdin"] == "7\n"
    assert new.spec["reference_solution"] == task.spec["reference_solution"]


@pytest.mark.parametrize("text, reason", [
    ("", "empty"),
    ("make it harder please", "no JSON object"),
    ('{"tests": [{"input": [1], "output": 2}]}', "needs 'question'"),
    ('{"question": "Q", "tests": []}', "needs 'tests'"),
    ('{"question": "Q", "tests": "1 -> 2"}', "needs 'tests'"),
    ('{"question": "Q", "tests": [{"in": [1], "out": 2}]}', r"tests\[0\]"),
    ('{"question": "Q", "tests": [{"input": 1, "output": 2}]}', "list of positional arguments"),
    ('{"question": "Q", "tests": [{"input": [1], "output": 2}], "difficulty": 3}', "unknown keys"),
    ('{"question": "Q", "tests": [{"input": [1], "output": 3}]}', "reference solution passes 0 of 1"),
    ('{"question": "Q", "tests": [{"input": [1], "output": 2}], "solution": "def solve(:"}', "not valid"),
    ('{"question": "solve(2) returns 5", "tests": [{"input": [1], "output": 2}, {"input": [2], "output": 5}]}',
     "gives away"),
])
def test_apply_rewrite_rejects_malformed_proposals_with_the_reason(family, square_task, text, reason):
    with pytest.raises(RewriteRejected, match=reason):
        family.apply_rewrite(square_task, text)


def test_mutate_easier_and_harder_make_validated_children(family, square_task):
    seen = set()
    for seed in range(6):
        for direction in ("easier", "harder"):
            new = family.mutate(square_task, direction, np.random.default_rng(seed))
            label = new.meta["mutation"]
            seen.add(label.split(" ")[0] + " " + direction)
            assert new.origin == "mutated" and new.parent == square_task.id
            if label == "reveal example":
                assert len(new.spec["public_tests"]) == 2
            elif label == "hide example":
                assert len(new.spec["public_tests"]) == 0
            elif label.startswith("hint"):
                assert HINT_MARKER in new.instruction and "def solve(x):" in new.instruction
            else:
                factor = 2 if direction == "easier" else 0.5
                assert new.spec["limits"]["timeout_s"] == 3.0 * factor
    assert {"reveal easier", "hint easier", "limits easier", "hide harder", "limits harder"} <= seen


def test_mutate_is_reproducible_and_hints_go_both_ways(family, square_task):
    first = family.mutate(square_task, "easier", np.random.default_rng(3))
    assert first == family.mutate(square_task, "easier", np.random.default_rng(3))
    hinted = square_task.derive(instruction=square_task.instruction + HINT_MARKER + "```python\ndef solve(x):\n```",
                                spec=square_task.spec, origin="mutated")
    labels = {family.mutate(hinted, "harder", np.random.default_rng(s)).meta["mutation"] for s in range(8)}
    assert "hint 1->0" in labels
    unhinted = next(family.mutate(hinted, "harder", np.random.default_rng(s)) for s in range(8)
                    if family.mutate(hinted, "harder", np.random.default_rng(s)).meta["mutation"] == "hint 1->0")
    assert unhinted.instruction == square_task.instruction


def test_mutate_raises_when_no_edit_is_valid(family):
    bare = function_task(statement="Return x.", entry_point="solve", hidden=[((1,), 1)],
                         reference_solution="def solve(x):\n    return x\n",
                         limits={"timeout_s": 0.5, "memory_mb": 128})  # already the tightest limits
    with pytest.raises(RewriteRejected, match="no harder mutation"):
        family.mutate(bare, "harder", np.random.default_rng(0))
    with pytest.raises(ValueError, match="direction"):
        family.mutate(bare, "sideways", np.random.default_rng(0))
