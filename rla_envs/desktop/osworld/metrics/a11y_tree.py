"""``check_accessibility_tree``: elements of the session's accessibility tree (its XML text) found by CSS or XPath.

Each rule selects elements with ``"xpath"`` (preferred) or ``"selectors"`` (CSS, joined with ``", "``), with the
tree's namespace prefixes (``st``, ``attr``, ``cp``...: :data:`~rla_envs.desktop.controller.a11y.NAMESPACES`).
A rule that selects nothing scores 0; with ``"text"``, it scores the best match among the selected elements' text
(``"exact"``, default true: equal or not; otherwise the normalised indel similarity). The score is the product of
the rules' scores.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rla_envs.desktop.controller.a11y import NAMESPACES
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.rules import similarity_ratio

__all__ = ["check_accessibility_tree"]

logger = logging.getLogger(__name__)


def _select(tree, rule: Mapping[str, Any]) -> list:
    from lxml.cssselect import CSSSelector
    from lxml.etree import XPathError

    try:
        if "xpath" in rule:
            return list(tree.xpath(rule["xpath"], namespaces=NAMESPACES))
        if "selectors" in rule:
            return CSSSelector(", ".join(rule["selectors"]), namespaces=NAMESPACES)(tree)
    except (XPathError, ValueError) as exc:  # cssselect's SelectorError is a ValueError
        raise EvaluationError(f"check_accessibility_tree: bad selector in {dict(rule)!r:.200}: {exc}") from exc
    raise EvaluationError(f"check_accessibility_tree: a rule needs 'xpath' or 'selectors', got {dict(rule)!r:.200}")


def _text_score(want: str, text: str | None, exact: bool) -> float:
    if exact:
        return float(want == text)
    return similarity_ratio(want, text) if isinstance(text, str) else 0.0


def check_accessibility_tree(result: Any, rules: Sequence[Mapping[str, Any]], osname: str = "ubuntu",
                             **options: Any) -> float:
    """The product over ``rules`` of how well the accessibility tree ``result`` (XML text) holds each one."""
    from lxml import etree

    if osname != "ubuntu":
        raise EvaluationError(f"check_accessibility_tree: osname {osname!r} is not supported (only 'ubuntu')")
    if not isinstance(result, (str, bytes)) or not result:
        return 0.0
    try:
        tree = etree.fromstring(result.encode("utf-8") if isinstance(result, str) else result)
    except etree.XMLSyntaxError as exc:
        logger.info("check_accessibility_tree: the tree is not XML (%s): score 0", exc)
        return 0.0
    score = 1.0
    for rule in rules:
        elements = _select(tree, rule)
        if not elements:
            return 0.0
        if "text" in rule:
            exact = rule.get("exact", True)
            score *= max(_text_score(rule["text"], getattr(element, "text", None) or None, exact)
                         for element in elements)
    return float(score)
