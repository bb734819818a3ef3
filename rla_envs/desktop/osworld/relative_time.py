"""The ``rule_relativeTime`` getter: an expected value whose dates are relative to today ("next Monday").

Config, as in OSWorld::

    {"type": "rule_relativeTime", "rules": {
        "relativeTime": {"from": "next week Saturday", "to": "next week Sunday"},   # "to" is optional
        "timezone": "America/New_York",                                              # optional, default UTC
        "expected": {"from": "{DoW}, {Month} {Day0D}", "to": "{DoW}, {Month} {Day0D}", "city": "..."}}}

The date of ``from`` fills ``expected["time"]`` (without ``to``) or ``expected["from"]``; the date of ``to``
fills ``expected["to"]``. The ``... split`` forms fill ``puDay``/``puMonth``/``puYear`` (from) and
``doDay``/``doMonth``/``doYear`` (to). Placeholders: ``{DoW}`` (Mon), ``{DoWJ}`` (月), ``{Month}`` (Jan),
``{MonthFull}`` (January), ``{month}`` (january), ``{MonthD}`` (1), ``{Month0D}`` (01), ``{DayD}`` (5),
``{Day0D}`` (05), ``{Year}``.

Relative times (today is excluded from "next <day>"; OSWorld's own arithmetic differs in corner cases, this one is
regular): ``tomorrow``; ``this month``; ``<N>th next month`` (that day of next month); ``this <Weekday>`` (the
coming one, today included); ``next <Weekday>`` (the first one after today); ``next week <Weekday>`` (in the
week after this one, weeks start on Monday); ``first monday <N> months later`` (N in words: four, eight...);
and a ``to`` of ``next Sunday``/``next week Sunday`` after a Friday or Saturday ``from`` is that weekend's
Sunday, a ``to`` of ``next Friday`` after ``next Monday`` is that week's Friday.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["resolve_relative_rules", "relative_date", "format_date", "is_supported_phrase"]

_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_DOW = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_DOW_JA = ["月", "火", "水", "木", "金", "土", "日"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
            "ten": 10, "eleven": 11, "twelve": 12}
_WEEKDAY = "(" + "|".join(_DAYS) + ")"
_PATTERNS = [
    re.compile(r"tomorrow"), re.compile(r"this month"), re.compile(r"(\d+)(st|nd|rd|th) next month"),
    re.compile(rf"this {_WEEKDAY}"), re.compile(rf"next {_WEEKDAY}( split)?"),
    re.compile(rf"next week {_WEEKDAY}"), re.compile(r"first monday (\w+) months? later"),
]


def is_supported_phrase(phrase: Any) -> bool:
    """Whether ``phrase`` is a relative time this getter understands."""
    return isinstance(phrase, str) and any(p.fullmatch(phrase.strip().lower()) for p in _PATTERNS) and (
        not phrase.lower().startswith("first monday")
        or phrase.lower().split()[2] in _NUMBERS or phrase.lower().split()[2].isdigit())


def _add_months(day: dt.date, months: int, day_of_month: int = 1) -> dt.date:
    index = day.month - 1 + months
    return dt.date(day.year + index // 12, index % 12 + 1, day_of_month)


def relative_date(phrase: str, today: dt.date) -> dt.date:
    """The date ``phrase`` names, seen from ``today`` (see the module docstring)."""
    text = phrase.strip().lower()
    if not is_supported_phrase(text):
        raise EvaluationError(f"rule_relativeTime: relative time {phrase!r} is not supported")
    if text == "tomorrow":
        return today + dt.timedelta(days=1)
    if text == "this month":
        return today
    if match := re.fullmatch(r"(\d+)(?:st|nd|rd|th) next month", text):
        try:
            return _add_months(today, 1, int(match[1]))
        except ValueError:
            raise EvaluationError(f"rule_relativeTime: {phrase!r} is not a date next month") from None
    if match := re.fullmatch(rf"this {_WEEKDAY}", text):
        return today + dt.timedelta(days=(_DAYS.index(match[1]) - today.weekday()) % 7)
    if match := re.fullmatch(rf"next {_WEEKDAY}( split)?", text):
        return today + dt.timedelta(days=(_DAYS.index(match[1]) - today.weekday() - 1) % 7 + 1)
    if match := re.fullmatch(rf"next week {_WEEKDAY}", text):
        return today + dt.timedelta(days=7 - today.weekday() + _DAYS.index(match[1]))
    count = text.split()[2]
    first = _add_months(today, _NUMBERS.get(count) or int(count))
    return first + dt.timedelta(days=(0 - first.weekday()) % 7)


def format_date(template: Any, day: dt.date) -> Any:
    """``template`` (a string, or a list of strings) with its date placeholders filled from ``day``."""
    if isinstance(template, list):
        return [format_date(item, day) for item in template]
    if not isinstance(template, str):
        return template
    month = _MONTHS[day.month - 1]
    values = {"{DoW}": _DOW[day.weekday()], "{DoWJ}": _DOW_JA[day.weekday()], "{Month}": month[:3],
              "{MonthFull}": month, "{month}": month.lower(), "{MonthD}": str(day.month),
              "{Month0D}": f"{day.month:02d}", "{DayD}": str(day.day), "{Day0D}": f"{day.day:02d}",
              "{Year}": str(day.year)}
    for name, value in values.items():
        template = template.replace(name, value)
    return template


def resolve_relative_rules(rules: Mapping[str, Any], now: dt.datetime | None = None) -> dict[str, Any]:
    """A copy of ``rules`` whose ``expected`` dates are filled in for ``now`` (default: the current time in the
    rules' ``timezone``, else UTC)."""
    relative = rules.get("relativeTime")
    expected = rules.get("expected")
    if not isinstance(relative, Mapping) or "from" not in relative or not isinstance(expected, Mapping):
        raise EvaluationError("rule_relativeTime needs rules with 'relativeTime' {'from': ...} and 'expected'")
    if now is None:
        try:
            zone = ZoneInfo(rules.get("timezone") or "UTC")
        except (ZoneInfoNotFoundError, ValueError):
            raise EvaluationError(f"rule_relativeTime: unknown timezone {rules.get('timezone')!r}") from None
        now = dt.datetime.now(zone)
    today = now.date()
    out = copy.deepcopy(dict(rules))
    filled = out["expected"]
    start_phrase, end_phrase = relative["from"], relative.get("to")
    start = relative_date(start_phrase, today)
    if end_phrase is None:
        filled["time"] = format_date(filled.get("time"), start)
        return out
    end = relative_date(end_phrase, today)
    end_text = end_phrase.strip().lower()
    if end_text in ("next sunday", "next week sunday") and start.weekday() in (4, 5):
        end = start + dt.timedelta(days=6 - start.weekday())
    elif end_text.startswith("next friday") and start_phrase.strip().lower().startswith("next monday"):
        end = start + dt.timedelta(days=4)
    for day, phrase, prefix, key in ((start, start_phrase, "pu", "from"), (end, end_phrase, "do", "to")):
        if phrase.strip().lower().endswith(" split"):
            for part in ("Day", "Month", "Year"):
                filled[prefix + part] = format_date(filled.get(prefix + part), day)
        else:
            filled[key] = format_date(filled.get(key), day)
    return out
