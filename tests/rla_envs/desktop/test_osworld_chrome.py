"""Chrome support for OSWorld tasks: URL and profile parsing, metrics, setup steps and refusals (fast), and tabs
opened, listed, closed and read in a real Chromium in a real session (``desktop``; local file pages, no internet)."""

import json
import shutil
import sqlite3
from datetime import datetime

import pytest

from rla_envs.desktop.osworld import chrome_profile
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.getters import EvalContext, run_getter
from rla_envs.desktop.osworld.metrics import get_metric
from rla_envs.desktop.osworld.runnable import not_runnable_reasons
from rla_envs.desktop.osworld.setup import EMPTY_HISTORY_TASK, run_steps
from rla_envs.desktop.osworld.urls import compare_urls, dash_part, product_path_params, query_params


# ----------------------------------------------------------------------------------------- pure parsing
def test_compare_urls_ignores_www_suffix_and_slash_but_not_scheme_path_or_query():
    assert compare_urls("https://www.airbnb.com/", "https://airbnb.com.sg")
    assert compare_urls("airbnb.com/rooms", "http://www.airbnb.com/rooms")
    assert not compare_urls("https://airbnb.com", "http://airbnb.com")
    assert not compare_urls("https://airbnb.com/rooms", "https://airbnb.com/")
    assert not compare_urls("https://airbnb.com/?a=1", "https://airbnb.com/?a=2")
    assert not compare_urls("https://news.airbnb.com", "https://airbnb.com")


def test_query_params_renames_and_splits_as_osworld():
    url = "https://www.rentalcars.com/search?locationName=Z%C3%BCrich&sort=PRICE&cat=large,suv"
    assert query_params(url, ["locationName", "missing"]) == {"locationName": "Zürich", "missing": ""}
    assert query_params(url, ["sort", "cat"], replace={"sort": "sortBy"}, split_list=True) == {
        "cat": ["large", "suv"], "sortBy": ["PRICE"]}
    assert dash_part("https://a.com/x/item-name?id=3", 4, drop_query=True) == "item-name"
    assert dash_part("https://a.com/x", 9) is None


def test_product_path_params_reads_macys_facets():
    url = ("https://www.macys.com/shop/mens-clothing/shirts/Men_regular_size_t,Price_discount_range/"
           "L,50_PERCENT_%20off%20%26%20more?id=1")
    assert product_path_params(url, ["Men_regular_size_t", "Price_discount_range"]) == {
        "mens_clothing": True, "shirts": True, "short_sleeve": None, "Men_regular_size_t": "L",
        "Price_discount_range": "50_PERCENT_ off & more"}


def test_preference_readers_and_their_osworld_fallbacks():
    prefs = {"profile": {"name": "Thomas", "default_content_setting_values": {"cookies": 4}},
             "enable_do_not_track": True, "safebrowsing": {"enabled": True},
             "webkit": {"webprefs": {"default_font_size": 20}}, "session": {"restore_on_startup": 5},
             "default_search_provider_data": {"template_url_data": {"short_name": "Bing"}},
             "extensions": {"settings": {"abc": {"path": "/home/user/ext", "manifest": {"name": "Helper"}}}}}
    expected = {"profile_name": "Thomas", "enable_do_not_track": "true", "enable_safe_browsing": "true",
                "chrome_font_size": {"default_font_size": 20}, "new_startup_page": "true",
                "default_search_engine": "Bing", "find_unpacked_extension_path": ["/home/user/ext"],
                "find_installed_extension_name": ["Helper"], "data_delete_automacally": "true",
                "enable_enhanced_safety_browsing": "false"}
    for kind, value in expected.items():
        read, _ = chrome_profile.PREFERENCE_READERS[kind]
        assert read(prefs) == value, kind
    assert chrome_profile.PREFERENCE_READERS["default_search_engine"][0]({}) == "Google"
    assert chrome_profile.PREFERENCE_READERS["new_startup_page"][0]({"session": {}}) == "false"


# ----------------------------------------------------------------------------------------- metrics
def test_tab_metrics_score_matching_and_wrong_tabs():
    tabs = [{"url": "https://www.booking.com/", "title": "b"}, {"url": "https://airbnb.com", "title": "a"}]
    rule = {"type": "url", "urls": ["https://airbnb.com/", "https://booking.com"]}
    assert get_metric("is_expected_tabs")(tabs, rule) == 1.0
    assert get_metric("is_expected_tabs")(tabs[:1], rule) == 0.0
    active = get_metric("is_expected_active_tab")
    assert active({"url": "https://www.airbnb.com/"}, {"type": "url", "url": "https://airbnb.com"}) == 1.0
    assert active({"url": "https://www.airbnb.com/s"}, {"type": "url", "url": "https://airbnb.com"}) == 0.0
    pattern = get_metric("is_expected_url_pattern_match")
    assert pattern({"url": "https://www.google.com/search?q=cat"}, {"expected": ["q=cat", "google"]}) == 1.0
    assert pattern("https://www.google.com/search?q=dog", {"expected": ["q=cat"]}) == 0.0


def test_history_and_cookie_metrics():
    history = [("https://www.youtube.com/watch?v=1", "v", 1), ("https://www.bbc.co.uk/", "BBC", 2)]
    assert get_metric("check_history_deleted")(history, {"type": "keywords", "keywords": ["youtube"]}) == 0.0
    assert get_metric("check_history_deleted")(history[1:], {"type": "keywords", "keywords": ["youtube"]}) == 1.0
    cookies = [(0, ".amazon.com", "session-id")]
    assert get_metric("is_cookie_deleted")(cookies, {"type": "domains", "domains": [".amazon.com"]}) == 0.0
    assert get_metric("is_cookie_deleted")([], {"type": "domains", "domains": [".amazon.com"]}) == 1.0
    with pytest.raises(TypeError):
        get_metric("is_cookie_deleted")(cookies, {"type": "names"})


# ----------------------------------------------------------------------------------------- setup and refusals
class RecordingClient:
    """Stands in for the controller client: records uploads."""

    def __init__(self):
        self.uploads = {}

    def upload(self, path, data):
        self.uploads[path] = data


def _empty_history(folder):
    path = folder / "chrome" / EMPTY_HISTORY_TASK / "history_empty.sqlite"
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER, "
                   "typed_count INTEGER, last_visit_time INTEGER, hidden INTEGER)")
        db.execute("CREATE TABLE visits (id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER, from_visit "
                   "INTEGER, transition INTEGER, segment_id INTEGER, visit_duration INTEGER)")
    db.close()
    return path


def test_update_browse_history_writes_osworld_rows_into_the_profile(tmp_path):
    empty = _empty_history(tmp_path / "cache")
    client = RecordingClient()
    before = chrome_profile.chrome_time(datetime.now())
    run_steps(client, [{"type": "update_browse_history", "parameters": {"history": [
        {"url": "https://www.youtube.com/watch?v=1", "title": "Video", "visit_time_from_now_in_seconds": 3600},
        {"url": "https://www.bbc.co.uk/", "title": "BBC", "visit_time_from_now_in_seconds": 60}]}}],
        cache=FileCache(tmp_path / "cache"))
    written = tmp_path / "History"
    written.write_bytes(client.uploads[chrome_profile.HISTORY])
    rows = chrome_profile.history_rows(written)
    assert [(url, title) for url, title, _ in rows] == [("https://www.youtube.com/watch?v=1", "Video"),
                                                       ("https://www.bbc.co.uk/", "BBC")]
    hour_us = 3600 * 1_000_000
    assert before - hour_us - 5_000_000 <= rows[0][2] <= before - hour_us + 60_000_000
    assert sqlite3.connect(written).execute("SELECT url, transition FROM visits").fetchall() == [
        (1, chrome_profile.HISTORY_VISIT_TRANSITION), (2, chrome_profile.HISTORY_VISIT_TRANSITION)]
    assert chrome_profile.history_rows(empty) == []  # the cached database itself is left empty (copied first)


def test_runnable_refuses_drive_and_login_and_a_history_without_its_cached_database(tmp_path):
    task = {"id": "t", "config": [{"type": "googledrive", "parameters": {}}, {"type": "login", "parameters": {}},
                                  {"type": "update_browse_history", "parameters": {"history": []}}],
            "evaluator": {"func": "is_expected_tabs", "result": {"type": "open_tabs_info"},
                          "expected": {"type": "rule", "rules": {"type": "url", "urls": []}}}}
    reasons = not_runnable_reasons(task, cache=FileCache(tmp_path), has_app=lambda name: True)
    assert reasons[0] == "setup step 'googledrive': needs the internet and OSWorld's Google Drive account"
    assert reasons[1] == "setup step 'login': signs in to a website (Google Drive), which needs the internet"
    assert reasons[2].startswith("download: https://huggingface.co/") and "history_empty.sqlite" in reasons[2]
    assert len(reasons) == 3
    _empty_history(tmp_path)
    assert len(not_runnable_reasons(task, cache=FileCache(tmp_path), has_app=lambda name: True)) == 2


# ----------------------------------------------------------------------------------------- a real Chromium
PAGE = "<!DOCTYPE html><html><head><title>{title}</title></head><body><p class='x'>{title} body</p></body></html>"


@pytest.fixture
def chrome_session(desktop_client, tmp_path):
    """The session with Chromium running on port 1337 (OSWorld's launch step) and two local pages uploaded."""
    browser = shutil.which("google-chrome") or shutil.which("chromium")
    if browser is None:
        pytest.skip("neither google-chrome nor chromium is installed (scripts/install-desktop.sh)")
    for name in ("a", "b"):
        desktop_client.upload(f"~/site/{name}.html", PAGE.format(title=f"Page {name.upper()}").encode())
    home = desktop_client.execute(["sh", "-c", "echo $HOME"])["output"].strip()
    command = [browser, "--remote-debugging-port=1337"]
    if browser.endswith("chromium"):  # no launcher yet: its flags by hand
        command += ["--no-first-run", "--no-default-browser-check", "--no-sandbox",
                    f"--user-data-dir={home}/.config/google-chrome"]
    run_steps(desktop_client, [{"type": "launch", "parameters": {"command": command}}])
    return desktop_client, f"file://{home}/site"


@pytest.mark.desktop
def test_tabs_open_list_close_and_active_page_in_a_real_chromium(chrome_session, tmp_path):
    client, site = chrome_session
    ctx = EvalContext(client=client, cache=FileCache(None), task_id=None, workdir=tmp_path)
    run_steps(client, [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": [f"{site}/a.html",
                                                                                  f"{site}/b.html"]}}])
    tabs = run_getter(ctx, {"type": "open_tabs_info"})
    assert sorted((tab["url"], tab["title"]) for tab in tabs) == [(f"{site}/a.html", "Page A"),
                                                                  (f"{site}/b.html", "Page B")]
    rule = {"type": "url", "urls": [f"{site}/b.html", f"{site}/a.html"]}
    assert get_metric("is_expected_tabs")(tabs, rule) == 1.0

    active = run_getter(ctx, {"type": "active_tab_info"})
    assert active["url"] == f"{site}/b.html" and active["title"] == "Page B"
    assert "<p class=\"x\">Page B body</p>" in active["content"]
    assert get_metric("is_expected_active_tab")(active, {"type": "url", "url": f"{site}/b.html"}) == 1.0
    assert get_metric("is_expected_active_tab")(active, {"type": "url", "url": f"{site}/a.html"}) == 0.0

    run_steps(client, [{"type": "chrome_close_tabs", "parameters": {"urls_to_close": [f"{site}/b.html"]}}])
    tabs = run_getter(ctx, {"type": "open_tabs_info"})
    assert [tab["url"] for tab in tabs] == [f"{site}/a.html"]
    assert get_metric("is_expected_tabs")(tabs, rule) == 0.0
    prefs = json.loads(client.get_file(chrome_profile.PREFERENCES) or b"{}")
    assert run_getter(ctx, {"type": "profile_name"}) == prefs.get("profile", {}).get("name")
