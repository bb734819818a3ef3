"""The text of a PDF, laid out in lines the way OSWorld's ``compare_pdfs`` reads it.

OSWorld extracts text with PyMuPDF (``page.get_text()``, AGPL, so not a dependency here). This module reads the
glyphs with pdfminer.six (MIT) in content-stream order and groups them into lines by MuPDF's published rules
(its structured-text device), so the same document yields the same string:

* a glyph joins the current line when its direction is unchanged, it sits less than 0.8 font sizes off the
  line's baseline and its start lies between 0.8 font sizes before and 0.8 font sizes after the end of the
  previous glyph (the pen); otherwise (a new table column, a new line, a rotation) it starts a new line;
* a forward gap of at least 0.15 font sizes inserts one space, unless the previous character is a space or
  outside the scripts MuPDF adds spaces for;
* the same character drawn again within 0.1 font sizes of the pen (fake bold) is dropped;
* an image between glyphs ends the line; glyphs wholly outside the page's media box are skipped;
* whitespace characters are kept as they are; the Latin ligatures U+FB00-FB06 are spelled out (where a font
  maps a ligature glyph only by its name, pdfminer reports the ligature and MuPDF its letters); a glyph without
  a Unicode mapping gives the character of its CID.

Every line ends with a newline; the pages are joined and the whole text is stripped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from pdfminer.pdfdevice import PDFTextDevice
from pdfminer.pdffont import PDFUnicodeNotDefined
from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
from pdfminer.pdfpage import PDFPage

__all__ = ["pdf_text"]

SPACE_GAP = 0.15
"""A forward gap (in font sizes) from which a space is inserted."""
MAX_IN_LINE_GAP = 0.8
"""The largest move along the baseline (in font sizes, either way) that stays on the same line."""
MAX_BASELINE_SHIFT = 0.8
"""The largest move across the baseline (in font sizes) that stays on the same line."""
FAKE_BOLD_DISTANCE = 0.1
"""A repeated character ending within this distance (in font sizes) of the pen is an overprint, not text."""


_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
              "\ufb06": "st"}


def _spaceable(char: str) -> bool:
    """Whether a space may follow ``char`` (Latin, Greek, Cyrillic, Hebrew, Arabic, punctuation, currency)."""
    code = ord(char[-1]) if char else 0
    return char != " " and (code < 0x700 or 0x2000 <= code <= 0x20CF)


@dataclass
class _Pen:
    """Where the previous glyph ended, its direction and character, and the lines so far."""

    lines: list[list[str]] = field(default_factory=list)
    end: tuple[float, float] | None = None
    direction: tuple[float, float] | None = None
    last: str = ""

    def add(self, text: str, start: tuple[float, float], end: tuple[float, float], direction: tuple[float, float],
            size: float) -> None:
        new_line, space = True, False
        if self.end is not None and self.direction is not None and size > 0 and \
                direction[0] * self.direction[0] + direction[1] * self.direction[1] >= 0.999:
            if text == self.last and math.hypot(end[0] - self.end[0], end[1] - self.end[1]) / size < FAKE_BOLD_DISTANCE:
                return
            dx, dy = start[0] - self.end[0], start[1] - self.end[1]
            along = (direction[0] * dx + direction[1] * dy) / size
            across = (-direction[1] * dx + direction[0] * dy) / size
            if abs(across) < MAX_BASELINE_SHIFT:
                if abs(along) < SPACE_GAP or -MAX_IN_LINE_GAP < along < 0:
                    new_line = False
                elif 0 < along < MAX_IN_LINE_GAP:
                    new_line, space = False, _spaceable(self.last)
        if new_line or not self.lines:
            self.lines.append([])
        if space:
            self.lines[-1].append(" ")
        self.lines[-1].append(text)
        self.end, self.direction, self.last = end, direction, text

    def break_line(self) -> None:
        """Make the next glyph start a new line (an image came between)."""
        self.end = self.direction = None


class _LineDevice(PDFTextDevice):
    """A pdfminer device that feeds every glyph, in content order, to a :class:`_Pen`."""

    def __init__(self, resources: PDFResourceManager) -> None:
        super().__init__(resources)
        self.pen = _Pen()
        self.box = (-math.inf, -math.inf, math.inf, math.inf)

    def begin_page(self, page, ctm) -> None:
        x0, y0, x1, y1 = page.mediabox
        corners = [(ctm[0] * x + ctm[2] * y + ctm[4], ctm[1] * x + ctm[3] * y + ctm[5])
                   for x, y in ((x0, y0), (x1, y1))]
        self.box = (min(c[0] for c in corners), min(c[1] for c in corners),
                    max(c[0] for c in corners), max(c[1] for c in corners))
        self.pen.break_line()

    def render_image(self, name, stream) -> None:
        self.pen.break_line()

    def render_char(self, matrix, font, fontsize, scaling, rise, cid, ncs, graphicstate) -> float:
        try:
            text = font.to_unichr(cid)
        except PDFUnicodeNotDefined:
            text = chr(cid) if 0 <= cid < 0x110000 else "\ufffd"
        text = _LIGATURES.get(text, text)
        advance = font.char_width(cid) * fontsize * scaling
        a, b, c, d, e, f = matrix
        start = (e + rise * c, f + rise * d)
        end = (start[0] + advance * a, start[1] + advance * b)
        norm = math.hypot(a, b)
        size = abs(fontsize) * math.sqrt(abs(scaling * (a * d - b * c)))
        if norm > 0 and text and self._on_page(start, end, (c * size, d * size)):
            self.pen.add(text, start, end, (a / norm, b / norm), size)
        return advance

    def _on_page(self, start, end, up) -> bool:
        xs = (start[0], end[0], start[0] + up[0], end[0] + up[0])
        ys = (start[1], end[1], start[1] + up[1], end[1] + up[1])
        x0, y0, x1, y1 = self.box
        return not (max(xs) < x0 or min(xs) > x1 or max(ys) < y0 or min(ys) > y1)


def pdf_text(path: str | Path) -> str:
    """The text of the PDF at ``path``, one line per MuPDF text line (raises for a file that is not a PDF)."""
    resources = PDFResourceManager()
    device = _LineDevice(resources)
    interpreter = PDFPageInterpreter(resources, device)
    with open(path, "rb") as handle:
        for page in PDFPage.get_pages(handle):
            interpreter.process_page(page)
    return "".join("".join(line) + "\n" for line in device.pen.lines).strip()
