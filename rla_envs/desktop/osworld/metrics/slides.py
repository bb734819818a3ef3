"""``compare_pptx_files``: OSWorld's structural comparison of two PowerPoint files (python-pptx).

The result matches the reference when every check the options leave on passes, slide by slide and shape by shape
(zipped in order): slide count, background colour, notes, shape count, geometry (``examine_shape`` and the
task-specific position checks), tables, text, paragraph alignment and level, runs (font name, size, bold, italic,
colour, underline, strike-through) and the slide's bullets. Every check reads the files the way OSWorld's does,
quirks included (documented where they happen), so the two agree score for score.

A result file that is missing or not a readable ``.pptx`` scores 0; a reference file that cannot be read is an
:class:`~rla_envs.desktop.osworld.errors.EvaluationError`. Where OSWorld's function crashes on a malformed result
(a table replaced by another kind of shape) this one scores 0.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["compare_pptx_files", "load_presentation", "unsupported_pptx_options", "PptxChecks", "text_shapes",
           "slide_bullets", "IGNORED_OPTIONS"]

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"

# python-pptx's MSO_SHAPE_TYPE and MSO_FILL values, as OSWorld compares them
_FREEFORM, _PICTURE, _TABLE = 5, 13, 19
_SOLID_FILL, _BACKGROUND_FILL = 1, 5


@dataclass(frozen=True)
class PptxChecks:
    """Which checks ``compare_pptx_files`` runs: one field per OSWorld option, with OSWorld's default."""

    examine_number_of_slides: bool = True
    examine_shape: bool = True
    examine_text: bool = True
    examine_indent: bool = True
    examine_font_name: bool = True
    examine_font_size: bool = True
    examine_font_bold: bool = True
    examine_font_italic: bool = True
    examine_color_rgb: bool = True
    examine_font_underline: bool = True
    examine_strike_through: bool = True
    examine_alignment: bool = True
    examine_bullets: bool = True
    examine_background_color: bool = True
    examine_note: bool = True
    examine_title_bottom_position: bool = False
    """The shape titled "Product Comparison" must sit lower than the reference's, below 3600000 EMU."""
    examine_table_bottom_position: bool = False
    """The table on slide 3 must sit lower than the reference's, below 3600000 EMU."""
    examine_right_position: bool = False
    """A text-less shape on slide 2 must sit further right than the reference's, right of 4320000 EMU."""
    examine_top_position: bool = False
    """A picture on slide 2 must sit higher than the reference's, above 1980000 EMU."""
    examine_shape_for_shift_size: bool = False
    """Geometry must match except for the placeholder "Elaborate on what you want to discuss."."""
    examine_image_size: bool = False
    """Pictures must have the reference's size; other shapes its geometry."""
    examine_modify_height: bool = False
    """Text-less shapes and freeforms must have the reference's height; other shapes its geometry."""
    approximately_tolerance: float = 0.005
    """The relative difference under which two lengths count as equal."""

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> PptxChecks:
        """The checks a task's options ask for (``enable_debug`` and ``_``-prefixed notes are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in options.items() if name in known})


IGNORED_OPTIONS = frozenset({"enable_debug"})
"""Options OSWorld reads that do not change a score (its debug logging)."""


def unsupported_pptx_options(options: Any) -> list[str]:
    """The option names of a ``compare_pptx_files`` call that this implementation does not know."""
    if not isinstance(options, Mapping):
        return []
    known = {f.name for f in fields(PptxChecks)} | IGNORED_OPTIONS
    return [name for name in options if name not in known and not str(name).startswith("_")]


def load_presentation(path: str | None, *, expected: bool):
    """The python-pptx Presentation at ``path``; None for a bad result file, an error for a bad reference."""
    from pptx import Presentation

    if not path:
        if expected:
            raise EvaluationError("the reference .pptx file is missing")
        return None
    try:
        return Presentation(path)
    except Exception as exc:  # python-pptx raises several unrelated types for a broken package
        if expected:
            raise EvaluationError(f"the reference file {path} is not a readable .pptx: {exc}") from exc
        return None


def compare_pptx_files(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the result presentation matches the reference in everything the options examine, else 0."""
    ours = load_presentation(result, expected=False)
    if ours is None:
        return 0.0
    gold = load_presentation(expected, expected=True)
    checks = PptxChecks.from_options(options)
    if checks.examine_number_of_slides and len(ours.slides) != len(gold.slides):
        return 0.0
    return float(all(_slides_match(number, a, b, checks)
                     for number, (a, b) in enumerate(zip(ours.slides, gold.slides), start=1)))


def _slides_match(number: int, slide_a, slide_b, checks: PptxChecks) -> bool:
    if checks.examine_background_color and _background_rgb(slide_a) != _background_rgb(slide_b):
        return False
    if checks.examine_note and _notes(slide_a).strip() != _notes(slide_b).strip():
        return False
    texts_a, texts_b = text_shapes(slide_a.shapes), text_shapes(slide_b.shapes)
    if len(slide_a.shapes) != len(slide_b.shapes):
        return False
    bullets = _SlideBullets(slide_a.part, slide_b.part) if checks.examine_bullets else None
    for shape_a, shape_b in zip(slide_a.shapes, slide_b.shapes):
        if not _geometry_matches(number, shape_a, shape_b, checks):
            return False
        if shape_a.shape_type == _TABLE and not _tables_match(shape_a, shape_b, checks):
            return False
        if _has_text(shape_a) and _has_text(shape_b) and not _text_matches(shape_a, shape_b, checks, bullets):
            return False
    if len(texts_a) != len(texts_b):
        return False
    return not checks.examine_alignment or all(_alignment_matches(a, b, checks) for a, b in zip(texts_a, texts_b))


def _background_rgb(slide):
    """The slide's solid background colour (its master's when it has none of its own), else None.

    A solid fill in a theme colour raises AttributeError, as in OSWorld (it only ever reads sRGB colours).
    """
    fill = slide.background.fill
    if fill.type == _BACKGROUND_FILL:
        fill = slide.slide_layout.slide_master.background.fill
    return fill.fore_color.rgb if fill.type == _SOLID_FILL else None


def _notes(slide) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return frame.text if frame is not None else ""


def _has_text(shape) -> bool:
    """Whether python-pptx gives the shape a text frame (auto shapes, text boxes, placeholders)."""
    return hasattr(shape, "text") and hasattr(shape, "text_frame")


def text_shapes(shapes: Iterable) -> list:
    """The shapes with a text frame, in order, those inside groups included (depth first)."""
    found = []
    for shape in shapes:
        if _has_text(shape):
            found.append(shape)
        if hasattr(shape, "shapes"):
            found += text_shapes(shape.shapes)
    return found


def _close(a, b, tolerance: float) -> bool:
    """Equal, or within ``tolerance`` relative difference (a zero only equals a zero)."""
    if a == b:
        return True
    if a == 0 or b == 0:
        return False
    return abs(a - b) / max(abs(a), abs(b)) <= tolerance


def _same_box(a, b, checks: PptxChecks) -> bool:
    tolerance = checks.approximately_tolerance
    return all(_close(getattr(a, side), getattr(b, side), tolerance) for side in ("left", "top", "width", "height"))


def _geometry_matches(number: int, a, b, checks: PptxChecks) -> bool:
    """The position and size checks; ``a`` is the result's shape, ``b`` the reference's, on slide ``number``."""
    text_a, text_b = hasattr(a, "text"), hasattr(b, "text")
    if checks.examine_title_bottom_position:
        if text_a and text_b and a.text == b.text:
            if a.text == "Product Comparison" and (a.top <= b.top or a.top < 3600000):
                return False
        elif not _same_box(a, b, checks):
            return False
    if checks.examine_table_bottom_position:
        if number == 3 and a.shape_type == _TABLE and b.shape_type == _TABLE:
            if a.top <= b.top or a.top < 3600000:
                return False
        elif not _same_box(a, b, checks):
            return False
    if checks.examine_right_position and number == 2 and not text_a and not text_b:
        if a.left <= b.left or a.left < 4320000:
            return False
    if checks.examine_top_position and number == 2 and a.shape_type == _PICTURE and b.shape_type == _PICTURE:
        if a.top >= b.top or a.top > 1980000:
            return False
    if checks.examine_shape_for_shift_size and not _same_box(a, b, checks):
        placeholder = "Elaborate on what you want to discuss."
        if not (text_a and text_b and a.text == b.text == placeholder):
            return False
    if checks.examine_shape and not _same_box(a, b, checks):
        return False
    if checks.examine_image_size:
        if a.shape_type == _PICTURE and b.shape_type == _PICTURE:
            tolerance = checks.approximately_tolerance
            if not (_close(a.width, b.width, tolerance) and _close(a.height, b.height, tolerance)):
                return False
        elif not _same_box(a, b, checks):
            return False
    if checks.examine_modify_height:
        if (not text_a and not text_b) or (a.shape_type == _FREEFORM and b.shape_type == _FREEFORM):
            if not _close(a.height, b.height, checks.approximately_tolerance):
                return False
        elif not _same_box(a, b, checks):
            return False
    return True


def _flag_differs(a: bool | None, b: bool | None) -> bool:
    """Bold or italic differ (unset and False both mean off)."""
    return bool(a) != bool(b)


def _underline_differs(a: Any, b: Any) -> bool:
    """OSWorld's underline rule: set values must be equal, and unset only matches anything but single (True)."""
    if a == b:
        return False
    return (a is not None and b is not None) or True in (a, b)


def _rgb(color):
    """The sRGB value of a python-pptx colour, None for theme, system or no colour."""
    from pptx.enum.dml import MSO_COLOR_TYPE

    return color.rgb if color.type == MSO_COLOR_TYPE.RGB else None


def _colors_differ(font_a, font_b) -> bool:
    """Both fonts have an sRGB colour and they differ (a theme colour on either side is not compared)."""
    rgb_a, rgb_b = _rgb(font_a.color), _rgb(font_b.color)
    return rgb_a is not None and rgb_b is not None and rgb_a != rgb_b


def _tables_match(a, b, checks: PptxChecks) -> bool:
    """Cells' paragraph and run counts and run formatting (OSWorld compares no cell text, and always bold,
    italic and underline whatever the options)."""
    if b.shape_type != _TABLE:
        return False
    table_a, table_b = a.table, b.table
    if len(table_a.rows) != len(table_b.rows) or len(table_a.columns) != len(table_b.columns):
        return False
    for row in range(len(table_a.rows)):
        for column in range(len(table_a.columns)):
            paragraphs_a = table_a.cell(row, column).text_frame.paragraphs
            paragraphs_b = table_b.cell(row, column).text_frame.paragraphs
            if len(paragraphs_a) != len(paragraphs_b):
                return False
            for para_a, para_b in zip(paragraphs_a, paragraphs_b):
                if len(para_a.runs) != len(para_b.runs):
                    return False
                for run_a, run_b in zip(para_a.runs, para_b.runs):
                    font_a, font_b = run_a.font, run_b.font
                    if ((checks.examine_color_rgb and _colors_differ(font_a, font_b))
                            or _flag_differs(font_a.bold, font_b.bold) or _flag_differs(font_a.italic, font_b.italic)
                            or _underline_differs(font_a.underline, font_b.underline)):
                        return False
    return True


def _alignment(paragraph):
    from pptx.enum.text import PP_ALIGN

    return paragraph.alignment if paragraph.alignment is not None else PP_ALIGN.LEFT


def _text_matches(a, b, checks: PptxChecks, bullets: _SlideBullets | None) -> bool:
    """Text, paragraphs and runs of two text shapes, and (at the first run) the slide's bullets."""
    if checks.examine_text and a.text.strip() != b.text.strip():
        return False
    paragraphs_a, paragraphs_b = a.text_frame.paragraphs, b.text_frame.paragraphs
    if len(paragraphs_a) != len(paragraphs_b):
        return False
    strikes_a, strikes_b = _strikes(a), _strikes(b)
    for index, (para_a, para_b) in enumerate(zip(paragraphs_a, paragraphs_b)):
        if checks.examine_alignment and _alignment(para_a) != _alignment(para_b):
            return False
        if checks.examine_text and para_a.text != para_b.text:
            return False
        # reading the level gives the paragraph a <a:pPr> (python-pptx adds one), which the bullets then see
        levels_differ = para_a.level != para_b.level
        if checks.examine_indent and levels_differ:
            return False
        if len(para_a.runs) != len(para_b.runs):
            return False
        runs = list(zip(para_a.runs, para_b.runs, strikes_a[index], strikes_b[index]))
        if not all(_runs_match(*run, checks) for run in runs):
            return False
        if runs and bullets is not None and not bullets.match():
            return False
    return True


def _runs_match(run_a, run_b, strike_a: str, strike_b: str, checks: PptxChecks) -> bool:
    font_a, font_b = run_a.font, run_b.font
    return not ((checks.examine_font_name and font_a.name != font_b.name)
                or (checks.examine_font_size and font_a.size != font_b.size)
                or (checks.examine_font_bold and _flag_differs(font_a.bold, font_b.bold))
                or (checks.examine_font_italic and _flag_differs(font_a.italic, font_b.italic))
                or (checks.examine_color_rgb and _colors_differ(font_a, font_b))
                or (checks.examine_font_underline and _underline_differs(font_a.underline, font_b.underline))
                or (checks.examine_strike_through and strike_a != strike_b))


def _strikes(shape) -> list[list[str]]:
    """Each paragraph's runs' strike-through kind (``noStrike`` when unset), read from the shape's XML."""
    body = shape.element.find(f"{_P}txBody")
    if body is None:
        return []
    return [[_strike_of(run) for run in paragraph.findall(f"{_A}r")] for paragraph in body.findall(f"{_A}p")]


def _strike_of(run) -> str:
    properties = run.find(f"{_A}rPr")
    return properties.get("strike", "noStrike") if properties is not None else "noStrike"


class _SlideBullets:
    """OSWorld's bullet check of a slide pair: the non-empty paragraphs' level, bullet character and text.

    The slides' XML is read afresh at each check, as OSWorld does, so it sees the ``<a:pPr>`` python-pptx added to
    the paragraphs compared so far. A slide whose XML has an empty ``<a:t/>`` is not checked (OSWorld's parser
    fails on it and skips the check).
    """

    def __init__(self, part_a, part_b) -> None:
        self._parts = (part_a, part_b)

    def match(self) -> bool:
        bullets_a, bullets_b = (slide_bullets(part.blob) for part in self._parts)
        if bullets_a is None or bullets_b is None:
            return True
        return len(bullets_a) == len(bullets_b) and all(
            text_a == text_b and char_a == char_b and level_a == level_b
            for (level_a, char_a, text_a), (level_b, char_b, text_b) in zip(bullets_a, bullets_b))


def slide_bullets(xml: bytes) -> list[tuple[str, str, str]] | None:
    """(level, bullet character, text) of every paragraph with text in a slide's XML; None when unreadable.

    The level is the paragraph's ``lvl`` ("0" when its ``<a:pPr>`` has none, "No Level" without ``<a:pPr>``) and the
    character "No Bullet" without ``<a:buChar>``, as OSWorld labels them.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return None
    found = []
    for paragraph in root.iter(f"{_A}p"):
        texts = [t.text for t in paragraph.iter(f"{_A}t")]
        if None in texts:
            return None
        text = "".join(texts)
        if not text.strip():
            continue
        properties = paragraph.find(f"{_A}pPr")
        if properties is None:
            found.append(("No Level", "No Bullet", text))
            continue
        char = properties.find(f"{_A}buChar")
        found.append((properties.get("lvl", "0"), char.get("char") if char is not None else "No Bullet", text))
    return found


def _alignment_matches(a, b, checks: PptxChecks) -> bool:
    """OSWorld's closing pass over all text shapes (groups included): text, paragraph count, alignment."""
    if checks.examine_text and a.text.strip() != b.text.strip():
        return False
    paragraphs_a, paragraphs_b = a.text_frame.paragraphs, b.text_frame.paragraphs
    return len(paragraphs_a) == len(paragraphs_b) and all(
        _alignment(x) == _alignment(y) for x, y in zip(paragraphs_a, paragraphs_b))
