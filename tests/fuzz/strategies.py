"""Hypothesis strategies for malformed data, and the property every loader must keep.

:func:`edited` takes a valid JSON document (a task dict, a saved pool) and draws a copy with one to three
structural edits at random places: a key deleted, an unknown key added, a value swapped for one of another
type (``None``, a huge number, a lone surrogate, a 20,000-deep list, ...), a lone surrogate or NUL put into a
string, a value emptied or wrapped in a list. :func:`assert_clear_error` is the property: a call on such data either works or raises one of
rla's own error types, whose message is one line and names what it should (the file, the record).

Every fuzz test runs under :data:`FUZZ`: derandomized (the same examples on every machine and run), no
example database, no deadline (a loaded machine must not fail a test), and a fixed number of examples.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from rla_envs.core.errors import RlaError

__all__ = ["FUZZ", "DEEP", "ODD_VALUES", "json_values", "odd_values", "edited", "dumps", "assert_clear_error", "outcome"]

FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
"""Reproducible, timing-free settings; each test sets its own ``max_examples`` on top."""

DEEP = 20_000
"""Nesting depth of the deepest value drawn (beyond Python's recursion limit for naive walkers)."""


def _deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


_DEEP_VALUE = _deep_list(DEEP)
#: Values that broke loaders before: wrong types, extremes, text that is not valid Unicode, deep nesting.
ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 10**12, -(10**12), 2**64, 10**400, 0.5, -0.0, 1e308, float("inf"), float("nan"),
    "", " ", "x", "\ud800", "a\udfffb", "\x00", "\n", "é" * 3, "x" * 5_000, "../../etc/passwd", "/", "a" * 300,
    [], [None], [1, 2], ["a", 1], [[]], {}, {"": None}, {"x": 1}, {"type": None}, _DEEP_VALUE,
]


def _fresh(index: int) -> Any:
    """A new copy of ``ODD_VALUES[index]`` (edits must never change the shared list)."""
    value = ODD_VALUES[index]
    return _deep_list(DEEP) if value is _DEEP_VALUE else copy.deepcopy(value)


def odd_values() -> st.SearchStrategy:
    """One of :data:`ODD_VALUES` (a fresh copy), or a small random JSON value."""
    return st.one_of(st.integers(0, len(ODD_VALUES) - 1).map(_fresh), json_values(max_leaves=4))


def json_values(max_leaves: int = 8) -> st.SearchStrategy:
    """Small JSON documents (text may hold lone surrogates, which JSON can carry as ``\\udxxx`` escapes)."""
    text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), text)
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(text, inner, max_size=3)),
                        max_leaves=max_leaves)


def _containers(value: Any, path: tuple = ()) -> list[tuple]:
    """Paths of every dict and list inside ``value`` (the root first), at most 8 levels down."""
    found = [path] if isinstance(value, (dict, list)) else []
    if len(path) < 8:
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            found += _containers(item, path + (key,))
    return found


def _at(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


@st.composite
def edited(draw, base: Any, *, max_edits: int = 3, extra_keys: tuple[str, ...] = ()) -> Any:
    """A deep copy of ``base`` with 1 to ``max_edits`` structural edits (see the module docstring).

    ``extra_keys`` are key names worth adding (fields of the format that the base happens not to use).
    """
    value = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, max_edits))):
        paths = _containers(value)
        if not paths:
            return draw(odd_values())
        path = draw(st.sampled_from(paths))
        target = _at(value, path)
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        operation = draw(st.sampled_from(["replace", "replace", "delete", "add", "wrap", "empty", "root", "spoil"]))
        if operation == "root":
            return draw(odd_values()) if draw(st.booleans()) else [value]
        if operation == "add" or not keys:
            if isinstance(target, dict):
                name = draw(st.one_of(st.sampled_from(list(extra_keys) or ["extra"]), st.text(max_size=6)))
                target[name] = draw(odd_values())
            else:
                target.append(draw(odd_values()))
            continue
        key = draw(st.sampled_from(keys))
        if operation == "delete":
            del target[key]
        elif operation == "wrap":
            target[key] = [target[key]]
        elif operation == "spoil" and isinstance(target[key], str):  # a lone surrogate or NUL inside real text
            cut = draw(st.integers(0, len(target[key])))
            target[key] = target[key][:cut] + draw(st.sampled_from(["\udc80", "\ud83d", "\x00"])) + target[key][cut:]
        elif operation == "empty":
            target[key] = type(target[key])() if isinstance(target[key], (dict, list, str)) else None
        else:
            target[key] = draw(odd_values())
    return value


_DEEP_MARK = "\x00deep\x00"


def _mark_deep(value: Any, depth: int = 0) -> Any:
    if depth > 100:
        return _DEEP_MARK
    if isinstance(value, list):
        return [_mark_deep(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {key: _mark_deep(item, depth + 1) for key, item in value.items()}
    return value


def dumps(value: Any) -> str:
    """JSON text of a drawn value: NaN and infinities as Python writes them, surrogates escaped, and a
    :data:`DEEP` list written out in full (``json.dumps`` itself would hit the recursion limit)."""
    return json.dumps(_mark_deep(value)).replace(json.dumps(_DEEP_MARK), "[" * DEEP + "]" * DEEP)


def outcome(call, *args, **kwargs) -> BaseException | None:
    """Run ``call``; the exception it raised, or None (a helper for properties and for counting raw errors)."""
    try:
        call(*args, **kwargs)
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - the caller judges it
        return exc
    return None


def assert_clear_error(error: BaseException | None, *, allowed: tuple[type[BaseException], ...] = (RlaError,),
                       names: tuple[str, ...] = (), one_line: bool = True) -> None:
    """Pass when ``error`` is None, or an ``allowed`` error whose message contains ``names`` (on one line)."""
    if error is None:
        return
    if not isinstance(error, allowed):
        raise AssertionError(f"raw {type(error).__name__} instead of {[a.__name__ for a in allowed]}: {error!r:.300}") \
            from error
    message = str(error)
    assert message.strip(), f"{type(error).__name__} with an empty message"
    if one_line:
        assert "\n" not in message.strip(), f"{type(error).__name__} message is not one line: {message[:400]!r}"
    for name in names:
        assert name in message, f"{type(error).__name__} message does not name {name!r}: {message[:300]!r}"
