"""Desktop actions: what an agent may send to rla/OSWorld-v0, checked and turned into pyautogui code.

Three forms are accepted, as in OSWorld:

* **pyautogui code** (OSWorld's ``pyautogui`` action space): Python source that calls ``pyautogui`` (and
  ``time``), optionally in a fenced ``python`` block. It must compile; it runs inside the desktop session.
* **special words** ``WAIT``, ``DONE`` and ``FAIL`` (any case, alone): wait a moment; the task is complete;
  the task cannot be done.
* **computer_13 dicts** (OSWorld's ``computer_13`` action space): ``{"action_type": "CLICK", "parameters":
  {"x": 10, "y": 20}}`` — or the same object as JSON text. Each is translated into pyautogui code here.

:func:`parse_action` never raises on bad input: it returns an :class:`Action` whose ``problem`` says what
was wrong and how to fix it, which the env turns into an invalid-action observation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Action", "parse_action", "computer13_to_pyautogui", "SPECIAL_ACTIONS", "COMPUTER13_TYPES",
           "KEYBOARD_KEYS", "MAX_CODE_CHARS"]

SPECIAL_ACTIONS = ("WAIT", "DONE", "FAIL")
MAX_CODE_CHARS = 20_000
"""The longest pyautogui program accepted as one action."""

# pyautogui's key names (pyautogui.KEYBOARD_KEYS), which computer_13's PRESS/HOTKEY/KEY_DOWN/KEY_UP take.
_NAMED_KEYS = """
accept add alt altleft altright apps backspace browserback browserfavorites browserforward browserhome
browserrefresh browsersearch browserstop capslock clear convert ctrl ctrlleft ctrlright decimal del delete
divide down end enter esc escape execute f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16 f17 f18 f19
f20 f21 f22 f23 f24 final fn hanguel hangul hanja help home insert junja kana kanji launchapp1 launchapp2
launchmail launchmediaselect left modechange multiply nexttrack nonconvert num0 num1 num2 num3 num4 num5 num6
num7 num8 num9 numlock pagedown pageup pause pgdn pgup playpause prevtrack print printscreen prntscrn prtsc
prtscr return right scrolllock select separator shift shiftleft shiftright sleep space stop subtract tab up
volumedown volumemute volumeup win winleft winright yen command option optionleft optionright
""".split()
KEYBOARD_KEYS = frozenset(_NAMED_KEYS) | frozenset(chr(c) for c in range(32, 127)) | {"\t", "\n", "\r"}
"""Key names accepted by computer_13's key actions (pyautogui's names and single printable characters)."""

_BUTTONS = ("left", "right", "middle")

COMPUTER13_TYPES: dict[str, dict[str, str]] = {
    # action type -> {parameter: "required" | "optional"}
    "MOVE_TO": {"x": "required", "y": "required"},
    "CLICK": {"button": "optional", "x": "optional", "y": "optional", "num_clicks": "optional"},
    "MOUSE_DOWN": {"button": "optional"},
    "MOUSE_UP": {"button": "optional"},
    "RIGHT_CLICK": {"x": "optional", "y": "optional"},
    "DOUBLE_CLICK": {"x": "optional", "y": "optional"},
    "DRAG_TO": {"x": "required", "y": "required"},
    "SCROLL": {"dx": "optional", "dy": "optional"},
    "TYPING": {"text": "required"},
    "PRESS": {"key": "required"},
    "KEY_DOWN": {"key": "required"},
    "KEY_UP": {"key": "required"},
    "HOTKEY": {"keys": "required"},
    "WAIT": {},
    "DONE": {},
    "FAIL": {},
}
"""OSWorld's computer_13 action space: the 13 device actions plus WAIT, DONE and FAIL, with their parameters."""

_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(?P<body>.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Action:
    """A checked action.

    Attributes:
        kind: ``"code"`` (run ``code``), ``"WAIT"``, ``"DONE"``, ``"FAIL"``, or ``"invalid"``.
        code: the pyautogui code to run (``kind == "code"``), else ``""``.
        problem: why the action cannot be used (``kind == "invalid"``), else None.
        source: ``"pyautogui"``, ``"special"``, ``"computer_13"`` or ``"unknown"``.
    """

    kind: str
    code: str = ""
    problem: str | None = None
    source: str = "pyautogui"

    @property
    def ends_episode(self) -> bool:
        """True for DONE and FAIL."""
        return self.kind in ("DONE", "FAIL")


def _invalid(problem: str, source: str = "unknown") -> Action:
    return Action("invalid", problem=problem, source=source)


def parse_action(action: Any, *, screen_size: tuple[int, int] = (1920, 1080)) -> Action:
    """Check an agent's action (text or computer_13 dict) and return what to do with it; never raises."""
    if isinstance(action, Mapping):
        return _parse_computer13(action, screen_size)
    if not isinstance(action, str):
        return _invalid(f"an action is pyautogui code, WAIT/DONE/FAIL or a computer_13 dict; got "
                        f"{type(action).__name__}. Send e.g. \"pyautogui.press('enter')\" or DONE.")
    text = action.strip()
    if not text:
        return _invalid("the action is empty. Send pyautogui code, or WAIT, DONE or FAIL.")
    word = text.strip("`").strip().upper()
    if word in SPECIAL_ACTIONS:
        return Action(word, source="special")
    if text.startswith("{") and '"action_type"' in text:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return _invalid(f"the computer_13 action is not valid JSON: {exc.msg} at character {exc.pos}.",
                            "computer_13")
        if isinstance(data, Mapping):
            return _parse_computer13(data, screen_size)
    blocks = [m.group("body") for m in _FENCE.finditer(text)]
    code = (blocks[-1] if blocks else text).strip()
    return _check_code(code)


def _check_code(code: str) -> Action:
    if not code:
        return _invalid("the code block is empty. Put pyautogui code in it, e.g. pyautogui.hotkey('ctrl', 's').",
                        "pyautogui")
    if len(code) > MAX_CODE_CHARS:
        return _invalid(f"the code is {len(code)} characters long; at most {MAX_CODE_CHARS} are accepted. "
                        "Send shorter steps.", "pyautogui")
    if "\x00" in code:
        return _invalid("the code contains a NUL character.", "pyautogui")
    try:
        compile(code, "<action>", "exec")
    except SyntaxError as error:
        return _invalid(f"the pyautogui code does not compile: {error.msg} (line {error.lineno}). Send valid "
                        "Python that calls pyautogui, or WAIT, DONE or FAIL.", "pyautogui")
    except (ValueError, OverflowError, RecursionError, MemoryError) as error:
        return _invalid(f"the pyautogui code cannot be compiled: {error}", "pyautogui")
    return Action("code", code=code, source="pyautogui")


# --------------------------------------------------------------------------- computer_13

class _Problem(Exception):
    """Why a computer_13 action's parameters cannot be translated."""


def _number(parameters: Mapping[str, Any], name: str, low: float, high: float) -> float:
    """The parameter as a number within [low, high]; ``_Problem`` otherwise."""
    value = parameters[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Problem(f"parameter {name!r} must be a number, got {value!r:.40}")
    if not low <= value <= high:
        raise _Problem(f"parameter {name!r} = {value} is off the screen; it must be within [{low:g}, {high:g}]")
    return value


def _key(value: Any, name: str) -> None:
    """``_Problem`` unless ``value`` is a pyautogui key name."""
    if not isinstance(value, str) or value.lower() not in KEYBOARD_KEYS and value not in KEYBOARD_KEYS:
        raise _Problem(f"parameter {name!r} = {value!r:.40} is not a pyautogui key name (e.g. 'enter', 'ctrl', "
                       "'a', 'f5')")


def computer13_to_pyautogui(action: Mapping[str, Any], *, screen_size: tuple[int, int] = (1920, 1080)) -> str:
    """The pyautogui code for one computer_13 action dict; ``ValueError`` with the reason when it is malformed."""
    parsed = _parse_computer13(action, screen_size)
    if parsed.kind == "invalid":
        raise ValueError(parsed.problem)
    return parsed.code if parsed.kind == "code" else parsed.kind


def _parse_computer13(action: Mapping[str, Any], screen_size: tuple[int, int]) -> Action:
    kind = action.get("action_type")
    if not isinstance(kind, str) or kind.upper() not in COMPUTER13_TYPES:
        return _invalid(f"computer_13 action_type must be one of {sorted(COMPUTER13_TYPES)}, got {kind!r:.40}",
                        "computer_13")
    kind = kind.upper()
    parameters = action.get("parameters") or {}
    if not isinstance(parameters, Mapping):
        return _invalid(f"computer_13 'parameters' must be an object, got {type(parameters).__name__}", "computer_13")
    allowed = COMPUTER13_TYPES[kind]
    unknown = sorted(set(parameters) - set(allowed))
    missing = sorted(p for p, need in allowed.items() if need == "required" and p not in parameters)
    if unknown or missing:
        return _invalid(f"{kind} takes parameters {sorted(allowed) or 'none'}; "
                        + (f"unknown: {unknown}" if unknown else "") + ("; " if unknown and missing else "")
                        + (f"missing: {missing}" if missing else ""), "computer_13")
    if kind in SPECIAL_ACTIONS:
        return Action(kind, source="computer_13")
    try:
        code = _translate(kind, parameters, screen_size)
    except _Problem as problem:
        return _invalid(f"{kind}: {problem}", "computer_13")
    return Action("code", code=code, source="computer_13")


def _xy(parameters: Mapping[str, Any], screen_size: tuple[int, int], *, required: bool) -> str:
    """``"x, y"`` for pyautogui, ``""`` when both are absent (the current position)."""
    has_x, has_y = "x" in parameters, "y" in parameters
    if not (has_x or has_y) and not required:
        return ""
    if has_x != has_y:
        raise _Problem("give both 'x' and 'y', or neither")
    width, height = screen_size
    x = _number(parameters, "x", 0, width - 1)
    y = _number(parameters, "y", 0, height - 1)
    return f"{x!r}, {y!r}"


def _button(parameters: Mapping[str, Any]) -> str:
    button = parameters.get("button", "left")
    if button not in _BUTTONS:
        raise _Problem(f"'button' must be one of {list(_BUTTONS)}, got {button!r:.40}")
    return button


def _translate(kind: str, parameters: Mapping[str, Any], screen_size: tuple[int, int]) -> str:
    if kind == "MOVE_TO":
        return f"pyautogui.moveTo({_xy(parameters, screen_size, required=True)})"
    if kind == "CLICK":
        xy = _xy(parameters, screen_size, required=False)
        clicks = parameters.get("num_clicks", 1)
        if isinstance(clicks, bool) or clicks not in (1, 2, 3):
            raise _Problem(f"'num_clicks' must be 1, 2 or 3, got {clicks!r:.40}")
        args = ([xy] if xy else []) + [f"button={_button(parameters)!r}", f"clicks={clicks}"]
        return f"pyautogui.click({', '.join(args)})"
    if kind in ("MOUSE_DOWN", "MOUSE_UP"):
        function = "mouseDown" if kind == "MOUSE_DOWN" else "mouseUp"
        return f"pyautogui.{function}(button={_button(parameters)!r})"
    if kind in ("RIGHT_CLICK", "DOUBLE_CLICK"):
        function = "rightClick" if kind == "RIGHT_CLICK" else "doubleClick"
        return f"pyautogui.{function}({_xy(parameters, screen_size, required=False)})"
    if kind == "DRAG_TO":
        return f"pyautogui.dragTo({_xy(parameters, screen_size, required=True)}, duration=0.5, button='left')"
    if kind == "SCROLL":
        lines = []
        for name, function in (("dx", "hscroll"), ("dy", "vscroll")):
            if name in parameters:
                value = parameters[name]
                if isinstance(value, bool) or not isinstance(value, int):
                    raise _Problem(f"{name!r} must be a whole number of clicks, got {value!r:.40}")
                lines.append(f"pyautogui.{function}({value})")
        if not lines:
            raise _Problem("give 'dx' and/or 'dy' (clicks; dy > 0 scrolls up)")
        return "\n".join(lines)
    if kind == "TYPING":
        text = parameters["text"]
        if not isinstance(text, str):
            raise _Problem(f"'text' must be a string, got {type(text).__name__}")
        return f"pyautogui.typewrite({text!r})"
    if kind in ("PRESS", "KEY_DOWN", "KEY_UP"):
        _key(parameters["key"], "key")
        function = {"PRESS": "press", "KEY_DOWN": "keyDown", "KEY_UP": "keyUp"}[kind]
        return f"pyautogui.{function}({parameters['key']!r})"
    if kind == "HOTKEY":
        keys = parameters["keys"]
        if not isinstance(keys, (list, tuple)) or not keys:
            raise _Problem(f"'keys' must be a non-empty list of key names, e.g. ['ctrl', 'c'], got {keys!r:.40}")
        for key in keys:
            _key(key, "keys")
        return f"pyautogui.hotkey({', '.join(repr(k) for k in keys)})"
    raise _Problem(f"no translation for {kind}")  # pragma: no cover - every type above is handled
