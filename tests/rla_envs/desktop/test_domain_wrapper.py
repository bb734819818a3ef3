"""controller/domain.py without a desktop: a command started through it cannot trace a process outside its domain.

The desktop tests (test_domains.py) check the same in a real session, for every context the controller confines."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rla_envs.desktop.controller import domain

ATTACH = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
    os.waitpid(pid, 0x40000000)
    libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
    print(json.dumps("attached"))
else:
    print(json.dumps(os.strerror(ctypes.get_errno())))
"""


def _yama_scope() -> int:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as handle:
            return int(handle.read())
    except OSError:
        return 0  # no Yama: same-uid tracing is allowed


@pytest.fixture
def target():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process.pid
    process.kill()
    process.wait()


def _attach(argv: list[str], pid: int) -> str:
    result = subprocess.run([*argv, sys.executable, "-c", ATTACH, str(pid)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_confined_command_cannot_trace_a_process_outside_its_domain(target):
    if domain.landlock_abi() < 1:
        pytest.skip("this kernel offers no Landlock")
    assert _attach([sys.executable, "-I", domain.SCRIPT, "--"], target) == "Operation not permitted"
    if _yama_scope() == 0:  # the control: outside a domain the same attach works where Yama allows it
        assert _attach([], target) == "attached"


def test_confined_wraps_only_where_a_domain_can_be_entered_and_refuses_a_missing_program():
    argv = domain.confined(["true"], path=os.environ.get("PATH"))
    if domain.available():
        assert argv == [sys.executable, "-I", domain.SCRIPT, "--", "true"]
        with pytest.raises(FileNotFoundError):
            domain.confined(["no-such-program-rla"], path=os.environ.get("PATH"))
    else:
        assert argv == ["true"]
    assert subprocess.run(argv).returncode == 0


def test_the_wrapper_says_why_it_cannot_run_a_program():
    result = subprocess.run([sys.executable, "-I", domain.SCRIPT, "--", "/nonexistent/program"], capture_output=True,
                            text=True, timeout=60)
    if domain.landlock_abi() < 1:
        assert result.returncode == 126 and "domain:" in result.stderr
    else:
        assert result.returncode == 127 and "cannot execute '/nonexistent/program'" in result.stderr
    usage = subprocess.run([sys.executable, "-I", domain.SCRIPT], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "usage" in usage.stderr
