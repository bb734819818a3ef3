"""Loading OSWorld task files as-is: the 369 real tasks, and files that are not tasks."""

import json
from pathlib import Path

import pytest

from rla_envs.core.errors import DataNotFound
from rla_envs.core.task import Task
from rla_envs.desktop.osworld.errors import BadTaskFile
from rla_envs.desktop.osworld.tasks import load_task, load_tasks, osworld_json
from tests.paths import OSWORLD_TASKS

EXAMPLES = OSWORLD_TASKS / "examples"
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"OSWorld task files not found at {EXAMPLES}")


@needs_examples
def test_all_real_tasks_load_unchanged():
    files = sorted(EXAMPLES.glob("*/*.json"))
    tasks = load_tasks(EXAMPLES)
    assert len(files) == 369 and len(tasks) == 369
    by_source = {task.meta["source"]: task for task in tasks}
    for path in files:
        raw = json.loads(path.read_text(encoding="utf-8"))
        task = by_source[str(path)]
        assert task.family == "desktop" and task.origin == "dataset"
        assert task.instruction == raw["instruction"]
        assert task.meta["osworld_id"] == raw["id"] == path.stem
        assert task.meta["app"] == path.parent.name
        assert osworld_json(task) == raw  # the JSON round-trips unchanged
        assert Task.from_json(task.to_json()) == task
    assert len({task.id for task in tasks}) == 369


@needs_examples
def test_index_file_is_skipped_when_loading_the_parent_folder():
    assert (OSWORLD_TASKS / "test_all.json").is_file()
    assert len(load_tasks(OSWORLD_TASKS)) == 369


def test_load_task_from_a_dict_uses_its_snapshot_as_app():
    raw = {"id": "abc", "instruction": "Do it.", "snapshot": "libreoffice_calc", "config": [],
           "evaluator": {"func": "infeasible"}}
    task = load_task(raw)
    assert task.meta["app"] == "libreoffice_calc" and task.meta["source"] == ""
    assert osworld_json(task) == raw and osworld_json(raw) == raw


@pytest.mark.parametrize("raw, missing", [
    ({"instruction": "x", "evaluator": {"func": "infeasible"}}, "id"),
    ({"id": "a", "evaluator": {"func": "infeasible"}}, "instruction"),
    ({"id": "a", "instruction": "x"}, "evaluator"),
])
def test_a_dict_missing_a_key_is_refused_with_the_key_named(raw, missing):
    with pytest.raises(BadTaskFile, match=missing):
        load_task(raw)


def test_bad_files_and_folders(tmp_path: Path):
    with pytest.raises(DataNotFound):
        load_tasks(tmp_path / "nowhere")
    with pytest.raises(DataNotFound, match="holds no OSWorld task"):
        load_tasks(tmp_path)
    (tmp_path / "app").mkdir()
    broken = tmp_path / "app" / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(BadTaskFile, match="broken.json"):
        load_tasks(tmp_path)
    broken.write_text(json.dumps({"id": "x", "instruction": "y", "evaluator": "not an object"}))
    with pytest.raises(BadTaskFile, match="evaluator"):
        load_task(broken)
    with pytest.raises(BadTaskFile, match="config"):
        load_task({"id": "x", "instruction": "y", "evaluator": {"func": "infeasible"}, "config": "launch"})
