"""OSWorld's result/expected getters: what a metric compares, read from the session or the file cache.

Each getter takes the evaluation context and the getter's config dict from the task (``{"type": ..., ...}``)
and returns what OSWorld's getter of the same name returns: a local file path (or None when the session has
no such file), a list of them (``"multi": true`` with ``"gives"``), a command's output, a rule dict, or the
accessibility tree text.

Supported: ``vm_file``, ``cloud_file``, ``vm_command_line``, ``vm_command_error``, ``rule``,
``rule_relativeTime`` (see :mod:`.relative_time`), ``accessibility_tree``, ``cache_file`` (a file a postconfig
step wrote with ``stdout``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from rla_envs.desktop.client import ControllerClient, ControllerError
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.setup import shell_flag

__all__ = ["GETTERS", "EvalContext", "run_getter", "file_entries"]


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


def _target(ctx: EvalContext, dest: str) -> Path:
    problem = dest_problem(dest)
    if problem:
        raise EvaluationError(problem)
    name = PurePosixPath(dest)
    target = ctx.workdir / name
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _pack(found: list[Any]) -> Any:
    return found[0] if len(found) == 1 else found


def get_vm_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Files copied out of the session to ``<workdir>/<dest>``: their local paths (None for a missing file)."""
    paths, dests, gives = file_entries(config)
    found: list[str | None] = []
    for index, (path, dest) in enumerate(zip(paths, dests)):
        try:
            data = ctx.client.get_file(path)
        except ControllerError as exc:
            raise EvaluationError(f"vm_file: could not read {path} from the session: {exc}") from exc
        local: str | None = None
        if data is not None:
            target = _target(ctx, dest)
            target.write_bytes(data)
            local = str(target)
        if index in gives:
            found.append(local)
    return _pack(found)


def get_cloud_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Reference files from the FileCache, copied to ``<workdir>/<dest>`` (names matter to some metrics)."""
    paths, dests, gives = file_entries(config)
    found: list[str] = []
    for index, (url, dest) in enumerate(zip(paths, dests)):
        local = ctx.cache.resolve(url, task_id=ctx.task_id, dest=dest, kind="cloud_file")
        if local is None:
            raise EvaluationError(ctx.cache.missing("cloud_file", url))
        target = _target(ctx, dest)
        shutil.copyfile(local, target)
        if index in gives:
            found.append(str(target))
    return _pack(found)


def _execute(ctx: EvalContext, config: Mapping[str, Any]) -> Mapping[str, Any]:
    command = config.get("command")
    if not command or not isinstance(command, (str, list)):
        raise EvaluationError(f"{config.get('type')}: needs a 'command' (a string or a list), got {command!r:.200}")
    shell = shell_flag(config)
    try:
        return ctx.client.execute(command, shell=shell)
    except ControllerError as exc:
        raise EvaluationError(f"{config.get('type')}: running {command!r:.200} failed: {exc}") from exc


def get_vm_command_line(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """The standard output of a command run in the session."""
    return _execute(ctx, config).get("output")


def get_vm_command_error(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """The standard error of a command run in the session."""
    return _execute(ctx, config).get("error")


def get_rule(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The config's ``rules``, as given."""
    if "rules" not in config:
        raise EvaluationError(f"a 'rule' getter needs 'rules', got keys {sorted(config)}")
    return config["rules"]


def get_rule_relative_time(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """The config's ``rules`` with their relative dates filled in for today (a copy; the task is unchanged)."""
    from rla_envs.desktop.osworld.relative_time import resolve_relative_rules

    if not isinstance(config.get("rules"), Mapping):
        raise EvaluationError(f"a 'rule_relativeTime' getter needs 'rules', got keys {sorted(config)}")
    return resolve_relative_rules(config["rules"])


def get_accessibility_tree(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """The session's accessibility tree (OSWorld's XML text)."""
    try:
        return ctx.client.accessibility_tree()
    except ControllerError as exc:
        raise EvaluationError(f"accessibility_tree: {exc}") from exc


def get_cache_file(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """A file a postconfig step wrote into the work directory (``stdout``/``stderr``), or None."""
    target = _target(ctx, str(config.get("path") or ""))
    return str(target) if target.is_file() else None


GETTERS: dict[str, Callable[[EvalContext, Mapping[str, Any]], Any]] = {
    "vm_file": get_vm_file,
    "cloud_file": get_cloud_file,
    "vm_command_line": get_vm_command_line,
    "vm_command_error": get_vm_command_error,
    "rule": get_rule,
    "rule_relativeTime": get_rule_relative_time,
    "accessibility_tree": get_accessibility_tree,
    "cache_file": get_cache_file,
}
"""The getters this env supports, by OSWorld ``type``."""


def run_getter(ctx: EvalContext, config: Mapping[str, Any] | None) -> Any:
    """The value of one getter config (None for an empty one, as OSWorld passes for missing entries)."""
    if not config:
        return None
    kind = config.get("type")
    getter = GETTERS.get(kind)  # type: ignore[arg-type]
    if getter is None:
        raise EvaluationError(f"getter {kind!r} is not supported (supported: {sorted(GETTERS)})")
    return getter(ctx, config)
