"""What every getter works with: the evaluation context, file-getter configs and where their files go.

"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from rla_envs.desktop.client import ControllerClient
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["Getter", "EvalContext", "file_entries", "dest_problem", "target_path", "pack", "NAME_MAX_BYTES"]


@dataclass
class EvalContext:
    """What getters need: the session's client, the file cache, the task id and a private work directory."""

    client: ControllerClient
    cache: FileCache
    task_id: str | None
    workdir: Path


def file_entries(config: Mapping[str, Any]) -> tuple[list[str], list[str], set[int]]:
    """``(paths, dests, gives)`` of a ``vm_file``/``cloud_file`` config, single or ``multi`` form."""
    if config.get("multi", False):
        paths, dests = config.get("path"), config.get("dest")
        if not isinstance(paths, list) or not isinstance(dests, list) or len(paths) != len(dests):
            raise EvaluationError(f"a 'multi' file getter needs 'path' and 'dest' lists of the same length, "
                                  f"got path={paths!r:.200} dest={dests!r:.200}")
    else:
        paths, dests = [config.get("path")], [config.get("dest")]
    for path, dest in zip(paths, dests):
        if not isinstance(path, str) or not path or not isinstance(dest, str) or not dest:
            raise EvaluationError(f"a file getter needs string 'path' and 'dest', got {path!r} and {dest!r}")
    gives = set(config.get("gives", [0]))
    return paths, dests, gives


NAME_MAX_BYTES = 255
"""The longest file (or folder) name Linux file systems take, in bytes."""


def dest_problem(dest: str) -> str | None:
    """Why a getter's ``dest`` cannot be a file under the evaluation folder, or None when it can."""
    name = PurePosixPath(dest)
    if name.is_absolute() or ".." in name.parts:
        return f"'dest' must be a file name, got {dest!r:.80}"
    if any(len(part.encode("utf-8", "surrogatepass")) > NAME_MAX_BYTES or "\x00" in part for part in name.parts):
        return f"'dest' {dest[:40]!r}... has a name longer than {NAME_MAX_BYTES} bytes (or a NUL); shorten it"
    return None


def target_path(ctx: EvalContext, dest: str) -> Path:
    """Where a getter writes the file named ``dest``: under the evaluation folder (EvaluationError for a bad name)."""
    problem = dest_problem(dest)
    if problem:
        raise EvaluationError(problem)
    name = PurePosixPath(dest)
    target = ctx.workdir / name
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def pack(found: list[Any]) -> Any:
    """One value, or the list of several (OSWorld's ``multi`` getters return a list)."""
    return found[0] if len(found) == 1 else found


Getter = Callable[[EvalContext, Mapping[str, Any]], Any]
"""A getter: ``getter(ctx, config)`` -> what the metric compares."""
