"""The co-trainer's run log: metrics to JSONL and TensorBoard, a progress bar with ETA, and a PNG at the end.

::

    with RunLog("runs/alfworld", total_steps=200, start_step=steps_done) as run_log:
        for step in range(steps_done + 1, 201):
            ...
            run_log.log(step, {"success_rate": 0.4, "policy_loss": 0.12, **pool_metrics(pool)})
    plot_run("runs/alfworld", pool=pool)            # runs/alfworld/learning_curves.png

Files under ``out_dir``:

* ``metrics.jsonl`` - one line per logged step, ``{"step", "time" (unix seconds), **metrics}``; each line
  is flushed and fsynced, so a crash loses at most the line being written (:func:`read_metrics` skips a
  torn last line). None is written as null; NaN and infinities as Python's ``NaN``/``Infinity`` tokens.
* ``tensorboard/`` - TensorBoard event files (``tensorboard --logdir out_dir/tensorboard``).

Metric names :func:`plot_run` knows (any other name is logged too, just not drawn):

* ``success_rate`` (training rollouts), ``heldout_success_rate`` (evaluation steps only, drawn as points);
* ``integrated_reward_mean`` (outcome + lambda * mean judgment), ``outcome_reward_mean``;
* ``policy_loss``, ``rm_loss`` (or ``reward_model_loss``);
* ``rm_process_accuracy``, ``rm_outcome_accuracy`` (or without ``rm_``; :mod:`rla_train.signals.metrics`);
* ``zero_variance_fraction`` (share of this step's groups with no learning signal);
* ``episodes_per_second``, ``steps_per_second`` (or ``..._per_s``);
* ``pool_...`` from :func:`pool_metrics` (funnel counts, zero-variance fraction, mean difficulty).

``step`` counts finished steps, like TRL's ``global_step``: ``log(step, ...)`` after ``step`` steps are
done, so the bar shows ``step / total_steps`` (step 0 may hold metrics from before training). Resuming
with ``start_step=k`` (k steps done, as saved in the checkpoint) keeps the records with ``step <= k`` and
drops the later ones, which the resumed run redoes; TensorBoard is told to purge its events after k.
``start_step=0`` is a fresh run: an old ``metrics.jsonl`` in ``out_dir`` is emptied.

torch, tensorboard and matplotlib are imported only when needed.
"""

from __future__ import annotations

import json
import numbers
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rla_envs.core.errors import DataNotFound, MissingDependency
from rla_envs.core.files import atomic_write_text

__all__ = ["RunLog", "read_metrics", "plot_run", "pool_metrics", "METRICS_FILE", "TENSORBOARD_DIR",
           "TENSORBOARD_INSTALL"]

METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
TENSORBOARD_INSTALL = 'pip install "tensorboard==2.21.0"'
DEFAULT_POSTFIX = {"success_rate": "success", "heldout_success_rate": "heldout", "policy_loss": "loss",
                   "rm_loss": "rm_loss", "reward_model_loss": "rm_loss"}
_RESERVED = ("step", "time")


# ------------------------------------------------------------------------------------------ reading


def read_metrics(out_dir: str | os.PathLike) -> list[dict]:
    """The records of ``out_dir/metrics.jsonl`` in file order; a torn (unterminated) last line is skipped.

    Raises :class:`DataNotFound` when the file does not exist, and ValueError naming the line when a
    complete line is not a JSON object with a ``step`` (the file was edited or written by something else).
    """
    path = _metrics_path(out_dir)
    if not path.is_file():
        raise DataNotFound(f"no {METRICS_FILE} in {Path(out_dir)}; it is written by RunLog(out_dir, ...).log()")
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # no newline after it: the write of this line was cut by a crash
                break
            raise ValueError(f"{path}:{number} is not valid JSON ({exc}); only the last line may be torn") from None
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            raise ValueError(f"{path}:{number} is not a RunLog record (a JSON object with an integer 'step')")
        records.append(record)
    return records


def _metrics_path(out_dir: str | os.PathLike) -> Path:
    return Path(out_dir) / METRICS_FILE


def pool_metrics(pool) -> dict[str, float | int | None]:
    """Scalars describing a TaskPool now, named ``pool_...``, ready for :meth:`RunLog.log`.

    Funnel counts (generated, valid, proposed, accepted), the zero-variance fraction and effective sample
    ratio over all recorded groups, the active tasks' mean difficulty (1 - posterior mean success), the
    pool's episode count and validation rollouts. Does not change the pool.
    """
    from rla_envs.curriculum import plots

    difficulty = [1.0 - pool.stats(task.id).mean for task in pool.active_tasks()]
    values: dict[str, float | int | None] = {f"pool_{stage}": count for stage, count in plots.rewrite_funnel(pool).items()}
    values.update({"pool_zero_variance_fraction": plots.zero_variance_fraction(pool)["total"],
                   "pool_effective_sample_ratio": plots.effective_sample_ratio(pool),
                   "pool_mean_difficulty": sum(difficulty) / len(difficulty),
                   "pool_episodes": int(pool.episodes), "pool_validation_rollouts": int(pool.validation_rollouts)})
    return values


# ------------------------------------------------------------------------------------------ writing


class RunLog:
    """Appends each step's metrics to ``metrics.jsonl`` and TensorBoard, and advances a progress bar.

    Args:
        out_dir: the run's directory (created).
        total_steps: how many steps the whole run has (the bar's total; the ETA comes from it).
        tensorboard: write TensorBoard event files under ``out_dir/tensorboard`` (needs the ``tensorboard``
            package; without it construction raises MissingDependency). False writes only the JSONL.
        start_step: steps already done (the checkpoint's step when resuming); records with ``step >
            start_step`` already in ``metrics.jsonl`` are dropped; 0 (a fresh run) empties the file.
        progress: show the tqdm bar (on stderr).
        postfix: metric name -> short label shown after the bar (last known value of each).
    """

    def __init__(self, out_dir: str | os.PathLike, *, total_steps: int, tensorboard: bool = True,
                 start_step: int = 0, progress: bool = True, postfix: Mapping[str, str] | None = None):
        if not isinstance(total_steps, int) or total_steps < 1:
            raise ValueError(f"RunLog needs total_steps >= 1 (the number of training steps), got {total_steps!r}")
        if not isinstance(start_step, int) or not 0 <= start_step <= total_steps:
            raise ValueError(f"RunLog start_step must be an integer in [0, total_steps={total_steps}], got "
                             f"{start_step!r}; pass the number of steps the resumed checkpoint had done")
        self.out_dir = Path(out_dir)
        self.total_steps, self.start_step = total_steps, start_step
        self.postfix_labels = dict(DEFAULT_POSTFIX if postfix is None else postfix)
        self._postfix: dict[str, str] = {}
        self._closed = False
        self.completed_steps = start_step  # steps finished so far (what the bar shows)
        summary_writer = _summary_writer_class() if tensorboard else None  # fail before touching any file
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._keep_until(start_step)
        self._file = open(_metrics_path(self.out_dir), "a", encoding="utf-8")
        self._writer = None
        if summary_writer is not None:
            self._writer = summary_writer(log_dir=str(self.out_dir / TENSORBOARD_DIR),
                                          purge_step=start_step + 1 if start_step else 0)
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total_steps, initial=start_step, unit="step", dynamic_ncols=True,
                         disable=not progress, desc=self.out_dir.name or "run")

    def _keep_until(self, start_step: int) -> None:
        """Rewrite metrics.jsonl atomically with only the records of steps <= ``start_step`` (none if 0)."""
        path = _metrics_path(self.out_dir)
        if not path.exists():
            return
        kept = [record for record in read_metrics(self.out_dir) if 0 < start_step and record["step"] <= start_step]
        atomic_write_text(path, "".join(_json_line(record) for record in kept))

    def log(self, step: int, metrics: Mapping[str, float | int | None]) -> dict:
        """Record the metrics after ``step`` steps are done; returns the record written to the JSONL.

        Values must be numbers (numpy scalars and bools are converted) or None (written as null, left out of
        TensorBoard and of the plots).
        """
        if self._closed:
            raise RuntimeError(f"RunLog for {self.out_dir} is closed; open a new RunLog(..., start_step=...) to log more")
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise ValueError(f"log() needs a step >= 0 (the number of steps done), got {step!r}")
        step = int(step)
        values = {name: _scalar(name, value) for name, value in metrics.items()}
        clash = [name for name in values if name in _RESERVED]
        if clash:
            raise ValueError(f"metric names {clash} are reserved for the record itself; rename them")
        record = {"step": step, "time": round(time.time(), 3), **values}
        self._file.write(_json_line(record))
        self._file.flush()
        os.fsync(self._file.fileno())
        if self._writer is not None:
            for name, value in values.items():
                if value is not None:
                    self._writer.add_scalar(name, value, global_step=step)
            self._writer.flush()
        self._advance(step, values)
        return record

    def _advance(self, step: int, values: Mapping[str, float | int | None]) -> None:
        for name, label in self.postfix_labels.items():
            if values.get(name) is not None:
                self._postfix[label] = f"{values[name]:.3g}"
        if self._postfix:
            self._bar.set_postfix(self._postfix, refresh=False)
        done = min(step, self.total_steps)
        if done > self.completed_steps:
            self._bar.update(done - self.completed_steps)
            self.completed_steps = done
        else:
            self._bar.refresh()

    def plot(self, png_path: str | os.PathLike | None = None, pool=None) -> Path:
        """Write the learning-curves PNG of this run (see :func:`plot_run`)."""
        self._file.flush()
        return plot_run(self.out_dir, png_path, pool=pool)

    def close(self) -> None:
        """Flush and close the JSONL file, the TensorBoard writer and the bar; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._file.close()
        if self._writer is not None:
            self._writer.close()
        self._bar.close()

    def __enter__(self) -> "RunLog":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _summary_writer_class():
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise MissingDependency(f"TensorBoard logging needs the 'tensorboard' package ({exc}); install it with: "
                                f"{TENSORBOARD_INSTALL}, or pass RunLog(..., tensorboard=False)") from exc
    return SummaryWriter


def _scalar(name: str, value: Any) -> float | int | None:
    """``value`` as a plain int/float/None, or TypeError naming the metric."""
    if value is None:
        return None
    if not isinstance(value, numbers.Number) and hasattr(value, "item"):  # numpy / torch scalars
        try:
            value = value.item()
        except (ValueError, RuntimeError):
            raise TypeError(f"metric {name!r} must be a single number, got an array of shape "
                            f"{tuple(getattr(value, 'shape', ()))}; log its mean or one name per element") from None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"metric {name!r} must be a number or None, got {type(value).__name__} {value!r}; "
                    "log lists or dicts as one scalar per name (e.g. 'pool_accepted')")


def _json_line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------------------------------ picture


@dataclass(frozen=True)
class _Panel:
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
    _Panel("Success rate", ["success_rate"], points=["heldout_success_rate", "probe_success_rate"],
           ylim=(-0.02, 1.02), labels={"success_rate": "drawn training tasks", "heldout_success_rate": "held-out",
                                       "probe_success_rate": "fixed training-game probe"}, ylabel="success rate"),
    _Panel("Rewards", ["integrated_reward_mean", "outcome_reward_mean"],
           labels={"integrated_reward_mean": "integrated (outcome + judgments)", "outcome_reward_mean": "outcome"},
           ylabel="mean step reward"),
    # GRPO's loss at ratio 1 is -mean(advantage), 0 for z-scored advantages: the gradient norm shows the update
    _Panel("Updates (gradient norm before clipping)", ["policy_grad_norm", "rm_grad_norm"],
           labels={"policy_grad_norm": "policy", "rm_grad_norm": "reward model"}, ylabel="gradient norm"),
    _Panel("Reward-model accuracy", ["rm_process_accuracy", "process_accuracy", "rm_outcome_accuracy",
                                     "outcome_accuracy"], points=["rm_probe_balanced_accuracy"], ylim=(-0.02, 1.02),
           labels={"rm_process_accuracy": "process (steps)", "process_accuracy": "process (steps)",
                   "rm_outcome_accuracy": "outcome (episode mean vote)", "outcome_accuracy": "outcome",
                   "rm_probe_balanced_accuracy": "balanced, labelled probe"}, ylabel="accuracy"),
    _Panel("The judge's effect on the policy", ["policy_advantage_changed_fraction", "judge_good_vote_fraction",
                                                 "zero_variance_fraction"], ylim=(-0.02, 1.02),
           labels={"policy_advantage_changed_fraction": "advantages changed by the judge",
                   "judge_good_vote_fraction": "votes 'good'", "zero_variance_fraction": "all-equal groups"},
           ylabel="fraction"),
    _Panel("Task pool rewrites", ["pool_accepted_total"], points=["pool_triggered", "pool_measured"],
           labels={"pool_accepted_total": "accepted (total)", "pool_triggered": "triggered this step",
                   "pool_measured": "candidates measured this step"}, ylabel="rewrites"),
)


def _series(records: Sequence[Mapping[str, Any]], name: str) -> tuple[list[int], list[float]]:
    """``(steps, values)`` of one metric, skipping records where it is absent or None."""
    pairs = [(r["step"], r[name]) for r in records if isinstance(r.get(name), (int, float))]
    return [p[0] for p in pairs], [float(p[1]) for p in pairs]


_POINT_COLOURS = ("#e67e22", "#8e44ad", "#16a085")


def _draw_panel(ax, panel: _Panel, records: Sequence[Mapping[str, Any]]) -> None:
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


def _draw_pool(ax, records: Sequence[Mapping[str, Any]], pool) -> None:
    """The pool's difficulty: from the pool object when given, else from logged ``pool_mean_difficulty``."""
    if pool is not None:
        from rla_envs.curriculum.plots import draw_difficulty_over_time

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


def _draw_evaluations(ax, summary: Mapping[str, Any] | None) -> None:
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
    try:
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
    _draw_evaluations(cells[0], summary)
    for cell, panel in zip(cells[1:], PANELS):
        _draw_panel(cell, panel, records)
    _draw_pool(cells[len(PANELS) + 1], records, pool)
    span = f", steps {records[0]['step']}-{records[-1]['step']}" if records else ""
    figure.suptitle(f"{Path(out_dir).resolve().name}: {len(records)} records{span}", fontsize=13)
    figure.tight_layout(rect=(0, 0, 1, 0.985))  # leave the title its own band
    figure.savefig(png_path, dpi=100)
    plt.close(figure)
    return png_path
