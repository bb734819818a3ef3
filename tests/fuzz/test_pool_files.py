"""Fuzz: a saved TaskPool edited by hand (or by a bad disk) loads into a working pool or fails with one line
naming the file and the field."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings

from rla_envs.core.errors import DataNotFound, InvalidFile, RlaError
from rla_envs.core.task import Task
from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.pool_config import PoolConfig
from tests.fuzz.strategies import FUZZ, assert_clear_error, dumps, edited, outcome


def _saved_pool() -> dict:
    tasks = [Task(family="toy", instruction=f"task {i}", spec={"level": i}, origin="dataset") for i in range(3)]
    pool = TaskPool(tasks, PoolConfig(seed=1, snapshot_every=4, min_observations=2, zero_variance_repeats=1))
    rng = np.random.default_rng(0)
    for _ in range(4):
        for task in pool.sample(2):
            pool.record_group(task.id, list(rng.random(4) < 0.5))
    root = tasks[0].id
    pool.propose(root, tasks[0].derive(instruction="task 0 v1", spec={"level": 9}, origin="rewritten"),
                 direction="harder")
    pool.reject(root, "too_hard", {"parent": 0.5, "child": 0.0})
    pool.propose(root, tasks[0].derive(instruction="task 0 v2", spec={"level": 5}, origin="rewritten"),
                 direction="harder")
    pool.accept(root, {"parent": 0.5, "child": 0.3})
    pool.propose(tasks[1].id, tasks[1].derive(instruction="task 1 v1", spec={"level": 1.5}, origin="rewritten"))
    return pool.to_dict()


SAVED = _saved_pool()


def _load_and_use(path):
    pool = TaskPool.load(path)
    pool.weights()
    for task in pool.sample(3):
        pool.record(task.id, 1.0)
    pool.candidates_for_rewrite()
    pool.to_dict()


def test_the_saved_pool_loads_and_continues(tmp_path):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(SAVED))
    _load_and_use(path)


@settings(FUZZ, max_examples=500)
@given(document=edited(SAVED, extra_keys=("tasks", "slots", "stats", "config", "rng_state", "history")))
def test_edited_pool_files_load_and_work_or_name_the_file(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("pool") / "pool.json"
    path.write_text(dumps(document), encoding="utf-8", errors="surrogatepass")
    assert_clear_error(outcome(_load_and_use, path), allowed=(InvalidFile, DataNotFound), names=(str(path),))


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["slots"][0].pop("active"), "slots[0].active"),
    (lambda d: d["stats"].update({next(iter(d["stats"])): {"alpha": "x"}}), "alpha"),
    (lambda d: d.update(episodes=10**400), "episodes"),
    (lambda d: d["config"].update(decay=2), "decay"),
    (lambda d: d["tasks"][0].update(family=None), "tasks[0]"),
])
def test_named_fields(tmp_path, edit, field):
    document = json.loads(json.dumps(SAVED))
    edit(document)
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InvalidFile) as caught:
        TaskPool.load(path)
    assert str(path) in str(caught.value) and field in str(caught.value), str(caught.value)
    assert isinstance(caught.value, (RlaError, ValueError))
