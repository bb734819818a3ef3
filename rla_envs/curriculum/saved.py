"""The structure of a saved TaskPool (``TaskPool.save``), checked field by field before a pool is rebuilt.

:func:`check_saved_pool` walks the document that :meth:`TaskPool.to_dict` writes and raises
:class:`SavedPoolProblem` naming the first field that is missing, of the wrong type or out of range
(``slots[2].active``, ``stats['toy:ab12'].alpha``). ``TaskPool.load`` turns it into an ``InvalidFile`` naming
the file too. Every check is on plain data; nothing here builds a pool.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["SavedPoolProblem", "check_saved_pool", "STATS_FIELDS", "HISTORY_FIELDS"]

MAX_COUNT = 2**62
"""Counters beyond this are not counts a run could reach (and overflow numpy's integers)."""


class SavedPoolProblem(ValueError):
    """One field of a saved pool that cannot be used: ``field`` is its path, the message says what is wrong."""

    def __init__(self, field: str, problem: str):
        self.field = field
        super().__init__(f"{field}: {problem}")


Check = Callable[[Any], str | None]  # the problem with a value, or None


def _count(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT
    return None if ok else f"expected a whole number >= 0, got {value!r:.40}"


def _episode(value: Any) -> str | None:  # last_seen is -1 for a task never played
    ok = isinstance(value, int) and not isinstance(value, bool) and -1 <= value < MAX_COUNT
    return None if ok else f"expected a whole number >= -1, got {value!r:.40}"


def _number(low: float, high: float, *, open_low: bool = False) -> Check:
    def check(value: Any) -> str | None:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
              and (low < value if open_low else low <= value) and value <= high)
        bound = f"{'>' if open_low else '>='} {low:g}"
        return None if ok else f"expected a number {bound} and <= {high:g}, got {value!r:.40}"
    return check


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) else f"expected a string, got {type(value).__name__}"


def _text_or_none(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else f"expected a string or null, got {value!r:.40}"


def _mapping(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"expected an object, got {type(value).__name__}"


def _outcomes(value: Any) -> str | None:
    if not isinstance(value, list) or any(_number(0.0, 1.0)(item) for item in value):
        return f"expected a list of outcomes in [0, 1], got {value!r:.60}"
    return None


STATS_FIELDS: dict[str, Check] = {
    "alpha": _number(0.0, 1e300, open_low=True), "beta": _number(0.0, 1e300, open_low=True), "episodes": _count,
    "successes": _number(0.0, 1e300), "last_seen": _episode, "zero_variance_streak": _count,
    "zero_variance_kind": lambda v: None if v in (None, "all_fail", "all_pass") else
    f"expected null, 'all_fail' or 'all_pass', got {v!r:.40}",
    "groups": _count, "recent": _outcomes,
}
HISTORY_FIELDS: dict[str, Check] = {
    "event": lambda v: None if v in ("accepted", "rejected") else f"expected 'accepted' or 'rejected', got {v!r:.40}",
    "task_id": _text, "replaced_by": _text_or_none, "direction": _text_or_none, "episode": _count, "reason": _text,
    "evidence": _mapping,
}
SLOT_FIELDS: dict[str, Check] = {
    "root": _text, "active": _text, "pending": _text_or_none, "pending_direction": _text_or_none,
    "observations_at_last_rejection": _count, "history": lambda v: None if isinstance(v, list) else "expected a list",
}


def _fields(record: Any, checks: dict[str, Check], where: str, *, optional: tuple[str, ...] = ()) -> None:
    """Every field of ``checks`` present (unless optional) and valid, and no other field."""
    if not isinstance(record, dict):
        raise SavedPoolProblem(where, f"expected an object, got {type(record).__name__}")
    unknown = sorted(set(record) - set(checks))
    if unknown:
        raise SavedPoolProblem(where, f"unknown fields {unknown[:5]}")
    for name, check in checks.items():
        if name not in record:
            if name in optional:
                continue
            raise SavedPoolProblem(f"{where}.{name}", "missing")
        problem = check(record[name])
        if problem:
            raise SavedPoolProblem(f"{where}.{name}", problem)


def _known(task_id: Any, known: set[str], where: str) -> None:
    if task_id is not None and (not isinstance(task_id, str) or task_id not in known):
        raise SavedPoolProblem(where, f"{task_id!r:.60} is not the id of any task in 'tasks'")


def check_saved_pool(data: Any, task_ids: set[str]) -> None:
    """Raise :class:`SavedPoolProblem` unless ``data`` (format and version already checked) is a usable pool.

    ``task_ids`` are the ids of the tasks in ``data["tasks"]`` (rebuilt by the caller, which names their errors).
    """
    top: dict[str, Check] = {
        "format": _text, "version": _count, "config": _mapping, "tasks": lambda v: None if isinstance(v, list)
        else "expected a list of task dicts", "root_of": _mapping, "slots": lambda v: None if isinstance(v, list)
        and v else "expected a non-empty list", "stats": _mapping, "episodes": _count, "counters": _mapping,
        "history_log": lambda v: None if isinstance(v, list) and all(isinstance(e, dict) for e in v)
        else "expected a list of objects", "rng_state": _mapping,
    }
    _fields(data, top, "pool")
    roots = set()
    for index, slot in enumerate(data["slots"]):
        where = f"slots[{index}]"
        _fields(slot, SLOT_FIELDS, where)
        for name in ("root", "active", "pending"):
            _known(slot[name], task_ids, f"{where}.{name}")
        if slot["root"] in roots:
            raise SavedPoolProblem(f"{where}.root", f"{slot['root']!r:.60} has two slots")
        roots.add(slot["root"])
        for number, entry in enumerate(slot["history"]):
            _fields(entry, HISTORY_FIELDS, f"{where}.history[{number}]")
    for task_id, root in data["root_of"].items():
        _known(task_id, task_ids, f"root_of[{task_id!r:.40}]")
        if not isinstance(root, str) or root not in roots:
            raise SavedPoolProblem(f"root_of[{task_id!r:.40}]", f"{root!r:.60} is not the root of any slot")
    missing = sorted(task_ids - set(data["root_of"]))
    if missing:
        raise SavedPoolProblem("root_of", f"has no root for task {missing[0]!r:.60}")
    for task_id, stats in data["stats"].items():
        _known(task_id, task_ids, f"stats[{task_id!r:.40}]")
        _fields(stats, STATS_FIELDS, f"stats[{task_id!r:.40}]", optional=tuple(STATS_FIELDS))
    for name, value in data["counters"].items():
        problem = _count(value)
        if problem:
            raise SavedPoolProblem(f"counters[{name!r:.40}]", problem)
