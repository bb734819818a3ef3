"""Differential tests: our PowerPoint metrics score what OSWorld's functions of the same name score.

Each deck is made here (``pptx_factory``): the reference deck, near misses that change one property (with and
without the option that switches its check off), and wrong decks. ``oracle_metric`` is desktop-env's function.
"""

import functools
import logging
import shutil
import subprocess
import zipfile

import pytest
from pptx.enum.text import MSO_UNDERLINE, PP_ALIGN
from pptx.exc import PackageNotFoundError

from rla_envs.desktop.osworld.errors import EvaluationError

from rla_envs.desktop.osworld.metrics import get_metric
from tests.rla_envs.desktop.osworld_oracle import oracle_metric
from tests.rla_envs.desktop.pptx_factory import Deck, make_deck

pytestmark = pytest.mark.oracle

BASE = Deck()
MOVED_RECTANGLE = (5029200 + 914400, 1828800, 1828800, 914400)

COMPARE_CASES = [
    (BASE, {}),
    (BASE.but(title="Quarterly preview"), {}),
    (BASE.but(title="Quarterly preview"), {"examine_text": False}),
    (BASE.but(body=(("Revenue fell", 0), ("Costs fell", 1))), {}),
    (BASE.but(body=(("Revenue grew", 0), ("Costs fell", 0))), {}),
    (BASE.but(body=(("Revenue grew", 0), ("Costs fell", 0))), {"examine_indent": False}),
    (BASE.but(body=(("Revenue grew", 0), ("Costs fell", 0))), {"examine_indent": False, "examine_bullets": False}),
    (BASE.but(font_name="Liberation Sans"), {}),
    (BASE.but(font_name="Liberation Sans"), {"examine_font_name": False}),
    (BASE.but(font_size=24), {}),
    (BASE.but(font_size=24), {"examine_font_size": False}),
    (BASE.but(bold=False), {}),
    (BASE.but(bold=False), {"examine_font_bold": False}),
    (BASE.but(italic=True), {}),
    (BASE.but(italic=False), {}),
    (BASE.but(italic=True), {"examine_font_italic": False}),
    (BASE.but(underline=True), {}),
    (BASE.but(underline=False), {}),
    (BASE.but(underline=MSO_UNDERLINE.DOUBLE_LINE), {}),
    (BASE.but(underline=True), {"examine_font_underline": False}),
    (BASE.but(color=(0xFF, 0, 0)), {}),
    (BASE.but(color=None), {}),
    (BASE.but(color=(0xFF, 0, 0)), {"examine_color_rgb": False}),
    (BASE.but(strike="sngStrike"), {}),
    (BASE.but(strike="noStrike"), {}),
    (BASE.but(strike="sngStrike"), {"examine_strike_through": False}),
    (BASE.but(alignment=PP_ALIGN.CENTER), {}),
    (BASE.but(alignment=PP_ALIGN.LEFT), {}),
    (BASE.but(alignment=PP_ALIGN.CENTER), {"examine_alignment": False}),
    (BASE.but(bullet="\u2022"), {}),
    (BASE.but(bullet="\u2022"), {"examine_bullets": False}),
    (BASE.but(notes="Speak fast"), {}),
    (BASE.but(notes=""), {}),
    (BASE.but(notes="Speak fast"), {"examine_note": False}),
    (BASE.but(background=(0, 0, 0xFF)), {}),
    (BASE.but(background=None), {}),
    (BASE.but(background=(0, 0, 0xFF)), {"examine_background_color": False}),
    (BASE.but(box=(914400 + 2000, 1828800, 3657600, 914400)), {}),
    (BASE.but(box=(914400 + 90000, 1828800, 3657600, 914400)), {}),
    (BASE.but(box=(914400 + 90000, 1828800, 3657600, 914400)), {"examine_shape": False}),
    (BASE.but(box=(914400 + 7000, 1828800, 3657600, 914400)), {"approximately_tolerance": 0.01}),
    (BASE.but(picture=(914400, 3200400, 2286000, 1714500)), {"examine_shape": False, "examine_image_size": True}),
    (BASE.but(picture=(1828800, 3200400, 1828800, 1371600)), {"examine_shape": False, "examine_image_size": True}),
    (BASE.but(box=(1828800, 1828800, 3657600, 914400)), {"examine_shape": False, "examine_image_size": True}),
    (BASE.but(picture=(914400, 3200400, 1828800, 1600000)), {"examine_shape": False, "examine_modify_height": True}),
    (BASE.but(picture=(914400, 3200400, 2000000, 1371600)), {"examine_shape": False, "examine_modify_height": True}),
    (BASE.but(rectangle=(5029200, 1828800, 1828800, 1100000)),
     {"examine_shape": False, "examine_modify_height": True}),
    (BASE.but(rectangle=MOVED_RECTANGLE), {"examine_shape": False, "examine_right_position": True}),
    (BASE.but(picture=(914400, 3000000, 1828800, 1371600)), {"examine_shape": False, "examine_right_position": True}),
    (BASE.but(picture=(914400, 1700000, 1828800, 1371600)), {"examine_shape": False, "examine_top_position": True}),
    (BASE.but(picture=(914400, 3000000, 1828800, 1371600)), {"examine_shape": False, "examine_top_position": True}),
    (BASE.but(table_top=3800000), {"examine_shape": False, "examine_table_bottom_position": True}),
    (BASE.but(table_top=3000000), {"examine_shape": False, "examine_table_bottom_position": True}),
    (BASE.but(box=(1828800, 1828800, 3657600, 914400)),
     {"examine_shape": False, "examine_table_bottom_position": True}),
    (BASE, {"examine_shape": False, "examine_title_bottom_position": True}),
    (BASE.but(box=(1828800, 1828800, 3657600, 914400)),
     {"examine_shape": False, "examine_title_bottom_position": True}),
    (BASE.but(box=(1828800, 1828800, 3657600, 914400)), {"examine_shape_for_shift_size": True}),
    (BASE.but(slide_count=2), {}),
    (BASE.but(slide_count=4), {"examine_number_of_slides": False}),
    (BASE.but(extra_shape=True), {}),
    (BASE.but(table_bold=True), {}),
    (BASE.but(table_bold=True), {"examine_font_bold": False}),
    (BASE.but(table_bold=False), {}),
    (BASE.but(table_color=(0, 0x80, 0)), {}),
    (BASE.but(table_color=(0, 0x80, 0)), {"examine_color_rgb": False}),
    (BASE.but(table_cells=(("Item", "Cost"), ("Tea", "3"))), {}),
    (BASE.but(group_text="moved"), {}),
    (BASE.but(group_text="moved"), {"examine_alignment": False}),
    (BASE.but(group_alignment=PP_ALIGN.RIGHT), {}),
    (BASE.but(second_run=None), {}),
    (BASE.but(picture_color="blue"), {}),
]
"""(result deck, options) pairs, each compared with the reference deck BASE."""

PAIR_CASES = [
    # (result deck, reference deck, options, the score both give)
    (BASE.but(table_color=(0, 0x80, 0)), BASE.but(table_color=(0, 0, 0x80)), {}, 0.0),
    (BASE.but(table_color=(0, 0x80, 0)), BASE.but(table_color=(0, 0, 0x80)), {"examine_color_rgb": False}, 1.0),
    (BASE.but(underline=True), BASE.but(underline=MSO_UNDERLINE.DOUBLE_LINE), {}, 0.0),
    (BASE.but(italic=None), BASE.but(italic=False), {}, 1.0),
    # an empty run writes <a:t/>, on which OSWorld's bullet reader fails, so it skips the bullet check
    (BASE.but(second_run="", bullet="\u2022"), BASE.but(second_run=""), {}, 1.0),
    (BASE.but(second_run="", bullet="\u2022"), BASE.but(second_run="", bullet="-"), {}, 1.0),
    (BASE.but(bullet="\u2022"), BASE.but(bullet="-"), {}, 0.0),
    (BASE.but(bullet="\u2022"), BASE.but(bullet="\u2022"), {}, 1.0),
]


@pytest.fixture(autouse=True)
def _quiet_oracle_debug_log():
    """OSWorld's compare_pptx_files turns on its debug log on every call; keep the test output readable."""
    yield
    logger = logging.getLogger("desktopenv.metric.slides.debug")
    logger.handlers.clear()
    logger.setLevel(logging.WARNING)


def _score_both(name, module, args, kwargs):
    ours = get_metric(name)(*args, **kwargs)
    theirs = oracle_metric(module, name)(*args, **kwargs)
    return ours, theirs


def test_compare_pptx_files_agrees_with_osworld(tmp_path):
    expected = make_deck(tmp_path / "expected.pptx", BASE)
    scores = []
    for index, (deck, options) in enumerate(COMPARE_CASES):
        result = make_deck(tmp_path / f"result{index}.pptx", deck)
        scores.append(_score_both("compare_pptx_files", "slides", (result, expected), options))
    disagreements = [(COMPARE_CASES[i], s) for i, s in enumerate(scores) if s[0] != s[1]]
    assert not disagreements, f"ours vs OSWorld's: {disagreements}"
    assert {ours for ours, _ in scores} == {0.0, 1.0}
    print(f"compare_pptx_files: {len(COMPARE_CASES)} generated cases agree")


def test_compare_pptx_files_pairs_agree_with_osworld(tmp_path):
    scores = []
    for index, (result_deck, expected_deck, options, _) in enumerate(PAIR_CASES):
        result = make_deck(tmp_path / f"result{index}.pptx", result_deck)
        expected = make_deck(tmp_path / f"expected{index}.pptx", expected_deck)
        scores.append(_score_both("compare_pptx_files", "slides", (result, expected), options))
    assert [ours for ours, _ in scores] == [theirs for _, theirs in scores]
    assert [ours for ours, _ in scores] == [score for *_, score in PAIR_CASES]


def test_compare_pptx_files_missing_and_broken_files(tmp_path):
    expected = make_deck(tmp_path / "expected.pptx", BASE)
    broken = tmp_path / "broken.pptx"
    broken.write_bytes(b"not a zip")
    # a missing result: OSWorld opens python-pptx's empty default deck, which has no slides, and scores 0
    assert _score_both("compare_pptx_files", "slides", (None, expected), {}) == (0.0, 0.0)
    with pytest.raises(EvaluationError, match="not a readable .pptx"):
        get_metric("compare_pptx_files")(expected, str(broken))
    with pytest.raises(PackageNotFoundError):
        oracle_metric("slides", "compare_pptx_files")(expected, str(broken))


def _xcu(tmp_path, name, items):
    """A registrymodifications.xcu with one item per (path, property, value); value None writes no <value>."""
    body = "".join(
        f'<item oor:path="{path}"><prop oor:name="{prop}" oor:op="fuse">'
        + (f"<value>{value}</value>" if value is not None else "") + "</prop></item>"
        for path, prop, value in items)
    path = tmp_path / name
    path.write_text('<?xml version="1.0" encoding="UTF-8"?><oor:items xmlns:oor="http://openoffice.org/2001/registry" '
                    f'xmlns:xs="http://www.w3.org/2001/XMLSchema">{body}</oor:items>', encoding="utf-8")
    return str(path)


def _master(tmp_path, name, colors):
    """A package holding only a slide master whose solid fills use ``colors`` (what check_page_number_colors reads)."""
    fills = "".join(f'<a:solidFill><a:srgbClr val="{c}"/></a:solidFill>' for c in colors)
    xml = ('<p:sldMaster xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
           'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main">'
           f'<p:cSld><p:spTree>{fills}<a:solidFill><a:schemeClr val="tx1"/></a:solidFill></p:spTree></p:cSld>'
           '</p:sldMaster>')
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("ppt/slideMasters/slideMaster1.xml", xml)
    return str(path)


PRESENTER = "/org.openoffice.Office.Impress/Misc/Start"
AUTOSAVE = "/org.openoffice.Office.Common/Save/Document"
SLIDE = (0, 0, 9144000, 6858000)


def _agree_all(name, cases):
    """Score every (args, options) case with ours and OSWorld's; return our scores."""
    scores = [_score_both(name, "slides", args, options) for args, options in cases]
    disagreements = [(cases[i], score) for i, score in enumerate(scores) if score[0] != score[1]]
    assert not disagreements, f"{name}: ours vs OSWorld's: {disagreements}"
    ours = [score for score, _ in scores]
    assert len(set(ours)) > 1, f"{name}: the cases must not all score the same"
    print(f"{name}: {len(cases)} generated cases agree")
    return ours


def test_deck_property_metrics_agree_with_osworld(tmp_path):
    deck = functools.partial(lambda name, d: make_deck(tmp_path / name, d))
    dissolve = deck("dissolve.pptx", BASE.but(transition="dissolve"))
    fade = deck("fade.pptx", BASE.but(transition="fade"))
    plain = deck("plain.pptx", BASE)
    assert _agree_all("check_transition", [
        ((dissolve, {"slide_idx": 0, "transition_type": "dissolve"}), {}),
        ((fade, {"slide_idx": 0, "transition_type": "dissolve"}), {}),
        ((plain, {"slide_idx": 0, "transition_type": "dissolve"}), {}),
        ((dissolve, {"slide_idx": 1, "transition_type": "dissolve"}), {}),
        ((dissolve, {"slide_idx": 7, "transition_type": "dissolve"}), {}),
        ((fade, {"slide_idx": 0, "transition_type": "fade"}), {}),
    ]) == [1, 0, 0, 0, 0, 1]
    portrait = deck("portrait.pptx", BASE.but(portrait=True))
    square = deck("square.pptx", BASE.but(slide_size=(6858000, 6858000)))
    assert _agree_all("check_slide_orientation_Portrait",
                      [((portrait,), {}), ((plain,), {}), ((square,), {})]) == [1, 0, 0]

    blue = {"rgb": [0, 0, 255], "original_rgb": [255, 255, 255]}
    fills = [deck(f"fill{i}.pptx", BASE.but(background=color))
             for i, color in enumerate([(0, 0, 255), (20, 20, 230), (255, 255, 255), (255, 0, 0), None])]
    scores = _agree_all("evaluate_presentation_fill_to_rgb_distance",
                        [((path, rules), {}) for path in fills for rules in (blue, {"rgb": [0, 0, 255]})])
    assert scores[0] == 1 and scores[4] == 0 and 0.9 < scores[2] < 1

    colors = [_master(tmp_path, f"master{i}.pptx", c) for i, c in enumerate(
        [["000000", "FF0000", "FFFFFF"], ["000000", "0000FF", "FFFFFF"], ["00CC00", "000000"]])]
    # OSWorld reads "0000FF" as (0x00, 0x0F, 0xF): not blue; "00CC00" as (0x0C, 0xC0, 0x0): green
    assert _agree_all("check_page_number_colors", [((path, {"color": color}), {})
                                                   for path in colors for color in ("red", "blue", "green")]
                      ) == [1, 0, 0, 0, 0, 0, 0, 0, 1]


def test_stretched_picture_agrees_with_osworld(tmp_path):
    original = make_deck(tmp_path / "original.pptx", BASE.but(cover_picture=(914400, 914400, 1828800, 1371600)))
    variants = [BASE.but(cover_picture=SLIDE), BASE.but(cover_picture=(200000, 100000, 9044000, 6758000)),
                BASE.but(cover_picture=(914400, 0, 9144000, 6858000)), BASE.but(cover_picture=(0, 0, 9144000, 5000000)),
                BASE.but(cover_picture=SLIDE, cover_color="blue"), BASE]
    results = [make_deck(tmp_path / f"result{i}.pptx", d) for i, d in enumerate(variants)]
    assert _agree_all("check_image_stretch_and_center",
                      [((path, original), {}) for path in results]) == [1, 1, 0, 0, 0, 0]


def test_settings_and_window_metrics_agree_with_osworld(tmp_path):
    presenter = [_xcu(tmp_path, f"p{i}.xcu", items) for i, items in enumerate([
        [(PRESENTER, "EnablePresenterScreen", "false")], [(PRESENTER, "EnablePresenterScreen", "true")],
        [(PRESENTER, "EnablePresenterScreen", "False")], [(PRESENTER, "Other", "false")], []])]
    assert _agree_all("check_presenter_console_disable",
                      [((path,), {}) for path in presenter]) == [1, 0, 1, 0, 0]
    autosave = [_xcu(tmp_path, f"a{i}.xcu", items) for i, items in enumerate([
        [(AUTOSAVE, "AutoSaveTimeIntervall", "3")], [(AUTOSAVE, "AutoSaveTimeIntervall", "10")],
        [(AUTOSAVE, "AutoSaveTimeIntervall", "10"), (AUTOSAVE, "AutoSaveTimeIntervall", "3")],
        [(AUTOSAVE, "AutoSaveTimeIntervall", "3"), (AUTOSAVE, "AutoSaveTimeIntervall", "10")],
        [(PRESENTER, "AutoSaveTimeIntervall", "3")]])]
    assert _agree_all("check_auto_saving_time",
                      [((path, {"minutes": 3}), {}) for path in autosave]) == [1, 0, 1, 0, 0]
    trees = ['<desktop-frame><application name="soffice"><document-frame name="Slides View"/></application>'
             '</desktop-frame>',
             '<desktop-frame><application name="soffice"><document-frame name="Outline View"/></application>'
             '</desktop-frame>',
             '<desktop-frame><panel name="Slides View"/></desktop-frame>']
    assert _agree_all("check_left_panel", [((tree,), {}) for tree in trees]) == [1, 0, 0]


LIBREOFFICE_VARIANTS = {
    "base": BASE, "bigger": BASE.but(font_size=28), "centred": BASE.but(alignment=PP_ALIGN.CENTER),
    "moved": BASE.but(box=(1828800, 1828800, 3657600, 914400)), "bulleted": BASE.but(bullet="\u2022"),
    "renamed": BASE.but(group_text="moved"), "noted": BASE.but(notes="Other notes"),
    "blue": BASE.but(background=(0, 0, 255)), "struck": BASE.but(strike="sngStrike"),
}


def test_decks_saved_by_libreoffice_agree_with_osworld(tmp_path):
    """The same comparisons on decks as LibreOffice Impress writes them (its XML, not python-pptx's)."""
    if not shutil.which("soffice"):
        pytest.skip("LibreOffice (soffice) is not installed")
    sources = [make_deck(tmp_path / f"{name}.pptx", deck) for name, deck in LIBREOFFICE_VARIANTS.items()]
    out = tmp_path / "saved"
    subprocess.run(["soffice", f"-env:UserInstallation=file://{tmp_path}/profile", "--headless", "--convert-to",
                    "pptx", "--outdir", str(out), *sources], check=True, capture_output=True, timeout=300)
    reference = str(out / "base.pptx")
    cases = [((str(out / f"{name}.pptx"), reference), options) for name in LIBREOFFICE_VARIANTS
             for options in ({}, {"examine_shape": False, "examine_alignment": False})]
    assert 0.0 in _agree_all("compare_pptx_files", cases)
