"""The long tail of single OSWorld metrics, over files and command output made here."""

import pytest

from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters import EvalContext, run_getter
from rla_envs.desktop.osworld.getters.wallpaper import WALLPAPER_COMMAND, wallpaper_path
from rla_envs.desktop.osworld.metrics import get_metric
from tests.rla_envs.desktop.tail_files import write_cities, write_epub, write_master, write_word_table, write_xcu

CITIES = ["Scottsdale", ["Lake Tahoe", "Stateline"], ["Montreal", "Montréal"]]


def _text(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_compare_result_files_numbers_and_text(tmp_path):
    metric = get_metric("compare_result_files")
    gold = _text(tmp_path, "gold.txt", "42.5\n")
    assert metric(_text(tmp_path, "a.txt", "The median is 42.5"), gold) == 1.0  # the number inside a sentence
    assert metric(_text(tmp_path, "b.txt", "42.50001"), gold) == 1.0  # within 1e-4
    assert metric(_text(tmp_path, "c.txt", "42.6"), gold) == 0.0
    assert metric(_text(tmp_path, "d.txt", "about forty"), gold) == 0.0
    word_gold = _text(tmp_path, "word.txt", "Paris\n")
    assert metric(_text(tmp_path, "e.txt", "  Paris "), word_gold) == 1.0
    assert metric(_text(tmp_path, "f.txt", "It is Paris"), word_gold) == 0.0  # text must be equal
    assert metric(None, gold) == 0.0
    with pytest.raises(EvaluationError, match="reference"):
        metric(_text(tmp_path, "g.txt", "1"), str(tmp_path / "absent.txt"))


def test_compare_python_pure_text_ignores_blank_lines_and_a_header_only(tmp_path):
    metric = get_metric("compare_python_pure_text")
    gold = _text(tmp_path, "gold.py", "import torch\n\n# the model\nx = 1\n\tif x:\n")
    same = _text(tmp_path, "same.py", "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nimport torch\n# the model\n"
                                      "x = 1   \n    if x:\n\n\n")
    assert metric(same, gold) == 1.0
    assert metric(_text(tmp_path, "no_comment.py", "import torch\nx = 1\n    if x:\n"), gold) == 0.0
    assert metric(_text(tmp_path, "markdown.py", "# GPT\nimport torch\n# the model\nx = 1\n    if x:\n"), gold) == 0.0
    late_header = "import torch\n# the model\nx = 1\n    if x:\n#!/bin/sh\n"
    assert metric(_text(tmp_path, "late.py", late_header), gold) == 0.0  # a header only counts at the top
    assert metric(None, gold) == 0.0


def test_check_line_number_counts_lines_with_a_clock_time(tmp_path):
    metric = get_metric("check_line_number")
    report = "Linux 6.1\n\n" + "".join(f"12:00:{s:02d} AM all 1.0 0.0\n" for s in range(30)) + "Average: all 1.0\n"
    path = _text(tmp_path, "sar.txt", report)
    assert metric(path, {"expected": "30"}) == 1.0
    assert metric(path, {"expected": "31"}) == 0.0
    assert metric(_text(tmp_path, "bad.txt", "24:00:00\n12:60:00\n"), {"expected": 0}) == 1.0  # not clock times
    assert metric(None, {"expected": "0"}) == 0.0


def test_find_default_font(tmp_path):
    metric = get_metric("find_default_font")
    rules = {"font_name": "Times New Roman"}
    assert metric(write_xcu(tmp_path / "a.xcu", {"Standard": "Times New Roman"}), rules) == 1.0
    assert metric(write_xcu(tmp_path / "b.xcu", {"Standard": "Liberation Serif"}), rules) == 0.0
    assert metric(write_xcu(tmp_path / "c.xcu", {"Heading": "Times New Roman"}), rules) == 0.0  # not the default
    assert metric(write_xcu(tmp_path / "d.xcu", {}, extra_path="/org.openoffice.Office.Calc/Font"), rules) == 0.0
    assert metric(_text(tmp_path, "e.xcu", "<oor:items"), rules) == 0.0
    assert metric(None, rules) == 0.0


def test_os_settings_from_command_output():
    utc = ("               Local time: Thu 2024-01-25 12:56:06 UTC\n           Universal time: Thu 2024-01-25 "
           "12:56:06 UTC\n                 RTC time: n/a\n                Time zone: Etc/UTC (UTC, +0000)\n")
    assert get_metric("is_utc_0")(utc) == 1.0
    assert get_metric("is_utc_0")(utc.replace("UTC, +0000", "CET, +0100")) == 0.0
    assert get_metric("is_utc_0")("Failed to connect to bus") == 0.0
    assert get_metric("is_utc_0")(None) == 0.0
    favourites = get_metric("check_gnome_favorite_apps")
    rules = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
    assert favourites("['thunderbird.desktop', 'google-chrome.desktop']\n", rules) == 1.0
    assert favourites("['thunderbird.desktop', 'vim.desktop', 'google-chrome.desktop']\n", rules) == 0.0
    assert favourites("@as []\n", rules) == 0.0
    assert favourites("__import__('os').system('true')", rules) == 0.0  # never evaluated as code
    clipboard = get_metric("is_in_vm_clickboard")
    assert clipboard({"expected": "/home/user/Data3/List3/secret.docx"}, "/home/user/Data3/List3/secret.docx") == 1.0
    assert clipboard({"expected": ["Data3", "secret"]}, "/home/user/Data2/secret.docx") == 0.0
    assert clipboard({"expected": "x"}, None) == 0.0


def test_compare_conference_city_in_order(tmp_path):
    metric = get_metric("compare_conference_city_in_order")
    rules = {"expected": CITIES + ["Paris"] * 18}
    right = ["Scottsdale, AZ", "Stateline", "Montréal"] + ["Paris"] * 18
    assert metric(write_cities(tmp_path / "a.xlsx", right), rules) == 1.0
    assert metric(write_cities(tmp_path / "b.xlsx", right[:1] + ["Reno"] + right[2:]), rules) == 0.0
    assert metric(write_cities(tmp_path / "c.xlsx", right[:20] + [None]), rules) == 0.0  # an empty cell
    assert metric(write_cities(tmp_path / "d.xlsx", right), {"expected": rules["expected"][:20]}) == 0.0
    assert metric(_text(tmp_path, "e.xlsx", "not a workbook"), rules) == 0.0


def test_compare_htmls(tmp_path):
    metric = get_metric("compare_htmls")
    gold = _text(tmp_path, "gold.html", '<html><body><table><tr><td sdnum="1033;0;0.00">1.50</td></tr></table></body>'
                                        '</html>')
    page = (tmp_path / "gold.html").read_text()
    assert metric(_text(tmp_path, "same.html", page), gold) == 1.0
    other_format = _text(tmp_path, "fmt.html", page.replace("1033;0;0.00", "1033;0;0.0"))
    assert metric(other_format, gold) == 0.0
    assert metric(other_format, gold, ignore_sdnum=True) == 1.0
    assert metric(_text(tmp_path, "text.html", page.replace("1.50", "1.5")), gold) == 0.0
    assert metric(str(tmp_path / "absent.html"), gold) == 0.0
    with pytest.raises(EvaluationError, match="reference"):
        metric(gold, str(tmp_path / "absent.html"))


@pytest.mark.parametrize(("colour", "fills", "score"), [
    ("red", ["000000", "C9211E", "FFFFFF"], 1.0),   # the next-to-last fill is the slide number's
    ("red", ["C9211E", "000000", "FFFFFF"], 0.0),
    ("black", ["FFFFFF", "000000", "C9211E"], 1.0),
    ("blue", ["FFFFFF", "0000FF", "000000"], 0.0),  # read as OSWorld reads it: (0x00, 0x0F, 0xF), not blue
    ("purple", ["FFFFFF", "000000", "000000"], 1.0),  # a colour without a test accepts any
    ("red", ["C9211E"], 0.0),                        # one fill only
])
def test_check_page_number_colors(tmp_path, colour, fills, score):
    assert get_metric("check_page_number_colors")(write_master(tmp_path / "s.pptx", fills), {"color": colour}) == score


def test_check_page_number_colors_needs_a_presentation(tmp_path):
    metric = get_metric("check_page_number_colors")
    assert metric(None, {"color": "red"}) == 0.0
    assert metric(_text(tmp_path, "x.pptx", "text"), {"color": "red"}) == 0.0


RED, BLUE = (255, 0, 0), (0, 0, 255)


def test_evaluate_colored_words_in_tables(tmp_path):
    metric = get_metric("evaluate_colored_words_in_tables")
    gold = write_word_table(tmp_path / "gold.docx", [("and", None), ("big", None)])
    assert metric(write_word_table(tmp_path / "a.docx", [("and", RED), ("big", BLUE)]), gold) == 1.0
    assert metric(write_word_table(tmp_path / "b.docx", [("and", (250, 3, 0)), ("big", BLUE)]), gold) == 1.0  # close
    assert metric(write_word_table(tmp_path / "c.docx", [("and", BLUE), ("big", BLUE)]), gold) == 0.0
    assert metric(write_word_table(tmp_path / "d.docx", [("and", (200, 0, 0)), ("big", BLUE)]), gold) == 0.0
    assert metric(write_word_table(tmp_path / "e.docx", [("and", RED), ("big", None)]), gold) == 0.0  # uncoloured
    assert metric(write_word_table(tmp_path / "f.docx", [("and", RED), ("big", BLUE)], "Words"), gold) == 0.0
    assert metric(None, gold) == 0.0


CHAPTERS = {"index_split_000.html": "<p>Chapter 1</p><p>It rained.</p>",
            "index_split_001.html": "<p>Chapter 2</p><p>It snowed.</p>"}


def test_compare_epub(tmp_path):
    metric = get_metric("compare_epub")
    gold = write_epub(tmp_path / "gold.epub", CHAPTERS)
    # a new identifier and navigation ids: the same book
    assert metric(write_epub(tmp_path / "same.epub", CHAPTERS, book_id="urn:uuid:2"), gold) == 1.0
    changed = dict(CHAPTERS, **{"index_split_001.html": "<p>Chapter 2</p><p>It hailed.</p>"})
    partial = metric(write_epub(tmp_path / "changed.epub", changed), gold)
    assert 0.5 < partial < 1.0
    assert metric(write_epub(tmp_path / "title.epub", CHAPTERS, title="Other"), gold) < partial
    assert metric(_text(tmp_path, "x.epub", "not a zip"), gold) == 0.0
    assert metric(None, gold) == 0.0
    with pytest.raises(EvaluationError, match="reference EPUB"):
        metric(gold, _text(tmp_path, "y.epub", "not a zip"))


class WallpaperClient:
    """A session whose background setting prints ``setting`` and whose files are ``files``."""

    def __init__(self, setting, files):
        self.setting, self.files, self.commands = setting, files, []

    def execute(self, command, *, shell=False, timeout=120.0):
        self.commands.append(command)
        return {"status": "success", "output": self.setting, "error": "", "returncode": 0}

    def get_file(self, path):
        return self.files.get(path)


@pytest.mark.parametrize(("setting", "path"), [
    ("'file:///home/user/Pictures/my%20bg.png'\n", "/home/user/Pictures/my bg.png"),
    ("'/home/user/bg.png'", "/home/user/bg.png"),
    ("''\n", None), ("", None), (None, None), ("'relative.png'", None), ("'https://x.org/bg.png'", None),
])
def test_wallpaper_path(setting, path):
    assert wallpaper_path(setting) == path


def test_vm_wallpaper_copies_the_image_the_setting_names(tmp_path):
    client = WallpaperClient("'file:///home/user/Desktop/frame.png'\n", {"/home/user/Desktop/frame.png": b"PNG"})
    ctx = EvalContext(client=client, cache=FileCache(None), task_id=None, workdir=tmp_path)
    local = run_getter(ctx, {"type": "vm_wallpaper", "dest": "background.png"})
    assert local == str(tmp_path / "background.png") and (tmp_path / "background.png").read_bytes() == b"PNG"
    assert client.commands == [WALLPAPER_COMMAND]
    unset = EvalContext(client=WallpaperClient("''\n", {}), cache=FileCache(None), task_id=None, workdir=tmp_path)
    assert (tmp_path / "none.png").exists() is False
    run_getter(unset, {"type": "vm_wallpaper", "dest": "none.png"})
    assert (tmp_path / "none.png").read_bytes() == b""  # empty, as OSWorld leaves it: image metrics score 0
    with pytest.raises(EvaluationError, match="must be a file name"):
        run_getter(ctx, {"type": "vm_wallpaper", "dest": "../x.png"})
