"""Keep an ablation's finished runs in the repository: ``python -m benchmarks.ablation.keep RUNS RESULTS``.

``RUNS`` is an ablation's ``--out`` (its runs, weights and all, under ``RUNS/real/seed-S/``); ``RESULTS`` a directory
under ``benchmarks/results/``. For every finished run (its ``summary.json`` written: a warm start, an arm, and the
out-of-domain evaluation in its ``ood/``) this copies the small files that ``--report-only`` rebuilds the tables from
(:data:`RUN_FILES`: per-episode outcomes, per-step signals, the config that made them; :data:`SEED_FILES`), never
weights or checkpoints, so a fresh checkout can tabulate and continue the ablation. A file already kept is left as it
is when identical and is never overwritten when not (a kept result is evidence: the command stops and names it); each
copy is written atomically. Symbolic links are not followed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rla_envs.core.files import atomic_write_text

__all__ = ["RUN_FILES", "SEED_FILES", "keep_results", "main"]

RUN_FILES = ("config.yaml", "summary.json", "metrics.jsonl")
"""The files of a finished run's directory that are kept (those it has)."""

SEED_FILES = ("exploitation.json",)
"""The files of a seed directory that are kept (those it has)."""


class KeptResultDiffers(RuntimeError):
    """A result already kept differs from the run's file of the same name."""


def _finished_run_dirs(real: Path) -> list[Path]:
    """Every directory under ``real`` (the seed directories' runs and their ``ood/``) whose run wrote its summary;
    symbolic links are not followed."""
    return sorted(Path(top) for top, _, files in os.walk(real) if _plain_file(Path(top) / "summary.json"))


def _plain_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def keep_results(runs: str | Path, results: str | Path) -> list[Path]:
    """Copy :data:`RUN_FILES` of every finished run under ``runs/real`` (and each seed directory's :data:`SEED_FILES`)
    to the same place under ``results/real``; returns the files written (those already kept, identical, are not).
    Raises :class:`KeptResultDiffers` before writing anything if a kept file differs."""
    real, kept = Path(runs) / "real", Path(results) / "real"
    if not real.is_dir():
        raise FileNotFoundError(f"{real} is not a directory: give the ablation's --out (it holds real/seed-S/...)")
    sources = [run_dir / name for run_dir in _finished_run_dirs(real) for name in RUN_FILES]
    sources += [seed_dir / name for seed_dir in sorted(real.glob("seed-*")) for name in SEED_FILES]
    pairs = [(source, kept / source.relative_to(real)) for source in sources if _plain_file(source)]
    differing = [target for source, target in pairs if target.exists() and target.read_bytes() != source.read_bytes()]
    if differing:
        raise KeptResultDiffers("these kept results differ from the runs' files, so nothing was copied: "
                                + ", ".join(map(str, differing)))
    written = []
    for source, target in pairs:
        if not target.exists():
            atomic_write_text(target, source.read_bytes().decode("utf-8"))  # bytes as they are: no newline translation
            written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation.keep", description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, help="the ablation's --out (e.g. runs/gate-b-confirm)")
    parser.add_argument("results", type=Path, help="where to keep them (e.g. benchmarks/results/gate-b-confirm)")
    args = parser.parse_args(argv)
    try:
        written = keep_results(args.runs, args.results)
    except (FileNotFoundError, KeptResultDiffers, UnicodeDecodeError) as error:
        print(f"python -m benchmarks.ablation.keep: error: {error}", file=sys.stderr)
        return 2
    print(f"kept {len(written)} new file(s) under {args.results / 'real'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
