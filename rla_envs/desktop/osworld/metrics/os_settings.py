"""Metrics over the operating system's settings as commands print them: ``is_utc_0`` (``timedatectl status``),
``check_gnome_favorite_apps`` (``gsettings get org.gnome.shell favorite-apps``), ``is_in_vm_clickboard`` (the
clipboard, as ``xsel --clipboard --output`` prints it).

Output that is missing or not in the command's format scores 0 (OSWorld raises on it).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

__all__ = ["is_utc_0", "check_gnome_favorite_apps", "is_in_vm_clickboard"]

_TIME_ZONE_LINE = 3
"""The index of ``Time zone: Area/City (ABBR, +0000)`` among ``timedatectl status``'s lines."""


def is_utc_0(result: str | None, **options: Any) -> float:
    """1 when ``timedatectl status`` reports a time zone at offset +0000 (its fourth line ends ``+0000)``)."""
    if not isinstance(result, str):
        return 0.0
    lines = result.split("\n")
    return float(len(lines) > _TIME_ZONE_LINE and lines[_TIME_ZONE_LINE].endswith("+0000)"))


def check_gnome_favorite_apps(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the favourites list that gsettings prints (``['a.desktop', 'b.desktop']``) holds exactly the
    apps of ``rules["expected"]``, in any order (as many entries, the same set)."""
    if not isinstance(result, str):
        return 0.0
    try:
        apps = ast.literal_eval(result.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return 0.0
    expected = rules["expected"]
    if not isinstance(apps, (list, tuple)) or len(apps) != len(expected):
        return 0.0
    try:
        return float(set(apps) == set(expected))
    except TypeError:  # an unhashable entry
        return 0.0


def is_in_vm_clickboard(rules: Mapping[str, Any], clipboard: str | None, **options: Any) -> float:
    """1 when the clipboard text holds ``rules["expected"]`` (a string, or every string of a list).

    OSWorld's task passes the rule as the result and the clipboard command's output as the expected value.
    """
    if not isinstance(clipboard, str):
        return 0.0
    wanted = rules["expected"]
    if isinstance(wanted, list):
        return float(all(text in clipboard for text in wanted))
    return float(wanted in clipboard)
