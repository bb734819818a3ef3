"""RunLog: JSONL + TensorBoard metrics, resume without duplicates; pool_metrics; and the learning-curves PNG (plots)."""

from __future__ import annotations

import json
import math
import struct
import sys

import numpy as np
import pytest

from rla_envs.core.errors import DataNotFound, MissingDependency
from rla_envs.core.task import Task
from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.pool_config import PoolConfig
from rla_train.cotrainer.plots import PANELS, draw_evaluations, draw_panel, plot_run
from rla_train.cotrainer.pool_metrics import pool_metrics
from rla_train.cotrainer.run_log import METRICS_FILE, TENSORBOARD_DIR, RunLog, read_metrics


def _metrics(step: int) -> dict:
    """A full set of the metrics plot_run knows, varying with the step; held-out only every 3rd step."""
    return {"success_rate": step / 10, "heldout_success_rate": step / 12 if step % 3 == 0 else None,
            "integrated_reward_mean": -1 + step / 5, "outcome_reward_mean": -1 + step / 6,
            "policy_loss": 1 / (step + 1), "rm_loss": 0.5 / (step + 1), "policy_grad_norm": 1.0 + step,
            "rm_grad_norm": 0.5 * step,
            "rm_process_accuracy": 0.6 + step / 50, "rm_outcome_accuracy": 0.7,
            "zero_variance_fraction": 0.5 - step / 40, "episodes_per_second": 3.0 + step, "steps_per_second": 0.05}


def _scalars(out_dir, tag: str) -> dict[int, float]:
    """Step -> value of one TensorBoard scalar, read back with TensorBoard's own EventAccumulator."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(out_dir / TENSORBOARD_DIR))
    accumulator.Reload()
    if tag not in accumulator.Tags()["scalars"]:
        return {}
    return {event.step: event.value for event in accumulator.Scalars(tag)}


def _png_size(path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; fails if the file is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run of 6 logged steps (0..5) with TensorBoard on."""
    pytest.importorskip("tensorboard")
    out_dir = tmp_path_factory.mktemp("run")
    with RunLog(out_dir, total_steps=10, progress=False) as run_log:
        for step in range(6):
            run_log.log(step, _metrics(step))
    return out_dir


def test_jsonl_records_read_back_in_order(run_dir):
    records = read_metrics(run_dir)
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4, 5]
    assert records[4]["success_rate"] == pytest.approx(0.4)
    assert records[1]["heldout_success_rate"] is None  # None is kept in the JSONL as null
    assert "null" in (run_dir / METRICS_FILE).read_text().splitlines()[1]
    assert all(r["time"] > 1.6e9 for r in records)


def test_torn_last_line_is_skipped_but_a_broken_middle_line_is_an_error(tmp_path):
    with RunLog(tmp_path, total_steps=5, tensorboard=False, progress=False) as run_log:
        run_log.log(0, {"success_rate": 0.1})
        run_log.log(1, {"success_rate": 0.2})
    path = tmp_path / METRICS_FILE
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"step": 2, "success_ra')  # the crash cut this write
    assert [r["step"] for r in read_metrics(tmp_path)] == [0, 1]
    path.write_text('{"step": 0}\n{"step": 1, oops\n{"step": 2}\n')
    with pytest.raises(ValueError, match=":2 is not valid JSON"):
        read_metrics(tmp_path)
    with pytest.raises(DataNotFound, match="RunLog"):
        read_metrics(tmp_path / "nowhere")


def test_tensorboard_holds_the_scalars_and_skips_none(run_dir):
    assert list((run_dir / TENSORBOARD_DIR).glob("events.out.tfevents.*"))
    success = _scalars(run_dir, "success_rate")
    assert sorted(success) == [0, 1, 2, 3, 4, 5]
    assert success[3] == pytest.approx(0.3)
    assert sorted(_scalars(run_dir, "heldout_success_rate")) == [0, 3]  # None values are not written


def test_resume_drops_later_steps_from_jsonl_and_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    with RunLog(tmp_path, total_steps=8, progress=False) as run_log:
        for step in range(1, 6):
            run_log.log(step, {"success_rate": 0.1 * step})
    with open(tmp_path / METRICS_FILE, "a", encoding="utf-8") as handle:
        handle.write('{"step": 6, "succ')  # crashed while logging step 6; the last checkpoint had 3 steps done
    with RunLog(tmp_path, total_steps=8, start_step=3, progress=False) as run_log:
        assert run_log.completed_steps == 3
        for step in range(4, 7):
            run_log.log(step, {"success_rate": 0.5 + 0.1 * step})
        assert run_log.completed_steps == 6
    records = read_metrics(tmp_path)
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]  # no duplicates, the torn line is gone
    assert records[2]["success_rate"] == pytest.approx(0.3)  # step 3 was done before the checkpoint: kept
    assert records[3]["success_rate"] == pytest.approx(0.9)  # step 4 redone
    tensorboard = _scalars(tmp_path, "success_rate")
    assert sorted(tensorboard) == [1, 2, 3, 4, 5, 6]  # purged after step 3, then rewritten
    assert tensorboard[3] == pytest.approx(0.3) and tensorboard[5] == pytest.approx(1.0)


def test_fresh_run_in_an_old_directory_starts_an_empty_log(tmp_path):
    with RunLog(tmp_path, total_steps=3, tensorboard=False, progress=False) as run_log:
        run_log.log(0, {"success_rate": 0.0})
        run_log.log(1, {"success_rate": 0.5})
    with RunLog(tmp_path, total_steps=3, tensorboard=False, progress=False) as run_log:
        run_log.log(0, {"success_rate": 1.0})
    assert read_metrics(tmp_path) == [pytest.approx({"step": 0, "time": read_metrics(tmp_path)[0]["time"],
                                                     "success_rate": 1.0})]


def test_values_are_checked_and_numpy_scalars_converted(tmp_path):
    torch = pytest.importorskip("torch")
    with RunLog(tmp_path, total_steps=3, tensorboard=False, progress=False) as run_log:
        record = run_log.log(0, {"a": np.float32(0.5), "b": np.int64(3), "c": torch.tensor(2.0), "d": True,
                                 "e": float("nan")})
        assert record["a"] == 0.5 and record["b"] == 3 and record["c"] == 2.0 and record["d"] == 1
        assert math.isnan(read_metrics(tmp_path)[0]["e"])
        with pytest.raises(TypeError, match="'hist' must be a number"):
            run_log.log(1, {"hist": [1, 2]})
        with pytest.raises(TypeError, match="single number"):
            run_log.log(1, {"batch": np.ones(3)})
        with pytest.raises(ValueError, match="reserved"):
            run_log.log(1, {"step": 1})
        with pytest.raises(ValueError, match="step >= 0"):
            run_log.log(-1, {})
    with pytest.raises(RuntimeError, match="closed"):
        run_log.log(1, {})
    with pytest.raises(ValueError, match="total_steps"):
        RunLog(tmp_path, total_steps=0)
    with pytest.raises(ValueError, match="start_step"):
        RunLog(tmp_path, total_steps=3, start_step=4)


def test_missing_tensorboard_raises_at_construction_naming_the_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import now raises ImportError
    with pytest.raises(MissingDependency, match=r'pip install "tensorboard==.*RunLog: tensorboard=False'):
        RunLog(tmp_path / "run", total_steps=3, progress=False)
    assert not (tmp_path / "run").exists()  # failed before creating anything
    with RunLog(tmp_path / "run", total_steps=3, tensorboard=False, progress=False) as run_log:
        run_log.log(0, {"success_rate": 0.5})
    assert not (tmp_path / "run" / TENSORBOARD_DIR).exists()


def test_progress_bar_shows_eta_and_key_metrics(tmp_path, capsys):
    with RunLog(tmp_path, total_steps=4, tensorboard=False, progress=True) as run_log:
        run_log.log(1, {"success_rate": 0.25, "policy_loss": 1.5})
        run_log.log(2, {"success_rate": 0.5})
        assert run_log._bar.n == 2 and run_log._bar.total == 4
        text = str(run_log._bar)
    assert "2/4" in text and "<" in text  # elapsed<remaining: the ETA
    assert "success=0.5" in text and "loss=1.5" in text  # the last known loss stays shown


def _small_pool() -> TaskPool:
    """Three tasks with recorded groups (one easy, one hard, one learnable) and difficulty snapshots."""
    tasks = [Task(family="ladder", instruction=f"climb to rung {level}", spec={"level": level}) for level in range(3)]
    pool = TaskPool(tasks, PoolConfig(seed=0, snapshot_every=8))
    for _round_index in range(4):
        for task, rate in zip(tasks, (1.0, 0.0, 0.5)):
            pool.record_group(task.id, [1.0 if i < rate * 4 else 0.0 for i in range(4)])
    return pool


def test_png_without_pool_has_reasonable_size_and_handles_missing_metrics(run_dir, tmp_path):
    path = plot_run(run_dir)
    assert path == run_dir / "learning_curves.png"
    width, height = _png_size(path)
    assert width >= 800 and height >= 800 and path.stat().st_size > 20_000
    with RunLog(tmp_path, total_steps=3, tensorboard=False, progress=False) as run_log:
        run_log.log(0, {"success_rate": 0.5})  # only one metric: the other panels say "not logged"
    sparse = plot_run(tmp_path, tmp_path / "pictures" / "sparse.png")
    assert _png_size(sparse) == (width, height)


def test_png_with_pool_and_pool_metrics(tmp_path):
    pool = _small_pool()
    values = pool_metrics(pool)
    # groups: 4 rounds x 3 tasks = 12; all-pass (task 0) 4 + all-fail (task 1) 4 -> 8/12
    assert values["pool_zero_variance_fraction"] == pytest.approx(8 / 12)
    assert values["pool_episodes"] == 48 and values["pool_accepted"] == 0
    assert len(pool.history_log) == 6  # pool_metrics did not add a snapshot
    with RunLog(tmp_path, total_steps=3, tensorboard=False, progress=False) as run_log:
        for step in range(3):
            run_log.log(step, {**_metrics(step), **values})
    assert json.loads((tmp_path / METRICS_FILE).read_text().splitlines()[0])["pool_generated"] == 0
    path = plot_run(tmp_path, tmp_path / "with_pool.png", pool=pool)
    width, height = _png_size(path)
    assert width >= 800 and height >= 800 and path.stat().st_size > 20_000


def test_panels_draw_every_logged_metric_and_say_not_logged_otherwise(run_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(run_dir)
    figure, axes = plt.subplots(1, 3)
    by_title = {panel.title: panel for panel in PANELS}
    draw_panel(axes[0], by_title["Success rate"], records)
    assert len(axes[0].lines) == 1 and len(axes[0].collections) == 1  # training line, held-out points
    assert len(axes[0].collections[0].get_offsets()) == 2  # held-out at steps 0 and 3 only
    draw_panel(axes[1], by_title["Updates (gradient norm before clipping)"], records)
    assert sorted(line.get_label() for line in axes[1].lines) == ["policy", "reward model"]
    draw_panel(axes[2], by_title["Rewards"], [{"step": 1, "success_rate": 0.5}])
    assert not axes[2].lines and axes[2].texts[0].get_text() == "not logged"
    plt.close(figure)


def test_evaluation_panel_draws_each_round_with_its_interval_and_counts():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def result(won, n):
        return {"success_rate": won / n, "won": won, "episodes": n, "ci_low": max(0.0, won / n - 0.1),
                "ci_high": min(1.0, won / n + 0.1)}

    summary = {"initial": result(0, 64), "before": result(10, 64), "after": result(11, 64),
               "probe_before": result(22, 64), "probe_after": result(26, 64), "rm_probe_before": {"x": 1}}
    figure, (ax, empty) = plt.subplots(1, 2)
    draw_evaluations(ax, summary)
    heights = [round(bar.get_height(), 4) for bar in ax.patches]
    assert heights == [0.0, round(10 / 64, 4), round(11 / 64, 4), round(22 / 64, 4), round(26 / 64, 4)]
    assert [t.get_text() for t in ax.texts] == ["0/64", "10/64", "11/64", "22/64", "26/64"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["held-out", "training-game probe"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["initial model", "before co-training",
                                                                   "after co-training"]
    draw_evaluations(empty, None)
    assert not empty.patches and "no evaluation" in empty.texts[0].get_text()
    plt.close(figure)


def test_a_lone_surrogate_in_a_summary_is_written_and_read_back(tmp_path):
    from rla_envs.core.files import atomic_write_json

    atomic_write_json(tmp_path / "summary.json", {"error": "ValueError: \ud800", "name": "café"})
    assert json.loads((tmp_path / "summary.json").read_text(encoding="utf-8")) == \
        {"error": "ValueError: \ud800", "name": "café"}
    atomic_write_json(tmp_path / "other.json", {"name": "café"})
    assert "café" in (tmp_path / "other.json").read_text(encoding="utf-8")  # text UTF-8 can hold stays readable
