"""Word formatting metrics over documents made here with python-docx, each with a passing and a failing case."""

import io

import docx
import pytest
from docx.enum.text import WD_BREAK, WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
from docx.shared import Inches, Pt

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics import docx_format as m

TEXT = ["Title", "Body text here.", "Last words"]


def _save(tmp_path, name, build=None, paragraphs=TEXT):
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if build:
        build(document)
    path = tmp_path / name
    document.save(path)
    return str(path)


def test_line_spacing(tmp_path):
    def double(document):
        document.paragraphs[1].paragraph_format.line_spacing = 2.0

    gold = _save(tmp_path, "g.docx", double)
    assert m.compare_line_spacing(_save(tmp_path, "ok.docx", double), gold) == 1.0
    assert m.compare_line_spacing(_save(tmp_path, "plain.docx"), gold) == 0.0
    assert m.compare_line_spacing(_save(tmp_path, "other.docx", double, ["Title", "Other", "Last words"]), gold) == 0.0


def test_fonts_subscript_italic_and_strike(tmp_path):
    def fonts(name):
        def build(document):
            for paragraph in document.paragraphs:
                for run in paragraph.runs:
                    run.font.name = name
        return build

    assert m.compare_font_names(_save(tmp_path, "a.docx", fonts("Arial")), {"font_name": "Arial"}) == 1.0
    assert m.compare_font_names(_save(tmp_path, "b.docx", fonts("Times")), {"font_name": "Arial"}) == 0.0

    def subscript(document):
        document.paragraphs[1].runs[0].font.subscript = True

    gold = _save(tmp_path, "sub_gold.docx", subscript)
    assert m.compare_subscript_contains(_save(tmp_path, "sub.docx", subscript), gold) == 1.0
    assert m.compare_subscript_contains(_save(tmp_path, "nosub.docx"), gold) == 0.0

    def italic(size):
        def build(document):
            run = document.paragraphs[1].runs[0]
            run.italic = True
            run.font.size = Pt(size)
        return build

    plain = _save(tmp_path, "plain.docx")
    assert m.check_italic_font_size_14(_save(tmp_path, "i14.docx", italic(14)), plain) == 1.0
    assert m.check_italic_font_size_14(_save(tmp_path, "i12.docx", italic(12)), plain) == 0.0

    def strike(document):
        document.paragraphs[-1].runs[0].font.strike = True

    assert m.evaluate_strike_through_last_paragraph(_save(tmp_path, "s.docx", strike), plain) == 1.0
    assert m.evaluate_strike_through_last_paragraph(plain, plain) == 0.0


def test_layout_metrics(tmp_path):
    def centred(document):
        document.paragraphs[0].paragraph_format.alignment = WD_PARAGRAPH_ALIGNMENT.CENTER

    assert m.is_first_line_centered(_save(tmp_path, "c.docx", centred)) == 1.0
    assert m.is_first_line_centered(_save(tmp_path, "l.docx")) == 0.0

    def footer(document):
        document.sections[0].footer.paragraphs[0].text = "Page 1"

    assert m.has_page_numbers_in_footers(_save(tmp_path, "f.docx", footer)) == 1.0
    assert m.has_page_numbers_in_footers(_save(tmp_path, "nf.docx")) == 0.0

    def page_break(document):
        document.paragraphs[1].runs[0].add_break(WD_BREAK.PAGE)

    broken = _save(tmp_path, "pb.docx", page_break)
    assert m.contains_page_break(broken, {}) == 1.0
    assert m.contains_page_break(broken, {"page_break_count": 2}) == 0.0
    assert m.contains_page_break(_save(tmp_path, "npb.docx"), {}) == 0.0


def test_tab_stops(tmp_path):
    paragraphs = ["Name\tScore", "Ada Lovelace\t36"]

    def tabs(position):
        def build(document):
            for paragraph in document.paragraphs:
                paragraph.paragraph_format.tab_stops.add_tab_stop(Inches(position), WD_TAB_ALIGNMENT.RIGHT)
        return build

    gold = _save(tmp_path, "g.docx", tabs(6.0), paragraphs)
    assert m.check_tabstops(_save(tmp_path, "same.docx", tabs(6.0), paragraphs), gold) == 1.0
    # text width = 8.5in page - 2 x 1.25in margins = 6in; 0.6in off in both paragraphs -> 1 - 0.1 = 0.9
    assert m.check_tabstops(_save(tmp_path, "off.docx", tabs(5.4), paragraphs), gold) == pytest.approx(0.9)
    assert m.check_tabstops(_save(tmp_path, "none.docx", None, paragraphs), gold) == 0.0
    assert m.check_tabstops(gold, gold, word_number_split_by_tabstop=1) == 0.0     # "Ada Lovelace" is 2 words
    assert m.check_tabstops(gold, gold, word_number_split_by_tabstop=1, index=1) == 1.0


def test_text_and_reference_comparisons(tmp_path):
    gold = _save(tmp_path, "g.docx", paragraphs=["Intro", "", "Body"])
    assert m.compare_docx_files_and_ignore_new_lines(_save(tmp_path, "a.docx", paragraphs=["Intro", "Body"]),
                                                     gold) == 1.0
    assert m.compare_docx_files_and_ignore_new_lines(_save(tmp_path, "b.docx", paragraphs=["Intro", "Bodies"]),
                                                     gold) == 0.0
    refs_gold = _save(tmp_path, "rg.docx", paragraphs=["Text", "References", "Smith 2020", "Jones 2021"])
    same = _save(tmp_path, "rs.docx", paragraphs=["Other text", "References", "Smith 2020", "Jones 2021"])
    # "Smith 2020" vs "Smith 2019": LCS 8 of 20 -> 0.8; mean (0.8 + 1) / 2 = 0.9 -> (0.9 - 0.5) / 0.5 = 0.8
    close = _save(tmp_path, "rc.docx", paragraphs=["Text", "References", "Smith 2019", "Jones 2021"])
    missing = _save(tmp_path, "rm.docx", paragraphs=["Text", "Smith 2020"])
    assert m.compare_references(same, refs_gold) == 1.0
    assert m.compare_references(close, refs_gold) == pytest.approx(0.8)
    assert m.compare_references(missing, refs_gold) == 0.0


def test_unique_train_records(tmp_path):
    initial = _save(tmp_path, "i.docx", paragraphs=["08:00:00, T1, S1, 1", "08:05:00, T1, S1, 1",
                                                   "09:00:00, T2, S2, 3"])
    gold = _save(tmp_path, "g.docx", paragraphs=["08:00:00, T1, S1, 1", "09:00:00, T2, S2, 3"])
    good = _save(tmp_path, "ok.docx", paragraphs=["08:05:00, T1, S1, 1", "09:00:00, T2, S2, 3"])
    dupes = _save(tmp_path, "d.docx", paragraphs=["08:00:00, T1, S1, 1", "08:05:00, T1, S1, 1",
                                                 "09:00:00, T2, S2, 3"])
    invented = _save(tmp_path, "x.docx", paragraphs=["10:00:00, T1, S9, 1", "09:00:00, T2, S2, 3"])
    assert m.compare_unique_train_records(good, [gold, initial]) == 1.0
    assert m.compare_unique_train_records(dupes, [gold, initial]) == 0.0
    assert m.compare_unique_train_records(invented, [gold, initial]) == 0.0
    assert m.compare_unique_train_records(good, gold) == 0.0           # needs [gold, initial]


def test_images_and_fuzzy_place_math(tmp_path):
    from PIL import Image

    def picture(color):
        def build(document):
            buffer = io.BytesIO()
            Image.new("RGB", (4, 4), color).save(buffer, format="PNG")
            buffer.seek(0)
            document.add_picture(buffer)
        return build

    gold = _save(tmp_path, "g.docx", picture("red"))
    assert m.compare_docx_images(_save(tmp_path, "r.docx", picture("red")), gold) == 1.0
    assert m.compare_docx_images(_save(tmp_path, "b.docx", picture("blue")), gold) == 0.0
    assert m.compare_docx_images(_save(tmp_path, "n.docx"), gold) == 0.0
    answers = {"expected": ["Paris", "Rome", "Berlin"]}
    assert m.fuzzy_place_math(_save(tmp_path, "p.docx", paragraphs=["Paris", "Rome", "Berlin"]), answers) == 1.0
    # "Pari" vs "Paris": 2*4/9; the other two exact -> (8/9 + 2) / 3
    assert m.fuzzy_place_math(_save(tmp_path, "q.docx", paragraphs=["Pari Rome Berlin"]), answers) == pytest.approx(
        (8 / 9 + 2) / 3)
    assert m.fuzzy_place_math(_save(tmp_path, "t.docx", paragraphs=["Paris Rome"]), answers) == 0.0


def test_missing_or_broken_files(tmp_path):
    gold = _save(tmp_path, "g.docx")
    broken = tmp_path / "broken.docx"
    broken.write_bytes(b"no zip")
    assert m.compare_line_spacing(None, gold) == 0.0
    assert m.check_tabstops(str(broken), gold) == 0.0
    assert m.is_first_line_centered(str(broken)) == 0.0
    with pytest.raises(EvaluationError, match="reference"):
        m.compare_docx_images(gold, str(broken))
