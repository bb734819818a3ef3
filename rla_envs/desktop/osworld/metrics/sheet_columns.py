"""Metrics over one column of a workbook's active sheet: ``compare_conference_city_in_order``.

A result workbook that is missing or unreadable scores 0 (OSWorld raises on it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["compare_conference_city_in_order", "column_values"]

CITY_CELLS = "C2:C22"
"""The cells OSWorld reads the cities from (one conference-year a row)."""


def column_values(path: str | None, cells: str) -> list[Any] | None:
    """The values (formulas as text) of ``cells`` in the active sheet, row by row; None for an unreadable file."""
    import openpyxl  # heavy: only the spreadsheet metrics need it

    if not path:
        return None
    try:
        sheet = openpyxl.load_workbook(path).active
        return [cell.value for row in sheet[cells] for cell in row]
    except Exception:  # openpyxl raises many unrelated types for a file that is not a workbook
        return None


def compare_conference_city_in_order(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when each city cell (``C2:C22``) contains its expected city, in order; an expected entry is a name or a
    list of accepted names. A cell that is not text, or more cells than expected entries, scores 0."""
    cities = column_values(result, CITY_CELLS)
    if cities is None:
        return 0.0
    expected = rules["expected"]
    if len(expected) < len(cities):
        return 0.0
    for cell, wanted in zip(cities, expected):
        names = [wanted] if isinstance(wanted, str) else wanted
        if not isinstance(cell, str) or not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return 0.0
        if not any(name in cell for name in names):
            return 0.0
    return 1.0
