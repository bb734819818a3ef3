"""rla_envs.desktop.settle: reset's wait for the setup's windows, on scripted screens and a fake clock (no session),
and the pure parts of the session's OSWorld look (window names, the wallpaper's bands)."""

from __future__ import annotations

import numpy as np

from rla_envs.desktop.controller.wallpaper import gradient_bands
from rla_envs.desktop.controller.windows import Window, matches
from rla_envs.desktop.osworld.runnable import program_of
from rla_envs.desktop.settle import STILL_POLLS, changed_fraction, expects_window, wait_until_drawn


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def screen(value: int, *, dot: bool = False) -> np.ndarray:
    frame = np.full((100, 100, 3), value, np.uint8)
    if dot:  # one pixel of 10,000: a blinking cursor
        frame[0, 0] = 255 - value
    return frame


def scripted(frames: list[np.ndarray]):
    """A screenshot function that returns ``frames`` in order, then the last one forever."""
    shown = iter(frames)
    last = [frames[-1]]

    def shot() -> np.ndarray:
        last[0] = next(shown, last[0])
        return last[0]
    return shot


def test_an_app_that_maps_late_and_draws_in_steps_is_waited_for():
    clock = Clock()
    windows = iter([0, 0, 0, 1])  # mapped at the 4th poll
    frames = [screen(0), screen(40), screen(90), screen(90, dot=True), screen(90), screen(90, dot=True)]
    settled = wait_until_drawn(scripted(frames), lambda: next(windows, 1), expect_window=True, timeout=20,
                               poll=0.25, clock=clock, sleep=clock.sleep)
    assert settled.settled and settled.windows == 1 and settled.expected_window
    # 3 polls for the window, then frames 0 -> 40 -> 90 change and the blinking dot is still enough: 2 still polls
    assert settled.seconds == 0.75 + 0.25 * (2 + STILL_POLLS)


def test_a_setup_that_opens_no_window_only_waits_for_a_still_screen():
    clock = Clock()
    asked = []
    settled = wait_until_drawn(scripted([screen(7)]), lambda: asked.append(1) or 0, expect_window=False,
                               clock=clock, sleep=clock.sleep)
    assert settled.settled and not settled.expected_window and asked == []
    assert settled.seconds == 0.25 * STILL_POLLS


def test_the_wait_is_bounded_and_says_it_did_not_settle():
    clock = Clock()
    flicker = [screen(v % 2 * 200) for v in range(1000)]  # never still
    settled = wait_until_drawn(scripted(flicker), lambda: 1, expect_window=True, timeout=5, clock=clock,
                               sleep=clock.sleep)
    assert not settled.settled and settled.seconds == 5.0
    clock = Clock()
    settled = wait_until_drawn(scripted([screen(0)]), lambda: 0, expect_window=True, timeout=3, clock=clock,
                               sleep=clock.sleep)
    assert not settled.settled and settled.windows == 0  # the window never came; the screen was still


def test_changed_fraction():
    assert changed_fraction(screen(0), screen(0)) == 0.0
    assert changed_fraction(screen(0), screen(0, dot=True)) == 1 / 10_000
    assert changed_fraction(screen(0), np.zeros((10, 10, 3), np.uint8)) == 1.0


def test_which_setups_expect_a_window():
    launch = lambda *command: {"type": "launch", "parameters": {"command": list(command)}}  # noqa: E731
    assert expects_window([launch("google-chrome", "--remote-debugging-port=1337"), launch("socat", "x")], program_of)
    assert expects_window([{"type": "open", "parameters": {"path": "/home/user/a.txt"}}], program_of)
    assert expects_window([{"type": "command", "parameters": {"command": "vlc --no-audio x.mp4"}}], program_of)
    assert not expects_window([launch("socat", "tcp-listen:9222,fork", "tcp:localhost:1337")], program_of)
    assert not expects_window([{"type": "execute", "parameters": {"command": ["gsettings", "set", "a", "b", "c"]}}],
                              program_of)
    assert not expects_window([], program_of) and not expects_window(None, program_of)
    assert not expects_window(["not a step", {"type": "launch", "parameters": "not a mapping"}], program_of)


def test_osworld_names_for_chromium_windows_match():
    chromium = Window("0x1", "chromium.Chromium", "New Tab - Chromium")
    assert matches(chromium, "Google Chrome") and matches(chromium, "google chrome")
    assert matches(chromium, "New Tab - Google Chrome", strict=True)
    assert matches(chromium, "google-chrome", by_class=True)
    assert not matches(chromium, "Mozilla Firefox") and not matches(chromium, "Google Chrome Beta", strict=True)
    assert matches(Window("0x2", "vlc.vlc", "VLC media player"), "VLC media player", strict=True)


def test_the_wallpaper_bands_cover_the_screen_from_aubergine_down():
    bands = gradient_bands(1080)
    assert bands[0][0] == 0 and sum(rows for _, rows, _ in bands) == 1080
    assert all(a[0] + a[1] == b[0] for a, b in zip(bands, bands[1:]))
    assert bands[0][2] == 0x2C001E and bands[-1][2] == 0x77216F
    assert gradient_bands(3, bands=64) == [(0, 1, 0x2C001E), (1, 1, gradient_bands(3, bands=3)[1][2]), (2, 1, 0x77216F)]


def test_a_negative_reset_wait_is_refused_before_any_session():
    import pytest

    from rla_envs.desktop.env import OSWorldEnv

    with pytest.raises(ValueError, match="reset_wait_seconds must be >= 0"):
        OSWorldEnv(reset_wait_seconds=-1)
    env = OSWorldEnv(reset_wait_seconds=0)  # 0: reset() takes the first frame at once (info["reset_wait"] None)
    assert env.reset_wait_seconds == 0.0
    env.close()
