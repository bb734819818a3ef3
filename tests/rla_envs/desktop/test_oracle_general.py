"""Differential tests: our text and value metrics score what OSWorld's functions of the same name score.

Each case is made here (matching, near-miss, wrong); ``oracle_metric`` is desktop-env's function (see
``osworld_oracle``). A disagreement names the metric and the case.
"""

import pytest

from rla_envs.desktop.osworld.metrics import get_metric
from tests.rla_envs.desktop.osworld_oracle import oracle_metric

pytestmark = pytest.mark.oracle


def _file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _agree(ours, theirs, cases):
    scores = [(ours(*args, **kwargs), theirs(*args, **kwargs)) for args, kwargs in cases]
    disagreements = [(case, score) for case, score in zip(cases, scores) if score[0] != score[1]]
    assert not disagreements, f"ours vs OSWorld's: {disagreements}"
    assert len({ours_score for ours_score, _ in scores}) > 1, "the cases must not all score the same"
    return len(cases)


RULE_CASES = {
    "check_include_exclude": [
        ("/snap/bin/spotify\n", {"include": ["spotify"], "exclude": ["not found"]}),
        ("spotify not found\n", {"include": ["spotify"], "exclude": ["not found"]}),
        ("/usr/bin/vlc", {"include": ["spotify"], "exclude": []}),
        ("", {"include": [], "exclude": ["x"]}),
    ],
    "exact_match": [("true", {"expected": "true"}), ("true\n", {"expected": "true"}), ("False", {"expected": "false"})],
    "match_in_list": [("b", {"expected": ["a", "b"]}), ("c", {"expected": ["a", "b"]}), ("", {"expected": [""]})],
    "is_in_list": [("abc", {"expected": "b"}), ("abc", {"expected": "d"})],
    "check_direct_json_object": [
        ({"a": 1, "b": "x"}, {"expected": {"a": 1}}),
        ({"a": 2}, {"expected": {"a": 1}}),
        ('{"a": 1}', {"expected": {"a": 1}}),
        ({"a": "X "}, {"expected": {"a": "x"}, "relativeTime": False}),
    ],
}


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_rule_metrics_agree_with_osworld(name):
    module = "general"
    cases = [((result, rules), {}) for result, rules in RULE_CASES[name]]
    assert _agree(get_metric(name), oracle_metric(module, name), cases) == len(RULE_CASES[name])


def test_literal_match_agrees_with_osworld():
    cases = [(("a", "a"), {}), (("a", "A"), {}), (("a", "A"), {"ignore_case": True}), ((["x"], ["x"]), {}),
             ((["x", "y"], ["y", "x"]), {}), (("1", 1), {})]
    _agree(get_metric("literal_match"), oracle_metric("general", "literal_match"), cases)


def test_text_file_metrics_agree_with_osworld(tmp_path):
    gold = _file(tmp_path, "gold.txt", "a\nb\nc\nd\n")
    near = _file(tmp_path, "near.txt", "a\nb\nx\nd\n")
    same = _file(tmp_path, "same.txt", "a\nb\nc\nd\n")
    other = _file(tmp_path, "other.txt", "zzz\n")
    _agree(get_metric("diff_text_file"), oracle_metric("general", "diff_text_file"),
           [((path, gold), {}) for path in (same, near, other)])
    _agree(get_metric("compare_text_file"), oracle_metric("vscode", "compare_text_file"),
           [((path, gold), {}) for path in (same, near, other)]
           + [((_file(tmp_path, "upper.txt", "A\nB\nC\nD\n"), gold), {"ignore_case": True})])
    _agree(get_metric("check_list"), oracle_metric("general", "check_list"),
           [((near, {"expect": [r"^x$", "a"], "unexpect": ["^c$"]}), {}), ((near, {"expect": ["^c$"]}), {}),
            ((near, {"unexpect": ["^b$"]}), {})])


def test_a_stood_in_module_fails_loudly_when_used():
    oracle_metric("general", "exact_match")  # enters the packages and the placeholders
    import sys

    from tests.rla_envs.desktop.osworld_oracle import UNUSED_IMPORTS

    stood_in = [name for name in UNUSED_IMPORTS if type(sys.modules.get(name)).__name__ == "_Unavailable"]
    if not stood_in:
        pytest.skip("every module the oracle could stand in for is installed here")
    with pytest.raises(RuntimeError, match="not installed"):
        sys.modules[stood_in[0]].anything()
