"""OSWorld's size getters: the screen's size and an app window's size (``vm_screen_size``, ``vm_window_size``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter

__all__ = ["GETTERS", "window_size_from_wmctrl"]


def get_vm_screen_size(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, int]:
    """``{"width", "height"}`` of the session's screen."""
    try:
        width, height = ctx.client.screen_size()
    except ControllerError as exc:
        raise EvaluationError(f"vm_screen_size: {exc}") from exc
    return {"width": width, "height": height}


def _class_matches(wm_class: str, name: str) -> bool:
    """Whether wmctrl's ``instance.Class`` field names ``name`` as its instance or its class (any case)."""
    wm_class, name = wm_class.lower(), name.lower()
    return wm_class == name or wm_class.startswith(f"{name}.") or wm_class.endswith(f".{name}")


def window_size_from_wmctrl(listing: str, app_class_name: str) -> dict[str, int] | None:
    """``{"width", "height"}`` of the first window in ``wmctrl -lGx`` output whose WM_CLASS instance or class is
    ``app_class_name`` (case-insensitive), or None when no window has it."""
    for line in listing.splitlines():
        fields = line.split(None, 7)
        if len(fields) >= 7 and _class_matches(fields[6], app_class_name):
            try:
                return {"width": int(fields[4]), "height": int(fields[5])}
            except ValueError:
                continue
    return None


def get_vm_window_size(ctx: EvalContext, config: Mapping[str, Any]) -> dict[str, int] | None:
    """``{"width", "height"}`` of the app's window (``app_class_name``, its WM_CLASS), or None without one."""
    name = config.get("app_class_name")
    if not isinstance(name, str) or not name:
        raise EvaluationError(f"vm_window_size: needs an 'app_class_name', got {name!r:.100}")
    try:
        reply = ctx.client.execute(["wmctrl", "-lGx"])
    except ControllerError as exc:
        raise EvaluationError(f"vm_window_size: running wmctrl in the session failed: {exc}") from exc
    if reply.get("returncode") != 0:
        raise EvaluationError(f"vm_window_size: wmctrl failed: {reply.get('error')!r:.300}")
    return window_size_from_wmctrl(reply.get("output") or "", name)


GETTERS: dict[str, Getter] = {
    "vm_screen_size": get_vm_screen_size,
    "vm_window_size": get_vm_window_size,
}
"""The screen and window size getters, by OSWorld ``type``."""
