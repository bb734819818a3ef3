"""OSWorld's general getters: files from the session or the cache, command output, rules, the accessibility tree."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter, file_entries, pack, target_path
from rla_envs.desktop.osworld.setup import shell_flag

__all__ = ["GETTERS"]


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
            target = target_path(ctx, dest)
            target.write_bytes(data)
            local = str(target)
        if index in gives:
            found.append(local)
    return pack(found)


def get_cloud_file(ctx: EvalContext, config: Mapping[str, Any]) -> Any:
    """Reference files from the FileCache, copied to ``<workdir>/<dest>`` (names matter to some metrics)."""
    paths, dests, gives = file_entries(config)
    found: list[str] = []
    for index, (url, dest) in enumerate(zip(paths, dests)):
        local = ctx.cache.resolve(url, task_id=ctx.task_id, dest=dest, kind="cloud_file")
        if local is None:
            raise EvaluationError(ctx.cache.missing("cloud_file", url))
        target = target_path(ctx, dest)
        shutil.copyfile(local, target)
        if index in gives:
            found.append(str(target))
    return pack(found)


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
    target = target_path(ctx, str(config.get("path") or ""))
    return str(target) if target.is_file() else None


GETTERS: dict[str, Getter] = {
    "vm_file": get_vm_file,
    "cloud_file": get_cloud_file,
    "vm_command_line": get_vm_command_line,
    "vm_command_error": get_vm_command_error,
    "rule": get_rule,
    "rule_relativeTime": get_rule_relative_time,
    "accessibility_tree": get_accessibility_tree,
    "cache_file": get_cache_file,
}
"""The general getters, by OSWorld ``type``."""
