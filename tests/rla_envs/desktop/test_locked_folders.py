"""A reset removes what the agent planted in folders it made read-only (issue 25, class 2): the agent's code runs
as the folders' owner, so ``chmod 555`` on a folder it made, on a kept one, or on the home would otherwise keep a
planted file past the reset.

The checks run in a child interpreter as an unprivileged user when the tests run as root (root ignores folder
modes, so as root the hole would not show): Debian's python3, which runs the controller in a session (the
controller imports no rla code, and the project's venv may lie where that user cannot read).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.paths import REPO_ROOT

SYSTEM_PYTHON = "/usr/bin/python3"

CHECK = r"""
import os, tempfile
from pathlib import Path
from controller.home import HomeTemplate
from controller.scratch import ScratchDirs

root = Path(tempfile.mkdtemp())
tmp = root / "tmp"
(tmp / "runtime-user" / "dconf").mkdir(parents=True)
scratch = ScratchDirs([str(tmp)])
scratch.snapshot()
# a folder the agent made, locked; a kept folder, locked after a plant; a locked folder deep inside a new one
(tmp / "locked").mkdir()
(tmp / "locked" / "marker").write_text("left for the next episode")
os.chmod(tmp / "locked", 0o555)
(tmp / "runtime-user" / "dconf" / "marker").write_text("left for the next episode")
os.chmod(tmp / "runtime-user" / "dconf", 0o500)
(tmp / "new" / "deeper").mkdir(parents=True)
(tmp / "new" / "deeper" / "marker").write_text("x")
os.chmod(tmp / "new" / "deeper", 0o000)
os.chmod(tmp / "new", 0o555)
cleared = scratch.clear()
assert sorted(os.listdir(tmp)) == ["runtime-user"], os.listdir(tmp)
assert os.listdir(tmp / "runtime-user" / "dconf") == []
assert oct(os.stat(tmp / "runtime-user" / "dconf").st_mode & 0o777) == "0o755"  # its kept mode is back
assert cleared.left == [] and cleared.missing == [], cleared

home = root / "home"
template = HomeTemplate(home)
template.prepare()
booted = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
(home / "Documents" / "x").mkdir(parents=True, exist_ok=True)
(home / "Documents" / "x" / "marker").write_text("left for the next episode")
os.chmod(home / "Documents" / "x", 0o555)
(home / "top-marker").write_text("x")
os.chmod(home, 0o555)
assert template.restore() == []
assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == booted
print("ok")
"""


def test_what_the_agent_planted_in_folders_it_locked_goes_at_the_reset():
    python, unprivileged = sys.executable, {}
    if os.geteuid() == 0:
        if not os.access(SYSTEM_PYTHON, os.X_OK):
            pytest.skip(f"running as root, and no {SYSTEM_PYTHON} to run the check as an unprivileged user")
        python, unprivileged = SYSTEM_PYTHON, {"user": 65534, "group": 65534, "extra_groups": []}
    result = subprocess.run([python, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO_ROOT / 'rla_envs' / 'desktop')!r})\n"
                             + CHECK], capture_output=True, text=True, timeout=120, cwd="/",
                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": "/tmp"}, **unprivileged)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
