"""The RLAnything ablation, paired over a shared warm start per seed, with Table 1's statistics.

::

    python -m benchmarks.ablation                      # synthetic family (many seeds) + the real stack (the result)
    python -m benchmarks.ablation --quick              # minutes: a shrunken real run, for CI
    python -m benchmarks.ablation --synthetic-only --synthetic-seeds 40
    python -m benchmarks.ablation --arms outcome_only policy oracle@0.8 --seeds 3 --steps 12 --episodes 256

OUT gets ``synthetic/table.{md,json}`` + ``synthetic/table-curves.png`` and ``real/table.{md,json}`` +
``real/table-curves.png`` (with ``real/seed-S/...`` run directories: rerunning the command resumes per seed and
arm). Arms: ``outcome_only < policy < policy+reward < policy+reward+env`` (Table 1's order), ``reward_only``, and
``oracle@0.5`` / ``oracle@0.8`` (mode ``policy`` with a noisy step-label oracle of accuracy a as the judge).

Sizes: the default real run pools 3 seeds x 128 held-out episodes = 384 episodes per arm and split, which detects
a 10-point difference at a baseline of ~35% (two-sided alpha 0.05, power 0.8; pairing lowers it further); each
table prints the minimum detectable difference it actually achieves. ``--quick`` (16 episodes) checks the
machinery only: it resolves nothing smaller than ~40 points.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.ablation.arms import ARMS, DEFAULT_ARMS, QUICK_ARMS, get_arms

__all__ = ["build_parser", "main", "run_synthetic_phase", "run_real_phase"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.ablation``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", nargs="+", default=None, metavar="ARM",
                        help=f"arms to train (default: all; --quick: {' '.join(QUICK_ARMS)} on the real stack). "
                             f"Known: {', '.join(ARMS)}, oracle@A for any judge accuracy A in [0, 1] (oracle@A-persistent: "
                             f"its errors on the same steps on every visit), and "
                             f"judge@ExK[-linear] for a learned judge the arm warm-starts on E labelled episodes for "
                             f"K steps (judge+reward@ExK[-linear]: co-trained with the policy; judge+reward+env@ExK[-linear]: "
                             f"and the tasks rewritten, the full method)")
    parser.add_argument("--seeds", type=int, default=None, help="real-stack seeds 0..N-1, each with its own shared warm "
                                                                "start (default 3; --quick 1)")
    parser.add_argument("--seed-list", type=int, nargs="+", default=None, metavar="SEED",
                        help="run these real-stack seeds instead of 0..N-1 (e.g. one process per seed on a machine with "
                             "cores to spare; a later run with --seeds N then reads every finished run and writes the "
                             "table of all)")
    parser.add_argument("--steps", type=int, default=None, help="real-stack co-training steps per arm (default 12; "
                                                                "--quick 2)")
    parser.add_argument("--episodes", type=int, default=None, help="real-stack held-out episodes per split, seed and "
                                                                   "arm (default 128; --quick 16)")
    parser.add_argument("--games", type=int, default=None, help="held-out games per split (default 32; --quick 8)")
    parser.add_argument("--synthetic-seeds", type=int, default=None, help="synthetic-family seeds (default 30; "
                                                                          "--quick 8)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="extra config override for every real-stack run (repeatable)")
    parser.add_argument("--out", type=Path, default=Path("runs/ablation"), help="output directory (default runs/ablation)")
    parser.add_argument("--quick", action="store_true", help="a shrunken run (minutes) that checks the machinery")
    parser.add_argument("--synthetic-only", action="store_true", help="skip the real stack")
    parser.add_argument("--real-only", action="store_true", help="skip the synthetic family")
    parser.add_argument("--report-only", action="store_true",
                        help="real stack: train nothing; write the table of the (arm, seed) runs that have finished "
                             "(e.g. while per-seed processes still run), naming those that have not")
    return parser


def _log(message: str) -> None:
    print(f"[ablation {time.strftime('%H:%M:%S')}] {message}", flush=True)


def run_synthetic_phase(args: argparse.Namespace, facts: dict) -> str:
    """Train every arm on the synthetic family for many seeds; write and return its table."""
    from benchmarks.ablation.aggregate import build_table
    from benchmarks.ablation.report import write_report
    from benchmarks.ablation.stats import mean_interval
    from benchmarks.ablation.synthetic import SyntheticSetup, run_synthetic

    arms = get_arms(args.arms)
    if persistent := [a.name for a in arms if a.oracle_noise != "independent"]:
        raise SystemExit(f"python -m benchmarks.ablation: error: {', '.join(persistent)}: the synthetic family's judge "
                         "errs on each vote on its own; persistent errors need real steps to recur on: add --real-only")
    seeds = range(args.synthetic_seeds if args.synthetic_seeds is not None else 8 if args.quick else 30)
    setup = SyntheticSetup(eval_episodes=200) if args.quick else SyntheticSetup()
    _log(f"synthetic: {len(arms)} arms x {len(seeds)} seeds, {setup.steps} steps, {setup.eval_episodes} held-out "
         "episodes per split")
    started = time.perf_counter()
    results = run_synthetic(arms, seeds, setup, log=_log)
    table = build_table(results, [a.name for a in arms])
    notes = [f"Synthetic family ({len(seeds)} seeds, {time.perf_counter() - started:.0f} s): {setup}. Accepted "
             f"rewrites per run (policy+reward+env): "
             f"{_mean([r['accepted_rewrites'] for r in results if r['arm'] == 'policy+reward+env'])}."]
    names = {a.name for a in arms}
    if {"outcome_only", "oracle@0.5"} <= names:                 # the a = 0.5 calibration under a scale-free step
        scale_free = dataclasses.replace(setup, normalized_update=True)
        pairs = run_synthetic([ARMS["outcome_only"], ARMS["oracle@0.5"]], seeds, scale_free)
        diffs = [sum(b["splits"]["in_domain"]) / len(b["splits"]["in_domain"])
                 - sum(a["splits"]["in_domain"]) / len(a["splits"]["in_domain"]) for a, b in zip(pairs[::2], pairs[1::2])]
        cell = mean_interval(diffs)
        notes.append(f"Calibration with a scale-free update (gradient normalised to length lr, as Adam makes it): "
                     f"oracle@0.5 − outcome_only in-domain = {cell['mean'] * 100:+.1f} points "
                     f"[{cell['ci_low'] * 100:+.1f}, {cell['ci_high'] * 100:+.1f}] over {len(seeds)} seeds. Under "
                     "plain SGD the noise votes widen the z-score's denominator and so shrink the outcome's "
                     "advantage (a smaller effective learning rate); a scale-free step removes that.")
    paths = write_report(table, args.out / "synthetic", title="RLAnything ablation — synthetic family",
                         facts=facts, notes=notes, extra={"results": results},
                         ylabel="in-domain success (%), 50 fixed tasks, exact")
    _log(f"synthetic: wrote {paths['md']}, {paths['png']}")
    return paths["md"].read_text()


def _mean(values: Sequence[float]) -> str:
    return f"{sum(values) / len(values):.1f}" if values else "n/a"


def run_real_phase(args: argparse.Namespace, facts: dict) -> str:
    """Train the arms on the real stack (one shared warm start per seed); write and return its table."""
    from benchmarks.ablation.aggregate import build_table
    from benchmarks.ablation.aggregate import WARM_START
    from benchmarks.ablation.real import (QUICK_OVERRIDES, RealSetup, finished_real_results, machines_note, run_real,
                                          with_warm_start)
    from benchmarks.ablation.report import write_report

    arms = get_arms(args.arms or (QUICK_ARMS if args.quick else DEFAULT_ARMS))
    seeds = args.seed_list or range(args.seeds if args.seeds is not None else 1 if args.quick else 3)
    setup = RealSetup(steps=args.steps if args.steps is not None else 2 if args.quick else 12,
                      episodes=args.episodes if args.episodes is not None else 16 if args.quick else 128,
                      games_per_split=args.games if args.games is not None else 8 if args.quick else 32,
                      probe_episodes=4 if args.quick else 16,
                      overrides=(*(QUICK_OVERRIDES if args.quick else ()), *args.overrides))
    _log(f"real: {len(arms)} arms x {len(seeds)} seeds, {setup.steps} steps, {setup.episodes} held-out episodes per "
         f"split ({setup.games_per_split} games)")
    started = time.perf_counter()
    notes = []
    if args.report_only:
        results, unfinished = finished_real_results(arms, seeds, args.out / "real")
        if unfinished:
            notes.append("Not finished, so not in this table: " + ", ".join(f"{a} (seed {s})" for a, s in unfinished) + ".")
        arms = [arm for arm in arms if any(r["arm"] == arm.name for r in results)]
        if not arms:
            raise SystemExit(f"python -m benchmarks.ablation: error: no finished real-stack run under {args.out / 'real'}")
    else:
        results = run_real(arms, seeds, setup, args.out / "real", log=_log)
    notes.append(machines_note(results))
    results = with_warm_start(results)  # the first row: each seed's warm start, the arms' gain over it
    starts = [WARM_START] if any(r["arm"] == WARM_START for r in results) else []
    table = build_table(results, [*starts, *(a.name for a in arms)])
    seeds_per_arm = {arm.name: sorted(r["seed"] for r in results if r["arm"] == arm.name) for arm in arms}
    notes.insert(0, f"Real stack (ALFWorld, tiny Qwen2 policy and reward model, TRL): seeds per arm "
                    f"{ {name: len(s) for name, s in seeds_per_arm.items()} }; "
                    f"{'report of finished runs' if args.report_only else f'{time.perf_counter() - started:.0f} s'}; "
                    f"{setup}.")
    paths = write_report(table, args.out / "real", title="RLAnything ablation — ALFWorld, tiny models (real stack)",
                         facts=facts, notes=notes, extra={"results": results},
                         ylabel="training success (%) of the drawn tasks")
    _log(f"real: wrote {paths['md']}, {paths['png']}")
    return paths["md"].read_text()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ablation the arguments describe; print the tables."""
    from rla_train import missing_train_extra

    if problem := missing_train_extra("python -m benchmarks.ablation"):
        print(problem, file=sys.stderr)
        return 2
    from rla_train.cpu_kernels import pin_cpu_kernels

    pin_cpu_kernels()  # the kernels python -m rla_train.run pins, so an arm computes as the main job; before torch
    from rla_train.cpu_kernels import set_torch_threads

    set_torch_threads()  # one thread per process, as python -m rla_train.run: per-seed processes share the cores
    from benchmarks.ablation.report import machine_facts

    args = build_parser().parse_args(argv)
    try:
        get_arms(args.arms)
    except ValueError as error:  # an unknown arm, with the closest known one
        build_parser().error(str(error))
    facts = machine_facts(list(sys.argv[1:] if argv is None else argv))
    started = time.perf_counter()
    if args.synthetic_only and args.real_only:
        build_parser().error("--synthetic-only and --real-only leave nothing to run; pass at most one")
    if not args.real_only:
        print(run_synthetic_phase(args, facts))
    if not args.synthetic_only:
        print(run_real_phase(args, facts))
    _log(f"done in {time.perf_counter() - started:.0f} s")
    return 0
