"""OSWorld's Chrome getters: tabs through the DevTools endpoint, settings and data from the profile files.

    tabs     active_tab_info, open_tabs_info, active_url_from_accessTree, active_tab_url_parse, url_dashPart,
             url_path_parse (:mod:`..devtools`; the parsing is in :mod:`..urls`)
    pages    active_tab_html_parse (the active page's elements), page_info (a URL loaded in a new tab),
             chrome_appearance_mode_ui (the settings page's mode) (:mod:`..page_queries`)
    profile  bookmarks, history, cookie_data, the Preferences readers of :data:`..chrome_profile.PREFERENCE_READERS`
             (default_search_engine, profile_name, chrome_font_size, enable_do_not_track, enable_safe_browsing,
             new_startup_page, find_unpacked_extension_path, data_delete_automacally, chrome_color_scheme, ...)
    desktop  shortcuts_on_desktop

The active URL: OSWorld reads the address bar's text from the accessibility tree, puts ``goto_prefix`` before it
and loads that URL in a new tab; here the active tab's own URL (and page) is read from DevTools, the URL those
steps rebuild, without loading the page a second time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld import chrome_profile, page_queries
from rla_envs.desktop.osworld.devtools import ChromeDevTools, ChromeTab
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter, target_path
from rla_envs.desktop.osworld.urls import dash_part, product_path_params, query_params
from rla_envs.desktop.osworld.session_probe import probe_command

__all__ = ["GETTERS", "TAB_GETTERS"]


def _active_tab(ctx: EvalContext, *, html: bool = False) -> ChromeTab | None:
    try:
        return ChromeDevTools(ctx.client).active_tab(html=html)
    except ControllerError as exc:  # OSWorld returns None when it cannot reach Chrome; the metric scores 0
        raise EvaluationError(f"Chrome's active tab: {exc}") from exc


def _active_url(ctx: EvalContext) -> str | None:
    tab = _active_tab(ctx)
    return None if tab is None else tab.url


def get_active_tab_info(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str] | None:
    """``{"title", "url", "content"}`` of the active tab (its HTML as ``content``), or None without tabs."""
    tab = _active_tab(ctx, html=True)
    return None if tab is None else tab.info()


def get_open_tabs_info(ctx: EvalContext, config: Mapping[str, Any]) -> list[dict[str, str]]:
    """``[{"title", "url"}, ...]`` of every open tab."""
    try:
        return [tab.info() for tab in ChromeDevTools(ctx.client).tabs()]
    except ControllerError as exc:
        raise EvaluationError(f"Chrome's open tabs: {exc}") from exc


def get_active_url(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """The active tab's URL."""
    return _active_url(ctx)


def get_active_tab_url_parse(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The active URL's query parameters named in ``parse_keys`` (see :func:`..urls.query_params`)."""
    url = _active_url(ctx)
    if url is None:
        return None
    return query_params(url, config["parse_keys"], replace=config.get("replace"),
                        split_list=bool(config.get("split_list", False)))


def get_url_dash_part(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Part ``partIndex`` of the active URL split on ``/``, as a string or ``{key: part}`` (``returnType``)."""
    url = _active_url(ctx)
    try:
        index = int(config["partIndex"])
    except (KeyError, TypeError, ValueError):
        return None
    part = None if url is None else dash_part(url, index, drop_query=bool(config.get("needDeleteId", False)))
    if part is None:
        return None
    if config.get("returnType") == "string":
        return part
    if config.get("returnType") == "json":
        return {config["key"]: part}
    return None


def get_url_path_parse(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The facets of a Macy's listing in the active URL's path (see :func:`..urls.product_path_params`)."""
    url = _active_url(ctx)
    return None if url is None else product_path_params(url, config["parse_keys"])


def get_active_tab_html_parse(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """Texts of the active page's elements picked by class, XPath or form field, under the config's keys (see
    :func:`..page_queries.html_parse_result`); None without tabs."""
    problem = page_queries.html_parse_problem(config)
    if problem:
        raise EvaluationError(problem)
    try:
        queries = page_queries.dom_queries(config)
        found = ChromeDevTools(ctx.client).evaluate_active(page_queries.dom_expression(queries))
    except (ControllerError, ValueError) as exc:
        raise EvaluationError(f"active_tab_html_parse: {exc}") from exc
    if found is None:
        return None
    tab, page = found
    if not isinstance(page, Mapping):
        raise EvaluationError(f"active_tab_html_parse: the page at {tab.url} gave no answers ({page!r:.200})")
    return page_queries.html_parse_result(config, str(page.get("url") or tab.url), queries, page["answers"])


def get_page_info(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str]:
    """``{"title", "url", "content"}`` of ``config["url"]`` loaded in a new tab (closed again afterwards)."""
    try:
        tab, _ = ChromeDevTools(ctx.client).visit(config["url"], html=True)
    except ControllerError as exc:
        raise EvaluationError(f"page_info {config['url']}: {exc}") from exc
    return tab.info()


def get_chrome_appearance_mode_ui(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """``"light"``, ``"dark"`` or ``"system"``: what chrome://settings/appearance shows (see
    :func:`..page_queries.appearance_mode`), else what Preferences hold (OSWorld's fallback)."""
    probe = page_queries.APPEARANCE_PROBE % (APPEARANCE_WAIT_MS,)
    try:
        _, answer = ChromeDevTools(ctx.client).visit(page_queries.APPEARANCE_URL, expression=probe)
    except ControllerError:
        answer = None  # OSWorld falls back to the Preferences file when the settings page cannot be read
    return page_queries.appearance_mode(answer) or get_preference("chrome_color_scheme", ctx, config)


APPEARANCE_WAIT_MS = 5000
"""How long the settings page may take to load its prefs before the probe reads what it has."""


def _profile_file(ctx: EvalContext, path: str) -> bytes | None:
    try:
        return ctx.client.get_file(path)
    except ControllerError as exc:
        raise EvaluationError(f"could not read {path} from the session: {exc}") from exc


def get_preference(kind: str, ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """What OSWorld's getter ``kind`` reads from Chrome's Preferences (its fallback when that fails)."""
    read, fallback = chrome_profile.PREFERENCE_READERS[kind]
    try:
        return read(chrome_profile.load_json(_profile_file(ctx, chrome_profile.PREFERENCES)))
    except (ValueError, KeyError, TypeError, AttributeError):
        return fallback


def get_bookmarks(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The ``roots`` of Chrome's Bookmarks file (``[]`` when there is none)."""
    return chrome_profile.bookmark_roots(_profile_file(ctx, chrome_profile.BOOKMARKS))


def _database_rows(ctx: EvalContext, config: Mapping[str, Any], path: str, read: Any) -> Any:
    data = _profile_file(ctx, path)
    if data is None:
        return None
    local = target_path(ctx, str(config.get("dest") or path.rsplit("/", 1)[-1]))
    local.write_bytes(data)
    try:
        return read(local)
    except Exception:  # noqa: BLE001 - OSWorld returns None for an unreadable database (sqlite3 errors vary)
        return None


def get_history(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """``(url, title, last_visit_time)`` rows of Chrome's History (None when it cannot be read)."""
    return _database_rows(ctx, config, chrome_profile.HISTORY, chrome_profile.history_rows)


def get_cookie_data(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The rows of Chrome's Cookies table (None when it cannot be read)."""
    return _database_rows(ctx, config, chrome_profile.COOKIES, chrome_profile.cookie_rows)


_SHORTCUTS_SCRIPT = ("import glob, json, os\n"
                     "found = {}\n"
                     "for path in sorted(glob.glob(os.path.expanduser('~/Desktop/*.desktop'))):\n"
                     "    with open(path, encoding='utf-8', errors='replace') as f:\n"
                     "        found[os.path.basename(path)] = f.read()\n"
                     "print(json.dumps(found))\n")


def get_shortcuts_on_desktop(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, str]:
    """``{file name: content}`` of every ``.desktop`` file on the session's desktop (``~/Desktop``)."""
    try:
        reply = ctx.client.execute(probe_command(_SHORTCUTS_SCRIPT))
        return json.loads(reply.get("output") or "{}")
    except (ControllerError, ValueError) as exc:
        raise EvaluationError(f"shortcuts_on_desktop: {exc}") from exc


TAB_GETTERS: dict[str, Getter] = {
    "active_tab_info": get_active_tab_info,
    "open_tabs_info": get_open_tabs_info,
    "active_url_from_accessTree": get_active_url,
    "active_tab_url_parse": get_active_tab_url_parse,
    "url_dashPart": get_url_dash_part,
    "url_path_parse": get_url_path_parse,
    "active_tab_html_parse": get_active_tab_html_parse,
    "page_info": get_page_info,
    "chrome_appearance_mode_ui": get_chrome_appearance_mode_ui,
}
"""The getters that need a running Chrome (its DevTools endpoint)."""

GETTERS: dict[str, Getter] = {
    **TAB_GETTERS,
    "bookmarks": get_bookmarks,
    "history": get_history,
    "cookie_data": get_cookie_data,
    "shortcuts_on_desktop": get_shortcuts_on_desktop,
    **{kind: partial(get_preference, kind) for kind in chrome_profile.PREFERENCE_READERS},
}
"""The Chrome getters, by OSWorld ``type``."""
