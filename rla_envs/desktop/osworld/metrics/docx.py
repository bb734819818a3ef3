"""Metrics over Word documents (python-docx): ``compare_docx_files`` and ``compare_docx_tables``.

A result file that is missing or not a readable ``.docx`` scores 0; a reference file that cannot be read is an
:class:`~rla_envs.desktop.osworld.errors.EvaluationError`. ``.odt`` files are not supported (the runnable check
cannot see file types, so an ``.odt`` pair raises at run time).
"""

from __future__ import annotations

import re
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.rules import similarity_ratio

__all__ = ["compare_docx_files", "compare_docx_tables", "load_docx", "squash_blanks"]


def load_docx(path: str | None, *, expected: bool):
    """The python-docx Document at ``path``; None for a bad result file, an error for a bad reference."""
    import docx

    if not path:
        if expected:
            raise EvaluationError("the reference .docx file is missing")
        return None
    try:
        return docx.Document(path)
    except Exception as exc:  # python-docx raises several unrelated types for a broken package
        if expected:
            raise EvaluationError(f"the reference file {path} is not a readable .docx: {exc}") from exc
        return None


def squash_blanks(paragraphs: list[str]) -> str:
    """The paragraphs joined, with every run of blanks (newlines included) made one space, trimmed."""
    return re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()


def compare_docx_files(result: str | None, expected: str | None, **options: Any) -> float:
    """How well the paragraphs' text of two ``.docx`` files match, as OSWorld scores it.

    Options: ``ignore_blanks`` (default True: the whole text with runs of blanks squashed must be equal),
    ``ignore_case``, ``ignore_order`` (paragraphs sorted first), ``delete_empty_lines``, ``content_only``
    (score = similarity ratio of the squashed texts), ``fuzzy_match`` (similarity instead of equality; per
    paragraph when ``ignore_blanks`` is false) with ``fuzzy_match_threshold`` (a similarity turns into 0/1).
    """
    for path in (result, expected):
        if path and not str(path).lower().endswith(".docx"):
            if path == expected:
                raise EvaluationError(f"compare_docx_files supports .docx files only, got {path}")
            return 0.0
    result_doc = load_docx(result, expected=False)
    if result_doc is None:
        return 0.0
    expected_doc = load_docx(expected, expected=True)
    ours = [p.text for p in result_doc.paragraphs]
    gold = [p.text for p in expected_doc.paragraphs]
    if options.get("ignore_order", False):
        ours, gold = sorted(ours), sorted(gold)
    if options.get("delete_empty_lines", False):
        ours, gold = [p for p in ours if p.strip()], [p for p in gold if p.strip()]
    ignore_case = options.get("ignore_case", False)
    threshold = options.get("fuzzy_match_threshold")

    if options.get("content_only", False) or options.get("ignore_blanks", True):
        text1, text2 = squash_blanks(ours), squash_blanks(gold)
        if ignore_case:
            text1, text2 = text1.lower(), text2.lower()
        if options.get("content_only", False):
            return similarity_ratio(text1, text2)
        if options.get("fuzzy_match", False):
            score = similarity_ratio(text1, text2)
            return float(score >= threshold) if threshold is not None else score
        return float(text1 == text2)

    if len(ours) != len(gold):
        return 0.0
    if ignore_case:
        ours, gold = [p.lower() for p in ours], [p.lower() for p in gold]
    if options.get("fuzzy_match", False):
        if not ours:
            return 1.0
        scores = [similarity_ratio(a, b) for a, b in zip(ours, gold)]
        if threshold is not None:
            scores = [float(s >= threshold) for s in scores]
        return sum(scores) / len(scores)
    return float(ours == gold)


def compare_docx_tables(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when both documents have the same tables (shape and stripped cell text)."""
    result_doc = load_docx(result, expected=False)
    if result_doc is None:
        return 0.0
    expected_doc = load_docx(expected, expected=True)
    if len(result_doc.tables) != len(expected_doc.tables):
        return 0.0
    for ours, gold in zip(result_doc.tables, expected_doc.tables):
        if len(ours.rows) != len(gold.rows) or len(ours.columns) != len(gold.columns):
            return 0.0
        for i in range(len(gold.rows)):
            for j in range(len(gold.columns)):
                if ours.cell(i, j).text.strip() != gold.cell(i, j).text.strip():
                    return 0.0
    return 1.0
