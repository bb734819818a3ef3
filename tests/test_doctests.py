"""Every ``>>>`` example in the packages' docstrings runs and prints what it shows (a docstring example that nobody
runs is a test that cannot fail). Illustrative sketches that need objects the docstring does not build are written as
plain code blocks, without the prompt."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rla_envs", "rla_train", "benchmarks")


def _modules_with_examples() -> list[str]:
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if re.search(r"^\s*>>> ", path.read_text(encoding="utf-8"), re.MULTILINE):  # a line that is an example
                parts = path.relative_to(ROOT).with_suffix("").parts
                modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


MODULES = _modules_with_examples()


def test_the_packages_have_examples_to_run():
    assert "benchmarks.ablation.arms" in MODULES and "rla_train.backends.choice" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has a '>>> ' line but no example doctest finds"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (printed above)"
