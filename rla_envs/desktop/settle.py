"""Waiting at reset until the windows a task's setup opened are on screen and drawn.

OSWorld's own harness waits after reset before its first observation; a setup step returns as soon as an app is
launched, before it has mapped or drawn a window, so without a wait an agent's first frame is often black. The rule
(pure: the screen and the window list are passed in as functions):

* a setup that opens something (an ``open`` or ``chrome_open_tabs`` step, or a ``launch`` / ``command`` of a program
  with windows, :data:`WINDOWED_PROGRAMS`) expects a window: wait until one is mapped;
* then wait until the screen holds still: :data:`STILL_POLLS` screenshots in a row, :data:`POLL_S` apart, each differ
  from the one before in at most :data:`STILL_FRACTION` of their pixels (a blinking cursor is below it, an app
  drawing itself is far above);
* never longer than ``timeout`` seconds: the observation is then whatever the screen shows, and ``settled`` says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rla_envs.desktop.controller.openers import OPENERS

__all__ = ["WINDOWED_PROGRAMS", "Settled", "expects_window", "changed_fraction", "wait_until_drawn"]

WINDOWED_PROGRAMS = frozenset({
    *(opener.command[0] for opener in OPENERS), *(opener.program for opener in OPENERS),
    "chromium", "thunderbird", "nautilus", "gnome-terminal", "xterm", "soffice", "gedit", "totem", "code", "eog",
    "evince",
})
"""Programs that open a window when launched: every app an ``open`` step starts (``controller/openers.py``) and the
others OSWorld's setups launch (``socat``, ``pkill`` and the like open none)."""

POLL_S = 0.25
STILL_FRACTION = 0.002
STILL_POLLS = 2
DEFAULT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Settled:
    """How a reset's wait ended: ``seconds`` waited, whether a window was expected and how many were mapped, and
    ``settled`` (False: the bound ran out first)."""

    seconds: float
    expected_window: bool
    windows: int
    settled: bool

    def as_info(self) -> dict[str, Any]:
        return asdict(self)


def expects_window(steps: Iterable[Any], program_of: Callable[[Any], str | None]) -> bool:
    """Whether setup ``steps`` (OSWorld's ``config``) open something that draws a window."""
    for step in steps or ():
        if not isinstance(step, Mapping):
            continue
        kind, parameters = step.get("type"), step.get("parameters") or {}
        if kind in ("open", "chrome_open_tabs"):
            return True
        if kind in ("launch", "command") and isinstance(parameters, Mapping):
            program = program_of(parameters.get("command"))
            if program and program.rsplit("/", 1)[-1] in WINDOWED_PROGRAMS:
                return True
    return False


def changed_fraction(before: np.ndarray, after: np.ndarray) -> float:
    """The share of pixels that differ between two screenshots (1.0 when their sizes differ).

    >>> a = np.zeros((2, 2, 3), np.uint8); b = a.copy(); b[0, 0, 1] = 9
    >>> changed_fraction(a, b)
    0.25
    """
    if before.shape != after.shape:
        return 1.0
    return float(np.any(before != after, axis=-1).mean())


def wait_until_drawn(screenshot: Callable[[], np.ndarray], window_count: Callable[[], int], *, expect_window: bool,
                     timeout: float = DEFAULT_TIMEOUT_S, poll: float = POLL_S,
                     clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Settled:
    """Poll until the expected window is mapped and the screen holds still, or ``timeout`` s have passed."""
    started = clock()
    deadline = started + timeout
    windows = window_count() if expect_window else 0
    while expect_window and windows == 0 and clock() < deadline:
        sleep(poll)
        windows = window_count()
    previous, still = screenshot(), 0
    while clock() < deadline:
        sleep(poll)
        current = screenshot()
        still = still + 1 if changed_fraction(previous, current) <= STILL_FRACTION else 0
        if still >= STILL_POLLS:
            return Settled(round(clock() - started, 2), expect_window, windows, windows > 0 or not expect_window)
        previous = current
    return Settled(round(clock() - started, 2), expect_window, windows, False)
