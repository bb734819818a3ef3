"""Benchmark: reset, step and screenshot times of rla/OSWorld-v0's desktop sessions, against OSWorld's costs.

Measured for the local provider (and for the docker provider where a Docker-API socket and the desktop
image exist), on a 1920x1080 screen as OSWorld uses:

* **session reset in place** (``provider.reset()`` with ``fresh_sessions=False``: apps closed, the home directory
  and the session restored), against a **cold start** of a fresh session measured in the same run (Xvfb, window manager, AT-SPI and controller from
  nothing: the nearest thing to OSWorld's VM snapshot revert and reboot that can be measured here; OSWorld's
  own VM revert is not measured here). Goal: median <= 2 s, written as ratio ``2 s / median >= 1``.
* **the default reset** (``fresh_sessions=True``: a new session on every reset). Goal: median <= 2 s.
* **env reset** of a bundled task (session reset + the task's setup steps, which include the task's own
  fixed sleeps while its app starts), reported for information.
* **pyautogui step** (``env.step`` of a key press, without the accessibility tree, screenshot included),
  against OSWorld's fixed 2 s pause after every action (``DesktopEnv.step(pause=2)``, a constant in its
  code). Goal: median <= 150 ms, written as ratio ``150 ms / median >= 1``.
* **reset and step with a heavy app open**: ``provider.reset()`` while Chromium (a bundled Chrome task, started
  as OSWorld starts it) or LibreOffice Impress (a bundled Impress task with its .pptx) is open -- killing the
  app and clearing what it wrote to the home -- and ``env.step`` of a key press with that app open. Goal:
  reset median <= 2 s, as for the bare session.
* **screenshot**: the raw ``/rla/screenshot.raw`` path the env uses, against OSWorld's PNG ``/screenshot``
  path, both measured here on the same session.

Run it alone with ``python -m benchmarks.perf.desktop [--quick]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from benchmarks.perf.report import Metric

__all__ = ["run"]

SCREEN = (1920, 1080)
OSWORLD_STEP_PAUSE_S = 2.0
"""OSWorld's ``DesktopEnv.step`` sleeps this long after every action (its default ``pause``)."""
RESET_GOAL_S = 2.0
STEP_GOAL_MS = 150.0
TASK = "rla-os-make-dirs"  # an xterm task: the lightest app
APP_TASKS = {"chromium": "rla-chrome-bookmark-page", "impress": "rla-impress-add-slide"}
"""Bundled tasks whose setup opens the heavy apps the reset is measured with (app label -> task id)."""


def _times(job: Callable[[], object], count: int) -> list[float]:
    """Seconds per call of ``job``, ``count`` calls."""
    seconds = []
    for _ in range(count):
        start = time.perf_counter()
        job()
        seconds.append(time.perf_counter() - start)
    return seconds


def _measure(provider_name: str, quick: bool, make_options: dict) -> list[Metric]:
    from rla_envs.desktop.env import OSWorldEnv

    resets, steps, shots = (5, 20, 10) if quick else (20, 100, 40)
    env = OSWorldEnv(provider=provider_name, provider_options={**make_options, "fresh_sessions": False},
                     screen_size=SCREEN, accessibility_tree=False, max_steps=10_000)  # the restore in place
    try:
        start = time.perf_counter()
        env.provider.start()
        cold = [time.perf_counter() - start]
        env.reset(options={"task": TASK})  # warm-up
        session_reset = _times(env.provider.reset, resets)
        client = env.client

        def reset_after_an_action() -> None:  # the action process is replaced: its successor serves the next one
            client.run_pyautogui("pyautogui.press('shift')")
            start = time.perf_counter()
            env.provider.reset()
            client.run_pyautogui("pyautogui.press('shift')")
            used_reset.append(time.perf_counter() - start)

        used_reset: list[float] = []
        _times(reset_after_an_action, resets)
        env_reset = _times(lambda: env.reset(options={"task": TASK}), max(3, resets // 2))
        action = _times(lambda: client.run_pyautogui("pyautogui.press('shift')"), steps)
        step = _times(lambda: env.step("pyautogui.press('shift')"), steps)
        raw = _times(client.screenshot_array, shots)
        png = _times(client.screenshot, shots)
        tree = _times(client.accessibility_tree, max(3, shots // 4))
        with_apps = [metric for app, task in APP_TASKS.items()
                     for metric in _with_app_open(env, provider_name, app, task, resets, steps)]
    finally:
        env.close()
    again = OSWorldEnv(provider=provider_name, provider_options=make_options or None, screen_size=SCREEN)
    try:  # the default provider: a second cold start, for a steadier baseline, then its resets (a new session each)
        start = time.perf_counter()
        again.provider.start()
        cold.append(time.perf_counter() - start)
        fresh_reset = _times(again.provider.reset, resets)
    finally:
        again.close()

    def med(values: list[float]) -> float:
        return statistics.median(values)

    prefix = provider_name
    cold_s = med(cold)
    return [
        Metric(f"{prefix}_session_reset_s", med(session_reset), RESET_GOAL_S, "s", higher_is_better=False, goal=1.0,
               note=f"provider.reset() in place, median of {resets}; baseline = the 2 s goal. Cold start of a fresh session "
               f"(nearest measurable stand-in for OSWorld's VM revert+reboot, which is not measured here): "
               f"{cold_s:.2f} s median of {len(cold)}, i.e. reset is {cold_s / med(session_reset):.1f}x faster"),
        Metric(f"{prefix}_fresh_session_reset_s", med(fresh_reset), RESET_GOAL_S, "s", higher_is_better=False,
               goal=1.0, note=f"provider.reset() as the provider does it by default (fresh_sessions: a new session), "
               f"median of {resets}; baseline = the 2 s goal"),
        Metric(f"{prefix}_reset_after_actions_s", med(used_reset), RESET_GOAL_S, "s", higher_is_better=False,
               goal=1.0, note=f"provider.reset() after an episode that ran actions, plus the first action after it "
               f"(the action process is replaced on such a reset), median of {resets}; baseline = the 2 s goal"),
        Metric(f"{prefix}_reset_vs_cold_start", med(session_reset), cold_s, "s", higher_is_better=False,
               note="value = session reset, baseline = cold start of a fresh session, both measured here; "
               "ratio > 1 means a reset is cheaper than starting over"),
        Metric(f"{prefix}_env_reset_s", med(env_reset), RESET_GOAL_S, "s", higher_is_better=False,
               note=f"env.reset() of bundled task {TASK}: session reset + its setup steps (start xterm and wait for "
               "its window); for information"),
        Metric(f"{prefix}_pyautogui_step_ms", med(action) * 1000, STEP_GOAL_MS, "ms", higher_is_better=False,
               goal=1.0, note=f"one pyautogui action (a key press) through the controller's warm action process, "
               f"round trip, median of {steps}; baseline = the 150 ms goal"),
        Metric(f"{prefix}_env_step_vs_osworld_pause", med(step) * 1000, OSWORLD_STEP_PAUSE_S * 1000, "ms",
               higher_is_better=False,
               note=f"env.step(key press) median of {steps}: the action, wait_seconds={env.wait_seconds} s and the "
               "screenshot (no accessibility tree); baseline = OSWorld's fixed 2 s pause after every action "
               "(DesktopEnv.step pause=2, a constant in its code, not a measurement)"),
        Metric(f"{prefix}_accessibility_tree_ms", med(tree) * 1000, med(raw) * 1000, "ms", higher_is_better=False,
               note="fetching the accessibility tree (xterm open) vs the raw screenshot; for information: "
               "accessibility_tree=True adds this to every step"),
        Metric(f"{prefix}_screenshot_ms", med(raw) * 1000, med(png) * 1000, "ms", higher_is_better=False,
               note=f"raw RGB /rla/screenshot.raw vs OSWorld's PNG /screenshot on the same session, "
               f"{SCREEN[0]}x{SCREEN[1]}, median of {shots} each"),
        *with_apps,
    ]


def _with_app_open(env, prefix: str, app: str, task: str, resets: int, steps: int) -> list[Metric]:
    """Reset and step times with ``task``'s app open: each reset follows an env.reset that opened the app."""
    reset_seconds = []
    step_seconds: list[float] = []
    for _ in range(resets):
        env.reset(options={"task": task})  # the task's setup starts the app and waits for its window
        if not step_seconds:
            step_seconds = _times(lambda: env.step("pyautogui.press('shift')"), steps)
        reset_seconds += _times(env.provider.reset, 1)
    reset_s, step_ms = statistics.median(reset_seconds), statistics.median(step_seconds) * 1000
    return [
        Metric(f"{prefix}_reset_with_{app}_s", reset_s, RESET_GOAL_S, "s", higher_is_better=False, goal=1.0,
               note=f"provider.reset() with {app} open (bundled task {task}: the app is killed, the home restored), "
               f"median of {resets} resets (max {max(reset_seconds):.2f} s); baseline = the 2 s goal"),
        Metric(f"{prefix}_env_step_with_{app}_ms", step_ms, OSWORLD_STEP_PAUSE_S * 1000, "ms", higher_is_better=False,
               note=f"env.step(key press) with {app} open, median of {steps}: the action, wait_seconds and the "
               "screenshot; baseline = OSWorld's fixed 2 s pause after every action"),
    ]


def _docker_available() -> str | None:
    """None when a Docker-API socket and the desktop image are there, else the reason."""
    try:
        from rla_envs.desktop.providers.docker import DockerProvider

        DockerProvider().verify_image()
    except Exception as exc:  # noqa: BLE001 - any failure means: skip docker, say why
        return str(exc)
    return None


def run(quick: bool = False) -> list[Metric]:
    """Measure the local provider (and docker where available); return the metrics."""
    metrics = _measure("local", quick, {})
    reason = _docker_available()
    if reason is None:
        metrics += _measure("docker", quick, {})
    else:
        print(f"docker provider skipped: {reason}", file=sys.stderr)
    return metrics


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv), machine_facts()))
