"""OSWorld's ``list_directory`` getter: the tree of a folder in the session (names, kinds, children)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter
from rla_envs.desktop.osworld.session_probe import probe_command

__all__ = ["GETTERS", "TREE_SCRIPT"]

TREE_SCRIPT = ("import json, os, sys\n"
               "def tree(path):\n"
               "    node = {'type': 'directory', 'name': os.path.basename(path), 'children': []}\n"
               "    for entry in sorted(os.scandir(path), key=lambda e: e.name):\n"
               "        if entry.is_dir(follow_symlinks=False):\n"
               "            node['children'].append(tree(entry.path))\n"
               "        else:\n"
               "            node['children'].append({'type': 'file', 'name': entry.name})\n"
               "    return node\n"
               "root = os.path.expanduser(sys.argv[1])\n"
               "print(json.dumps(tree(root) if os.path.isdir(root) else None))\n")
"""Run in the session with the folder as its argument: prints the tree as JSON (``null`` for no such folder)."""


def get_list_directory(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"type": "directory", "name", "children": [...]}`` of the folder ``path`` (None when it does not exist)."""
    path = config.get("path")
    if not isinstance(path, str) or not path:
        raise EvaluationError(f"list_directory: needs a string 'path', got {path!r:.200}")
    try:
        reply = ctx.client.execute(probe_command(TREE_SCRIPT, path))
        return json.loads(reply.get("output") or "null")
    except (ControllerError, ValueError) as exc:
        raise EvaluationError(f"list_directory: could not list {path} in the session: {exc}") from exc


GETTERS: dict[str, Getter] = {
    "list_directory": get_list_directory,
}
"""The folder getters, by OSWorld ``type``."""
