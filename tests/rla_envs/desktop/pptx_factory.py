"""PowerPoint files made for the slides tests: one base deck, and variants that change one thing at a time.

``make_deck(path, **changes)`` writes a three-slide deck (python-pptx) whose every property the slide metrics read
comes from :class:`Deck`'s fields; a variant passes the fields it changes. Things python-pptx has no API for
(strike-through, bullet characters, transitions) are written into the XML through the shapes' public
``element``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field, replace

from lxml import etree
from PIL import Image
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.shapes import MSO_SHAPE
from pptx.enum.text import PP_ALIGN
from pptx.oxml.ns import nsmap, qn
from pptx.util import Emu, Inches, Pt

__all__ = ["Deck", "make_deck", "png_bytes"]

NAMESPACES = nsmap("a", "p", "r")


@dataclass(frozen=True)
class Deck:
    """Every property of the generated deck that a metric reads."""

    slide_count: int = 3
    title: str = "Quarterly review"
    body: tuple[tuple[str, int], ...] = (("Revenue grew", 0), ("Costs fell", 1))
    font_name: str | None = "Arial"
    font_size: int | None = 20
    bold: bool | None = True
    italic: bool | None = None
    underline: object = None
    color: tuple[int, int, int] | None = (0x11, 0x22, 0x33)
    strike: str | None = None
    alignment: object = None
    bullet: str | None = None
    second_run: str | None = " and more"
    notes: str = "Speak slowly"
    background: tuple[int, int, int] | None = (0xFF, 0xFF, 0xFF)
    box: tuple[int, int, int, int] = (914400, 1828800, 3657600, 914400)
    rectangle: tuple[int, int, int, int] = (5029200, 1828800, 1828800, 914400)
    picture: tuple[int, int, int, int] = (914400, 3200400, 1828800, 1371600)
    picture_color: str = "red"
    table_cells: tuple[tuple[str, str], ...] = (("Item", "Price"), ("Tea", "3"))
    table_top: int = 1828800
    table_bold: bool | None = None
    table_color: tuple[int, int, int] | None = None
    group_text: str = "grouped"
    group_alignment: object = None
    extra_shape: bool = False
    portrait: bool = False
    transition: str | None = None
    cover_picture: tuple[int, int, int, int] | None = None
    """A picture (colour ``cover_color``) on the first slide, at this box."""
    cover_color: str = "green"
    background_picture: str | None = None
    """A one-colour picture (this colour) as the background of the second slide."""
    slide_size: tuple[int, int] = field(default=(9144000, 6858000))

    def but(self, **changes) -> Deck:
        """This deck with ``changes``."""
        return replace(self, **changes)


def png_bytes(color: str, size: tuple[int, int] = (40, 30)) -> bytes:
    """A small one-colour PNG."""
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def _style_run(run, deck: Deck) -> None:
    font = run.font
    font.name, font.bold, font.italic, font.underline = deck.font_name, deck.bold, deck.italic, deck.underline
    if deck.font_size is not None:
        font.size = Pt(deck.font_size)
    if deck.color is not None:
        font.color.rgb = RGBColor(*deck.color)


def _strike_runs(shape, kind: str) -> None:
    for properties in shape.element.iter(qn("a:rPr")):
        properties.set("strike", kind)


def _add_bullets(shape, char: str) -> None:
    for paragraph in shape.element.iter(qn("a:p")):
        properties = paragraph.find(qn("a:pPr"))
        if properties is None:
            properties = paragraph.makeelement(qn("a:pPr"), {})
            paragraph.insert(0, properties)
        bullet = properties.makeelement(qn("a:buChar"), {"char": char})
        properties.append(bullet)


def _text_slide(prs, deck: Deck) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    slide.shapes.title.text = deck.title
    box = slide.shapes.add_textbox(*(Emu(v) for v in deck.box))
    frame = box.text_frame
    for index, (text, level) in enumerate(deck.body):
        paragraph = frame.paragraphs[0] if index == 0 else frame.add_paragraph()
        paragraph.level = level
        if deck.alignment is not None:
            paragraph.alignment = deck.alignment
        _style_run(paragraph.add_run(), deck)
        paragraph.runs[0].text = text
        if deck.second_run is not None and index == 0:
            paragraph.add_run().text = deck.second_run
    if deck.strike:
        _strike_runs(box, deck.strike)
    if deck.bullet:
        _add_bullets(box, deck.bullet)
    if deck.notes:
        slide.notes_slide.notes_text_frame.text = deck.notes
    if deck.cover_picture is not None:
        slide.shapes.add_picture(io.BytesIO(png_bytes(deck.cover_color)), *(Emu(v) for v in deck.cover_picture))
    if deck.transition:
        transition = slide.element.makeelement(qn("p:transition"), {})
        transition.append(transition.makeelement(qn(f"p:{deck.transition}"), {}))
        slide.element.insert(2, transition)


def _picture_slide(prs, deck: Deck) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[6])  # blank
    slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, *(Emu(v) for v in deck.rectangle))
    slide.shapes.add_picture(io.BytesIO(png_bytes(deck.picture_color)), *(Emu(v) for v in deck.picture))
    if deck.extra_shape:
        slide.shapes.add_textbox(Inches(6), Inches(5), Inches(2), Inches(1)).text_frame.text = "extra"


def _set_background_picture(slide, color: str) -> None:
    """Give the slide a picture background (``<p:bg><p:bgPr><a:blipFill>``), which python-pptx cannot write."""
    _, rel_id = slide.part.get_or_add_image_part(io.BytesIO(png_bytes(color, (64, 48))))
    background = etree.fromstring(
        f'<p:bg xmlns:p="{NAMESPACES["p"]}" xmlns:a="{NAMESPACES["a"]}" xmlns:r="{NAMESPACES["r"]}"><p:bgPr>'
        f'<a:blipFill><a:blip r:embed="{rel_id}"/><a:stretch><a:fillRect/></a:stretch></a:blipFill>'
        "<a:effectLst/></p:bgPr></p:bg>")
    common = slide.element.find(qn("p:cSld"))
    for old in common.findall(qn("p:bg")):
        common.remove(old)
    common.insert(0, background)


def _table_slide(prs, deck: Deck) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    rows, columns = len(deck.table_cells), len(deck.table_cells[0])
    table = slide.shapes.add_table(rows, columns, Inches(1), Emu(deck.table_top), Inches(4), Inches(1)).table
    for r, row in enumerate(deck.table_cells):
        for c, text in enumerate(row):
            cell = table.cell(r, c)
            cell.text = text
            font = cell.text_frame.paragraphs[0].runs[0].font
            font.bold = deck.table_bold
            if deck.table_color is not None:
                font.color.rgb = RGBColor(*deck.table_color)
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(6), Inches(4), Inches(2), Inches(1))
    inner.text_frame.text = deck.group_text
    if deck.group_alignment is not None:
        inner.text_frame.paragraphs[0].alignment = deck.group_alignment


def make_deck(path, deck: Deck = Deck()) -> str:
    """Write ``deck`` as a .pptx at ``path`` and return the path as a string."""
    prs = Presentation()
    width, height = deck.slide_size
    prs.slide_width, prs.slide_height = (Emu(height), Emu(width)) if deck.portrait else (Emu(width), Emu(height))
    builders = (_text_slide, _picture_slide, _table_slide)
    for index in range(deck.slide_count):
        builders[index % len(builders)](prs, deck)
        if deck.background is not None:
            fill = prs.slides[index].background.fill
            fill.solid()
            fill.fore_color.rgb = RGBColor(*deck.background)
        if deck.background_picture and index == 1:
            _set_background_picture(prs.slides[index], deck.background_picture)
    prs.save(str(path))
    return str(path)


CENTER = PP_ALIGN.CENTER
LEFT = PP_ALIGN.LEFT
