"""Desktop actions: pyautogui code, WAIT/DONE/FAIL and OSWorld's computer_13 dicts, checked without raising."""

from __future__ import annotations

import json

import pytest

from rla_envs.desktop.actions import COMPUTER13_TYPES, computer13_to_pyautogui, parse_action


@pytest.mark.parametrize("text, kind", [("DONE", "DONE"), ("  done \n", "DONE"), ("FAIL", "FAIL"), ("wait", "WAIT"),
                                        ("`DONE`", "DONE")])
def test_special_words(text, kind):
    action = parse_action(text)
    assert action.kind == kind and action.problem is None
    assert action.ends_episode == (kind in ("DONE", "FAIL"))


def test_code_is_taken_from_a_fenced_block():
    action = parse_action("I will save.\n```python\npyautogui.hotkey('ctrl', 's')\n```")
    assert action.kind == "code"
    assert action.code == "pyautogui.hotkey('ctrl', 's')"


def test_raw_code_passes_through():
    code = "pyautogui.moveTo(10, 20)\npyautogui.click()"
    assert parse_action(code).code == code


@pytest.mark.parametrize("bad, fragment", [
    ("", "empty"),
    ("pyautogui.click(", "does not compile"),
    ("```python\n```", "empty"),
    ("x" * 20_001, "at most"),
    (None, "got NoneType"),
    (42, "got int"),
    ("{\"action_type\": \"CLICK\", ", "not valid JSON"),
])
def test_unusable_actions_are_invalid_not_exceptions(bad, fragment):
    action = parse_action(bad)
    assert action.kind == "invalid"
    assert fragment in action.problem


def test_a_prose_answer_is_invalid():
    assert parse_action("I think the task is complete now.").kind == "invalid"


@pytest.mark.parametrize("action, code", [
    ({"action_type": "MOVE_TO", "parameters": {"x": 5, "y": 9}}, "pyautogui.moveTo(5, 9)"),
    ({"action_type": "CLICK", "parameters": {}}, "pyautogui.click(button='left', clicks=1)"),
    ({"action_type": "CLICK", "parameters": {"x": 1, "y": 2, "button": "right", "num_clicks": 2}},
     "pyautogui.click(1, 2, button='right', clicks=2)"),
    ({"action_type": "MOUSE_DOWN", "parameters": {"button": "middle"}}, "pyautogui.mouseDown(button='middle')"),
    ({"action_type": "MOUSE_UP"}, "pyautogui.mouseUp(button='left')"),
    ({"action_type": "RIGHT_CLICK", "parameters": {"x": 3, "y": 4}}, "pyautogui.rightClick(3, 4)"),
    ({"action_type": "DOUBLE_CLICK", "parameters": {}}, "pyautogui.doubleClick()"),
    ({"action_type": "DRAG_TO", "parameters": {"x": 30, "y": 40}},
     "pyautogui.dragTo(30, 40, duration=0.5, button='left')"),
    ({"action_type": "SCROLL", "parameters": {"dx": 2, "dy": -3}}, "pyautogui.hscroll(2)\npyautogui.vscroll(-3)"),
    ({"action_type": "TYPING", "parameters": {"text": "it's \"x\"\n"}}, "pyautogui.typewrite('it\\'s \"x\"\\n')"),
    ({"action_type": "PRESS", "parameters": {"key": "enter"}}, "pyautogui.press('enter')"),
    ({"action_type": "KEY_DOWN", "parameters": {"key": "shift"}}, "pyautogui.keyDown('shift')"),
    ({"action_type": "KEY_UP", "parameters": {"key": "shift"}}, "pyautogui.keyUp('shift')"),
    ({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "s"]}}, "pyautogui.hotkey('ctrl', 's')"),
])
def test_computer13_translations(action, code):
    parsed = parse_action(action)
    assert (parsed.kind, parsed.source, parsed.code) == ("code", "computer_13", code)
    compile(parsed.code, "<test>", "exec")


def test_every_computer13_type_is_covered():
    device = {t for t in COMPUTER13_TYPES if t not in ("WAIT", "DONE", "FAIL")}
    assert len(device) == 13


def test_computer13_as_json_text_and_special_types():
    text = json.dumps({"action_type": "PRESS", "parameters": {"key": "tab"}})
    assert parse_action(text).code == "pyautogui.press('tab')"
    assert parse_action({"action_type": "DONE"}).kind == "DONE"
    assert parse_action({"action_type": "fail", "parameters": {}}).kind == "FAIL"
    assert computer13_to_pyautogui({"action_type": "WAIT"}) == "WAIT"


@pytest.mark.parametrize("action, fragment", [
    ({"action_type": "JUMP"}, "action_type must be one of"),
    ({"action_type": "CLICK", "parameters": {"x": 5}}, "both 'x' and 'y'"),
    ({"action_type": "CLICK", "parameters": {"x": 5000, "y": 5}}, "off the screen"),
    ({"action_type": "CLICK", "parameters": {"x": "5", "y": 5}}, "must be a number"),
    ({"action_type": "CLICK", "parameters": {"num_clicks": 7}}, "num_clicks"),
    ({"action_type": "CLICK", "parameters": {"button": "fourth"}}, "'button' must be one of"),
    ({"action_type": "MOVE_TO", "parameters": {"x": 1}}, "missing: ['y']"),
    ({"action_type": "PRESS", "parameters": {"key": "enter", "times": 3}}, "unknown: ['times']"),
    ({"action_type": "PRESS", "parameters": {"key": "hyperspace"}}, "not a pyautogui key name"),
    ({"action_type": "HOTKEY", "parameters": {"keys": "ctrl+s"}}, "non-empty list"),
    ({"action_type": "SCROLL", "parameters": {"dy": 1.5}}, "whole number"),
    ({"action_type": "SCROLL", "parameters": {}}, "give 'dx' and/or 'dy'"),
    ({"action_type": "TYPING", "parameters": {"text": 5}}, "must be a string"),
    ({"action_type": "CLICK", "parameters": ["x", 1]}, "must be an object"),
])
def test_malformed_computer13_actions_say_why(action, fragment):
    parsed = parse_action(action)
    assert parsed.kind == "invalid" and parsed.source == "computer_13"
    assert fragment in parsed.problem
    with pytest.raises(ValueError, match="."):
        computer13_to_pyautogui(action)


def test_screen_size_bounds_coordinates():
    action = {"action_type": "MOVE_TO", "parameters": {"x": 1000, "y": 700}}
    assert parse_action(action, screen_size=(1920, 1080)).kind == "code"
    assert parse_action(action, screen_size=(800, 600)).kind == "invalid"
