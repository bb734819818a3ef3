"""Differential tests: our PDF, archive, pivot-table and long-tail metrics score what OSWorld's functions score.

Each case is made here (matching, near-miss, wrong); ``oracle_metric`` is desktop-env's function (see
``osworld_oracle``). A disagreement names the metric and the case.
"""

import pytest

from rla_envs.desktop.osworld.metrics import get_metric
from tests.rla_envs.desktop.osworld_oracle import oracle_metric
from tests.rla_envs.desktop.pivot_books import pivot_book

pytestmark = pytest.mark.oracle


def _outcome(function, args, kwargs):
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # both sides raising counts as agreeing
        return f"raises {type(exc).__name__}"


def _agree(ours, theirs, cases):
    scores = [(_outcome(ours, args, kwargs), _outcome(theirs, args, kwargs)) for args, kwargs in cases]
    disagreements = [(case, score) for case, score in zip(cases, scores)
                     if score[0] != score[1] and not all(isinstance(s, str) for s in score)]
    assert not disagreements, f"ours vs OSWorld's: {disagreements}"
    assert len({str(ours_score) for ours_score, _ in scores}) > 1, "the cases must not all score the same"
    return len(cases)


PIVOT_VARIANTS = [{}, {"rows": (1,)}, {"cols": (1,)}, {"pages": (1,)}, {"data": ((2, "average"),)},
                  {"hidden": (0,)}, {"source": "A1:C3"}, {"sheet": None}, {"data_name": "Total"},
                  {"unused_leading": 1, "source": "A1:D4"}, {"rows": (0, 1)}, {"data": ((2, "sum"), (1, "count"))}]


@pytest.mark.parametrize("props", [["col_fields", "filter", "row_fields", "data_fields"],
                                   ["name", "location", "selection", "ordered", "data_fields", "data_fields_name"]])
def test_pivot_table_rule_agrees_with_osworld(tmp_path, props):
    expected = pivot_book(tmp_path / "expected.xlsx")
    rules = {"rules": [{"type": "pivot_table", "sheet_idx0": "RNSheet2", "sheet_idx1": "ENSheet2",
                        "pivot_props": props}]}
    cases = [((pivot_book(tmp_path / f"result{i}.xlsx", **variant), expected), rules)
             for i, variant in enumerate(PIVOT_VARIANTS)]
    assert _agree(get_metric("compare_table"), oracle_metric("table", "compare_table"), cases) == 12
