"""Differential tests: our Chrome metrics score what OSWorld's functions of the same name score.

Cases are generated here from a few URL families (matching, near-miss: another scheme, ``www.``, suffix, slash,
query or path, and wrong), then scored by ours and by desktop-env's (``osworld_oracle``). A disagreement names
the metric and the case. Errors count as a score: both must raise the same exception type.
"""

from itertools import product

import pytest

from rla_envs.desktop.osworld.metrics import get_metric
from tests.rla_envs.desktop.osworld_oracle import oracle_metric

pytestmark = pytest.mark.oracle

URLS = ["https://www.airbnb.com/", "https://airbnb.com", "http://www.airbnb.com", "https://www.airbnb.com.sg/",
        "https://www.airbnb.com/rooms?id=1", "https://www.airbnb.com/rooms?id=2", "https://www.airbnb.com/rooms",
        "airbnb.com", "https://news.airbnb.com/", "https://www.booking.com/", "https://www.google.com/search?q=cat",
        "https://www.google.com/search?q=dog#top", "file:///home/user/a.html"]
"""Matching and near-miss URL spellings (the product of these with themselves gives every pairing)."""


def _score(metric, args):
    try:
        return metric(*args)
    except Exception as exc:  # noqa: BLE001 - the oracle's errors are part of its behaviour
        return type(exc).__name__


def _agree(name, cases):
    ours, theirs = get_metric(name), oracle_metric("chrome", name)
    scores = [(_score(ours, case), _score(theirs, case)) for case in cases]
    disagreements = [(case, score) for case, score in zip(cases, scores) if score[0] != score[1]]
    assert not disagreements, f"{name}: ours vs OSWorld's: {disagreements[:5]}"
    assert len({ours_score for ours_score, _ in scores}) > 1, f"{name}: the cases must not all score the same"
    return len(cases)


def _active_tab_cases():
    rules = [{"type": "url", "url": url} for url in URLS] + [{"type": "title", "url": URLS[0]}]
    tabs = [{"url": url, "title": "t"} for url in URLS] + [None, {}, URLS[0]]
    return list(product(tabs, rules))


def _tabs_cases():
    tab_lists = [[{"url": u} for u in urls] for urls in
                 ([URLS[0]], [URLS[1]], [URLS[0], URLS[9]], [URLS[9], URLS[0]], [URLS[0], URLS[0]], [URLS[4]], [])]
    rules = [{"type": "url", "urls": urls} for urls in ([URLS[0]], [URLS[0], URLS[9]], [URLS[7], URLS[9]],
                                                         [URLS[2]], [URLS[4], URLS[5]])] + [{"type": "title", "urls": []}]
    return list(product(tab_lists, rules))


def _pattern_cases():
    results = URLS + [{"url": URLS[10]}, {"title": "x"}, None, "", 7]
    rules = [{"expected": ["google"]}, {"expected": [r"q=cat$", "search"]}, {"expected": [r"airbnb\.com/rooms"]},
             {"expected": []}, {"expected": ["^file://"]}]
    return list(product(results, rules))


def _bookmark_cases():
    def bar(*children):
        return {"bookmark_bar": {"children": list(children)}, "other": {"children": []}}

    folder = {"type": "folder", "name": "Work", "children": []}
    liked = {"type": "folder", "name": "Liked Authors", "children": [
        {"type": "url", "name": "a", "url": "https://a.org/"}, {"type": "url", "name": "b", "url": "https://b.org/"}]}
    site = {"type": "url", "name": "Site", "url": "https://www.booking.com/"}
    marks = [bar(folder), bar(folder, site), bar(site), bar(liked), bar(liked, folder), bar(), [], None]
    rules = [{"type": "bookmark_bar_folders_names", "names": ["Work"]},
             {"type": "bookmark_bar_folders_names", "names": ["Work", "Liked Authors"]},
             {"type": "bookmark_bar_websites_urls", "urls": ["https://www.booking.com/"]},
             {"type": "bookmark_bar_websites_urls", "urls": []},
             {"type": "unknown"}]
    cases = list(product(marks, rules))
    # 'liked_authors_websites_urls': OSWorld rewrites rule["urls"] in place, so each case gets a fresh rule
    for mark, urls in product(marks, (["https://a.org/", "https://b.org/"], [["https://x.org/", "https://a.org/"],
                                                                             "https://b.org/"], ["https://a.org/"])):
        cases.append((mark, {"type": "liked_authors_websites_urls", "urls": list(urls)}))
    return cases


def _fresh(cases):
    """Cases whose rules the oracle may mutate: each scorer gets its own copy."""
    import copy

    return [copy.deepcopy(case) for case in cases]


def test_active_tab_metrics_agree_with_osworld():
    cases = _active_tab_cases()
    assert _agree("is_expected_active_tab", cases) == len(cases)
    assert _agree("is_expected_active_tab_approximate", cases) == len(cases)


def test_is_expected_tabs_agrees_with_osworld():
    _agree("is_expected_tabs", _tabs_cases())


def test_url_pattern_and_search_query_agree_with_osworld():
    _agree("is_expected_url_pattern_match", _pattern_cases())
    tabs = [{"url": url} for url in URLS] + [None]
    _agree("is_expected_search_query", [(tab, {"expect": {"pattern": pattern}})
                                        for tab in tabs for pattern in ("q=cat", "airbnb", r"^https://www\.")])


def test_is_expected_bookmarks_agrees_with_osworld():
    cases = _bookmark_cases()
    ours, theirs = get_metric("is_expected_bookmarks"), oracle_metric("chrome", "is_expected_bookmarks")
    scores = [(_score(ours, case), _score(theirs, copy)) for case, copy in zip(cases, _fresh(cases))]
    assert [s for s, _ in scores] == [t for _, t in scores], list(zip(cases, scores))
    assert {1.0, 0.0, "TypeError"} <= {s for s, _ in scores}


def test_profile_metrics_agree_with_osworld():
    cookies = [(0, ".airbnb.com", "sid"), (0, "www.booking.com", "x"), (0, "google.com", "y")]
    _agree("is_cookie_deleted", [(rows, {"type": kind, "domains": domains})
                                 for rows in (cookies, cookies[1:], [], cookies[2:])
                                 for kind in ("domains", "names")
                                 for domains in (["airbnb.com"], [".airbnb.com"], ["https://www.google.com"], [])])
    history = [("https://www.youtube.com/watch?v=1", "a", 1), ("https://www.nytimes.com/", "b", 2)]
    _agree("check_history_deleted", [(rows, {"type": kind, "keywords": words})
                                     for rows in (history, history[1:], [])
                                     for kind in ("keywords", "domains")
                                     for words in (["youtube"], ["YouTube"], ["nytimes", "bbc"], [])])
    _agree("check_font_size", [({"default_font_size": size}, rule) for size in (12, 16, 20, 24)
                               for rule in ({"type": "value", "value": 20}, {"type": "range", "min": 16, "max": 24},
                                            {"type": "other"})])
    _agree("check_enabled_experiments", [(flags, {"type": kind, "names": ["a", "b"]})
                                         for flags in (["a@1", "b@2"], ["b@1", "a@2"], ["a"], [])
                                         for kind in ("names", "x")])
    _agree("is_expected_installed_extensions", [(installed, {"expected": ["Dark Reader", "uBlock"]})
                                                for installed in (["uBlock", "Dark Reader", "x"], ["uBlock"], [],
                                                                  None)])


def test_page_and_desktop_metrics_agree_with_osworld():
    page = {"url": URLS[0], "title": "Cart", "content": "<div>Dota 2 Soundtrack</div><div>Hades</div>"}
    _agree("is_added_to_steam_cart", [(page, {"items": items}) for items in
                                      (["Hades"], ["Hades", "Dota 2 Soundtrack"], ["Celeste"], [], ["hades"])])
    shortcuts = {"a.desktop": "[Desktop Entry]\nName=Discord\nExec=/opt/discord\n", "b.desktop": "Name=Disc"}
    _agree("is_shortcut_on_desktop", [(found, rule) for found in (shortcuts, {}, {"b.desktop": "Name=Discord"})
                                      for rule in ({"type": "name", "name": "Discord"},
                                                   {"type": "exec", "exec": "/opt/discord"},
                                                   {"type": "name", "name": "Disc"}, {"type": "url"},
                                                   {"type": "other"})])
