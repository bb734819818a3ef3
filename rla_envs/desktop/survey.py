"""How many OSWorld tasks this env can play, and why not the rest.

Usage::

    python -m rla_envs.desktop.survey DIR [--cache CACHE | --assume-cached] [--apps mousepad,libreoffice,...]
                                          [--json OUT]

DIR holds OSWorld task files (``<app>/<task-id>.json``). Prints the number of tasks, how many are runnable
(per app), and for the rest how many tasks each reason blocks (a task may have several) and each task's first
reason (these add up to the not-runnable count). Downloads missing from the cache are counted as one reason
kind; ``--json`` writes every task's full reasons. ``--assume-cached`` counts every file as present: what a
full mirror of OSWorld's file cache would allow.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.runnable import not_runnable_reasons
from rla_envs.desktop.osworld.tasks import load_tasks

__all__ = ["survey", "reason_kind", "format_summary", "main", "AssumeCached"]

_MISSING_FILE = re.compile(r"^(?P<kind>download|cloud_file): .* is not in the cache (?P<root>.*)$")


class AssumeCached(FileCache):
    """A cache that claims to hold every file (for ``--assume-cached``); it is never used to run a task."""

    def describe(self) -> str:
        return "(every file assumed cached)"

    def resolve(self, url, *, task_id=None, dest=None, kind="download"):
        return Path(os.devnull)


def reason_kind(reason: str) -> str:
    """The reason with its URL dropped (``download: a file is not in the cache <root>``), for counting."""
    match = _MISSING_FILE.match(reason)
    if match:
        return f"{match['kind']}: a file is not in the cache {match['root']}"
    return reason


def survey(directory: str | Path, *, cache: FileCache | None = None,
           has_app: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """Runnable status of every OSWorld task under ``directory``.

    Returns a JSON-ready dict: ``total``, ``runnable``, ``not_runnable``, ``by_app`` ({app: [runnable,
    total]}), ``reason_counts`` (tasks per reason kind), ``first_reason_counts`` (not-runnable tasks by their
    first reason kind), ``only_missing_files`` (tasks that only lack cached files) and ``tasks`` (id, app,
    reasons for each task).
    """
    cache = cache or FileCache(None)
    tasks = load_tasks(directory)
    rows, by_app = [], {}
    reason_counts: Counter[str] = Counter()
    first_counts: Counter[str] = Counter()
    only_files = 0
    for task in tasks:
        reasons = not_runnable_reasons(task, cache=cache, has_app=has_app)
        app = task.meta.get("app", "")
        counts = by_app.setdefault(app, [0, 0])
        counts[1] += 1
        kinds = list(dict.fromkeys(reason_kind(r) for r in reasons))
        if not reasons:
            counts[0] += 1
        else:
            first_counts[kinds[0]] += 1
            reason_counts.update(kinds)
            only_files += all(_MISSING_FILE.match(r) for r in reasons)
        rows.append({"id": task.meta.get("osworld_id"), "app": app, "source": task.meta.get("source"),
                     "reasons": reasons})
    runnable = sum(1 for row in rows if not row["reasons"])
    return {"directory": str(directory), "cache": cache.describe(), "total": len(rows), "runnable": runnable,
            "not_runnable": len(rows) - runnable, "only_missing_files": only_files,
            "by_app": dict(sorted(by_app.items())), "reason_counts": dict(reason_counts.most_common()),
            "first_reason_counts": dict(first_counts.most_common()), "tasks": rows}


def format_summary(report: dict[str, Any]) -> str:
    """The survey as text for a terminal."""
    lines = [f"OSWorld tasks in {report['directory']} (cache: {report['cache']})",
             f"  total: {report['total']}   runnable: {report['runnable']}   not runnable: {report['not_runnable']}"
             f"   (of those, only lacking cached files: {report['only_missing_files']})",
             "", "runnable by app:"]
    lines += [f"  {app:<22} {ok:>4} / {total}" for app, (ok, total) in report["by_app"].items()]
    lines += ["", "first reason of each not-runnable task (adds up to the not-runnable count):"]
    lines += [f"  {count:>4}  {reason}" for reason, count in report["first_reason_counts"].items()]
    lines += ["", "tasks blocked by each reason (a task may have several):"]
    lines += [f"  {count:>4}  {reason}" for reason, count in report["reason_counts"].items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rla_envs.desktop.survey", description=__doc__.split("\n")[0])
    parser.add_argument("directory", help="a folder of OSWorld task files (<app>/<task-id>.json)")
    files = parser.add_mutually_exclusive_group()
    files.add_argument("--cache", default=None, help="the local file cache (a mirror of OSWorld's file cache)")
    files.add_argument("--assume-cached", action="store_true",
                       help="count every download and cloud_file as present (what a full cache would allow)")
    parser.add_argument("--apps", default=None,
                        help="comma-separated programs installed in the session (default: this machine's PATH)")
    parser.add_argument("--json", dest="json_out", default=None, help="write the full report (every task) here")
    args = parser.parse_args(argv)
    has_app = None
    if args.apps is not None:
        installed = {name.strip() for name in args.apps.split(",") if name.strip()}
        has_app = lambda name: name in installed or Path(name).name in installed  # noqa: E731
    if args.cache and not Path(args.cache).is_dir():
        print(f"survey: the cache directory {args.cache} does not exist (expected <cache>/<app>/<task-id>/<file>)",
              file=sys.stderr)
        return 2
    cache = AssumeCached(None) if args.assume_cached else FileCache(args.cache) if args.cache else None
    try:
        report = survey(args.directory, cache=cache, has_app=has_app)
    except (OSError, ValueError) as exc:
        print(f"survey: {exc}", file=sys.stderr)
        return 2
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    try:
        print(format_summary(report))
        if args.json_out:
            print(f"\nfull report: {args.json_out}")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
