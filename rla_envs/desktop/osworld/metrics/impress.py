"""OSWorld's single-purpose Impress metrics: one property of a deck, of LibreOffice's settings, or of the window.

Deck properties (python-pptx or the package XML): ``check_transition``, ``check_slide_orientation_Portrait``,
``evaluate_presentation_fill_to_rgb_distance``, ``check_page_number_colors``, ``check_image_stretch_and_center``.
LibreOffice settings (``registrymodifications.xcu``): ``check_presenter_console_disable``,
``check_auto_saving_time``. The window: ``check_left_panel`` (the accessibility tree).

A result that is missing or unreadable scores 0; an unreadable reference deck is an
:class:`~rla_envs.desktop.osworld.errors.EvaluationError`.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.osworld.metrics.slides import load_presentation

__all__ = ["check_transition", "check_slide_orientation_Portrait", "evaluate_presentation_fill_to_rgb_distance",
           "check_page_number_colors", "check_image_stretch_and_center", "check_presenter_console_disable",
           "check_auto_saving_time", "check_left_panel", "registry_values"]

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_OOR = "{http://openoffice.org/2001/registry}"
_PICTURE, _SOLID_FILL, _BACKGROUND_FILL = 13, 1, 5
_HALF_INCH = 457200  # EMU
_WHITE_DISTANCE = math.sqrt(3 * 255**2)  # the largest distance between two RGB colours


def _read_part(path: str | None, name: str) -> bytes | None:
    """The bytes of ``name`` inside the .pptx package at ``path``; None when either is missing or unreadable."""
    if not path:
        return None
    try:
        with zipfile.ZipFile(path) as package:
            return package.read(name)
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def _parse(data: bytes | None):
    try:
        return ET.fromstring(data) if data is not None else None
    except ET.ParseError:
        return None


def check_transition(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when slide ``rules["slide_idx"]`` (from 0) has a transition of kind ``rules["transition_type"]``.

    The first ``<p:transition>`` of the slide's XML counts (LibreOffice writes its own one before the fallback).
    """
    root = _parse(_read_part(result, f"ppt/slides/slide{rules['slide_idx'] + 1}.xml"))
    transition = root.find(f".//{_P}transition") if root is not None else None
    return float(transition is not None and transition.find(f".//{_P}{rules['transition_type']}") is not None)


def check_slide_orientation_Portrait(result: str | None, *args: Any, **options: Any) -> float:  # noqa: N802
    """1 when the deck's slides are taller than wide."""
    deck = load_presentation(result, expected=False)
    return float(deck is not None and deck.slide_width < deck.slide_height)


def _fill_rgb(fill):
    """The sRGB colour of a solid fill, else None."""
    from pptx.enum.dml import MSO_COLOR_TYPE

    return fill.fore_color.rgb if fill.fore_color.type == MSO_COLOR_TYPE.RGB else None


def _background_distance(slide, target, original) -> float:
    """How far the slide's background is from ``target`` (0 to 1); 1 when it is not a solid colour, or is still
    ``original``."""
    fill = slide.background.fill
    if fill.type == _BACKGROUND_FILL:
        fill = slide.slide_layout.slide_master.background.fill
    if fill.type != _SOLID_FILL:
        return 1
    rgb = _fill_rgb(fill)
    if rgb is None or (original is not None and tuple(rgb) == tuple(original)):
        return 1
    return math.sqrt(sum((a - b) ** 2 for a, b in zip(rgb, target))) / _WHITE_DISTANCE


def evaluate_presentation_fill_to_rgb_distance(result: str | None, rules: Mapping[str, Any],
                                               **options: Any) -> float:
    """1 minus the slides' mean distance from background ``rules["rgb"]`` (a slide left at ``original_rgb`` is
    furthest)."""
    deck = load_presentation(result, expected=False)
    if deck is None or not len(deck.slides):
        return 0.0
    target, original = rules["rgb"], rules.get("original_rgb")
    return 1 - sum(_background_distance(slide, target, original) for slide in deck.slides) / len(deck.slides)


def _channels(value: str) -> tuple[int, int, int]:
    """OSWorld's reading of a colour value: characters 1-2, 3-4 and 5 (it expects a leading '#' the XML has not)."""
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


_COLOR_TESTS = {
    "red": lambda r, g, b: r > g + 50 and r > b + 50,
    "green": lambda r, g, b: g > r + 50 and g > b + 50,
    "blue": lambda r, g, b: b > g + 50 and b > r + 50,
    "black": lambda r, g, b: r < 50 and g < 50 and b < 50,
}


def check_page_number_colors(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the slide number colour of the first master (its second-to-last solid sRGB colour, as OSWorld
    takes it) is ``rules["color"]`` (red, green, blue or black; any other name passes)."""
    root = _parse(_read_part(result, "ppt/slideMasters/slideMaster1.xml"))
    if root is None:
        return 0.0
    colors = [c for fill in root.iter(f"{_A}solidFill") for c in fill.iter(f"{_A}srgbClr")]
    if len(colors) < 2 or colors[-2].get("val") is None:
        return 0.0
    test = _COLOR_TESTS.get(rules["color"])
    return float(test is None or test(*_channels(colors[-2].get("val"))))


def check_image_stretch_and_center(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the first picture of the reference's first slide fills the result's first slide, centred (each edge
    within half an inch)."""
    ours = load_presentation(result, expected=False)
    if ours is None or not len(ours.slides):
        return 0.0
    original = load_presentation(expected, expected=True)
    pictures = [s for s in original.slides[0].shapes if s.shape_type == _PICTURE]
    if not pictures:
        return 0.0
    blob = pictures[0].image.blob
    same = [s for s in ours.slides[0].shapes if s.shape_type == _PICTURE and s.image.blob == blob]
    if not same:
        return 0.0
    picture, width, height = same[-1], original.slide_width, original.slide_height
    return float(abs(picture.width - width) <= _HALF_INCH and abs(picture.height - height) <= _HALF_INCH
                 and abs(picture.left - (width - picture.width) / 2) <= _HALF_INCH
                 and abs(picture.top - (height - picture.height) / 2) <= _HALF_INCH)


def registry_values(path: str | None, item_path: str, name: str) -> list[str | None]:
    """The ``<value>`` texts of every property ``name`` under an item ``item_path`` of a LibreOffice
    ``registrymodifications.xcu``, in file order (None for a property without one); empty when the file is
    missing or unreadable."""
    if not path:
        return []
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    values = []
    for item in root.iter("item"):
        if item.get(f"{_OOR}path") == item_path:
            for prop in item.iter("prop"):
                if prop.get(f"{_OOR}name") == name:
                    value = prop.find(".//value")
                    values.append(value.text if value is not None else None)
    return values


def check_presenter_console_disable(result: str | None, *args: Any, **options: Any) -> float:
    """1 when LibreOffice's settings turn Impress's presenter console off (the first ``EnablePresenterScreen`` is
    false)."""
    values = registry_values(result, "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen")
    return float(bool(values) and values[0] is not None and values[0].lower() == "false")


def check_auto_saving_time(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when LibreOffice's settings save automatically every ``rules["minutes"]`` minutes (the last setting in
    the file counts, as in OSWorld)."""
    values = registry_values(result, "/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall")
    try:
        return float(bool(values) and values[-1] is not None and int(values[-1]) == rules["minutes"])
    except ValueError:
        return 0.0


def check_left_panel(result: str | None, *args: Any, **options: Any) -> float:
    """1 when the accessibility tree shows Impress's slide panel (a document frame named "Slides View")."""
    root = _parse(result.encode() if isinstance(result, str) else None)
    return float(root is not None and any(frame.get("name") == "Slides View" for frame in root.iter("document-frame")))
