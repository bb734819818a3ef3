"""Processes the agent's code leaves running cannot act while the episode is scored, nor outlive the reset
(issue 25, class 2).

The tests play a small OSWorld task through the env on the shared local session: the answer is the first line of
``~/answer.txt``, read after a postconfig pause, as OSWorld's tasks read a document after saving it.
"""

from __future__ import annotations

import json

import pytest

from tests.rla_envs.desktop.conftest import wait_until

desktop = pytest.mark.desktop

ANSWER = "/home/user/answer.txt"


def _task(postconfig: list) -> dict:
    return {
        "id": "0a9f4c62-6b1e-4e5b-9a0e-5c3b1d2e7f01", "snapshot": "os",
        "instruction": "Write the word solved as the only line of ~/answer.txt.",
        "config": [{"type": "execute", "parameters": {"command": ["sh", "-c", f"echo unsolved > {ANSWER}"]}}],
        "related_apps": ["os"],
        "evaluator": {"postconfig": postconfig, "func": "exact_match",
                      "result": {"type": "vm_command_line", "command": ["head", "-n", "1", ANSWER]},
                      "expected": {"type": "rule", "rules": {"expected": "solved\n"}}},
    }


@pytest.fixture
def env(local_provider):
    from rla_envs.desktop.env import OSWorldEnv

    environment = OSWorldEnv(provider=local_provider, accessibility_tree=False, max_steps=5, wait_seconds=0)
    yield environment
    environment.close()


def _play(env, task: dict, actions: list[str]) -> dict:
    env.reset(options={"task": task})
    info = {}
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        assert not info["invalid_action"], info
        if terminated or truncated:
            break
    return info


# The agent leaves a process that writes the answer only once the episode is over (after DONE, while the
# evaluator's postconfig pauses), so nothing was solved when the agent said it was done.
LEAVE_A_WRITER = (
    "import subprocess\n"
    "subprocess.Popen(['setsid', 'nohup', 'sh', '-c', 'sleep 1.5; while true; do echo solved > " + ANSWER +
    "; sleep 0.1; done'], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")

# The same writer, woken by a POSIX timer it armed to send itself SIGCONT every 0.2 s: a SIGSTOP would not hold it.
WAKING_WRITER = (
    "import ctypes, signal, time\n"
    "signal.signal(signal.SIGCONT, lambda *_: None)\n"
    "class Event(ctypes.Structure):\n"
    "    _fields_ = [('value', ctypes.c_void_p), ('signo', ctypes.c_int), ('notify', ctypes.c_int),\n"
    "                ('pad', ctypes.c_byte * 48)]\n"
    "class Spec(ctypes.Structure):\n"
    "    _fields_ = [('interval', ctypes.c_long * 2), ('value', ctypes.c_long * 2)]\n"
    "libc, timer = ctypes.CDLL(None), ctypes.c_void_p()\n"
    "assert libc.timer_create(1, ctypes.byref(Event(signo=signal.SIGCONT, notify=0)), ctypes.byref(timer)) == 0\n"
    "every = (ctypes.c_long * 2)(0, 200_000_000)\n"
    "assert libc.timer_settime(timer, 0, ctypes.byref(Spec(every, every)), None) == 0\n"
    "time.sleep(1.5)\n"
    "while True:\n"
    "    open(" + repr(ANSWER) + ", 'w').write('solved\\n')\n"
    "    time.sleep(0.1)\n")
LEAVE_A_WAKING_WRITER = (
    "import subprocess\n"
    f"subprocess.Popen(['setsid', 'nohup', '/usr/bin/python3', '-c', {WAKING_WRITER!r}], stdin=subprocess.DEVNULL, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")

# The writer opens an X window of its own first, so that it owns a window the window manager manages.
WINDOWED_WRITER = (
    "import time\n"
    "from Xlib import X, display\n"
    "d = display.Display()\n"
    "w = d.screen().root.create_window(0, 0, 50, 50, 0, d.screen().root_depth, background_pixel=0)\n"
    "w.set_wm_name('rla-windowed-writer')\n"
    "w.map()\n"
    "d.sync()\n"
    "time.sleep(1.5)\n"
    "while True:\n"
    "    open(" + repr(ANSWER) + ", 'w').write('solved\\n')\n"
    "    d.sync()\n"
    "    time.sleep(0.1)\n")
LEAVE_A_WINDOWED_WRITER = (
    "import subprocess, sys\n"
    f"subprocess.Popen(['setsid', 'nohup', sys.executable, '-c', {WINDOWED_WRITER!r}], stdin=subprocess.DEVNULL, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "import time\n"
    "deadline = time.monotonic() + 30\n"
    "while 'rla-windowed-writer' not in subprocess.run(['wmctrl', '-l'], capture_output=True, text=True).stdout:\n"
    "    assert time.monotonic() < deadline, 'the writer never mapped its window'\n"
    "    time.sleep(0.1)\n")


@desktop
@pytest.mark.parametrize("leave", [LEAVE_A_WRITER, LEAVE_A_WAKING_WRITER, LEAVE_A_WINDOWED_WRITER],
                         ids=["writer", "self-waking-writer", "writer-with-its-own-window"])
def test_a_process_the_agent_left_writing_the_answer_after_done_does_not_change_the_score(env, leave):
    task = _task(postconfig=[{"type": "sleep", "parameters": {"seconds": 3}}])
    info = _play(env, task, [leave, "DONE"])
    assert info["evaluation_error"] is None, info
    assert info["score"] == 0.0, "a leftover process wrote the answer while the episode was scored"
    # and a real solution still scores 1
    assert _play(env, task, [f"open({ANSWER!r}, 'w').write('solved\\n')", "DONE"])["score"] == 1.0


# A module the agent leaves in the home, named like the one OSWorld's postconfig imports (it runs `python -c
# "import pyautogui; ..."` from the home directory, after the agent's processes were ended).
PLANT_A_MODULE = (f"open('/home/user/pyautogui.py', 'w').write(\"open({ANSWER!r}, 'w').write('solved\\\\n')\\n\")")


@desktop
def test_a_module_the_agent_left_for_the_postconfigs_python_does_not_run(env):
    task = _task(postconfig=[{"type": "execute", "parameters": {
        "command": ["python", "-c", "import pyautogui; pyautogui.press('shift')"]}}])
    info = _play(env, task, [PLANT_A_MODULE, "DONE"])
    assert info["evaluation_error"] is None, info
    assert info["score"] == 0.0, "the postconfig step ran the agent's pyautogui.py"


STATES = r"""
import json, os
found = {}
for pid in os.listdir('/proc'):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        args = open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\0', b' ').decode().strip()
        state = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0]
    except (OSError, IndexError):
        continue
    if 'rla-marker' in args:
        found[args] = state
print(json.dumps(found))
"""


def _marked(client) -> dict[str, str]:
    """The state letter of each process whose command line carries ``rla-marker``."""
    return json.loads(client.execute(["/usr/bin/python3", "-I", "-c", STATES])["output"])


LEAVE_PROCESSES = (
    "import os, subprocess\n"
    "subprocess.Popen(['xterm', '-T', 'rla-marker-window'])\n"                                 # an app with a window
    "subprocess.Popen(['sh', '-c', 'sleep 1001 # rla-marker'], start_new_session=True)\n"  # windowless, own session
    "if os.fork() == 0:\n"                                                                      # orphaned: double fork
    "    if os.fork() == 0:\n"
    "        os.execvp('sh', ['sh', '-c', 'sleep 1002 # rla-marker'])\n"
    "    os._exit(0)\n"
    "import threading; threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()\n")


def _leave_processes(client) -> None:
    launched = client.run_pyautogui(LEAVE_PROCESSES)
    assert launched["status"] == "success", launched
    assert wait_until(lambda: "rla-marker-window" in client.execute(["wmctrl", "-l"])["output"], timeout=30)
    assert len(_marked(client)) == 3


@desktop
def test_before_scoring_apps_with_a_window_keep_running_and_the_agents_other_processes_end(local_provider):
    client = local_provider.start()
    local_provider.reset()
    _leave_processes(client)

    reply = client.stop_agent_processes()

    # the windowless ones are killed (zombies for a moment, until the controller reaps them); the terminal's own
    # shell is stopped, not killed (its window would close)
    assert wait_until(lambda: {args: state for args, state in _marked(client).items() if state != "Z"}
                      == {"xterm -T rla-marker-window": "S"}), _marked(client)
    shells = client.execute(["ps", "-o", "stat=,comm=", "--ppid", str(reply["window_owners"][0])])["output"].split()
    assert shells[0].startswith("T") and shells[1] == "bash", shells
    assert len(reply["stopped"]) >= 3 and reply["window_owners"], reply
    assert "rla-marker-window" in client.execute(["wmctrl", "-l"])["output"]  # the app still answers
    # the action worker (and the agent's thread in it) is gone; the next action gets a fresh one
    assert client.run_pyautogui("pyautogui.moveTo(3, 3)")["status"] == "success"


@desktop
@pytest.mark.parametrize("stopped_first", [True, False], ids=["stopped-first", "running"])
def test_no_process_of_an_episode_outlives_the_reset(local_provider, stopped_first):
    client = local_provider.start()
    local_provider.reset()
    _leave_processes(client)
    if stopped_first:
        client.stop_agent_processes()

    local_provider.reset()

    assert _marked(client) == {}, "a process of the last episode outlived the reset"


@desktop
def test_a_chromium_the_agent_opened_still_answers_devtools_after_the_stop(local_provider):
    from rla_envs.desktop.osworld.devtools import ChromeDevTools

    client = local_provider.start()
    local_provider.reset()
    client.upload("/home/user/page.html", b"<title>rla marker page</title><p>hello</p>")
    launched = client.run_pyautogui(
        "import subprocess\n"
        "subprocess.Popen(['google-chrome', '--remote-debugging-port=1337', 'file:///home/user/page.html'])\n")
    assert launched["status"] == "success", launched
    devtools = ChromeDevTools(client)
    assert wait_until(lambda: any(t.title == "rla marker page" for t in devtools.tabs()), timeout=60)

    reply = client.stop_agent_processes()

    assert reply["window_owners"], reply
    stopped = client.execute(["ps", "-o", "comm=", "-p", ",".join(map(str, reply["stopped"])) or "0"])["output"]
    assert "chromium" not in stopped.split(), stopped  # the browser, its zygote and renderers run on
    assert [t.title for t in devtools.tabs()] == ["rla marker page"]  # what the evaluator's Chrome getters ask
