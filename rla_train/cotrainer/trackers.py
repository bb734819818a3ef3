"""Experiment trackers the co-trainer mirrors its metrics to: TensorBoard, trackio and Weights & Biases.

``output.report_to`` names them with TRL's names (``none``, ``tensorboard``, ``trackio``, ``wandb``). Each tracker
gets every record :class:`~rla_train.cotrainer.run_log.RunLog` writes to ``metrics.jsonl`` (the step's training,
judge, pool and policy-shift metrics, and the held-out / probe / reward-model-probe results at evaluation steps),
a table of a few of the step's trajectories with their judgments at every evaluation
(:func:`trajectory_rows`), and the run's before/after summary at the end.

::

    trackers = open_trackers(["wandb"], "runs/x", project="rla", run_name="x", config=config.to_dict(), start_step=0)
    for tracker in trackers:
        tracker.log(1, {"success_rate": 0.25})
        tracker.log_table(1, "trajectories", TRAJECTORY_COLUMNS, rows)
        tracker.close()

* **TensorBoard** (``tensorboard/`` in the run directory): scalars; a table as a markdown text. A resumed run purges
  the events after the step it resumes from.
* **W&B** (``pip install "rla[tracking]"``): one W&B run per rla run, its id kept in ``wandb_run_id`` in the run
  directory so that ``--resume`` continues the same W&B run; files under the run directory's ``wandb/``. Offline
  with ``WANDB_MODE=offline`` (``wandb sync`` uploads later).
* **trackio** (``pip install trackio``): ``trackio.init(project, name, resume="allow")``; its local store is
  ``TRACKIO_DIR`` (default ``~/.cache/huggingface/trackio``).

The libraries are imported only when named; a missing one fails when the trackers open (before the run starts
training), naming the install.
"""

from __future__ import annotations

import importlib
import os
import secrets
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from rla_envs.core.errors import MissingDependency
from rla_envs.core.files import atomic_write_text
from rla_train.config.fields import REPORT_TO

__all__ = ["REPORT_TO", "TRAJECTORY_COLUMNS", "Tracker", "TensorBoardTracker", "WandbTracker", "TrackioTracker",
           "open_trackers", "close_trackers", "log_evaluation", "log_summary", "trajectory_rows", "summary_scalars"]

TENSORBOARD_DIR = "tensorboard"
WANDB_ID_FILE = "wandb_run_id"
INSTALL = {"tensorboard": 'pip install "tensorboard==2.21.0"', "wandb": 'pip install "rla[tracking]"',
           "trackio": "pip install trackio"}
#: The columns of the trajectory table logged at each evaluation.
TRAJECTORY_COLUMNS = ["step", "task_id", "won", "steps", "mean_vote", "transcript"]


class Tracker(Protocol):
    """What the co-trainer calls on a tracker."""

    def log(self, step: int, values: Mapping[str, float | int]) -> None: ...

    def log_table(self, step: int, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None: ...

    def log_summary(self, step: int, values: Mapping[str, float | int]) -> None: ...

    def close(self, failed: bool = False) -> None: ...


def _import(name: str, what: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        also = " and output.tensorboard (RunLog: tensorboard=False)" if what == "tensorboard" else ""
        raise MissingDependency(f"logging to {what} needs the '{what}' package ({exc}); install it with: "
                                f"{INSTALL[what]}, or leave {what} out of output.report_to{also}") from exc


class TensorBoardTracker:
    """Scalars and tables (as markdown text) to TensorBoard event files under ``out_dir/tensorboard``."""

    def __init__(self, out_dir: str | os.PathLike, *, start_step: int = 0, resuming: bool | None = None):
        writer = _import("torch.utils.tensorboard", "tensorboard").SummaryWriter
        resuming = bool(start_step) if resuming is None else resuming
        # a resumed run redoes the steps after its checkpoint: their old events go, the ones up to it stay
        self._writer = writer(log_dir=str(Path(out_dir) / TENSORBOARD_DIR), purge_step=start_step + 1 if resuming else 0)

    def log(self, step: int, values: Mapping[str, float | int]) -> None:
        for name, value in values.items():
            self._writer.add_scalar(name, value, global_step=step)
        self._writer.flush()

    def log_table(self, step: int, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in row) + " |"
                  for row in rows]
        self._writer.add_text(name, "\n".join(lines), global_step=step)
        self._writer.flush()

    def log_summary(self, step: int, values: Mapping[str, float | int]) -> None:
        self.log_table(step, "summary", ["name", "value"], [[k, v] for k, v in values.items()])

    def close(self, failed: bool = False) -> None:
        self._writer.close()


class WandbTracker:
    """One W&B run per rla run (resumed with it); files under ``out_dir/wandb``.

    A resumed run continues the same W&B run. W&B keeps the first value it got for a step: the steps a crashed run
    logged after its last checkpoint, which the resumed run redoes, keep their first values in W&B (``metrics.jsonl``
    holds the resumed run's).
    """

    def __init__(self, out_dir: str | os.PathLike, *, project: str, run_name: str, config: Mapping[str, Any],
                 resuming: bool = False):
        self._wandb = _import("wandb", "wandb")
        out_dir = Path(out_dir)
        id_file = out_dir / WANDB_ID_FILE
        if resuming and id_file.is_file():
            run_id = id_file.read_text(encoding="utf-8").strip()
        else:  # a fresh run is a new W&B run, even in a directory an earlier run used (--overwrite)
            run_id = secrets.token_hex(8)
            atomic_write_text(id_file, run_id + "\n")
        (out_dir / "wandb").mkdir(parents=True, exist_ok=True)
        self._run = self._wandb.init(project=project, name=run_name, id=run_id, resume="allow", dir=str(out_dir),
                                     config=dict(config))

    def log(self, step: int, values: Mapping[str, float | int]) -> None:
        self._run.log(dict(values), step=step)

    def log_table(self, step: int, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self._run.log({name: self._wandb.Table(columns=list(columns), data=[list(r) for r in rows])}, step=step)

    def log_summary(self, step: int, values: Mapping[str, float | int]) -> None:
        self._run.summary.update(dict(values))

    def close(self, failed: bool = False) -> None:
        self._run.finish(exit_code=1 if failed else 0)


class TrackioTracker:
    """trackio's local store (``TRACKIO_DIR``), or a Space when trackio is set up for one."""

    def __init__(self, *, project: str, run_name: str, config: Mapping[str, Any], resuming: bool = False):
        self._trackio = _import("trackio", "trackio")
        self._run = self._trackio.init(project=project, name=run_name, config=dict(config),
                                       resume="allow" if resuming else "never")

    def log(self, step: int, values: Mapping[str, float | int]) -> None:
        self._trackio.log(dict(values), step=step)

    def log_table(self, step: int, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        import pandas

        self._trackio.log({name: self._trackio.Table(dataframe=pandas.DataFrame([list(r) for r in rows],
                                                                                columns=list(columns)))}, step=step)

    def log_summary(self, step: int, values: Mapping[str, float | int]) -> None:
        self._trackio.log({f"summary/{k}": v for k, v in values.items()}, step=step)

    def close(self, failed: bool = False) -> None:
        self._trackio.finish()


def open_trackers(report_to: Sequence[str], out_dir: str | os.PathLike, *, project: str, run_name: str,
                  config: Mapping[str, Any], start_step: int = 0, resuming: bool = False) -> list[Tracker]:
    """The trackers ``report_to`` names, opened (``none`` and an empty list open none). ``resuming``: the run
    continues from its checkpoint of ``start_step`` steps (step 0 too), so each tracker continues its own run. A
    missing library raises :class:`~rla_envs.core.errors.MissingDependency` naming its install; trackers opened before
    it are closed."""
    unknown = [name for name in report_to if name not in REPORT_TO]
    if unknown:
        raise ValueError(f"report_to names {unknown}; known: {', '.join(REPORT_TO)}")
    opened: list[Tracker] = []
    try:
        for name in dict.fromkeys(report_to):
            if name == "tensorboard":
                opened.append(TensorBoardTracker(out_dir, start_step=start_step, resuming=resuming))
            elif name == "wandb":
                opened.append(WandbTracker(out_dir, project=project, run_name=run_name, config=config,
                                           resuming=resuming))
            elif name == "trackio":
                opened.append(TrackioTracker(project=project, run_name=run_name, config=config, resuming=resuming))
    except BaseException:
        close_trackers(opened, failed=True)
        raise
    return opened


def trajectory_rows(step: int, episodes: Sequence, *, limit: int = 4, max_chars: int = 2000) -> list[list[Any]]:
    """Rows of :data:`TRAJECTORY_COLUMNS` for the first episode of up to ``limit`` groups' worth of ``episodes``.

    ``transcript`` lists each action with the judge's votes on it (``go to desk 1 [+1 +1 -1]``), cut at ``max_chars``;
    ``mean_vote`` is the mean of every vote (None when the episode was not judged). The text is the episode's own
    (an env's or a policy's words): a tracker shows it as data.
    """
    rows = []
    for episode in list(episodes)[:limit]:
        judgments = episode.judgments or []
        votes = [v for step_votes in judgments for v in step_votes]
        parts = []
        for index, action in enumerate(episode.actions):
            marks = " ".join(f"{v:+d}" for v in judgments[index]) if index < len(judgments) else ""
            parts.append(f"{action} [{marks}]" if marks else str(action))
        transcript = " | ".join(parts)
        if len(transcript) > max_chars:
            transcript = transcript[:max_chars] + " ..."
        rows.append([step, str(episode.task_id), bool(episode.won), int(episode.num_steps),
                     sum(votes) / len(votes) if votes else None, transcript])
    return rows


def close_trackers(trackers: Sequence[Tracker], *, failed: bool = False) -> None:
    """Close every tracker (``failed``: the run stopped on an error, W&B marks it so). A tracker that fails to close
    is a warning, never an error: the run's own files are written already, and a training error stays the one raised."""
    for tracker in trackers:
        try:
            tracker.close(failed=failed)
        except Exception as exc:  # noqa: BLE001 - a tracker must not turn a finished run into a failed one
            warnings.warn(f"closing the {type(tracker).__name__} failed: {type(exc).__name__}: {exc}", stacklevel=2)


def log_summary(trackers: Sequence[Tracker], step: int, summary: Mapping[str, Any]) -> None:
    """The run's summary (:func:`summary_scalars`) to every tracker; a tracker that fails is a warning."""
    values = summary_scalars(summary)
    for tracker in trackers:
        try:
            tracker.log_summary(step, values)
        except Exception as exc:  # noqa: BLE001 - summary.json is written already; the run has finished
            warnings.warn(f"the {type(tracker).__name__} did not take the summary: {type(exc).__name__}: {exc}",
                          stacklevel=2)


def log_evaluation(trackers: Sequence[Tracker], step: int, values: Mapping[str, float | int],
                   episodes: Sequence = ()) -> None:
    """An evaluation's scalars at ``step``, and the trajectory table of ``episodes`` when there are any."""
    rows = trajectory_rows(step, episodes) if episodes else []
    for tracker in trackers:
        if values:
            tracker.log(step, values)
        if rows:
            tracker.log_table(step, "trajectories", TRAJECTORY_COLUMNS, rows)


def summary_scalars(summary: Mapping[str, Any]) -> dict[str, float]:
    """A run summary's numbers, flattened two levels deep: ``before/heldout/success_rate``, ``heldout_paired/p_value``,
    ``steps``; lists, strings and bools are left out. By hand: {"steps": 2, "before": {"heldout": {"success_rate":
    0.25, "outcomes": [1, 0]}}, "mode": "gigpo"} -> {"steps": 2.0, "before/heldout/success_rate": 0.25}."""
    def number(value) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    flat: dict[str, float] = {}
    for key, value in summary.items():
        if number(value):
            flat[key] = float(value)
        elif isinstance(value, Mapping):
            for inner, item in value.items():
                if number(item):
                    flat[f"{key}/{inner}"] = float(item)
                elif isinstance(item, Mapping):
                    flat.update({f"{key}/{inner}/{k}": float(v) for k, v in item.items() if number(v)})
    return flat
