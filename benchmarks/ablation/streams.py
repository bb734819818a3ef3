"""Arms replicated over training streams: the noise of one run, and arm differences read against it.

::

    python -m benchmarks.ablation.streams benchmarks/results/gate-b-gigpo benchmarks/results/gate-b-streams \\
        --arms outcome_only gigpo

Two runs of one arm from the same warm start that differ only in ``train.training_stream`` (the draws of tasks and
rollouts) end apart by chance; with one run per arm and seed, an arm difference cannot be told from that. Here each
run directory is an ablation output (``real/seed-S/arm-NAME/summary.json``, ``ood/summary.json``, ``config.yaml``);
a run is keyed by its seed and stream (read from its recorded config) and its arm (the directory's name: oracle and
judge arms share ``train.mode=policy``; the ``control`` arm counts as ``outcome_only``, which it is on stream 1).
Per arm and seed: held-out success of each stream and their mean; per arm: the spread between streams of one seed
(the standard deviation of a single run, pooled over seeds); per pair of arms: the difference of the seed means with
its 95% t-interval over seeds (the seed stays the unit; streams are averaged within it, never pooled across seeds).
The same run found twice (a directory copied into two outputs) counts once; two different results for one seed, arm
and stream (outputs of other warm starts, e.g. another machine's) are refused: pass only outputs that share their
warm starts.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from benchmarks.ablation.arms import ARMS
from benchmarks.ablation.real import episode_outcomes
from benchmarks.ablation.stats import seed_differences

__all__ = ["Run", "replicated_arm", "read_runs", "stream_table", "format_streams", "main"]

SPLITS = ("in_domain", "ood")


class Run(NamedTuple):
    """One finished arm run: its seed, its arm (``control`` read as ``outcome_only``), ``train.training_stream`` and
    held-out success per split."""

    seed: int
    arm: str
    stream: int
    success: dict[str, float]


def _rate(evaluation: Mapping[str, Any] | None, where: Path) -> float:
    outcomes = episode_outcomes(evaluation, str(where))
    if not outcomes:
        raise ValueError(f"{where}: no per-episode outcomes")
    return float(np.mean(outcomes))


def replicated_arm(name: str) -> str:
    """The arm a run of arm ``name`` is a stream of: an arm that :data:`~benchmarks.ablation.arms.ARMS` defines as another
    arm's mode on another training stream (``control``: ``outcome_only`` on stream 1) counts as that arm."""
    arm = ARMS.get(name)
    return arm.mode if arm is not None and arm.training_stream and arm.mode in ARMS else name


def read_runs(directories: Sequence[str | Path]) -> list[Run]:
    """Every finished arm run under the ablation outputs ``directories`` (the warm starts are not arm runs), each
    once; a seed, arm and stream found twice with different results raises ``ValueError``."""
    import yaml

    runs: dict[tuple[int, str, int], tuple[Run, Path]] = {}
    for directory in directories:
        for summary_path in sorted(Path(directory).glob("real/seed-*/arm-*/summary.json")):
            run_dir = summary_path.parent
            ood_path = run_dir / "ood" / "summary.json"
            if not ood_path.is_file():
                continue  # not finished
            config = yaml.safe_load((run_dir / "config.yaml").read_text()) or {}
            train = config.get("train") or {}
            summary, ood = json.loads(summary_path.read_text()), json.loads(ood_path.read_text())
            run = Run(int(train["seed"]), replicated_arm(run_dir.name.removeprefix("arm-")),
                      int(train.get("training_stream") or 0),
                      {"in_domain": _rate(summary.get("after"), summary_path),
                       "ood": _rate(ood.get("before"), ood_path)})
            key = (run.seed, run.arm, run.stream)
            if key in runs and runs[key][0] != run:
                raise ValueError(f"two results for seed {run.seed}, arm {run.arm}, stream {run.stream}: "
                                 f"{runs[key][1]} and {run_dir} (outputs of different warm starts?)")
            runs.setdefault(key, (run, run_dir))
    return [run for run, _ in runs.values()]


def stream_table(runs: Sequence[Run], arms: Sequence[str]) -> dict[str, Any]:
    """Per arm and split: each seed's streams and mean, the pooled within-seed standard deviation of one run; per
    pair of arms (later - earlier): the per-seed difference of means and its t-interval over the shared seeds.

    >>> runs = [Run(0, "a", 0, {"in_domain": .2, "ood": .1}), Run(0, "a", 1, {"in_domain": .4, "ood": .1}),
    ...         Run(0, "b", 0, {"in_domain": .5, "ood": .2}), Run(1, "a", 0, {"in_domain": .1, "ood": .0}),
    ...         Run(1, "b", 0, {"in_domain": .3, "ood": .2})]
    >>> table = stream_table(runs, ["a", "b"])
    >>> table["arms"]["a"]["in_domain"]["per_seed"][0]
    {'streams': {0: 0.2, 1: 0.4}, 'mean': 0.30000000000000004}
    >>> round(table["arms"]["a"]["in_domain"]["run_sd"], 4)   # one seed with two streams: |0.2 - 0.4| / sqrt(2)
    0.1414
    >>> [round(d, 2) for d in table["differences"]["b - a"]["in_domain"]["per_seed"].values()]
    [0.2, 0.2]
    """
    by_arm: dict[str, dict[int, dict[int, Mapping[str, float]]]] = defaultdict(lambda: defaultdict(dict))
    for run in runs:
        if run.arm in arms:
            by_arm[run.arm][run.seed][run.stream] = run.success
    table: dict[str, Any] = {"arms": {}, "differences": {}}
    for arm in arms:
        table["arms"][arm] = {}
        for split in SPLITS:
            per_seed = {seed: {"streams": {s: rates[split] for s, rates in sorted(streams.items())},
                               "mean": float(np.mean([rates[split] for rates in streams.values()]))}
                        for seed, streams in sorted(by_arm[arm].items())}
            squares = sum(float(np.sum((np.array(list(cell["streams"].values())) - cell["mean"]) ** 2))
                          for cell in per_seed.values())
            freedom = sum(len(cell["streams"]) - 1 for cell in per_seed.values())
            table["arms"][arm][split] = {"per_seed": per_seed,
                                         "run_sd": math.sqrt(squares / freedom) if freedom else None,
                                         "runs": sum(len(cell["streams"]) for cell in per_seed.values())}
    for index, first in enumerate(arms):
        for second in arms[index + 1:]:
            name = f"{second} - {first}"
            table["differences"][name] = {}
            for split in SPLITS:
                a, b = table["arms"][first][split]["per_seed"], table["arms"][second][split]["per_seed"]
                table["differences"][name][split] = seed_differences(
                    {seed: cell["mean"] for seed, cell in a.items()}, {seed: cell["mean"] for seed, cell in b.items()})
    return table


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def format_streams(table: Mapping[str, Any]) -> str:
    """Markdown: success per seed and stream for each arm, then the differences over seeds."""
    lines = ["| arm | split | per seed: success of each stream (mean) | one run's SD (pooled within seeds) |",
             "|---|---|---|---|"]
    for arm, splits in table["arms"].items():
        for split, row in splits.items():
            cells = "; ".join(f"seed {seed}: " + ", ".join(f"{100 * v:.1f}" for v in cell["streams"].values())
                              + f" ({100 * cell['mean']:.1f})" for seed, cell in row["per_seed"].items())
            sd = "n/a" if row["run_sd"] is None else f"{100 * row['run_sd']:.1f} points ({row['runs']} runs)"
            lines.append(f"| {arm} | {split} | {cells} | {sd} |")
    lines += ["", "| difference of seed means | split | per seed | over seeds [95% t-interval] |", "|---|---|---|---|"]
    for name, splits in table["differences"].items():
        for split, row in splits.items():
            if not row.get("per_seed"):
                continue
            per_seed = ", ".join(_points(v) for v in row["per_seed"].values())
            lines.append(f"| {name} | {split} | {per_seed} | {_points(row['mean'])} "
                         f"[{_points(row['ci_low'])}, {_points(row['ci_high'])}] ({row['n']} seeds) |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation.streams", description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="+", help="ablation outputs (real/seed-S/arm-NAME/ inside)")
    parser.add_argument("--arms", nargs="+", required=True, metavar="ARM",
                        help="the arms to compare, in order (e.g. outcome_only gigpo, or outcome_only oracle@0.9)")
    parser.add_argument("--json", metavar="OUT", help="also write the table as JSON")
    args = parser.parse_args(argv)
    table = stream_table(read_runs(args.directories), args.arms)
    print(format_streams(table))
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
