"""Arms replicated over training streams: the noise of one run, and arm differences read against it.

::

    python -m benchmarks.ablation.streams benchmarks/results/gate-b-gigpo benchmarks/results/gate-b-streams \\
        --arms outcome_only gigpo

Two runs of one arm from the same warm start that differ only in ``train.training_stream`` (the draws of tasks and
rollouts) end apart by chance; with one run per arm and seed, an arm difference cannot be told from that. Here each
run directory is an ablation output (``real/seed-S/arm-NAME/summary.json``, ``ood/summary.json``, ``config.yaml``);
a run is keyed by its seed and stream (read from its recorded config), its warm start (a fingerprint of the
warm-started policy's per-episode outcomes, ``before`` and ``probe_before``, recorded by every arm of a seed) and its
arm (the directory's name: oracle and judge arms share ``train.mode=policy``; the ``control`` arm counts as
``outcome_only``, which it is on stream 1). Per arm, seed and warm start: held-out success of each stream and their
mean; per arm: the spread between streams of one warm start (the standard deviation of a single run, pooled); per
pair of arms: per seed, the difference of the stream means on each warm start both arms ran from, averaged over those
warm starts, and over seeds its mean with the 95% t-interval. The seed stays the unit: streams are averaged within a
warm start, and the warm starts of one seed made on different machines (whose float kernels make different warm
starts from the same seed) are averaged within the seed, never counted as more seeds, because they share the seed's
evaluation episodes and draws of training tasks. The same run found twice (a directory copied into two outputs)
counts once; two different results for one seed, warm start, arm and stream (e.g. the same arm under other step
labels) are refused.
"""

from __future__ import annotations

import argparse
import hashlib
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

__all__ = ["Run", "warm_start_fingerprint", "replicated_arm", "read_runs", "stream_table", "format_streams", "main"]

SPLITS = ("in_domain", "ood")


class Run(NamedTuple):
    """One finished arm run: its seed, its warm start's fingerprint (:func:`warm_start_fingerprint`), its arm
    (``control`` read as ``outcome_only``), ``train.training_stream`` and held-out success per split."""

    seed: int
    warm_start: str
    arm: str
    stream: int
    success: dict[str, float]


def _rate(evaluation: Mapping[str, Any] | None, where: Path) -> float:
    outcomes = episode_outcomes(evaluation, str(where))
    if not outcomes:
        raise ValueError(f"{where}: no per-episode outcomes")
    return float(np.mean(outcomes))


def warm_start_fingerprint(summary: Mapping[str, Any], where: Path) -> str:
    """Which warm start an arm's run trained from: 8 hex digits of a hash of the warm-started policy's per-episode
    outcomes before training (``before``, and ``probe_before`` when recorded), which every arm of one warm start
    shares and warm starts made apart (another machine's float kernels) do not.

    >>> warm_start_fingerprint({"before": {"outcomes": [1, 0, 0]}}, Path("s.json"))
    '81d90dec'
    """
    evaluations = [episode_outcomes(summary.get("before"), str(where))]
    if summary.get("probe_before"):
        evaluations.append(episode_outcomes(summary["probe_before"], str(where)))
    return hashlib.sha256(json.dumps(evaluations).encode()).hexdigest()[:8]


def replicated_arm(name: str) -> str:
    """The arm a run of arm ``name`` is a stream of: an arm that :data:`~benchmarks.ablation.arms.ARMS` defines as another
    arm's mode on another training stream (``control``: ``outcome_only`` on stream 1) counts as that arm."""
    arm = ARMS.get(name)
    return arm.mode if arm is not None and arm.training_stream and arm.mode in ARMS else name


def read_runs(directories: Sequence[str | Path]) -> list[Run]:
    """Every finished arm run under the ablation outputs ``directories`` (the warm starts are not arm runs), each
    once; a seed, warm start, arm and stream found twice with different results raises ``ValueError``."""
    import yaml

    runs: dict[tuple[int, str, str, int], tuple[Run, Path]] = {}
    for directory in directories:
        for summary_path in sorted(Path(directory).glob("real/seed-*/arm-*/summary.json")):
            run_dir = summary_path.parent
            ood_path = run_dir / "ood" / "summary.json"
            if not ood_path.is_file():
                continue  # not finished
            config = yaml.safe_load((run_dir / "config.yaml").read_text()) or {}
            train = config.get("train") or {}
            summary, ood = json.loads(summary_path.read_text()), json.loads(ood_path.read_text())
            run = Run(int(train["seed"]), warm_start_fingerprint(summary, summary_path),
                      replicated_arm(run_dir.name.removeprefix("arm-")), int(train.get("training_stream") or 0),
                      {"in_domain": _rate(summary.get("after"), summary_path),
                       "ood": _rate(ood.get("before"), ood_path)})
            key = (run.seed, run.warm_start, run.arm, run.stream)
            if key in runs and runs[key][0] != run:
                raise ValueError(f"two results for seed {run.seed}, warm start {run.warm_start}, arm {run.arm}, stream "
                                 f"{run.stream}: {runs[key][1]} and {run_dir} (the same arm under other settings?)")
            runs.setdefault(key, (run, run_dir))
    return [run for run, _ in runs.values()]


def stream_table(runs: Sequence[Run], arms: Sequence[str]) -> dict[str, Any]:
    """Per arm, split and seed: each warm start's streams and their mean, the pooled within-warm-start standard
    deviation of one run; per pair of arms (later - earlier): per seed the difference of stream means averaged over
    the warm starts both arms ran from, and its t-interval over the seeds.

    >>> runs = [Run(0, "w", "a", 0, {"in_domain": .2, "ood": .1}), Run(0, "w", "a", 1, {"in_domain": .4, "ood": .1}),
    ...         Run(0, "w", "b", 0, {"in_domain": .5, "ood": .2}), Run(1, "v", "a", 0, {"in_domain": .1, "ood": .0}),
    ...         Run(1, "v", "b", 0, {"in_domain": .3, "ood": .2})]
    >>> table = stream_table(runs, ["a", "b"])
    >>> table["arms"]["a"]["in_domain"]["per_seed"][0]
    {'w': {'streams': {0: 0.2, 1: 0.4}, 'mean': 0.30000000000000004}}
    >>> round(table["arms"]["a"]["in_domain"]["run_sd"], 4)   # one warm start with two streams: |0.2 - 0.4| / sqrt(2)
    0.1414
    >>> [round(d, 2) for d in table["differences"]["b - a"]["in_domain"]["per_seed"].values()]
    [0.2, 0.2]
    """
    by_arm: dict[str, dict[int, dict[str, dict[int, Mapping[str, float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(dict)))
    for run in runs:
        if run.arm in arms:
            by_arm[run.arm][run.seed][run.warm_start][run.stream] = run.success
    table: dict[str, Any] = {"arms": {}, "differences": {}}
    for arm in arms:
        table["arms"][arm] = {}
        for split in SPLITS:
            per_seed = {seed: {warm_start: {"streams": {s: rates[split] for s, rates in sorted(streams.items())},
                                            "mean": float(np.mean([rates[split] for rates in streams.values()]))}
                               for warm_start, streams in sorted(by_warm_start.items())}
                        for seed, by_warm_start in sorted(by_arm[arm].items())}
            cells = [cell for by_warm_start in per_seed.values() for cell in by_warm_start.values()]
            squares = sum(float(np.sum((np.array(list(cell["streams"].values())) - cell["mean"]) ** 2)) for cell in cells)
            freedom = sum(len(cell["streams"]) - 1 for cell in cells)
            table["arms"][arm][split] = {"per_seed": per_seed,
                                         "run_sd": math.sqrt(squares / freedom) if freedom else None,
                                         "runs": sum(len(cell["streams"]) for cell in cells)}
    for index, first in enumerate(arms):
        for second in arms[index + 1:]:
            name = f"{second} - {first}"
            table["differences"][name] = {}
            for split in SPLITS:
                a, b = table["arms"][first][split]["per_seed"], table["arms"][second][split]["per_seed"]
                shared = {seed: sorted(set(a[seed]) & set(b[seed])) for seed in set(a) & set(b)}
                shared = {seed: warm_starts for seed, warm_starts in shared.items() if warm_starts}
                means = [{seed: float(np.mean([arm_seeds[seed][w]["mean"] for w in warm_starts]))
                          for seed, warm_starts in shared.items()} for arm_seeds in (a, b)]
                table["differences"][name][split] = {
                    **seed_differences(*means), "warm_starts": sum(len(w) for w in shared.values())}
    return table


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def _cell(label: str, cell: Mapping[str, Any]) -> str:
    return f"{label}: " + ", ".join(f"{100 * v:.1f}" for v in cell["streams"].values()) + f" ({100 * cell['mean']:.1f})"


def format_streams(table: Mapping[str, Any]) -> str:
    """Markdown: success per seed (and warm start, where a seed has several) and stream for each arm, then the
    differences over seeds."""
    lines = ["| arm | split | per seed: success of each stream (mean) | one run's SD (pooled within warm starts) |",
             "|---|---|---|---|"]
    for arm, splits in table["arms"].items():
        for split, row in splits.items():
            cells = "; ".join(_cell(f"seed {seed}" if len(by_warm_start) == 1 else f"seed {seed} ({warm_start})", cell)
                              for seed, by_warm_start in row["per_seed"].items()
                              for warm_start, cell in by_warm_start.items())
            sd = "n/a" if row["run_sd"] is None else f"{100 * row['run_sd']:.1f} points ({row['runs']} runs)"
            lines.append(f"| {arm} | {split} | {cells} | {sd} |")
    lines += ["", "| difference of seed means | split | per seed | over seeds [95% t-interval] |", "|---|---|---|---|"]
    for name, splits in table["differences"].items():
        for split, row in splits.items():
            if not row.get("per_seed"):
                continue
            per_seed = ", ".join(_points(v) for v in row["per_seed"].values())
            count = f"{row['n']} seed{'s' * (row['n'] != 1)}" + (
                f", {row['warm_starts']} warm starts" if row["warm_starts"] != row["n"] else "")
            interval = ("no interval" if row["n"] == 1 else  # one seed: nothing to read the noise from
                        f"{_points(row['ci_low'])}, {_points(row['ci_high'])}")
            lines.append(f"| {name} | {split} | {per_seed} | {_points(row['mean'])} [{interval}] ({count}) |")
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
