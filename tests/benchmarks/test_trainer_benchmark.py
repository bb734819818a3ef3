"""The trainer benchmark runs end to end in quick mode and reports a usable step-time ratio (not its speed)."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("trl")


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on 2 shared cores, more threads make the tiny model far slower
    yield
    torch.set_num_threads(threads)


def test_quick_run_reports_step_time_ratio_vs_trl():
    from benchmarks.perf.trainer import GOAL_MAX_SLOWDOWN, run

    metrics = run(quick=True)

    assert [m.name for m in metrics] == ["step_time_ratio_vs_trl"]
    metric = metrics[0]
    assert math.isfinite(metric.value) and metric.value > 0
    assert math.isfinite(metric.baseline) and metric.baseline > 0
    assert math.isfinite(metric.ratio) and metric.ratio > 0
    assert metric.higher_is_better is False
    # meets_goal must mean "ours takes at most 1.3 x TRL's time per step"
    assert metric.goal == pytest.approx(1 / GOAL_MAX_SLOWDOWN, abs=0.005)
    assert metric.meets_goal == (metric.value <= metric.baseline / metric.goal)
    assert "_generate_and_score_completions" in metric.note  # says what the baseline excludes


def test_suite_is_registered():
    from benchmarks.perf.__main__ import SUITES

    assert SUITES["trainer"] == ("benchmarks.perf.trainer",)
    assert "benchmarks.perf.trainer" in SUITES["all"]
