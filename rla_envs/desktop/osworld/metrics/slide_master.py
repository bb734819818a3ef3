"""Metrics over a presentation's first slide master (``ppt/slideMasters/slideMaster1.xml``):
``check_page_number_colors``.

A result file that is missing, not a .pptx, or without the colours OSWorld reads scores 0 (OSWorld raises on it).
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["check_page_number_colors", "COLOUR_TESTS"]

_MASTER = "ppt/slideMasters/slideMaster1.xml"
_NAMESPACES = {"a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
_MARGIN = 50
"""How far (0-255) the dominant channel must exceed the others, or every channel stay below for black."""

COLOUR_TESTS: dict[str, Callable[[int, int, int], bool]] = {
    "red": lambda r, g, b: r > g + _MARGIN and r > b + _MARGIN,
    "green": lambda r, g, b: g > r + _MARGIN and g > b + _MARGIN,
    "blue": lambda r, g, b: b > g + _MARGIN and b > r + _MARGIN,
    "black": lambda r, g, b: r < _MARGIN and g < _MARGIN and b < _MARGIN,
}
"""Colour names a rule may ask for -> whether an RGB triple is that colour; any other name accepts every colour."""


def _page_number_colour(path: str) -> tuple[int, int, int] | None:
    """The "RGB" OSWorld reads from the slide master's next-to-last solid fill (where LibreOffice puts the
    slide-number field's colour).

    OSWorld expects ``#RRGGBB`` but the file holds ``RRGGBB``: it reads hex digits 2-3, 4-5 and 6 alone, so
    ``FF0000`` gives (0xF0, 0x00, 0x0) and ``0000FF`` (0x00, 0x0F, 0xF). Scores must match OSWorld's, so this
    reads them the same way.
    """
    try:
        with zipfile.ZipFile(path) as archive, archive.open(_MASTER) as master:
            root = ElementTree.parse(master).getroot()
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError):
        return None
    colours = root.findall(".//a:solidFill//a:srgbClr", _NAMESPACES)
    value = colours[-2].get("val") if len(colours) >= 2 else None
    try:
        return (int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)) if value else None
    except ValueError:
        return None


def check_page_number_colors(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the slide-number colour of the first slide master is ``rules["color"]`` (red, green, blue, black)."""
    if not result:
        return 0.0
    colour = _page_number_colour(result)
    if colour is None:
        return 0.0
    test = COLOUR_TESTS.get(rules["color"])
    return float(test is None or test(*colour))
