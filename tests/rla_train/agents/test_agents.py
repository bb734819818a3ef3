"""Agents: chats built from episodes, and completions parsed into actions without ever raising."""

from __future__ import annotations

import numpy as np
import pytest

from rla_envs.core.trajectory import Trajectory
from rla_train.agents import CodeAgent, DesktopAgent, TextGameAgent, agent_kind, make_agent
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
    assert agent_kind("rla/OSWorld-v0") == "desktop"
    with pytest.raises(KeyError, match="Did you mean 'rla/AlfWorld-v0'"):
        make_agent("rla/Alfworld-v0")


OPENING = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you "
           "see a cabinet 2, a cabinet 1, a countertop 1, a drawer 10, a drawer 2, a microwave 1, and a sinkbasin 1."
           "\n\nYour task is to: heat some apple and put it in sinkbasin.")
STEPS = [  # (command, the env's answer), as ALFWorld words them
    ("go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see a apple 1, a bread 1, and a mug 2."),
    ("go to cabinet 1", "You arrive at cabinet 1. The cabinet 1 is closed."),
    ("open cabinet 1", "You open the cabinet 1. The cabinet 1 is open. In it, you see a apple 2."),
    ("take apple 2 from cabinet 1", "You pick up the apple 2 from the cabinet 1."),
    ("go to microwave 1", "You arrive at microwave 1. The microwave 1 is closed."),
    ("heat apple 2 with microwave 1", "You heat the apple 2 using the microwave 1."),
]


def test_game_memory_reads_place_hands_visits_and_sightings_from_the_texts():
    from rla_train.agents.text_games import GameMemory

    memory = GameMemory.from_transcript([OPENING] + [o for _, o in STEPS], [a for a, _ in STEPS])
    assert memory.goal == "heat some apple and put it in sinkbasin."
    assert memory.visited == ["countertop 1", "cabinet 1", "microwave 1"]
    assert (memory.location, memory.holding, memory.changed) == ("microwave 1", "apple 2", {"apple 2": "hot"})
    assert memory.seen["apple 1"] == "countertop 1" and "apple 2" not in memory.seen  # taken: no longer there
    # not visited, by kind then number (drawer 2 before drawer 10); only objects the goal names are recalled
    assert memory.lines() == ["Goal: heat some apple and put it in sinkbasin.",
                              "Not visited: go to cabinet 2, go to drawer 2, go to drawer 10, go to sinkbasin 1.",
                              "Seen: apple 1 at countertop 1.", "At: microwave 1 (closed). Holding: apple 2 (hot)."]
    memory.update("go to countertop 1", STEPS[0][1])
    assert memory.lines()[-1] == "Here: apple 1."  # a goal object where the agent stands
    memory.update("move apple 2 to sinkbasin 1", "You move the apple 2 to the sinkbasin 1.")
    assert memory.holding is None and memory.placed == ["apple 2 in sinkbasin 1"]
    memory.update("fly", "Nothing happens.")  # unknown texts change nothing
    assert memory.location == "countertop 1"


def test_compact_prompt_is_one_short_turn_with_memory_last_answer_and_commands():
    admissible = ["go to cabinet 2", "go to sinkbasin 1", "move apple 2 to microwave 1", "look"]
    observations = [OPENING] + [o for _, o in STEPS]
    infos = [{"admissible_actions": admissible}] * len(observations)
    episode = Episode(task_id="t", observations=observations, actions=[a for a, _ in STEPS], infos=infos)
    chat = TextGameAgent(prompt_style="compact").prompt(episode)
    assert [m["role"] for m in chat] == ["system", "user"]
    text = chat[1]["content"]
    assert text.startswith("Goal: heat some apple and put it in sinkbasin.\n\nAdmissible actions: go to cabinet 2")
    assert text.endswith("Last: heat apple 2 with microwave 1 -> You heat the apple 2 using the microwave 1.\n"
                         "At: microwave 1 (closed). Holding: apple 2 (hot).")  # the state nearest the answer
    assert "Welcome" not in text and "bread" not in text  # no banner, no replay of old answers
    from rla_train.backends.choice import admissible_from_prompt
    assert admissible_from_prompt(chat) == admissible  # every admissible command stays a candidate
    # the prompt does not grow with the episode: it has the same shape at step 0 and at step 6
    first = TextGameAgent(prompt_style="compact").prompt(Episode(task_id="t", observations=[OPENING], infos=infos[:1]))
    assert [m["role"] for m in first] == ["system", "user"] and "Last:" not in first[1]["content"]
    # other games' texts: the opening is shown as it is
    other = TextGameAgent(prompt_style="compact").prompt(_episode([], ["You are in a kitchen."]))
    assert other[1]["content"].startswith("Start: You are in a kitchen.\n\nAdmissible actions:")
    assert other[1]["content"].endswith("\n\nAt: the middle of the room. Holding: nothing.")
    # show_admissible="none": the commands are not printed but travel with the turn, for a choice policy
    hidden = TextGameAgent(prompt_style="compact", show_admissible="none").prompt(episode)
    assert "Admissible" not in hidden[1]["content"] and admissible_from_prompt(hidden) == admissible
    assert "Not visited: go to cabinet 2, go to drawer 2," in hidden[1]["content"]
    with pytest.raises(ValueError, match="prompt_style"):
        TextGameAgent(prompt_style="short")


def test_desktop_agent_says_why_the_last_action_was_refused():
    screen = {"instruction": "Open the file", "accessibility_tree": "<desktop/>", "screenshot": None}
    agent = DesktopAgent()
    assert agent.feedback(screen, {"action_error": None}).startswith("After your action:")
    refused = agent.feedback(screen, {"action_error": "SyntaxError: invalid syntax (line 1)"})
    assert refused.startswith("Your action was not run: SyntaxError: invalid syntax (line 1)")
