"""OSWorld's result/expected getters: what a metric compares, read from the session or the file cache.

Each getter takes the evaluation context and the getter's config dict from the task (``{"type": ..., ...}``)
and returns what OSWorld's getter of the same name returns: a local file path (or None when the session has
no such file), a list of them (``"multi": true`` with ``"gives"``), a command's output, a rule dict, or the
accessibility tree text. One module per app (or group), each with its own ``GETTERS`` table:

    general  vm_file, cloud_file, vm_command_line, vm_command_error, rule, rule_relativeTime (see
             :mod:`..relative_time`), accessibility_tree, cache_file (a file a postconfig step wrote with ``stdout``)
    chrome   tabs (DevTools), bookmarks, history, cookies, Preferences settings, desktop shortcuts
    terminal vm_terminal_output (the focused GNOME Terminal's text, from the accessibility tree)
    gimp     gimp_config_file (GIMP 2.10's gimprc, sessionrc...)
    directories  list_directory (a folder's tree)
    vlc      vlc_config (vlcrc), vlc_playing_info (its HTTP status), default_video_player
    window   vm_screen_size, vm_window_size
    impress  background_image_in_slide (a slide's background picture, from the .pptx in the session)
    wallpaper  vm_wallpaper (the image GNOME's background setting names)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters import (chrome, directories, general, gimp, impress, terminal, vlc, wallpaper,
                                               window)
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter, dest_problem, file_entries

__all__ = ["GETTERS", "EvalContext", "run_getter", "file_entries", "dest_problem"]

GETTERS: dict[str, Getter] = {
    **general.GETTERS,
    **chrome.GETTERS,
    **terminal.GETTERS,
    **gimp.GETTERS,
    **directories.GETTERS,
    **vlc.GETTERS,
    **window.GETTERS,
    **impress.GETTERS,
    **wallpaper.GETTERS,
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
