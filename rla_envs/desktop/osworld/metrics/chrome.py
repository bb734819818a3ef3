"""OSWorld's Chrome metrics: tabs, URLs, bookmarks, history, cookies, settings, desktop shortcuts.

Each takes what the Chrome getters (:mod:`..getters.chrome`) return and a rule dict from the task, and scores as
OSWorld's function of the same name does, including its errors: a rule ``type`` OSWorld does not know raises
TypeError where OSWorld raises, and scores 0 where OSWorld scores 0. URLs compare with :func:`..urls.compare_urls`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import product
from typing import Any

from rla_envs.desktop.osworld.urls import compare_urls, lists_match, strip_query

__all__ = ["is_expected_active_tab", "is_expected_active_tab_approximate", "is_expected_url_pattern_match",
           "is_expected_installed_extensions", "is_expected_tabs", "is_expected_bookmarks",
           "is_expected_search_query", "is_cookie_deleted", "is_shortcut_on_desktop", "check_history_deleted",
           "check_enabled_experiments", "check_font_size", "is_added_to_steam_cart"]


def _url_of(tab: Any) -> Any:
    return tab.get("url", None) if isinstance(tab, Mapping) else tab


def is_expected_active_tab(active_tab_info: Any, rule: Mapping[str, Any]) -> float:
    """1 when the active tab's URL is ``rule["url"]`` (``type: url``; compare_urls), else 0."""
    if not active_tab_info or rule["type"] != "url":
        return 0.0
    return 1.0 if compare_urls(rule["url"], _url_of(active_tab_info)) else 0.0


def is_expected_active_tab_approximate(active_tab_info: Any, rule: Mapping[str, Any]) -> float:
    """1 when the active tab's URL equals ``rule["url"]`` once both lose their query strings, else 0."""
    if not active_tab_info or rule["type"] != "url":
        return 0.0
    return 1.0 if strip_query(rule["url"]) == strip_query(_url_of(active_tab_info)) else 0.0


def is_expected_url_pattern_match(result: Any, rules: Mapping[str, Any]) -> float:
    """1 when every regex in ``rules["expected"]`` is found in the URL (a string, or a dict's ``url``), else 0."""
    if not result:
        return 0.0
    if isinstance(result, str):
        url = result
    elif isinstance(result, dict) and "url" in result:
        url = result["url"]
    else:
        return 0.0
    return 1.0 if all(re.search(pattern, url) for pattern in rules["expected"]) else 0.0


def is_expected_installed_extensions(installed_extensions: Any, expected: Mapping[str, Any]) -> float:
    """1 when every name in ``expected["expected"]`` is installed, else 0."""
    if not installed_extensions:
        return 0.0
    return 1.0 if set(expected["expected"]) <= set(installed_extensions) else 0.0


def is_expected_tabs(open_tabs: Sequence[Mapping[str, str]], rule: Mapping[str, Any]) -> float:
    """1 when the open tabs are ``rule["urls"]`` (as many, each matched by compare_urls; order free), else 0."""
    if not open_tabs or rule["type"] != "url":
        return 0.0
    return 1.0 if lists_match(rule["urls"], [tab["url"] for tab in open_tabs], compare_urls) else 0.0


def _bar_children(bookmarks: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    return [entry for entry in bookmarks["bookmark_bar"]["children"] if entry["type"] == kind]


def is_expected_bookmarks(bookmarks: Any, rule: Mapping[str, Any]) -> float:
    """Bookmark-bar checks by ``rule["type"]``: folder names, site URLs, or the URLs in a 'Liked Authors'
    folder (each expected URL may be a list of acceptable ones)."""
    if not bookmarks:
        return 0.0
    kind = rule["type"]
    if kind == "bookmark_bar_folders_names":
        return 1.0 if {b["name"] for b in _bar_children(bookmarks, "folder")} == set(rule["names"]) else 0.0
    if kind == "bookmark_bar_websites_urls":
        return 1.0 if {b["url"] for b in _bar_children(bookmarks, "url")} == set(rule["urls"]) else 0.0
    if kind == "liked_authors_websites_urls":
        folder = next((b for b in _bar_children(bookmarks, "folder") if b["name"] == "Liked Authors"), None)
        if folder is None:
            return 0.0
        saved = {b["url"] for b in folder["children"] if b["type"] == "url"}
        choices = [[url] if isinstance(url, str) else url for url in rule["urls"]]
        return 1.0 if any(set(pick) == saved for pick in product(*choices)) else 0.0
    raise TypeError(f"{kind} not support yet!")


def is_expected_search_query(active_tab_info: Any, rules: Mapping[str, Any]) -> float:
    """1 when ``rules["expect"]["pattern"]`` is found in the active tab's URL, else 0."""
    if not active_tab_info:
        return 0.0
    return 1.0 if re.search(rules["expect"]["pattern"], active_tab_info["url"]) else 0.0


def is_cookie_deleted(cookie_data: Any, rule: Mapping[str, Any]) -> float:
    """1 when no cookie's host (column 1) matches a domain in ``rule["domains"]`` (compare_urls), else 0."""
    if rule["type"] != "domains":
        raise TypeError(f"{rule['type']} not support yet!")
    hosts = [cookie[1] for cookie in cookie_data]
    return 0.0 if any(compare_urls(domain, host) for domain in rule["domains"] for host in hosts) else 1.0


def is_shortcut_on_desktop(shortcuts: Mapping[str, str], rule: Mapping[str, Any]) -> float:
    """1 when a desktop shortcut has the line ``Name=<name>`` (``type: name``) or ``Exec=<exec>`` (``exec``)."""
    kind = rule["type"]
    if kind not in ("name", "exec"):
        raise TypeError(f"{kind} not support yet!")
    line = f"Name={rule['name']}\n" if kind == "name" else f"Exec={rule['exec']}\n"
    return 1.0 if any(line in content for content in shortcuts.values()) else 0.0


def check_history_deleted(history_data: Any, rule: Mapping[str, Any]) -> float:
    """1 when no history URL (column 0) contains a keyword of ``rule["keywords"]``, else 0."""
    if rule["type"] != "keywords":
        raise TypeError(f"{rule['type']} not support yet!")
    urls = [row[0] for row in history_data]
    return 0.0 if any(keyword in url for keyword in rule["keywords"] for url in urls) else 1.0


def check_enabled_experiments(enabled_experiments: Sequence[str], rule: Mapping[str, Any]) -> float:
    """1 when the enabled chrome://flags experiments (names before ``@``) are ``rule["names"]`` in order."""
    if rule["type"] != "names":
        raise TypeError(f"{rule['type']} not support yet!")
    return 1.0 if [name.split("@")[0] for name in enabled_experiments] == rule["names"] else 0.0


def check_font_size(font_size: Mapping[str, Any], rule: Mapping[str, Any]) -> float:
    """1 when ``default_font_size`` is ``rule["value"]`` (``type: value``) or strictly inside (min, max)."""
    size = font_size["default_font_size"]
    if rule["type"] == "value":
        return 1.0 if size == rule["value"] else 0.0
    if rule["type"] == "range":
        return 1.0 if rule["min"] < size < rule["max"] else 0.0
    raise TypeError(f"{rule['type']} not support yet!")


def is_added_to_steam_cart(active_tab_info: Mapping[str, Any], rule: Mapping[str, Any]) -> float:
    """1 when every text of ``rule["items"]`` is in the active tab's HTML, else 0."""
    return 1.0 if all(item in active_tab_info["content"] for item in rule["items"]) else 0.0
