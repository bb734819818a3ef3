"""Family hooks: what the curriculum may ask of any env family, and where each family lives."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from rla_envs.core.errors import did_you_mean
from rla_envs.core.task import Task

__all__ = ["TaskFamily", "Direction", "DIRECTIONS", "FAMILY_ENTRY_POINTS", "get_family"]

Direction = Literal["harder", "easier"]
DIRECTIONS: tuple[str, ...] = ("harder", "easier")

# String entry points, so that asking for one family imports only that family.
FAMILY_ENTRY_POINTS: dict[str, str] = {
    "alfworld": "rla_envs.alfworld.family:AlfWorldFamily",
    "textworld": "rla_envs.textworld.family:TextWorldFamily",
    "code": "rla_envs.code.family:CodeFamily",
    "desktop": "rla_envs.desktop.family:DesktopFamily",
}


@runtime_checkable
class TaskFamily(Protocol):
    """The hooks a family offers the curriculum (task rewriting and validation)."""

    name: str

    def describe(self, task: Task) -> str:
        """Text describing the task for a rewrite prompt: the goal, the scene, what the solution takes."""

    def apply_rewrite(self, task: Task, text: str) -> Task:
        """Parse an LLM's rewrite proposal into a new Task (origin ``rewritten``), or raise ``RewriteRejected``."""

    def validate(self, task: Task) -> None:
        """Raise ``InvalidTask`` with the reason unless the task loads, is winnable and leaks no answer."""

    def mutate(self, task: Task, direction: Direction, rng: np.random.Generator, *,
               diagnoses: Sequence[str] = ()) -> Task:
        """An LLM-free edit making the task ``harder`` or ``easier``, validated; ``RewriteRejected`` if none fits.

        ``diagnoses`` are a diagnoser's failure summaries of the task's runs (most common first); a family
        may let them choose the edit (ALFWorld does) or ignore them. Without them the edit is drawn from
        ``rng`` alone.
        """


def get_family(name: str) -> TaskFamily:
    """The hooks object of family ``name`` (imported on first use)."""
    try:
        entry_point = FAMILY_ENTRY_POINTS[name]
    except KeyError:
        hint = did_you_mean(name, FAMILY_ENTRY_POINTS)
        raise KeyError(f"unknown task family {name!r}; known: {sorted(FAMILY_ENTRY_POINTS)}.{hint}") from None
    module_name, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module_name), attr)()
