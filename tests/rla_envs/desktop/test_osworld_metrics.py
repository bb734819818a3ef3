"""OSWorld metrics over real files made here: text, values/JSON, rules, similarity and Word documents."""

import pytest

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics import METRICS, get_metric, is_supported
from rla_envs.desktop.osworld.metrics.docx import compare_docx_files, compare_docx_tables
from rla_envs.desktop.osworld.metrics.general import (check_direct_json_object, check_include_exclude,
                                                      exact_match, is_in_list, literal_match, match_in_list)
from rla_envs.desktop.osworld.metrics.rules import lcs_length, match_value_to_rule, similarity_ratio
from rla_envs.desktop.osworld.metrics.text import (check_list, compare_csv, compare_text_file, diff_text_file,
                                                   file_contains)


def _text(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------- text files
def test_compare_text_file(tmp_path):
    gold = _text(tmp_path, "gold.txt", "Hello world\nsecond line\n")
    same = _text(tmp_path, "same.txt", "Hello world\nsecond line\n")
    spaced = _text(tmp_path, "spaced.txt", "  Hello   world\tsecond line")
    upper = _text(tmp_path, "upper.txt", "HELLO WORLD\nSECOND LINE\n")
    assert compare_text_file(same, gold) == 1.0
    assert compare_text_file(spaced, gold) == 0.0
    assert compare_text_file(spaced, gold, ignore_blanks=True) == 1.0
    assert compare_text_file(upper, gold) == 0.0
    assert compare_text_file(upper, gold, ignore_case=True) == 1.0
    assert compare_text_file(None, gold) == 0.0                       # the agent saved nothing
    assert compare_text_file(str(tmp_path / "absent.txt"), gold) == 0.0
    with pytest.raises(EvaluationError, match="reference"):
        compare_text_file(same, str(tmp_path / "no-gold.txt"))


def test_other_text_metrics(tmp_path):
    gold = _text(tmp_path, "gold.txt", "a\nb\nc\nd\n")
    result = _text(tmp_path, "r.txt", "a\nb\nx\nd\n")
    # difflib over lines: 3 of 4 lines match on each side -> 2*3/8 = 0.75
    assert diff_text_file(result, gold) == pytest.approx(0.75)
    assert file_contains(result, {"expected": ["a\nb", "d"]}) == 1.0
    assert file_contains(result, {"expected": ["a", "c"]}) == 0.0
    assert check_list(result, {"expect": [r"^x$", "a"], "unexpect": ["^c$"]}) == 1.0
    assert check_list(result, {"expect": ["^c$"]}) == 0.0
    assert check_list(result, {"unexpect": ["^b$"]}) == 0.0
    csv_gold = _text(tmp_path, "g.csv", "Name,Age\nAda,36\n")
    csv_ok = _text(tmp_path, "ok.csv", "name,age \nADA,36\n")
    assert compare_csv(csv_ok, csv_gold) == 0.0
    assert compare_csv(csv_ok, csv_gold, strict=False, ignore_case=True) == 1.0
    assert compare_csv(csv_ok, [_text(tmp_path, "h.csv", "zzz\n"), csv_gold], strict=False, ignore_case=True) == 1.0


# ---------------------------------------------------------------- values
def test_include_exclude_and_exact_match():
    rules = {"include": ["spotify"], "exclude": ["not found"]}
    assert check_include_exclude("/snap/bin/spotify\n", rules) == 1.0
    assert check_include_exclude("spotify not found\n", rules) == 0.0
    assert check_include_exclude("/usr/bin/vlc", rules) == 0.0
    assert check_include_exclude(None, rules) == 0.0
    assert exact_match("true\n", {"expected": "true\n"}) == 1.0
    assert exact_match("true", {"expected": "true\n"}) == 0.0   # OSWorld keeps the newline
    assert match_in_list("b", {"expected": ["a", "b"]}) == 1.0 and match_in_list("c", {"expected": ["a"]}) == 0.0
    assert is_in_list(["a", "b"], {"expected": "b"}) == 1.0 and is_in_list(None, {"expected": "b"}) == 0.0
    assert literal_match("Abc", "abc") == 0.0 and literal_match("Abc", "abc", ignore_case=True) == 1.0
    assert literal_match([1, "x"], ["1", "x"], type="list") == 1.0
    assert literal_match("1", ["1"], type="list") == 0.0


def test_check_direct_json_object_forms():
    rules = {"expected": {"city": "Zürich", "count": 2}}
    assert check_direct_json_object({"city": "Zürich", "count": 2, "extra": 1}, rules) == 1.0
    assert check_direct_json_object({"city": "Zurich", "count": 2}, rules) == 0.0
    # text results: single quotes are accepted, as in OSWorld; text that is not JSON scores 0
    assert check_direct_json_object("{'city': 'Zürich', 'count': 2}\n", rules) == 1.0
    assert check_direct_json_object("no json here", rules) == 0.0
    assert check_direct_json_object(None, rules) == 0.0
    # list order ignored when asked (the flag itself is not compared as a key)
    sorted_rules = {"expected": {"tags": ["b", "a"], "ignore_list_order": True}}
    assert check_direct_json_object({"tags": ["a", "b"]}, sorted_rules) == 1.0
    assert check_direct_json_object({"tags": ["a", "c"]}, sorted_rules) == 0.0
    assert check_direct_json_object({"tags": ["a", "b"]}, {"expected": {"tags": ["b", "a"]}}) == 0.0
    # expect_in_result: substring for strings, any-of for lists
    loose = {"expect_in_result": True, "expected": {"title": "Report", "lang": ["en", "en-GB"]}}
    assert check_direct_json_object({"title": "Monthly Report 2024", "lang": "en-GB"}, loose) == 1.0
    assert check_direct_json_object({"title": "Monthly Report", "lang": ["fr", "en"]}, loose) == 1.0
    assert check_direct_json_object({"title": "Monthly", "lang": "en"}, loose) == 0.0
    assert check_direct_json_object({"title": "Report", "lang": "de"}, loose) == 0.0
    assert check_direct_json_object({"a": 1}, {"expected": {"a": "__EVALUATION_FAILED__"}}) == 0.0


# ---------------------------------------------------------------- rules and similarity
@pytest.mark.parametrize("value, rule, expected", [
    (3.14159, {"method": "approx:0.001", "ref": 3.1416}, True),
    (3.2, {"method": "approx:0.01", "ref": 3.1416}, False),
    ("n/a", {"method": "approx:0.1", "ref": 1}, False),
    ("Investment Summary", {"method": "eq", "ref": "Investment Summary"}, True),
    (True, {"method": "eq", "ref": False}, False),
    ("Total: 42", {"method": "re", "ref": r"\d+$"}, True),
    ("TOTAL", {"method": "re.I", "ref": "total"}, True),
    ("TOTAL", {"method": "re", "ref": "total"}, False),
    (2, {"method": "range.te", "ref": [0, 2]}, True),    # 0 < 2 <= 2
    (0, {"method": "range.te", "ref": [0, 2]}, False),
    (None, {"method": "gt", "ref": 1}, False),           # wrong type fails instead of crashing
    ([1, 2], {"method": "str_set_eq", "ref": ["2", "1"]}, True),
])
def test_match_value_to_rule(value, rule, expected):
    assert match_value_to_rule(value, rule) is expected


def test_unknown_rule_method_is_an_error():
    with pytest.raises(ValueError, match="not supported"):
        match_value_to_rule(1, {"method": "fuzzy", "ref": 1})


def test_similarity_ratio_worked_by_hand():
    assert lcs_length("kitten", "sitting") == 4                      # "ittn"
    assert similarity_ratio("kitten", "sitting") == pytest.approx(8 / 13)   # 2*4 / (6+7)
    assert similarity_ratio("this is a test", "this is a test!") == pytest.approx(28 / 29)
    assert similarity_ratio("", "") == 1.0 and similarity_ratio("abc", "") == 0.0


def test_registry_names_and_lookup():
    assert is_supported("compare_table") and not is_supported("no_such_metric")
    for name in METRICS:
        if name != "infeasible":
            assert callable(get_metric(name))
    with pytest.raises(ValueError):
        get_metric("infeasible")


# ---------------------------------------------------------------- Word documents
def _docx(tmp_path, name, paragraphs, table=None):
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for i, row in enumerate(table):
            for j, text in enumerate(row):
                grid.cell(i, j).text = text
    path = tmp_path / name
    document.save(path)
    return str(path)


def test_compare_docx_files(tmp_path):
    gold = _docx(tmp_path, "gold.docx", ["Title", "First  paragraph.", "Second paragraph."])
    same = _docx(tmp_path, "same.docx", ["Title", "First  paragraph.", "Second paragraph."])
    reflowed = _docx(tmp_path, "reflowed.docx", ["Title First", "paragraph. Second paragraph."])
    shuffled = _docx(tmp_path, "shuffled.docx", ["Second paragraph.", "Title", "First  paragraph."])
    typo = _docx(tmp_path, "typo.docx", ["Title", "First  paragraph.", "Second paragraph!"])
    assert compare_docx_files(same, gold) == 1.0
    assert compare_docx_files(reflowed, gold) == 1.0                       # blanks ignored by default
    assert compare_docx_files(reflowed, gold, ignore_blanks=False) == 0.0  # paragraph count differs
    assert compare_docx_files(shuffled, gold) == 0.0
    assert compare_docx_files(shuffled, gold, ignore_order=True) == 1.0
    assert compare_docx_files(typo, gold) == 0.0
    # "Title First paragraph. Second paragraph!" vs "...paragraph." : 40 chars each, LCS 39 -> 78/80
    assert compare_docx_files(typo, gold, fuzzy_match=True) == pytest.approx(78 / 80)
    assert compare_docx_files(typo, gold, fuzzy_match=True, fuzzy_match_threshold=0.99) == 0.0
    assert compare_docx_files(typo, gold, content_only=True) == pytest.approx(78 / 80)
    # per paragraph when blanks matter: "Second paragraph!" vs "...paragraph." is 2*16/34 -> (1 + 1 + 32/34) / 3
    assert compare_docx_files(typo, gold, ignore_blanks=False, fuzzy_match=True) == pytest.approx((2 + 32 / 34) / 3)
    assert compare_docx_files(None, gold) == 0.0
    not_docx = tmp_path / "broken.docx"
    not_docx.write_bytes(b"not a zip")
    assert compare_docx_files(str(not_docx), gold) == 0.0
    with pytest.raises(EvaluationError, match="reference"):
        compare_docx_files(same, str(not_docx))


def test_compare_docx_tables(tmp_path):
    gold = _docx(tmp_path, "g.docx", ["t"], table=[["a", "b"], ["1", "2"]])
    same = _docx(tmp_path, "s.docx", ["other text"], table=[["a ", "b"], ["1", " 2"]])
    wrong = _docx(tmp_path, "w.docx", ["t"], table=[["a", "b"], ["1", "3"]])
    none = _docx(tmp_path, "n.docx", ["t"])
    assert compare_docx_tables(same, gold) == 1.0
    assert compare_docx_tables(wrong, gold) == 0.0
    assert compare_docx_tables(none, gold) == 0.0
