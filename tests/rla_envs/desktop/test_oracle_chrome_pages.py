"""Differential tests: what our Chrome page getters give, scored by our metrics and by OSWorld's of the same name.

The getters' dicts are built here by :func:`html_parse_result` and :func:`appearance_mode` from page answers
(matching, near-miss: case, whitespace, an extra or missing filter, a wrong URL; and wrong), then scored against
the rules of OSWorld's own Chrome tasks by ours and by desktop-env's (``osworld_oracle``): they must agree.
"""

import pytest

from rla_envs.desktop.osworld.metrics import get_metric
from rla_envs.desktop.osworld.page_queries import appearance_mode, dom_queries, html_parse_result
from tests.rla_envs.desktop.osworld_oracle import oracle_metric

pytestmark = pytest.mark.oracle


def _score(metric, args):
    try:
        return metric(*args)
    except Exception as exc:  # noqa: BLE001 - the oracle's errors are part of its behaviour
        return type(exc).__name__


def _agree(module, name, cases):
    ours, theirs = get_metric(name), oracle_metric(module, name)
    scores = [(_score(ours, case), _score(theirs, case)) for case in cases]
    disagreements = [(case, score) for case, score in zip(cases, scores) if score[0] != score[1]]
    assert not disagreements, f"{name}: ours vs OSWorld's: {disagreements[:5]}"
    assert len({ours_score for ours_score, _ in scores}) > 1, f"{name}: the cases must not all score the same"
    return len(cases)


def _parsed(config, url="", **texts_by_query):
    """The getter's dict for a page whose answer to each ``kind__n`` query (in :func:`dom_queries` order) is
    given; an unanswered query answers an error."""
    queries = dom_queries(config)
    answers = [{"value": texts_by_query[f"q{index}"]} if f"q{index}" in texts_by_query else {"error": "x"}
               for index in range(len(queries))]
    return html_parse_result(config, url, queries, answers)


# The configs and rules of OSWorld's tasks (chrome/7f52cab9, 9f3f70fc, cabb3bae, 6c4c23a1, da46d875, b7895e80)
SEARCH_EXIST = {"category": "class", "class_multiObject_search_exist": {
    "fT28tf": ["Black", "$25 - $60", "On sale", "is_other_exist"]}}
SEARCH_EXIST_RULE = {"expected": {"Black": True, "$25 - $60": True, "On sale": True, "is_other_exist": False}}
FILTER_URL = {"category": "class&url", "class_multiObject": {
    "filter-selector-link": ["over $60", "women", "jerseys", "nike"]},
    "url_include_expected": ["over $60", "women", "jerseys", "nike"]}
FILTER_URL_RULE = {"expected": {"over $60": True, "women": True, "jerseys": True, "nike": True,
                                "is_other_exist": False}}
CRUMBS_URL = {"category": "class&url", "class_multiObject_li": {
    "pmpSearch_breadcrumb": ["Spider-Man", "Toys", "Kids"], "sbSelector": ["Price Low-High"]},
    "url_include_expected_multichoice": {"Spider-Man": "Spider-Man", "spiderman": "Spider-Man", "Toys": "Toys",
                                         "Kids": "Kids", "S=4": "Price Low-High"}}
CRUMBS_URL_RULE = {"expected": {"spider-man": True, "toys": True, "kids": True, "price low-high": True,
                                "is_other_exist": False}}
FLIGHT = {"category": "class", "class_singleObject": {"mach-flight-context-info__wrapper--date": "time",
                                                      "mach-global-tabs-small__wrapper__tab--active": "category"},
          "class_multiObject_child": {"mach-flight-context-info__wrapper__info--separator": {"0": "start", "1": "end"}}}
FLIGHT_RULE = {"expected": {"start": "SEA", "end": "NYC", "time": "Sat, Jul 05, 2025", "category": "Miles"}}
FORM = {"category": "input", "inputObject": {"//form//input[1]": "name", "//form//input[2]": "mail"}}
FORM_RULE = {"expected": {"name": "James Smith", "mail": "james.smith@gmail.com"}}
APPOINTMENT = {"category": "class", "class_multiObject_only_child": {"HAZ16": {"0": "content", "1": "time"}}}
APPOINTMENT_RULE = {"expected": {"content": "Apply for Transportation Access Pass (TAP) CharlieCard non-auto "
                                            "approval", "time": "March 02, 10:15 AM"}}


def test_html_parse_results_score_as_osworld_on_its_tasks_rules():
    cases = []
    for shown in (["Black", "$25 - $60", "On sale"], [" Black ", "$25 - $60", "On sale"], ["Black", "On sale"],
                  ["Black", "$25 - $60", "On sale", "Free shipping"], ["black", "$25 - $60", "On sale"], []):
        cases.append((_parsed(SEARCH_EXIST, q0=shown), SEARCH_EXIST_RULE))
    for shown, url in ((["Over $60", "Women", "Jerseys", "Nike"], "https://shop.test/nike/women/jerseys/over $60"),
                       (["Over $60", "Women", "Jerseys", "Nike"], "https://shop.test/nike/women/jerseys/over%20%2460"),
                       (["Women", "Jerseys", "Nike", "Hats"], "https://shop.test/over $60/women/jerseys/nike"),
                       (["Men", "Jerseys", "Nike", "over $60"], "https://shop.test/over $60/men/jerseys/nike")):
        cases.append((_parsed(FILTER_URL, url, q0=shown), FILTER_URL_RULE))
    for crumbs, sort, url in ((["Spider-Man", "Toys", "Kids"], ["Price Low-High"], "https://s.test/?S=4"),
                              (["Spider-Man", "Toys"], ["Price Low-High"], "https://s.test/kids?s=4"),
                              (["Spider-Man", "Toys", "Kids", "Sale"], ["Price Low-High"], "https://s.test/?S=4"),
                              (["Spiderman", "Toys", "Kids"], ["Best Match"], "https://s.test/spiderman")):
        cases.append((_parsed(CRUMBS_URL, url, q0=crumbs, q1=sort), CRUMBS_URL_RULE))
    for date, tab, cities in ((" Sat, Jul 05, 2025 ", "Miles", ["SEA", "NYC"]), ("Sat, Jul 05, 2025", "Money",
                              ["SEA", "NYC"]), ("Sat, Jul 05, 2025", "Miles", ["NYC", "SEA"]),
                             ("Sat, Jul 5, 2025", "Miles", ["SEA", "NYC"]), (None, None, ["SEA"])):
        texts = {"q1": [date] if date else [], "q2": [tab] if tab else []}
        cases.append((_parsed(FLIGHT, q0=cities, **texts), FLIGHT_RULE))
    for name, mail in (("James Smith ", "james.smith@gmail.com"), ("james smith", "james.smith@gmail.com"),
                       ("James Smith", None), (None, None)):
        cases.append((_parsed(FORM, **({"q0": name} if name else {}), **({"q1": mail} if mail else {})), FORM_RULE))
    for headings in ((APPOINTMENT_RULE["expected"]["content"], "March 02, 10:15 AM"),
                     (APPOINTMENT_RULE["expected"]["content"] + " ", " March 02, 10:15 AM"),
                     (APPOINTMENT_RULE["expected"]["content"],), ("Other service", "March 02, 10:15 AM")):
        cases.append((_parsed(APPOINTMENT, q0=list(headings)), APPOINTMENT_RULE))
    cases.append((None, FORM_RULE))  # no tab at all
    count = _agree("general", "check_direct_json_object", cases)
    assert count == 28


def test_appearance_modes_score_as_osworld_on_its_task_rule():
    rule = {"expected": ["light", "system"]}
    probes = [{"system_theme": [1], "selected": ["Light"]}, {"system_theme": [1], "selected": ["Dark"]},
              {"system_theme": [0], "selected": ["Dark"]}, {"system_theme": [1], "selected": ["Device"]},
              {"color_scheme2": [0], "selected": ["100%"]}, {"color_scheme2": [2]}]
    modes = [appearance_mode(probe) for probe in probes]
    assert modes == ["light", "dark", "light", "dark", "system", "dark"]
    assert _agree("general", "match_in_list", [(mode, rule) for mode in modes]) == 6
