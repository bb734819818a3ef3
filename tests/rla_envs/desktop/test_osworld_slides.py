"""The PowerPoint metrics and the Impress getter on decks made here (python-pptx), with scores worked out by hand;
and their refusals."""

import zipfile

import pytest
from PIL import Image
from pptx.enum.text import PP_ALIGN

from rla_envs.desktop.osworld.cache import HF_FILE_CACHE_PREFIX, FileCache
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.evaluator import evaluate
from rla_envs.desktop.osworld.getters import EvalContext, run_getter
from rla_envs.desktop.osworld.metrics import get_metric
from rla_envs.desktop.osworld.metrics.slides import slide_bullets, unsupported_pptx_options
from rla_envs.desktop.osworld.runnable import not_runnable_reasons
from tests.rla_envs.desktop.pptx_factory import Deck, make_deck, png_bytes

BASE = Deck()
A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'


@pytest.fixture
def reference(tmp_path):
    return make_deck(tmp_path / "reference.pptx", BASE)


def _compare(tmp_path, deck, reference, **options):
    return get_metric("compare_pptx_files")(make_deck(tmp_path / "result.pptx", deck), reference, **options)


def test_an_identical_deck_matches(tmp_path, reference):
    assert _compare(tmp_path, BASE, reference) == 1.0


@pytest.mark.parametrize(("change", "option"), [
    ({"font_size": 24}, "examine_font_size"),
    ({"font_name": "Liberation Sans"}, "examine_font_name"),
    ({"bold": False}, "examine_font_bold"),
    ({"color": (255, 0, 0)}, "examine_color_rgb"),
    ({"strike": "sngStrike"}, "examine_strike_through"),
    ({"alignment": PP_ALIGN.CENTER}, "examine_alignment"),
    ({"notes": "Other notes"}, "examine_note"),
    ({"background": (0, 0, 255)}, "examine_background_color"),
    ({"box": (1828800, 1828800, 3657600, 914400)}, "examine_shape"),
    ({"slide_count": 4}, "examine_number_of_slides"),
])
def test_a_difference_fails_unless_its_option_turns_the_check_off(tmp_path, reference, change, option):
    assert _compare(tmp_path, BASE.but(**change), reference) == 0.0
    assert _compare(tmp_path, BASE.but(**change), reference, **{option: False}) == 1.0


def test_unset_and_false_formatting_are_the_same(tmp_path, reference):
    assert _compare(tmp_path, BASE.but(italic=False), reference) == 1.0     # reference: italic unset
    assert _compare(tmp_path, BASE.but(underline=False), reference) == 1.0
    assert _compare(tmp_path, BASE.but(underline=True), reference) == 0.0


def test_geometry_is_compared_within_the_tolerance(tmp_path, reference):
    # left 914400 -> 919400: 5000 / 919400 = 0.54% apart, over the default 0.5%, under 1%
    moved = BASE.but(box=(919400, 1828800, 3657600, 914400))
    assert _compare(tmp_path, moved, reference) == 0.0
    assert _compare(tmp_path, moved, reference, approximately_tolerance=0.01) == 1.0


def test_table_run_formatting_is_compared_whatever_the_options(tmp_path, reference):
    assert _compare(tmp_path, BASE.but(table_bold=True), reference, examine_font_bold=False) == 0.0
    # cell text is not compared by OSWorld's table check (only formatting), nor anywhere else
    assert _compare(tmp_path, BASE.but(table_cells=(("Item", "Cost"), ("Tea", "3"))), reference) == 1.0


def test_position_options_compare_with_the_reference(tmp_path, reference):
    lower_table = BASE.but(table_top=3800000)   # slide 3's table moved below the reference's and 3600000 EMU
    options = {"examine_shape": False, "examine_table_bottom_position": True}
    assert _compare(tmp_path, lower_table, reference, **options) == 1.0
    assert _compare(tmp_path, BASE, reference, **options) == 0.0   # not moved


def test_missing_or_broken_files(tmp_path, reference):
    compare = get_metric("compare_pptx_files")
    broken = tmp_path / "broken.pptx"
    broken.write_bytes(b"PK not really")
    assert compare(None, reference) == 0.0
    assert compare(str(broken), reference) == 0.0
    with pytest.raises(EvaluationError, match="not a readable .pptx"):
        compare(reference, str(broken))
    with pytest.raises(EvaluationError, match="reference .pptx file is missing"):
        compare(reference, None)


def test_slide_bullets_label_levels_and_characters():
    xml = (f'<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" {A}>'
           '<a:p><a:pPr lvl="1"><a:buChar char="-"/></a:pPr><a:r><a:t>one</a:t></a:r></a:p>'
           '<a:p><a:pPr/><a:r><a:t>two</a:t></a:r></a:p>'
           '<a:p><a:r><a:t>three</a:t></a:r></a:p><a:p><a:r><a:t> </a:t></a:r></a:p></p:sld>')
    assert slide_bullets(xml.encode()) == [("1", "-", "one"), ("0", "No Bullet", "two"),
                                           ("No Level", "No Bullet", "three")]
    assert slide_bullets(xml.replace("<a:t>two</a:t>", "<a:t/>").encode()) is None


def test_unknown_options_are_listed_and_refused():
    options = {"examine_shape": False, "examine_run_count": False, "_note": "a comment", "enable_debug": True}
    assert unsupported_pptx_options(options) == ["examine_run_count"]
    files = {"result": {"type": "vm_file", "path": "/home/user/a.pptx", "dest": "a.pptx"},
             "expected": {"type": "vm_file", "path": "/home/user/b.pptx", "dest": "b.pptx"}}
    task = {"id": "11111111-2222-3333-4444-555555555555", "instruction": "Fix the deck.", "config": [],
            "evaluator": {"func": "compare_pptx_files", "options": options, **files}}
    assert not_runnable_reasons(task, has_app=lambda _: True) == [
        "compare_pptx_files option 'examine_run_count' is not supported"]
    task["evaluator"]["options"] = {"examine_shape": False, "examine_modify_height": True}
    assert not_runnable_reasons(task, has_app=lambda _: True) == []


def test_transition_and_orientation(tmp_path):
    dissolve = make_deck(tmp_path / "d.pptx", BASE.but(transition="dissolve"))
    assert get_metric("check_transition")(dissolve, {"slide_idx": 0, "transition_type": "dissolve"}) == 1.0
    assert get_metric("check_transition")(dissolve, {"slide_idx": 0, "transition_type": "fade"}) == 0.0
    assert get_metric("check_transition")(dissolve, {"slide_idx": 9, "transition_type": "dissolve"}) == 0.0
    assert get_metric("check_transition")(None, {"slide_idx": 0, "transition_type": "dissolve"}) == 0.0
    portrait = get_metric("check_slide_orientation_Portrait")
    assert portrait(make_deck(tmp_path / "p.pptx", BASE.but(portrait=True))) == 1.0
    assert portrait(dissolve) == 0.0
    assert portrait(None) == 0.0


def test_background_distance_worked_by_hand(tmp_path):
    metric = get_metric("evaluate_presentation_fill_to_rgb_distance")
    rules = {"rgb": [0, 0, 255], "original_rgb": [255, 255, 255]}
    # every slide (20, 20, 230): sqrt(20² + 20² + 25²) = sqrt(1425) = 37.749; / sqrt(3·255²) = 441.673 -> 0.08547
    near = make_deck(tmp_path / "near.pptx", BASE.but(background=(20, 20, 230)))
    assert metric(near, rules) == pytest.approx(1 - 0.085468, abs=1e-5)
    assert metric(make_deck(tmp_path / "blue.pptx", BASE.but(background=(0, 0, 255))), rules) == 1.0
    # still the original white: the furthest, 1 per slide
    assert metric(make_deck(tmp_path / "white.pptx", BASE), rules) == 0.0
    assert metric(None, rules) == 0.0


def _master(tmp_path, colors):
    fills = "".join(f'<a:solidFill><a:srgbClr val="{c}"/></a:solidFill>' for c in colors)
    path = tmp_path / "master.pptx"
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("ppt/slideMasters/slideMaster1.xml", f"<p:sldMaster {A} xmlns:p='p'>{fills}</p:sldMaster>")
    return str(path)


def test_page_number_colour_reads_the_masters_second_to_last_colour(tmp_path):
    metric = get_metric("check_page_number_colors")
    assert metric(_master(tmp_path, ["000000", "FF0000", "FFFFFF"]), {"color": "red"}) == 1.0
    assert metric(_master(tmp_path, ["000000", "202020", "FFFFFF"]), {"color": "red"}) == 0.0
    assert metric(_master(tmp_path, ["000000", "202020", "FFFFFF"]), {"color": "black"}) == 1.0
    assert metric(_master(tmp_path, ["FF0000"]), {"color": "red"}) == 0.0
    assert metric(None, {"color": "red"}) == 0.0


def test_stretched_and_centred_picture(tmp_path):
    metric = get_metric("check_image_stretch_and_center")
    original = make_deck(tmp_path / "o.pptx", BASE.but(cover_picture=(914400, 914400, 1828800, 1371600)))
    full = make_deck(tmp_path / "f.pptx", BASE.but(cover_picture=(0, 0, 9144000, 6858000)))
    # stretched but shifted an inch right: its left is 914400 EMU from the centred 0, over half an inch
    shifted = make_deck(tmp_path / "s.pptx", BASE.but(cover_picture=(914400, 0, 9144000, 6858000)))
    assert metric(full, original) == 1.0
    assert metric(shifted, original) == 0.0
    assert metric(original, original) == 0.0   # not stretched
    assert metric(None, original) == 0.0


def _xcu(tmp_path, path, name, value):
    file = tmp_path / "registrymodifications.xcu"
    file.write_text('<oor:items xmlns:oor="http://openoffice.org/2001/registry">'
                    f'<item oor:path="{path}"><prop oor:name="{name}"><value>{value}</value></prop></item>'
                    "</oor:items>")
    return str(file)


def test_libreoffice_settings(tmp_path):
    presenter = get_metric("check_presenter_console_disable")
    start = "/org.openoffice.Office.Impress/Misc/Start"
    assert presenter(_xcu(tmp_path, start, "EnablePresenterScreen", "false")) == 1.0
    assert presenter(_xcu(tmp_path, start, "EnablePresenterScreen", "true")) == 0.0
    assert presenter(None) == 0.0
    autosave = get_metric("check_auto_saving_time")
    document = "/org.openoffice.Office.Common/Save/Document"
    assert autosave(_xcu(tmp_path, document, "AutoSaveTimeIntervall", "3"), {"minutes": 3}) == 1.0
    assert autosave(_xcu(tmp_path, document, "AutoSaveTimeIntervall", "10"), {"minutes": 3}) == 0.0
    assert autosave(_xcu(tmp_path, document, "AutoSaveTimeIntervall", "soon"), {"minutes": 3}) == 0.0


def test_left_panel_from_the_accessibility_tree():
    metric = get_metric("check_left_panel")
    assert metric('<desktop-frame><document-frame name="Slides View"/></desktop-frame>') == 1.0
    assert metric('<desktop-frame><document-frame name="Notes View"/></desktop-frame>') == 0.0
    assert metric("not xml") == 0.0


class FilesClient:
    """A controller client whose session holds only the files given."""

    def __init__(self, files):
        self.files = files

    def get_file(self, path):
        return self.files.get(path)

    def stop_agent_processes(self):
        return {"status": "success", "stopped": [], "window_owners": []}


DECK_PATH = "/home/user/Desktop/deck.pptx"


def _background_task(expected_url):
    return {"id": "47f7c0ce-a5fb-4100-a5e6-65cd0e7429e5", "instruction": "Set the frame as the background.",
            "config": [], "evaluator": {
                "func": "compare_images",
                "result": {"type": "background_image_in_slide", "ppt_file_path": DECK_PATH, "slide_index": 1,
                           "dest": "landscape.png"},
                "expected": {"type": "cloud_file", "path": expected_url, "dest": "gold_landscape.png"}}}


def test_background_image_getter_reads_the_slides_picture(tmp_path):
    deck = (tmp_path / "deck.pptx")
    make_deck(deck, BASE.but(background_picture="blue"))
    ctx = EvalContext(client=FilesClient({DECK_PATH: deck.read_bytes()}), cache=FileCache(None), task_id=None,
                      workdir=tmp_path / "work")
    config = {"type": "background_image_in_slide", "ppt_file_path": DECK_PATH, "slide_index": 1, "dest": "bg.png"}
    picture = run_getter(ctx, config)
    assert Image.open(picture).size == (64, 48) and Image.open(picture).getpixel((0, 0)) == (0, 0, 255)
    assert run_getter(ctx, dict(config, slide_index=0)) is None      # a solid background
    assert run_getter(ctx, dict(config, slide_index=9)) is None      # no such slide
    assert run_getter(ctx, dict(config, ppt_file_path="/home/user/absent.pptx")) is None
    with pytest.raises(EvaluationError, match="'slide_index' must be a number"):
        run_getter(ctx, dict(config, slide_index="second"))


def test_background_image_task_scores_with_compare_images(tmp_path):
    gold = tmp_path / "cache" / "multi_apps" / "47f7c0ce-a5fb-4100-a5e6-65cd0e7429e5" / "landscape.png"
    gold.parent.mkdir(parents=True)
    gold.write_bytes(png_bytes("blue", (64, 48)))
    task = _background_task(f"{HF_FILE_CACHE_PREFIX}multi_apps/47f7c0ce-a5fb-4100-a5e6-65cd0e7429e5/landscape.png")
    cache = FileCache(tmp_path / "cache")
    assert not_runnable_reasons(task, cache=cache, has_app=lambda _: True) == []
    scores = {}
    for color in ("blue", "red"):
        deck = tmp_path / f"{color}.pptx"
        make_deck(deck, BASE.but(background_picture=color))
        scores[color] = evaluate(FilesClient({DECK_PATH: deck.read_bytes()}), task, cache=cache,
                                 workdir=tmp_path / color)
    assert scores["blue"] == 1.0 and scores["red"] < 0.9   # compare_images gives SSIM: 0.67 for the wrong colour
    assert evaluate(FilesClient({}), task, cache=cache, workdir=tmp_path / "none") == 0.0
