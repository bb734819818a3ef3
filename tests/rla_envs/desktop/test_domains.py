"""Landlock domains in a real desktop session (controller/domain.py): what the agent's code starts or drives cannot trace
the desktop's core processes or a command the evaluator runs, whatever Yama allows (this machine has no Yama).

Each test runs one probe in the session: it tries ``PTRACE_ATTACH`` and opening ``/proc/<pid>/mem`` on Xvfb, openbox
and a stand-in for an evaluator's probe (a process ``/execute`` started), and on a child of its own, and writes what
happened to a file in the home. The control runs the same probe through ``/execute`` (outside any domain): there the
attach succeeds, so a denial elsewhere is the domain's doing, not the probe's.
"""

from __future__ import annotations

import json

import pytest

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.controller import domain
from tests.rla_envs.desktop.conftest import wait_until

desktop = pytest.mark.desktop

PROBE = r'''
import ctypes, json, os, subprocess, sys, time

out = globals().get("OUT") or sys.argv[1]  # OUT: given when the agent's code exec()s this
libc = ctypes.CDLL(None, use_errno=True)
targets = {}
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    try:
        comm = open(f"/proc/{name}/comm").read().strip()
        cmdline = open(f"/proc/{name}/cmdline", "rb").read()
    except OSError:
        continue
    if comm in ("Xvfb", "openbox"):
        targets[comm] = int(name)
    elif b"rla-grader-standin" in cmdline and comm.startswith("python"):
        targets["grader"] = int(name)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
targets["own child"] = child.pid
found = {}
for label, pid in sorted(targets.items()):
    if label in ("Xvfb", "openbox") and os.environ.get("RLA_PROBE_CONTROL"):
        continue  # the control attaches to the stand-in and its own child only: never stop the desktop's core
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        os.waitpid(pid, 0x40000000)  # __WALL: the stop the attach caused
        libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
        attach = "attached"
    else:
        attach = os.strerror(ctypes.get_errno())
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDWR))
        mem = "opened"
    except OSError as error:
        mem = error.strerror
    found[label] = {"ptrace": attach, "mem": mem}
child.kill()
with open(out + ".part", "w") as handle:
    json.dump(found, handle)
os.replace(out + ".part", out)
'''

DENIED = {"ptrace": "Operation not permitted", "mem": "Permission denied"}
"""What a probe in a domain gets for a process outside it (``landlock`` denies both with ``EPERM``/``EACCES``)."""


@pytest.fixture
def session(desktop_client):
    """The reset session with the probe in its home and a stand-in for an evaluator's probe running unconfined."""
    if domain.landlock_abi() < 1:
        pytest.skip("this kernel offers no Landlock: the controller starts the agent's processes unconfined")
    desktop_client.upload("/home/user/probe.py", PROBE.encode())
    desktop_client.execute("python3 -c 'import time; time.sleep(600)' rla-grader-standin &", shell=True)
    _wait_for_standin(desktop_client)
    return desktop_client


STANDIN_RUNNING = r'''
import os, sys
marker = b"rla-grader-" + b"standin"  # built here, so that this check's own command line does not hold it
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    try:
        if (open(f"/proc/{name}/comm").read().startswith("python")
                and marker in open(f"/proc/{name}/cmdline", "rb").read()):
            sys.exit(0)
    except OSError:
        continue
sys.exit(1)
'''


def _wait_for_standin(client, timeout: float = 120.0) -> None:
    """Return once the stand-in runs as Python: the shell's ``&`` returns before its child has exec'd, and a probe
    that looked in between saw no grader (a CI run under load did). A wait for the state, not a limit on the test."""
    running = wait_until(lambda: client.execute(["python3", "-c", STANDIN_RUNNING])["returncode"] == 0, timeout=timeout)
    assert running, f"the grader's stand-in was not running within {timeout:g} s"


def _result(client, path: str, timeout: float = 120.0) -> dict:
    """The probe's findings, once it has written them (a wait for the file, not a time limit on what it does)."""
    data = wait_until(lambda: client.get_file(path), timeout=timeout, interval=0.5)
    assert data, f"the probe wrote no {path} within {timeout:g} s"
    return json.loads(data)


def _assert_confined(found: dict) -> None:
    assert set(found) == {"Xvfb", "openbox", "grader", "own child"}, found
    for label in ("Xvfb", "openbox", "grader"):
        assert found[label] == DENIED, (label, found)
    assert found["own child"] == {"ptrace": "attached", "mem": "opened"}, found  # its own domain: unchanged


@desktop
def test_the_evaluators_commands_run_outside_any_domain(session):
    """The control: the same probe through ``/execute`` attaches to the stand-in (nothing else stops it here)."""
    reply = session.execute(["env", "RLA_PROBE_CONTROL=1", "python3", "/home/user/probe.py", "/home/user/control.json"])
    assert reply["returncode"] == 0, reply
    found = _result(session, "/home/user/control.json")
    assert found == {"grader": {"ptrace": "attached", "mem": "opened"},
                     "own child": {"ptrace": "attached", "mem": "opened"}}, found


@desktop
def test_the_agents_code_cannot_trace_the_core_or_the_grader(session):
    code = ("OUT = '/home/user/agent.json'\n"
            "exec(open('/home/user/probe.py').read(), {'OUT': OUT, '__name__': '__probe__'})")
    reply = session.run_pyautogui(code)
    assert reply["status"] == "success", reply
    _assert_confined(_result(session, "/home/user/agent.json"))


@desktop
def test_what_the_setup_opens_launches_or_executes_cannot_trace_them(session):
    reply = session.setup_execute(["python3", "/home/user/probe.py", "/home/user/setup.json"])
    assert reply["returncode"] == 0, reply
    _assert_confined(_result(session, "/home/user/setup.json"))
    session.launch(["python3", "/home/user/probe.py", "/home/user/launched.json"])
    _assert_confined(_result(session, "/home/user/launched.json"))


@desktop
def test_a_shell_in_a_terminal_the_bus_started_cannot_trace_them(session):
    """gnome-terminal's server is a D-Bus activated service: it, and the shells it runs, are in the bus's domain,
    whoever asked for the window (here the evaluator's own command, outside any domain)."""
    session.execute(["gnome-terminal", "--", "python3", "/home/user/probe.py", "/home/user/terminal.json"])
    _assert_confined(_result(session, "/home/user/terminal.json"))


@desktop
def test_a_missing_program_is_still_an_error_reply(session):
    with pytest.raises(ControllerError, match="cannot launch"):
        session.launch(["no-such-program-rla"])
