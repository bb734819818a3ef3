"""Metrics comparing two images (Pillow, numpy, scikit-image's SSIM), scored as OSWorld's GIMP and VLC metrics are.

Similarity is judged as OSWorld judges it, so scores agree case for case:

* **structure** (:func:`structure_similar`): SSIM over the RGB pixels with a 7-pixel window, at least a threshold
  (0.9 unless a metric says otherwise); images of different sizes, or under 7 pixels on a side, are not similar;
* **pixels after brightness normalisation** (:func:`mean_squared_close`): both images scaled to a mean grey of
  128, the first resized to the second's size, mean squared RGB difference (in 0..1 units) under a threshold.

The first argument is what the task's ``result`` getter returns (usually the agent's file), the second what its
``expected`` getter returns. A None path scores 0 (OSWorld's rule for a missing file, either side); a result file
that is not a readable image scores 0, while an unreadable expected file raises
:class:`~rla_envs.desktop.osworld.errors.EvaluationError` (OSWorld raises for both, or scores 0 where it catches).
Where OSWorld can return a negative SSIM (``compare_images``) the score is clamped at 0, since scores are in [0, 1].
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageChops, ImageStat
from skimage.metrics import structural_similarity

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["compare_images", "compare_image_list", "check_structure_sim", "check_structure_sim_resized",
           "check_structure_sim_with_threshold", "check_file_exists_and_structure_sim", "check_image_mirror",
           "check_palette_and_structure_sim", "check_brightness_decrease_and_structure_sim",
           "check_saturation_increase_and_structure_sim", "check_contrast_increase_and_structure_sim",
           "load_image", "structure_similar", "mean_squared_close", "SSIM_WINDOW"]

SSIM_WINDOW = 7
"""The side of SSIM's sliding window (scikit-image's default); smaller images cannot be compared."""

_SIMILAR = 0.9
"""The SSIM at or above which OSWorld calls two images structurally the same (unless a metric says otherwise)."""


def load_image(path: str | None, *, expected: bool) -> Image.Image | None:
    """The decoded image at ``path``; None for a missing path or an unreadable result, an error for a bad reference."""
    if not path:
        return None
    try:
        image = Image.open(path)
        image.load()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        if expected:
            raise EvaluationError(f"the reference file {path} is not a readable image: {exc}") from exc
        return None
    return image


def _pair(result: str | None, expected: str | None) -> tuple[Image.Image, Image.Image] | None:
    """Both images, or None when either is missing or the result cannot be read (the caller scores 0)."""
    if not result or not expected:
        return None
    result_image = load_image(result, expected=False)
    if result_image is None:
        return None
    return result_image, load_image(expected, expected=True)  # type: ignore[return-value]


def _rgb(image: Image.Image) -> Image.Image:
    return image if image.mode == "RGB" else image.convert("RGB")


def structural_similarity_rgb(first: Image.Image, second: Image.Image, window: int = SSIM_WINDOW) -> float | None:
    """SSIM of two same-size images over their RGB channels, or None when they cannot be compared."""
    first, second = _rgb(first), _rgb(second)
    if first.size != second.size or min(first.size) < window:
        return None
    try:
        return float(structural_similarity(np.asarray(first), np.asarray(second), win_size=window, channel_axis=2))
    except ValueError:
        return None


def structure_similar(first: Image.Image, second: Image.Image, threshold: float = _SIMILAR) -> bool:
    """Whether two images have the same size (at least 7x7) and an RGB SSIM of at least ``threshold``."""
    if min(first.size) < SSIM_WINDOW or min(second.size) < SSIM_WINDOW:
        return False
    similarity = structural_similarity_rgb(first, second)
    return similarity is not None and similarity >= threshold


def _mean_grey(image: Image.Image) -> float:
    return ImageStat.Stat(image.convert("L")).mean[0]


def _with_mean_grey(image: Image.Image, target: float) -> Image.Image:
    """The image with every channel value scaled so its mean grey becomes ``target`` (clipped to 0..255)."""
    factor = target / _mean_grey(image)  # an all-black image raises ZeroDivisionError, as OSWorld's does
    return image.point(lambda value: min(255, max(0, int(value * factor))))


def mean_squared_close(first: Image.Image, second: Image.Image, threshold: float) -> bool:
    """Whether the mean squared RGB difference (0..1 units) is under ``threshold``, ``first`` resized to ``second``."""
    if first.size != second.size:
        first = first.resize(second.size, Image.Resampling.LANCZOS)
    first_values = np.asarray(_rgb(first), dtype=np.float32) / 255
    second_values = np.asarray(_rgb(second), dtype=np.float32) / 255
    return bool(np.mean((first_values - second_values) ** 2) < threshold)


def _score(passed: bool) -> float:
    return 1.0 if passed else 0.0


def compare_images(result: str | None, expected: str | None, **options: Any) -> float:
    """The grey-level SSIM of two images, both resized to the smaller ``(width, height)``; 0 for a missing one.

    Option ``reference_base_result``: the SSIM an untouched result already reaches; the score is then the gain
    over it, ``(ssim - base) / (1 - base)``, and 0 unless the SSIM beats the base by 0.01. As OSWorld does, the
    smaller size is the lexicographically smaller ``(width, height)`` pair. Images smaller than 7 pixels on a side
    score 0 (OSWorld raises).
    """
    images = _pair(result, expected)
    if images is None:
        return 0.0
    first, second = (image.convert("L") for image in images)
    size = min(first.size, second.size)
    first, second = (image.resize(size, Image.Resampling.LANCZOS) for image in (first, second))
    if min(size) < SSIM_WINDOW:
        return 0.0
    similarity = float(structural_similarity(np.asarray(first), np.asarray(second)))
    base = options.get("reference_base_result")
    if base is not None:
        similarity = (similarity - base) / (1 - base) if similarity >= base + 0.01 else 0.0
    return max(0.0, similarity)


def compare_image_list(result: str | Sequence[str | None] | None,
                       expected: str | Sequence[str | None] | None) -> float:
    """1 when every result image has exactly the pixels of its reference (resized to it first), else 0.

    Pairs are taken in order up to the shorter list. The difference is judged as Pillow's ``getbbox`` sees it:
    for images with an alpha channel only a difference in alpha counts (OSWorld's rule, kept).
    """
    results = list(result) if isinstance(result, list) else [result]
    references = list(expected) if isinstance(result, list) and isinstance(expected, list) else [expected]
    for result_path, reference_path in zip(results, references):
        images = _pair(result_path, reference_path)
        if images is None:
            return 0.0
        ours, gold = images
        if ours.size != gold.size:
            ours = ours.resize(gold.size, Image.Resampling.LANCZOS)
        if ours.mode != gold.mode:
            ours = ours.convert(gold.mode)
        if ImageChops.difference(ours, gold).getbbox():
            return 0.0
    return 1.0


def check_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when the two images have the same size and an SSIM of at least 0.9."""
    images = _pair(result, expected)
    if images is None or images[0].size != images[1].size:
        return 0.0
    return _score(structure_similar(*images))


def check_structure_sim_with_threshold(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the result, resized to the reference, has an RGB SSIM of at least ``ssim_threshold`` (0.85).

    Added to OSWorld after desktop-env 1.0.2 (no oracle for it there); images under 7 pixels on a side use the
    largest odd window that fits, as OSWorld's does.
    """
    images = _pair(result, expected)
    if images is None:
        return 0.0
    ours, gold = images
    if ours.size != gold.size:
        ours = ours.resize(gold.size, Image.Resampling.LANCZOS)
    side = min(gold.size)
    window = SSIM_WINDOW if side >= SSIM_WINDOW else side - (1 - side % 2)
    if window < 1:
        return 0.0
    similarity = structural_similarity_rgb(ours, gold, window=window)
    return _score(similarity is not None and similarity >= options.get("ssim_threshold", 0.85))


def check_structure_sim_resized(result: str | None, expected: str | None) -> float:
    """1 when the result's content, resized to the reference's size, has an SSIM of at least 0.9.

    A result with transparency is cropped to its non-transparent pixels first (fully transparent: 0).
    """
    images = _pair(result, expected)
    if images is None:
        return 0.0
    ours, gold = images
    if ours.mode in ("RGBA", "LA") or "transparency" in ours.info:
        ours = ours.convert("RGBA")
        content = ours.getchannel("A").getbbox()
        if content is None:
            return 0.0
        ours = ours.crop(content).convert("RGB")
    return _score(structure_similar(ours.resize(gold.size), gold))


def check_file_exists_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when the result file exists and is structurally the same image as the reference (SSIM >= 0.9)."""
    if not result or not expected or not os.path.isfile(result):
        return 0.0
    images = _pair(result, expected)
    return _score(images is not None and structure_similar(*images))


def check_image_mirror(result: str | None, expected: str | None) -> float:
    """1 when the result flipped left-right is structurally the reference (SSIM >= 0.99)."""
    images = _pair(result, expected)
    if images is None:
        return 0.0
    ours, gold = images
    return _score(structure_similar(ours.transpose(Image.Transpose.FLIP_LEFT_RIGHT), gold, 0.99))


def check_palette_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when the result is a palette (indexed-colour) image structurally the same as the reference."""
    images = _pair(result, expected)
    if images is None:
        return 0.0
    ours, gold = images
    return _score(ours.mode == "P" and structure_similar(ours.convert("RGB"), gold))


def check_brightness_decrease_and_structure_sim(result: str | None, expected: str | None,
                                                threshold: float = 0.03) -> float:
    """1 when the result is darker than the reference and, brightness aside, the same picture.

    "The same picture": after both are scaled to a mean grey of 128, their mean squared RGB difference is
    under ``threshold``.
    """
    images = _pair(result, expected)
    if images is None:
        return 0.0
    ours, gold = images
    darker = _mean_grey(gold) > _mean_grey(ours)
    same = mean_squared_close(_with_mean_grey(ours, 128), _with_mean_grey(gold, 128), threshold)
    return _score(darker and same)


def _hsv_bands(image: Image.Image) -> tuple[Image.Image, ...]:
    return image.convert("HSV").split()


def check_saturation_increase_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when the result is more saturated than the reference while its hue and value keep the structure.

    Saturation is the mean of the HSV saturation channel; hue and value channels must each have an SSIM of at
    least 0.9 with the reference's.
    """
    images = _pair(result, expected)
    if images is None:
        return 0.0
    (hue, saturation, value), (gold_hue, gold_saturation, gold_value) = (_hsv_bands(image) for image in images)
    more_saturated = float(np.mean(np.asarray(gold_saturation))) < float(np.mean(np.asarray(saturation)))
    same = structure_similar(hue, gold_hue) and structure_similar(value, gold_value)
    return _score(more_saturated and same)


def check_contrast_increase_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1 when the result has more contrast (pixel standard deviation) than the reference and an SSIM >= 0.65."""
    images = _pair(result, expected)
    if images is None:
        return 0.0
    ours, gold = images
    more_contrast = float(np.std(np.asarray(gold, dtype=np.float32))) < float(np.std(np.asarray(ours, np.float32)))
    return _score(more_contrast and structure_similar(ours, gold, 0.65))
