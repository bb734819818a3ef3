"""The X server's state an episode can change, and its restore at reset; who owns the screen's windows.

Xvfb is a core process: it outlives every episode, and any client -- the agent's code, as the session's user --
can change state that stays after the client is gone: properties on the root window (``xrdb`` writes its
resources there, and any bytes fit), the root's background and cursor, the keyboard, modifier and pointer
mappings, key repeat and bell, pointer acceleration, the screen saver (blanking the screen after a second),
the font path, the access control list, the screen size and RandR modes, the input devices' properties (``Device Enabled``,
a transform matrix), windows and pixmaps kept with ``RetainPermanent`` after their client left, and the
window manager's desktops. The next episode would see, and be steered by, all of it. :class:`XServerState`
records each at boot and a reset puts back whatever differs; :mod:`controller.xkb` does the same for XKB's
locks and controls and the input device hierarchy.

:func:`window_owner_pids` names the processes that own the screen's windows as the X server knows them (from
the connection's credentials, through the X-Resource extension), not as a client claims (``_NET_WM_PID``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from . import xkb

__all__ = ["XServerState", "window_owner_pids"]

logger = logging.getLogger(__name__)

_PID_MASK = 2  # X-Resource's LocalClientPIDMask
_WM_DESKTOPS = ("_NET_NUMBER_OF_DESKTOPS", "_NET_CURRENT_DESKTOP")
"""Window manager state set through client messages (openbox keeps its own copy; the root property only shows it)."""


def _open(display: str | None = None):
    from Xlib.display import Display

    return Display(display)


def _client_pids(connection) -> dict[int, int]:
    """Every X client's resource base -> its process id (clients the server cannot name a process for are left out)."""
    reply = connection.res_query_client_ids([{"client": 0, "mask": _PID_MASK}])
    return {value.spec.client: value.value[0] for value in reply.ids if value.spec.mask == _PID_MASK and value.value}


def window_owner_pids(display: str | None = None) -> set[int]:
    """The processes that own a window the window manager manages (``_NET_CLIENT_LIST``), as the X server knows them."""
    connection = _open(display)
    try:
        root = connection.screen().root
        listed = root.get_full_property(connection.intern_atom("_NET_CLIENT_LIST"), 0)
        windows = list(listed.value) if listed is not None else []
        if not windows:
            return set()
        reply = connection.res_query_client_ids([{"client": int(w), "mask": _PID_MASK} for w in windows])
        return {value.value[0] for value in reply.ids if value.value}
    finally:
        connection.close()


@dataclass
class _Snapshot:
    """The X server's settings at boot (see the module docstring)."""

    properties: dict[str, tuple[int, int, Any]] = field(default_factory=dict)  # name -> (type, format, value)
    keyboard: tuple[int, list] = (0, [])         # first keycode, keysyms per keycode
    keymap: bytes | None = None                  # the whole XKB keymap (xkbcomp's dump), None without xkbcomp
    modifiers: list = field(default_factory=list)
    buttons: list = field(default_factory=list)
    keyboard_control: dict[str, Any] = field(default_factory=dict)
    auto_repeats: list[int] = field(default_factory=list)  # one bit per keycode
    pointer_control: tuple[int, int, int] = (0, 0, 0)
    screen_saver: tuple[int, int, int, int] = (0, 0, 0, 0)
    font_path: list = field(default_factory=list)
    access: tuple[int, list] = (0, [])
    size: tuple[int, int] = (0, 0)
    randr: dict[str, Any] = field(default_factory=dict)  # modes, each output's modes, each CRTC's configuration
    devices: dict[int, dict[int, tuple[int, Any]]] = field(default_factory=dict)  # device -> atom -> (type, value)


def _root_properties(connection, root) -> dict[str, tuple[int, int, Any]]:
    found = {}
    for atom in root.list_properties():
        prop = root.get_full_property(atom, 0)
        if prop is not None:
            value = prop.value if isinstance(prop.value, (bytes, str)) else list(prop.value)
            found[connection.get_atom_name(atom)] = (prop.property_type, prop.format, value)
    return found


def _device_properties(connection) -> dict[int, dict[int, tuple[int, Any]]]:
    from Xlib.ext import xinput

    found: dict[int, dict[int, tuple[int, Any]]] = {}
    for device in connection.xinput_query_device(xinput.AllDevices).devices:
        props = {}
        for atom in connection.xinput_list_device_properties(device.deviceid).atoms:
            reply = connection.xinput_get_device_property(device.deviceid, atom, 0, 0, 1 << 16)
            value = reply.value  # (format, data)
            props[int(atom)] = (reply.type, (value[0], bytes(value[1]) if isinstance(value[1], (bytes, str))
                                             else list(value[1])))
        found[device.deviceid] = props
    return found


def _randr(connection, root) -> dict[str, Any]:
    """The screen's RandR configuration: its modes, each output's modes and each CRTC's mode, position and outputs."""
    resources = root.xrandr_get_screen_resources()
    stamp = resources.config_timestamp
    crtcs = {}
    for crtc in resources.crtcs:
        info = connection.xrandr_get_crtc_info(crtc, stamp)
        crtcs[crtc] = (info.x, info.y, info.mode, info.rotation, tuple(info.outputs))
    outputs = {output: tuple(connection.xrandr_get_output_info(output, stamp).modes) for output in resources.outputs}
    return {"modes": {mode.id for mode in resources.modes}, "outputs": outputs, "crtcs": crtcs}


def _xkbcomp(args: list[str], data: bytes | None = None) -> bytes | None:
    """Run ``xkbcomp`` (dump the server's keymap, or load one from ``data``); its output, None when it failed."""
    import subprocess

    try:
        done = subprocess.run(["xkbcomp", "-w", "0", *args], input=data, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.warning("xkbcomp failed (%s): the keymap is restored through the core mapping only", exc)
        return None
    return done.stdout if done.returncode == 0 else None


def _hosts(connection) -> tuple[int, list]:
    reply = connection.list_hosts()
    return reply.mode, sorted((host.family, bytes(host.name)) for host in reply.hosts)


class XServerState:
    """The X server's settings at :meth:`snapshot` (after boot), and :meth:`restore`, which puts them back.

    Args:
        display: the X display (default ``$DISPLAY``).
    """

    def __init__(self, display: str | None = None, background_pixmap: int | None = None):
        self.display = display
        self.background_pixmap = background_pixmap  # the desktop's wallpaper (controller.wallpaper), None: X's default
        self._boot: _Snapshot | None = None
        self._xkb_boot: xkb.Settings | None = None

    def snapshot(self) -> None:
        """Record the server's settings now (the booted desktop's)."""
        connection = _open(self.display)
        try:
            root = connection.screen().root
            first = connection.display.info.min_keycode
            count = connection.display.info.max_keycode - first + 1
            control = connection.get_keyboard_control()
            pointer = connection.get_pointer_control()
            saver = connection.get_screen_saver()
            geometry = root.get_geometry()
            self._boot = _Snapshot(
                properties=_root_properties(connection, root),
                keyboard=(first, [list(row) for row in connection.get_keyboard_mapping(first, count)]),
                modifiers=[list(row) for row in connection.get_modifier_mapping()],
                buttons=list(connection.get_pointer_mapping()),
                keyboard_control={key: control._data[key] for key in (
                    "key_click_percent", "bell_percent", "bell_pitch", "bell_duration", "global_auto_repeat")},
                auto_repeats=list(control.auto_repeats),
                pointer_control=(pointer.accel_num, pointer.accel_denom, pointer.threshold),
                screen_saver=(saver.timeout, saver.interval, saver.prefer_blanking, saver.allow_exposures),
                font_path=list(connection.get_font_path()),
                access=_hosts(connection),
                size=(geometry.width, geometry.height),
                randr=_randr(connection, root),
                devices=_device_properties(connection),
                keymap=_xkbcomp(["-xkb", self.display or os.environ.get("DISPLAY", ""), "-"]),
            )
        finally:
            connection.close()
        self._xkb_boot = xkb.snapshot(self.display)

    def restore(self, keep_pids: Collection[int] = ()) -> list[str]:
        """Put back every setting that differs from the snapshot; the names of those that did.

        X clients (and resources kept after their client left) that belong to no process in ``keep_pids`` or
        this one are killed first: call this once the episode's processes are gone.
        """
        if self._boot is None:
            raise RuntimeError("XServerState.restore before snapshot: there is nothing to restore yet")
        changed: list[str] = []
        connection = _open(self.display)
        try:
            root = connection.screen().root
            changed += self._kill_foreign_clients(connection, {*keep_pids, os.getpid()})
            changed += self._restore_window_manager(connection, root)
            changed += self._restore_root(connection, root)
            changed += self._restore_input(connection)
            changed += self._restore_server(connection, root)
            changed += self._restore_devices(connection)
            connection.sync()
        finally:
            connection.close()
        if self._xkb_boot is not None:
            changed += xkb.restore(self._xkb_boot, self.display)
        if changed:
            logger.info("X server settings the episode changed, put back: %s", ", ".join(changed))
        return changed

    # ------------------------------------------------------------------ parts
    @staticmethod
    def _kill_foreign_clients(connection, keep: set[int]) -> list[str]:
        """Kill the X clients no kept process owns: leftovers of the episode, and resources kept after their client
        left (``RetainPermanent``), which the server can name no process for."""
        own = connection.display.info.resource_id_base
        pids = _client_pids(connection)
        killed = []
        for client in connection.res_query_clients().clients:
            base = client.resource_base
            if base in (0, own) or pids.get(base) in keep:  # 0: the server itself
                continue
            connection.create_resource_object("window", base).kill_client()
            killed.append(f"client {base:#x} (pid {pids.get(base, 'unknown')})")
        return killed

    def _restore_window_manager(self, connection, root) -> list[str]:
        """Ask the window manager for the boot number of desktops and the first one, as a pager would."""
        from Xlib import X
        from Xlib.protocol import event

        changed = []
        for name in _WM_DESKTOPS:
            boot = self._boot.properties.get(name)
            now = root.get_full_property(connection.intern_atom(name), 0)
            if boot is None or (now is not None and list(now.value) == boot[2]):
                continue
            data = [int(boot[2][0]), X.CurrentTime, 0, 0, 0]
            message = event.ClientMessage(window=root, client_type=connection.intern_atom(name), data=(32, data))
            root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
            changed.append(name)
        if changed:  # the window manager writes the properties itself once it has changed its desktops
            connection.sync()
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline and any(
                    list(getattr(root.get_full_property(connection.intern_atom(n), 0), "value", [])) !=
                    self._boot.properties[n][2] for n in changed):
                time.sleep(0.02)
        return changed

    def _restore_root(self, connection, root) -> list[str]:
        """The root window's properties as at boot (new ones deleted), its background (the wallpaper, else X's default)
        and default cursor."""
        from Xlib import X

        changed = []
        now = _root_properties(connection, root)
        for name in now.keys() - self._boot.properties.keys():
            root.delete_property(connection.intern_atom(name))
            changed.append(f"root property {name} (deleted)")
        for name, (kind, fmt, value) in self._boot.properties.items():
            if now.get(name) != (kind, fmt, value):
                root.change_property(connection.intern_atom(name), kind, fmt, value)
                changed.append(f"root property {name}")
        # None restores the root's default background and cursor (the protocol's rule for the root window)
        background = X.NONE if self.background_pixmap is None else self.background_pixmap
        root.change_attributes(background_pixmap=background, cursor=X.NONE)
        root.clear_area()
        return changed

    def _restore_input(self, connection) -> list[str]:
        from Xlib import X

        boot, changed = self._boot, []
        first, keysyms = boot.keyboard
        if [list(row) for row in connection.get_keyboard_mapping(first, len(keysyms))] != keysyms:
            # the whole XKB keymap back when xkbcomp dumped it (a core mapping sent back is turned into a keymap
            # of another shape by the server), else the core mapping
            if boot.keymap is None or _xkbcomp(["-", self.display or os.environ.get("DISPLAY", "")],
                                               boot.keymap) is None:
                connection.change_keyboard_mapping(first, keysyms)
            changed.append("keyboard mapping")
        if [list(row) for row in connection.get_modifier_mapping()] != boot.modifiers:
            for _ in range(50):  # busy while a modifier key is down: the reset has let go of them, retry briefly
                if connection.set_modifier_mapping(boot.modifiers) != X.MappingBusy:
                    break
                time.sleep(0.02)
            changed.append("modifier mapping")
        if list(connection.get_pointer_mapping()) != boot.buttons:
            connection.set_pointer_mapping(boot.buttons)
            changed.append("pointer buttons")
        control = connection.get_keyboard_control()
        if {key: control._data[key] for key in boot.keyboard_control} != boot.keyboard_control:
            values = dict(boot.keyboard_control)
            values["auto_repeat_mode"] = values.pop("global_auto_repeat")
            connection.change_keyboard_control(**values)
            changed.append("keyboard control")
        repeats = list(control.auto_repeats)
        if repeats != boot.auto_repeats:
            for keycode in range(8 * len(repeats)):
                bit = 1 << (keycode % 8)
                if (repeats[keycode // 8] ^ boot.auto_repeats[keycode // 8]) & bit:
                    on = bool(boot.auto_repeats[keycode // 8] & bit)
                    connection.change_keyboard_control(key=keycode, auto_repeat_mode=X.AutoRepeatModeOn if on
                                                       else X.AutoRepeatModeOff)
            changed.append("key repeat")
        pointer = connection.get_pointer_control()
        if (pointer.accel_num, pointer.accel_denom, pointer.threshold) != boot.pointer_control:
            num, denom, threshold = boot.pointer_control
            connection.change_pointer_control(accel=(num, denom), threshold=threshold)
            changed.append("pointer acceleration")
        return changed

    def _restore_server(self, connection, root) -> list[str]:
        from Xlib import X

        boot, changed = self._boot, []
        saver = connection.get_screen_saver()
        if (saver.timeout, saver.interval, saver.prefer_blanking, saver.allow_exposures) != boot.screen_saver:
            connection.set_screen_saver(*boot.screen_saver)
            changed.append("screen saver")
        connection.force_screen_saver(X.ScreenSaverReset)  # a blanked screen shows again
        if list(connection.get_font_path()) != boot.font_path:
            connection.set_font_path(boot.font_path)
            changed.append("font path")
        mode, hosts = _hosts(connection)
        if (mode, hosts) != boot.access:
            for family, name in set(hosts) - set(boot.access[1]):
                connection.change_hosts(X.HostDelete, family, name)
            for family, name in set(boot.access[1]) - set(hosts):
                connection.change_hosts(X.HostInsert, family, name)
            connection.set_access_control(boot.access[0])
            changed.append("access control")
        geometry = root.get_geometry()
        if (geometry.width, geometry.height) != boot.size or _randr(connection, root) != boot.randr:
            self._restore_randr(connection, root)
            changed.append("screen size and modes")
        return changed

    def _restore_randr(self, connection, root) -> None:
        """Switch the CRTCs off, give the screen its boot size, drop modes made since, set the CRTCs as at boot."""
        boot = self._boot.randr
        stamp = root.xrandr_get_screen_resources().config_timestamp
        for crtc in boot["crtcs"]:
            connection.xrandr_set_crtc_config(crtc, stamp, 0, 0, 0, 1, [])
        width, height = self._boot.size
        root.xrandr_set_screen_size(width, height, round(width * 25.4 / 96), round(height * 25.4 / 96))
        now = _randr(connection, root)
        for output, modes in now["outputs"].items():
            for mode in set(modes) - set(boot["outputs"].get(output, ())):
                connection.xrandr_delete_output_mode(output, mode)
        for mode in now["modes"] - boot["modes"]:
            connection.xrandr_destroy_mode(mode)
        stamp = root.xrandr_get_screen_resources().config_timestamp
        for crtc, (x, y, mode, rotation, outputs) in boot["crtcs"].items():
            connection.xrandr_set_crtc_config(crtc, stamp, x, y, mode, rotation, list(outputs))

    def _restore_devices(self, connection) -> list[str]:
        from Xlib import X

        changed = []
        now = _device_properties(connection)
        for device, boot_props in self._boot.devices.items():
            props = now.get(device)
            if props is None:
                continue
            for atom in props.keys() - boot_props.keys():
                connection.xinput_delete_device_property(device, atom)
                changed.append(f"device {device} property {connection.get_atom_name(atom)} (deleted)")
            for atom, (kind, value) in boot_props.items():
                if props.get(atom) != (kind, value):
                    connection.xinput_change_device_property(device, atom, kind, X.PropModeReplace, value)
                    changed.append(f"device {device} property {connection.get_atom_name(atom)}")
        return changed
