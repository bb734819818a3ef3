"""Rule checks over structured files: ``check_json`` (JSON or YAML keys), ``check_csv`` (rows) and ``run_sqlite3``.

``check_json``'s rules: ``{"expect": [{"key": [k1, k2, ...], "method": ..., "ref": ...}], "unexpect": [...]}``;
the value at the key path must match every ``expect`` rule and no ``unexpect`` rule (methods: :mod:`.rules`). As in
OSWorld, an ``expect`` key that is missing scores 0, an ``unexpect`` key that is missing is compared as None, and a
comparison that cannot be made (a regex over a number, ``lt`` against None...) scores 0 whichever list it is in.
"""

from __future__ import annotations

import csv
import json
import logging
import operator
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.rules import match_value_to_rule, rule_method_supported

__all__ = ["check_json", "check_csv", "run_sqlite3"]

logger = logging.getLogger(__name__)

_MISSING = object()
_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def _load(path: str, is_yaml: bool) -> Any:
    """The parsed file, or ``_MISSING`` when it cannot be read or parsed (or a YAML file is empty)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        if not is_yaml:
            return json.loads(text)
        import yaml

        data = yaml.safe_load(text)
        return _MISSING if data is None else data
    except Exception as exc:  # unreadable, not UTF-8, or not JSON/YAML: the agent's file, so 0
        logger.info("check_json: %s cannot be read (%s): score 0", path, exc)
        return _MISSING


def _walk(data: Any, keys: list[Any]) -> Any:
    """The value at ``keys`` in ``data``; ``_MISSING`` when a key is absent or a value has no keys."""
    for key in keys:
        try:
            data = data[key]
        except (KeyError, TypeError):
            return _MISSING
    return data


def _holds(value: Any, rule: Mapping[str, Any]) -> bool | None:
    """Whether ``value`` matches ``rule``; None when the comparison itself fails (OSWorld then scores 0)."""
    method = rule["method"]
    if not rule_method_supported(method):
        raise EvaluationError(f"check_json rule method {method!r} is not supported")
    if method == "re" or method.startswith("re."):
        return match_value_to_rule(value, rule) if isinstance(value, str) else None
    if method in _COMPARISONS:
        try:
            return bool(getattr(operator, method)(value, rule.get("ref")))
        except TypeError:
            return None
    return match_value_to_rule(value, rule)


def check_json(result: Any, rules: Mapping[str, Any], is_yaml: bool = False, **options: Any) -> float:
    """1 when the JSON (``is_yaml``: YAML) file matches every ``expect`` rule and no ``unexpect`` rule."""
    if result is None or not Path(result).is_file():
        return 0.0
    data = _load(result, is_yaml)
    if data is _MISSING:
        return 0.0
    passed = True
    try:
        for rule in rules.get("expect", []):
            value = _walk(data, rule["key"])
            if value is _MISSING:
                return 0.0
            holds = _holds(value, rule)
            if holds is None:
                return 0.0
            passed = passed and holds
        for rule in rules.get("unexpect", []):
            value = _walk(data, rule["key"])
            holds = _holds(None if value is _MISSING else value, rule)
            if holds is None:
                return 0.0
            passed = passed and not holds
    except (IndexError, KeyError) as exc:  # a list index out of range, or a rule without "key"/"method"
        logger.info("check_json: rule failed on %s (%s): score 0", result, exc)
        return 0.0
    return float(passed)


def _matches(pattern: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    return all(key in row and row[key] == value for key, value in pattern.items())


def check_csv(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when each ``expect`` record matches some row of the CSV file and no row matches an ``unexpect`` record."""
    if result is None or not Path(result).is_file():
        return 0.0
    expect, unexpect = list(rules.get("expect", [])), list(rules.get("unexpect", []))
    found = [False] * len(expect)
    with open(result, newline="", encoding="utf-8", errors="replace") as handle:
        for row in csv.DictReader(handle):
            found = [hit or _matches(pattern, row) for hit, pattern in zip(found, expect)]
            if any(_matches(pattern, row) for pattern in unexpect):
                return 0.0
    return float(all(found))


def run_sqlite3(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """The first column of the first row ``rules["sql"]`` returns on the SQLite file (a true/false query), as a float.

    A missing database or a query that fails on it scores 0. The file is opened read-only.
    """
    if result is None or not Path(result).is_file():
        return 0.0
    sql = rules.get("sql")
    if not isinstance(sql, str):
        raise EvaluationError(f"run_sqlite3 needs rules['sql'] (a string), got {sql!r:.200}")
    try:
        connection = sqlite3.connect(f"{Path(result).resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = connection.execute(sql).fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        logger.info("run_sqlite3: the query failed on %s (%s): score 0", result, exc)
        return 0.0
    return float((row[0] if row else None) or 0)
