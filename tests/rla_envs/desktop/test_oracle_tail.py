"""Differential tests: the long-tail metrics score what OSWorld's functions of the same name score.

Every case is made here (matching, near-miss, wrong) and scored by ours and by desktop-env's (``oracle_metric``).
Cases where OSWorld raises on the agent's output (a missing file, output in another format) are left to the unit
tests: there ours scores 0.
"""

import pytest

from rla_envs.desktop.osworld.metrics import get_metric
from tests.rla_envs.desktop.osworld_oracle import oracle_metric
from tests.rla_envs.desktop.tail_files import write_cities, write_epub, write_master, write_word_table, write_xcu

pytestmark = pytest.mark.oracle


def _agree(name, module, cases):
    """Score every ``(args, kwargs)`` case with ours and OSWorld's; they must agree and not all be equal."""
    ours, theirs = get_metric(name), oracle_metric(module, name)
    scores = [(ours(*args, **kwargs), float(theirs(*args, **kwargs))) for args, kwargs in cases]
    disagreements = [(case, score) for case, score in zip(cases, scores) if score[0] != score[1]]
    assert not disagreements, f"{name}: ours vs OSWorld's: {disagreements}"
    assert len({score for score, _ in scores}) > 1, f"{name}: the cases must not all score the same"
    return len(cases)


def _texts(tmp_path, texts, prefix="case"):
    paths = []
    for index, text in enumerate(texts):
        path = tmp_path / f"{prefix}{index}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    return paths


def test_compare_result_files(tmp_path):
    number, word = _texts(tmp_path, ["42.5\n", "Paris\n"])
    results = _texts(tmp_path, prefix="result", texts=["42.5", "median: 42.5", "42.50001", "42.6", "forty", "", " 42.5000 ", "Paris", "paris",
                      "It is Paris", "nan"])
    cases = [((r, gold), {}) for gold in (number, word) for r in results] + [((None, number), {})]
    assert _agree("compare_result_files", "vscode", cases) == 23


def test_compare_python_pure_text(tmp_path):
    gold, *results = _texts(tmp_path, [
        "import torch\n\n# the model\nx = 1\n\tif x:\n",
        "#!/usr/bin/env python\n# coding: utf-8\nimport torch\n# the model\nx = 1   \n    if x:\n\n",
        "import torch\nx = 1\n    if x:\n",
        "# GPT\nimport torch\n# the model\nx = 1\n    if x:\n",
        "import torch\n# the model\nx = 1\n  if x:\n",
        "# coding=utf-8\n\n# -*- coding: latin-1 -*-\nimport torch\n# the model\nx = 1\n    if x:",
        "",
    ])
    cases = [((r, gold), {}) for r in results] + [((None, gold), {})]
    assert _agree("compare_python_pure_text", "general", cases) == 7


def test_check_line_number(tmp_path):
    results = _texts(tmp_path, ["".join(f"12:00:{s:02d} AM all\n" for s in range(31)),
                                "Average:\n" + "".join(f"23:59:{s:02d}\n" for s in range(30)),
                                "24:00:00\n12:60:00\n9:00:00\n", "a 12:00:00 b 13:00:00\n\x0c14:00:00\n"])
    cases = [((r, {"expected": n}), {}) for r in results for n in ("31", "30", "1", 0)]
    assert _agree("check_line_number", "general", cases + [((None, {"expected": "0"}), {})]) == 17


def test_find_default_font(tmp_path):
    files = [write_xcu(tmp_path / "a.xcu", {"Standard": "Times New Roman"}),
             write_xcu(tmp_path / "b.xcu", {"Standard": "Liberation Serif"}),
             write_xcu(tmp_path / "c.xcu", {"Heading": "Times New Roman"}),
             write_xcu(tmp_path / "d.xcu", {}, extra_path="/org.openoffice.Office.Calc/Font"),
             *_texts(tmp_path, ["<oor:items"])]
    cases = [((f, {"font_name": font}), {}) for f in files for font in ("Times New Roman", "Comic Sans")]
    assert _agree("find_default_font", "docs", cases + [((None, {"font_name": "x"}), {})]) == 11


UTC = ("               Local time: Thu 2024-01-25 12:56:06 WET\n           Universal time: Thu 2024-01-25 12:56:06 "
       "UTC\n                 RTC time: Thu 2024-01-25 12:56:05\n                Time zone: Atlantic/Faroe (WET, "
       "+0000)\nSystem clock synchronized: yes\n")


def test_os_settings():
    assert _agree("is_utc_0", "basic_os", [((UTC,), {}), ((UTC.replace("+0000", "+0100"),), {}),
                                           ((UTC.replace("+0000)", "+0000) "),), {})]) == 3
    rules = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
    lists = ["['thunderbird.desktop', 'google-chrome.desktop']\n", "['google-chrome.desktop', 'thunderbird.desktop']",
             "['thunderbird.desktop', 'vim.desktop', 'google-chrome.desktop']\n", "['thunderbird.desktop']",
             "['thunderbird.desktop', 'thunderbird.desktop']", "[]"]
    assert _agree("check_gnome_favorite_apps", "basic_os", [((apps, rules), {}) for apps in lists]) == 6
    clip = [({"expected": "/home/user/Data3/List3/secret.docx"}, "/home/user/Data3/List3/secret.docx\n"),
            ({"expected": "/home/user/Data3/List3/secret.docx"}, "/home/user/Data2/List2/secret.docx"),
            ({"expected": ["Data3", "secret"]}, "/home/user/Data3/secret.docx"),
            ({"expected": ["Data3", "secret"]}, "/home/user/Data2/secret.docx"), ({"expected": "x"}, "")]
    assert _agree("is_in_vm_clickboard", "basic_os", [(case, {}) for case in clip]) == 5


def test_compare_conference_city_in_order(tmp_path):
    expected = ["Scottsdale", ["Lake Tahoe", "Stateline"], ["Montreal", "Montréal"]] + ["Paris"] * 18
    right = ["Scottsdale, AZ", "Stateline", "Montréal"] + ["Paris"] * 18
    rows = [right, right[:1] + ["Reno"] + right[2:], right[:20] + [None], right[:2] + ["Montreal (QC)"] + right[3:],
            ["scottsdale"] + right[1:], right[:20] + [2019]]
    files = [write_cities(tmp_path / f"c{i}.xlsx", r) for i, r in enumerate(rows)]
    cases = [((f, {"expected": expected}), {}) for f in files] + [((files[0], {"expected": expected[:20]}), {})]
    assert _agree("compare_conference_city_in_order", "table", cases) == 7


def test_compare_htmls(tmp_path):
    page = ('<html><head><meta charset="utf-8"></head><body><table border="1"><tr><td sdnum="1033;0;0.00" '
            'class="a b">1.50</td><td>x</td></tr></table><!-- note --></body></html>')
    variants = [page, page.replace("1033;0;0.00", "1033;0;0.0"), page.replace("1.50", "1.5"),
                page.replace('class="a b"', 'class="b a"'), page.replace("<td>x</td>", "<td> x </td>"),
                page.replace("<!-- note -->", "<!-- other -->"), page.replace("</table>", "</table><p>more</p>"),
                page.replace('border="1"', 'border="0"'), "<p>hello</p>", page.replace("1.50", "1.50<br>")]
    gold, *results = _texts(tmp_path, [page] + variants)
    cases = [((r, gold), options) for r in results for options in ({}, {"ignore_sdnum": True})]
    assert _agree("compare_htmls", "chrome", cases) == 20


def test_check_page_number_colors(tmp_path):
    fills = [["000000", "C9211E", "FFFFFF"], ["C9211E", "000000", "FFFFFF"], ["FFFFFF", "0000FF", "000000"],
             ["FFFFFF", "00FF00", "000000"], ["FFFFFF", "F0F0F0", "000000"], ["FFFFFF", "101010", "000000"],
             ["FFFFFF", "0FF000", "000000"], ["FFFFFF", "000FFF", "000000"]]
    files = [write_master(tmp_path / f"m{i}.pptx", f) for i, f in enumerate(fills)]
    cases = [((f, {"color": c}), {}) for f in files for c in ("red", "green", "blue", "black", "purple")]
    assert _agree("check_page_number_colors", "slides", cases) == 40


def test_evaluate_colored_words_in_tables(tmp_path):
    red, blue = (255, 0, 0), (0, 0, 255)
    gold = write_word_table(tmp_path / "gold.docx", [("and", None), ("big", None), ("Up", None)])
    colourings = [(red, blue, red), ((250, 3, 0), blue, (255, 8, 8)), (blue, blue, red), ((200, 0, 0), blue, red),
                  (red, (0, 0, 230), red), (red, blue, (0, 0, 0)), (red, (20, 20, 255), red)]
    files = [write_word_table(tmp_path / f"w{i}.docx", list(zip(["and", "big", "Up"], c)))
             for i, c in enumerate(colourings)]
    files.append(write_word_table(tmp_path / "text.docx", [("and", red), ("big", blue), ("Up", red)], "Words"))
    cases = [((f, gold), options) for f in files for options in ({}, {"threshold": 20})]
    assert _agree("evaluate_colored_words_in_tables", "docs", cases) == 16


def test_compare_epub(tmp_path):
    chapters = {"index_split_000.html": "<p>Chapter 1</p><p>It rained.</p>",
                "index_split_001.html": "<p>Chapter 2</p>\n<p>It snowed.</p>"}
    changed = dict(chapters, **{"index_split_001.html": "<p>Chapter 2</p><p>It hailed.</p>"})
    extra = dict(chapters, **{"index_split_002.html": "<p>Chapter 3</p>"})
    fewer = {"index_split_000.html": chapters["index_split_000.html"]}
    books = [write_epub(tmp_path / "same.epub", chapters, book_id="urn:uuid:2"),
             write_epub(tmp_path / "changed.epub", changed), write_epub(tmp_path / "extra.epub", extra),
             write_epub(tmp_path / "fewer.epub", fewer), write_epub(tmp_path / "title.epub", chapters, title="Other"),
             write_epub(tmp_path / "notoc.epub", chapters, toc=False), *_texts(tmp_path, ["not a zip"])]
    gold = write_epub(tmp_path / "gold.epub", chapters)
    gold_without_toc = write_epub(tmp_path / "gold2.epub", chapters, toc=False)
    cases = [((book, g), {}) for book in books for g in (gold, gold_without_toc)] + [((None, gold), {})]
    assert _agree("compare_epub", "others", cases) == 15
