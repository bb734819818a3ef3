"""The evaluation's probes in the session are out of the graded agent's reach.

The agent controls the session's files and the variables its shells pass on. These tests run the getters'
real probe programs, as the controller would (a process in the agent's working directory, with the agent's
environment), after the agent has planted a ``json.py`` there and on ``PYTHONPATH`` that prints a forged
answer: the getter must still read the session's real state. A control with plain ``python3 -c`` shows the
plant does hijack an unisolated probe.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rla_envs.desktop.osworld.getters.chrome import get_shortcuts_on_desktop
from rla_envs.desktop.osworld.getters.context import EvalContext
from rla_envs.desktop.osworld.getters.directories import TREE_SCRIPT, get_list_directory
from rla_envs.desktop.osworld.session_probe import SESSION_PYTHON, probe_command

FORGED = {"type": "directory", "name": "forged", "children": []}
PLANT = f"import sys\nprint({json.dumps(json.dumps(FORGED))})\nsys.exit(0)\n"

pytestmark = pytest.mark.skipif(not os.access(SESSION_PYTHON, os.X_OK), reason=f"no {SESSION_PYTHON} here")


class AgentSessionClient:
    """Runs ``execute`` commands as the controller does, but in the agent's folder with the agent's environment."""

    def __init__(self, home: Path, planted: Path):
        self.home, self.planted = home, planted

    def execute(self, command, *, shell=False, timeout=120.0):
        env = {"HOME": str(self.home), "PATH": f"{self.planted}:/usr/bin:/bin", "PYTHONPATH": str(self.planted),
               "PYTHONSTARTUP": str(self.planted / "json.py")}
        done = subprocess.run(command, shell=shell, cwd=self.planted, env=env, capture_output=True, text=True,
                              timeout=timeout)
        return {"status": "success" if done.returncode == 0 else "error", "output": done.stdout,
                "error": done.stderr, "returncode": done.returncode}


@pytest.fixture
def session(tmp_path):
    home, planted = tmp_path / "home", tmp_path / "agent"
    (home / "Desktop").mkdir(parents=True)
    (home / "Desktop" / "app.desktop").write_text("[Desktop Entry]\nName=App\n")
    (home / "Documents").mkdir()
    (home / "Documents" / "report.txt").write_text("real")
    planted.mkdir()
    (planted / "json.py").write_text(PLANT)
    (planted / "python3").write_text("#!/bin/sh\necho forged\n")
    (planted / "python3").chmod(0o755)
    client = AgentSessionClient(home, planted)
    return EvalContext(client=client, cache=None, task_id="t", workdir=tmp_path / "work"), home


def test_an_unisolated_probe_is_hijacked_by_the_plant(session):
    ctx, home = session
    reply = ctx.client.execute(["/usr/bin/python3", "-c", TREE_SCRIPT, str(home / "Documents")])
    assert json.loads(reply["output"]) == FORGED  # the control: the plant works on plain `python3 -c`


def test_list_directory_reads_the_real_folder_despite_the_plant(session):
    ctx, home = session
    tree = get_list_directory(ctx, {"path": str(home / "Documents")})
    assert tree == {"type": "directory", "name": "Documents", "children": [{"type": "file", "name": "report.txt"}]}


def test_shortcuts_on_desktop_reads_the_real_desktop_despite_the_plant(session):
    ctx, _ = session
    assert get_shortcuts_on_desktop(ctx, {}) == {"app.desktop": "[Desktop Entry]\nName=App\n"}


def test_probes_name_the_interpreter_by_path_and_run_it_isolated():
    assert probe_command("pass", "a")[:3] == [SESSION_PYTHON, "-I", "-c"] and os.path.isabs(SESSION_PYTHON)
