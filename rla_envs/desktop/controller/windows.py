"""The session's top-level windows: listing, matching by title or class, activating and closing (wmctrl)."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass

__all__ = ["Window", "OSWORLD_NAMES", "list_windows", "find_windows", "activate", "close", "wait_for_window"]


@dataclass(frozen=True)
class Window:
    """One managed window: its X id, WM_CLASS (``instance.Class``) and title."""

    id: str
    wm_class: str
    title: str


def list_windows(env: dict[str, str]) -> list[Window]:
    """Every window the window manager manages (``wmctrl -lx``)."""
    result = subprocess.run(["wmctrl", "-lx"], env=env, capture_output=True, text=True, timeout=10)
    windows = []
    for line in result.stdout.splitlines():
        parts = line.split(None, 4)
        if len(parts) >= 4:
            windows.append(Window(parts[0], parts[2], parts[4] if len(parts) == 5 else ""))
    return windows


OSWORLD_NAMES: dict[str, str] = {"Google Chrome": "Chromium", "google-chrome": "chromium"}
"""What OSWorld's tasks call a window on its VM -> what the same app's window is called here: the session's browser
is Chromium (behind a ``google-chrome`` launcher), whose titles end in "- Chromium" and whose class is
``chromium.Chromium``, where OSWorld's setup steps look for "Google Chrome" (``activate_window``)."""


def _names(name: str, *, ignore_case: bool) -> list[str]:
    """``name`` and, where it uses one of OSWorld's names, the same with this session's name."""
    local = name
    for theirs, ours in OSWORLD_NAMES.items():
        local = re.sub(re.escape(theirs), ours, local, flags=re.IGNORECASE if ignore_case else 0)
    return [name] if local == name else [name, local]


def matches(window: Window, name: str, *, strict: bool = False, by_class: bool = False) -> bool:
    """wmctrl's rule: a case-insensitive substring, or with ``strict`` the whole string, case-sensitive; OSWorld's
    names for this session's apps (:data:`OSWORLD_NAMES`) match too."""
    if by_class:
        candidates = [window.wm_class, *window.wm_class.split(".")]
    else:
        candidates = [window.title]
    if strict:
        return any(alias in candidates for alias in _names(name, ignore_case=False))
    return any(alias.lower() in candidate.lower() for alias in _names(name, ignore_case=True) for candidate in candidates)


def find_windows(env: dict[str, str], name: str, *, strict: bool = False, by_class: bool = False,
                 wait: float = 0.0) -> list[Window]:
    """The windows whose title (or class) matches ``name``, polled for up to ``wait`` s until there is one."""
    deadline = time.monotonic() + wait
    while True:
        found = [w for w in list_windows(env) if matches(w, name, strict=strict, by_class=by_class)]
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def activate(env: dict[str, str], window: Window) -> None:
    """Raise and focus ``window`` (switching to its desktop)."""
    subprocess.run(["wmctrl", "-i", "-a", window.id], env=env, capture_output=True, timeout=10)


def close(env: dict[str, str], window: Window) -> None:
    """Ask ``window`` to close, as its close button does."""
    subprocess.run(["wmctrl", "-i", "-c", window.id], env=env, capture_output=True, timeout=10)


def wait_for_window(env: dict[str, str], names: list[str], timeout: float) -> Window | None:
    """The first window whose title contains one of ``names``, polled until ``timeout`` s; None if none came.

    (The launching process is no sign of life: mousepad and LibreOffice hand a file to their running
    instance and exit at once.)
    """
    deadline = time.monotonic() + timeout
    while True:
        for window in list_windows(env):
            if any(name and name in window.title for name in names):
                return window
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)
