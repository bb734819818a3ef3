"""TaskPool bookkeeping: sampling, recording, rewrite lineage, and a save/load that continues exactly."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from rla_envs.core.errors import DataNotFound, TaskNotFound
from rla_envs.core.task import Task
from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.pool_config import PoolConfig
from tests.paths import REPO_ROOT


def make_tasks(n):
    return [Task(family="toy", instruction=f"task {i}", spec={"level": i}, origin="dataset",
                 meta={"difficulty": i}) for i in range(n)]


def rewrite_of(task, level):
    return task.derive(instruction=f"{task.instruction} v{level}", spec={"level": level}, origin="rewritten",
                       meta={"difficulty": level})


def play(pool, rng, success_of, steps, group=8, batch=4):
    for _ in range(steps):
        for task in pool.sample(batch):
            pool.record_group(task.id, list(rng.random(group) < success_of(task)))


# ------------------------------------------------------------------ construction
def test_config_checks_say_how_to_fix():
    with pytest.raises(ValueError, match="Did you mean 'learnability'"):
        PoolConfig(strategy="learnabilty")
    with pytest.raises(ValueError, match="alpha_low < alpha_high"):
        PoolConfig(alpha_low=0.8, alpha_high=0.2)
    with pytest.raises(ValueError, match="decay"):
        PoolConfig(decay=0)
    with pytest.raises(ValueError, match="temperature"):
        PoolConfig(temperature=0)
    assert PoolConfig(strategy="rlanything").rewrite_rule == "rlanything"
    assert PoolConfig().rewrite_rule == "ours"


def test_pool_refuses_duplicates_and_nothing():
    task = make_tasks(1)[0]
    with pytest.raises(ValueError, match="twice"):
        TaskPool([task, task])
    with pytest.raises(ValueError, match="at least one"):
        TaskPool([])


def test_unknown_ids_suggest_the_closest():
    pool = TaskPool(make_tasks(2))
    known = pool.active_tasks()[0].id
    with pytest.raises(TaskNotFound, match="Did you mean"):
        pool.task(known[:-1] + "x")
    with pytest.raises(TaskNotFound):
        pool.slot("nope")


# ---------------------------------------------------------------------- sampling
def test_sample_frequencies_follow_the_weights():
    pool = TaskPool(make_tasks(6), PoolConfig(strategy="learnability", seed=1, max_root_share=1.0, temperature=1.0))
    rng = np.random.default_rng(0)
    play(pool, rng, lambda t: t.spec["level"] / 6, steps=30)
    weights = pool.weights()
    assert weights.max() > 2 * weights.min()  # the learnability strategy is not uniform here
    active = [t.id for t in pool.active_tasks()]
    draws = pool.sample(20000)
    frequencies = np.array([sum(t.id == task_id for t in draws) for task_id in active]) / 20000
    assert frequencies == pytest.approx(weights, abs=0.012)


def test_root_share_cap_holds_when_one_task_dominates():
    pool = TaskPool(make_tasks(8), PoolConfig(strategy="learnability", seed=2, max_root_share=0.2, temperature=0.05,
                                              fresh_share=0.0, staleness_weight=0.0))
    rng = np.random.default_rng(0)
    # task 3 sits at p = 0.5, every other task always succeeds: learnability wants task 3 only
    for task in pool.active_tasks():
        pool.record_group(task.id, list(rng.random(16) < (0.5 if task.spec["level"] == 3 else 1.1)))
    weights = pool.weights()
    assert weights.max() == pytest.approx(0.2)
    draws = pool.sample(10000)
    share_of_3 = np.mean([t.spec["level"] == 3 for t in draws])
    assert 0.18 < share_of_3 < 0.22
    uncapped = TaskPool(make_tasks(8), PoolConfig(strategy="learnability", seed=2, max_root_share=1.0, temperature=0.05,
                                                  fresh_share=0.0, staleness_weight=0.0))
    uncapped._stats = dict(pool._stats)
    assert uncapped.weights().max() > 0.9  # the cap is what held it back


def test_uniform_strategy_ignores_statistics():
    pool = TaskPool(make_tasks(5), PoolConfig(strategy="uniform"))
    pool.record_group(pool.active_tasks()[0].id, [1] * 8)
    assert list(pool.weights()) == pytest.approx([0.2] * 5)


# --------------------------------------------------------------------- recording
def test_record_updates_the_posterior_with_decay():
    pool = TaskPool(make_tasks(2), PoolConfig(decay=0.5))
    task_id = pool.active_tasks()[0].id
    pool.record(task_id, True)   # (1, 1) -> (2, 1)
    pool.record(task_id, False)  # alpha = 1 + 0.5 * 1 = 1.5 ; beta = 1 + 0.5 * 0 + 1 = 2
    stats = pool.stats(task_id)
    assert (stats.alpha, stats.beta) == (1.5, 2.0)
    assert (stats.episodes, stats.successes, stats.last_seen, pool.episodes) == (2, 1.0, 2, 2)
    assert pool.stats(pool.active_tasks()[1].id).episodes == 0  # untouched task: the prior
    with pytest.raises(ValueError):
        pool.record(task_id, 1.5)


def test_record_group_tracks_zero_variance_and_counters():
    pool = TaskPool(make_tasks(2))
    task_id = pool.active_tasks()[0].id
    pool.record_group(task_id, [0] * 8)
    pool.record_group(task_id, [0] * 8)
    pool.record_group(task_id, [1, 0, 0, 0, 0, 0, 0, 0])
    assert pool.stats(task_id).zero_variance_streak == 0
    assert pool.counters["groups"] == 3 and pool.counters["zero_variance_all_fail"] == 2
    assert pool.episodes == 24


def test_candidates_for_rewrite_ours_and_released():
    ours = TaskPool(make_tasks(3), PoolConfig(decay=1.0))
    easy, hard, middle = (t.id for t in ours.active_tasks())
    ours.record_group(easy, [1] * 8)
    ours.record_group(easy, [1] * 8)          # two all-pass groups -> harder
    ours.record_group(hard, [0, 0, 0, 0, 0, 0, 0, 1])
    ours.record_group(middle, [1, 0] * 4)
    assert ours.candidates_for_rewrite() == [(easy, "harder")]
    for group in ([0] * 8, [0, 0, 0, 1, 0, 0, 0, 0], [0] * 8):  # no two all-fail groups in a row
        ours.record_group(hard, group)
    # 2 successes in 32 outcomes: Beta(3, 31), P(p < 0.2) = 0.973 >= 0.9 -> easier
    assert dict(ours.candidates_for_rewrite()) == {easy: "harder", hard: "easier"}

    released = TaskPool(make_tasks(3), PoolConfig(strategy="rlanything"))
    easy, hard, middle = (t.id for t in released.active_tasks())
    released.record_group(easy, [1, 1, 1, 1, 1, 1, 1, 0])  # 7/8 = 0.875 >= 0.8
    released.record_group(hard, [0, 0, 0, 0, 0, 0, 1, 1])  # 2/8 = 0.25 > 0.2: left alone
    released.record_group(middle, [0] * 4)                 # not a full group of 8 yet
    assert released.candidates_for_rewrite() == [(easy, "harder")]

    assert TaskPool(make_tasks(1), PoolConfig(rewrite_rule="none")).candidates_for_rewrite() == []


# ---------------------------------------------------------------------- rewrites
def test_propose_accept_reject_keep_lineage_and_history():
    pool = TaskPool(make_tasks(2))
    root = pool.active_tasks()[0]
    child = rewrite_of(root, 10)
    pool.propose(root.id, child, direction="harder")
    assert pool.slots[root.id].pending == child
    assert child not in pool.active_tasks() and child not in pool.sample(200)  # pending is never sampled
    with pytest.raises(ValueError, match="already has pending"):
        pool.propose(root.id, rewrite_of(root, 11))
    pool.accept(root.id, {"move": np.float64(0.4), "counts": (3, 16)})
    slot = pool.slots[root.id]
    assert slot.active == child and slot.pending is None
    assert slot.history[-1].event == "accepted" and slot.history[-1].task_id == root.id
    assert slot.history[-1].replaced_by == child.id and slot.history[-1].evidence == {"move": 0.4, "counts": [3, 16]}

    grandchild = rewrite_of(child, 20)
    pool.propose(root.id, grandchild, direction="harder")
    pool.reject(root.id, "move_not_significant", {"p_moved": 0.7})
    assert slot.active == child and slot.pending is None
    assert slot.history[-1].event == "rejected" and slot.history[-1].task_id == grandchild.id
    assert pool.task(grandchild.id) == grandchild and pool.task(root.id) == root  # archived tasks stay known
    assert pool.lineage(child.id) == [root.id, child.id]
    assert pool.root_of(grandchild.id) == root.id
    assert pool.counters == {"proposed": 2, "accepted": 1, "rejected": 1, "rejected:move_not_significant": 1}
    with pytest.raises(ValueError, match="no pending"):
        pool.accept(root.id, {})
    with pytest.raises(ValueError, match="JSON"):
        pool.propose(root.id, rewrite_of(child, 30))
        pool.reject(root.id, "x", {"bad": object()})


def test_a_rejected_slot_waits_for_new_evidence():
    pool = TaskPool(make_tasks(1), PoolConfig(min_observations=8))
    task = pool.active_tasks()[0]
    for _ in range(2):
        pool.record_group(task.id, [1] * 8)
    assert pool.candidates_for_rewrite() == [(task.id, "harder")]
    pool.propose(task.id, rewrite_of(task, 5), "harder")
    assert pool.candidates_for_rewrite() == []  # pending
    pool.reject(task.id, "move_below_margin")
    assert pool.candidates_for_rewrite() == []  # same evidence: not again
    pool.record_group(task.id, [1] * 8)
    assert pool.candidates_for_rewrite() == [(task.id, "harder")]


def test_counters_and_snapshots():
    pool = TaskPool(make_tasks(4), PoolConfig(snapshot_every=16))
    pool.count("validation_rollouts", 32)
    pool.count("valid")
    assert pool.validation_rollouts == 32 and pool.counters["valid"] == 1
    play(pool, np.random.default_rng(0), lambda t: 0.5, steps=1, batch=4)  # 32 episodes -> 2 snapshots
    assert [entry["episode"] for entry in pool.history_log] == [16, 32]
    assert pool.history_log[-1]["mean_meta_difficulty"] == 1.5  # levels 0..3
    assert 0 < pool.history_log[-1]["mean_difficulty"] < 1


# ------------------------------------------------------------------- persistence
def test_save_load_continues_exactly(tmp_path):
    config = PoolConfig(seed=7, decay=0.9, temperature=0.5)
    pool = TaskPool(make_tasks(6), config)
    rng = np.random.default_rng(1)
    play(pool, rng, lambda t: t.spec["level"] / 6, steps=10)
    root = pool.active_tasks()[2]
    pool.propose(root.id, rewrite_of(root, 9), "harder")
    pool.accept(root.id, {"move": 0.3})
    other = pool.active_tasks()[4]
    pool.propose(other.id, rewrite_of(other, 1), "easier")  # left pending across the save
    path = pool.save(tmp_path / "pool.json")
    loaded = TaskPool.load(path)
    assert loaded.to_dict() == pool.to_dict()

    def future(p, seed):
        outcomes = np.random.default_rng(seed)
        ids = []
        for _ in range(20):
            batch = p.sample(4)
            ids += [t.id for t in batch]
            for task in batch:
                p.record_group(task.id, list(outcomes.random(8) < 0.5))
        return ids

    assert future(loaded, 3) == future(pool, 3)
    assert loaded.to_dict() == pool.to_dict()


def test_load_reports_missing_and_foreign_files(tmp_path):
    with pytest.raises(DataNotFound, match="no saved TaskPool"):
        TaskPool.load(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a saved TaskPool"):
        TaskPool.load(tmp_path / "other.json")
    (tmp_path / "torn.json").write_text('{"format": "rla.TaskPool", "ver')
    with pytest.raises(ValueError, match="not valid JSON"):
        TaskPool.load(tmp_path / "torn.json")


def test_a_failure_inside_the_write_leaves_the_old_file(tmp_path, monkeypatch):
    pool = TaskPool(make_tasks(3))
    path = tmp_path / "pool.json"
    pool.save(path)
    before = path.read_text()
    pool.record(pool.active_tasks()[0].id, True)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-save")

    monkeypatch.setattr(os, "fsync", crash)  # dies after the temp file is partly written, before the rename
    with pytest.raises(KeyboardInterrupt):
        pool.save(path)
    assert path.read_text() == before and TaskPool.load(path).episodes == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pool.json"]  # no temp file left behind


_SAVE_FOREVER = textwrap.dedent("""
    import os, sys, time
    import rla_envs.core.files as files
    from rla_envs.core.task import Task
    from rla_envs.curriculum.pool import TaskPool

    class SlowDisk:
        # writes in 8 kB pieces with a pause, so that a kill lands inside the write
        def __init__(self, handle):
            self.handle = handle
        def write(self, text):
            for start in range(0, len(text), 8192):
                self.handle.write(text[start:start + 8192])
                self.handle.flush()
                time.sleep(0.002)
        def __getattr__(self, name):
            return getattr(self.handle, name)
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return self.handle.__exit__(*exc)

    real_fdopen = os.fdopen
    files.os.fdopen = lambda *args, **kwargs: SlowDisk(real_fdopen(*args, **kwargs))
    tasks = [Task(family="toy", instruction="x" * 2000 + str(i), spec={"level": i}) for i in range(100)]
    pool = TaskPool(tasks)
    pool.save(sys.argv[1])
    print("saved", flush=True)
    i = 0
    while True:
        pool.record(tasks[i % 100].id, i % 2)
        pool.save(sys.argv[1])
        i += 1
""")


def test_killing_a_process_mid_save_never_leaves_an_unreadable_file(tmp_path):
    path = tmp_path / "pool.json"
    repo_root = str(REPO_ROOT)
    env = dict(os.environ, PYTHONPATH=repo_root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    partial_writes = 0
    for delay in (0.05, 0.11, 0.17, 0.23):
        process = subprocess.Popen([sys.executable, "-c", _SAVE_FOREVER, str(path)], stdout=subprocess.PIPE,
                                   env=env, text=True)
        assert process.stdout.readline().strip() == "saved"
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
        leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        partial_writes += any(0 < p.stat().st_size < path.stat().st_size for p in leftovers)
        for leftover in leftovers:
            leftover.unlink()
        assert len(TaskPool.load(path)) == 100
    assert partial_writes >= 2  # the kills did land inside the write (~25 ms of each ~30 ms save)


def test_rewritten_episodes_count_training_on_rewrites_only():
    tasks = make_tasks(3)
    pool = TaskPool(tasks)
    pool.record_group(tasks[0].id, [1, 0, 0, 0])
    child = rewrite_of(tasks[0], 5)
    pool.propose(tasks[0].id, child)
    assert pool.rewritten_episodes() == 0  # a pending rewrite has played nothing yet
    pool.accept(tasks[0].id, {})
    pool.record_group(child.id, [1, 1, 0])
    pool.record_group(tasks[1].id, [0, 0])
    assert (pool.rewritten_episodes(), pool.episodes) == (3, 9)
    assert TaskPool.from_dict(json.loads(json.dumps(pool.to_dict()))).rewritten_episodes() == 3
