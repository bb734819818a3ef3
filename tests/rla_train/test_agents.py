"""Agents: chats built from episodes, and completions parsed into actions without ever raising."""

from __future__ import annotations

import numpy as np
import pytest

from rla_envs.curriculum.diagnosers import Trajectory
from rla_train.agents import CodeAgent, DesktopAgent, TextGameAgent, family_of, make_agent
from rla_train.agents.parsing import (parse_action_index, parse_code_block, parse_desktop_action,
                                      parse_free_text)
from rla_train.rollout.episode import Episode, StepRecord

ADMISSIBLE = ["go to fridge 1", "go to sinkbasin 1", "look", "inventory"]


@pytest.mark.parametrize("text, expected", [
    ("go to fridge 1", "go to fridge 1"),
    ("  Action: Go To  Fridge 1.\nbecause it is cold", "go to fridge 1"),
    ("> look", "look"),
    ("`inventory`", "inventory"),
    ("\n\n2. go to sinkbasin 1", "go to sinkbasin 1"),
])
def test_free_text_maps_variants_to_the_admissible_command(text, expected):
    parsed = parse_free_text(text, ADMISSIBLE)
    assert parsed.ok and parsed.action == expected


def test_free_text_outside_the_list_still_goes_to_the_env_with_the_reason():
    parsed = parse_free_text("fly to the moon", ADMISSIBLE)
    assert parsed.action == "fly to the moon" and "not one of the 4 admissible" in parsed.error
    assert parse_free_text("  \n ", ADMISSIBLE).error == "the answer holds no command"
    assert parse_free_text("open drawer 3").ok  # no list known: the env decides


@pytest.mark.parametrize("text, expected, ok", [
    ("3", "look", True), ("Action: 1", "go to fridge 1", True), ("inventory", "inventory", True),
    ("9", "9", False), ("0", "0", False), ("I think so", "I think so", False), ("", "", False),
])
def test_action_index(text, expected, ok):
    parsed = parse_action_index(text, ADMISSIBLE)
    assert (parsed.action, parsed.ok) == (expected, ok)


def test_code_block_sends_the_whole_answer_and_reports_problems():
    good = "Here:\n```python\nprint(1)\n```"
    assert parse_code_block(good).ok and parse_code_block(good).action == good
    bad = parse_code_block("```python\ndef f(:\n```")
    assert not bad.ok and "syntax" in bad.error.lower()
    assert not parse_code_block("").ok


@pytest.mark.parametrize("text, action, ok", [
    ("DONE", "DONE", True), ("I am finished.\nDONE", "DONE", True), ("wait", "WAIT", True),
    ("```python\npyautogui.click(10, 20)\n```", "pyautogui.click(10, 20)", True),
    ("pyautogui.write('hi')", "pyautogui.write('hi')", True),
    ("```python\npyautogui.click(10,\n```", None, False), ("print('hi')", "print('hi')", False), ("", "", False),
])
def test_desktop_actions(text, action, ok):
    parsed = parse_desktop_action(text)
    assert parsed.ok == ok
    if action is not None:
        assert parsed.action == action


def _episode(actions, observations, completions=None, admissible=ADMISSIBLE):
    infos = [{"admissible_actions": admissible} for _ in observations]
    steps = [StepRecord("p", [], c, [], [], a) for a, c in zip(actions, completions)] if completions else []
    return Episode(task_id="t", observations=observations, actions=actions, infos=infos, steps=steps)


def test_text_agent_chat_holds_history_as_said_and_the_admissible_list():
    agent = TextGameAgent(history_window=None, show_admissible="all")
    episode = _episode(["look"], ["You are in a kitchen.", "You see a fridge."], completions=["Action: look"])
    chat = agent.prompt(episode)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[1]["content"].startswith("You are in a kitchen.") and "go to fridge 1" in chat[1]["content"]
    assert chat[2]["content"] == "Action: look"  # the model's own words, so prompts extend each other
    assert chat[3]["content"].startswith("You see a fridge.") and "go to fridge 1" in chat[3]["content"]
    last_only = TextGameAgent(history_window=None).prompt(episode)  # default: only the turn to answer lists them
    assert "Admissible" not in last_only[1]["content"] and "go to fridge 1" in last_only[3]["content"]
    assert "Admissible" not in TextGameAgent(show_admissible="none").prompt(episode)[-1]["content"]
    with pytest.raises(ValueError, match="show_admissible"):
        TextGameAgent(show_admissible=True)


def test_history_window_keeps_the_opening_and_the_last_steps():
    agent = TextGameAgent(history_window=2)
    observations = [f"obs {i}" for i in range(6)]
    chat = agent.prompt(_episode(["look"] * 5, observations))
    contents = [m["content"] for m in chat]
    assert contents[1].startswith("obs 0") and contents[2] == "(3 earlier steps not shown)"
    assert [c.split("\n")[0] for c in contents[4::2]] == ["obs 4", "obs 5"]
    with pytest.raises(ValueError, match="history_window"):
        TextGameAgent(history_window=-1)
    with pytest.raises(ValueError, match="reset the env"):
        agent.prompt(Trajectory(task_id="t"))


def test_index_format_numbers_the_list_and_parses_numbers():
    agent = TextGameAgent(action_format="index")
    chat = agent.prompt(_episode([], ["start"]))
    assert "3. look" in chat[-1]["content"]
    assert agent.parse("2", {"admissible_actions": ADMISSIBLE}).action == "go to sinkbasin 1"


def test_desktop_agent_text_and_vision():
    screen = {"instruction": "Open the file", "accessibility_tree": "x" * 50, "screenshot": np.zeros((4, 4, 3), np.uint8)}
    text_chat = DesktopAgent(max_tree_chars=10).prompt(_episode([], [screen]))
    assert "Task: Open the file" in text_chat[1]["content"] and "(tree cut)" in text_chat[1]["content"]
    parts = DesktopAgent(vision=True).prompt(_episode([], [screen]))[1]["content"]
    assert parts[0]["type"] == "image" and parts[0]["image"].shape == (4, 4, 3) and parts[1]["type"] == "text"


def test_make_agent_by_env_id_or_family():
    assert isinstance(make_agent("rla/AlfWorld-v0"), TextGameAgent)
    assert isinstance(make_agent("rla/Code-v0"), CodeAgent)
    assert isinstance(make_agent("textworld", history_window=3), TextGameAgent)
    assert family_of("rla/OSWorld-v0") == "desktop"
    with pytest.raises(ValueError, match="Did you mean 'rla/AlfWorld-v0'"):
        make_agent("rla/Alfworld-v0")
