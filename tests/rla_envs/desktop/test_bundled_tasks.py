"""The bundled desktop tasks: well-formed OSWorld JSON with their files; each scripted solution scores 1 and a
no-op scores 0, on the local desktop (marker ``desktop``) and in the container (marker ``docker``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from rla_envs.desktop.actions import parse_action
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.metrics import get_metric
from rla_envs.desktop.osworld.runnable import not_runnable_reasons
from rla_envs.desktop.osworld.tasks import osworld_json
from rla_envs.desktop.tasks import EXAMPLES_DIR, FILES_DIR, bundled_tasks, solution_steps
from rla_envs.desktop.tasks.build import build
from tests.rla_envs.desktop.conftest import docker_client_or_skip, image_or_skip

TASKS = bundled_tasks()
IDS = [task.meta["osworld_id"] for task in TASKS]


def urls_of(value) -> list[str]:
    """Every rla-bundled:// URL anywhere in a task's JSON."""
    if isinstance(value, dict):
        return [url for item in value.values() for url in urls_of(item)]
    if isinstance(value, list):
        return [url for item in value for url in urls_of(item)]
    return [value] if isinstance(value, str) and value.startswith("rla-bundled://") else []


def test_at_least_two_tasks_for_every_app():
    assert len(set(IDS)) == len(IDS)
    per_app = Counter(task.meta["app"] for task in TASKS)
    assert set(per_app) == {"mousepad", "os", "libreoffice_calc", "libreoffice_writer", "libreoffice_impress",
                            "chrome", "gimp", "thunderbird", "vlc"}
    assert min(per_app.values()) >= 2, per_app
    assert all(task.family == "desktop" and task.origin == "dataset" for task in TASKS)


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_task_is_runnable_and_its_files_are_bundled(task):
    raw = osworld_json(task)
    # on a desktop with the apps (the machine running the tests need not have them: the desktop tests check that)
    assert not_runnable_reasons(raw, cache=FileCache(None), has_app=lambda program: True) == []
    for url in urls_of(raw):
        assert (FILES_DIR / url.removeprefix("rla-bundled://")).is_file(), url
    assert raw["instruction"] == task.instruction


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_solution_steps_are_valid_actions(task):
    steps = solution_steps(task)
    kinds = [parse_action(step).kind for step in steps]
    assert kinds[-1] in ("DONE", "FAIL") and set(kinds[:-1]) <= {"code"}, kinds
    assert (osworld_json(task)["evaluator"]["func"] == "infeasible") == (kinds[-1] == "FAIL")


@pytest.mark.parametrize("task", [t for t in TASKS if osworld_json(t)["evaluator"].get("expected", {}).get("type")
                                  == "cloud_file"], ids=lambda t: t.meta["osworld_id"])
def test_gold_file_scores_one_and_the_untouched_input_zero(task):
    evaluator = osworld_json(task)["evaluator"]
    metric = get_metric(evaluator["func"])
    options = evaluator.get("options") or {}
    gold = FILES_DIR / evaluator["expected"]["path"].removeprefix("rla-bundled://")
    assert metric(str(gold), str(gold), **options) == 1.0
    result_name = Path(evaluator["result"]["path"]).name
    inputs = [p for p in gold.parent.iterdir() if p.name == result_name]
    for untouched in inputs:  # tasks that create their file have no input: a missing file scores 0
        assert metric(str(untouched), str(gold), **options) == 0.0
    assert metric(None, str(gold), **options) == 0.0


def test_build_script_regenerates_the_same_tasks(tmp_path):
    build(tmp_path / "examples", tmp_path / "files")
    shipped = sorted(p.relative_to(EXAMPLES_DIR) for p in EXAMPLES_DIR.rglob("*.json"))
    assert sorted(p.relative_to(tmp_path / "examples") for p in (tmp_path / "examples").rglob("*.json")) == shipped
    for relative in shipped:
        assert json.loads((tmp_path / "examples" / relative).read_text()) == json.loads(
            (EXAMPLES_DIR / relative).read_text()), relative
    shipped_files = sorted(p.relative_to(FILES_DIR) for p in FILES_DIR.rglob("*") if p.is_file())
    assert sorted(p.relative_to(tmp_path / "files") for p in (tmp_path / "files").rglob("*") if p.is_file()) \
        == shipped_files
    for relative in shipped_files:
        if relative.suffix in (".txt", ".log", ".sh"):
            assert (tmp_path / "files" / relative).read_bytes() == (FILES_DIR / relative).read_bytes()


# ----------------------------------------------------------------- live: the local desktop and the container

def play(env, task, actions) -> dict:
    env.reset(options={"task": task})
    info = {}
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert terminated, f"the episode did not end: {info}"
    assert info["evaluation_error"] is None, info["evaluation_error"]
    assert reward == info["score"]
    return info


def check_solution_and_no_op(env, task) -> None:
    solved = play(env, task, solution_steps(task))
    assert solved["score"] == 1.0 and solved["won"], solved
    idle = play(env, task, ["DONE"])
    assert idle["score"] == 0.0 and not idle["won"], idle


@pytest.fixture(scope="module")
def local_env(local_provider):
    from rla_envs.desktop.env import OSWorldEnv

    env = OSWorldEnv(provider=local_provider, accessibility_tree=False, max_steps=30)
    yield env
    env.close()


@pytest.mark.desktop
@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_solution_scores_one_and_no_op_zero_locally(local_env, task):
    check_solution_and_no_op(local_env, task)


@pytest.fixture(scope="module")
def docker_env():
    from rla_envs.desktop.env import OSWorldEnv
    from rla_envs.desktop.providers.docker import DockerProvider

    api = docker_client_or_skip()
    image_or_skip(api)
    provider = DockerProvider(screen_size=(1280, 800), client=api)
    env = OSWorldEnv(provider=provider, accessibility_tree=False, max_steps=30)
    yield env
    env.close()
    provider.close()


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_solution_scores_one_and_no_op_zero_in_the_container(docker_env, task):
    check_solution_and_no_op(docker_env, task)
