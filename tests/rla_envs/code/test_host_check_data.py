"""A task's ``host_check`` only names a shipped check: code carried in task data never runs on the host.

Each entry point a task dict comes in through (the grade CLI's --task file, a JSONL line, a saved pool,
``reset(options={"task": ...})``, a TRL dataset row) gets a task whose ``host_check`` would create a marker
file when executed; it must be refused with an InvalidTask naming the field, and the marker must not exist.
"""

from __future__ import annotations

import json

import pytest

from rla_envs.code.tasks import load_task
from rla_envs.core.errors import InvalidTask
from rla_envs.core.task import Task

CARRIES_CODE = "'host_check' carries code"


@pytest.fixture
def marker(tmp_path):
    return tmp_path / "host-check-ran"


def hostile_task_dict(marker) -> dict:
    """A bundled function task whose host_check, if executed anywhere, writes ``marker``."""
    base = load_task("bundled:digit_sum").to_dict()
    payload = f"open({str(marker)!r}, 'w').write('pwned')\n"
    base["spec"] = {**base["spec"], "host_check": {"setup": payload, "code": payload + "def check(c):\n    pass\n",
                                                   "function": "check"}}
    base.pop("id", None)
    return base


def test_validation_refuses_code_and_names_the_fix(marker):
    from rla_envs.code.tasks.host_checks import resolve_host_check, validate_host_check_ref

    for ref in ({"code": "x"}, {"setup": "x", "source": "humaneval", "task_id": "HumanEval/0"}):
        with pytest.raises(InvalidTask, match=CARRIES_CODE) as error:
            validate_host_check_ref(ref)
        assert '"source": "humaneval"' in str(error.value) and "hidden_tests" in str(error.value)
    with pytest.raises(InvalidTask, match="not a known check source"):
        validate_host_check_ref({"source": "nowhere", "task_id": "1"})
    with pytest.raises(InvalidTask, match="names no check"):
        resolve_host_check({"source": "humaneval", "task_id": "HumanEval/999"})
    with pytest.raises(InvalidTask, match=CARRIES_CODE):
        load_task_via_validation(hostile_task_dict(marker))
    assert not marker.exists()


def load_task_via_validation(data: dict) -> Task:
    from rla_envs.code.tasks import validate_code_task

    task = Task.from_dict(data)
    validate_code_task(task)
    return task


def test_grade_cli_task_file(tmp_path, marker, capsys):
    from rla_envs.code.grade import main

    task_file, solution = tmp_path / "task.json", tmp_path / "sol.py"
    task_file.write_text(json.dumps(hostile_task_dict(marker)))
    solution.write_text("def digit_sum(n):\n    return sum(map(int, str(n)))\n")
    assert main(["--task", str(task_file), "--solution", str(solution), "--unsafe"]) == 2
    assert CARRIES_CODE in capsys.readouterr().err
    assert not marker.exists()


def test_jsonl_task_line(tmp_path, marker):
    from rla_envs.code.tasks.jsonl import load_jsonl

    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(hostile_task_dict(marker)) + "\n")
    with pytest.raises(InvalidTask, match=CARRIES_CODE):
        load_jsonl(path, skip_unsupported=False)
    with pytest.raises(InvalidTask, match=CARRIES_CODE):
        load_jsonl(path)  # not an "unsupported layout" to skip quietly either
    assert not marker.exists()


def test_reset_with_a_task_dict(marker):
    from rla_envs.code.env import CodeEnv

    env = CodeEnv()
    try:
        with pytest.raises(InvalidTask, match=CARRIES_CODE):
            env.reset(options={"task": hostile_task_dict(marker)})
    finally:
        env.close()
    assert not marker.exists()


def test_saved_pool_json(tmp_path, marker):
    from rla_envs.code.env import CodeEnv
    from rla_envs.curriculum.pool import TaskPool

    honest = load_task("bundled:digit_sum")
    path = TaskPool([honest]).save(tmp_path / "pool.json")
    hostile = Task.from_dict(hostile_task_dict(marker))
    data = json.loads(path.read_text())
    text = json.dumps(data).replace(honest.id, hostile.id)
    data = json.loads(text)
    data["tasks"] = [hostile.to_dict()]
    path.write_text(json.dumps(data))
    pool = TaskPool.load(path)  # the pool keeps plain data; nothing in it runs
    env = CodeEnv()
    try:
        for task in pool.active_tasks():
            with pytest.raises(InvalidTask, match=CARRIES_CODE):
                env.reset(options={"task": task})
    finally:
        env.close()
    assert not marker.exists()


def test_trl_dataset_row(marker):
    from rla_train.adapters.trl_env import environment_factory

    env = environment_factory("rla/Code-v0")()
    for row_task in (hostile_task_dict(marker), json.dumps(hostile_task_dict(marker))):
        with pytest.raises(InvalidTask, match=CARRIES_CODE):
            env.reset(task=row_task, prompt=[{"role": "user", "content": ""}])
    assert not marker.exists()


def test_grading_refuses_code_even_past_validation(marker):
    """Defence in depth: a Task built without validation still never has its host_check executed."""
    from rla_envs.code.grading import _grade_host_check, sandbox_limits

    task = Task.from_dict(hostile_task_dict(marker))
    with pytest.raises(InvalidTask, match=CARRIES_CODE):
        _grade_host_check(task, "", None, sandbox_limits(task))
    assert not marker.exists()
