"""Fuzz: malformed ALFWorld task dicts handed to ``reset`` end in one-line rla errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rla_envs.core.errors import ResetNeeded, RlaError
from tests.fuzz.strategies import FUZZ, assert_clear_error, edited, outcome

SPEC_KEYS = ("pddl_problem", "goal", "task_type", "pddl_params", "walkthrough", "floor_plan", "object_target")


@pytest.fixture(scope="module")
def alfworld_env():
    from rla_envs.alfworld.env import AlfWorldEnv

    env = AlfWorldEnv(expert="handcoded")
    yield env
    env.close()


@settings(FUZZ, max_examples=300)
@given(data=st.data())
def test_reset_on_edited_task_dicts_raises_only_rla_errors(alfworld_env, alfworld_tasks, data):
    task = data.draw(edited(data.draw(st.sampled_from([t.to_dict() for t in alfworld_tasks[:3]])),
                            extra_keys=SPEC_KEYS))
    error = outcome(alfworld_env.reset, options={"task": task})
    assert_clear_error(error, allowed=(RlaError,))
    if error is not None:
        with pytest.raises(ResetNeeded, match="reset"):
            alfworld_env.step("look")
