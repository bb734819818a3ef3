"""Which processes are ended before an episode is scored (controller/quiesce.py), on process tables made by hand."""

from __future__ import annotations

from rla_envs.desktop.controller.quiesce import held_not_killed, installed_app, processes_to_end, window_apps
from rla_envs.desktop.osworld.session_probe import isolated_python

# pid -> (ppid, state, start time); the controller is pid 2
TABLE = {
    4: (2, "S", 10),     # Xvfb (core)
    20: (2, "S", 50),    # socat, started by the task's setup
    21: (20, "S", 90),   # a child socat forked for a connection during the episode
    30: (2, "S", 60),    # chromium, owner of a window
    31: (30, "S", 61),   # its zygote (same program)
    32: (31, "S", 62),   # a renderer (same program)
    33: (30, "S", 63),   # crashpad (another program)
    34: (33, "S", 64),   # a chromium-named child of crashpad: not through same-program parents
    40: (2, "S", 70),    # the agent's nohup loop
    41: (40, "R", 71),   # its cp
    42: (2, "Z", 72),    # a zombie
    43: (2, "T", 73),    # stopped already (a stopped process wakes on SIGCONT)
}
PROGRAM = {4: "/usr/bin/Xvfb", 20: "/usr/bin/socat", 21: "/usr/bin/socat", 30: "/usr/lib/chromium/chromium",
           31: "/usr/lib/chromium/chromium", 32: "/usr/lib/chromium/chromium",
           33: "/usr/lib/chromium/chrome_crashpad_handler", 34: "/usr/lib/chromium/chromium", 40: "/usr/bin/dash",
           41: "/usr/bin/cp", 42: None, 43: "/usr/bin/sleep"}


def test_windows_owners_their_same_program_descendants_the_core_and_the_setup_stay():
    ended = processes_to_end(TABLE, core={(4, 10)}, setup={(20, 50)}, owners={30}, program=PROGRAM)
    # (33, 34: crashpad and what it started; 21: forked during the episode; 40, 41: the agent's loop; 43: stopped)
    assert ended == [21, 33, 34, 40, 41, 43]


def test_without_windows_everything_the_episode_started_ends():
    assert processes_to_end(TABLE, core={(4, 10)}, setup=set(), owners=set(), program=PROGRAM) == \
        [20, 21, 30, 31, 32, 33, 34, 40, 41, 43]


def test_a_window_apps_own_child_is_held_and_its_descendants_are_killed():
    table = {**TABLE, 35: (30, "S", 65), 36: (35, "S", 66)}  # a shell chromium started, and what the shell started
    program = {**PROGRAM, 35: "/usr/bin/bash", 36: "/usr/bin/python3"}
    ended = processes_to_end(table, core={(4, 10)}, setup={(20, 50)}, owners={30}, program=program)
    assert held_not_killed(table, ended, window_apps(table, owners={30}, program=program)) == {33, 35}


def test_a_pid_reused_after_the_setup_is_not_taken_for_the_setups_process():
    # pid 20 now belongs to a process started later (another start time): it is the episode's
    assert 20 in processes_to_end(TABLE, core=set(), setup={(20, 49)}, owners=set(), program=PROGRAM)


def test_an_owner_outside_the_table_changes_nothing():
    assert processes_to_end({40: (2, "S", 70)}, core=set(), setup=set(), owners={999}, program={40: "/bin/sh"}) == [40]


def test_python_dash_c_steps_run_isolated_and_nothing_else_changes():
    assert isolated_python(["python", "-c", "import pyautogui"]) == ["python", "-I", "-c", "import pyautogui"]
    assert isolated_python(["/usr/bin/python3.11", "-c", "x"]) == ["/usr/bin/python3.11", "-I", "-c", "x"]
    assert isolated_python("python3 -c 'import time; time.sleep(1)'") == "python3 -I -c 'import time; time.sleep(1)'"
    for unchanged in (["python", "/home/user/script.py"], ["pythonista", "-c", "x"], ["sh", "-c", "python -c x"],
                      "python script.py", "echo python -c", [], None):
        assert isolated_python(unchanged) == unchanged


def test_a_window_owned_by_an_interpreter_or_a_program_the_agent_wrote_keeps_nothing_alive():
    """The agent's own window (a Python process that opened one, a binary it wrote) is no app: it ends with the rest;
    an installed app's window (xterm) keeps it running."""
    table = {50: (1, "S", 80), 51: (1, "S", 81), 52: (1, "S", 82), 53: (1, "S", 83)}
    program = {50: "/usr/bin/python3.11", 51: "/home/user/.local/bin/viewer", 52: "/usr/bin/xterm",
               53: "/opt/rla-desktop/bin/python3"}
    assert processes_to_end(table, core=set(), setup=set(), owners={50, 51, 52, 53}, program=program) == [50, 51, 53]
    assert installed_app("/usr/libexec/gnome-terminal-server") and not installed_app("/usr/bin/bash")
