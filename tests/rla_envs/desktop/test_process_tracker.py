"""The controller's core-process check: a core process the agent killed counts as gone even before it has died
(issue 25, class 2; CI failed when a reset under load took a SIGKILLed window manager for a live one).

Each check runs in a child interpreter: the tracker makes its process a child subreaper, which the test process
must not become.
"""

from __future__ import annotations

import subprocess
import sys

CHECK = r"""
import os, signal, subprocess, sys
from rla_envs.desktop.controller.processes import ProcessTracker

tracker = ProcessTracker(env=dict(os.environ), cwd="/")
quiet = dict(stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# the second holds 512 MiB: freeing it keeps the killed process in exit() long enough to be seen there
core = [subprocess.Popen(["sleep", "600"], stdout=subprocess.DEVNULL, **quiet),
        subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(1 << 29); print(flush=True); time.sleep(600)"],
                         stdout=subprocess.PIPE, **quiet)]
try:
    core[1].stdout.readline()
    tracker.mark_core(settle_s=0.2)
    assert {p.pid for p in core} <= tracker.core_pids(), (tracker.core_pids(), [p.pid for p in core])
    os.kill(core[0].pid, signal.SIGSTOP)
    assert tracker.core_problems() == [], "a stopped core process is woken, not reported"
    os.kill(core[1].pid, signal.SIGKILL)
    problems = tracker.core_problems()  # at once: the process may still look alive in /proc
    assert problems == [f"core process {core[1].pid} is gone"], problems
    with open(f"/proc/{core[0].pid}/stat") as handle:
        state = handle.read().rsplit(")", 1)[1].split()[0]
    assert state != "T", "the stopped core process was not woken"
finally:
    for process in core:
        process.kill()
print("ok")
"""


def test_a_core_process_killed_a_moment_ago_is_gone_and_a_stopped_one_is_woken():
    for _ in range(5):  # the race the check closes: kill() returns before the target has exited
        result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
