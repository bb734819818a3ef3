"""The bundled tasks of the apps OSWorld's bigger task groups use: Chrome, Impress, GIMP, Thunderbird and VLC.

Each is started the way OSWorld's own tasks start it (``google-chrome --remote-debugging-port=1337`` behind
``socat`` on 9222, ``open`` of a .pptx/.png/.wav, ``/usr/bin/thunderbird``), and each is checked by reading
what the app leaves behind: Chrome's profile files and DevTools tab list, the saved .pptx's slides, the
exported image's pixels, Thunderbird's ``prefs.js``, VLC's HTTP status. The checks run in the session as
``vm_command_line`` + ``exact_match`` (OSWorld's app-specific getters and metrics can replace them as they land).
"""

from __future__ import annotations

from typing import Any

from rla_envs.desktop.controller.home import THUNDERBIRD_PROFILE
from rla_envs.desktop.tasks.steps import (HOME, SAVE_OFFICE_CODE, download_step, exact_command_eval, make_task,
                                          office_postconfig, open_office_steps, open_step, type_code, wait_window_code)

__all__ = ["tasks"]


def _sleep(seconds: float) -> dict[str, Any]:
    return {"type": "sleep", "parameters": {"seconds": seconds}}


def _wait_for_window(title: str) -> list[dict[str, Any]]:
    """Setup steps: wait until a window titled like ``title`` is mapped, then focus it."""
    return [{"type": "execute", "parameters": {"command": f"wmctrl -l | grep -qF {title!r}", "shell": True,
                                               "until": {"returncode": 0}}},
            {"type": "activate_window", "parameters": {"window_name": title}}]


def _python_line(code: str) -> str:
    """A shell line running ``code`` with the session's python3 (its lines joined with ``;``, no double quotes)."""
    assert '"' not in code, code
    return f'python3 -c "{code}"'


# --------------------------------------------------------------------------- Chrome

_PAGE = f"{HOME}/soup.html"
_PAGE_TITLE = "Recipe: lentil soup"
_CHROME_PREFS = f"{HOME}/.config/google-chrome/Default"


def _chrome_setup(task_id: str) -> list[dict[str, Any]]:
    """OSWorld's Chrome start (its DevTools on 1337, forwarded to 9222 by socat) on a local page."""
    return [download_step(task_id, "soup.html", _PAGE),
            {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337",
                                                          f"file://{_PAGE}"]}},
            {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
            *_wait_for_window(_PAGE_TITLE)]


_SOUP = (f"<!doctype html><html><head><meta charset='utf-8'><title>{_PAGE_TITLE}</title></head><body>"
         "<h1>Lentil soup</h1><ol><li>Soften an onion in oil.</li><li>Add 200 g red lentils and 1 l stock.</li>"
         "<li>Simmer 20 minutes; season.</li></ol></body></html>\n")
_SHOPPING = ("<!doctype html><html><head><meta charset='utf-8'><title>Shopping list</title></head><body>"
             "<ul><li>red lentils</li><li>onions</li><li>stock cubes</li></ul></body></html>\n")
# Every bookmarked URL, in the order of the Bookmarks file (Chrome writes it ~2.5 s after a change).
_BOOKMARKED_URLS = _python_line(
    "import json; roots = json.load(open('" + _CHROME_PREFS + "/Bookmarks'))['roots']; "
    "walk = lambda n: [n['url']] if n.get('type') == 'url' else [u for c in n.get('children', []) for u in walk(c)]; "
    "print([u for r in roots.values() if isinstance(r, dict) for u in walk(r)])")
# The URLs of the open tabs (DevTools' target list on Chrome's own port 1337, as our getters try first: socat's 9222
# only forwards it), sorted, Chrome's own pages left out.
_OPEN_TAB_URLS = _python_line(
    "import json, urllib.request; targets = json.load(urllib.request.urlopen('http://localhost:1337/json')); "
    "print(sorted(t['url'] for t in targets if t['type'] == 'page' and not t['url'].startswith('chrome')))")


def _chrome_tasks() -> list[dict[str, Any]]:
    tid = "rla-chrome-bookmark-page"
    bookmark = [
        make_task(
            tid, "chrome",
            f"Bookmark the page that is open in Chrome ('{_PAGE_TITLE}').",
            _chrome_setup(tid),
            exact_command_eval(_BOOKMARKED_URLS, f"['file://{_PAGE}']\n", postconfig=[_sleep(3.0)]),
            ["pyautogui.hotkey('ctrl', 'd')\ntime.sleep(1.5)", "pyautogui.press('enter')\ntime.sleep(1.0)", "DONE"],
            {"soup.html": _SOUP},
            hints=["Ctrl+D bookmarks the current page; Enter confirms the bubble."])]
    tid = "rla-chrome-open-tab"
    target = f"{HOME}/Documents/shopping.html"
    tab = [
        make_task(
            tid, "chrome",
            f"Keep the recipe open and open the local page file://{target} in a new tab of Chrome.",
            [download_step(tid, "shopping.html", target), *_chrome_setup(tid)],
            exact_command_eval(_OPEN_TAB_URLS, f"{sorted([f'file://{target}', f'file://{_PAGE}'])}\n",
                               postconfig=[_sleep(1.0)]),
            # each step waits for the window title that says the previous key took effect
            ["pyautogui.hotkey('ctrl', 't')\n" + wait_window_code("New Tab - Chromium"),
             # Delete drops an inline autocompletion (the recipe's URL shares the prefix) before Enter
             "pyautogui.hotkey('ctrl', 'l')\ntime.sleep(0.5)\n" + type_code(f"file://{target}") + "\n"
             "time.sleep(0.5)\npyautogui.press('delete')\npyautogui.press('enter')\n"
             + wait_window_code("Shopping list - Chromium"),
             "DONE"],
            {"soup.html": _SOUP, "shopping.html": _SHOPPING},
            hints=["Ctrl+T opens a new tab and Ctrl+L focuses its address bar."])]
    return bookmark + tab


# --------------------------------------------------------------------------- Impress

_DECK = f"{HOME}/review.pptx"
_DECK_TITLE = "review.pptx - LibreOffice Impress"
_SLIDES = [("Quarterly Review", "Draft for the board"), ("Numbers", "Revenue up 4%")]
"""The deck: (title, text) of each slide."""
_SLIDE_COUNT = _python_line(
    "import zipfile, re; names = zipfile.ZipFile('" + _DECK + "').namelist(); "
    "print(sum(bool(re.fullmatch(r'ppt/slides/slide[0-9]+[.]xml', n)) for n in names))")
_FIRST_SLIDE_TEXTS = _python_line(
    "import zipfile, re; xml = zipfile.ZipFile('" + _DECK + "').read('ppt/slides/slide1.xml').decode(); "
    "print(re.findall('<a:t>([^<]*)</a:t>', xml))")


def _impress_tasks() -> list[dict[str, Any]]:
    tid = "rla-impress-add-slide"
    added = make_task(
        tid, "libreoffice_impress",
        f"Add one new slide to the presentation {_DECK} (open in LibreOffice Impress), keeping its slides, "
        f"and save it in its current format.",
        [download_step(tid, "review.pptx", _DECK), *open_office_steps(_DECK, _DECK_TITLE)],
        exact_command_eval(_SLIDE_COUNT, f"{len(_SLIDES) + 1}\n", postconfig=office_postconfig(_DECK_TITLE)),
        ["pyautogui.hotkey('ctrl', 'm')\ntime.sleep(1.0)", SAVE_OFFICE_CODE, "DONE"],
        {"review.pptx": _SLIDES},
        hints=["Slide > New Slide (Ctrl+M) adds a slide."], related_apps=["libreoffice impress"])
    tid = "rla-impress-retitle"
    old, new = _SLIDES[0][0], "Annual Review"
    find_and_edit = (
        "pyautogui.hotkey('ctrl', 'h')\n" + wait_window_code("Find and Replace")
        + type_code(old) + "\npyautogui.press('enter')\ntime.sleep(1.0)\n"   # Find Next: selects the title
        "pyautogui.press('esc')\ntime.sleep(0.5)\n"                             # close the dialog
        "pyautogui.press('f2')\ntime.sleep(1.0)\n"                              # edit the selected text box
        "pyautogui.hotkey('ctrl', 'a')\ntime.sleep(1.0)\n" + type_code(new)
        + "\ntime.sleep(0.3)\npyautogui.press('esc')\npyautogui.press('esc')\ntime.sleep(0.5)")
    retitled = make_task(
        tid, "libreoffice_impress",
        f"In the presentation {_DECK} (open in LibreOffice Impress), change the first slide's title from "
        f"'{old}' to '{new}', change nothing else, and save it in its current format.",
        [download_step(tid, "review.pptx", _DECK), *open_office_steps(_DECK, _DECK_TITLE)],
        exact_command_eval(_FIRST_SLIDE_TEXTS, f"{[new, _SLIDES[0][1]]}\n", postconfig=office_postconfig(_DECK_TITLE)),
        [find_and_edit, SAVE_OFFICE_CODE, "DONE"],
        {"review.pptx": _SLIDES},
        hints=["Find & Replace (Ctrl+H) can select the title; F2 edits the selected text box."],
        related_apps=["libreoffice impress"])
    return [added, retitled]


# --------------------------------------------------------------------------- GIMP

_IMAGE = f"{HOME}/Desktop/swatch.png"
_SWATCH = {"size": [40, 20], "left": [255, 0, 0], "right": [0, 0, 255]}
"""A 40x20 PNG, its left half red and its right half blue."""
# size, then the top-left, top-right and bottom-left pixels of the saved image
_PIXELS = _python_line(
    "from PIL import Image; im = Image.open('" + _IMAGE + "').convert('RGB'); w, h = im.size; "
    "print(im.size, im.getpixel((0, 0)), im.getpixel((w - 1, 0)), im.getpixel((0, h - 1)))")
_RED, _BLUE = "(255, 0, 0)", "(0, 0, 255)"


def _gimp_action(search: str) -> str:
    """Solution code: run the GIMP action whose label or description matches ``search`` ('/' searches actions)."""
    return ("pyautogui.press('/')\n" + wait_window_code("Search Actions") + type_code(search)
            + "\ntime.sleep(1.0)\npyautogui.press('enter')\ntime.sleep(1.0)")


_OVERWRITE = _gimp_action("overwrite") + "\ntime.sleep(2.0)"
"""File > Overwrite swatch.png (the imported file, in its format, without a dialog)."""


def _gimp_tasks() -> list[dict[str, Any]]:
    setup = [open_step(_IMAGE), *_wait_for_window("[swatch]")]
    tid = "rla-gimp-flip"
    flipped = make_task(
        tid, "gimp",
        f"Flip the image {_IMAGE} (open in GIMP) horizontally and overwrite the file with the result.",
        [download_step(tid, "swatch.png", _IMAGE), *setup],
        # flipped: blue on the left, red on the right
        exact_command_eval(_PIXELS, f"(40, 20) {_BLUE} {_RED} {_BLUE}\n"),
        [_gimp_action("flip image horizontally"), _OVERWRITE, "DONE"],
        {"swatch.png": _SWATCH},
        hints=["Image > Transform > Flip Horizontally, then File > Overwrite swatch.png."])
    tid = "rla-gimp-rotate"
    rotated = make_task(
        tid, "gimp",
        f"Rotate the image {_IMAGE} (open in GIMP) by 90 degrees clockwise and overwrite the file with the result.",
        [download_step(tid, "swatch.png", _IMAGE), *setup],
        # 90 degrees clockwise: 20x40, the old left half (red) on top, the old bottom-left corner at the top left
        exact_command_eval(_PIXELS, f"(20, 40) {_RED} {_RED} {_BLUE}\n"),
        [_gimp_action("rotate the image 90 degrees to the right"), _OVERWRITE, "DONE"],
        {"swatch.png": _SWATCH},
        hints=["Image > Transform > Rotate 90° clockwise, then File > Overwrite swatch.png."])
    return [flipped, rotated]


# --------------------------------------------------------------------------- Thunderbird

_PREFS_JS = f"{HOME}/.thunderbird/{THUNDERBIRD_PROFILE}/prefs.js"


def _thunderbird_task(task_id: str, instruction: str, pref: str, value: int, menu_keys: str, hint: str) -> dict:
    """A task: set one display preference from Thunderbird's View menu (checked in prefs.js, which Thunderbird
    writes about a second after the change)."""
    keys = "".join(f"pyautogui.press({key!r})\ntime.sleep(0.5)\n" for key in ["alt", *menu_keys])
    return make_task(
        task_id, "thunderbird", instruction,
        [{"type": "launch", "parameters": {"command": ["/usr/bin/thunderbird"]}},
         *_wait_for_window("Mozilla Thunderbird"), _sleep(2.0)],
        exact_command_eval(f"grep -cF 'user_pref(\"{pref}\", {value});' {_PREFS_JS} || true", "1\n",
                           postconfig=[_sleep(2.0)]),
        [keys + "time.sleep(1.0)", "DONE"],
        {}, hints=[hint])


def _thunderbird_tasks() -> list[dict[str, Any]]:
    return [
        _thunderbird_task("rla-thunderbird-wide-layout", "Switch Thunderbird's mail layout to Wide View.",
                          "mail.pane_config.dynamic", 1, "vlw",
                          "The Layout submenu of the View menu (press Alt to show the menu bar) lists the views."),
        _thunderbird_task("rla-thunderbird-compact-density", "Make Thunderbird's interface density Compact.",
                          "mail.uidensity", 0, "vdc",
                          "The Density submenu of the View menu (press Alt to show the menu bar) sets it."),
    ]


# --------------------------------------------------------------------------- VLC

_AUDIO = f"{HOME}/Music/tone.wav"
_TONE = {"seconds": 60, "rate": 2000}
"""A minute of a mono 8-bit sine tone: still playing when the episode ends."""


def _vlc_status(tag: str) -> str:
    """A shell line printing one field of VLC's HTTP status (OSWorld's password), as its getter reads it."""
    return _python_line(
        "import base64, re, urllib.request as u; "
        "auth = {'Authorization': 'Basic ' + base64.b64encode(b':password').decode()}; "
        "xml = u.urlopen(u.Request('http://localhost:8080/requests/status.xml', headers=auth)).read().decode(); "
        f"print(re.search('<{tag}>([^<]*)</{tag}>', xml).group(1))")


def _vlc_tasks() -> list[dict[str, Any]]:
    def vlc_task(task_id: str, instruction: str, tag: str, value: str, keys: list[str], hint: str) -> dict:
        return make_task(
            task_id, "vlc", instruction,
            [download_step(task_id, "tone.wav", _AUDIO), open_step(_AUDIO), *_wait_for_window("VLC media player")],
            exact_command_eval(_vlc_status(tag), f"{value}\n"),
            ["".join(f"pyautogui.press({key!r})\ntime.sleep(0.5)\n" for key in keys), "DONE"],
            {"tone.wav": _TONE}, hints=[hint])

    return [
        vlc_task("rla-vlc-pause", f"Pause the audio {_AUDIO} that VLC is playing.", "state", "paused", ["space"],
                 "Space pauses and resumes playback."),
        vlc_task("rla-vlc-loop", "Make VLC loop the playlist, so that the audio starts again when it ends.",
                 "loop", "true", ["l"], "L cycles VLC's loop modes (all, one, off)."),
    ]


def tasks() -> list[dict[str, Any]]:
    """The app tasks (see :func:`~rla_envs.desktop.tasks.steps.make_task` for the shape)."""
    return _chrome_tasks() + _impress_tasks() + _gimp_tasks() + _thunderbird_tasks() + _vlc_tasks()
