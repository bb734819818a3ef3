"""Every Python example in the README runs as written (each in a fresh interpreter, in a scratch directory).

The desktop example needs the desktop packages (marker ``desktop``); the rollout example builds and runs a tiny
model (~1 min, marker ``slow``; CI runs it). The examples share one private ``RLA_CACHE``, so the games they play
are generated once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def _marks(code: str) -> list:
    if "rla/OSWorld-v0" in code:
        return [pytest.mark.desktop]
    if "RolloutEngine" in code:
        return [pytest.mark.slow]
    return []


def _name(code: str) -> str:
    for needle, name in (("rla/OSWorld-v0", "desktop"), ("AdaptiveTaskPool", "task-pool"),
                         ("RolloutEngine", "rollouts-and-judge"), ("gym.make", "envs")):
        if needle in code:
            return name
    return "example"


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("readme-cache")


def test_the_readme_has_the_examples_this_file_runs():
    assert sorted(_name(code) for code in EXAMPLES) == ["desktop", "envs", "rollouts-and-judge", "task-pool"]


@pytest.mark.parametrize("code", [pytest.param(code, marks=_marks(code), id=_name(code)) for code in EXAMPLES])
def test_readme_example_runs_as_written(code, shared_cache, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(code)
    if "rla/OSWorld-v0" in code:  # the README's desktop lines continue an env session: make it first
        script.write_text("import gymnasium as gym\nimport rla_envs\n" + code + "env.close()\n")
    env = {**os.environ, "RLA_CACHE": str(shared_cache), "PYTHONPATH": str(README.parent)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
