"""TextWorld task sets: the cached default set, specs and user game files."""

from __future__ import annotations

import shutil
import time

import pytest

from rla_envs.core import DataNotFound, InvalidTask
from rla_envs.textworld.generate import normalize_spec
from rla_envs.textworld.tasks import default_tasks, game_file_for, tasks_from_game_files


def test_default_tasks_are_cached(tw_tasks):
    levels = [t.meta["level"] for t in tw_tasks]
    start = time.perf_counter()
    again = default_tasks(games_per_level=1, levels=levels, progress=False)
    assert again == tw_tasks and time.perf_counter() - start < 2.0  # read from the index, not regenerated
    assert levels == ["custom-2", "simple", "cooking-1"]
    assert all(t.family == "textworld" and t.origin == "generated" and t.instruction for t in tw_tasks)
    assert len({t.id for t in tw_tasks}) == len(tw_tasks)


def test_spec_rebuilds_the_same_task(tw_tasks):
    from rla_envs.textworld.tasks import task_from_spec

    task = tw_tasks[0]
    assert task_from_spec(task.spec, meta=dict(task.meta)).id == task.id


def test_user_game_files(tw_tasks, tmp_path, tw_env):
    source = game_file_for(tw_tasks[0])
    shutil.copy(source, tmp_path / "mine.z8")
    shutil.copy(source.with_suffix(".json"), tmp_path / "mine.json")
    (task,) = tasks_from_game_files([tmp_path])
    assert task.spec["game_file"] == str(tmp_path / "mine.z8") and task.origin == "dataset"
    assert task.instruction == tw_tasks[0].instruction
    tw_env.reset(options={"task": task})
    for action in tw_env.walkthrough:
        _, reward, *_ = tw_env.step(action)
    assert reward == 1.0


@pytest.mark.parametrize("spec, error, match", [
    ({"generator": "tw-nope", "seed": 1}, InvalidTask, "unknown textworld generator"),
    ({"generator": "tw-custom"}, InvalidTask, "integer 'seed'"),
    ({"generator": "tw-custom", "seed": 1, "settings": {"rooms": 3}}, InvalidTask, "not supported"),
    ({"generator": "tw-custom", "seed": 1, "colour": "red"}, InvalidTask, "unknown keys"),
    ({"game_file": "/nowhere/game.ulx"}, InvalidTask, "Glulx"),
    ({"game_file": "/nowhere/game.z8"}, DataNotFound, "must both exist"),
    ({}, InvalidTask, "exactly one of"),
])
def test_bad_specs_say_what_to_fix(spec, error, match):
    with pytest.raises(error, match=match):
        normalize_spec(spec)


def test_missing_json_is_reported(tmp_path, tw_tasks):
    shutil.copy(game_file_for(tw_tasks[0]), tmp_path / "lonely.z8")
    with pytest.raises(DataNotFound):
        tasks_from_game_files([tmp_path / "lonely.z8"])
