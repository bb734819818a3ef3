"""The controller's HTTP API: OSWorld's routes and payloads plus ``/rla/*``, every one behind the token.

Every route is bounded in time: commands, window waits and agents' actions by a timeout (the caller's, at
most the route's ceiling), the rest by what it does (a screenshot, a file). Agents' pyautogui code runs in
a worker process (:mod:`controller.action_runner`), never here, so ``/rla/reset`` can always take the
desktop back from it.
"""

from __future__ import annotations

import hmac
import logging
import os
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response

from controller import a11y, windows
from controller.action_runner import ActionRunner
from controller.home import HomeTemplate
from controller.ipc import SysvIpc
from controller.openers import describe_openers, opener_for
from controller.processes import CommandError, ProcessTracker, normalise_command
from controller.quiesce import quiesce
from controller.scratch import ScratchDirs
from controller.screen import Screen
from controller.xserver import XServerState, window_owner_pids

__all__ = ["State", "create_app"]

logger = logging.getLogger(__name__)

EXECUTE_TIMEOUT_S = 110.0  # under the client's 120 s, so a slow command gets this server's clear reply
OPEN_FILE_TIMEOUT_S = 50.0
ACTIVATE_WAIT_S = 10.0  # activate_window: how long an app launched by the step before has to map its window
ACTION_TIMEOUT_S = 60.0
"""An action's time bound when the request names none."""
MAX_TIMEOUT_S = 600.0
"""The longest any route waits, whatever the request asks."""
GUI_LOCK_TIMEOUT_S = 5.0


@dataclass
class State:
    """Everything the routes use: the session's environment, processes, home template and screen."""

    env: dict[str, str]
    home: Path
    tracker: ProcessTracker
    template: HomeTemplate
    screen: Screen
    token: str
    actions: ActionRunner
    scratch: ScratchDirs | None = None
    """The writable folders' entries at boot outside the home (None: a reset leaves /tmp as it is)."""
    ipc: SysvIpc | None = None
    """The System V IPC objects at boot (None: a reset leaves them as they are)."""
    xserver: XServerState | None = None
    """The X server's settings at boot (None: a reset leaves them as they are)."""
    setup_processes: frozenset[tuple[int, int]] | None = None
    """``(pid, start time)`` of the apps running when the episode's first action arrived (those the task's setup
    started); None until then."""


def _expand(path: str, home: Path) -> Path:
    if path == "~" or path.startswith("~/"):
        path = str(home) + path[1:]
    return Path(os.path.expandvars(path))


def _release_input(size: tuple[int, int]) -> None:
    """Let go of every key and button an episode may have left held, and park the pointer mid-screen."""
    import pyautogui

    for key in ("shift", "shiftright", "ctrl", "ctrlright", "alt", "altright", "winleft", "winright"):
        pyautogui.keyUp(key)
    for button in ("left", "middle", "right"):
        pyautogui.mouseUp(button=button)
    pyautogui.moveTo(size[0] // 2, size[1] // 2)


def _timeout(data: dict, key: str, default: float) -> float:
    """``data[key]`` as seconds within (0, MAX_TIMEOUT_S], ``default`` when absent; CommandError when not a number."""
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise CommandError(f"expected {key!r} to be a positive number of seconds; got {value!r:.40}")
    return min(float(value), MAX_TIMEOUT_S)


def _json_body(data: Any) -> dict:
    if not isinstance(data, dict):
        raise CommandError(f"expected a JSON object body; got {type(data).__name__}")
    return data


def create_app(state: State) -> FastAPI:
    """The FastAPI app serving ``state``'s session."""
    app = FastAPI(title="rla desktop controller", docs_url=None, redoc_url=None, openapi_url=None)
    expected = f"Bearer {state.token}".encode()
    gui_lock = threading.Lock()          # the controller's own pyautogui calls (Xlib is not thread-safe)
    a11y_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="a11y")  # libatspi on one thread

    @app.middleware("http")
    async def require_token(request: Request, call_next):
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return JSONResponse({"status": "error", "message": "missing or wrong session token: send "
                                 "'Authorization: Bearer <token>' (the session's RLA_DESKTOP_TOKEN)"}, status_code=401)
        return await call_next(request)

    @app.exception_handler(CommandError)
    async def bad_command(request: Request, exc: CommandError):
        return JSONResponse({"status": "error", "message": str(exc)}, status_code=400)

    # ------------------------------------------------------------------ observation
    @app.get("/screenshot")
    def screenshot():
        cursor = None
        try:
            import pyautogui  # the runtime's, imported on the first screenshot (it connects to the display)

            cursor = tuple(pyautogui.position())
        except Exception as exc:  # no pointer to read (pyautogui/Xlib errors vary): the PNG is drawn without a cursor
            logger.debug("screenshot without the cursor: %s: %s", type(exc).__name__, exc)
        return Response(state.screen.grab_png(cursor), media_type="image/png")

    @app.get("/rla/screenshot.raw")
    def screenshot_raw():
        data, width, height = state.screen.grab_rgb()
        return Response(data, media_type="application/octet-stream",
                        headers={"X-Width": str(width), "X-Height": str(height)})

    @app.get("/accessibility")
    def accessibility():
        try:
            return {"AT": a11y_thread.submit(a11y.accessibility_tree).result(timeout=60)}
        except Exception as exc:
            return JSONResponse({"status": "error", "message": f"reading the accessibility tree failed: {exc}"},
                                status_code=500)

    @app.post("/screen_size")
    def screen_size():
        width, height = state.screen.size()
        return {"width": width, "height": height}

    @app.get("/cursor_position")
    def cursor_position():
        import pyautogui

        if not gui_lock.acquire(timeout=GUI_LOCK_TIMEOUT_S):
            return JSONResponse({"status": "error", "message": "the pointer is busy (a reset is letting go of "
                                 "held keys); ask again"}, status_code=503)
        try:
            x, y = pyautogui.position()
        finally:
            gui_lock.release()
        return [int(x), int(y)]

    @app.get("/platform")
    def platform():
        return PlainTextResponse("Linux")

    # ------------------------------------------------------------------ commands
    def run_command(data: dict, confine: bool):
        data = _json_body(data)
        shell = bool(data.get("shell", False))
        command = normalise_command(data.get("command"), shell, str(state.home))
        timeout = _timeout(data, "timeout", EXECUTE_TIMEOUT_S)
        try:
            return state.tracker.execute(command, shell=shell, timeout=timeout, confine=confine)
        except subprocess.TimeoutExpired:
            return JSONResponse({"status": "error", "message": f"the command did not finish within {timeout:g} s "
                                 f"and was killed: {command!r}", "output": "", "error": "", "returncode": -1},
                                status_code=500)
        except OSError as exc:
            return JSONResponse({"status": "error", "message": f"cannot run {command!r}: {exc}", "output": "",
                                 "error": str(exc), "returncode": -1}, status_code=500)

    # OSWorld's two paths take the same payload and give the same reply. The evaluator's commands (/execute) run
    # outside any Landlock domain, the task's setup steps each in one of their own (controller/domain.py), so nothing
    # a setup step starts and the agent then drives can trace what the evaluator runs.
    @app.post("/execute")
    def execute(data: dict):
        return run_command(data, confine=False)

    @app.post("/setup/execute")
    def setup_execute(data: dict):
        return run_command(data, confine=True)

    @app.post("/setup/launch")
    def launch(data: dict):
        data = _json_body(data)
        shell = bool(data.get("shell", False))
        command = normalise_command(data.get("command"), shell, str(state.home))
        try:
            state.tracker.launch(command, shell=shell, confine=True)
        except OSError as exc:
            return JSONResponse({"status": "error", "message": f"cannot launch {command!r}: {exc}"}, status_code=500)
        return PlainTextResponse(f"{command if shell else ' '.join(command)} launched successfully")

    @app.post("/rla/pyautogui")
    def run_pyautogui(data: dict):
        data = _json_body(data)
        code = data.get("code")
        if not isinstance(code, str):
            raise CommandError(f"expected 'code' to be a string of Python; got {code!r:.80}")
        if state.setup_processes is None:  # the episode's first action: what runs now, the task's setup started
            state.setup_processes = frozenset(state.tracker.running_apps(spare={state.actions.pid} - {None}))
        return state.actions.run(code, _timeout(data, "timeout", ACTION_TIMEOUT_S))

    @app.post("/rla/stop_agent_processes")
    def stop_agent_processes():
        """The episode is over: end the agent's action worker and kill the processes it left that own no window
        (:mod:`controller.quiesce`); ``stopped`` in the reply lists them."""
        state.actions.end_episode()
        if state.setup_processes is None:  # no action ran: nothing of the agent's runs
            return {"status": "success", "stopped": [], "window_owners": []}
        owners = window_owner_pids(state.env.get("DISPLAY"))
        stopped = quiesce(state.tracker.descendants, core=state.tracker.core, setup=state.setup_processes,
                          owners=owners)
        return {"status": "success", "stopped": stopped, "window_owners": sorted(owners)}

    @app.post("/rla/reset")
    def reset():
        started = time.monotonic()
        state.setup_processes = None
        state.actions.reset()  # first: a wedged action must not hold the desktop
        problems = state.tracker.core_problems()  # wakes a core process the episode stopped
        killed = state.tracker.kill_apps(spare={state.actions.pid} - {None})
        if state.scratch is not None:  # the apps are gone: nothing writes there any more
            cleared = state.scratch.clear()
            problems += [f"{path} (made at boot) is gone" for path in cleared.missing]
            problems += [f"{path} (left by the episode) cannot be removed" for path in cleared.left]
        if state.ipc is not None:
            state.ipc.clear()
        problems += [f"{path} (left in the home) cannot be removed" for path in state.template.restore()]
        if state.xserver is not None:
            try:
                state.xserver.restore(keep_pids=state.tracker.core_pids())
            except Exception as exc:  # an X error or a vanished device: the settings are unknown, so start afresh
                logger.exception("restoring the X server's settings failed")
                problems.append(f"the X server's settings could not be restored ({type(exc).__name__}: {exc})")
        if gui_lock.acquire(timeout=GUI_LOCK_TIMEOUT_S):
            try:
                _release_input(state.screen.size())
            finally:
                gui_lock.release()
        state.actions.start()
        if problems:  # the episode broke what a reset cannot make again: the provider starts a fresh session
            return JSONResponse({"status": "error", "message": "the session cannot be restored: "
                                 + "; ".join(problems[:10]), "problems": problems}, status_code=500)
        return {"status": "success", "killed": killed, "seconds": round(time.monotonic() - started, 3)}

    # ------------------------------------------------------------------ files
    @app.post("/file")
    def get_file(file_path: str = Form(...)):
        path = _expand(file_path, state.home)
        if not path.is_file():
            return JSONResponse({"error": f"File not found: {file_path}"}, status_code=404)
        return FileResponse(path, media_type="application/octet-stream", filename=path.name)

    @app.post("/setup/upload")
    def upload(file_path: str = Form(...), file_data: UploadFile = File(...)):
        path = _expand(file_path, state.home)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            data = file_data.file.read()
            path.write_bytes(data)
        except OSError as exc:
            return JSONResponse({"error": f"Failed to upload file to {file_path}: {exc}"}, status_code=500)
        return PlainTextResponse(f"File Uploaded: {len(data)} bytes")

    @app.post("/setup/open_file")
    def open_file(data: dict):
        data = _json_body(data)
        raw = data.get("path")
        if not isinstance(raw, str) or not raw:
            return PlainTextResponse("Path not supplied!", status_code=400)
        timeout = _timeout(data, "timeout_seconds", OPEN_FILE_TIMEOUT_S)
        path = _expand(raw, state.home)
        if path.exists():
            command = opener_for(path)
            if command is None:
                return PlainTextResponse(f"No installed app of this session opens {raw}; the apps and their "
                                         f"extensions: {describe_openers()}", status_code=400)
            names = [data["window_name"]] if data.get("window_name") else [path.name, path.stem]
        else:
            import shutil

            if not shutil.which(raw, path=state.env.get("PATH")):
                return PlainTextResponse(f"Application/file not found: {raw}", status_code=404)
            command, names = [raw], [data.get("window_name") or raw]
        state.tracker.launch(command, confine=True)
        window = windows.wait_for_window(state.env, names, timeout)
        if window is None:
            return PlainTextResponse(f"Failed to find a window titled like {names} within {timeout:g} s after "
                                     f"running {command}", status_code=500)
        windows.activate(state.env, window)
        return PlainTextResponse("File opened and window activated successfully")

    def on_window(data: dict, act, done: str, *, wait: float = 0.0):
        """Apply ``act`` to the first window the request names, waiting up to ``wait`` s for one (404: none came)."""
        data = _json_body(data)
        name = data.get("window_name")
        if not isinstance(name, str) or not name:
            raise CommandError(f"expected a non-empty 'window_name'; got {name!r}")
        found = windows.find_windows(state.env, name, strict=bool(data.get("strict", False)),
                                     by_class=bool(data.get("by_class", False)), wait=wait)
        if not found:
            return PlainTextResponse(f"Window {name} not found", status_code=404)
        act(state.env, found[0])
        return PlainTextResponse(done)

    @app.post("/setup/activate_window")
    def activate_window(data: dict):
        # OSWorld's tasks launch an app and activate its window in the next step: give the app time to map it
        return on_window(data, windows.activate, "Window activated successfully", wait=ACTIVATE_WAIT_S)

    @app.post("/setup/close_window")
    def close_window(data: dict):
        return on_window(data, windows.close, "Window closed successfully.")

    return app
