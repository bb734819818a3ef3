"""``python -m rla_train.run``: co-train a policy, its reward model and the task pool (RLAnything on TRL).

With no arguments it runs the CPU default (``configs/cpu-tiny.yaml``): a tiny policy and reward model built
locally, generated ALFWorld tasks, a warm start on the searching expert's demonstrations, then the full
method, printing held-out success before and after. ``--config FILE`` and ``--set section.field=value``
change it; ``--resume RUN_DIR`` continues a run from its last intact checkpoint; ``--overwrite`` starts afresh in
an ``output.dir`` that holds an earlier run; ``--help`` lists every field. Problems found before any work (a
config field, a model name, env options, a run directory in use or not empty, no checkpoint to resume) end
with one line saying the fix and exit status 2.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, train, print the summary; returns the exit status."""
    from rla_train import missing_train_extra

    if problem := missing_train_extra("python -m rla_train.run"):
        print(problem, file=sys.stderr)
        return 2
    from rla_train.config import parse_command_line

    config, args = parse_command_line(sys.argv[1:] if argv is None else list(argv))
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:  # one process: refuse a busy or used run directory before imports
        from rla_train.cotrainer.run_dir import RunDirError, check_run_dir

        try:
            check_run_dir(config.train.resume_from or config.output.dir, resume=config.train.resume_from is not None,
                          overwrite=args.overwrite)
        except RunDirError as error:
            print(f"python -m rla_train.run: error: {error}", file=sys.stderr)
            return 2
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from rla_train.cpu_kernels import pin_cpu_kernels

    pin_cpu_kernels()  # the same figures on machines of one kind; read when torch loads, so before the import
    from rla_train.cpu_kernels import set_torch_threads

    set_torch_threads()  # tiny models on CPU: one thread is ~10x faster than two (see DESIGN.md)
    from rla_train.config import ConfigError
    from rla_train.cotrainer.checkpoint import CorruptCheckpoint
    from rla_train.cotrainer.loop import train
    from rla_train.cotrainer.run_dir import RunDirError
    from rla_train.cotrainer.summary import format_summary

    try:
        summary = train(config, overwrite=args.overwrite)
    except (ConfigError, RunDirError, CorruptCheckpoint) as error:  # raised at the door, before any work
        print(f"python -m rla_train.run: error: {error}", file=sys.stderr)
        return 2
    if summary is not None:  # None: a data-parallel rank other than 0, which prints nothing
        print(format_summary(summary))
        print(where_the_run_is(summary["run_dir"]))
    return 0


def where_the_run_is(run_dir: str) -> str:
    """The run's last lines: the files it wrote and the command that evaluates it."""
    from pathlib import Path

    root = Path(run_dir)
    files = [name for name in ("config.yaml", "summary.json", "metrics.jsonl", "learning_curves.png", "tensorboard")
             if (root / name).exists()]
    checkpoints = sorted(p.name for p in (root / "checkpoints").glob("step-*")) if (root / "checkpoints").is_dir() else []
    if checkpoints:
        files.append(f"checkpoints/ ({', '.join(checkpoints)})")
    return (f"wrote {root}: {', '.join(files)}\n"
            f"evaluate it: python -m benchmarks.evaluate --policy {root}")


if __name__ == "__main__":
    raise SystemExit(main())
