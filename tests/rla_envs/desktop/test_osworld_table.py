"""compare_table over workbooks made with openpyxl: each supported rule, with matching and mismatching books."""

import openpyxl
import pytest
from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import Font, PatternFill

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.table import compare_table

ROWS = [["Name", "Score"], ["Ada", 3.14159], ["Bob", 2.5]]


def _book(path, sheets=None, *, edit=None):
    """Save a workbook with ``sheets`` ({name: rows}); ``edit(workbook)`` adjusts it before saving."""
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in (sheets or {"Sheet1": ROWS}).items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    if edit:
        edit(book)
    book.save(path)
    return str(path)


def _rules(*rules):
    return {"rules": list(rules)}


def test_sheet_data_rounds_to_precision_and_catches_a_change(tmp_path):
    gold = _book(tmp_path / "gold.xlsx")
    near = _book(tmp_path / "near.xlsx", {"Sheet1": [["Name", "Score"], ["Ada", 3.141592], ["Bob", 2.5]]})
    other = _book(tmp_path / "other.xlsx", {"Sheet1": [["Name", "Score"], ["Ada", 3.15], ["Bob", 2.5]]})
    rule = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(near, gold, **_rules(rule)) == 1.0           # 3.14159 and 3.141592 round to 3.1416
    assert compare_table(other, gold, **_rules(rule)) == 0.0
    assert compare_table(near, gold, **_rules(dict(rule, precision=6))) == 0.0
    shout = _book(tmp_path / "shout.xlsx", {"Sheet1": [["NAME", "Score"], ["ADA", 3.14159], ["BOB", 2.5]]})
    assert compare_table(shout, gold, **_rules(rule)) == 0.0
    assert compare_table(shout, gold, **_rules(dict(rule, ignore_case=True))) == 1.0


def test_sheet_names_and_indexes(tmp_path):
    two = {"Data": ROWS, "Copy": ROWS}
    gold = _book(tmp_path / "gold.xlsx", two)
    same = _book(tmp_path / "same.xlsx", two)
    renamed = _book(tmp_path / "renamed.xlsx", {"Data": ROWS, "Sheet2": ROWS})
    assert compare_table(same, gold, **_rules({"type": "sheet_name"})) == 1.0
    assert compare_table(renamed, gold, **_rules({"type": "sheet_name"})) == 0.0
    by_name = {"type": "sheet_data", "sheet_idx0": "RNCopy", "sheet_idx1": "ENData"}
    by_index = {"type": "sheet_data", "sheet_idx0": "RI1", "sheet_idx1": "EI0"}
    assert compare_table(same, gold, **_rules(by_name, by_index)) == 1.0
    missing = {"type": "sheet_data", "sheet_idx0": "RNNope", "sheet_idx1": "EI0"}
    assert compare_table(same, gold, **_rules(missing)) == 0.0
    assert compare_table(same, gold, **_rules({"type": "sheet_data", "sheet_idx0": 5, "sheet_idx1": "EI0"})) == 0.0
    with pytest.raises(EvaluationError, match="sheet index"):
        compare_table(same, gold, **_rules({"type": "sheet_data", "sheet_idx0": "XX0", "sheet_idx1": 0}))


def test_check_cell_value_merge_and_font(tmp_path):
    def edit(book):
        sheet = book["Sheet1"]
        sheet["D1"] = "Investment Summary"
        sheet.merge_cells("D1:F1")
        sheet["A1"].font = Font(bold=True)

    result = _book(tmp_path / "r.xlsx", edit=edit)
    plain = _book(tmp_path / "plain.xlsx")

    def cell(coordinate, **props):
        return {"type": "check_cell", "sheet_idx": "RNSheet1", "coordinate": coordinate, "props": props}

    passing = [cell("B2", value={"method": "approx:0.001", "ref": 3.1416}),
               cell("D1", value={"method": "eq", "ref": "Investment Summary"}),
               cell("E1", merge={"method": "eq", "ref": True}),
               cell("G1", merge={"method": "eq", "ref": False}),
               cell("A1", font_bold={"method": "eq", "ref": True})]
    assert compare_table(result, None, **_rules(*passing)) == 1.0
    assert compare_table(plain, None, **_rules(passing[1])) == 0.0
    assert compare_table(plain, None, **_rules(passing[2])) == 0.0
    assert compare_table(plain, None, **_rules(passing[4])) == 0.0
    assert compare_table(result, None, **_rules(cell("B2", value={"method": "approx:0.001", "ref": 3.2}))) == 0.0


def test_style_compares_cell_properties(tmp_path):
    def red(book):
        book["Sheet1"]["B2"].font = Font(color="FFFF0000")

    def fill(book):
        book["Sheet1"]["A2"].fill = PatternFill("solid", fgColor="FFFFFF00")

    gold = _book(tmp_path / "gold.xlsx", edit=red)
    same = _book(tmp_path / "same.xlsx", edit=red)
    plain = _book(tmp_path / "plain.xlsx")
    rule = {"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["font_color"]}
    assert compare_table(same, gold, **_rules(rule)) == 1.0
    assert compare_table(plain, gold, **_rules(rule)) == 0.0
    filled = _book(tmp_path / "filled.xlsx", edit=fill)
    bg = {"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["bgcolor"]}
    assert compare_table(filled, _book(tmp_path / "filled_gold.xlsx", edit=fill), **_rules(bg)) == 1.0
    assert compare_table(plain, _book(tmp_path / "filled_gold2.xlsx", edit=fill), **_rules(bg)) == 0.0

    def conditional(book):
        book["Sheet1"].conditional_formatting.add("B2:B3", CellIsRule(operator="greaterThan", formula=["3"],
                                                                      font=Font(color="FFFF0000")))

    cond = _book(tmp_path / "cond.xlsx", edit=conditional)
    with pytest.raises(EvaluationError, match="conditional formatting"):
        compare_table(cond, gold, **_rules(rule))


def test_freeze_and_zoom(tmp_path):
    def freeze(book):
        book["Sheet1"].freeze_panes = "B2"

    def zoom(book):
        book["Sheet1"].sheet_view.zoomScale = 150

    gold = _book(tmp_path / "gold.xlsx", edit=freeze)
    rule = {"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(_book(tmp_path / "same.xlsx", edit=freeze), gold, **_rules(rule)) == 1.0
    assert compare_table(_book(tmp_path / "plain.xlsx"), gold, **_rules(rule)) == 0.0
    zoomed = _book(tmp_path / "zoomed.xlsx", edit=zoom)
    assert compare_table(zoomed, None, **_rules({"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 150})) == 1.0
    assert compare_table(_book(tmp_path / "p2.xlsx"), None,
                         **_rules({"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 150})) == 0.0


def test_sheet_print_reads_the_csv_exports_next_to_each_book(tmp_path):
    gold = _book(tmp_path / "Customers_gold.xlsx")
    result = _book(tmp_path / "Customers.xlsx")
    (tmp_path / "Customers_gold-Sheet1.csv").write_text("Name,Score\nAda,0001234\n\n\n", encoding="utf-8")
    rule = {"type": "sheet_print", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(result, gold, **_rules(rule)) == 0.0          # no export of the result yet
    (tmp_path / "Customers-Sheet1.csv").write_text("Name,Score\nAda,1234\n", encoding="utf-8")
    assert compare_table(result, gold, **_rules(rule)) == 0.0          # printed differently
    (tmp_path / "Customers-Sheet1.csv").write_text("Name,Score\r\nAda,0001234\r\n", encoding="utf-8")
    assert compare_table(result, gold, **_rules(rule)) == 1.0
    (tmp_path / "Customers_gold-Sheet1.csv").unlink()
    with pytest.raises(EvaluationError, match="reference export"):
        compare_table(result, gold, **_rules(rule))


def test_sheet_fuzzy(tmp_path):
    gold = _book(tmp_path / "gold.xlsx", {"Sheet1": [["Street"], ["12 Main Road"], ["Elm Rd"]]})
    result = _book(tmp_path / "r.xlsx", {"Sheet1": [["street"], ["12 Main Rd"], ["Elm Road"]]})

    def rule(**sub):
        return {"type": "sheet_fuzzy", "sheet_idx0": 0, "sheet_idx1": "EI0", "rules": [dict(range=["A1:A3"], **sub)]}

    assert compare_table(result, gold, **_rules(rule(type="exact_match"))) == 0.0
    assert compare_table(result, gold, **_rules(rule(type="exact_match", ignore_case=True,
                                                     normalization=[["Road", "Rd"]]))) == 1.0
    # "12 Main Rd" vs "12 Main Road": LCS 10 of 10+12 -> 90.9 >= 85; "Elm Road"/"Elm Rd" 12/14 -> 85.7
    assert compare_table(result, gold, **_rules(rule(type="fuzzy_match", ignore_case=True))) == 1.0
    assert compare_table(result, gold, **_rules(rule(type="fuzzy_match", ignore_case=True, threshold=90))) == 0.0


def test_bad_input(tmp_path):
    gold = _book(tmp_path / "gold.xlsx")
    rule = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(None, gold, **_rules(rule)) == 0.0
    assert compare_table(str(tmp_path / "absent.xlsx"), gold, **_rules(rule)) == 0.0
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"this is not a workbook")
    assert compare_table(str(broken), gold, **_rules(rule)) == 0.0
    with pytest.raises(EvaluationError, match="reference workbook"):
        compare_table(gold, str(broken), **_rules(rule))
    with pytest.raises(EvaluationError, match="compare_table rule 'sparkline' is not supported"):
        compare_table(gold, gold, **_rules({"type": "sparkline", "sheet_idx0": 0, "sheet_idx1": "EI0"}))
    with pytest.raises(EvaluationError, match="rules"):
        compare_table(gold, gold)


def test_data_validation_like_the_real_task(tmp_path):
    from openpyxl.worksheet.datavalidation import DataValidation

    def validate(cells, choices):
        def edit(book):
            validation = DataValidation(type="list", formula1=f'"{choices}"')
            validation.add(cells)
            book["Sheet1"].add_data_validation(validation)
        return edit

    rule = {"type": "data_validation", "sheet_idx": 0, "dv_props": [{
        "ranges": {"method": "spreadsheet_range", "ref": ["D2:D29", "D1:D1048576"]},
        "type": {"method": "eq", "ref": "list"},
        "formula1": {"method": "str_set_eq", "ref": ["Pass", "Fail", "Held"]}}]}
    assert compare_table(_book(tmp_path / "ok.xlsx", edit=validate("D2:D40", "Pass,Fail,Held")), None,
                         **_rules(rule)) == 1.0
    assert compare_table(_book(tmp_path / "short.xlsx", edit=validate("D2:D10", "Pass,Fail,Held")), None,
                         **_rules(rule)) == 0.0                         # does not cover D2:D29
    assert compare_table(_book(tmp_path / "wide.xlsx", edit=validate("D2:E40", "Pass,Fail,Held")), None,
                         **_rules(rule)) == 0.0                         # spills outside column D
    assert compare_table(_book(tmp_path / "words.xlsx", edit=validate("D2:D40", "Pass,Fail")), None,
                         **_rules(rule)) == 0.0
    assert compare_table(_book(tmp_path / "none.xlsx"), None, **_rules(rule)) == 0.0


def test_charts_compare_by_series_and_properties(tmp_path):
    from openpyxl.chart import BarChart, LineChart, Reference

    def chart(kind=BarChart, title="Scores", rows=3):
        def edit(book):
            sheet = book["Sheet1"]
            figure = kind()
            figure.title = title
            figure.add_data(Reference(sheet, min_col=2, min_row=1, max_row=rows), titles_from_data=True)
            figure.set_categories(Reference(sheet, min_col=1, min_row=2, max_row=rows))
            sheet.add_chart(figure, "D2")
        return edit

    gold = _book(tmp_path / "gold.xlsx", edit=chart())
    rule = {"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["type", "title"]}
    assert compare_table(_book(tmp_path / "same.xlsx", edit=chart()), gold, **_rules(rule)) == 1.0
    assert compare_table(_book(tmp_path / "line.xlsx", edit=chart(LineChart)), gold, **_rules(rule)) == 0.0
    assert compare_table(_book(tmp_path / "title.xlsx", edit=chart(title="Other")), gold, **_rules(rule)) == 0.0
    assert compare_table(_book(tmp_path / "range.xlsx", edit=chart(rows=2)), gold, **_rules(rule)) == 0.0
    assert compare_table(_book(tmp_path / "none.xlsx"), gold, **_rules(rule)) == 0.0
    with pytest.raises(EvaluationError, match="chart property 'colour'"):
        compare_table(gold, gold, **_rules(dict(rule, chart_props=["colour"])))
