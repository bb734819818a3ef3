"""python -m rla_envs.code.grade: one JSON line per graded program, clear errors otherwise."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import pytest

from tests.paths import SANDBOX_ATTACKS

from rla_envs.code.grade import main

ATTACKS = SANDBOX_ATTACKS
KEYS = ["reward", "passed", "total", "timed_out", "error"]


@functools.lru_cache(maxsize=1)
def _confinement_problem() -> str | None:
    """Why the local sandbox cannot confine here (None when it can)."""
    from rla_envs.code.sandbox import ConfinementUnavailable, make_sandbox

    try:
        make_sandbox("local").close()
    except ConfinementUnavailable as exc:
        return str(exc)
    return None


needs_confinement = pytest.mark.skipif(_confinement_problem() is not None,
                                       reason=f"the local sandbox cannot confine here: {_confinement_problem()}")
needs_attacks = pytest.mark.skipif(not (ATTACKS / "task.json").is_file(),
                                   reason=f"no sandbox-attacks corpus at {ATTACKS}")


def _grade(capsys, *argv: str) -> tuple[int, dict | None, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) <= 1
    return status, (json.loads(lines[0]) if lines else None), err


@needs_attacks
@needs_confinement
@pytest.mark.parametrize("form", ["function", "stdio"])
@pytest.mark.parametrize("solution, reward", [("good_solution.py", 1.0), ("wrong_solution.py", 0.0)])
def test_sandbox_attacks_task_scores_the_honest_solutions(capsys, form, solution, reward):
    status, result, _ = _grade(capsys, "--task", str(ATTACKS / "task.json"), "--solution",
                               str(ATTACKS / solution), "--form", form)
    assert status == 0 and list(result) == KEYS
    assert result["reward"] == reward and result["total"] == 5 and result["passed"] == 5 * reward
    assert result["timed_out"] is False


@needs_attacks
@needs_confinement
def test_python_dash_m_prints_exactly_one_json_line():
    proc = subprocess.run([sys.executable, "-m", "rla_envs.code.grade", "--task", str(ATTACKS / "task.json"),
                           "--solution", str(ATTACKS / "good_solution.py")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stdout.splitlines()
    assert json.loads(line) == {"reward": 1.0, "passed": 5, "total": 5, "timed_out": False, "error": None}


@needs_confinement
def test_bundled_task_id_with_its_reference_solution(capsys, tmp_path):
    from rla_envs.code.tasks import load_task

    solution = tmp_path / "fizzbuzz.py"
    solution.write_text(load_task("bundled:fizzbuzz").spec["reference_solution"])
    status, result, _ = _grade(capsys, "--task", "bundled:fizzbuzz", "--solution", str(solution))
    assert status == 0 and result["reward"] == 1.0 and result["passed"] == result["total"] > 0


@needs_confinement
def test_an_answer_with_a_fenced_block_and_a_garbage_answer(capsys, tmp_path):
    answer = tmp_path / "answer.md"
    answer.write_text("Sure:\n```python\nn = int(input())\nfor i in range(1, n + 1):\n"
                      "    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else\n"
                      "          'Buzz' if i % 5 == 0 else i)\n```\n")
    assert _grade(capsys, "--task", "bundled:fizzbuzz", "--solution", str(answer))[1]["reward"] == 1.0
    answer.write_text("no idea, sorry")
    status, result, _ = _grade(capsys, "--task", "bundled:fizzbuzz", "--solution", str(answer))
    assert status == 0 and result["reward"] == 0.0 and "does not compile" in result["error"]


def test_unknown_task_missing_file_and_missing_backend_exit_2_with_a_reason(capsys, tmp_path):
    solution = tmp_path / "s.py"
    solution.write_text("print(1)\n")
    status, result, err = _grade(capsys, "--task", "bundled:fizzbuz", "--solution", str(solution))
    assert (status, result) == (2, None) and "bundled:fizzbuzz" in err  # suggests the closest id
    status, _, err = _grade(capsys, "--task", str(tmp_path / "nope.json"), "--solution", str(solution))
    assert status == 2 and "does not exist" in err
    status, _, err = _grade(capsys, "--task", "bundled:fizzbuzz", "--solution", str(tmp_path / "missing.py"))
    assert status == 2 and "cannot read solution" in err


def test_docker_backend_names_what_is_missing(capsys, tmp_path):
    from rla_envs.code.sandbox import BACKENDS

    solution = tmp_path / "s.py"
    solution.write_text("print(1)\n")
    if "docker" in BACKENDS:
        pytest.skip("the docker backend exists; its own tests (marker docker) cover it")
    status, result, err = _grade(capsys, "--task", "bundled:fizzbuzz", "--solution", str(solution),
                                 "--backend", "docker")
    assert (status, result) == (2, None) and "docker backend" in err and "local" in err


@needs_confinement
def test_a_program_writing_a_100000_deep_record_scores_0_without_a_traceback(capsys, tmp_path):
    from rla_envs.code.tasks import load_task

    reference = load_task("bundled:digit_sum").spec["reference_solution"]
    solution = tmp_path / "deep.py"
    solution.write_text("import os\nos.write(4, b'[' * 100000 + b']' * 100000 + b'\\n')\n" + reference)
    status, result, err = _grade(capsys, "--task", "bundled:digit_sum", "--solution", str(solution))
    assert status == 0 and result["reward"] < 1.0 and "Traceback" not in err
