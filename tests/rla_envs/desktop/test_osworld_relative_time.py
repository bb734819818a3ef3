"""rule_relativeTime: dates relative to a fixed 'today', worked out on a calendar."""

import datetime as dt

import pytest

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.general import check_direct_json_object
from rla_envs.desktop.osworld.relative_time import format_date, relative_date, resolve_relative_rules

MONDAY = dt.date(2026, 11, 30)      # a Monday
SATURDAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize("phrase, today, expected", [
    ("tomorrow", MONDAY, dt.date(2026, 12, 1)),
    ("this month", MONDAY, MONDAY),
    ("5th next month", MONDAY, dt.date(2026, 12, 5)),
    ("10th next month", dt.date(2026, 12, 20), dt.date(2027, 1, 10)),     # across the year
    ("this Saturday", MONDAY, SATURDAY),
    ("this Saturday", SATURDAY, SATURDAY),
    ("next Monday", MONDAY, dt.date(2026, 12, 7)),                          # today is excluded
    ("next Friday", MONDAY, dt.date(2026, 12, 4)),
    ("next Friday", SATURDAY, dt.date(2026, 12, 11)),
    ("next week Saturday", MONDAY, dt.date(2026, 12, 12)),
    ("next week Friday", dt.date(2026, 12, 6), dt.date(2026, 12, 11)),    # from a Sunday: the next week
    ("first monday four months later", MONDAY, dt.date(2027, 3, 1)),     # 1 March 2027 is a Monday
    ("first monday eight months later", MONDAY, dt.date(2027, 7, 5)),    # 1 July 2027 is a Thursday
])
def test_relative_dates(phrase, today, expected):
    assert relative_date(phrase, today) == expected


def test_unknown_phrase_and_impossible_date():
    with pytest.raises(EvaluationError, match="not supported"):
        relative_date("the day after Easter", MONDAY)
    with pytest.raises(EvaluationError, match="not a date"):
        relative_date("31st next month", dt.date(2026, 10, 5))              # there is no 31 November


def test_format_placeholders():
    day = dt.date(2027, 3, 1)
    assert format_date("{DoW}, {Month} {Day0D}, {Year}", day) == "Mon, Mar 01, 2027"
    assert format_date("{MonthFull} {DayD} ({month}, {MonthD}/{Month0D}) {DoWJ}", day) == "March 1 (march, 3/03) 月"
    assert format_date(["{Year}-{Month0D}-{Day0D}"], day) == ["2027-03-01"]


def test_resolved_rules_feed_check_direct_json_object():
    rules = {"relativeTime": {"from": "next week Saturday", "to": "next week Sunday"}, "timezone": "America/New_York",
             "expected": {"from": "Check In{DoW}, {Month} {Day0D}", "to": "Check Out{DoW}, {Month} {Day0D}",
                          "city": "New York City Hotels"}}
    resolved = resolve_relative_rules(rules, now=dt.datetime(2026, 11, 30, 9, 0))
    assert resolved["expected"] == {"from": "Check InSat, Dec 12", "to": "Check OutSun, Dec 13",
                                    "city": "New York City Hotels"}
    assert rules["expected"]["from"] == "Check In{DoW}, {Month} {Day0D}"       # the task itself is unchanged
    result = {"from": "Check InSat, Dec 12", "to": "Check OutSun, Dec 13", "city": "New York City Hotels"}
    assert check_direct_json_object(result, resolved) == 1.0
    assert check_direct_json_object(dict(result, to="Check OutSun, Dec 20"), resolved) == 0.0


def test_split_forms_and_weekend_pairs():
    split = {"relativeTime": {"from": "next Monday split", "to": "next Friday split"},
             "expected": {"puDay": "{DayD}", "puMonth": "{MonthD}", "puYear": "{Year}",
                          "doDay": "{DayD}", "doMonth": "{MonthD}", "doYear": "{Year}"}}
    resolved = resolve_relative_rules(split, now=dt.datetime(2026, 11, 30))
    assert resolved["expected"] == {"puDay": "7", "puMonth": "12", "puYear": "2026",
                                    "doDay": "11", "doMonth": "12", "doYear": "2026"}   # the Friday after that Monday
    weekend = {"relativeTime": {"from": "next Friday", "to": "next Sunday"},
               "expected": {"from": "{Day0D}", "to": "{Day0D}"}}
    # on a Saturday the next Friday is the 11th, and that weekend's Sunday the 13th (not tomorrow, the 6th)
    assert resolve_relative_rules(weekend, now=dt.datetime(2026, 12, 5))["expected"] == {"from": "11", "to": "13"}
