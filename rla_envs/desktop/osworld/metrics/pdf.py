"""PDF metrics: ``compare_pdfs`` (text similarity), ``check_pdf_pages`` (page count) and ``compare_pdf_images``.

Text comes from :func:`.pdf_text.pdf_text` (pdfminer.six, laid out like PyMuPDF), page counts and embedded images
from pypdf. As in OSWorld, a PDF that is missing or cannot be read scores 0 for its pair: in ``compare_pdfs`` the
tasks put the reference on either side, so neither side can be told apart as the reference.
"""

from __future__ import annotations

import logging
import operator
from pathlib import Path
from typing import Any

import numpy as np

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.pdf_text import pdf_text
from rla_envs.desktop.osworld.metrics.rules import similarity_ratio

__all__ = ["compare_pdfs", "check_pdf_pages", "compare_pdf_images", "perceptual_hash", "PAGE_RELATIONS"]

logger = logging.getLogger(__name__)

PAGE_RELATIONS = ("eq", "ne", "lt", "le", "gt", "ge")
"""The ``relation`` values ``check_pdf_pages`` understands (names of :mod:`operator` comparisons)."""

IMAGE_HASH_TOLERANCE = 5
"""Two images match when their perceptual hashes differ in at most this many of 64 bits."""


def _pair_similarity(first: Any, second: Any) -> float:
    try:
        return similarity_ratio(pdf_text(first), pdf_text(second))
    except Exception as exc:  # a missing, empty or broken PDF: pdfminer raises many types
        logger.info("compare_pdfs: %s vs %s cannot be read (%s): 0 for this pair", first, second, exc)
        return 0.0


def compare_pdfs(result: Any, expected: Any, **options: Any) -> float:
    """Mean text similarity (normalised indel ratio) of the PDF pairs: one path each, or two lists zipped."""
    if not isinstance(expected, list):
        result, expected = [result], [expected]
    if not expected:
        raise EvaluationError("compare_pdfs needs at least one PDF to compare with, got an empty list")
    if not isinstance(result, list):  # OSWorld pairs the characters of the path with the PDFs: none reads
        return 0.0
    return sum(_pair_similarity(first, second) for first, second in zip(result, expected)) / len(expected)


def _pages(path: Any) -> int | None:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        return len(PdfReader(path).pages)
    except (OSError, PyPdfError, TypeError, ValueError) as exc:
        logger.info("check_pdf_pages: %s cannot be read (%s): score 0", path, exc)
        return None


def check_pdf_pages(result: Any, rules: dict[str, Any], **options: Any) -> float:
    """1 when the PDF's page count stands in ``rules["relation"]`` (eq, lt, ...) to ``rules["ref_value"]``."""
    relation = rules.get("relation")
    if relation not in PAGE_RELATIONS:
        raise EvaluationError(f"check_pdf_pages relation {relation!r} is not supported (use one of {PAGE_RELATIONS})")
    if result is None:
        return 0.0
    pages = _pages(result)
    return 0.0 if pages is None else float(getattr(operator, relation)(pages, rules["ref_value"]))


def perceptual_hash(image) -> np.ndarray:
    """The 64-bit DCT perceptual hash of a Pillow image (as imagehash's ``phash``): a flat array of booleans."""
    from PIL import Image

    pixels = np.asarray(image.convert("L").resize((32, 32), Image.Resampling.LANCZOS), dtype=np.float64)
    size = pixels.shape[0]
    k = np.arange(size)
    basis = np.cos(np.pi * np.outer(k, 2 * k + 1) / (2 * size))  # DCT-II rows: frequencies, columns: samples
    low = (basis @ pixels @ basis.T)[:8, :8]
    return (low > np.median(low)).flatten()


def _pdf_images(path: str) -> list:
    from pypdf import PdfReader

    images = []
    for number, page in enumerate(PdfReader(path).pages):
        for picture in page.images:
            try:
                images.append(picture.image)
            except Exception as exc:  # an image Pillow cannot decode is left out, as OSWorld leaves it out
                logger.info("compare_pdf_images: an image on page %d of %s cannot be read (%s)", number, path, exc)
    return images


def compare_pdf_images(result: Any, expected: Any, **options: Any) -> float:
    """Share of embedded images (in page order) whose perceptual hashes match; 0 when the counts differ.

    Two PDFs without images match (1.0); a missing or unreadable PDF scores 0.
    """
    if not result or not expected or not Path(result).is_file() or not Path(expected).is_file():
        return 0.0
    try:
        first, second = _pdf_images(result), _pdf_images(expected)
    except Exception as exc:  # pypdf raises many types for a broken file
        logger.info("compare_pdf_images: %s or %s cannot be read (%s): score 0", result, expected, exc)
        return 0.0
    if len(first) != len(second):
        return 0.0
    if not first:
        return 1.0
    matches = sum(int(np.count_nonzero(perceptual_hash(a) != perceptual_hash(b))) <= IMAGE_HASH_TOLERANCE
                  for a, b in zip(first, second))
    return matches / len(first)
