"""``python -m controller.action_worker``: run agents' pyautogui code, one action per request, until killed.

The controller starts this process (:mod:`controller.action_runner`) so that an agent's code never runs in
the controller itself: code that loops, sleeps, scrolls ``10**9`` clicks or calls ``os._exit`` costs this
process only, which the controller kills and replaces.

Protocol: one JSON object per line. Requests ``{"code": str}`` arrive on the fd given as ``--requests``;
replies go to the fd given as ``--replies``: first ``{"ready": true}`` (or ``{"ready": false, "error": str}``),
then one ``{"status": "success"|"error", "error": str}`` per request. The agent's code sees neither: its
stdin reads ``/dev/null`` and its stdout and stderr write there.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

__all__ = ["MAX_SCROLL_CLICKS", "main"]

MAX_SCROLL_CLICKS = 500
"""Scroll amounts beyond this many clicks either way are clamped: pyautogui's X11 scroll sends every click as
a button press and release, each waited for (``scroll(10**9)`` would run for days; 1000 clicks took 1-3 s on
a loaded 2-core machine). 500 clicks scroll about 1500 lines, many screens more than any action needs."""
MAX_ERROR_CHARS = 2000


def _clamped(scroll):
    """``scroll`` (pyautogui.scroll, hscroll or vscroll) with its click count clamped to +-MAX_SCROLL_CLICKS."""

    def wrapper(clicks, *args, **kwargs):
        if isinstance(clicks, (int, float)) and not isinstance(clicks, bool):
            clicks = max(-MAX_SCROLL_CLICKS, min(MAX_SCROLL_CLICKS, clicks))
        return scroll(clicks, *args, **kwargs)

    wrapper.__name__, wrapper.__doc__ = scroll.__name__, scroll.__doc__
    return wrapper


def _pyautogui():
    """pyautogui set up for actions: no pause after every call, no corner fail-safe, scroll amounts clamped."""
    import pyautogui

    pyautogui.PAUSE = 0          # each action is one request; no pause after every call
    pyautogui.FAILSAFE = False   # a click in the top-left corner is a legal action here
    for name in ("scroll", "hscroll", "vscroll"):
        setattr(pyautogui, name, _clamped(getattr(pyautogui, name)))
    return pyautogui


def _run(code: str, pyautogui) -> dict:
    """Run one action; any exception (SystemExit too) is an error reply."""
    try:
        exec(compile(code, "<action>", "exec"), {"pyautogui": pyautogui, "time": time, "__name__": "__action__"})
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are an action's errors too
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]}
    return {"status": "success", "error": ""}


def _detach_standard_streams() -> None:
    """Point fds 0, 1 and 2 at /dev/null: the agent's code neither reads requests nor writes into the log."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.action_worker", description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, required=True, help="fd to read requests from")
    parser.add_argument("--replies", type=int, required=True, help="fd to write replies to")
    args = parser.parse_args(argv)
    requests = os.fdopen(args.requests, "r", encoding="utf-8")
    replies = os.fdopen(args.replies, "w", encoding="utf-8", buffering=1)

    def reply(message: dict) -> None:
        replies.write(json.dumps(message) + "\n")

    _detach_standard_streams()
    try:
        pyautogui = _pyautogui()
    except Exception:  # noqa: BLE001 - say why to the controller, which reports it
        reply({"ready": False, "error": traceback.format_exc()[-MAX_ERROR_CHARS:]})
        return 1
    reply({"ready": True})
    for line in requests:
        try:
            code = json.loads(line)["code"]
        except (ValueError, KeyError, TypeError) as exc:
            reply({"status": "error", "error": f"malformed request: {exc}"})
            continue
        reply(_run(code, pyautogui))
    return 0


if __name__ == "__main__":
    sys.exit(main())
