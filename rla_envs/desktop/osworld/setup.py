"""Running OSWorld setup steps (a task's ``config`` and its evaluator's ``postconfig``) through the controller.

Supported step types and what they do (same parameters as OSWorld's ``SetupController``):

    download         {"files": [{"url", "path"}]}   the file from the FileCache -> ``client.upload(path)``
    open             {"path"}                       ``client.open_file``
    launch           {"command", "shell"?}          ``client.launch`` (a string without shell is split on spaces;
                                                    a socat listener gets ``reuseaddr``: :func:`listen_reusably`)
    execute/command  {"command", "shell"?, "stdout"?, "stderr"?, "until"?}   ``client.setup_execute`` (``python
                                                    -c`` runs isolated: ``session_probe.isolated_python``)
    sleep            {"seconds"}
    activate_window  {"window_name", "strict"?, "by_class"?}
    close_window     {"window_name", "strict"?, "by_class"?}
    chrome_open_tabs   {"urls_to_open"}             each in a new tab of the running Chrome, then its start tab closes
    chrome_close_tabs  {"urls_to_close"}            the first tab whose URL matches each (``urls.compare_urls``)
    update_browse_history  {"history": [{"url", "title", "visit_time_from_now_in_seconds"}]}   visits added to
                     OSWorld's empty History database (from the FileCache), copied to Chrome's profile

A step of any other type raises :class:`SetupFailed`; :func:`~rla_envs.desktop.osworld.runnable.not_runnable_reasons`
reports such tasks before an episode starts. As in OSWorld, a command that exits non-zero does not fail its step,
and a window that cannot be activated or closed is only logged.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from rla_envs.desktop.client import ControllerClient, ControllerError
from rla_envs.desktop.osworld import chrome_profile
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.devtools import ChromeDevTools
from rla_envs.desktop.osworld.errors import SetupFailed
from rla_envs.desktop.osworld.session_probe import isolated_python

__all__ = ["run_steps", "SetupFailed", "STEP_TYPES", "StepContext", "expand_placeholders", "shell_flag",
           "DEFAULT_PASSWORD", "UNTIL_TIMEOUT_S", "EMPTY_HISTORY_URL", "EMPTY_HISTORY_TASK", "listen_reusably"]

logger = logging.getLogger(__name__)

DEFAULT_PASSWORD = "password"
"""What ``{CLIENT_PASSWORD}`` in a command becomes (OSWorld's default VM password)."""

UNTIL_TIMEOUT_S = 60.0
"""How long an ``execute`` step with ``until`` repeats its command before it fails."""

EMPTY_HISTORY_TASK = "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938"
EMPTY_HISTORY_URL = ("https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
                     f"{EMPTY_HISTORY_TASK}/history_empty.sqlite?download=true")
"""The empty Chrome History database OSWorld's ``update_browse_history`` starts from (looked up in the cache)."""


@dataclass
class StepContext:
    """What a step needs besides its parameters."""

    client: ControllerClient
    cache: FileCache
    task_id: str | None = None
    workdir: Path | None = None
    password: str = DEFAULT_PASSWORD
    sleep: Callable[[float], None] = time.sleep
    _screen: tuple[int, int] | None = field(default=None, repr=False)

    def screen(self) -> tuple[int, int]:
        """The session's screen size (asked once)."""
        if self._screen is None:
            self._screen = self.client.screen_size()
        return self._screen


def expand_placeholders(command: Any, ctx: StepContext) -> Any:
    """``command`` (a string or a list of strings) with OSWorld's ``{CLIENT_PASSWORD}``, ``{SCREEN_WIDTH}``,
    ``{SCREEN_HEIGHT}``, ``{SCREEN_WIDTH_HALF}`` and ``{SCREEN_HEIGHT_HALF}`` filled in."""
    def fill(text: str) -> str:
        if "{CLIENT_PASSWORD}" in text:
            text = text.replace("{CLIENT_PASSWORD}", ctx.password)
        if "{SCREEN_" in text:
            width, height = ctx.screen()
            for name, value in (("{SCREEN_WIDTH_HALF}", width // 2), ("{SCREEN_HEIGHT_HALF}", height // 2),
                                ("{SCREEN_WIDTH}", width), ("{SCREEN_HEIGHT}", height)):
                text = text.replace(name, str(value))
        return text

    if isinstance(command, str):
        return fill(command)
    if isinstance(command, Sequence):
        return [fill(part) if isinstance(part, str) else part for part in command]
    return command


def shell_flag(params: Mapping[str, Any]) -> bool:
    """A step's or getter's ``shell`` as OSWorld reads it (a bool, or the string ``"true"`` in any case)."""
    shell = params.get("shell", False)
    return shell.lower() == "true" if isinstance(shell, str) else bool(shell)


def _command(params: Mapping[str, Any]) -> tuple[Any, bool]:
    command = params.get("command")
    if not command:
        raise ValueError("the step has no 'command'")
    shell = shell_flag(params)
    if not isinstance(command, (str, list)) or (isinstance(command, list)
                                                and not all(isinstance(p, str) for p in command)):
        raise ValueError(f"'command' must be a string or a list of strings, got {command!r:.200}")
    return command, shell


def _download(ctx: StepContext, params: Mapping[str, Any]) -> None:
    files = params.get("files")
    if not isinstance(files, list) or not files:
        raise ValueError("'files' must be a non-empty list of {'url': ..., 'path': ...}")
    for entry in files:
        url, path = entry.get("url"), entry.get("path")
        if not url or not path:
            raise ValueError(f"a file needs a 'url' and a 'path', got {dict(entry)!r}")
        local = ctx.cache.resolve(url, task_id=ctx.task_id, dest=path, kind="download")
        if local is None:
            raise FileNotFoundError(ctx.cache.missing("download", url))
        ctx.client.upload(path, local.read_bytes())


def _open(ctx: StepContext, params: Mapping[str, Any]) -> None:
    path = params.get("path")
    if not path:
        raise ValueError("the step has no 'path'")
    ctx.client.open_file(path)


_SOCAT_LISTEN = ("tcp-listen:", "tcp4-listen:", "tcp6-listen:")


def listen_reusably(command: Any) -> Any:
    """``command`` with ``reuseaddr`` added to each TCP listening address when it runs socat (unchanged otherwise).

    OSWorld's Chrome tasks launch ``["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]`` on a freshly reverted
    VM. Our session is reset in place, so connections of the previous episode may still sit in TIME_WAIT on port
    9222 for a minute, and socat 1.7 (Debian 12) does not set SO_REUSEADDR: its bind would fail and every DevTools
    getter of the next episode would find nothing listening.
    """
    if not isinstance(command, list) or not command or PurePosixPath(str(command[0])).name != "socat":
        return command
    return [f"{word},reuseaddr" if isinstance(word, str) and word.lower().startswith(_SOCAT_LISTEN)
            and "reuseaddr" not in word.lower() else word for word in command]


def _launch(ctx: StepContext, params: Mapping[str, Any]) -> None:
    command, shell = _command(params)
    if isinstance(command, str) and not shell and len(command.split()) > 1:
        command = command.split()  # OSWorld splits a string command on spaces when it is not run by a shell
    ctx.client.launch(listen_reusably(expand_placeholders(command, ctx)), shell=shell)


def _execute(ctx: StepContext, params: Mapping[str, Any]) -> None:
    command, shell = _command(params)
    command = isolated_python(expand_placeholders(command, ctx))
    until = params.get("until") or {}
    deadline = time.monotonic() + UNTIL_TIMEOUT_S
    while True:
        reply = ctx.client.setup_execute(command, shell=shell)
        _save_output(ctx, params, reply)
        if not until or _until_met(until, reply):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the command's reply never met until={dict(until)!r} within {UNTIL_TIMEOUT_S:.0f} s "
                               f"(last reply: {reply!r:.300})")
        ctx.sleep(0.3)


def _until_met(until: Mapping[str, Any], reply: Mapping[str, Any]) -> bool:
    return (("returncode" in until and reply.get("returncode") == until["returncode"])
            or ("stdout" in until and until["stdout"] in (reply.get("output") or ""))
            or ("stderr" in until and until["stderr"] in (reply.get("error") or "")))


def _save_output(ctx: StepContext, params: Mapping[str, Any], reply: Mapping[str, Any]) -> None:
    """OSWorld writes a step's stdout/stderr into its cache dir when asked; here into the evaluation workdir."""
    for key, field_name in (("stdout", "output"), ("stderr", "error")):
        name = params.get(key)
        if not name:
            continue
        if ctx.workdir is None:
            raise ValueError(f"'{key}': {name!r} needs a work directory (only postconfig steps have one)")
        target = (ctx.workdir / name).resolve()
        if ctx.workdir.resolve() not in target.parents:
            raise ValueError(f"'{key}': {name!r} must be a file name inside the work directory")
        target.write_text(reply.get(field_name) or "", encoding="utf-8")


def _sleep(ctx: StepContext, params: Mapping[str, Any]) -> None:
    seconds = params.get("seconds")
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
        raise ValueError(f"'seconds' must be a non-negative number, got {seconds!r}")
    ctx.sleep(float(seconds))


def _window(action: str) -> Callable[[StepContext, Mapping[str, Any]], None]:
    def step(ctx: StepContext, params: Mapping[str, Any]) -> None:
        name = params.get("window_name")
        if not name:
            raise ValueError("the step has no 'window_name'")
        try:
            getattr(ctx.client, action)(name, strict=bool(params.get("strict", False)),
                                        by_class=bool(params.get("by_class", False)))
        except ControllerError as exc:  # OSWorld only logs these
            logger.warning("%s %r failed (ignored, as in OSWorld): %s", action, name, exc)
    return step


def _urls(params: Mapping[str, Any], key: str) -> list[str]:
    urls = params.get(key)
    if not isinstance(urls, list) or not all(isinstance(url, str) and url for url in urls):
        raise ValueError(f"'{key}' must be a list of URLs, got {urls!r:.200}")
    return urls


def _chrome_open_tabs(ctx: StepContext, params: Mapping[str, Any]) -> None:
    ChromeDevTools(ctx.client).open_tabs(_urls(params, "urls_to_open"))


def _chrome_close_tabs(ctx: StepContext, params: Mapping[str, Any]) -> None:
    from rla_envs.desktop.osworld.urls import compare_urls  # loads the public-suffix list only when needed

    devtools = ChromeDevTools(ctx.client)
    tabs, closing = devtools.tabs(), []
    for url in _urls(params, "urls_to_close"):
        match = next((tab for tab in tabs if tab.id not in closing and compare_urls(tab.url, url)), None)
        if match is not None:
            closing.append(match.id)
    devtools.close_tabs(closing)


def _update_browse_history(ctx: StepContext, params: Mapping[str, Any]) -> None:
    items = params.get("history")
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise ValueError(f"'history' must be a list of {{'url', 'title', 'visit_time_from_now_in_seconds'}}, "
                         f"got {items!r:.200}")
    empty = ctx.cache.resolve(EMPTY_HISTORY_URL, task_id=EMPTY_HISTORY_TASK, dest="history_empty.sqlite")
    if empty is None:
        raise FileNotFoundError(ctx.cache.missing("download", EMPTY_HISTORY_URL))
    with tempfile.TemporaryDirectory() as scratch:
        database = Path(scratch) / "History"
        shutil.copyfile(empty, database)
        try:
            chrome_profile.add_history(database, items, now=datetime.now())
        except (KeyError, TypeError, sqlite3.Error) as exc:
            raise ValueError(f"the history items (each needs 'url', 'title', 'visit_time_from_now_in_seconds') "
                             f"could not be added to {empty}: {exc}") from exc
        ctx.client.upload(chrome_profile.HISTORY, database.read_bytes())


STEP_TYPES: dict[str, Callable[[StepContext, Mapping[str, Any]], None]] = {
    "download": _download,
    "open": _open,
    "launch": _launch,
    "execute": _execute,
    "command": _execute,
    "sleep": _sleep,
    "activate_window": _window("activate_window"),
    "close_window": _window("close_window"),
    "chrome_open_tabs": _chrome_open_tabs,
    "chrome_close_tabs": _chrome_close_tabs,
    "update_browse_history": _update_browse_history,
}
"""The setup step types this env runs, by OSWorld name."""


def run_steps(client: ControllerClient, steps: Sequence[Mapping[str, Any]] | None, *, cache: FileCache | None = None,
              task_id: str | None = None, workdir: Path | None = None, phase: str = "setup",
              password: str = DEFAULT_PASSWORD, sleep: Callable[[float], None] = time.sleep) -> None:
    """Run OSWorld setup steps in order in the session behind ``client``.

    Args:
        client: the session's controller client.
        steps: the task's ``config`` (or its evaluator's ``postconfig``): ``[{"type", "parameters"}, ...]``.
        cache: where ``download`` steps find their files (default: no cache dir, only bundled files).
        task_id: the OSWorld task id (selects the task's folder in the cache).
        workdir: where ``stdout``/``stderr`` of ``execute`` steps are written (the evaluation's work dir).
        phase: ``"setup"`` or ``"postconfig"``, for messages.
        password: what ``{CLIENT_PASSWORD}`` becomes.
        sleep: the sleep function (tests pass a fake one).

    Raises:
        SetupFailed: a step of an unsupported type, with bad parameters, or that the controller refused;
            the message names the step (its number and type) and the reason.
    """
    ctx = StepContext(client=client, cache=cache or FileCache(None), task_id=task_id, workdir=workdir,
                      password=password, sleep=sleep)
    for index, step in enumerate(steps or (), start=1):
        kind = step.get("type") if isinstance(step, Mapping) else None
        where = f"{phase} step {index} ({kind})"
        handler = STEP_TYPES.get(kind)  # type: ignore[arg-type]
        if handler is None:
            raise SetupFailed(f"{where}: step type {kind!r} is not supported (supported: {sorted(STEP_TYPES)})",
                              step_index=index, step_type=kind)
        params = step.get("parameters") or {}
        if not isinstance(params, Mapping):
            raise SetupFailed(f"{where}: 'parameters' must be an object, got {params!r:.200}",
                              step_index=index, step_type=kind)
        try:
            handler(ctx, params)
        except (ControllerError, ValueError, OSError) as exc:
            raise SetupFailed(f"{where} failed: {exc}", step_index=index, step_type=kind) from exc
