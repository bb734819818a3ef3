"""A reset restores every place the agent's code can write, not only the home (issue 25, class 2).

Each test plants state through the agent's own channel (``run_pyautogui``: code run as the session's user), checks
through the controller that the plant took, resets, and checks that the next episode finds nothing of it.
"""

from __future__ import annotations

import json

import pytest

desktop = pytest.mark.desktop

PLANT_EVERYWHERE = r"""
import ctypes, os, subprocess
runtime = os.environ["XDG_RUNTIME_DIR"]
# every folder the session's user can write in, outside the home (restored by HomeTemplate) and /proc, /sys
found = subprocess.run(["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", "-o", "-path", "/dev/pts", "-o",
                        "-path", "/home/user", ")", "-prune", "-o", "-type", "d", "-writable", "-print"],
                       capture_output=True, text=True).stdout.split()
for folder in found:
    try:
        with open(os.path.join(folder, "planted-by-the-agent"), "w") as handle:
            handle.write("left for the next episode")
    except OSError:
        pass
# a file the booted desktop made, and the attributes and modes of folders that stay
with open(os.path.join(runtime, "dconf", "user"), "wb") as handle:
    handle.write(b"a note in a kept file")
for folder in ("/tmp", "/var/tmp", "/dev/shm", runtime, "/tmp/.X11-unix", "/home/user"):
    try:
        os.setxattr(folder, "user.note", b"a marker on a kept folder")
    except OSError:
        pass
try:  # the session's own outside a container; the image's /tmp/.X11-unix is root's (1777), its mode out of reach
    os.chmod("/tmp/.X11-unix", 0o700)
except PermissionError:
    pass
os.chmod("/home/user", 0o711)
# a POSIX message queue and System V objects: they outlive the process that made them
libc = ctypes.CDLL(None, use_errno=True)
libc.mq_open.restype = ctypes.c_int
libc.mq_open(b"/planted-queue", os.O_CREAT | os.O_RDWR, 0o600, None)
libc.shmget(0x5EED, 4096, 0o1600)
libc.msgget(0x5EEE, 0o1600)
libc.semget(0x5EEF, 1, 0o1600)
"""

SESSION_STATE = r"""
import json, os, stat, subprocess
runtime = os.environ.get("XDG_RUNTIME_DIR", "/tmp/runtime-user")
writable = subprocess.run(["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", "-o", "-path", "/dev/pts", "-o",
                           "-path", "/home/user", ")", "-prune", "-o", "-writable", "(", "-type", "d", "-o", "-type",
                           "f", ")", "-print"], capture_output=True, text=True).stdout.split()
def attributes(path):
    try:
        return sorted(os.listxattr(path))
    except OSError as error:
        return str(error)
folders = ["/tmp", "/var/tmp", "/dev/shm", runtime, "/tmp/.X11-unix", "/home/user"]
state = {
    "writable": sorted(p for p in writable if not p.startswith("/usr/lib/systemd/")),  # masked units: /dev/null
    "planted": sorted(p for p in writable if "planted" in p),
    "modes": {f: oct(stat.S_IMODE(os.stat(f).st_mode)) for f in folders},
    "xattrs": {f: attributes(f) for f in folders},
    "dconf": open(os.path.join(runtime, "dconf", "user"), "rb").read().hex(),
    "mqueue": sorted(os.listdir("/dev/mqueue")) if os.path.isdir("/dev/mqueue") else None,
    "sysv": {kind: open("/proc/sysvipc/" + kind).read().splitlines()[1:] for kind in ("shm", "msg", "sem")},
}
print(json.dumps(state))
"""


def _state(client) -> dict:
    reply = client.execute(["/usr/bin/python3", "-I", "-c", SESSION_STATE])
    assert reply["returncode"] == 0, reply
    return json.loads(reply["output"])


def check_nothing_planted_survives_a_reset(provider) -> None:
    """Plant state everywhere the agent can write outside the home, check it took, reset, check it is gone."""
    client = provider.start()
    provider.reset()
    before = _state(client)
    assert before["planted"] == []

    reply = client.run_pyautogui(PLANT_EVERYWHERE)
    assert reply["status"] == "success", reply
    planted = _state(client)
    # the plants took: inside the runtime dir and the X socket dir (kept whole before), /tmp, /var/tmp, /dev/shm
    runtime = next(f for f in planted["modes"] if f.startswith("/tmp/runtime"))
    for folder in ("/tmp", "/var/tmp", "/dev/shm", runtime, f"{runtime}/dconf", "/tmp/.X11-unix"):
        assert f"{folder}/planted-by-the-agent" in planted["planted"], folder
    assert planted["dconf"] != before["dconf"] and planted["modes"] != before["modes"]
    assert planted["mqueue"] is None or "planted-queue" in planted["mqueue"]  # no /dev/mqueue: none to list
    assert all(planted["sysv"].values()), planted["sysv"]
    assert planted["xattrs"] != before["xattrs"]

    provider.reset()

    after = _state(client)
    assert after["planted"] == []
    assert after == before


@desktop
def test_nothing_the_agent_writes_outside_the_home_reaches_the_next_episode(local_provider):
    check_nothing_planted_survives_a_reset(local_provider)


@desktop
def test_the_folders_that_hold_the_sessions_mounts_are_read_only(local_provider):
    client = local_provider.start()
    reply = client.execute(["sh", "-c", "for d in / /opt /var /var/lib /run /dev /home; do touch $d/x 2>/dev/null "
                                        "&& echo $d; done; true"])
    assert reply["output"] == "", f"writable outside what a reset restores: {reply['output']}"


BREAKAGES = {
    "boot-socket-deleted": "import os; os.unlink(os.environ['XDG_RUNTIME_DIR'] + '/at-spi/bus_0')",
    "window-manager-killed": "import os, signal, subprocess; "
                             "os.kill(int(subprocess.check_output(['pgrep', '-x', 'openbox'])), signal.SIGKILL)",
}


@desktop
@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_a_reset_after_the_agent_broke_what_the_desktop_made_gives_a_fresh_working_session(local_provider, breakage):
    from tests.rla_envs.desktop.conftest import wait_until

    client = local_provider.start()
    local_provider.reset()
    old_pid = local_provider.session.pid
    reply = client.run_pyautogui(BREAKAGES[breakage])
    assert reply["status"] == "success", reply

    local_provider.reset()

    client = local_provider.start()
    assert local_provider.session.pid != old_pid  # the session could not be restored: a fresh one replaced it
    assert client.execute(["sh", "-c", "test -S $XDG_RUNTIME_DIR/at-spi/bus_0 && pgrep -x openbox"])["returncode"] == 0
    client.launch(["xterm", "-T", "after-the-reset"])
    assert wait_until(lambda: "after-the-reset" in client.execute(["wmctrl", "-l"])["output"])


@desktop
def test_a_core_process_the_agent_stopped_is_woken_by_the_reset(local_provider):
    client = local_provider.start()
    local_provider.reset()
    old_pid = local_provider.session.pid
    reply = client.run_pyautogui(
        "import os, signal, subprocess; "
        "os.kill(int(subprocess.check_output(['pgrep', '-x', 'openbox'])), signal.SIGSTOP)")
    assert reply["status"] == "success", reply
    assert client.execute(["ps", "-o", "stat=", "-C", "openbox"])["output"].startswith("T")

    local_provider.reset()

    assert local_provider.session.pid == old_pid  # restored in place
    assert not client.execute(["ps", "-o", "stat=", "-C", "openbox"])["output"].startswith("T")


PLANT_IN_THE_X_SERVER = r"""
import ctypes
import Xlib.display, Xlib.X as X, Xlib.XK as XK
from Xlib.ext import xinput
from Xlib.protocol import event
d = Xlib.display.Display()
root = d.screen().root
atom, text = d.intern_atom, lambda s: s.encode()
# root properties: a note, xrdb's resources (apps read them at start), the desktop names openbox adopts
root.change_property(atom("PLANTED_NOTE"), atom("STRING"), 8, text("left for the next episode"))
root.change_property(atom("RESOURCE_MANAGER"), atom("STRING"), 8, text("*background:\tred\n"))
root.change_property(atom("_NET_DESKTOP_NAMES"), atom("UTF8_STRING"), 8, text("note\0"))
root.change_attributes(background_pixel=0xFF0000)
root.clear_area()
# the window manager's desktops, asked for as a pager does
for name, value in (("_NET_NUMBER_OF_DESKTOPS", 4), ("_NET_CURRENT_DESKTOP", 2)):
    root.send_event(event.ClientMessage(window=root, client_type=atom(name), data=(32, [value, 0, 0, 0, 0])),
                    event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
# input: 'a' types 'b', buttons 1 and 3 swapped, no key repeat, a fast pointer
keycode = d.keysym_to_keycode(XK.string_to_keysym("a"))
width = len(d.get_keyboard_mapping(keycode, 1)[0])
d.change_keyboard_mapping(keycode, [[XK.string_to_keysym("b")] * width])
buttons = list(d.get_pointer_mapping())
buttons[0], buttons[2] = buttons[2], buttons[0]
d.set_pointer_mapping(buttons)
d.change_keyboard_control(auto_repeat_mode=X.AutoRepeatModeOff, bell_percent=7)
d.change_keyboard_control(key=keycode, auto_repeat_mode=X.AutoRepeatModeOff)
d.change_pointer_control(accel=(9, 1), threshold=1)
modifiers = [list(row) for row in d.get_modifier_mapping()]
modifiers[1] = [0] * len(modifiers[1])  # Caps Lock locks nothing
d.set_modifier_mapping(modifiers)
d.set_access_control(X.DisableAccess)
# the server: blank the screen after a second, another font path; a mode of the agent's own, a smaller screen
d.set_screen_saver(1, 1, X.PreferBlanking, X.AllowExposures)
d.set_font_path(["built-ins"])
resources = root.xrandr_get_screen_resources()
crtc, output = resources.crtcs[0], resources.outputs[0]
mode = root.xrandr_create_mode(dict(id=0, width=640, height=480, dot_clock=0, h_sync_start=0, h_sync_end=0,
                                    h_total=640, h_skew=0, v_sync_start=0, v_sync_end=0, v_total=480, name_length=4,
                                    flags=0), "note").mode
d.xrandr_add_output_mode(output, mode)
d.xrandr_set_crtc_config(crtc, resources.config_timestamp, 0, 0, 0, 1, [])
root.xrandr_set_screen_size(640, 480, 169, 127)
d.xrandr_set_crtc_config(crtc, root.xrandr_get_screen_resources().config_timestamp, 0, 0, mode, 1, [output])
# a window kept after its client leaves
d.set_close_down_mode(X.RetainPermanent)
window = root.create_window(10, 10, 200, 100, 0, d.screen().root_depth, background_pixel=0x00FF00)
window.set_wm_name("kept after its client left")
window.map()
# input devices: the XTEST pointer's transform matrix halves every move
for device in d.xinput_query_device(xinput.AllDevices).devices:
    if device.name == "Virtual core XTEST pointer":
        matrix = d.xinput_get_device_property(device.deviceid, atom("Coordinate Transformation Matrix"), 0, 0, 9)
        d.xinput_change_device_property(device.deviceid, atom("Coordinate Transformation Matrix"), matrix.type,
                                        X.PropModeReplace, (32, [0x3F000000, 0, 0, 0, 0x3F000000, 0, 0, 0, 0x3F800000]))
d.sync()
# XKB: Caps Lock locked, SlowKeys on; the input hierarchy: a master pair named by the agent, the keyboard detached
x11, xi = ctypes.CDLL("libX11.so.6"), ctypes.CDLL("libXi.so.6")
x11.XOpenDisplay.restype = ctypes.c_void_p
dpy = ctypes.c_void_p(x11.XOpenDisplay(None))
x11.XkbLockModifiers(dpy, 0x100, 2, 2)                    # LockMask
x11.XkbChangeEnabledControls(dpy, 0x100, 1 << 0, 1 << 0)  # XkbSlowKeysMask
class Change(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("pad", ctypes.c_int), ("name", ctypes.c_char_p), ("send_core", ctypes.c_int),
                ("enable", ctypes.c_int)]
class Detach(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("deviceid", ctypes.c_int), ("pad", ctypes.c_byte * 16)]
major, minor = ctypes.c_int(2), ctypes.c_int(2)
xi.XIQueryVersion(dpy, ctypes.byref(major), ctypes.byref(minor))
xi.XIChangeHierarchy(dpy, ctypes.byref(Change(1, 0, b"note", 1, 1)), 1)  # XIAddMaster
for device in d.xinput_query_device(xinput.AllDevices).devices:
    if device.name == "Xvfb keyboard":
        xi.XIChangeHierarchy(dpy, ctypes.byref(Detach(4, device.deviceid)), 1)  # XIDetachSlave
x11.XSync(dpy, 0)
"""

X_SERVER_STATE = r"""
import ctypes, hashlib, json
import Xlib.display
from Xlib.ext import xinput
d = Xlib.display.Display()
root = d.screen().root
first, last = d.display.info.min_keycode, d.display.info.max_keycode
props = {}
for a in root.list_properties():
    name = d.get_atom_name(a)
    if name in ("_NET_CLIENT_LIST", "_NET_CLIENT_LIST_STACKING", "_NET_ACTIVE_WINDOW"):
        continue  # the window manager's own bookkeeping of the windows of the moment
    value = root.get_full_property(a, 0).value
    props[name] = value.hex() if isinstance(value, bytes) else str(list(value))
control = d.get_keyboard_control()
saver = d.get_screen_saver()
pointer = d.get_pointer_control()
geometry = root.get_geometry()
devices = {}
for device in d.xinput_query_device(xinput.AllDevices).devices:
    values = {}
    for a in d.xinput_list_device_properties(device.deviceid).atoms:
        reply = d.xinput_get_device_property(device.deviceid, a, 0, 0, 1 << 12)
        values[d.get_atom_name(a)] = str(reply.value)
    devices[device.name] = [device.use, device.attachment, values]
x11 = ctypes.CDLL("libX11.so.6")
x11.XOpenDisplay.restype = ctypes.c_void_p
dpy = ctypes.c_void_p(x11.XOpenDisplay(None))
state = (ctypes.c_ubyte * 20)()
x11.XkbGetState(dpy, 0x100, state)  # XkbStateRec: locked_mods is its tenth byte
x11.XkbAllocKeyboard.restype = ctypes.POINTER(ctypes.c_void_p * 3)  # XkbDescRec: dpy, (flags..), ctrls
desc = x11.XkbAllocKeyboard()
x11.XkbGetControls(dpy, ctypes.c_ulong(0xF8001FFF), desc)
controls = ctypes.cast(desc.contents[2], ctypes.POINTER(ctypes.c_uint * 4)).contents[3]  # enabled_ctrls: bytes 12-15
print(json.dumps({
    "properties": props,
    "keyboard": hashlib.sha256(str(d.get_keyboard_mapping(first, last - first + 1)).encode()).hexdigest(),
    "modifiers": str(d.get_modifier_mapping()), "buttons": list(d.get_pointer_mapping()),
    "control": [control.global_auto_repeat, control.bell_percent, list(control.auto_repeats)],
    "pointer": [pointer.accel_num, pointer.accel_denom, pointer.threshold],
    "saver": [saver.timeout, saver.interval], "font_path": list(d.get_font_path()),
    "access": d.list_hosts().mode, "size": [geometry.width, geometry.height],
    "windows": len(root.query_tree().children), "devices": devices,
    "xkb": [state[9], controls],
}))
"""


def _x_state(client) -> dict:
    reply = client.execute(["/usr/bin/python3", "-I", "-c", X_SERVER_STATE])
    assert reply["returncode"] == 0, reply
    return json.loads(reply["output"])


@desktop
def test_nothing_the_agent_changes_in_the_x_server_reaches_the_next_episode(local_provider):
    client = local_provider.start()
    local_provider.reset()
    before = _x_state(client)
    reply = client.run_pyautogui(PLANT_IN_THE_X_SERVER)
    assert reply["status"] == "success", reply
    planted = _x_state(client)
    changed = sorted(key for key in before if planted[key] != before[key])
    assert changed == sorted(before), f"the plant left {set(before) - set(changed)} as they were"

    local_provider.reset()

    after = _x_state(client)
    assert {key: after[key] for key in after if after[key] != before[key]} == {}
    pixels = client.screenshot_array()
    assert pixels.shape[:2] == (1080, 1920) and not (pixels[10:110, 10:210] == (0, 255, 0)).all()
    assert local_provider.start().run_pyautogui("pyautogui.write('a')")["status"] == "success"


DCONF_ENVIRONMENT = r"""
import subprocess, time
subprocess.run(["gdbus", "call", "--session", "--dest", "ca.desrt.dconf", "--object-path", "/ca/desrt/dconf/Writer/user",
                "--method", "org.freedesktop.DBus.Peer.Ping"], capture_output=True, timeout=30)
pid = subprocess.run(["pgrep", "-x", "dconf-service"], capture_output=True, text=True).stdout.split()[0]
print("PLANTED_BY_THE_AGENT" in open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace"))
"""


@desktop
def test_an_episode_cannot_set_the_environment_of_services_the_session_bus_starts_later(local_provider):
    client = local_provider.start()
    local_provider.reset()
    # the agent asks the bus (a core process) to start every later service with a variable of its choosing
    reply = client.run_pyautogui("import subprocess; subprocess.run(['dbus-update-activation-environment', "
                                 "'PLANTED_BY_THE_AGENT=1'], capture_output=True, timeout=30)")
    assert reply["status"] == "success", reply
    local_provider.reset()
    # the next episode: the bus starts dconf's service, which must not carry the variable
    reply = client.execute(["/usr/bin/python3", "-I", "-c", DCONF_ENVIRONMENT])
    assert reply["output"].strip() == "False", reply


@desktop
def test_by_default_every_reset_starts_a_new_session():
    from rla_envs.desktop.providers.local import LocalProvider
    from tests.rla_envs.desktop.conftest import local_desktop_unavailable

    reason = local_desktop_unavailable()
    if reason:
        pytest.skip(reason)
    with LocalProvider(screen_size=(800, 600)) as provider:  # fresh_sessions: the default
        provider.reset()
        client, first = provider.start(), provider.session.pid
        planted = ("import Xlib.display; d = Xlib.display.Display(); r = d.screen().root; "
                   "r.change_property(d.intern_atom('PLANTED_NOTE'), d.intern_atom('STRING'), 8, b'x'); d.sync()")
        assert client.run_pyautogui(planted)["status"] == "success"
        provider.reset()
        client = provider.start()
        assert provider.session.pid != first
        assert "PLANTED_NOTE" not in client.execute(["xprop", "-root"])["output"]
