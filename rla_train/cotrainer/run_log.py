"""The co-trainer's run log: metrics to JSONL, TensorBoard and any other tracker, and a progress bar with ETA.

::

    with RunLog("runs/alfworld", total_steps=200, start_step=steps_done) as run_log:
        for step in range(steps_done + 1, 201):
            ...
            run_log.log(step, {"success_rate": 0.4, "policy_loss": 0.12, **pool_metrics(pool)})

Files under ``out_dir``:

* ``metrics.jsonl`` - one line per logged step, ``{"step", "time" (unix seconds), **metrics}``; each line
  is flushed and fsynced, so a crash loses at most the line being written (:func:`read_metrics` skips a
  torn last line). None is written as null; NaN and infinities as Python's ``NaN``/``Infinity`` tokens.
* ``tensorboard/`` - TensorBoard event files (``tensorboard --logdir out_dir/tensorboard``).

Metric names :func:`~rla_train.cotrainer.plots.plot_run` knows (any other name is logged too, just not drawn):

* ``success_rate`` (training rollouts), ``heldout_success_rate`` (evaluation steps only, drawn as points);
* ``integrated_reward_mean`` (outcome + lambda * mean judgment), ``outcome_reward_mean``;
* ``policy_loss``, ``rm_loss`` (or ``reward_model_loss``);
* ``rm_process_accuracy``, ``rm_outcome_accuracy`` (or without ``rm_``; :mod:`rla_train.signals.metrics`);
* ``zero_variance_fraction`` (share of this step's groups with no learning signal);
* ``episodes_per_second``, ``steps_per_second`` (or ``..._per_s``);
* ``pool_...`` from :func:`~rla_train.cotrainer.pool_metrics.pool_metrics` (funnel counts, zero-variance
  fraction, mean difficulty).

``step`` counts finished steps, like TRL's ``global_step``: ``log(step, ...)`` after ``step`` steps are
done, so the bar shows ``step / total_steps`` (step 0 may hold metrics from before training). Resuming
with ``start_step=k`` (k steps done, as saved in the checkpoint) keeps the records with ``step <= k`` and
drops the later ones, which the resumed run redoes; TensorBoard is told to purge its events after k.
``start_step=0`` is a fresh run: an old ``metrics.jsonl`` in ``out_dir`` is emptied.

torch's TensorBoard writer is imported only when ``tensorboard=True``. Other trackers
(:mod:`rla_train.cotrainer.trackers`: W&B, trackio) get every record too when passed as ``trackers``.
"""

from __future__ import annotations

import json
import numbers
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from rla_envs.core.errors import DataNotFound
from rla_envs.core.files import atomic_write_text
from rla_train.cotrainer.trackers import INSTALL, TENSORBOARD_DIR, TensorBoardTracker, Tracker

__all__ = ["RunLog", "read_metrics", "METRICS_FILE", "TENSORBOARD_DIR", "TENSORBOARD_INSTALL"]

METRICS_FILE = "metrics.jsonl"
TENSORBOARD_INSTALL = INSTALL["tensorboard"]
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
        trackers: more trackers (:class:`~rla_train.cotrainer.trackers.Tracker`) to send each record's values to;
            the caller opens and closes them.
    """

    def __init__(self, out_dir: str | os.PathLike, *, total_steps: int, tensorboard: bool = True,
                 start_step: int = 0, progress: bool = True, postfix: Mapping[str, str] | None = None,
                 trackers: Sequence[Tracker] = ()):
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
        # fail before touching any file when tensorboard is missing
        self._own = [TensorBoardTracker(self.out_dir, start_step=start_step)] if tensorboard else []
        self._trackers = [*self._own, *trackers]
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._keep_until(start_step)
        self._file = open(_metrics_path(self.out_dir), "a", encoding="utf-8")
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
        for tracker in self._trackers:
            tracker.log(step, {name: value for name, value in values.items() if value is not None})
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

    def close(self) -> None:
        """Flush and close the JSONL file, the TensorBoard writer and the bar (not the trackers it was given);
        calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._file.close()
        for tracker in self._own:
            tracker.close()
        self._bar.close()

    def __enter__(self) -> "RunLog":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


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
    from rla_envs.core.files import json_text

    return json_text(record) + "\n"  # a lone surrogate in a name or note must not lose the line
