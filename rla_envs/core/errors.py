"""Exceptions raised by rla.

Every exception subclasses :class:`RlaError` and the closest built-in, so callers
can catch either::

    RlaError (Exception)
    ├── TaskError
    │   ├── TaskNotFound            (KeyError)          an id that no task set holds
    │   ├── InvalidTask             (ValueError)        a task that cannot be built or played
    │   │   └── RewriteRejected                         a rewrite/mutation proposal that was refused
    │   └── TaskGenerationError     (RuntimeError)      a generator that could not produce a task
    ├── UnknownFamily               (KeyError)          a family name or env id that no registered family has
    ├── ResetNeeded                 (RuntimeError)      step() before reset(), after a failed reset() or after the end
    ├── InvalidFile                 (ValueError)        a saved file (a TaskPool, ...) whose content cannot be read back
    ├── DataNotFound                (FileNotFoundError) a data set the user pointed at is missing
    └── MissingDependency           (ImportError)       an optional dependency is not installed
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "RlaError",
    "TaskError",
    "TaskNotFound",
    "InvalidTask",
    "RewriteRejected",
    "TaskGenerationError",
    "UnknownFamily",
    "ResetNeeded",
    "InvalidFile",
    "DataNotFound",
    "MissingDependency",
    "did_you_mean",
]


class RlaError(Exception):
    """Base class of every error raised by rla."""


class TaskError(RlaError):
    """Something is wrong with a task or a task set."""


class TaskNotFound(TaskError, KeyError):
    """A task id that the env's task set does not hold."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class InvalidTask(TaskError, ValueError):
    """A task whose spec cannot be built, loaded or played."""


class RewriteRejected(InvalidTask):
    """A proposed rewrite or mutation of a task that was refused, with the reason."""


class TaskGenerationError(TaskError, RuntimeError):
    """A task generator that could not produce a valid task."""


class UnknownFamily(RlaError, KeyError):
    """A family name or env id that no registered family has (see :func:`rla_envs.core.registry.family_spec`)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ResetNeeded(RlaError, RuntimeError):
    """``step()`` was called before ``reset()``, after a ``reset()`` that failed, or after the episode ended."""


class InvalidFile(RlaError, ValueError):
    """A file rla saved (a TaskPool, ...) whose content is not what it wrote; the message names the file and field."""


class DataNotFound(RlaError, FileNotFoundError):
    """A data directory or file that the user pointed at does not exist or holds no tasks."""


class MissingDependency(RlaError, ImportError):
    """An optional dependency is missing; the message names the ``pip install`` that fixes it."""

    @classmethod
    def for_extra(cls, module: str, extra: str) -> "MissingDependency":
        """Build the error for a missing ``module`` that the ``rla[extra]`` extra installs."""
        return cls(f"{module!r} is not installed; install it with: pip install \"rla[{extra}]\"")


def did_you_mean(name: object, choices: Iterable[str], *, n: int = 1, cutoff: float = 0.6) -> str:
    """`` Did you mean 'x'?`` naming the closest of ``choices`` to ``name`` (up to ``n``), or ``""`` if none is close."""
    close = difflib.get_close_matches(str(name), list(choices), n=n, cutoff=cutoff)
    return f" Did you mean {', '.join(map(repr, close))}?" if close else ""
