"""ControllerClient: the host's side of the desktop controller's HTTP API (OSWorld's paths and payloads).

The controller server (:mod:`rla_envs.desktop.controller`) runs inside the desktop session, in a local
process group or in a container; the env, the task setup and the evaluator only ever see a base URL and
this client. Every request carries the session's token (``Authorization: Bearer <token>``); the server
refuses any request without it (HTTP 401).

OSWorld's own paths (same payloads as OSWorld's ``desktop_env/server/main.py``): ``/screenshot``,
``/accessibility``, ``/execute``, ``/file``, ``/screen_size``, ``/cursor_position``, ``/platform``,
``/setup/{launch,execute,open_file,upload,activate_window,close_window}``. Ours, under ``/rla/``: the fast
in-process pyautogui endpoint, a raw RGB screenshot (no PNG encoding), stopping the agent's leftover processes
before scoring, and the session reset.

Example::

    client = ControllerClient("http://127.0.0.1:5000", token="...")
    client.open_file("/home/user/notes.txt")
    client.run_pyautogui("pyautogui.write('hello')")
    pixels = client.screenshot_array()          # uint8 H x W x 3
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rla_envs.core.closing import ClosesOnExit
from rla_envs.core.errors import RlaError

__all__ = ["ControllerClient", "ControllerError", "TOKEN_HEADER"]

TOKEN_HEADER = "Authorization"
"""The header that carries the session token, as ``Bearer <token>``."""
REPLY_MARGIN_S = 30.0
"""Extra seconds a request waits past the time bound it gives the server (start-up of a fresh action process)."""


class ControllerError(RlaError, RuntimeError):
    """The controller answered with an error, or could not be reached."""


Command = str | Sequence[str]


class ControllerClient(ClosesOnExit):
    """Talks to one desktop session's controller server.

    Args:
        base_url: e.g. ``http://127.0.0.1:5000``.
        token: the session's token; sent with every request.
        timeout: seconds per request (setup steps and evaluations that run commands may take longer:
            those methods take their own ``timeout``).
        unix_socket: reach the server through this Unix socket instead (``base_url`` then only names it in
            the ``Host`` header; the local session's controller listens on one).
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, unix_socket: str | None = None):
        import httpx

        self.base_url = base_url.rstrip("/")
        self.where = f"unix:{unix_socket}" if unix_socket else self.base_url
        transport = httpx.HTTPTransport(uds=str(unix_socket)) if unix_socket else None
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport,
                                  headers={TOKEN_HEADER: f"Bearer {token}"})

    # ----------------------------------------------------------------- plumbing
    def _request(self, method: str, path: str, *, timeout: float | None = None, missing_ok: bool = False,
                 **kwargs: Any):
        """The server's response, or ``ControllerError``; with ``missing_ok`` a 404 gives None."""
        import httpx

        try:
            response = self._http.request(method, path, timeout=timeout if timeout is not None else self._http.timeout,
                                          **kwargs)
        except httpx.HTTPError as exc:
            raise ControllerError(f"{method} {self.where}{path} failed: {exc}") from exc
        if missing_ok and response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise ControllerError(f"{method} {self.where}{path} -> HTTP {response.status_code}: "
                                  f"{response.text[:500]}")
        return response

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Block until the server answers ``/platform`` (raise ``ControllerError`` after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                self.platform()
                return
            except ControllerError as exc:
                last = exc
                time.sleep(0.05)
        raise ControllerError(f"the controller at {self.where} did not answer within {timeout:.0f} s: {last}")

    def close(self) -> None:
        http = getattr(self, "_http", None)
        if http is not None:
            http.close()

    # ----------------------------------------------------------------- observation
    def screenshot(self) -> bytes:
        """The screen as PNG bytes (``GET /screenshot``)."""
        return self._request("GET", "/screenshot").content

    def screenshot_array(self) -> np.ndarray:
        """The screen as a uint8 ``H x W x 3`` RGB array (``GET /rla/screenshot.raw``, no PNG step)."""
        response = self._request("GET", "/rla/screenshot.raw")
        width, height = int(response.headers["X-Width"]), int(response.headers["X-Height"])
        return np.frombuffer(response.content, dtype=np.uint8).reshape(height, width, 3)

    def accessibility_tree(self) -> str:
        """The accessibility tree as OSWorld's XML text (``GET /accessibility`` -> ``{"AT": xml}``)."""
        return self._request("GET", "/accessibility", timeout=60.0).json()["AT"]

    def screen_size(self) -> tuple[int, int]:
        """``(width, height)`` of the screen (``POST /screen_size``)."""
        data = self._request("POST", "/screen_size").json()
        return int(data["width"]), int(data["height"])

    def cursor_position(self) -> tuple[int, int]:
        """``(x, y)`` of the mouse pointer (``GET /cursor_position``)."""
        x, y = self._request("GET", "/cursor_position").json()
        return int(x), int(y)

    def platform(self) -> str:
        """The session's OS name, ``"Linux"`` (``GET /platform``)."""
        return self._request("GET", "/platform").text.strip().strip('"')

    # ----------------------------------------------------------------- files and commands
    def get_file(self, path: str) -> bytes | None:
        """The bytes of ``path`` inside the session, or None when it does not exist (``POST /file``)."""
        response = self._request("POST", "/file", data={"file_path": path}, missing_ok=True)
        return None if response is None else response.content

    def execute(self, command: Command, *, shell: bool = False, timeout: float = 120.0) -> dict[str, Any]:
        """Run a command in the session and wait for it (``POST /execute``).

        Returns OSWorld's reply: ``{"status": "success"|"error", "output": str, "error": str, "returncode": int}``.
        """
        return self._request("POST", "/execute", json={"command": command, "shell": shell}, timeout=timeout).json()

    def run_pyautogui(self, code: str, *, timeout: float = 60.0) -> dict[str, Any]:
        """Run pyautogui code in the session's warm action process (``POST /rla/pyautogui``), within ``timeout`` s.

        ``pyautogui`` and ``time`` are in scope. Returns ``{"status": "success"|"error", "error": str}``; an
        exception in the code, code that runs past ``timeout`` (it is stopped) and code that ends its process
        (``os._exit``) are ``"error"`` replies, not raised exceptions.
        """
        return self._request("POST", "/rla/pyautogui", json={"code": code, "timeout": timeout},
                             timeout=timeout + REPLY_MARGIN_S).json()

    def stop_agent_processes(self, *, timeout: float = 30.0) -> dict[str, Any]:
        """End the episode's agent processes before it is scored (``POST /rla/stop_agent_processes``).

        The worker that ran the agent's actions ends, and every process the agent's code left running is stopped
        (SIGSTOP) unless it owns a window the window manager manages or runs the program of such an owner below
        it; the task's setup processes and the session's core stay. Returns ``{"stopped": [pids],
        "window_owners": [pids]}``. Stopped processes stay stopped until the next reset kills them.
        """
        return self._request("POST", "/rla/stop_agent_processes", timeout=timeout).json()

    def reset_session(self, *, timeout: float = 30.0) -> None:
        """Close every app started in the session and restore the user's home to its initial state."""
        self._request("POST", "/rla/reset", timeout=timeout)

    # ----------------------------------------------------------------- setup steps (OSWorld's /setup/*)
    def launch(self, command: Command, *, shell: bool = False) -> None:
        """Start a program without waiting for it (``POST /setup/launch``)."""
        self._request("POST", "/setup/launch", json={"command": command, "shell": shell})

    def setup_execute(self, command: Command, *, shell: bool = False, timeout: float = 120.0) -> dict[str, Any]:
        """Run a command as a setup step and wait for it (``POST /setup/execute``); same reply as :meth:`execute`."""
        return self._request("POST", "/setup/execute", json={"command": command, "shell": shell},
                             timeout=timeout).json()

    def open_file(self, path: str, *, timeout: float = 60.0) -> None:
        """Open ``path`` with its default app and wait for its window (``POST /setup/open_file``)."""
        self._request("POST", "/setup/open_file", json={"path": path}, timeout=timeout)

    def upload(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` inside the session (``POST /setup/upload``, multipart)."""
        self._request("POST", "/setup/upload", data={"file_path": path},
                      files={"file_data": ("file", data, "application/octet-stream")})

    def activate_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Raise and focus the window whose title (or class) matches (``POST /setup/activate_window``)."""
        self._request("POST", "/setup/activate_window",
                      json={"window_name": window_name, "strict": strict, "by_class": by_class})

    def close_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Close the window whose title (or class) matches (``POST /setup/close_window``)."""
        self._request("POST", "/setup/close_window",
                      json={"window_name": window_name, "strict": strict, "by_class": by_class})
