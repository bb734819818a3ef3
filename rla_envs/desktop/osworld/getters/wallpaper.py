"""OSWorld's ``vm_wallpaper`` getter: the image file the desktop background setting names.

OSWorld's VM runs GNOME, whose background is the ``org.gnome.desktop.background picture-uri`` setting; the
session keeps GSettings in dconf over its D-Bus session bus, so an agent sets it the same way (``gsettings set``,
or an app's "Set as Wallpaper"). openbox draws no background, so the setting is read, not the screen.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter, target_path

__all__ = ["GETTERS", "WALLPAPER_COMMAND", "wallpaper_path"]

WALLPAPER_COMMAND = ["gsettings", "get", "org.gnome.desktop.background", "picture-uri"]
"""The command that prints the background setting (``'file:///home/user/pic.png'``)."""


def wallpaper_path(setting: str | None) -> str | None:
    """The local file a printed ``picture-uri`` setting names (``'file:///a%20b.png'`` -> ``/a b.png``), or None."""
    if not setting or not setting.strip():
        return None
    try:
        uri = ast.literal_eval(setting.strip())
    except (ValueError, SyntaxError):
        uri = setting.strip()
    if not isinstance(uri, str):
        return None
    parts = urlsplit(uri)
    path = unquote(parts.path) if parts.scheme == "file" else uri
    return path if PurePosixPath(path).is_absolute() else None


def get_vm_wallpaper(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """The background image copied to ``<workdir>/<dest>``; an empty file there when none is set or readable
    (OSWorld's getter writes an empty file too, so image metrics score 0)."""
    target = target_path(ctx, str(config.get("dest") or ""))
    try:
        setting = ctx.client.execute(WALLPAPER_COMMAND).get("output")
        path = wallpaper_path(setting)
        data = ctx.client.get_file(path) if path else None
    except ControllerError as exc:
        raise EvaluationError(f"vm_wallpaper: could not read the background from the session: {exc}") from exc
    target.write_bytes(data or b"")
    return str(target)


GETTERS: dict[str, Getter] = {"vm_wallpaper": get_vm_wallpaper}
"""The wallpaper getter, by OSWorld ``type``."""
