"""The run's learning-curves PNG: evaluations before and after, per-step panels, and the pool's difficulty.

::

    plot_run("runs/alfworld", pool=pool)            # runs/alfworld/learning_curves.png

:data:`PANELS` lists the per-step panels and the metric names each draws (any other logged name is kept in
``metrics.jsonl``, just not drawn). matplotlib is imported only when a picture is drawn.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rla_envs.core.errors import MissingDependency
from rla_envs.curriculum.plots import draw_difficulty_over_time
from rla_train.cotrainer.run_log import read_metrics

__all__ = ["Panel", "PANELS", "EVALUATION_STAGES", "plot_run", "draw_panel", "draw_pool", "draw_evaluations"]


@dataclass(frozen=True)
class Panel:
    """One axes of the PNG: lines for ``lines``, points for ``points``, ``secondary`` on a right-hand axis."""

    title: str
    lines: Sequence[str]
    points: Sequence[str] = ()
    secondary: Sequence[str] = ()
    ylim: tuple[float, float] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    ylabel: str = ""

    def names(self) -> tuple[str, ...]:
        return (*self.lines, *self.points, *self.secondary)


PANELS = (
    Panel("Success rate", ["success_rate"], points=["heldout_success_rate", "probe_success_rate"],
           ylim=(-0.02, 1.02), labels={"success_rate": "drawn training tasks", "heldout_success_rate": "held-out",
                                       "probe_success_rate": "fixed training-game probe"}, ylabel="success rate"),
    Panel("Rewards", ["integrated_reward_mean", "outcome_reward_mean"],
           labels={"integrated_reward_mean": "integrated (outcome + judgments)", "outcome_reward_mean": "outcome"},
           ylabel="mean step reward"),
    # GRPO's loss at ratio 1 is -mean(advantage), 0 for z-scored advantages: the gradient norm shows the update
    Panel("Updates (gradient norm before clipping)", ["policy_grad_norm", "rm_grad_norm"],
           labels={"policy_grad_norm": "policy", "rm_grad_norm": "reward model"}, ylabel="gradient norm"),
    # balanced accuracies (0.5 = chance) of the judge on the policy's own rollouts, against the step-label oracle; the
    # outcome accuracy is not balanced: with mostly lost episodes a judge that mostly says "good" scores low on it
    Panel("The judge on the policy's own steps (balanced: 0.5 = chance)",
          ["judge_vote_balanced_accuracy", "judge_verdict_balanced_accuracy", "rm_process_accuracy",
           "process_accuracy", "rm_outcome_accuracy", "outcome_accuracy"], points=["rm_probe_balanced_accuracy"],
          ylim=(-0.02, 1.02),
          labels={"judge_vote_balanced_accuracy": "each vote (balanced)",
                  "judge_verdict_balanced_accuracy": "majority of m (balanced)",
                  "rm_process_accuracy": "process (steps)", "process_accuracy": "process (steps)",
                  "rm_outcome_accuracy": "outcome: mean vote's sign = outcome (not balanced)",
                  "outcome_accuracy": "outcome (not balanced)",
                  "rm_probe_balanced_accuracy": "labelled probe (balanced)"}, ylabel="accuracy"),
    Panel("The judge's effect on the policy", ["policy_advantage_changed_fraction", "judge_good_vote_fraction",
                                                 "zero_variance_fraction"], ylim=(-0.02, 1.02),
           labels={"policy_advantage_changed_fraction": "advantages changed by the judge",
                   "judge_good_vote_fraction": "votes 'good'", "zero_variance_fraction": "all-equal groups"},
           ylabel="fraction"),
    Panel("Task pool rewrites", ["pool_accepted_total"], points=["pool_triggered", "pool_measured"],
           labels={"pool_accepted_total": "accepted (total)", "pool_triggered": "triggered this step",
                   "pool_measured": "candidates measured this step"}, ylabel="rewrites"),
)


def _series(records: Sequence[Mapping[str, Any]], name: str) -> tuple[list[int], list[float]]:
    """``(steps, values)`` of one metric, skipping records where it is absent or None."""
    pairs = [(r["step"], r[name]) for r in records if isinstance(r.get(name), (int, float))]
    return [p[0] for p in pairs], [float(p[1]) for p in pairs]


_POINT_COLOURS = ("#e67e22", "#8e44ad", "#16a085")


def draw_panel(ax, panel: Panel, records: Sequence[Mapping[str, Any]]) -> None:
    drawn, twin = 0, None
    for name in panel.names():
        steps, values = _series(records, name)
        if not steps:
            continue
        label = panel.labels.get(name, name)
        target = ax
        if name in panel.secondary:
            twin = twin or ax.twinx()
            target = twin
            target.set_ylabel(label)
        if name in panel.points:
            colour = _POINT_COLOURS[panel.points.index(name) % len(_POINT_COLOURS)]
            target.scatter(steps, values, s=22, zorder=3, label=label, color=colour, edgecolor="black",
                           linewidth=0.4)
        else:
            style = {"marker": "o", "markersize": 3} if len(steps) <= 40 else {}
            if target is twin:
                style.update(linestyle="--", color="#e67e22")
            target.plot(steps, values, label=label, **style)
        drawn += 1
    ax.set(title=panel.title, xlabel="step", ylabel=panel.ylabel)
    if panel.ylim:
        ax.set_ylim(*panel.ylim)
    if not drawn:
        ax.text(0.5, 0.5, "not logged", transform=ax.transAxes, ha="center", va="center", color="#7f8c8d")
        ax.set_xticks([])
        ax.set_yticks([])
        return
    ax.xaxis.get_major_locator().set_params(integer=True)
    handles, labels = ax.get_legend_handles_labels()
    if twin is not None:
        more = twin.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    ax.legend(handles, labels, loc="best", fontsize=8)
    ax.grid(alpha=0.3)


def draw_pool(ax, records: Sequence[Mapping[str, Any]], pool) -> None:
    """The pool's difficulty: from the pool object when given, else from logged ``pool_mean_difficulty``."""
    if pool is not None:
        draw_difficulty_over_time(ax, pool)
        return
    steps, values = _series(records, "pool_mean_difficulty")
    if steps:
        ax.plot(steps, values, marker="o", markersize=3, color="#2c3e50", label="mean difficulty (1 - success)")
        ax.legend(loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, "not logged (pass pool= or log pool_metrics(pool))", transform=ax.transAxes,
                ha="center", va="center", color="#7f8c8d")
    ax.set(xlabel="step", ylabel="difficulty", ylim=(0, 1), title="Task pool difficulty over time")


EVALUATION_STAGES = (("initial", "initial model"), ("before", "before co-training"), ("after", "after co-training"))
"""The run's evaluation rounds in order: the summary key of each round (held-out; the probe's is ``probe_<key>``)."""


def draw_evaluations(ax, summary: Mapping[str, Any] | None) -> None:
    """Held-out and fixed-probe success at each evaluation round, with 95% intervals and the counts."""
    groups = [("held-out", ""), ("training-game probe", "probe_")]
    colours = {"initial": "#95a5a6", "before": "#3498db", "after": "#27ae60"}
    width, drawn = 0.26, set()
    for g, (_, prefix) in enumerate(groups):
        present = [(key, label) for key, label in EVALUATION_STAGES
                   if isinstance((summary or {}).get(prefix + key), Mapping)]
        for i, (key, label) in enumerate(present):
            result = summary[prefix + key]
            x = g + (i - (len(present) - 1) / 2) * width
            rate = float(result["success_rate"])
            error = [[rate - float(result["ci_low"])], [float(result["ci_high"]) - rate]]
            ax.bar(x, rate, width * 0.92, yerr=error, capsize=4, color=colours[key],
                   label=None if key in drawn else label)
            ax.text(x, float(result["ci_high"]) + 0.02, f"{int(result['won'])}/{int(result['episodes'])}",
                    ha="center", va="bottom", fontsize=8)
            drawn.add(key)
    ax.set(title="Success before and after co-training (95% intervals)", ylabel="success rate", ylim=(0, 1.05))
    if not drawn:
        ax.text(0.5, 0.5, "no evaluation in the summary", transform=ax.transAxes, ha="center", va="center",
                color="#7f8c8d")
        ax.set_xticks([])
        return
    ax.set_xticks(range(len(groups)), [name for name, _ in groups])
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3, axis="y")


def plot_run(out_dir: str | os.PathLike, png_path: str | os.PathLike | None = None, pool=None,
             summary: Mapping[str, Any] | None = None) -> Path:
    """Write a PNG of a run's learning curves and the task pool's difficulty over time; returns its path.

    Panels: success before and after co-training (held-out and the fixed training-game probe, from ``summary``:
    the run's ``summary.json`` content or its evaluation history; read from ``out_dir/summary.json`` when not
    given), then per step: success rate (held-out as points), rewards, gradient norms, reward-model
    accuracies, the judge's effect, the pool's rewrites and its difficulty (drawn from ``pool`` - a TaskPool -
    when given, else from logged ``pool_mean_difficulty``). A panel with nothing logged says so.
    ``png_path`` defaults to ``out_dir/learning_curves.png``.
    """
    records = read_metrics(out_dir)
    try:  # matplotlib takes ~0.7 s to import: only when a picture is drawn
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependency("'matplotlib' is not installed; install it with: pip install matplotlib") from exc
    png_path = Path(png_path) if png_path is not None else Path(out_dir) / "learning_curves.png"
    png_path.parent.mkdir(parents=True, exist_ok=True)
    if summary is None and (Path(out_dir) / "summary.json").is_file():
        summary = json.loads((Path(out_dir) / "summary.json").read_text())
    figure = plt.figure(figsize=(13, 18))
    grid = figure.add_gridspec(4, 2)
    cells = [figure.add_subplot(grid[index // 2, index % 2]) for index in range(8)]
    draw_evaluations(cells[0], summary)
    for cell, panel in zip(cells[1:], PANELS):
        draw_panel(cell, panel, records)
    draw_pool(cells[len(PANELS) + 1], records, pool)
    span = f", steps {records[0]['step']}-{records[-1]['step']}" if records else ""
    figure.suptitle(f"{Path(out_dir).resolve().name}: {len(records)} records{span}", fontsize=13)
    figure.tight_layout(rect=(0, 0, 1, 0.985))  # leave the title its own band
    figure.savefig(png_path, dpi=100)
    plt.close(figure)
    return png_path
