"""Differential tests: our PDF, archive, pivot-table and long-tail metrics score what OSWorld's functions score.

Each case is made here (matching, near-miss, wrong); ``oracle_metric`` is desktop-env's function (see
``osworld_oracle``). A disagreement names the metric and the case.
"""

import io
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from rla_envs.desktop.osworld.metrics import get_metric
from tests.rla_envs.desktop.osworld_oracle import oracle_metric
from tests.rla_envs.desktop.pdf_files import write_pdf
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


INVOICE = [[(72, 700, "Invoice # 243729"), (72, 680, "Name"), (300, 680, "Total"), (72, 660, "Ada"),
            (106, 660, "Lovelace"), (300, 660, "12.50"), (72, 640, "sub", 8), (90, 640, "script", 16)],
           [(72, 700, "Page two (with parens)")]]
INVOICE_VARIANTS = {
    "same": INVOICE,
    "one word": [[*INVOICE[0][:5], (300, 660, "13.50"), *INVOICE[0][6:]], INVOICE[1]],
    "moved column": [[*INVOICE[0][:2], (120, 680, "Total"), *INVOICE[0][3:]], INVOICE[1]],
    "first page only": INVOICE[:1],
    "other": [[(72, 700, "A different letter altogether")]],
    "empty page": [[]],
}


def test_compare_pdfs_agrees_with_osworld(tmp_path):
    expected = write_pdf(tmp_path / "gold.pdf", INVOICE)
    made = {name: write_pdf(tmp_path / f"{i}.pdf", pages) for i, (name, pages) in enumerate(INVOICE_VARIANTS.items())}
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really")
    cases = [((path, expected), {}) for path in made.values()]
    cases += [((str(tmp_path / "missing.pdf"), expected), {}), ((str(broken), expected), {}),
              (([made["same"], made["other"]], [expected, expected]), {}),
              (([made["one word"]], [expected, expected]), {})]
    assert _agree(get_metric("compare_pdfs"), oracle_metric("chrome", "compare_pdfs"), cases) == 10


def test_check_pdf_pages_agrees_with_osworld(tmp_path):
    one, two = write_pdf(tmp_path / "one.pdf", INVOICE[:1]), write_pdf(tmp_path / "two.pdf", INVOICE)
    cases = [((path, {"relation": relation, "ref_value": value}), {})
             for path in (one, two) for relation, value in (("eq", 1), ("gt", 1), ("le", 2))]
    cases.append(((None, {"relation": "eq", "ref_value": 1}), {}))
    assert _agree(get_metric("check_pdf_pages"), oracle_metric("pdf", "check_pdf_pages"), cases) == 7


def _picture(seed, size=(120, 80)):
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((size[1] // 2, size[0] // 2, 3)) * 255).astype("uint8")).resize(size)


def test_compare_pdf_images_agrees_with_osworld(tmp_path):
    picture, other = _picture(0), _picture(1)
    jitter = np.random.default_rng(2).integers(-6, 7, (80, 120, 3))
    noisy = Image.fromarray(np.clip(np.asarray(picture).astype(int) + jitter, 0, 255).astype("uint8"))
    gold = write_pdf(tmp_path / "gold.pdf", [[("image", 72, 600, picture), (72, 500, "Receipt")],
                                             [("image", 72, 600, other)]])
    variants = {
        "same": [[("image", 72, 600, picture)], [("image", 72, 600, other)]],
        "noisy": [[("image", 72, 600, noisy), ("image", 72, 400, other)]],
        "one swapped": [[("image", 72, 600, picture)], [("image", 72, 600, picture)]],
        "reordered": [[("image", 72, 600, other)], [("image", 72, 600, picture)]],
        "one missing": [[("image", 72, 600, picture)]],
        "text only": [[(72, 500, "Receipt")]],
    }
    cases = [((write_pdf(tmp_path / f"{i}.pdf", pages), gold), {}) for i, pages in enumerate(variants.values())]
    text_only = cases[-1][0][0]
    cases += [((text_only, text_only), {}), ((str(tmp_path / "missing.pdf"), gold), {}), ((None, gold), {})]
    assert _agree(get_metric("compare_pdf_images"), oracle_metric("chrome", "compare_pdf_images"), cases) == 9


MANIFEST = {"name": "happy-extension", "version": "0.0.1", "background": {"scripts": ["background_script.js"]},
            "count": 3, "tags": ["a", "b"]}
JSON_RULES = [
    {"expect": [{"key": ["name"], "method": "eq", "ref": "happy-extension"},
                {"key": ["background", "scripts"], "method": "eq", "ref": ["background_script.js"]}]},
    {"expect": [{"key": ["name"], "method": "re", "ref": r"\bhappy\b"}]},
    {"expect": [{"key": ["name"], "method": "eq", "ref": "sad"}]},
    {"expect": [{"key": ["missing"], "method": "eq", "ref": None}]},
    {"expect": [{"key": ["count"], "method": "re", "ref": "3"}]},
    {"expect": [{"key": ["count"], "method": "gt", "ref": 2}]},
    {"expect": [{"key": ["tags", 1], "method": "eq", "ref": "b"}]},
    {"expect": [{"key": ["tags", 5], "method": "eq", "ref": "b"}]},
    {"expect": [{"key": ["name", "x"], "method": "eq", "ref": "b"}]},
    {"unexpect": [{"key": ["name"], "method": "eq", "ref": "happy-extension"}]},
    {"unexpect": [{"key": ["missing"], "method": "eq", "ref": "x"}]},
    {"unexpect": [{"key": ["missing"], "method": "lt", "ref": 3}]},
    {"expect": [{"key": ["version"], "method": "approx:0.1", "ref": 0.0}]},
]


def test_check_json_agrees_with_osworld(tmp_path):
    import json

    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(MANIFEST))
    config = tmp_path / "_config.yml"
    config.write_text("name: Test Account\nauthor:\n  name: Test Account\n  email: Test@gmail.com\n")
    broken, empty = tmp_path / "broken.json", tmp_path / "empty.yml"
    broken.write_text("{not json")
    empty.write_text("")
    cases = [((str(manifest), rules), {}) for rules in JSON_RULES]
    yaml_rules = {"expect": [{"key": ["author", "email"], "method": "eq", "ref": "Test@gmail.com"}]}
    cases += [((str(config), yaml_rules), {"is_yaml": True}), ((str(empty), yaml_rules), {"is_yaml": True}),
              ((str(config), {"expect": [{"key": ["author", "name"], "method": "eq", "ref": "Other"}]}),
               {"is_yaml": True}),
              ((str(broken), JSON_RULES[0]), {}), ((str(tmp_path / "missing.json"), JSON_RULES[0]), {}),
              ((None, JSON_RULES[0]), {})]
    assert _agree(get_metric("check_json"), oracle_metric("general", "check_json"), cases) == 19


def test_check_csv_agrees_with_osworld(tmp_path):
    accounts = tmp_path / "accounts.csv"
    accounts.write_text("url,user\nimap://outlook.office365.com,anonym-x2024@outlook.com\nimap://mail.example.org,ada\n")
    outlook = {"url": "imap://outlook.office365.com", "user": "anonym-x2024@outlook.com"}
    cases = [((str(accounts), rules), {}) for rules in (
        {"unexpect": [outlook]}, {"expect": [outlook]}, {"expect": [{"user": "ada"}, {"user": "bob"}]},
        {"expect": [{"user": "ada"}], "unexpect": [{"user": "bob"}]}, {"expect": [{"nick": "ada"}]}, {})]
    cases.append(((None, {"expect": [outlook]}), {}))
    assert _agree(get_metric("check_csv"), oracle_metric("general", "check_csv"), cases) == 7


def test_run_sqlite3_agrees_with_osworld(tmp_path):
    import sqlite3

    database = tmp_path / "global-messages-db.sqlite"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE messages (id INTEGER, folderID INTEGER)")
        connection.executemany("INSERT INTO messages VALUES (?, ?)", [(1, 13), (2, 13), (3, 7)])
    connection.close()
    cases = [((str(database), {"sql": sql}), {}) for sql in (
        "SELECT COUNT(*) = 2 FROM messages WHERE folderID = 13", "SELECT COUNT(*) = 3 FROM messages WHERE folderID = 13",
        "SELECT COUNT(*) FROM messages WHERE folderID = 99", "SELECT NULL", "SELECT 0.5")]
    assert _agree(get_metric("run_sqlite3"), oracle_metric("general", "run_sqlite3"), cases) == 5


A11Y_TREE = """<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state"
 xmlns:attr="https://accessibility.ubuntu.example.org/ns/attributes" name="main">
  <application name="Thunderbird">
    <page-tab-list attr:id="tabmail-tabs"><page-tab name="About Profiles" st:selected="true">About Profiles</page-tab>
      <page-tab name="Inbox">Inbox</page-tab></page-tab-list>
    <tool-bar attr:id="MsgHeadersToolbar"><label name="To">To</label>
      <section attr:class="address-pill"><label attr:class="pill-label" name="fox@someuniversity.edu">fox</label></section>
    </tool-bar>
    <push-button name="anonym-x2024@outlook.com"/>
  </application>
</desktop-frame>"""
A11Y_RULES = [
    [{"selectors": ['application[name=Thunderbird] page-tab-list[attr|id="tabmail-tabs"]>page-tab[name="About Profiles"]']}],
    [{"selectors": ['application[name=Thunderbird] page-tab-list[attr|id="tabmail-tabs"]>page-tab[name="Settings"]']}],
    [{"selectors": ['tool-bar[attr|id=MsgHeadersToolbar] label[name=To]~[attr|class="address-pill"]>'
                    'label[attr|class="pill-label"][name*="fox@someuniversity.edu"]']}],
    [{"xpath": "//application[@name='Thunderbird']//*[contains(text(), 'anonym-x2024@outlook.com') or "
               "contains(@name, 'anonym-x2024@outlook.com')]"},
     {"xpath": "//application[@name='Thunderbird']//*[contains(@name, 'password')]"}],
    [{"xpath": "//page-tab", "text": "Inbox", "exact": True}],
    [{"xpath": "//page-tab", "text": "Inbax", "exact": False}],
    [{"xpath": "//push-button", "text": "anything", "exact": False}],
    [{"xpath": "//page-tab[@st:selected='true']", "text": "About Profiles", "exact": True},
     {"selectors": ["label[name=To]"], "text": "Tx", "exact": False}],
]


def test_check_accessibility_tree_agrees_with_osworld():
    cases = [((A11Y_TREE, rules), {}) for rules in A11Y_RULES]
    assert _agree(get_metric("check_accessibility_tree"), oracle_metric("general", "check_accessibility_tree"),
                  cases) == 8


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return str(path)


def test_compare_archive_agrees_with_osworld(tmp_path):
    slides = {f"lecture_slides/{name}.pdf": (tmp_path / f"{name}.pdf").read_bytes()
              for name in ("a", "b") if write_pdf(tmp_path / f"{name}.pdf", [[(72, 700, f"Lecture {name}")]])}
    near = write_pdf(tmp_path / "near.pdf", [[(72, 700, "Lecture c")]])
    variants = {
        "same": slides,
        "one near": {**slides, "lecture_slides/b.pdf": Path(near).read_bytes()},
        "renamed": {"lecture_slides/a.pdf": slides["lecture_slides/a.pdf"],
                    "lecture_slides/c.pdf": slides["lecture_slides/b.pdf"]},
        "extra": {**slides, "lecture_slides/notes.pdf": slides["lecture_slides/a.pdf"]},
    }
    texts = {"notes/a.txt": "alpha\n", "notes/b.txt": "Beta\n"}
    cases = []
    for i, members in enumerate(variants.values()):
        # each case gets its own gold copy: OSWorld reuses an unpacked gold folder, and so do we
        gold = _zip(tmp_path / f"gold{i}.zip", slides)
        cases.append(((_zip(tmp_path / f"r{i}.zip", members), gold), {"file_path": "lecture_slides", "file_type": "pdf"}))
    text_gold = _zip(tmp_path / "text_gold.zip", texts)
    for i, (members, options) in enumerate([
            (texts, {"file_path": "notes"}), ({**texts, "notes/b.txt": "beta\n"}, {"file_path": "notes"}),
            ({**texts, "notes/b.txt": "beta\n"}, {"file_path": "notes", "ignore_case": True})]):
        cases.append(((_zip(tmp_path / f"t{i}.zip", members), text_gold), {**options, "file_type": "text"}))
    tarred = tmp_path / "book.tar.gz"
    with tarfile.open(tarred, "w:gz") as archive:
        for name, content in texts.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content.encode()))
    cases.append(((str(tarred), text_gold), {"file_path": "notes", "file_type": "text"}))
    cases.append(((None, text_gold), {"file_type": "text"}))
    assert _agree(get_metric("compare_archive"), oracle_metric("chrome", "compare_archive"), cases) == 9


def test_compare_zip_files_agrees_with_osworld(tmp_path):
    members = {"essay/a.txt": b"alpha", "essay/b.bin": b"\x00\x01"}
    gold = _zip(tmp_path / "gold.zip", members)
    cases = [((_zip(tmp_path / f"{i}.zip", variant), gold), {}) for i, variant in enumerate([
        members, {**members, "essay/a.txt": b"alpha!"}, {"essay/a.txt": b"alpha"}, {**members, "essay/c": b""}])]
    cases.append(((None, gold), {}))
    assert _agree(get_metric("compare_zip_files"), oracle_metric("vscode", "compare_zip_files"), cases) == 5
