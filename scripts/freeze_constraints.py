"""Print constraints for ``pip install -c``: the installed version of every package ``rla[EXTRAS]`` needs.

Reads rla's requirements (and the extras asked for) from pyproject.toml, follows them through the installed
packages' metadata, and prints ``name==version`` for each, sorted. Run it in the environment the test suite
just passed in::

    python scripts/freeze_constraints.py dev > constraints.txt

A local version label (``torch==2.13.0+cpu``) is dropped, so the file also fits a machine that installs the
same release from another index.
"""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
HEADER = """\
# The exact versions the test suite passed with (Python 3.11, Linux x86_64, CPU): every package rla[{extras}] needs.
# CI installs with them: pip install -c constraints.txt -e ".[dev]". pyproject.toml holds the ranges a user gets.
# torch is the CPU build (here from pip's find-links; elsewhere install it first from the CPU index, see README).
# Regenerated where the suite just passed: python scripts/freeze_constraints.py {extras} > constraints.txt"""


def project_requirements(project: dict, extras: set[str]) -> list[Requirement]:
    """The project's base requirements plus those of ``extras``, with its self-references (``rla[train]``) expanded."""
    name = canonicalize_name(project["name"])
    lines, pending, done = list(project.get("dependencies", [])), set(extras), set()
    while pending:
        extra = pending.pop()
        done.add(extra)
        if extra not in project.get("optional-dependencies", {}):
            sys.exit(f"freeze_constraints: pyproject.toml has no extra {extra!r}")
        for line in project["optional-dependencies"][extra]:
            requirement = Requirement(line)
            if canonicalize_name(requirement.name) == name:
                pending |= requirement.extras - done
            else:
                lines.append(line)
    return [Requirement(line) for line in lines]


def installed_closure(requirements: list[Requirement]) -> dict[str, str]:
    """The installed version of every distribution the requirements need, directly or not, by canonical name."""
    environment = default_environment()
    found: dict[str, str] = {}
    pending = [(requirement, {""}) for requirement in requirements]
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        requirement, parent_extras = pending.pop()
        if requirement.marker and not any(requirement.marker.evaluate({**environment, "extra": extra})
                                          for extra in parent_extras):
            continue
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            sys.exit(f"freeze_constraints: {requirement.name} is required but not installed; install it first")
        found[key[0]] = Version(dist.version).public
        pending += [(Requirement(line), set(requirement.extras) | {""}) for line in dist.requires or []]
    return found


def main(argv: list[str]) -> None:
    extras = set(argv[0].split(",")) if argv else set()
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    print(HEADER.format(extras=",".join(sorted(extras))))
    for name, version in sorted(installed_closure(project_requirements(project, extras)).items()):
        print(f"{name}=={version}")


if __name__ == "__main__":
    main(sys.argv[1:])
