"""Value rules (``{"method": ..., "ref": ...}``) and string similarity, shared by several metrics.

Methods (as in OSWorld): ``eq ne lt le gt ge``; ``re`` or ``re.FLAG.FLAG`` (a regex search in ``str(value)``);
``approx:<tolerance>`` (``|float(value) - ref| <= tolerance``); ``range.<l><r>`` with ``l``, ``r`` in
``e``/``t`` (``range.te`` with ref ``[0, 2]``: ``0 < value <= 2``); ``str_list_eq`` and ``str_set_eq``
(the value, a list or a quoted comma-separated string such as a list validation's ``"A,B"``, compared with the
ref as a list or set of strings); ``spreadsheet_range`` (the value, cell ranges, lies between ``ref[0]`` and
``ref[1]``: ``ref[0]`` inside the value, the value inside ``ref[1]``).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["match_value_to_rule", "rule_method_supported", "similarity_ratio", "lcs_length"]

_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def rule_method_supported(method: Any) -> bool:
    """Whether :func:`match_value_to_rule` understands ``method``."""
    if not isinstance(method, str):
        return False
    if method in _COMPARISONS or method in ("str_list_eq", "str_set_eq", "spreadsheet_range"):
        return True
    if method == "re" or method.startswith("re."):
        return all(hasattr(re, flag) for flag in method.split(".")[1:])
    if method.startswith("approx:"):
        try:
            float(method.split(":", 1)[1])
        except ValueError:
            return False
        return True
    return bool(re.fullmatch(r"range\.[et][et]", method))


def match_value_to_rule(value: Any, rule: Mapping[str, Any]) -> bool:
    """Whether ``value`` satisfies ``rule`` (see the module docstring); a value of the wrong type fails."""
    method, ref = rule["method"], rule.get("ref")
    if not rule_method_supported(method):
        raise ValueError(f"rule method {method!r} is not supported")
    if method == "re" or method.startswith("re."):
        flags = functools.reduce(operator.or_, (getattr(re, f) for f in method.split(".")[1:]), re.RegexFlag(0))
        return re.search(str(ref), "" if value is None else str(value), flags) is not None
    try:
        if method in _COMPARISONS:
            return bool(getattr(operator, method)(value, ref))
        if method.startswith("approx:"):
            return abs(float(value) - float(ref)) <= float(method.split(":", 1)[1])
        if method.startswith("range."):
            left = operator.le if method[6] == "e" else operator.lt
            right = operator.le if method[7] == "e" else operator.lt
            return bool(left(ref[0], value) and right(value, ref[1]))
        if method == "spreadsheet_range":
            return _ranges_between(value, ref[0], ref[1])
        container = list if method == "str_list_eq" else set
        items = value.strip('"').split(",") if isinstance(value, str) else map(str, value)
        return container(items) == container(map(str, ref))
    except (TypeError, ValueError):
        return False


def _ranges_between(value: Any, inner: str, outer: str) -> bool:
    from openpyxl.worksheet.cell_range import MultiCellRange

    value = MultiCellRange(str(value)) if not isinstance(value, MultiCellRange) else value
    inner_ranges, outer_ranges = MultiCellRange(inner), MultiCellRange(outer)
    return all(r in value for r in inner_ranges) and all(r in outer_ranges for r in value)


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (bit-parallel, Hyyrö 2004)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[str, int] = {}
    for position, char in enumerate(b):
        masks[char] = masks.get(char, 0) | (1 << position)
    full = (1 << len(b)) - 1
    row = full
    for char in a:
        matches = row & masks.get(char, 0)
        row = ((row + matches) | (row - matches)) & full
    return len(b) - bin(row).count("1")


def similarity_ratio(a: str, b: str) -> float:
    """Normalised indel similarity in [0, 1]: ``2 * LCS / (len(a) + len(b))`` (``rapidfuzz.fuzz.ratio / 100``)."""
    total = len(a) + len(b)
    return 1.0 if total == 0 else 2.0 * lcs_length(a, b) / total
