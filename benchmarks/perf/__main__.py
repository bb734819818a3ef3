"""Performance benchmarks: ``python -m benchmarks.perf SUITE [--quick] [--json OUT]``.

Each benchmark measures rla and its baseline side by side in the same run and reports the ratio
against the project's goal, with the machine and versions, as a Markdown table.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from benchmarks.perf.report import Metric, format_table, machine_facts, write_json

# suite name -> modules whose run(quick) -> list[Metric] it runs
SUITES: dict[str, tuple[str, ...]] = {
    "textenvs": ("benchmarks.perf.textworld", "benchmarks.perf.alfworld"),
    "curriculum": ("benchmarks.perf.curriculum",),
    "sandbox": ("benchmarks.perf.sandbox",),
    "rollout": ("benchmarks.perf.rollout",),
    "trainer": ("benchmarks.perf.trainer",),
    "cotrain": ("benchmarks.perf.cotrain",),
}
SUITES["all"] = tuple(dict.fromkeys(m for modules in SUITES.values() for m in modules))
# After "all": the desktop suite needs Debian's desktop packages (scripts/install-desktop.sh), so it runs by name.
SUITES["desktop"] = ("benchmarks.perf.desktop",)
# The scale suite needs Ray (pip install "rla[ray]"): Ray actors vs env processes, by name too.
SUITES["scale"] = ("benchmarks.perf.scale",)


def run_suite(name: str, quick: bool) -> list[Metric]:
    """Run every benchmark of suite ``name`` and return their metrics."""
    metrics: list[Metric] = []
    for module_name in SUITES[name]:
        print(f"running {module_name} ...", file=sys.stderr, flush=True)
        metrics.extend(importlib.import_module(module_name).run(quick=quick))
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", choices=sorted(SUITES), help="which benchmarks to run")
    parser.add_argument("--json", metavar="OUT", help="write {metric: ratio, details, machine} to this file")
    parser.add_argument("--quick", action="store_true", help="fewer games and repeats (a smoke run, noisier)")
    args = parser.parse_args(argv)
    metrics = run_suite(args.suite, args.quick)
    facts = machine_facts()
    print(format_table(metrics, facts))
    if args.json:
        write_json(args.json, metrics, facts)
        print(f"wrote {args.json}")
    missed = [m.name for m in metrics if m.meets_goal is False]
    if missed:
        print(f"below goal: {', '.join(missed)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
