"""OSWorld's Chrome page getters: active_tab_html_parse (pure assembly from page answers, fast), and every
category, page_info and chrome_appearance_mode_ui read from a real Chromium on local pages (``desktop``)."""

import json

import pytest

from rla_envs.desktop.osworld import chrome_profile
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.devtools import ChromeDevTools
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters import EvalContext, run_getter
from rla_envs.desktop.osworld.page_queries import (APPEARANCE_URL, appearance_mode, dom_expression, dom_queries, html_parse_problem,
                                                   html_parse_result)
from rla_envs.desktop.osworld.runnable import not_runnable_reasons
from rla_envs.desktop.osworld.setup import run_steps
from tests.rla_envs.desktop.test_osworld_chrome import chrome_session  # noqa: F401 - the fixture, shared

# ----------------------------------------------------------------------------------------- configs (OSWorld's)
CLASS = {"category": "class",
         "class_multiObject": {"location-info": {"0": "start", "1": "end", "5": "missing"}},
         "class_multiObject_child": {"sep": {"0": "from", "1": "to"}},
         "class_multiObject_only_child": {"HAZ16": {"0": "content", "1": "time"}},
         "class_multiObject_search_exist": {"fT28tf": ["Black", "On sale", "Red", "is_other_exist"]},
         "class_singleObject": {"date": "date", "absent": "absent"}}
XPATH = {"category": "xpath", "xpathObject": {"/html/body/div[@id='x']/span": "first_span",
                                              "//h2[@data-automation='geo']": "city",
                                              "//nothing": "none", "//[bad": "bad"}}
INPUT = {"category": "input", "inputObject": {"//input[@id='name']": "name", "//textarea": "note",
                                              "//label[@id='wrap']/b": "labelled", "//h2": "not_a_field"}}
CLASS_URL = {"category": "class&url",
             "class_multiObject": {"filter-selector-link": ["women", "Jerseys", "nike"]},
             "class_multiObject_li": {"crumbs": ["Spider-Man", "Toys"]},
             "url_include_expected": ["women", "Men"],
             "url_include_expected_multichoice": {"S=4": "Price Low-High", "spiderman": "Spider-Man"}}


def _answers(queries, values):
    return [{"value": values[query]} if query in values else {"error": "SyntaxError"} for query in queries]


def test_dom_queries_ask_each_selector_once_by_kind():
    assert dom_queries(CLASS) == [("texts", ".location-info"), ("direct_texts", ".sep"), ("h3_texts", ".HAZ16"),
                                  ("texts", ".fT28tf"), ("texts", ".date"), ("texts", ".absent")]
    assert dom_queries(INPUT)[0] == ("xpath_value", "//input[@id='name']")
    assert dom_queries(CLASS_URL) == [("texts", ".filter-selector-link"), ("li_span_texts", ".crumbs")]
    expression = dom_expression(dom_queries(XPATH))
    assert json.dumps([["xpath_text", "//[bad"]])[1:-1] in expression and expression.startswith("((queries)")


def test_class_results_index_strip_and_check_existence_as_osworld():
    queries = dom_queries(CLASS)
    values = {("texts", ".location-info"): ["  Boston,\n\tBOS ", "NYC"], ("direct_texts", ".sep"): ["SEA", "NYC"],
              ("h3_texts", ".HAZ16"): [" TAP pass "], ("texts", ".fT28tf"): ["Black", "On sale", "$25 - $60"],
              ("texts", ".date"): [" Mon, Jan 05 ", "later"]}
    assert html_parse_result(CLASS, "", queries, _answers(queries, values)) == {
        "start": "Boston,\n\tBOS", "end": "NYC", "missing": "", "from": "SEA", "to": "NYC", "content": "TAP pass",
        "time": "", "Black": True, "On sale": True, "Red": False, "is_other_exist": True, "date": "Mon, Jan 05",
        "absent": ""}
    values[("texts", ".fT28tf")] = ["Black"]
    assert html_parse_result(CLASS, "", queries, _answers(queries, values))["is_other_exist"] is False


def test_xpath_and_input_results_are_stripped_first_matches_or_empty():
    queries = dom_queries(XPATH)
    values = {("xpath_text", "/html/body/div[@id='x']/span"): "  one ", ("xpath_text", "//h2[@data-automation='geo']"):
              "New York City Hotels", ("xpath_text", "//nothing"): None}
    assert html_parse_result(XPATH, "", queries, _answers(queries, values)) == {
        "first_span": "one", "city": "New York City Hotels", "none": "", "bad": ""}


def test_class_and_url_results_lowercase_keys_and_flag_other_filters():
    queries = dom_queries(CLASS_URL)
    values = {("texts", ".filter-selector-link"): ["Women", "jerseys", "Adidas"], ("li_span_texts", ".crumbs"): []}
    url = "https://shop.test/women?S=4"
    assert html_parse_result(CLASS_URL, url, queries, _answers(queries, values)) == {
        "women": True, "jerseys": True, "is_other_exist": True, "men": True, "price low-high": True,
        "spider-man": False}
    values[("texts", ".filter-selector-link")] = ["women"]
    assert html_parse_result(CLASS_URL, "file:///x", queries, _answers(queries, values)) == {
        "women": True, "is_other_exist": False, "men": False, "price low-high": False, "spider-man": False}


def test_label_category_is_refused_before_the_episode_and_at_evaluation(tmp_path):
    config = {"type": "active_tab_html_parse", "category": "label", "labelObject": {"Pick-up": "where"}}
    problem = html_parse_problem(config)
    assert problem.startswith("getter 'active_tab_html_parse' category 'label' is not supported")
    task = {"id": "t", "config": [], "evaluator": {"func": "check_direct_json_object", "result": config,
                                                   "expected": {"type": "rule", "rules": {"expected": {}}}}}
    assert not_runnable_reasons(task) == [problem]
    ctx = EvalContext(client=None, cache=FileCache(None), task_id=None, workdir=tmp_path)
    with pytest.raises(EvaluationError, match="category 'label'"):
        run_getter(ctx, config)


@pytest.mark.parametrize("category", [["class"], {"class": 1}, None, 3])
def test_a_category_that_is_not_a_string_is_a_reason_not_a_crash(category):
    # found by the fuzz test: a list category raised TypeError (unhashable) out of not_runnable_reasons
    config = {"type": "active_tab_html_parse", "category": category, "class_singleObject": {"a": "b"}}
    assert html_parse_problem(config) == (f"getter 'active_tab_html_parse' category {category!r} is not supported "
                                          "(supported: class, class&url, input, xpath)")


def test_recreation_getter_is_refused_as_needing_the_internet():
    task = {"id": "t", "config": [], "evaluator": {
        "func": "check_direct_json_object", "result": {"type": "active_tab_html_parse", **CLASS},
        "expected": {"type": "gotoRecreationPage_and_get_html_content", "selector": "class"}}}
    assert not_runnable_reasons(task) == ["getter 'gotoRecreationPage_and_get_html_content': needs the internet "
                                          "(it searches recreation.gov for the expected value)"]


def test_appearance_mode_prefers_light_then_dark_then_system_and_preferences_fallback():
    assert appearance_mode({"color_scheme": [2], "color_scheme2": [], "system_theme": [], "selected": []}) == "dark"
    assert appearance_mode({"color_scheme": [2], "selected": ["Light"]}) == "light"
    assert appearance_mode({"color_scheme": [0], "selected": ["100%"]}) == "system"
    assert appearance_mode({"system_theme": [0], "color_scheme2": [2]}) == "light"
    assert appearance_mode({"color_scheme": [True, "Dark "], "selected": ["Medium"]}) is None
    assert appearance_mode(None) is None
    assert chrome_profile.color_scheme({"browser": {"theme": {"color_scheme": 1, "color_scheme2": 2}}}) == "dark"
    assert chrome_profile.color_scheme({"browser": {"theme": {"color_scheme": " Light"}}}) == "light"
    assert chrome_profile.color_scheme({"browser": {"theme": {"color_scheme2": 2}},
                                        "extensions": {"theme": {"system_theme": 0}}}) == "light"
    assert chrome_profile.color_scheme({}) == "system"


# ----------------------------------------------------------------------------------------- a real Chromium
PARSE_PAGE = """<!DOCTYPE html><html><head><title>Parse me</title></head><body>
<div id="x"><span>  one </span><span>two</span></div>
<p class="location-info">  Boston,
\tBOS </p><p class="location-info">NYC</p>
<div class="sep">SEA<div class="aura-separator">-</div>NYC</div>
<div class="HAZ16"><h3> TAP pass </h3></div><div class="HAZ16"><p>no heading</p></div>
<span class="fT28tf">Black</span><span class="fT28tf">On sale</span><span class="fT28tf">$25 - $60</span>
<span class="date"> Mon, Jan 05 </span>
<h2 data-automation="geo">New York City Hotels</h2>
<input id="name" value="typed over"><textarea>  a note </textarea><label id="wrap"><b>Mail</b><input value="x@y.z"></label>
<a class="filter-selector-link">Women</a><a class="filter-selector-link">jerseys</a>
<ul class="crumbs"><li class="catAllProducts"><span>Spider-Man<b style="display:none">HIDDEN</b></span></li>
<li class="catAllProducts"><span>Toys</span></li><li><span>Kids</span></li></ul>
<script>document.getElementById('name').value = ' James Smith ';</script>
</body></html>"""


@pytest.mark.desktop
def test_page_getters_read_a_real_chromium(chrome_session, tmp_path):  # noqa: F811 - the imported fixture
    client, site = chrome_session
    client.upload("~/site/parse.html", PARSE_PAGE.encode())
    ctx = EvalContext(client=client, cache=FileCache(None), task_id=None, workdir=tmp_path)
    run_steps(client, [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": [
        f"{site}/a.html", f"{site}/parse.html?cat=women&S=4"]}}])

    assert run_getter(ctx, {"type": "active_tab_html_parse", **CLASS}) == {
        "start": "Boston,\n\tBOS", "end": "NYC", "missing": "", "from": "SEA", "to": "NYC", "content": "TAP pass",
        "time": "", "Black": True, "On sale": True, "Red": False, "is_other_exist": True, "date": "Mon, Jan 05",
        "absent": ""}
    assert run_getter(ctx, {"type": "active_tab_html_parse", **XPATH}) == {
        "first_span": "one", "city": "New York City Hotels", "none": "", "bad": ""}
    assert run_getter(ctx, {"type": "active_tab_html_parse", **INPUT}) == {
        "name": "James Smith", "note": "a note", "labelled": "x@y.z", "not_a_field": ""}
    assert run_getter(ctx, {"type": "active_tab_html_parse", **CLASS_URL}) == {  # innerText hides the hidden <b>
        "women": True, "jerseys": True, "spider-man": True, "toys": True, "is_other_exist": False, "men": True,
        "price low-high": True}

    before = run_getter(ctx, {"type": "open_tabs_info"})
    info = run_getter(ctx, {"type": "page_info", "url": f"{site}/b.html"})
    assert (info["title"], info["url"]) == ("Page B", f"{site}/b.html") and "Page B body" in info["content"]
    assert run_getter(ctx, {"type": "open_tabs_info"}) == before  # its tab closed again

    devtools = ChromeDevTools(client)
    for system_theme, mode in ((1, "dark"), (0, "light")):  # GTK counts as dark, Classic as light (OSWorld's probe)
        devtools.visit(APPEARANCE_URL, expression=_SET_SYSTEM_THEME % system_theme)
        assert run_getter(ctx, {"type": "chrome_appearance_mode_ui"}) == mode
    assert run_getter(ctx, {"type": "open_tabs_info"}) == before


_SET_SYSTEM_THEME = ("new Promise((resolve) => chrome.settingsPrivate.setPref('extensions.theme.system_theme', %d, '',"
                     " resolve))")
