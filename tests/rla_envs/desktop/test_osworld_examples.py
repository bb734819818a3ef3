"""Every real OSWorld task the survey calls runnable without a file cache, played as an agent sees it (issue 28).

For each: ``reset()`` shows a first frame that is a desktop, not a black screen (the windows the setup opened are
mapped when it expected one), ``DONE`` at once scores 0.0 on a feasible task (no reward without acting) and ``FAIL``
scores 1.0 on an infeasible one. Plus the keys and windows OSWorld's tasks rely on: Ctrl+Alt+T opens a terminal at
its profile's size (os/13584542's grader types ``stty size`` into it), and "Google Chrome" finds Chromium's window.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.paths import OSWORLD_TASKS
from tests.rla_envs.desktop.conftest import wait_until

pytestmark = pytest.mark.desktop

EXAMPLES = OSWORLD_TASKS / "examples"


def _runnable():
    if not EXAMPLES.is_dir():
        return []
    from rla_envs.desktop.osworld.runnable import not_runnable_reasons
    from rla_envs.desktop.osworld.tasks import load_tasks

    return [task for task in load_tasks(EXAMPLES) if not not_runnable_reasons(task)]


TASKS = _runnable()


@pytest.fixture(scope="module")
def env(local_provider):
    if not TASKS:
        pytest.skip(f"no OSWorld tasks at {EXAMPLES}")
    from rla_envs.desktop.env import OSWorldEnv

    env = OSWorldEnv(TASKS, provider=local_provider, accessibility_tree=False)
    yield env
    env.close()


def _infeasible(task) -> bool:
    return task.spec["osworld"]["evaluator"].get("func") == "infeasible"


def test_the_counts_the_readme_states():
    if not TASKS:
        pytest.skip(f"no OSWorld tasks at {EXAMPLES}")
    assert (len(TASKS), sum(map(_infeasible, TASKS))) == (75, 13)


@pytest.mark.parametrize("task", TASKS, ids=[f"{t.meta['app']}/{t.meta['osworld_id'][:8]}" for t in TASKS])
def test_reset_shows_a_desktop_and_acting_at_once_pays_nothing(env, task):
    observation, info = env.reset(options={"task": task})
    screen = observation["screenshot"]
    # VLC's idle video area is black (its menu and controls are ~9% of the screen): a black frame is none of it
    assert (screen.max(axis=2) > 16).mean() > 0.05, "the first frame is black"
    assert len(np.unique(screen.reshape(-1, 3)[::101], axis=0)) > 8, "the first frame is one flat colour"
    wait = info["reset_wait"]
    assert wait["windows"] >= 1 or not wait["expected_window"], f"the setup's window never came: {wait}"
    action, paid = ("FAIL", 1.0) if _infeasible(task) else ("DONE", 0.0)
    _, reward, terminated, _, step_info = env.step(action)
    assert terminated and step_info["evaluation_error"] is None, step_info
    assert reward == paid


def test_ctrl_alt_t_opens_a_terminal_at_its_profiles_size(desktop_client):
    desktop_client.run_pyautogui("pyautogui.hotkey('ctrl', 'alt', 't')")
    listed = lambda: desktop_client.execute(["wmctrl", "-lx"])["output"]  # noqa: E731
    assert wait_until(lambda: "gnome-terminal" in listed().lower(), timeout=30), listed()
    terminal = next(line for line in listed().splitlines() if "gnome-terminal" in line.lower())
    geometry = desktop_client.execute(["xwininfo", "-id", terminal.split()[0]])["output"]
    width = int(next(line for line in geometry.splitlines() if "Width:" in line).split()[-1])
    assert width < 1920 * 3 // 4, f"the terminal is maximised: {geometry}"  # 80 columns, as its profile says
    desktop_client.run_pyautogui("pyautogui.write('stty size > /tmp/rla-stty.txt'); pyautogui.press('enter')")
    assert wait_until(lambda: desktop_client.execute(["cat", "/tmp/rla-stty.txt"])["output"].strip(), timeout=30)
    assert desktop_client.execute(["cat", "/tmp/rla-stty.txt"])["output"].split()[1] == "80"


def test_google_chrome_is_found_by_its_osworld_name(desktop_client):
    desktop_client.launch(["google-chrome", "--no-first-run", "about:blank"])
    assert wait_until(lambda: "chromium" in desktop_client.execute(["wmctrl", "-lx"])["output"].lower(), timeout=60)
    desktop_client.activate_window("Google Chrome")  # raises (HTTP 404) when no window matches
