"""Metrics over apps' own config files: ``check_config_status`` (GIMP's ``gimprc``/``sessionrc``) and
``find_default_font`` (LibreOffice's ``registrymodifications.xcu``).

GIMP writes its settings as one s-expression per line, ``(theme "Light")``, ``(undo-levels 100)``; nested
entries put their children on lines of their own, ``    (width 1920)``. A missing file (None) scores 0.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["check_config_status", "find_default_font", "setting_words"]


def setting_words(line: str) -> list[str]:
    """The words of one settings line without its parentheses: ``'(theme "Light")'`` -> ``['theme', '"Light"']``."""
    return line.strip().lstrip("(").rstrip(")\n").split()


def check_config_status(result: str | None, rule: Any) -> float:
    """1 when a line of the config file sets the rule's ``key`` to its ``value`` (as written, quotes included).

    ``key`` is a setting name, or a list of two words (a setting and its sub-setting, ``["default-image",
    "width"]`` style lines that name both). The value is the line's last word. Comment lines (``#``) and blank
    lines are skipped (OSWorld raises on a line of spaces).
    """
    if not isinstance(rule, Mapping) or "key" not in rule or "value" not in rule:
        raise EvaluationError(f"check_config_status needs a rule with 'key' and 'value', got {rule!r:.200}")
    if not result:
        return 0.0
    key, value = rule["key"], rule["value"]
    try:
        with open(result, encoding="utf-8", errors="replace") as handle:
            lines = handle.readlines()
    except OSError:
        return 0.0
    for line in lines:
        words = setting_words(line)
        if line.startswith("#") or not words:
            continue
        if isinstance(key, str) and words[0] == key and words[-1] == value:
            return 1.0
        if isinstance(key, list) and len(key) == 2 and words[:2] == key and words[-1] == value:
            return 1.0
    return 0.0


_OOR = "{http://openoffice.org/2001/registry}"
_WRITER_DEFAULT_FONT = "/org.openoffice.Office.Writer/DefaultFont"


def find_default_font(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when LibreOffice's user settings (``registrymodifications.xcu``) make ``rules["font_name"]`` Writer's
    default (``Standard``) font; the last such entry counts. A missing or unparsable file scores 0."""
    expected = rules["font_name"]
    if not result:
        return 0.0
    try:
        root = ElementTree.parse(result).getroot()
    except (OSError, ElementTree.ParseError):
        return 0.0
    font = None
    for item in root.iter("item"):
        if item.get(f"{_OOR}path") != _WRITER_DEFAULT_FONT:
            continue
        for prop in item.iter("prop"):
            if prop.get(f"{_OOR}name") == "Standard":
                for value in prop.findall("value"):
                    font = value.text
    return float(font == expected)
