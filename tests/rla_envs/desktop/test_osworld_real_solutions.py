"""Scripted solutions for real OSWorld tasks (``../shared/osworld-tasks/examples``), played on the local
desktop through ``rla/OSWorld-v0`` as an agent plays them: a no-op (``DONE`` at once) scores 0 and the solution's
pyautogui actions followed by ``DONE`` score 1 (marker ``desktop``).

Every solution is what an agent could send: keys, or Python that runs a command or edits an app's settings file
(after quitting the app, which would otherwise write its own settings over the file). Where an app must have
drawn, quit or written a file, the action waits for it with a bounded poll (it raises when the bound passes).
"""

from __future__ import annotations

import pytest

from tests.paths import OSWORLD_TASKS

OSWORLD_EXAMPLES = OSWORLD_TASKS / "examples"

# ----------------------------------------------------------------- building blocks of the actions (code strings)

POLL = '''
import os, subprocess
def poll(check, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.2)
def windows(name):
    return subprocess.run(["xdotool", "search", "--onlyvisible", "--name", name], capture_output=True,
                          text=True).stdout.split()
def focus(name):
    poll(lambda: windows(name), f"a window named {name!r}")
    subprocess.run(["xdotool", "windowactivate", "--sync", windows(name)[0]], check=True, timeout=10)
    return windows(name)[0]
def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
def quit_app(name):
    window = focus(name)
    pid = int(subprocess.run(["xdotool", "getwindowpid", window], capture_output=True, text=True, check=True).stdout)
    pyautogui.hotkey("ctrl", "q")
    poll(lambda: not running(pid), f"{name!r} to quit")
'''
"""Helpers the actions below start with: ``poll`` (a bounded wait), ``windows`` (the visible ones whose name matches),
``focus`` a window (waiting for it) and ``quit_app`` (Ctrl+Q in its window, then wait until its process has ended:
its settings are written)."""


def command(*argv: str) -> str:
    """Run one command in the session (it must succeed)."""
    return f"import subprocess; subprocess.run({list(argv)!r}, check=True, timeout=30)"


def gsettings(schema: str, key: str, value: str) -> str:
    return command("gsettings", "set", schema, key, value)


def quitting(window_name: str) -> str:
    """Quit the app that has this window (and wait until it has)."""
    return POLL + f"quit_app({window_name!r})"


def vlcrc(key: str, value: str) -> str:
    """Set ``key=value`` in VLC's settings file (under its section; quit VLC first), dropping the old line."""
    section = "[qt]" if key.startswith("qt-") else "[core]"
    return f'''
import pathlib
rc = pathlib.Path.home() / ".config/vlc/vlcrc"
lines = [line for line in (rc.read_text() if rc.exists() else "").splitlines()
         if not line.lstrip("#").startswith({f"{key}="!r})]
if {section!r} not in lines:
    lines.append({section!r})
lines.insert(lines.index({section!r}) + 1, {f"{key}={value}"!r})
rc.write_text("\\n".join(lines) + "\\n")
'''


def gimprc(key: str, value: str) -> str:
    """Set ``(key value)`` in GIMP's gimprc (quit GIMP first), dropping the old line."""
    return f'''
import pathlib
rc = pathlib.Path.home() / ".config/GIMP/2.10/gimprc"
rc.parent.mkdir(parents=True, exist_ok=True)
lines = [line for line in (rc.read_text() if rc.exists() else "").splitlines()
         if not line.startswith({f"({key} "!r})]
rc.write_text("\\n".join(lines + [{f"({key} {value})"!r}]) + "\\n")
'''


QUIT_VLC = quitting("VLC media player")
QUIT_GIMP = quitting("GNU Image Manipulation Program")
# Impress starts with its template chooser over the presentation: Esc closes it, then Ctrl+Q quits
QUIT_IMPRESS = POLL + '''
focus("Select a Template")
pyautogui.press("esc")
poll(lambda: not windows("Select a Template"), "the template chooser to close")
quit_app("LibreOffice Impress")
'''

# xdg-mime: VLC opens every video type its desktop file lists
VLC_FOR_VIDEOS = '''
import subprocess
desktop = open("/usr/share/applications/vlc.desktop").read()
types = [t for line in desktop.splitlines() if line.startswith("MimeType=")
         for t in line.split("=", 1)[1].split(";") if t.startswith("video/")]
subprocess.run(["xdg-mime", "default", "vlc.desktop", *types], check=True, timeout=30)
'''

# GIMP's Tab key (Windows > Hide Docks) in its window; quitting GIMP writes the setting to sessionrc
GIMP_HIDE_DOCKS = POLL + '''
focus("GNU Image Manipulation Program")
pyautogui.press("tab")
quit_app("GNU Image Manipulation Program")
rc = os.path.expanduser("~/.config/GIMP/2.10/sessionrc")
if "(hide-docks yes)" not in open(rc).read():
    raise AssertionError("GIMP did not save hidden docks")
'''

# Impress's View menu from the keyboard, as the task's setup closed the pane: F10 opens the File menu, Right twice the
# View menu (each menu is a window of its own, "LibreOffice 7.4"), 11 items down is Slide Pane; then wait until the
# accessibility tree shows the pane ("Slides View")
IMPRESS_SLIDE_PANE = POLL + '''
def menu():
    found = windows("^LibreOffice [0-9.]+$")
    return found[0] if found else None
focus("LibreOffice Impress")
pyautogui.press("f10")
poll(menu, "the File menu")
for _ in range(2):
    before = menu()
    pyautogui.press("right")
    poll(lambda: menu() not in (None, before), "the next menu")
pyautogui.press("down", presses=11, interval=0.05)
pyautogui.press("enter")
import pyatspi
def slides_view(node, depth=0):
    if node is None or depth > 40:
        return False
    if node.getRoleName() == "document frame" and node.name == "Slides View":
        return True
    return any(slides_view(node.getChildAtIndex(i), depth + 1) for i in range(node.childCount))
def shown():
    desktop = pyatspi.Registry.getDesktop(0)
    return any(app is not None and app.name.startswith("soffice") and slides_view(app) for app in desktop)
poll(shown, "the slide pane")
'''

# LibreOffice's settings: AutoRecovery every 3 minutes (Tools > Options > Load/Save > General), written into its
# registrymodifications.xcu after LibreOffice has quit
IMPRESS_AUTOSAVE_3_MIN = '''
import pathlib
xcu = pathlib.Path.home() / ".config/libreoffice/4/user/registrymodifications.xcu"
items = [("/org.openoffice.Office.Common/Save/Document", "AutoSave", "true"),
         ("/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall", "3"),
         ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "true"),
         ("/org.openoffice.Office.Recovery/AutoSave", "TimeIntervall", "3")]
text = xcu.read_text()
if "</oor:items>" not in text:
    raise AssertionError(f"unexpected settings file: {text[-200:]!r}")
new = "".join(f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>\\n'
              for path, name, value in items)
xcu.write_text(text.replace("</oor:items>", new + "</oor:items>"))
'''

# Ctrl+Shift+T reopens the last closed tab; wait until Chrome lists it (its remote-debugging port)
CHROME_REOPEN_TAB = POLL + '''
import json, urllib.request
def tab_urls():
    with urllib.request.urlopen("http://localhost:1337/json/list", timeout=5) as reply:
        return [tab["url"] for tab in json.load(reply) if tab.get("type") == "page"]
focus("Chromium")
pyautogui.hotkey("ctrl", "shift", "t")
poll(lambda: any("tripadvisor" in url for url in tab_urls()), "the reopened tab")
'''

# Ctrl+D bookmarks the page shown (into "Other bookmarks") and opens the bookmark bubble. Once Chrome has saved the
# bookmark: Tab to the bubble's Folder list, Space opens it (a new window), Down to "Bookmarks bar", Enter; Esc closes
# the bubble, which moves the bookmark; wait until Chrome has saved it there
CHROME_BOOKMARK_PAGE = POLL + '''
import json
url = "https://jalammar.github.io/illustrated-transformer/"
path = os.path.expanduser("~/.config/google-chrome/Default/Bookmarks")
def saved_in(folder):
    try:
        with open(path) as file:
            roots = json.load(file)["roots"]
    except (OSError, ValueError):
        return False
    return any(child.get("url") == url for child in roots[folder]["children"])
focus("Chromium")
pyautogui.hotkey("ctrl", "d")
poll(lambda: saved_in("other"), "the bookmark")
before = set(windows(""))
pyautogui.press("tab")
pyautogui.press("space")
poll(lambda: set(windows("")) - before, "the folder list to open")
pyautogui.press("down")
pyautogui.press("enter")
poll(lambda: not set(windows("")) - before, "the folder list to close")
pyautogui.press("esc")
poll(lambda: saved_in("bookmark_bar") and not saved_in("other"), "the bookmark to move to the bookmarks bar")
'''

# gnome-terminal's default profile at 132 columns x 43 rows; the grader opens a terminal with Ctrl+Alt+T and types
# `stty size` (so the binding and a terminal that keeps its profile's size are what this task tests)
TERMINAL_132X43 = '''
import subprocess
profile = subprocess.run(["gsettings", "get", "org.gnome.Terminal.ProfilesList", "default"], capture_output=True,
                         text=True, check=True, timeout=30).stdout.strip().strip("'")
path = f"org.gnome.Terminal.Legacy.Profile:/org/gnome/terminal/legacy/profiles:/:{profile}/"
for key, value in (("default-size-columns", "132"), ("default-size-rows", "43")):
    subprocess.run(["gsettings", "set", path, key, value], check=True, timeout=30)
'''

SOLUTIONS = [
    # os: the settings the task asks about, with gsettings
    ("os/a4d98375-215b-4a4d-aee9-3d4370fccc41", [gsettings("org.gnome.desktop.screensaver", "lock-enabled", "true")]),
    ("os/f9be0997-4b7c-45c5-b05c-4612b44a6118", [gsettings("org.gnome.desktop.notifications", "show-banners",
                                                           "false")]),
    ("os/bedcedc4-4d72-425e-ad62-21960b11fe0d", [gsettings("org.gnome.desktop.session", "idle-delay", "0")]),
    ("os/13584542-872b-42d8-b299-866967b5c3ef", [TERMINAL_132X43]),
    ("os/3ce045a0-877b-42aa-8d2c-b4a863336ab8", [gsettings("org.gnome.desktop.interface", "text-scaling-factor",
                                                           "1.5")]),
    # multi_apps: VLC as the default app of every video type (xdg-mime)
    ("multi_apps/937087b6-f668-4ba6-9110-60682ee33441", [VLC_FOR_VIDEOS]),
    # vlc: quit VLC, then set the option in its vlcrc
    ("vlc/9195653c-f4aa-453d-aa95-787f6ccfaae9", [QUIT_VLC, vlcrc("qt-max-volume", "200")]),
    ("vlc/215dfd39-f493-4bc3-a027-8a97d72c61bf", [QUIT_VLC, vlcrc("qt-bgcone", "0")]),
    ("vlc/a5bbbcd5-b398-4c91-83d4-55e1e31bbb81", [QUIT_VLC, vlcrc("qt-minimal-view", "1")]),
    ("vlc/5ac2891a-eacd-4954-b339-98abba077adb", [QUIT_VLC, vlcrc("play-and-exit", "0")]),
    ("vlc/8ba5ae7a-5ae5-4eab-9fcc-5dd4fe3abf89", [QUIT_VLC, vlcrc("input-record-path", "/home/user/Desktop")]),
    ("vlc/d06f0d4d-2cd5-4ede-8de9-598629438c6e", [QUIT_VLC, vlcrc("qt-slider-colours",
                                                                  "30;30;30;20;20;20;40;40;40;10;10;10")]),
    ("vlc/f3977615-2b45-4ac5-8bba-80c17dbe2a37", [QUIT_VLC, vlcrc("one-instance-when-started-from-file", "0")]),
    # gimp: Tab hides the docks; the others quit GIMP and set the option in its gimprc
    ("gimp/d52d6308-ec58-42b7-a2c9-de80e4837b2b", [GIMP_HIDE_DOCKS]),
    ("gimp/7b7617bd-57cc-468e-9c91-40c4ec2bcb3d", [QUIT_GIMP, gimprc("undo-levels", "100")]),
    ("gimp/7767eef2-56a3-4cea-8c9f-48c070c7d65b", [QUIT_GIMP, gimprc("theme", '"Light"')]),
    # libreoffice_impress: View > Slide Pane from the keyboard; AutoRecovery every 3 min in LibreOffice's settings
    ("libreoffice_impress/ef9d12bd-bcee-4ba0-a40e-918400f43ddf", [IMPRESS_SLIDE_PANE]),
    ("libreoffice_impress/2cd43775-7085-45d8-89fa-9e35c0a915cf", [QUIT_IMPRESS, IMPRESS_AUTOSAVE_3_MIN]),
    # chrome: keys alone
    ("chrome/06fe7178-4491-4589-810f-2e2bc9502122", [CHROME_REOPEN_TAB]),
    ("chrome/7a5a7856-f1b6-42a4-ade9-1ca81ca0f263", [CHROME_BOOKMARK_PAGE]),
]
"""(task path under the examples folder without ``.json``, the solution's actions before ``DONE``)."""


@pytest.fixture(scope="module")
def provider(local_provider):
    if not OSWORLD_EXAMPLES.is_dir():
        pytest.skip(f"no OSWorld tasks at {OSWORLD_EXAMPLES}")
    return local_provider


def play(env, actions: list[str]) -> dict:
    """Reset, play the actions (each must run without an error), then DONE: the last info."""
    env.reset()
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        assert info["action_error"] is None, info["action_error"]
        assert not (terminated or truncated), info
    _, reward, terminated, _, info = env.step("DONE")
    assert terminated and info["evaluation_error"] is None, info
    assert reward == info["score"]
    return info


@pytest.mark.desktop
@pytest.mark.parametrize(("path", "actions"), SOLUTIONS, ids=[path.split("-")[0] for path, _ in SOLUTIONS])
def test_no_op_scores_zero_and_solution_one(provider, path, actions):
    import gymnasium as gym

    import rla_envs  # noqa: F401  (registers rla/OSWorld-v0)
    from rla_envs.desktop.osworld.runnable import not_runnable_reasons
    from rla_envs.desktop.osworld.tasks import load_task, osworld_json

    task = load_task(OSWORLD_EXAMPLES / f"{path}.json")
    raw = osworld_json(task)
    assert raw["evaluator"]["func"] != "infeasible"
    assert not_runnable_reasons(raw, has_app=provider.has_app) == []
    env = gym.make("rla/OSWorld-v0", tasks=[task], provider=provider, accessibility_tree=False)
    try:
        assert play(env, [])["score"] == 0.0
        assert play(env, actions)["score"] == 1.0
    finally:
        env.close()
