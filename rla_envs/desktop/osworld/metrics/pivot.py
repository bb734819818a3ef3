"""Pivot tables of a worksheet, summarised the way OSWorld's ``compare_table`` rule ``pivot_table`` compares them.

:func:`pivot_summary` maps each pivot table of a sheet to the properties a rule's ``pivot_props`` names, keyed by its
data source (``"<source type>;(<first row>, <first col>):(<last row>, <last col>);<source sheet>"``). Fields are
counted from the first pivot field that lists items, and the source columns are narrowed to the fields that list
items, so a pivot table over a wider range with the same used fields compares equal. Properties:

    name, show_total, show_empty_row, show_empty_col, show_headers, location    as stored in the definition
    selection   per field, the ``(hidden, item index)`` pairs it lists (sets; lists with ``ordered``)
    filter      the selection, plus ``filter_fields``: the set of page (filter) field indices
    col_fields, row_fields   field indices, in order
    data_fields "<field>;<name>;<subtotal>;<show data as>" (the name only with ``data_fields_name``)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

__all__ = ["pivot_summary", "PIVOT_PROPS"]

PIVOT_PROPS = ("name", "show_total", "show_empty_row", "show_empty_col", "show_headers", "location", "selection",
               "filter", "col_fields", "row_fields", "data_fields", "data_fields_name", "ordered")
"""The ``pivot_props`` values a ``pivot_table`` rule may list."""

_FLAGS = {"name": "name", "show_total": "visualTotals", "show_empty_row": "showEmptyRow",
          "show_empty_col": "showEmptyCol", "show_headers": "showHeaders", "location": "location"}


def _used_field_span(selection: list[list[tuple]]) -> tuple[int, int]:
    """``(leading, trailing)``: how many fields at each end list no items."""
    leading = sum(1 for _ in itertools.takewhile(lambda items: not items, selection))
    if leading == len(selection):
        return leading, 0
    trailing = sum(1 for _ in itertools.takewhile(lambda items: not items, reversed(selection)))
    return leading, trailing


def _source_key(pivot, leading: int, trailing: int) -> str:
    from openpyxl.utils.cell import coordinate_to_tuple

    source = pivot.cache.cacheSource
    first, last = source.worksheetSource.ref.split(":")
    first_row, first_col = coordinate_to_tuple(first)
    last_row, last_col = coordinate_to_tuple(last)
    return (f"{source.type};{(first_row, first_col + leading)}:{(last_row, last_col - trailing)};"
            f"{source.worksheetSource.sheet}")


def _summary(pivot, props: set[str]) -> tuple[str, dict[str, Any]]:
    all_fields = [[(item.h, item.x) for item in field.items if item.x is not None] for field in pivot.pivotFields]
    leading, trailing = _used_field_span(all_fields)
    selection = all_fields[leading:len(all_fields) - trailing]
    info: dict[str, Any] = {prop: getattr(pivot, attr) for prop, attr in _FLAGS.items() if prop in props}
    if "filter" in props or "selection" in props:
        info["selection"] = selection if "ordered" in props else [set(items) for items in selection]
    if "filter" in props:
        info["filter_fields"] = {field.fld for field in pivot.pageFields}
    if "col_fields" in props:
        info["col_fields"] = [field.x - leading for field in pivot.colFields]
    if "row_fields" in props:
        info["row_fields"] = [field.x - leading for field in pivot.rowFields]
    if "data_fields" in props:
        named = "data_fields_name" in props
        info["data_fields"] = [f"{field.fld - leading:d};{field.name if named else ''};{field.subtotal};"
                               f"{field.showDataAs}" for field in pivot.dataFields]
    return _source_key(pivot, leading, trailing), info


def pivot_summary(sheet, props: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The pivot tables of an openpyxl worksheet (None: no sheet, so none), by data source, with ``props``."""
    if sheet is None:
        return {}
    wanted = set(props)
    return dict(_summary(pivot, wanted) for pivot in sheet._pivots)
