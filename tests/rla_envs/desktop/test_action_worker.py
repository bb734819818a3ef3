"""The action worker's pure parts (no display needed): scroll clamping and how an action's end is reported."""

from __future__ import annotations

from rla_envs.desktop.controller.action_worker import MAX_SCROLL_CLICKS, _clamped, _run


def test_scroll_amounts_beyond_the_limit_are_clamped_and_others_pass_unchanged():
    calls = []

    def scroll(clicks, *args, **kwargs):
        calls.append((clicks, args, kwargs))

    clamped = _clamped(scroll)
    for clicks in (10**9, -10**9, 3, -2, 2.5, float("inf"), True, "x"):
        clamped(clicks, 5, y=6)
    assert [c[0] for c in calls] == [MAX_SCROLL_CLICKS, -MAX_SCROLL_CLICKS, 3, -2, 2.5, MAX_SCROLL_CLICKS, True, "x"]
    assert all(c[1:] == ((5,), {"y": 6}) for c in calls)


def test_an_action_that_raises_or_exits_is_an_error_reply():
    assert _run("x = 1", pyautogui=None) == {"status": "success", "error": ""}
    assert _run("import sys; sys.exit(3)", pyautogui=None) == {"status": "error", "error": "SystemExit: 3"}
    assert _run("raise KeyboardInterrupt('stop')", pyautogui=None)["error"] == "KeyboardInterrupt: stop"
    assert len(_run("raise ValueError('x' * 10**6)", pyautogui=None)["error"]) <= 2000
