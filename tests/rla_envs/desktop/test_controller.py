"""The controller's HTTP API against a real local desktop (Xvfb, openbox, AT-SPI, mousepad, xterm)."""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest

from tests.rla_envs.desktop.conftest import wait_until

pytestmark = pytest.mark.desktop

# Every route the controller serves (OSWorld's and ours), plus one it does not: all must refuse a request
# without the session's token, before looking at the payload.
ROUTES = [
    ("GET", "/screenshot"), ("GET", "/accessibility"), ("POST", "/execute"), ("POST", "/file"),
    ("POST", "/screen_size"), ("GET", "/cursor_position"), ("GET", "/platform"), ("POST", "/setup/launch"),
    ("POST", "/setup/execute"), ("POST", "/setup/open_file"), ("POST", "/setup/upload"),
    ("POST", "/setup/activate_window"), ("POST", "/setup/close_window"), ("POST", "/rla/pyautogui"),
    ("GET", "/rla/screenshot.raw"), ("POST", "/rla/reset"), ("GET", "/no/such/route"),
]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-token"}, {"Authorization": ""}],
                         ids=["no-token", "wrong-token", "empty"])
def test_every_route_refuses_a_request_without_the_token(local_provider, headers):
    local_provider.start()
    transport = httpx.HTTPTransport(uds=str(local_provider.session.socket_path))
    with httpx.Client(base_url="http://rla-desktop", transport=transport, timeout=30) as http:
        for method, path in ROUTES:
            response = http.request(method, path, headers=headers, json={"command": "touch /tmp/pwned"})
            assert response.status_code == 401, (method, path, response.status_code, response.text[:200])
        # the same request with the token goes through, so the 401s above were the token's doing
        good = {"Authorization": f"Bearer {local_provider.session.token}"}
        assert http.get("/platform", headers=good).status_code == 200
        assert http.post("/file", headers=good, data={"file_path": "/tmp/pwned"}).status_code == 404


def test_platform_screen_size_and_cursor(desktop_client):
    assert desktop_client.platform() == "Linux"
    assert desktop_client.screen_size() == (1920, 1080)
    desktop_client.run_pyautogui("pyautogui.moveTo(321, 234)")
    assert desktop_client.cursor_position() == (321, 234)
    # agents' code may take its own screenshots
    reply = desktop_client.run_pyautogui("assert pyautogui.screenshot().size == tuple(pyautogui.size()) "
                                         "== (1920, 1080)")
    assert reply == {"status": "success", "error": ""}


def test_execute_returns_output_error_and_return_code(desktop_client):
    reply = desktop_client.execute("echo out; echo err >&2; exit 3", shell=True)
    assert reply == {"status": "success", "output": "out\n", "error": "err\n", "returncode": 3}
    reply = desktop_client.execute(["python3", "-c", "import os, sys; print(os.environ['HOME'], sys.argv[1:])",
                                    "~/x"])
    assert reply["returncode"] == 0
    assert reply["output"] == "/home/user ['/home/user/x']\n"   # OSWorld expands ~/ in list commands
    assert desktop_client.setup_execute("pwd", shell=True)["output"] == "/home/user\n"


def test_execute_of_a_command_that_leaves_a_background_process_returns(desktop_client):
    reply = desktop_client.execute("sleep 300 > /dev/null 2>&1 & echo started", shell=True, timeout=20)
    assert reply["output"] == "started\n"


def test_execute_of_a_missing_program_is_an_error_reply(desktop_client):
    from rla_envs.desktop.client import ControllerError

    with pytest.raises(ControllerError, match="no-such-program"):
        desktop_client.execute(["no-such-program-xyz"])


def test_python_in_the_session_is_the_runtime_with_pyautogui(desktop_client):
    reply = desktop_client.execute(["python", "-c", "import pyautogui; print(pyautogui.size())"])
    assert reply["returncode"] == 0, reply["error"]
    assert "1920" in reply["output"] and "1080" in reply["output"]


def test_upload_and_file_round_trip(desktop_client):
    data = bytes(range(256)) * 100
    desktop_client.upload("/home/user/deep/er/blob.bin", data)
    assert desktop_client.get_file("/home/user/deep/er/blob.bin") == data
    assert desktop_client.get_file("~/deep/er/blob.bin") == data
    assert desktop_client.get_file("/home/user/not-there.txt") is None


def test_screenshot_matches_the_screen_and_changes_when_something_is_drawn(desktop_client):
    width, height = desktop_client.screen_size()
    before = desktop_client.screenshot_array()
    assert before.shape == (height, width, 3) and before.dtype == np.uint8
    png = desktop_client.screenshot()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    desktop_client.launch(["xterm", "-T", "rla-drawing", "-bg", "red"])
    changed = wait_until(lambda: not np.array_equal(desktop_client.screenshot_array(), before))
    assert changed, "the screen did not change after a red xterm window was opened"


def test_open_file_type_save_and_read_back(desktop_client):
    desktop_client.upload("/home/user/notes.txt", b"first line\n")
    desktop_client.open_file("/home/user/notes.txt")
    before = desktop_client.screenshot_array()
    reply = desktop_client.run_pyautogui(
        "pyautogui.hotkey('ctrl', 'end'); pyautogui.write('typed by rla'); pyautogui.hotkey('ctrl', 's')")
    assert reply == {"status": "success", "error": ""}
    saved = wait_until(lambda: desktop_client.get_file("/home/user/notes.txt") == b"first line\ntyped by rla")
    assert saved, desktop_client.get_file("/home/user/notes.txt")
    # the window repaints after the keys it got (the file shows them already): wait for the screen, not a time
    assert wait_until(lambda: not np.array_equal(desktop_client.screenshot_array(), before)), "the screen never changed"


def test_open_file_of_a_missing_path_is_refused(desktop_client):
    from rla_envs.desktop.client import ControllerError

    with pytest.raises(ControllerError, match="404"):
        desktop_client.open_file("/home/user/no-such-file.txt")
    desktop_client.upload("/home/user/archive.xyz", b"no app opens this")
    with pytest.raises(ControllerError, match="400.*No installed app of this session opens"):
        desktop_client.open_file("/home/user/archive.xyz")


def test_pyautogui_errors_are_replies_not_exceptions(desktop_client):
    reply = desktop_client.run_pyautogui("raise ValueError('boom')")
    assert reply["status"] == "error" and "boom" in reply["error"]
    assert desktop_client.run_pyautogui("this is not python")["status"] == "error"
    assert desktop_client.run_pyautogui("import sys; sys.exit(1)")["status"] == "error"
    assert desktop_client.platform() == "Linux"  # the server is still up


def test_accessibility_tree_shows_the_mousepad_window(desktop_client):
    import xml.etree.ElementTree as ET

    desktop_client.upload("/home/user/a11y-probe.txt", b"accessible text\n")
    desktop_client.open_file("/home/user/a11y-probe.txt")
    tree = wait_until(lambda: "a11y-probe.txt" in (xml := desktop_client.accessibility_tree()) and xml)
    assert tree, "the mousepad window never appeared in the accessibility tree"
    root = ET.fromstring(tree)
    assert root.tag == "desktop-frame"
    apps = [app for app in root if app.tag == "application" and app.get("name") == "mousepad"]
    assert apps, [app.get("name") for app in root]
    frames = [node for node in apps[0].iter("frame") if "a11y-probe.txt" in node.get("name", "")]
    assert frames
    state_ns = "https://accessibility.ubuntu.example.org/ns/state"
    component_ns = "https://accessibility.ubuntu.example.org/ns/component"
    assert frames[0].get(f"{{{state_ns}}}showing") == "true"
    assert frames[0].get(f"{{{component_ns}}}size") == "(1920, 1080)"   # apps open maximized
    assert any("accessible text" in (node.text or "") for node in apps[0].iter())


def _window_titles(client) -> str:
    return client.execute(["wmctrl", "-l"])["output"]


def _active_window_title(client) -> str:
    return client.execute(["xdotool", "getactivewindow", "getwindowname"])["output"].strip()


def test_activate_and_close_windows(desktop_client):
    from rla_envs.desktop.client import ControllerError

    desktop_client.launch(["xterm", "-T", "rla-first-term"])
    desktop_client.launch("xterm -T rla-second-term", shell=True)
    assert wait_until(lambda: "rla-first-term" in (titles := _window_titles(desktop_client))
                      and "rla-second-term" in titles)
    desktop_client.activate_window("rla-first-term", strict=True)
    assert wait_until(lambda: _active_window_title(desktop_client) == "rla-first-term")
    desktop_client.activate_window("RLA-SECOND")            # not strict: case-insensitive substring
    assert wait_until(lambda: _active_window_title(desktop_client) == "rla-second-term")
    desktop_client.activate_window("xterm", by_class=True)  # by WM_CLASS
    desktop_client.close_window("rla-first-term")
    assert wait_until(lambda: "rla-first-term" not in _window_titles(desktop_client))
    assert "rla-second-term" in _window_titles(desktop_client)
    with pytest.raises(ControllerError, match="404"):
        desktop_client.activate_window("no-such-window-anywhere")
    with pytest.raises(ControllerError, match="404"):
        desktop_client.close_window("rla-first-term", strict=True)


def _cells(tree: str) -> dict[str, object]:
    import xml.etree.ElementTree as ET

    return {cell.get("name"): cell for cell in ET.fromstring(tree).iter("table-cell")}


_COMPONENT_NS = "https://accessibility.ubuntu.example.org/ns/component"
_STATE_NS = "https://accessibility.ubuntu.example.org/ns/state"


def _box(cell) -> tuple[int, int, int, int] | None:
    """A cell's ``(x, y, width, height)`` on screen as the tree gives it (None without a position)."""
    import ast

    position, size = cell.get(f"{{{_COMPONENT_NS}}}screencoord"), cell.get(f"{{{_COMPONENT_NS}}}size")
    return (*ast.literal_eval(position), *ast.literal_eval(size)) if position and size else None


def _settled_box(client, name: str, reads: int = 4) -> tuple[int, int, int, int] | None:
    """Cell ``name``'s box once ``reads`` trees in a row, a quarter second apart, give the same one (None if it
    never settles). A document that has just opened is still being laid out: Calc's menu bar can appear after its
    cells are listed and move them down by its height (measured beside two busy loops: C7 at y 275, then 1.5 s
    later at 300)."""
    boxes = []

    def settled():
        time.sleep(0.25)
        cell = _cells(client.accessibility_tree()).get(name)
        boxes.append(None if cell is None else _box(cell))
        return len(boxes) >= reads and boxes[-1] is not None and len(set(boxes[-reads:])) == 1 and boxes[-1]

    return wait_until(settled, timeout=60) or None


def test_accessibility_tree_of_a_spreadsheet_lists_the_cells_on_screen_where_they_are(desktop_client):
    import io

    openpyxl = pytest.importorskip("openpyxl")
    workbook = openpyxl.Workbook()
    for row in range(1, 11):
        for column in range(1, 5):
            workbook.active.cell(row, column, row * 10 + column)
    buffer = io.BytesIO()
    workbook.save(buffer)
    desktop_client.upload("/home/user/grid.xlsx", buffer.getvalue())
    desktop_client.open_file("/home/user/grid.xlsx")
    cells = wait_until(lambda: "B2" in (found := _cells(desktop_client.accessibility_tree())) and found, timeout=30)
    assert cells, "no spreadsheet cells in the accessibility tree"
    assert cells["B2"].text == "22" and cells["D10"].text == "104" and not cells["E1"].text
    box = _settled_box(desktop_client, "C7")
    assert box, "C7's position never settled"
    x, y, width, height = box
    assert width > 10 and height > 5
    # the coordinates are where the cell is: clicking there selects C7
    desktop_client.run_pyautogui(f"pyautogui.click({x + width // 2}, {y + height // 2})")

    def focused_cell():
        return next((name for name, cell in _cells(desktop_client.accessibility_tree()).items()
                     if cell.get(f"{{{_STATE_NS}}}focused") == "true"), None)

    focused = wait_until(lambda: focused_cell() == "C7" and "C7", timeout=20) or focused_cell()
    assert focused == "C7", (f"clicked C7 at {box}; focused: {focused}; C7 now at "
                             f"{_box(_cells(desktop_client.accessibility_tree())['C7'])}; active window: "
                             f"{_active_window_title(desktop_client)!r}")
