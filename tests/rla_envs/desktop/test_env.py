"""rla/OSWorld-v0: the Gymnasium contract, actions, evaluation at DONE/FAIL/truncation, refused tasks."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rla_envs.core.errors import InvalidTask, ResetNeeded, TaskNotFound
from rla_envs.core.task import thaw
from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.env import OSWorldEnv
from rla_envs.desktop.osworld import evaluator
from rla_envs.desktop.osworld.errors import NotRunnable
from rla_envs.desktop.providers.base import DesktopProvider
from rla_envs.desktop.tasks import bundled_tasks
from tests.rla_envs.desktop.conftest import by_osworld_id

INFO_KEYS = {"task_id", "instruction", "won", "step", "invalid_action", "osworld_id", "app", "action_kind",
             "action_source", "action_error", "score", "evaluated_on", "evaluation_error"}


class UntouchableProvider(DesktopProvider):
    """A provider that fails the test if the env ever starts or resets a session."""

    name = "untouchable"
    screen_size = (640, 480)

    def start(self):
        raise AssertionError("the env started a session for a task it should have refused")

    def reset(self):
        raise AssertionError("the env reset a session for a task it should have refused")

    def close(self):
        pass


# ----------------------------------------------------------------- without a desktop

def test_constructor_checks_its_arguments():
    with pytest.raises(ValueError, match="provider must be one of"):
        OSWorldEnv(provider="vmware")
    with pytest.raises(ValueError, match="screen_size"):
        OSWorldEnv(screen_size=(0, 10))
    with pytest.raises(ValueError, match="provider_options apply"):
        OSWorldEnv(provider=UntouchableProvider(), provider_options={"x": 1})


def test_spaces_and_default_task_set():
    env = OSWorldEnv(provider=UntouchableProvider())
    assert env.observation_space["screenshot"].shape == (480, 640, 3)  # the provider's own screen size
    assert env.tasks == bundled_tasks()
    assert env.get_task("rla-os-make-dirs") == by_osworld_id("rla-os-make-dirs")  # OSWorld ids work too
    with pytest.raises(TaskNotFound, match="rla-os-make-dir"):
        env.get_task("rla-os-make-dir")
    with pytest.raises(ResetNeeded):
        env.step("DONE")


def test_a_task_that_cannot_run_is_refused_with_every_reason_before_the_session_is_touched():
    raw = thaw(by_osworld_id("rla-os-make-dirs").spec["osworld"])
    raw["id"] = "needs-drive"
    raw["config"] = [{"type": "googledrive", "parameters": {"settings_file": "s.yml", "operation": ["delete"]}}]
    raw["evaluator"] = {"func": "no_such_metric", "result": {"type": "vm_file", "path": "/a", "dest": "a"},
                        "expected": {"type": "cloud_file", "path": "https://example.org/b.pptx", "dest": "b"}}
    env = OSWorldEnv(provider=UntouchableProvider())
    with pytest.raises(NotRunnable) as refused:
        env.reset(options={"task": raw})  # a raw OSWorld JSON dict is accepted as a task
    assert isinstance(refused.value, InvalidTask)
    assert len(refused.value.reasons) >= 2
    text = str(refused.value)
    assert "googledrive" in text and "no_such_metric" in text
    with pytest.raises(ResetNeeded, match="the last reset\\(\\) failed \\(NotRunnable: .*reset again"):
        env.step("DONE")


class ScriptedClient:
    """A controller client whose session runs any code, shows a black screen, and dies on the code ``die()``."""

    def __init__(self):
        self.alive = True

    def run_pyautogui(self, code, timeout=None):
        if code.strip() == "die()":
            self.alive = False
            raise ControllerError("the controller stopped answering")
        return {"status": "success"}

    def screenshot_array(self):
        if not self.alive:
            raise ControllerError("the controller stopped answering")
        return np.zeros((480, 640, 3), np.uint8)

    def accessibility_tree(self):
        return "<desktop-frame/>"


class ScriptedProvider(DesktopProvider):
    """A provider whose session is a :class:`ScriptedClient` (fresh on every reset)."""

    name = "scripted"
    screen_size = (640, 480)

    def __init__(self):
        self.session = ScriptedClient()

    def start(self):
        return self.session

    def has_app(self, name):
        return True

    def reset(self):
        self.session = ScriptedClient()

    def close(self):
        pass


@pytest.fixture
def scripted_env(monkeypatch):
    """An env on a scripted session, its one task set up by nothing, whose evaluator scores ``scores["next"]``."""
    scores = {"next": 1.0}
    monkeypatch.setattr(evaluator, "evaluate", lambda client, raw, **_: scores["next"])
    raw = thaw(by_osworld_id("rla-os-make-dirs").spec["osworld"])
    raw["config"] = []
    env = OSWorldEnv([raw], provider=ScriptedProvider(), max_steps=2, wait_seconds=0)
    return env, scores


def test_done_terminates_with_the_evaluators_score(scripted_env):
    env, scores = scripted_env
    env.reset(seed=0)
    scores["next"] = 0.5
    _, reward, terminated, truncated, info = env.step("DONE")
    assert (reward, terminated, truncated) == (0.5, True, False)
    assert info["evaluated_on"] == "DONE" and info["score"] == 0.5 and not info["won"]
    with pytest.raises(ResetNeeded, match="after the episode ended"):
        env.step("DONE")


def test_the_step_limit_truncates_and_evaluates_even_a_won_task(scripted_env):
    env, _ = scripted_env
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("pyautogui.press('a')")
    assert (reward, terminated, truncated, info["score"], info["evaluated_on"]) == (0.0, False, False, None, None)
    _, reward, terminated, truncated, info = env.step("pyautogui.press('b')")
    assert (reward, terminated, truncated) == (1.0, False, True)
    assert info["evaluated_on"] == "truncation" and info["won"] and info["step"] == 2


def test_a_session_that_dies_truncates_the_episode_without_a_score(scripted_env):
    env, _ = scripted_env
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("die()")
    assert (reward, terminated, truncated, info["score"]) == (0.0, False, True, None)
    assert info["invalid_action"] and "stopped answering" in info["action_error"]
    assert not observation["screenshot"].any() and observation["accessibility_tree"] == ""
    observation, _ = env.reset(seed=0)  # a fresh session
    assert observation["accessibility_tree"] == "<desktop-frame/>"


def test_computer13_dicts_are_actions_not_type_errors(scripted_env):
    env, _ = scripted_env
    env.reset(seed=0)
    _, _, _, _, info = env.step({"action_type": "CLICK", "parameters": {"x": 5, "y": 9}})
    assert info["action_source"] == "computer_13" and not info["invalid_action"]


# ----------------------------------------------------------------- on the local desktop

@pytest.fixture(scope="module")
def env(local_provider):
    env = OSWorldEnv(provider=local_provider, max_steps=4)
    yield env
    env.close()


@pytest.mark.desktop
def test_check_env_passes(local_provider):
    # xterm's screen does not change by itself (no blinking caret), so same seed, same observation.
    env = OSWorldEnv([by_osworld_id("rla-os-infeasible-registry")], provider=local_provider, max_steps=5)
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.desktop
def test_observation_and_info_contract(env):
    observation, info = env.reset(options={"task": "rla-os-make-dirs"})
    assert observation in env.observation_space
    assert observation["screenshot"].dtype == np.uint8 and observation["screenshot"].std() > 0
    assert observation["instruction"] == by_osworld_id("rla-os-make-dirs").instruction
    assert "<" in observation["accessibility_tree"]  # OSWorld's XML
    assert set(info) == INFO_KEYS | {"reset_wait"} and info["step"] == 0 and info["score"] is None
    # the setup launched xterm: reset waited for its window and a still screen (settle.py)
    wait = info["reset_wait"]
    assert wait["settled"] and wait["expected_window"] and wait["windows"] >= 1 and 0 < wait["seconds"] <= 20
    _, _, _, _, step_info = env.step("WAIT")
    assert set(step_info) == INFO_KEYS  # reset's wait is reset's alone


@pytest.mark.desktop
def test_pyautogui_changes_the_desktop_and_done_scores_it(env):
    env.reset(options={"task": "rla-os-make-dirs"})
    _, reward, terminated, truncated, info = env.step("pyautogui.typewrite('mkdir -p ~/projects/alpha/src\\n')")
    assert (reward, terminated, truncated, info["invalid_action"], info["action_kind"]) == (0.0, False, False, False,
                                                                                            "code")
    _, reward, terminated, truncated, info = env.step("DONE")
    assert (reward, terminated, truncated, info["won"], info["evaluated_on"]) == (1.0, True, False, True, "DONE")
    with pytest.raises(ResetNeeded):
        env.step("WAIT")


@pytest.mark.desktop
def test_computer13_dicts_drive_the_desktop(env):
    env.reset(options={"task": "rla-os-make-dirs"})
    env.step({"action_type": "TYPING", "parameters": {"text": "mkdir -p ~/projects/alpha/src"}})
    _, _, _, _, info = env.step({"action_type": "PRESS", "parameters": {"key": "enter"}})
    assert info["action_source"] == "computer_13" and not info["invalid_action"]
    _, reward, terminated, _, info = env.step({"action_type": "DONE"})
    assert terminated and reward == 1.0


@pytest.mark.desktop
def test_unusable_actions_give_an_invalid_action_observation(env):
    observation, _ = env.reset(options={"task": "rla-os-make-dirs"})
    for action in ["pyautogui.click(", {"action_type": "CLICK", "parameters": {"x": -4, "y": 1}},
                   "raise RuntimeError('boom')"]:
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation in env.observation_space
        assert info["invalid_action"] and info["action_error"], info
        assert (reward, terminated) == (0.0, False)
    assert "boom" in info["action_error"]
    # the fourth action hits max_steps=4: the episode is truncated and still scored (nothing was done: 0)
    _, reward, terminated, truncated, info = env.step("WAIT")
    assert (reward, terminated, truncated, info["evaluated_on"], info["score"]) == (0.0, False, True, "truncation",
                                                                                    0.0)


@pytest.mark.desktop
def test_infeasible_task_scores_only_on_fail(env):
    env.reset(options={"task": "rla-os-infeasible-registry"})
    _, reward, terminated, _, info = env.step("FAIL")
    assert (reward, terminated, info["won"], info["evaluated_on"]) == (1.0, True, True, "FAIL")
    env.reset(options={"task": "rla-os-infeasible-registry"})
    assert env.step("DONE")[1] == 0.0


@pytest.mark.desktop
def test_same_seed_same_transcript(env):
    def transcript(seed):
        _, info = env.reset(seed=seed)
        lines = [info["task_id"]]
        for _ in range(2):
            _, reward, terminated, truncated, info = env.step("pyautogui.press('shift')")
            lines.append((reward, terminated, truncated, info["invalid_action"], info["score"]))
        _, reward, terminated, truncated, info = env.step("DONE")
        lines.append((reward, terminated, info["score"]))
        return lines

    first = [transcript(seed) for seed in (3, 4)]
    assert first == [transcript(seed) for seed in (3, 4)]


@pytest.mark.desktop
def test_expert_plays_the_scripted_solution(env):
    env.reset(options={"task": "rla-os-rename-file"})
    terminated = truncated = False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(env.expert_action())
    assert terminated and reward == 1.0
