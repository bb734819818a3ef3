"""``compare_table``: spreadsheet comparison by a list of rules (openpyxl and pandas), as OSWorld scores it.

``options["rules"]`` is a list of ``{"type": ..., ...}``; the score is 1 only when every rule holds. Sheets are
named by ``sheet_idx*``: an int (the result's n-th sheet), ``"RI<n>"``/``"RN<name>"`` (result by index/name),
``"EI<n>"``/``"EN<name>"`` (expected by index/name).

Rule types supported here (:data:`SUPPORTED_RULES`):

    sheet_name   the two books have the same sheet names in the same order
    sheet_data   two sheets hold equal data (pandas, numbers rounded to ``precision`` digits, default 4;
                 ``ignore_case`` folds text)
    sheet_print  two sheets print the same: the CSV exports ``<book stem>-<sheet>.csv`` next to each book
                 (a postconfig step makes them) have equal lines; ``ignore_case``
    sheet_fuzzy  cell ranges compared by ``exact_match``/``includes``/``included_by``/``fuzzy_match`` sub-rules
    check_cell   one cell's ``value`` or style property matches a value rule (see :mod:`.rules`)
    style        the listed style properties of every cell are equal (conditional formats: not supported,
                 an EvaluationError)
    freeze       the same frozen rows/columns
    zoom         the sheet's zoom matches a value rule
    row_props / col_props   listed row/column dimension properties are equal
    data_validation         the sheet's data validations match ``dv_props``
    chart        the two sheets' charts, keyed by their data series, have equal ``chart_props`` (:data:`CHART_PROPS`)
    pivot_table  the two sheets' pivot tables, keyed by their data source, have equal ``pivot_props`` (see
                 :mod:`.pivot`); a missing sheet has none

Anything else (``sparkline``, ``filter``...) makes the task not runnable; the runnable check
reports ``compare_table rule '<type>' is not supported`` before an episode starts.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.pivot import pivot_summary
from rla_envs.desktop.osworld.metrics.rules import match_value_to_rule, similarity_ratio
from rla_envs.desktop.osworld.metrics.text import read_text

__all__ = ["compare_table", "SUPPORTED_RULES", "CELL_STYLE_PROPS", "CHART_PROPS", "read_cell_value"]

logger = logging.getLogger(__name__)

CELL_STYLE_PROPS = ("number_format", "font_name", "font_family", "font_color", "font_bold", "font_italic",
                    "font_underline", "font_size", "fill_type", "bgcolor", "fgcolor", "hyperlink", "merge")
"""Cell properties ``style`` and ``check_cell`` rules can read (besides ``value``)."""

CHART_PROPS = ("title", "legend", "anchor", "width", "height", "type", "direction", "xtitle", "ytitle", "ztitle")
"""Chart properties a ``chart`` rule can compare."""

SUPPORTED_RULES = ("sheet_name", "sheet_data", "sheet_print", "sheet_fuzzy", "check_cell", "style", "freeze",
                   "zoom", "row_props", "col_props", "data_validation", "chart", "pivot_table")


class _Books:
    """The result and expected workbooks, each loaded once per mode (formulas / cached values)."""

    def __init__(self, result: str, expected: str | None):
        self.paths = {"R": result, "E": expected}
        self._books: dict[tuple[str, bool], Any] = {}
        self.names: dict[str, list[str]] = {"R": self.book("R").sheetnames}
        self.names["E"] = self.book("E").sheetnames if expected else []

    def book(self, side: str, *, values: bool = False):
        import openpyxl

        key = (side, values)
        if key not in self._books:
            path = self.paths[side]
            if path is None:
                raise EvaluationError("this compare_table rule needs an expected workbook, and none was given")
            try:
                self._books[key] = openpyxl.load_workbook(path, data_only=values)
            except Exception as exc:  # openpyxl raises many types for a broken file
                if side == "R":
                    raise _BadResult(str(exc)) from exc
                raise EvaluationError(f"the reference workbook {path} cannot be read: {exc}") from exc
        return self._books[key]

    def locate(self, index: Any) -> tuple[str, str | None]:
        """``(side, sheet name)`` for a ``sheet_idx`` value; the name is None when there is no such sheet."""
        if isinstance(index, int) and not isinstance(index, bool):
            side, position, name = "R", index, None
        elif isinstance(index, str) and len(index) >= 2 and index[0] in "RE" and index[1] in "IN":
            side = index[0]
            if index[1] == "N":
                return side, index[2:]
            try:
                position, name = int(index[2:]), None
            except ValueError:
                raise EvaluationError(f"bad sheet index {index!r} (expected RI<n>, RN<name>, EI<n> or EN<name>)") from None
        else:
            raise EvaluationError(f"bad sheet index {index!r} (expected an int, RI<n>, RN<name>, EI<n> or EN<name>)")
        names = self.names[side]
        return side, names[position] if 0 <= position < len(names) else name

    def sheet(self, index: Any, *, values: bool = False):
        """The openpyxl worksheet for ``index``, or None when it does not exist."""
        side, name = self.locate(index)
        book = self.book(side, values=values)
        return book[name] if name is not None and name in book.sheetnames else None


class _BadResult(Exception):
    """The result workbook cannot be read: the agent's output, so the score is 0."""


def read_cell_value(sheet, coordinate: str) -> Any:
    """A cell's stored value as OSWorld reads it: numbers as float, text as str, booleans and empties as None."""
    from openpyxl.utils.datetime import to_excel

    value = sheet[coordinate].value
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time, _dt.timedelta)):
        return float(to_excel(value))
    if isinstance(value, (int, float)):
        return float(value)
    return str(value)


def _cell_style(prop: str, cell) -> Any:
    """One style property of a cell (OSWorld's names; font and number format only for non-empty cells)."""
    from openpyxl.cell.cell import MergedCell

    filled = cell.value is not None
    if prop == "number_format":
        return cell.number_format if filled and cell.data_type == "n" else None
    if prop.startswith("font_"):
        if not filled:
            return None
        font = cell.font
        if prop == "font_color":
            return font.color.rgb if font.color is not None else None
        return getattr(font, {"font_name": "name", "font_family": "family", "font_bold": "bold",
                              "font_italic": "italic", "font_underline": "underline", "font_size": "size"}[prop])
    if prop == "fill_type":
        return getattr(cell.fill, "tagname", None)
    if prop in ("bgcolor", "fgcolor"):
        color = getattr(cell.fill, "fgColor", None)
        return getattr(color, "rgb", None)
    if prop == "hyperlink":
        link = cell.hyperlink
        return str(link.target) if link is not None and getattr(link, "target", None) else ("" if filled else None)
    if prop == "merge":
        return isinstance(cell, MergedCell)
    raise EvaluationError(f"cell property {prop!r} is not supported (supported: value, {', '.join(CELL_STYLE_PROPS)})")


def _frame(books: _Books, index: Any):
    import pandas as pd

    side, name = books.locate(index)
    if name is None or name not in books.names[side]:
        return None
    return pd.read_excel(books.paths[side], sheet_name=name)


def _rule_sheet_data(books: _Books, rule: Mapping[str, Any]) -> bool:
    first, second = _frame(books, rule["sheet_idx0"]), _frame(books, rule["sheet_idx1"])
    if first is None or second is None:
        return False
    digits = rule.get("precision", 4)
    first, second = first.round(digits), second.round(digits)
    if rule.get("ignore_case", False):
        def fold(frame):
            frame = frame.map(lambda v: v.lower() if isinstance(v, str) else v)
            frame.columns = [c.lower() if isinstance(c, str) else c for c in frame.columns]
            return frame
        first, second = fold(first), fold(second)
    return bool(first.equals(second))


def _printed_lines(books: _Books, index: Any) -> list[str] | None:
    side, name = books.locate(index)
    book_path = books.paths[side]
    if name is None or book_path is None:
        return None
    path = Path(book_path)
    text = read_text(str(path.with_name(f"{path.stem}-{name}.csv")))
    if text is None:
        if side == "E":
            raise EvaluationError(f"sheet_print: the reference export {path.stem}-{name}.csv is missing next to "
                                  f"{path.name} (list it in the expected cloud_file)")
        return None
    lines = [line.strip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _rule_sheet_print(books: _Books, rule: Mapping[str, Any]) -> bool:
    first, second = _printed_lines(books, rule["sheet_idx0"]), _printed_lines(books, rule["sheet_idx1"])
    if first is None or second is None:
        return False
    if rule.get("ignore_case", False):
        first, second = [s.lower() for s in first], [s.lower() for s in second]
    return first == second


def _fuzzy_pair(a: str, b: str, sub: Mapping[str, Any]) -> bool:
    for old, new in sub.get("normalization", []):
        a, b = a.replace(old, new), b.replace(old, new)
    if "trim_leadings" in sub:
        a, b = a.lstrip(sub["trim_leadings"]), b.lstrip(sub["trim_leadings"])
    if "trim_trailings" in sub:
        a, b = a.rstrip(sub["trim_trailings"]), b.rstrip(sub["trim_trailings"])
    if "ignore_chars" in sub:
        drop = set(sub["ignore_chars"])
        a, b = "".join(c for c in a if c not in drop), "".join(c for c in b if c not in drop)
    if sub.get("ignore_case", False):
        a, b = a.lower(), b.lower()
    kind = sub["type"]
    if kind == "includes":
        return b in a
    if kind == "included_by":
        return a in b
    if kind == "fuzzy_match":
        return similarity_ratio(a, b) * 100 >= sub.get("threshold", 85.0)
    if kind == "exact_match":
        return a == b
    raise EvaluationError(f"sheet_fuzzy sub-rule type {kind!r} is not supported")


def _rule_sheet_fuzzy(books: _Books, rule: Mapping[str, Any]) -> bool:
    from openpyxl.worksheet.cell_range import MultiCellRange
    from openpyxl.utils import get_column_letter

    first = books.sheet(rule["sheet_idx0"], values=True)
    second = books.sheet(rule["sheet_idx1"], values=True)
    if first is None or second is None:
        return False
    for sub in rule.get("rules", []):
        ranges = sub["range"] if isinstance(sub["range"], str) else " ".join(sub["range"])
        for cell_range in MultiCellRange(ranges):
            for row, col in cell_range.cells:
                coordinate = f"{get_column_letter(col)}{row}"
                if not _fuzzy_pair(str(read_cell_value(first, coordinate)),
                                   str(read_cell_value(second, coordinate)), sub):
                    return False
    return True


def _rule_check_cell(books: _Books, rule: Mapping[str, Any]) -> bool:
    sheet = books.sheet(rule["sheet_idx"])
    if sheet is None:
        return False
    coordinate = rule["coordinate"]
    for prop, value_rule in rule["props"].items():
        if prop == "value":
            value = read_cell_value(books.sheet(rule["sheet_idx"], values=True), coordinate)
        else:
            value = _cell_style(prop, sheet[coordinate])
        if not match_value_to_rule(value, value_rule):
            return False
    return True


def _styles(sheet, props: list[str]) -> dict[str, list[Any]]:
    if sheet is None:
        return {}
    if len(sheet.conditional_formatting):
        raise EvaluationError("compare_table 'style': sheets with conditional formatting are not supported "
                              "(their formulas cannot be evaluated here)")
    return {cell.coordinate: [_cell_style(p, cell) for p in props] for column in sheet.iter_cols() for cell in column}


def _rule_style(books: _Books, rule: Mapping[str, Any]) -> bool:
    props = list(rule.get("props", []))
    return _styles(books.sheet(rule["sheet_idx0"]), props) == _styles(books.sheet(rule["sheet_idx1"]), props)


def _freeze_key(sheet) -> tuple:
    pane = sheet.sheet_view.pane
    if pane is None:
        return ("none",)
    columns, rows = int(pane.xSplit or 0), int(pane.ySplit or 0)
    if (pane.state or "").lower() in ("frozen", "frozensplit"):
        return ("frozen", columns, rows)
    return ("other", columns, rows, pane.topLeftCell)


def _rule_freeze(books: _Books, rule: Mapping[str, Any]) -> bool:
    first, second = books.sheet(rule["sheet_idx0"]), books.sheet(rule["sheet_idx1"])
    return first is not None and second is not None and _freeze_key(first) == _freeze_key(second)


def _rule_zoom(books: _Books, rule: Mapping[str, Any]) -> bool:
    sheet = books.sheet(rule["sheet_idx"])
    return sheet is not None and match_value_to_rule(float(sheet.sheet_view.zoomScale or 100.0), rule)


def _dimensions(sheet, kind: str, props: list[str]) -> dict[Any, dict[str, Any]]:
    if sheet is None:
        return {}
    holder = sheet.row_dimensions if kind == "row" else sheet.column_dimensions
    return {key: {p: getattr(dim, p, None) for p in props} for key, dim in holder.items()}


def _rule_props(kind: str):
    def rule_fn(books: _Books, rule: Mapping[str, Any]) -> bool:
        props = list(rule.get("props", []))
        return (_dimensions(books.sheet(rule["sheet_idx0"]), kind, props)
                == _dimensions(books.sheet(rule["sheet_idx1"]), kind, props))
    return rule_fn


def _rule_data_validation(books: _Books, rule: Mapping[str, Any]) -> bool:
    sheet = books.sheet(rule["sheet_idx"])
    if sheet is None:
        return False
    validations = list(sheet.data_validations.dataValidation)
    wanted = list(rule.get("dv_props", []))
    if len(validations) < len(wanted):
        return False
    for validation in validations:
        if not any(all(match_value_to_rule(getattr(validation, attr, None), r) for attr, r in props.items())
                   for props in wanted):
            return False
    return True


def _rich_text(title) -> str | None:
    try:
        return title.tx.rich.p[0].r[0].t
    except (AttributeError, IndexError, TypeError):
        return None


def _reference(data) -> str:
    for kind in ("numRef", "strRef"):
        formula = getattr(getattr(data, kind, None), "f", None)
        if formula:
            return formula
    return ""


def _charts(sheet, props: list[str]) -> dict[str, dict[str, Any]]:
    """The sheet's charts by their series (``"values,categories;..."``), with the listed properties."""
    if sheet is None:
        return {}
    charts = {}
    for chart in getattr(sheet, "_charts", []):
        key = ";".join(f"{_reference(s.val)},{_reference(s.cat)}" for s in chart.series)
        info: dict[str, Any] = {}
        for prop in props:
            if prop == "title":
                info[prop] = _rich_text(chart.title)
            elif prop in ("xtitle", "ytitle", "ztitle"):
                axis = getattr(chart, f"{prop[0]}_axis", None)
                info[prop] = _rich_text(getattr(axis, "title", None))
            elif prop == "legend":
                info[prop] = chart.legend.position if chart.legend is not None else None
            elif prop == "anchor":
                anchor = chart.anchor
                info[prop] = ([getattr(anchor, "editAs", None), anchor._from.col, anchor._from.row, anchor.to.col,
                               anchor.to.row] if hasattr(anchor, "_from") and hasattr(anchor, "to") else str(anchor))
            elif prop == "type":
                info[prop] = chart.tagname
            elif prop == "direction":
                info[prop] = getattr(chart, "barDir", None)
            else:
                info[prop] = getattr(chart, prop)
        charts[key] = info
    return charts


def _rule_chart(books: _Books, rule: Mapping[str, Any]) -> bool:
    props = list(rule.get("chart_props", []))
    unknown = [p for p in props if p not in CHART_PROPS]
    if unknown:
        raise EvaluationError(f"compare_table chart property {unknown[0]!r} is not supported")
    return _charts(books.sheet(rule["sheet_idx0"]), props) == _charts(books.sheet(rule["sheet_idx1"]), props)


def _rule_pivot_table(books: _Books, rule: Mapping[str, Any]) -> bool:
    props = list(rule.get("pivot_props", []))
    return (pivot_summary(books.sheet(rule["sheet_idx0"]), props)
            == pivot_summary(books.sheet(rule["sheet_idx1"]), props))


_RULES = {
    "sheet_name": lambda books, rule: books.names["R"] == books.names["E"],
    "sheet_data": _rule_sheet_data,
    "sheet_print": _rule_sheet_print,
    "sheet_fuzzy": _rule_sheet_fuzzy,
    "check_cell": _rule_check_cell,
    "style": _rule_style,
    "freeze": _rule_freeze,
    "zoom": _rule_zoom,
    "row_props": _rule_props("row"),
    "col_props": _rule_props("column"),
    "data_validation": _rule_data_validation,
    "chart": _rule_chart,
    "pivot_table": _rule_pivot_table,
}
assert set(_RULES) == set(SUPPORTED_RULES)


def compare_table(result: str | None, expected: str | None = None, **options: Any) -> float:
    """1.0 when every rule in ``options["rules"]`` holds between the result and expected workbooks, else 0.0.

    A missing or unreadable result workbook scores 0. A rule type outside :data:`SUPPORTED_RULES`, a bad
    sheet index or an unreadable reference raises :class:`EvaluationError`.
    """
    rules = options.get("rules")
    if not isinstance(rules, list):
        raise EvaluationError(f"compare_table needs options['rules'] (a list), got {rules!r:.200}")
    unknown = [r.get("type") for r in rules if r.get("type") not in _RULES]
    if unknown:
        raise EvaluationError(f"compare_table rule {unknown[0]!r} is not supported")
    if not result or not Path(result).is_file():
        return 0.0
    try:
        books = _Books(result, expected)
        for rule in rules:
            if not _RULES[rule["type"]](books, rule):
                logger.debug("compare_table: rule %r failed", rule)
                return 0.0
    except _BadResult as exc:
        logger.info("compare_table: the result workbook %s cannot be read (%s): score 0", result, exc)
        return 0.0
    except KeyError as exc:
        raise EvaluationError(f"compare_table: a rule lacks the key {exc}") from exc
    return 1.0
