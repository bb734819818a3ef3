"""Fuzz: ``--set section.field=value`` overrides of any shape end in a ConfigError, never a raw traceback."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from rla_train.config import SECTIONS, ConfigError, load_config
from tests.fuzz.strategies import FUZZ, assert_clear_error, outcome

FIELDS = sorted(f"{section}.{spec.name}" for section, cls in SECTIONS.items() for spec in dataclasses.fields(cls))
YAML_VALUES = ["0", "-1", "1e-6", "1e400", "-.inf", ".nan", "null", "~", "true", "yes", "''", '"x"', "[]", "[1, 2]",
               "{}", "{a: 1}", "[", "{", "a: b: c", "!!python/object:os.system x", "&a [*a]", "*undefined",
               "99999999999999999999999", "0x10", "1_000", "2026-01-01", "\t", "%", "\ud800", "x" * 300, "\\", "'''"]


def _overrides() -> st.SearchStrategy:
    key = st.one_of(st.sampled_from(FIELDS), st.sampled_from(FIELDS).map(lambda f: f + ".deeper"),
                    st.text(max_size=20))
    value = st.one_of(st.sampled_from(YAML_VALUES), st.text(max_size=20))
    pair = st.builds(lambda k, v, sep: f"{k}{sep}{v}", key, value, st.sampled_from(["=", "=", "=", "", "=="]))
    return st.lists(pair, min_size=1, max_size=3)


@settings(FUZZ, max_examples=400)
@given(overrides=_overrides())
def test_overrides_raise_only_config_errors(overrides):
    assert_clear_error(outcome(load_config, None, overrides), allowed=(ConfigError,), one_line=False)
