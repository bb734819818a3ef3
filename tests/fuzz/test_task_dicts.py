"""Fuzz: malformed task dicts handed to ``reset`` (Code, OSWorld) and to ``Task.from_dict`` end in rla's errors.

TextWorld and ALFWorld have the same property beside their own tests (they reuse those sessions' games).
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rla_envs.core.errors import DataNotFound, InvalidTask, ResetNeeded, TaskError
from rla_envs.core.task import Task
from tests.fuzz.strategies import FUZZ, ODD_VALUES, assert_clear_error, edited, outcome

TASK_KEYS = ("id", "family", "instruction", "spec", "parent", "origin", "meta")


def _task_id(data):
    return Task.from_dict(data).id


@settings(FUZZ, max_examples=300)
@given(data=edited({"family": "code", "instruction": "say hi", "spec": {"form": "stdio"}, "parent": None,
                    "origin": "dataset", "meta": {"source": "x"}, "id": ""}, extra_keys=TASK_KEYS))
def test_task_from_dict_and_its_id_raise_only_invalid_task(data):
    assert_clear_error(outcome(_task_id, data), allowed=(InvalidTask,))


@pytest.mark.parametrize("field", ["instruction", "family", "parent", "id"])
def test_a_lone_surrogate_is_refused_naming_the_field(field):
    data = {"family": "code", "instruction": "x", "spec": {"a": ["b"]}, field: "bad \ud800 text"}
    with pytest.raises(InvalidTask, match=field):
        Task.from_dict(data)
    with pytest.raises(InvalidTask, match=r"spec\.a\[0\]"):
        Task(family="code", instruction="x", spec={"a": ["\udfff"]})


@pytest.fixture(scope="module")
def code_env():
    import rla_envs  # noqa: F401

    env = gym.make("rla/Code-v0", disable_env_checker=True)
    yield env
    env.close()


@pytest.fixture(scope="module")
def code_task_dicts():
    from rla_envs.code.tasks import load_tasks

    tasks = load_tasks("bundled")
    stdio = next(t for t in tasks if t.spec["form"] == "stdio")
    function = next(t for t in tasks if t.spec["form"] == "function")
    return [stdio.to_dict(), function.to_dict()]


@settings(FUZZ, max_examples=300)
@given(data=st.data())
def test_code_reset_on_edited_task_dicts_raises_only_rla_errors(code_env, code_task_dicts, data):
    task = data.draw(edited(data.draw(st.sampled_from(code_task_dicts)),
                            extra_keys=("limits", "float_tolerance", "host_check", "entry_point")))
    error = outcome(code_env.reset, options={"task": task})
    assert_clear_error(error, allowed=(TaskError,))  # InvalidTask, or TaskNotFound for an id that is no task
    if error is not None:  # a failed reset leaves an env that says so, not the previous episode
        with pytest.raises(ResetNeeded, match="reset"):
            code_env.step("print(1)")


@pytest.mark.parametrize("options", ["x", 3, ["task"], {"task": 5}, {"task": ["a"]}])
def test_reset_with_options_that_are_not_a_dict_of_a_task(code_env, options):
    with pytest.raises(InvalidTask, match="options"):
        code_env.reset(options=options)


@pytest.fixture(scope="module")
def osworld_dicts():
    from tests.paths import OSWORLD_TASKS

    from rla_envs.desktop.osworld.tasks import osworld_json, load_tasks

    if not OSWORLD_TASKS.is_dir():
        pytest.skip(f"no OSWorld task files at {OSWORLD_TASKS}")
    tasks = load_tasks(OSWORLD_TASKS)
    return [osworld_json(t) for t in tasks[:: max(1, len(tasks) // 24)]]


def _osworld_load_and_check(raw):
    from rla_envs.desktop.osworld.runnable import not_runnable_reasons
    from rla_envs.desktop.osworld.tasks import load_task

    task = load_task(raw)
    not_runnable_reasons(task, has_app=lambda name: True)
    return task.id


@settings(FUZZ, max_examples=400)
@given(data=st.data())
def test_osworld_dicts_load_and_check_with_only_rla_errors(osworld_dicts, data):
    raw = data.draw(edited(data.draw(st.sampled_from(osworld_dicts)),
                           extra_keys=("config", "evaluator", "func", "result", "expected", "options", "postconfig",
                                       "parameters", "files", "command", "rules", "multi", "path", "dest")))
    assert_clear_error(outcome(_osworld_load_and_check, raw), allowed=(InvalidTask, DataNotFound))  # a str: a path


@pytest.mark.parametrize("value", [v for v in ODD_VALUES if not isinstance(v, (dict, list))][:12])
def test_osworld_instruction_and_id_of_any_type(value):
    from rla_envs.desktop.osworld.tasks import load_task

    raw = {"id": value, "instruction": value, "evaluator": {"func": "infeasible"}}
    assert_clear_error(outcome(load_task, raw), allowed=(InvalidTask,))


def _env_rla_makes():
    from rla_train.rollout.envs import EnvSpec

    return EnvSpec("rla/Code-v0", mode="multi", max_attempts=3)()


def _env_a_user_makes():
    return gym.make("rla/Code-v0", mode="multi", max_attempts=3)  # the registered id: passive checker off


@pytest.mark.parametrize("make_env", [_env_rla_makes, _env_a_user_makes], ids=["rla", "user-gym-make"])
def test_step_after_a_failed_first_reset_says_reset_again(make_env):
    """gymnasium's passive checker made every step after a failed first reset raise TypeError; rla's EnvSpec and the
    registered ids turn it off."""
    env = make_env()
    try:
        with pytest.raises(TaskError):
            env.reset(options={"task": "no-such-task"})
        with pytest.raises(ResetNeeded, match="last reset\\(\\) failed .*TaskNotFound.*reset again"):
            env.step("print(1)")
        env.reset(seed=0)
        for _ in range(2):
            observation, reward, terminated, truncated, info = env.step("no code here")
            assert info["invalid_action"] and not terminated
    finally:
        env.close()
