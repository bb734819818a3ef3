"""Metrics over HTML files: ``compare_htmls`` (two pages parsed by BeautifulSoup with lxml, node by node).

A result file that is missing or not UTF-8 scores 0 (OSWorld raises on it); an unreadable reference is an
:class:`~rla_envs.desktop.osworld.errors.EvaluationError`.
"""

from __future__ import annotations

from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["compare_htmls"]


def _parse(path: str | None, *, expected: bool):
    from bs4 import BeautifulSoup  # only the HTML metrics need it

    try:
        with open(path, encoding="utf-8") as handle:  # type: ignore[arg-type]
            return BeautifulSoup(handle, "lxml")
    except (OSError, TypeError, UnicodeDecodeError) as exc:
        if expected:
            raise EvaluationError(f"the reference HTML file {path!r} is missing or not UTF-8: {exc}") from exc
        return None


def _same_node(ours: Any, gold: Any, ignore_sdnum: bool) -> bool:
    """Whether two parse-tree nodes match: strings by value; tags by name, stripped text and attributes
    (LibreOffice's ``sdnum`` number-format attribute aside with ``ignore_sdnum``)."""
    from bs4 import Tag

    if not (isinstance(ours, Tag) and isinstance(gold, Tag)):
        return ours == gold
    if ours.name != gold.name or ours.text.strip() != gold.text.strip():
        return False
    if ours.attrs == gold.attrs:
        return True
    if not ignore_sdnum:
        return False
    return ({k: v for k, v in ours.attrs.items() if k != "sdnum"}
            == {k: v for k, v in gold.attrs.items() if k != "sdnum"})


def compare_htmls(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the two pages' nodes, taken in document order, match pairwise (as far as the shorter goes).

    Options: ``ignore_sdnum`` (LibreOffice writes each number's format as an ``sdnum`` attribute).
    """
    ours = _parse(result, expected=False)
    if ours is None:
        return 0.0
    gold = _parse(expected, expected=True)
    ignore_sdnum = bool(options.get("ignore_sdnum"))
    return float(all(_same_node(a, b, ignore_sdnum) for a, b in zip(ours.descendants, gold.descendants)))
