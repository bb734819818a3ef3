"""Every config field is read by code outside the config's own checks: no knob that does nothing.

The check is by name (an AST walk): a field passes when some library module reads an attribute of that name
(``x.field``) or names it in ``getattr(x, "field")``. Reads inside the config package count only outside its
validation (``check*`` methods and ``__post_init__``): checking a value is not using it.
"""

from __future__ import annotations

import ast
import dataclasses
import typing

from rla_envs.curriculum.pool_config import PoolConfig
from rla_train.config import TrainConfig
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
READERS = ("rla_train", "benchmarks", "rla_envs/curriculum")
"""The code that turns config values into a run (the trainer, the benchmarks that build it, the task pool)."""
VALIDATION = ("__post_init__", "check")
"""Functions whose reads do not count (names starting with these)."""


class _Reads(ast.NodeVisitor):
    """Attribute names a module reads, skipping validation functions in the config package."""

    def __init__(self, skip_validation: bool):
        self.skip_validation, self.names = skip_validation, set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if not (self.skip_validation and node.name.startswith(VALIDATION)):
            self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load):
            self.names.add(node.attr)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            self.names.add(node.args[1].value)
        self.generic_visit(node)


def read_names(sources: dict[str, str], config_package: str = "rla_train/config/") -> set[str]:
    """Every attribute name read in ``sources`` (path -> code), validation in ``config_package`` left out."""
    names: set[str] = set()
    for path, code in sources.items():
        reads = _Reads(skip_validation=path.startswith(config_package))
        reads.visit(ast.parse(code, filename=path))
        names |= reads.names
    return names


def unread_fields(classes, names: set[str]) -> list[str]:
    """``Class.field`` for each dataclass field (nested dataclass fields too) whose name is not in ``names``."""
    unread = []
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for spec in dataclasses.fields(cls):
            if spec.name not in names:
                unread.append(f"{cls.__name__}.{spec.name}")
            if dataclasses.is_dataclass(hints[spec.name]):
                unread += unread_fields([hints[spec.name]], names)
    return unread


def library_sources() -> dict[str, str]:
    return {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
            for root in READERS for path in sorted((ROOT / root).rglob("*.py"))}


def test_every_config_field_is_read_by_the_library():
    unread = unread_fields([TrainConfig, PoolConfig], read_names(library_sources()))
    assert unread == [], f"config fields no code reads (wire them or delete them): {unread}"


@dataclasses.dataclass
class _ToySection:
    used: int = 1
    checked_only: int = 2
    never_read: int = 3


@dataclasses.dataclass
class _Toy:
    section: _ToySection = dataclasses.field(default_factory=_ToySection)


def test_the_checker_names_a_field_that_is_only_validated_or_never_read():
    sources = {
        "rla_train/config/toy.py": "class Toy:\n    def check(self):\n        assert self.checked_only > 0\n",
        "rla_train/loop.py": "def run(toy):\n    return toy.section.used + getattr(toy, 'used')\n",
    }
    assert unread_fields([_Toy], read_names(sources)) == ["_ToySection.checked_only", "_ToySection.never_read"]
    # the same read outside the config package's validation counts
    sources["rla_train/config/toy.py"] = "def pool_config(toy):\n    return toy.checked_only\n"
    assert unread_fields([_Toy], read_names(sources)) == ["_ToySection.never_read"]
