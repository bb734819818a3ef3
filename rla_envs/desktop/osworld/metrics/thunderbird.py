"""OSWorld's Thunderbird metrics: preferences in the profile's ``prefs.js`` and message filters in
``msgFilterRules.dat``, scored as OSWorld's functions of the same name score them.

``check_thunderbird_folder`` is not here: OSWorld 1.0.2's version splits a folder file on ``"FROM - "`` and keeps
only the EMPTY pieces, so it scores 1 for any existing result file whose start matches the reference's; it would
reward nothing, and both tasks that use it also need Google Drive.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.osworld.metrics.rules import match_value_to_rule

__all__ = ["check_thunderbird_prefs", "check_thunderbird_filter", "read_prefs", "read_filters"]

_PREF_LINE = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<value>.+)\);$')
"""One ``user_pref("key", value);`` line of prefs.js (the value is JSON)."""

_CONDITION = re.compile(r"""
    \b(?:AND|OR)\ \(          # AND ( or OR (
    [\w\ ]+ ,                 # the field: subject, from, ...
    [\w\ ']+ ,                # the operator: contains, is, doesn't contain, ...
    (?: "[\s\S]+" | [^)]+ )   # a quoted value (the longest that still ends in ")), or one without ')'
    \)
    | \bALL\b                 # or the condition that matches every message
""", re.VERBOSE)
"""One term of a filter's ``condition`` line, as OSWorld splits it."""

_FILTER_FIELDS = ("name", "enabled", "type", "action", "actionValue")


def read_prefs(path: str) -> list[tuple[str, Any]]:
    """``(key, value)`` of every ``user_pref`` line in a prefs.js file, in order (other lines are skipped).

    Raises:
        json.JSONDecodeError: a ``user_pref`` value that is not JSON (OSWorld fails on it too).
    """
    found = []
    with open(path, encoding="utf-8") as file:
        for line in file:
            match = _PREF_LINE.match(line.strip())
            if match:
                found.append((match.group("key"), json.loads(match.group("value"))))
    return found


def check_thunderbird_prefs(result: Any, rule: Mapping[str, Any]) -> float:
    """1 when every ``rule["expect"]`` preference is set and matches its value rule (``{"method", "ref"}``, see
    :mod:`.rules`) and no ``rule["unexpect"]`` preference matches its rule, else 0.

    A preference set on several lines counts by its last line (expect) or by every line (unexpect). A missing
    result file (None) scores 0.
    """
    if result is None:
        return 0.0
    expect_rules = rule.get("expect", {})
    unexpect_rules = rule.get("unexpect", {})
    expected_found = {key: False for key in expect_rules}
    no_unexpected = True
    for key, value in read_prefs(result):
        if key in expect_rules:
            expected_found[key] = match_value_to_rule(value, expect_rules[key])
        elif key in unexpect_rules:
            no_unexpected = no_unexpected and not match_value_to_rule(value, unexpect_rules[key])
    return 1.0 if all(expected_found.values()) and no_unexpected else 0.0


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\\\", "\\")


def read_filters(path: str) -> list[dict[str, Any]]:
    """The filters of a msgFilterRules.dat file as OSWorld reads them: ``name``, ``enabled``, ``type``,
    ``action``, ``actionValue`` (the last of each before the filter's ``condition`` line) and ``condition`` (the
    list of its terms, e.g. ``["AND (subject,contains,discount)"]`` or ``["ALL"]``).

    Each ``key="value"`` line's value is taken as the text between ``key="`` and the line's last two characters
    (the closing quote and the newline), unescaped. A filter ends at its ``condition`` line.

    Raises:
        ValueError: a filter field before any ``name=`` line.
    """
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    with open(path, encoding="utf-8") as file:
        for line in file:
            field = next((name for name in (*_FILTER_FIELDS, "condition") if line.startswith(f"{name}=")), None)
            if field is None:
                continue
            value = _unescape(line[len(field) + 2:-2])
            if field == "name":
                current = {}
            elif current is None:
                raise ValueError(f"msgFilterRules.dat: {field}= comes before any name= line")
            if field == "condition":
                current["condition"] = _CONDITION.findall(value)
                filters.append(current)
            else:
                current[field] = value
    return filters


def _matches(pattern: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    return all(key in record and record[key] == value for key, value in pattern.items())


def check_thunderbird_filter(result: Any, rules: Mapping[str, Any]) -> float:
    """1 when every ``rules["expect"]`` pattern (a dict of filter fields) matches some filter and no filter matches
    a ``rules["unexpect"]`` pattern, else 0 (a missing result file scores 0)."""
    if result is None:
        return 0.0
    filters = read_filters(result)
    expect = rules.get("expect", [])
    unexpect = rules.get("unexpect", [])
    found = [any(_matches(pattern, flt) for flt in filters) for pattern in expect]
    clean = not any(_matches(pattern, flt) for flt in filters for pattern in unexpect)
    return 1.0 if all(found) and clean else 0.0
