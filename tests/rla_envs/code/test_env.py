"""rla/Code-v0: the Gymnasium contract, single- and multi-turn play, feedback that hides hidden tests."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rla_envs  # noqa: F401  (registers the ids)
from rla_envs.code.env import CodeEnv, problem_text
from rla_envs.code.tasks.formats import function_task, stdio_task

SQUARE = "def solve(x):\n    return x * x + 1\n"
SQUARE_WRONG = "def solve(x):\n    return x * x\n"
HIDDEN = [((7,), 50), ((11,), 122), ((13,), 170)]


def make_trusted_sandbox():
    """The local sandbox; unconfined where this machine cannot confine (the tests run only their own programs)."""
    from rla_envs.code.sandbox import ConfinementUnavailable, make_sandbox

    try:
        return make_sandbox("local")
    except ConfinementUnavailable:
        return make_sandbox("local", unsafe=True)


@pytest.fixture(scope="module")
def sandbox():
    box = make_trusted_sandbox()
    yield box
    box.close()


@pytest.fixture(scope="module")
def square_task():
    return function_task(statement="Write solve(x) that returns x*x + 1.", entry_point="solve",
                         signature="solve(x: int) -> int", public=[((2,), 5)], hidden=HIDDEN,
                         reference_solution=SQUARE)


@pytest.fixture(scope="module")
def echo_task():
    program = "print(int(input()) * 3)\n"
    return stdio_task(statement="Read an integer and print it times three.",
                      public=[("4\n", "12\n")], hidden=[("333\n", "999\n"), ("-41\n", "-123\n")],
                      reference_solution=program)


@pytest.fixture(scope="module")
def bundled():
    from rla_envs.code.tasks.bundled import bundled_tasks

    return bundled_tasks()


def test_check_env_passes(sandbox, square_task, echo_task):
    env = CodeEnv(tasks=[square_task, echo_task], sandbox=sandbox)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_gym_make_defaults_to_the_bundled_problems(sandbox, bundled):
    env = gym.make("rla/Code-v0", sandbox=sandbox)
    observation, info = env.reset(seed=0)
    assert info["task_id"] in {task.id for task in bundled}
    assert info["mode"] == "single" and info["attempts_left"] == 1
    assert env.unwrapped.tasks == bundled
    env.close()


def test_same_seed_same_task(sandbox, bundled):
    first, second = CodeEnv(sandbox=sandbox), CodeEnv(sandbox=sandbox)
    seen = [first.reset(seed=seed)[1]["task_id"] for seed in range(8)]
    assert seen == [second.reset(seed=seed)[1]["task_id"] for seed in range(8)]
    assert len(set(seen)) > 1


def test_observation_is_the_problem_with_public_examples(sandbox, square_task, echo_task):
    env = CodeEnv(tasks=[square_task], sandbox=sandbox)
    observation, info = env.reset(options={"task": square_task})
    assert observation == problem_text(square_task)
    assert "x*x + 1" in observation and "solve(2) returns 5" in observation
    assert not any(str(expected) in observation for _, expected in HIDDEN)
    stdio_observation = CodeEnv(tasks=[echo_task], sandbox=sandbox).reset()[0]
    assert "Input:\n4" in stdio_observation and "Output:\n12" in stdio_observation
    assert "999" not in stdio_observation


@pytest.mark.parametrize("program, reward", [(SQUARE, 1.0), (SQUARE_WRONG, 0.0)])
def test_single_turn_reward_is_one_iff_every_hidden_test_passes(sandbox, square_task, program, reward):
    env = CodeEnv(tasks=[square_task], sandbox=sandbox)
    env.reset(seed=1)
    observation, got_reward, terminated, truncated, info = env.step(f"Here you go:\n```python\n{program}```")
    assert (got_reward, terminated, truncated) == (reward, True, False)
    assert info["won"] is (reward == 1.0) and info["invalid_action"] is False
    assert info["hidden_tests"]["total"] == 3 and info["passed"] == (3 if reward else 0)
    assert info["program_source"] == "fenced"


def test_single_turn_expert_solves_one_bundled_task_per_level(sandbox, bundled):
    env = CodeEnv(sandbox=sandbox)
    for level in (1, 2, 3, 4):
        task = next(t for t in bundled if t.meta["level"] == level)
        env.reset(options={"task": task})
        _, reward, terminated, _, info = env.step(env.expert_action())
        assert reward == 1.0 and terminated, (task.id, info["error"])


@pytest.mark.parametrize("task_name", ["square_task", "echo_task"])
def test_multi_turn_feedback_shows_public_results_and_never_hidden_outputs(sandbox, request, task_name):
    task = request.getfixturevalue(task_name)
    wrong = SQUARE_WRONG if task_name == "square_task" else "print(int(input()) * 2)\n"
    env = CodeEnv(tasks=[task], sandbox=sandbox, mode="multi", max_attempts=3)
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(wrong)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert "Public examples: 0 of 1 passed" in observation and "2 attempts left" in observation
    assert info["public_tests"][0]["verdict"] == "wrong_answer" and info["public_tests"][0]["expected"]
    assert info["hidden_tests"]["total"] == len(task.spec["hidden_tests"]) and info["hidden_tests"]["passed"] == 0
    hidden_outputs = {"50", "122", "170"} if task_name == "square_task" else {"999", "-123"}
    shown = observation + json.dumps(info)
    assert not [out for out in hidden_outputs if out in shown]
    observation, reward, terminated, truncated, info = env.step(task.spec["reference_solution"])
    assert (reward, terminated, info["won"], info["attempt"]) == (1.0, True, True, 2)


def test_multi_turn_ends_after_max_attempts(sandbox, square_task):
    env = CodeEnv(tasks=[square_task], sandbox=sandbox, mode="multi", max_attempts=2)
    env.reset(seed=0)
    assert env.step(SQUARE_WRONG)[2] is False
    observation, reward, terminated, truncated, info = env.step("")
    assert (reward, terminated, truncated, info["invalid_action"]) == (0.0, True, False, True)
    assert "No attempts left" in observation and info["attempts_left"] == 0


def test_multi_turn_says_when_public_examples_pass_but_hidden_tests_fail(sandbox, square_task):
    cheat = "def solve(x):\n    return 5 if x == 2 else 0\n"
    env = CodeEnv(tasks=[square_task], sandbox=sandbox, mode="multi")
    env.reset(seed=0)
    observation, _, terminated, _, info = env.step(cheat)
    assert not terminated and "passes every public example but fails some hidden tests" in observation
    assert info["error"] == "hidden tests: 3 wrong_answer"


@pytest.mark.parametrize("action", [
    "", "   ", "I don't know.", "```python\n```", "x" * 1_000_000, "ça ne compile pas : 世界 ✓",
    "print('a')\x00", "\x1b[31m red", 42, None, ["print(1)"],
])
def test_garbage_actions_are_invalid_never_an_exception(sandbox, square_task, action):
    env = CodeEnv(tasks=[square_task], sandbox=sandbox, mode="multi")
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(action)
    assert info["invalid_action"] is True and reward == 0.0 and not terminated
    assert observation.startswith("Invalid answer:") and env.observation_space.contains(observation)
    single = CodeEnv(tasks=[square_task], sandbox=sandbox)
    single.reset(seed=0)
    assert single.step(action)[2] is True  # single turn: the one submission is used up


def test_non_ascii_program_runs(sandbox, square_task):
    env = CodeEnv(tasks=[square_task], sandbox=sandbox)
    env.reset(seed=0)
    program = '# carré plus un — 平方\ndef solve(x):\n    """x² + 1"""\n    return x * x + 1\n'
    assert env.step(program)[1] == 1.0


def test_timeouts_and_errors_are_reported_in_info(sandbox, square_task):
    env = CodeEnv(tasks=[square_task], sandbox=sandbox, mode="multi", limits={"timeout_s": 0.5})
    env.reset(seed=0)
    info = env.step("def solve(x):\n    while True:\n        pass\n")[4]
    assert info["timed_out"] is True and "timeout" in info["error"]
    info = env.step("def solve(x):\n    raise ValueError('nope')\n")[4]
    assert info["timed_out"] is False and "ValueError" in info["public_tests"][0]["error"]


def test_info_keys_are_the_same_after_reset_and_step(sandbox, square_task):
    env = CodeEnv(tasks=[square_task], sandbox=sandbox, mode="multi")
    _, reset_info = env.reset(seed=0)
    step_info = env.step(SQUARE_WRONG)[4]
    invalid_info = env.step("")[4]
    assert set(reset_info) == set(step_info) == set(invalid_info)
    assert {"task_id", "instruction", "won", "step", "invalid_action"} <= set(reset_info)


def test_bad_arguments_fail_when_the_env_is_built():
    with pytest.raises(ValueError, match="mode='multi'"):
        CodeEnv(max_attempts=3)
    with pytest.raises(ValueError, match="mode must be"):
        CodeEnv(mode="chat")
    with pytest.raises(ValueError, match="unknown keys"):
        CodeEnv(limits={"timeout": 1})

