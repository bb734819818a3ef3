"""XKB's locks, latches and enabled controls, and the input device hierarchy: recorded at boot, put back at reset.

What the core protocol (:mod:`controller.xserver`) cannot reach: a locked Caps Lock or group (the next episode
would type capitals), an AccessX control such as SlowKeys or BounceKeys (keys then need holding, or repeats are
dropped), and the XInput hierarchy (the XTEST keyboard the agent's actions type through detached from the core
keyboard, or an extra master device, whose name could carry a note). python-xlib has no requests for these, so
this module calls libX11 and libXi through ctypes, on a connection of its own.
"""

from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass

__all__ = ["Settings", "snapshot", "restore"]

logger = logging.getLogger(__name__)

XKB_USE_CORE_KBD = 0x0100
XKB_ALL_BOOLEAN_CTRLS = 0x00001FFF
XKB_ALL_CONTROLS = 0xF8001FFF
XI_ALL_DEVICES = 0
XI_MASTER_POINTER, XI_MASTER_KEYBOARD, XI_SLAVE_POINTER, XI_SLAVE_KEYBOARD, XI_FLOATING_SLAVE = 1, 2, 3, 4, 5
XI_REMOVE_MASTER, XI_ATTACH_SLAVE = 2, 3
XI_FLOATING = 2


class _XkbState(ctypes.Structure):
    _fields_ = [("group", ctypes.c_ubyte), ("locked_group", ctypes.c_ubyte), ("base_group", ctypes.c_ushort),
                ("latched_group", ctypes.c_ushort), ("mods", ctypes.c_ubyte), ("base_mods", ctypes.c_ubyte),
                ("latched_mods", ctypes.c_ubyte), ("locked_mods", ctypes.c_ubyte), ("compat_state", ctypes.c_ubyte),
                ("grab_mods", ctypes.c_ubyte), ("compat_grab_mods", ctypes.c_ubyte), ("lookup_mods", ctypes.c_ubyte),
                ("compat_lookup_mods", ctypes.c_ubyte), ("ptr_buttons", ctypes.c_ushort)]


class _XkbControls(ctypes.Structure):  # the head of XkbControlsRec, up to enabled_ctrls
    _fields_ = [("mk_dflt_btn", ctypes.c_ubyte), ("num_groups", ctypes.c_ubyte), ("groups_wrap", ctypes.c_ubyte),
                ("internal", ctypes.c_ubyte * 4), ("ignore_lock", ctypes.c_ubyte * 4), ("enabled_ctrls", ctypes.c_uint)]


class _XkbDesc(ctypes.Structure):  # the head of XkbDescRec, up to ctrls
    _fields_ = [("dpy", ctypes.c_void_p), ("flags", ctypes.c_ushort), ("device_spec", ctypes.c_ushort),
                ("min_key_code", ctypes.c_ubyte), ("max_key_code", ctypes.c_ubyte),
                ("ctrls", ctypes.POINTER(_XkbControls))]


class _XIDeviceInfo(ctypes.Structure):
    _fields_ = [("deviceid", ctypes.c_int), ("name", ctypes.c_char_p), ("use", ctypes.c_int),
                ("attachment", ctypes.c_int), ("enabled", ctypes.c_int), ("num_classes", ctypes.c_int),
                ("classes", ctypes.c_void_p)]


class _XIRemoveMaster(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("deviceid", ctypes.c_int), ("return_mode", ctypes.c_int),
                ("return_pointer", ctypes.c_int), ("return_keyboard", ctypes.c_int)]


class _XIAttachSlave(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("deviceid", ctypes.c_int), ("new_master", ctypes.c_int)]


class _XIAnyChange(ctypes.Union):  # XIAnyHierarchyChangeInfo (its largest member, XIAddMasterInfo, is 24 bytes)
    _fields_ = [("type", ctypes.c_int), ("remove", _XIRemoveMaster), ("attach", _XIAttachSlave),
                ("add", ctypes.c_byte * 24)]


@dataclass(frozen=True)
class Settings:
    """What a reset puts back: XKB's enabled controls, and each input device's use and master at boot."""

    enabled_controls: int
    devices: dict[int, tuple[int, int]]  # device id -> (use, attachment)


_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


@_ERROR_HANDLER
def _ignore_error(display, error) -> int:
    """libX11's default error handler ends the process: an X error here (a device gone meanwhile) must not."""
    return 0


class _Connection:
    """libX11 and libXi on a display connection of their own (closed on exit), X errors ignored meanwhile."""

    def __init__(self, display: str | None):
        self.x11 = ctypes.CDLL("libX11.so.6")
        self.xi = ctypes.CDLL("libXi.so.6")
        self.x11.XSetErrorHandler.restype = ctypes.c_void_p
        self.x11.XSetErrorHandler.argtypes = [ctypes.c_void_p]
        self._previous_handler = self.x11.XSetErrorHandler(ctypes.cast(_ignore_error, ctypes.c_void_p))
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        self.x11.XkbAllocKeyboard.restype = ctypes.POINTER(_XkbDesc)
        self.xi.XIQueryDevice.restype = ctypes.POINTER(_XIDeviceInfo)
        self.xi.XIQueryDevice.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        self.display = self.x11.XOpenDisplay(display.encode() if display else None)
        if not self.display:
            self.x11.XSetErrorHandler(self._previous_handler)
            raise OSError(f"cannot open the X display {display!r}")
        major, minor = ctypes.c_int(2), ctypes.c_int(2)
        self.xi.XIQueryVersion(self.dpy, ctypes.byref(major), ctypes.byref(minor))  # libXi needs it before XI2 calls

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.x11.XCloseDisplay(ctypes.c_void_p(self.display))
        self.x11.XSetErrorHandler(self._previous_handler)  # the process-wide handler mss may have set

    @property
    def dpy(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.display)

    def enabled_controls(self) -> int:
        desc = self.x11.XkbAllocKeyboard()
        try:
            if self.x11.XkbGetControls(self.dpy, ctypes.c_ulong(XKB_ALL_CONTROLS), desc) != 0 or not desc.contents.ctrls:
                raise OSError("XkbGetControls failed")
            return int(desc.contents.ctrls.contents.enabled_ctrls)
        finally:
            self.x11.XkbFreeKeyboard(desc, ctypes.c_uint(0), ctypes.c_int(1))

    def state(self) -> _XkbState:
        state = _XkbState()
        self.x11.XkbGetState(self.dpy, ctypes.c_uint(XKB_USE_CORE_KBD), ctypes.byref(state))
        return state

    def devices(self) -> dict[int, tuple[int, int]]:
        count = ctypes.c_int(0)
        info = self.xi.XIQueryDevice(self.dpy, XI_ALL_DEVICES, ctypes.byref(count))
        try:
            return {info[i].deviceid: (info[i].use, info[i].attachment) for i in range(count.value)}
        finally:
            self.xi.XIFreeDeviceInfo(info)

    def change_hierarchy(self, changes: list[_XIAnyChange]) -> None:
        array = (_XIAnyChange * len(changes))(*changes)
        self.xi.XIChangeHierarchy(self.dpy, array, ctypes.c_int(len(changes)))
        self.x11.XSync(self.dpy, ctypes.c_int(0))


def snapshot(display: str | None = None) -> Settings | None:
    """The settings now (None, with a warning, where libX11 or libXi cannot be used)."""
    try:
        with _Connection(display) as connection:
            return Settings(connection.enabled_controls(), connection.devices())
    except (OSError, AttributeError) as exc:
        logger.warning("XKB controls and input devices will not be restored on reset: %s", exc)
        return None


def restore(settings: Settings, display: str | None = None) -> list[str]:
    """Unlock and unlatch every modifier and group, put back the enabled controls and the device hierarchy."""
    changed = []
    with _Connection(display) as connection:
        dpy, kbd = connection.dpy, ctypes.c_uint(XKB_USE_CORE_KBD)
        state = connection.state()
        if state.locked_mods or state.latched_mods or state.locked_group or state.latched_group:
            connection.x11.XkbLockModifiers(dpy, kbd, ctypes.c_uint(0xFF), ctypes.c_uint(0))
            connection.x11.XkbLatchModifiers(dpy, kbd, ctypes.c_uint(0xFF), ctypes.c_uint(0))
            connection.x11.XkbLockGroup(dpy, kbd, ctypes.c_uint(0))
            connection.x11.XkbLatchGroup(dpy, kbd, ctypes.c_uint(0))
            changed.append("XKB locks")
        if connection.enabled_controls() & XKB_ALL_BOOLEAN_CTRLS != settings.enabled_controls & XKB_ALL_BOOLEAN_CTRLS:
            connection.x11.XkbChangeEnabledControls(dpy, kbd, ctypes.c_uint(XKB_ALL_BOOLEAN_CTRLS),
                                                    ctypes.c_uint(settings.enabled_controls & XKB_ALL_BOOLEAN_CTRLS))
            changed.append("XKB controls")
        connection.x11.XSync(dpy, ctypes.c_int(0))
        changed += _restore_hierarchy(connection, settings.devices)
    return changed


def _restore_hierarchy(connection: _Connection, boot: dict[int, tuple[int, int]]) -> list[str]:
    """Remove master devices made since boot (their slaves float), then attach every boot slave to its master."""
    now = connection.devices()
    extra = [d for d, (use, _) in now.items() if use in (XI_MASTER_POINTER, XI_MASTER_KEYBOARD) and d not in boot]
    changed = []
    for device in extra:  # removing one of a pair removes both; the second is then gone
        if device in connection.devices():
            change = _XIAnyChange()
            change.remove = _XIRemoveMaster(XI_REMOVE_MASTER, device, XI_FLOATING, 0, 0)
            connection.change_hierarchy([change])
            changed.append(f"master device {device} (removed)")
    now = connection.devices()
    attach = []
    for device, (use, master) in boot.items():
        if use in (XI_SLAVE_POINTER, XI_SLAVE_KEYBOARD) and device in now and now[device] != (use, master):
            change = _XIAnyChange()
            change.attach = _XIAttachSlave(XI_ATTACH_SLAVE, device, master)
            attach.append(change)
            changed.append(f"device {device} (attached to {master} again)")
    if attach:
        connection.change_hierarchy(attach)
    return changed
