"""Every Python example in the README and on the documentation pages (docs/) runs as written.

Each ``python`` code block runs in a fresh interpreter, in a scratch directory; other blocks (bash, yaml, output)
are not run. A block that appears on several pages (the README's env example is also on docs/environments.md)
runs once. The desktop example needs the desktop packages (marker ``desktop``); the rollout example builds and
runs a tiny model (~1 min, marker ``slow``; CI runs it). The examples share one private ``RLA_CACHE``, so the
games they play are generated once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> dict[str, list[str]]:
    """Each distinct Python block's code -> the pages (paths relative to the repository) it appears on."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for code in FENCE.findall(page.read_text(encoding="utf-8")):
            found.setdefault(textwrap.dedent(code), []).append(page.relative_to(ROOT).as_posix())
    return found


EXAMPLES = _blocks()


def _marks(code: str) -> list:
    if "rla/OSWorld-v0" in code:
        return [pytest.mark.desktop]
    if "RolloutEngine" in code:
        return [pytest.mark.slow]
    return []


def _name(code: str) -> str:
    for needle, name in (("rla/OSWorld-v0", "desktop"), ("RlaEnvClient", "openenv"), ("AdaptiveTaskPool", "task-pool"),
                         ("RolloutEngine", "rollouts-and-judge"), ("register_family", "family-spec"),
                         ("gym.make", "envs")):
        if needle in code:
            return name
    return "example"


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("readme-cache")


def test_the_pages_have_the_examples_this_file_runs():
    on_pages = sorted((page, _name(code)) for code, pages in EXAMPLES.items() for page in pages)
    assert on_pages == [
        ("README.md", "envs"),
        ("docs/adding-a-family.md", "family-spec"),
        ("docs/curriculum.md", "task-pool"),
        ("docs/desktop.md", "desktop"),
        ("docs/environments.md", "envs"),
        ("docs/environments.md", "openenv"),
        ("docs/rollouts.md", "rollouts-and-judge"),
    ]


@pytest.mark.parametrize("code", [pytest.param(code, marks=_marks(code), id=f"{pages[0]}:{_name(code)}")
                                  for code, pages in EXAMPLES.items()])
def test_example_runs_as_written(code, shared_cache, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(code)
    env = {**os.environ, "RLA_CACHE": str(shared_cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
