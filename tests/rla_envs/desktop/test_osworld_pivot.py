"""compare_table's ``pivot_table`` rule over workbooks with hand-built pivot tables (see ``pivot_books``)."""

import openpyxl
import pytest

from rla_envs.desktop.osworld.metrics.pivot import pivot_summary
from rla_envs.desktop.osworld.metrics.table import compare_table
from tests.rla_envs.desktop.pivot_books import pivot_book

TASK_PROPS = ["col_fields", "filter", "row_fields", "data_fields"]
"""What OSWorld's five pivot-table tasks compare."""


def _score(result, expected, props=TASK_PROPS):
    rule = {"type": "pivot_table", "sheet_idx0": "RNSheet2", "sheet_idx1": "ENSheet2", "pivot_props": props}
    return compare_table(result, expected, rules=[rule])


def test_summary_keys_by_source_and_reads_fields(tmp_path):
    book = openpyxl.load_workbook(pivot_book(tmp_path / "a.xlsx", rows=(0,), cols=(1,), pages=(), hidden=(1,)))
    summary = pivot_summary(book["Sheet2"], TASK_PROPS + ["name", "ordered"])
    # fields 0 and 1 list items, field 2 (the data) lists none: the source narrows to columns 1..2
    assert summary == {"worksheet;(1, 1):(4, 2);Sheet1": {
        "name": "PivotTable1", "selection": [[(None, 0), (True, 1), ], [(None, 0), (True, 1)]],
        "filter_fields": set(), "col_fields": [1], "row_fields": [0], "data_fields": ["2;;sum;normal"]}}
    assert pivot_summary(None, TASK_PROPS) == {}


def test_same_pivot_scores_one(tmp_path):
    assert _score(pivot_book(tmp_path / "r.xlsx"), pivot_book(tmp_path / "e.xlsx")) == 1.0


@pytest.mark.parametrize("change", [{"rows": (1,)}, {"cols": (1,)}, {"pages": (1,)}, {"data": ((2, "average"),)},
                                    {"hidden": (0,)}, {"source": "A1:C3"}, {"sheet": None}])
def test_a_different_pivot_scores_zero(tmp_path, change):
    assert _score(pivot_book(tmp_path / "r.xlsx", **change), pivot_book(tmp_path / "e.xlsx")) == 0.0


def test_leading_unused_fields_are_not_counted(tmp_path):
    widened = pivot_book(tmp_path / "r.xlsx", unused_leading=1, source="A1:D4")
    assert _score(widened, pivot_book(tmp_path / "e.xlsx", source="B1:D4")) == 1.0


def test_data_field_name_counts_only_when_asked(tmp_path):
    renamed = pivot_book(tmp_path / "r.xlsx", data_name="Total")
    expected = pivot_book(tmp_path / "e.xlsx")
    assert _score(renamed, expected) == 1.0
    assert _score(renamed, expected, TASK_PROPS + ["data_fields_name"]) == 0.0


def test_no_sheet_on_either_side_means_no_pivots(tmp_path):
    rule = {"type": "pivot_table", "sheet_idx0": "RNMissing", "sheet_idx1": "ENMissing", "pivot_props": TASK_PROPS}
    assert compare_table(pivot_book(tmp_path / "r.xlsx"), pivot_book(tmp_path / "e.xlsx"), rules=[rule]) == 1.0
