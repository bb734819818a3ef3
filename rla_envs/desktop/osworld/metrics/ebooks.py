"""Metrics over e-books: ``compare_epub`` (an EPUB's table of contents, package file and HTML chapters, part by
part, line by line).

A result that is missing or not a zip scores 0; a reference that is not a readable zip is an
:class:`~rla_envs.desktop.osworld.errors.EvaluationError`.
"""

from __future__ import annotations

import difflib
import zipfile
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["compare_epub", "epub_parts"]

_LINE_FILTERS = {"toc.ncx": "navPoint", "content.opf": "dc:identifier"}
"""Top-level EPUB files compared line by line, and the word that drops a line (ids and navigation points differ
from one conversion to the next)."""


def _pretty_html(data: bytes) -> list[str]:
    """An HTML part's lines once its line breaks are dropped and lxml pretty-prints it (empty when unparsable)."""
    import lxml.etree
    import lxml.html

    text = data.decode("utf-8", errors="replace").replace("\n", "").replace("\r", "")
    try:
        tree = lxml.html.fromstring(text.encode("utf-8"))
    except (lxml.etree.LxmlError, ValueError):
        return []
    return lxml.html.tostring(tree, pretty_print=True, encoding="unicode").splitlines()


def epub_parts(path: str) -> list[tuple[str, list[str]]] | None:
    """The compared parts of an EPUB, sorted by name: ``toc.ncx`` and ``content.opf`` at the top level (their
    filtered lines) and every ``.html`` member (pretty-printed lines); None when the file is not a zip."""
    parts = []
    try:
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if name in _LINE_FILTERS:
                    lines = archive.read(name).decode("utf-8", errors="replace").splitlines()
                    parts.append((name, [line for line in lines if _LINE_FILTERS[name] not in line]))
                elif name.endswith(".html"):
                    parts.append((name, _pretty_html(archive.read(name))))
    except (OSError, zipfile.BadZipFile):
        return None
    return sorted(parts, key=lambda part: part[0])


def compare_epub(result: str | None, expected: str | None, **options: Any) -> float:
    """The mean line similarity (difflib's ratio) of the two EPUBs' parts, paired in name order; parts beyond
    the shorter list count 0 when the result has more."""
    if not result:
        return 0.0
    ours = epub_parts(result)
    if not ours:
        return 0.0
    gold = epub_parts(expected) if expected else None
    if gold is None:
        raise EvaluationError(f"the reference EPUB {expected!r} is missing or not a zip")
    total = sum(difflib.SequenceMatcher(a=a, b=b).ratio() for (_, a), (_, b) in zip(ours, gold))
    return total / len(ours)
