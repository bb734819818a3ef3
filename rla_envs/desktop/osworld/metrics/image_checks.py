"""Metrics checking one image's size, file size or layout, scored as OSWorld's GIMP metrics are.

``check_image_size`` and ``check_image_file_size`` compare with a rule; ``check_textbox_on_leftside``,
``check_triangle_position`` and ``check_green_background`` look at where things are in the picture. A missing result
(None) or one that is not a readable image scores 0; an unreadable reference raises
:class:`~rla_envs.desktop.osworld.errors.EvaluationError` (see :mod:`.images`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.images import load_image

__all__ = ["check_image_size", "check_image_file_size", "check_textbox_on_leftside", "check_triangle_position",
           "check_green_background", "content_size"]

_DARK = 128
"""Grey levels below this count as dark (text) pixels."""

_NEAR = 0.05
"""How near counts as "at" a place: 5% of the image's width (left side) or of each side (centre)."""


def _rule(rule: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(rule, Mapping):
        raise EvaluationError(f"{name} needs a rule object, got {type(rule).__name__}")
    return rule


def content_size(image: Image.Image, *, ignore_transparent: bool) -> tuple[int, int]:
    """``(width, height)`` of the image, or of its non-transparent pixels' bounding box.

    As OSWorld decides it: the box is measured when ``ignore_transparent`` is set and the image has an alpha
    channel, and also whenever the image carries a ``transparency`` colour, whatever the option says.
    """
    if not ((ignore_transparent and image.mode in ("RGBA", "LA")) or "transparency" in image.info):
        return image.size
    box = image.convert("RGBA").getchannel("A").getbbox()
    return (0, 0) if box is None else (box[2] - box[0], box[3] - box[1])


def check_image_size(result: str | None, rule: Any) -> float:
    """1 when the image's width and height are the rule's ``width``/``height`` (each checked only when given).

    Rule option ``ignore_transparent``: measure only the non-transparent content (see :func:`content_size`).
    """
    rule = _rule(rule, "check_image_size")
    image = load_image(result, expected=False)
    if image is None:
        return 0.0
    width, height = content_size(image, ignore_transparent=bool(rule.get("ignore_transparent", False)))
    width_ok = rule.get("width") is None or width == rule["width"]
    height_ok = rule.get("height") is None or height == rule["height"]
    return 1.0 if width_ok and height_ok else 0.0


def check_image_file_size(result: str | None, rule: Any) -> float:
    """1 when the result file is smaller than the rule's ``max_size`` bytes (a missing file scores 0)."""
    rule = _rule(rule, "check_image_file_size")
    if not result or not os.path.isfile(result):
        return 0.0
    return 1.0 if os.path.getsize(result) < rule["max_size"] else 0.0


def check_textbox_on_leftside(result: str | None) -> float:
    """1 when the leftmost dark (text) pixel lies within the left 5% of the image's width."""
    image = load_image(result, expected=False)
    if image is None:
        return 0.0
    dark_columns = np.flatnonzero((np.asarray(image.convert("L")) < _DARK).any(axis=0))
    leftmost = dark_columns[0] if dark_columns.size else image.width
    return 1.0 if leftmost < image.width * _NEAR else 0.0


def check_triangle_position(result: str | None) -> float:
    """1 when the triangle's centroid is within 5% of each side from the image's centre.

    As OSWorld finds "the triangle": the colour with the second-fewest pixels once colours are ordered by count
    (numpy's default sort of the counts; with only a background and a triangle that is the more common colour,
    which still sits in the middle when the triangle does). An image without channels or with a single colour
    scores 0 (OSWorld raises).
    """
    image = load_image(result, expected=False)
    if image is None:
        return 0.0
    pixels = np.asarray(image)
    if pixels.ndim != 3:
        return 0.0
    colours, counts = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0, return_counts=True)
    if len(colours) < 2:
        return 0.0
    triangle = colours[np.argsort(counts)][1]
    centroid = np.argwhere(np.all(pixels == triangle, axis=2)).mean(axis=0)
    shape = np.array(pixels.shape[:2])
    return 1.0 if bool(np.all(np.abs(centroid - shape / 2) < _NEAR * shape)) else 0.0


def check_green_background(result: str | None, expected: str | None) -> float:
    """1 when every pixel that is not black in the reference is green in the result (green above red and blue).

    The reference marks the object in black on a lighter background. Images are compared as RGB; a result of
    another size scores 0. OSWorld walks the pixels with its row and column swapped, so it agrees on square images
    and raises on others.
    """
    if not result or not expected:
        return 0.0
    ours = load_image(result, expected=False)
    if ours is None:
        return 0.0
    gold = load_image(expected, expected=True)
    if ours.size != gold.size:
        return 0.0
    ours_pixels = np.asarray(ours.convert("RGB")).astype(np.int16)
    background = np.asarray(gold.convert("RGB")).any(axis=2)
    red, green, blue = ours_pixels[..., 0], ours_pixels[..., 1], ours_pixels[..., 2]
    is_green = (green > red) & (green > blue)
    return 1.0 if bool(np.all(is_green[background])) else 0.0
