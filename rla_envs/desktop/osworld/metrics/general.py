"""Metrics over values (command output, JSON objects, rule dicts): ``check_include_exclude``, ``exact_match``,
``match_in_list``, ``is_in_list``, ``literal_match``, ``check_direct_json_object``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["check_include_exclude", "exact_match", "match_in_list", "is_in_list", "literal_match",
           "check_direct_json_object"]


def check_include_exclude(result: Any, rules: Mapping[str, Sequence[str]], **options: Any) -> float:
    """1 when ``result`` (text) contains every ``include`` string and none of the ``exclude`` strings."""
    if result is None:
        return 0.0
    include, exclude = rules.get("include", []), rules.get("exclude", [])
    return float(all(text in result for text in include) and all(text not in result for text in exclude))


def exact_match(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when ``result == rules["expected"]`` (command output keeps its trailing newline, as in OSWorld)."""
    return float(result == rules["expected"])


def match_in_list(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when ``result`` is one of ``rules["expected"]``."""
    try:
        return float(result in rules["expected"])
    except TypeError:
        return 0.0


def is_in_list(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when ``rules["expected"]`` is in ``result`` (a list or a string)."""
    try:
        return float(rules["expected"] in result)
    except TypeError:
        return 0.0


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """1 when ``str(result) == str(expected)`` (``type: "list"``: element-wise); option ``ignore_case``."""
    fold = (lambda s: str(s).lower()) if options.get("ignore_case", False) else str
    if options.get("type", "str") == "list":
        if not isinstance(result, (list, tuple)) or not isinstance(expected, (list, tuple)):
            return 0.0
        return float([fold(v) for v in result] == [fold(v) for v in expected])
    return float(fold(result) == fold(expected))


def _as_object(result: Any) -> Any:
    if isinstance(result, str):
        try:  # OSWorld turns single quotes into double quotes before parsing
            return json.loads(result.strip().replace("'", '"'))
        except json.JSONDecodeError:
            return None
    return result


def check_direct_json_object(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the JSON object ``result`` (a dict or its text) holds ``rules["expected"]``.

    Default: every expected key has an equal value (with ``"ignore_list_order": true`` inside ``expected``,
    lists compare sorted). With ``"expect_in_result": true``: a string value must be a substring of the
    result's value, and a list value lists acceptable values (one must be in the result's list or equal to
    its string). A result that is not a JSON object scores 0.
    """
    result = _as_object(result)
    if not isinstance(result, Mapping):
        return 0.0
    expected = rules.get("expected")
    if not isinstance(expected, Mapping):
        return 0.0
    if any(value == "__EVALUATION_FAILED__" for value in expected.values()):
        return 0.0
    if not rules.get("expect_in_result", False):
        sort_lists = bool(expected.get("ignore_list_order", False))
        for key, want in expected.items():
            if key == "ignore_list_order":  # a flag, not a key to compare
                continue
            got = result.get(key)
            if sort_lists and isinstance(want, list) and isinstance(got, list):
                try:
                    want, got = sorted(want), sorted(got)
                except TypeError:
                    return 0.0
            if want != got:
                return 0.0
        return 1.0
    for key, want in expected.items():
        got = result.get(key)
        if isinstance(want, list):
            if not any((isinstance(got, list) and option in got) or (isinstance(got, str) and option == got)
                       for option in want):
                return 0.0
        elif isinstance(want, str):
            if not isinstance(got, str) or want not in got:
                return 0.0
        else:
            return 0.0
    return 1.0
