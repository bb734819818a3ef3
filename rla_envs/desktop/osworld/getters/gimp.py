"""OSWorld's GIMP getter: one of GIMP 2.10's config files (``gimprc``, ``sessionrc``...) copied out of the session."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter, target_path

__all__ = ["GETTERS", "GIMP_CONFIG_DIR"]

GIMP_CONFIG_DIR = "~/.config/GIMP/2.10"
"""Where GIMP 2.10 keeps its settings in the session's home (GIMP writes them when it quits)."""


def get_gimp_config_file(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """GIMP's config file ``file_name`` copied to ``<workdir>/<dest>``: its local path, or None when GIMP has none."""
    name = config.get("file_name")
    if not isinstance(name, str) or not name or PurePosixPath(name).name != name or name in (".", ".."):
        raise EvaluationError(f"gimp_config_file: 'file_name' must be a file name, got {name!r:.200}")
    dest = config.get("dest")
    if not isinstance(dest, str) or not dest:
        raise EvaluationError(f"gimp_config_file: needs a string 'dest', got {dest!r:.200}")
    path = f"{GIMP_CONFIG_DIR}/{name}"
    try:
        data = ctx.client.get_file(path)
    except ControllerError as exc:
        raise EvaluationError(f"gimp_config_file: could not read {path} from the session: {exc}") from exc
    if not data:  # OSWorld's getter gives None for a missing or empty file
        return None
    target = target_path(ctx, dest)
    target.write_bytes(data)
    return str(target)


GETTERS: dict[str, Getter] = {
    "gimp_config_file": get_gimp_config_file,
}
"""The GIMP getters, by OSWorld ``type``."""
