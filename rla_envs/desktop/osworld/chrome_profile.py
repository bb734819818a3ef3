"""Chrome's profile files, read and written as OSWorld does (pure functions over bytes and local files).

The profile is ``~/.config/google-chrome`` in the session (the launcher's ``--user-data-dir``): ``Default/
Preferences`` and ``Default/Bookmarks`` are JSON, ``Default/History`` and ``Default/Cookies`` SQLite. Each
``*_from_preferences`` function gives what OSWorld's getter of that name returns for the file's bytes, including
its fallback when the file is missing or unreadable (``None`` bytes).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["PROFILE_DIR", "PREFERENCES", "BOOKMARKS", "HISTORY", "COOKIES", "HISTORY_VISIT_TRANSITION",
           "chrome_time", "add_history", "history_rows", "cookie_rows", "load_json", "PREFERENCE_READERS",
           "bookmark_roots", "extension_paths", "color_scheme"]

PROFILE_DIR = "~/.config/google-chrome"
PREFERENCES = f"{PROFILE_DIR}/Default/Preferences"
BOOKMARKS = f"{PROFILE_DIR}/Default/Bookmarks"
HISTORY = f"{PROFILE_DIR}/Default/History"
COOKIES = f"{PROFILE_DIR}/Default/Cookies"

HISTORY_VISIT_TRANSITION = 805306368
"""The ``visits.transition`` OSWorld writes for its made-up visits (a link, chain start and end)."""

_CHROME_EPOCH = datetime(1601, 1, 1)


def chrome_time(moment: datetime) -> int:
    """``moment`` as Chrome stores times: microseconds since 1601-01-01 (naive, like OSWorld's local time)."""
    return int((moment - _CHROME_EPOCH).total_seconds() * 1_000_000)


def add_history(db_path: str | Path, items: Iterable[Mapping[str, Any]], *, now: datetime) -> None:
    """Add OSWorld ``update_browse_history`` items (``url``, ``title``, ``visit_time_from_now_in_seconds``) to
    a Chrome History database: one ``urls`` row and one ``visits`` row each."""
    with sqlite3.connect(db_path) as connection:
        for item in items:
            when = chrome_time(now - timedelta(seconds=item["visit_time_from_now_in_seconds"]))
            cursor = connection.execute(
                "INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                "VALUES (?, ?, 1, 0, ?, 0)", (item["url"], item["title"], when))
            connection.execute(
                "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                "VALUES (?, ?, 0, ?, 0, 0)", (cursor.lastrowid, when, HISTORY_VISIT_TRANSITION))
    connection.close()


def _rows(db_path: str | Path, query: str) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(db_path)
    try:
        return connection.execute(query).fetchall()
    finally:
        connection.close()


def history_rows(db_path: str | Path) -> list[tuple[Any, ...]]:
    """``(url, title, last_visit_time)`` of every row in a History database's ``urls`` table."""
    return _rows(db_path, "SELECT url, title, last_visit_time FROM urls")


def cookie_rows(db_path: str | Path) -> list[tuple[Any, ...]]:
    """Every row of a Cookies database's ``cookies`` table (the host is column 1)."""
    return _rows(db_path, "SELECT * FROM cookies")


def load_json(data: bytes | None) -> Any:
    """The JSON in ``data`` (ValueError for none or bad JSON)."""
    if not data:
        raise ValueError("the file is missing or empty")
    return json.loads(data)


def bookmark_roots(data: bytes | None) -> Any:
    """The ``roots`` of a Bookmarks file (``[]`` when there is no file, as OSWorld returns)."""
    return load_json(data).get("roots", {}) if data else []


def extension_paths(prefs: Mapping[str, Any]) -> list[Any]:
    """The ``path`` of every extension in Preferences' ``extensions.settings``."""
    return [entry["path"] for entry in prefs.get("extensions", {}).get("settings", {}).values()]


def _flag(value: Any) -> str:
    return "true" if value else "false"


_SCHEME_NAMES = {"system": "system", "default": "system", "0": "system", "light": "light", "1": "light",
                 "dark": "dark", "2": "dark"}


def _scheme_name(value: Any) -> str | None:
    if isinstance(value, str):
        return _SCHEME_NAMES.get(value.strip().lower())
    if isinstance(value, (int, float)):  # a bool too, as OSWorld's check lets it through
        return {0: "system", 1: "light", 2: "dark"}.get(int(value))
    return None


def color_scheme(prefs: Mapping[str, Any]) -> str:
    """Chrome's appearance mode in Preferences, as OSWorld's ``chrome_color_scheme`` reads it: ``light``,
    ``dark`` or ``system`` from ``browser.theme.color_scheme2`` (else ``color_scheme``); light whenever
    ``extensions.theme.system_theme`` is off."""
    theme = prefs.get("browser", {}).get("theme", {})
    mode = _scheme_name(theme.get("color_scheme2", theme.get("color_scheme")))
    if prefs.get("extensions", {}).get("theme", {}).get("system_theme") in (0, "0", False):
        return "light"
    return mode or "system"


def _startup_page(prefs: Mapping[str, Any]) -> str:
    return "true" if "session" not in prefs else _flag(prefs["session"].get("restore_on_startup", {}) == 5)


DEFAULT_FONT_SIZES = {"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13}

PREFERENCE_READERS: dict[str, tuple[Any, Any]] = {
    "default_search_engine": (
        lambda p: p.get("default_search_provider_data", {}).get("template_url_data", {}).get("short_name", "Google"),
        "Google"),
    "profile_name": (lambda p: p.get("profile", {}).get("name", None), None),
    "chrome_font_size": (lambda p: p.get("webkit", {}).get("webprefs", dict(DEFAULT_FONT_SIZES)),
                         {"default_fixed_font_size": 13, "default_font_size": 16}),
    "enable_do_not_track": (lambda p: _flag(p.get("enable_do_not_track", {})), "false"),
    "enable_enhanced_safety_browsing": (lambda p: _flag(p.get("safebrowsing", {}).get("enhanced", {})), "Google"),
    "enable_safe_browsing": (lambda p: _flag(p.get("safebrowsing", {}).get("enhanced", False)
                                             or p.get("safebrowsing", {}).get("enabled", False)), "false"),
    "new_startup_page": (_startup_page, "Google"),
    "find_unpacked_extension_path": (extension_paths, "Google"),
    "find_installed_extension_name": (
        lambda p: [e["manifest"]["name"] for e in p.get("extensions", {}).get("settings", {}).values()], "Google"),
    "chrome_color_scheme": (color_scheme, "system"),
    "data_delete_automacally": (lambda p: _flag(p["profile"].get("default_content_setting_values", None)
                                                is not None), "Google"),
}
"""OSWorld getter type -> (what it reads from the parsed Preferences, what it returns when that fails). The
odd fallbacks ("Google" for a flag) are OSWorld's own."""
