"""OSWorld's Impress getter: the picture a slide of a .pptx in the session uses as its background.

:func:`background_image_source` reads the package (pure); :func:`get_background_image_in_slide` copies the deck
out of the session and writes the picture to ``<workdir>/<dest>``.
"""

from __future__ import annotations

import io
import posixpath
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter, target_path

__all__ = ["GETTERS", "background_image_source", "get_background_image_in_slide"]

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
_RELATIONSHIP = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"


def _background_image_id(slide_xml: bytes) -> str | None:
    """The relationship id of the first picture in a ``<p:bgPr>`` of the slide, None when it has none."""
    for background in ET.fromstring(slide_xml).iter(f"{_P}bgPr"):
        for blip in background.iter(f"{_A}blip"):
            if _EMBED in blip.attrib:
                return blip.attrib[_EMBED]
    return None


def background_image_source(deck: bytes, slide_index: int) -> tuple[str, str] | None:
    """Where slide ``slide_index`` (from 0) keeps its background picture: ``("member", name)`` inside the package,
    ``("file", path)`` for a picture linked from the session's disk, or None when the slide has none."""
    slide = f"ppt/slides/slide{slide_index + 1}.xml"
    rels = f"ppt/slides/_rels/slide{slide_index + 1}.xml.rels"
    with zipfile.ZipFile(io.BytesIO(deck)) as package:
        names = set(package.namelist())
        image_id = _background_image_id(package.read(slide)) if slide in names else None
        if image_id is None or rels not in names:
            return None
        for relation in ET.fromstring(package.read(rels)).iter(_RELATIONSHIP):
            if relation.get("Id") == image_id and "image" in relation.get("Type", ""):
                target = relation.get("Target", "")
                if target.startswith("file://"):
                    return "file", target[len("file://"):]
                member = posixpath.normpath(posixpath.join("ppt/slides", target))
                return ("member", member) if member in names else None
    return None


def _session_file(ctx: EvalContext, path: str) -> bytes | None:
    try:
        return ctx.client.get_file(path)
    except ControllerError as exc:
        raise EvaluationError(f"background_image_in_slide: could not read {path} from the session: {exc}") from exc


def get_background_image_in_slide(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """The background picture of slide ``slide_index`` of the deck ``ppt_file_path``, copied to
    ``<workdir>/<dest>``: its local path, or None when the deck, the slide or its background picture is missing."""
    deck_path, dest = config.get("ppt_file_path"), config.get("dest")
    if not isinstance(deck_path, str) or not deck_path or not isinstance(dest, str) or not dest:
        raise EvaluationError("background_image_in_slide: needs string 'ppt_file_path' and 'dest'")
    try:
        slide_index = int(config.get("slide_index"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise EvaluationError(f"background_image_in_slide: 'slide_index' must be a number, got "
                              f"{config.get('slide_index')!r:.100}") from None
    deck = _session_file(ctx, deck_path)
    if deck is None:
        return None
    try:
        source = background_image_source(deck, slide_index)
        if source is None:
            return None
        kind, where = source
        if kind == "member":
            with zipfile.ZipFile(io.BytesIO(deck)) as package:
                picture = package.read(where)
        else:
            picture = _session_file(ctx, where)
    except (zipfile.BadZipFile, ET.ParseError, KeyError):  # not a .pptx the agent saved: no background picture
        return None
    if picture is None:
        return None
    target = target_path(ctx, dest)
    target.write_bytes(picture)
    return str(target)


GETTERS: dict[str, Getter] = {
    "background_image_in_slide": get_background_image_in_slide,
}
"""The Impress getters, by OSWorld ``type``."""
