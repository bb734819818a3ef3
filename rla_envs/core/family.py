"""Family hooks: what the curriculum may ask of any env family (each family names its class in its FamilySpec)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from rla_envs.core.registry import family_spec
from rla_envs.core.task import Task

__all__ = ["TaskFamily", "Direction", "DIRECTIONS", "get_family"]

Direction = Literal["harder", "easier"]
DIRECTIONS: tuple[str, ...] = ("harder", "easier")


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
    """The hooks object of family ``name`` (its ``FamilySpec.task_family``, imported on first use).

    Raises UnknownFamily (a KeyError) with a did-you-mean hint for an unknown name, NotImplementedError for a
    family registered without curriculum hooks.
    """
    return family_spec(name).hook("task_family")()
