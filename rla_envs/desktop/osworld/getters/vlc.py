"""OSWorld's VLC getters: its settings file, what it is playing (its HTTP interface) and the default video player.

They reach the session only through ``ctx.client``: small stdlib scripts run there with ``execute``, so nothing
but the session's own Python is needed. VLC's HTTP interface must listen where OSWorld's VM has it
(:data:`VLC_HTTP_PORT`, password :data:`VLC_HTTP_PASSWORD`): the desktop image starts VLC so.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters.context import EvalContext, Getter, target_path
from rla_envs.desktop.osworld.session_probe import listener_probe_command, probe_command

__all__ = ["GETTERS", "VLC_HTTP_PORT", "VLC_HTTP_PASSWORD", "VLC_PROGRAMS", "VLCRC", "VIDEO_SUBTYPES"]

VLC_HTTP_PORT = 8080
"""Where VLC's HTTP interface listens in the session (OSWorld's ``vlc_port``)."""

VLC_HTTP_PASSWORD = "password"
"""The HTTP interface's password (OSWorld's; the user name is empty)."""

VLC_PROGRAMS = ("vlc",)
"""The executables (names, installed under ``/usr`` or ``/opt``) that may answer on :data:`VLC_HTTP_PORT`."""

VLCRC = "~/.config/vlc/vlcrc"
"""VLC's settings file on Linux."""

_UNIQUE_VIDEO_SUBTYPES = (
    "3gp", "3gpp", "3gpp2", "avi", "divx", "dv", "fli", "flv", "mp2t", "mp4", "mp4v-es", "mpeg", "mpeg-system",
    "msvideo", "ogg", "quicktime", "vnd.divx", "vnd.mpegurl", "vnd.rn-realvideo", "webm", "x-anim", "x-avi", "x-flc",
    "x-fli", "x-flv", "x-m4v", "x-matroska", "x-mpeg", "x-mpeg-system", "x-mpeg2", "x-ms-asf", "x-ms-asf-plugin",
    "x-ms-asx", "x-ms-wm", "x-ms-wmv", "x-ms-wmx", "x-ms-wvx", "x-msvideo", "x-nsv", "x-ogm", "x-ogm+ogg", "x-theora",
    "x-theora+ogg")
VIDEO_SUBTYPES: tuple[str, ...] = tuple(subtype for subtype in _UNIQUE_VIDEO_SUBTYPES
                                        for _ in range(1 if subtype == "x-ogm+ogg" else 2))
"""The ``video/<subtype>`` types whose default app votes for the default video player, as OSWorld lists them:
each twice except ``x-ogm+ogg`` (a vote per entry, so the repetition matters on a tie)."""

_STATUS_SCRIPT = """
import base64, os, sys, urllib.error, urllib.request
port, password, VLC = int(sys.argv[1]), sys.argv[2], set(sys.argv[3].split(","))
PATH_VARIABLES = ("VLC_PLUGIN_PATH", "VLC_DATA_PATH", "VLC_LIB_PATH")
SOURCE_OPTIONS = ("http-src", "lua-config", "config", "data-path")


def redirected(pid):
    # Why VLC process pid may serve its HTTP interface from files the agent wrote (VLC runs the Lua scripts in the
    # user's data folder before its own; http-src and lua-config name other folders), or None.
    environment = process_environment(pid)
    for variable in PATH_VARIABLES:
        if environment.get(variable):
            return f"VLC (process {pid}) was started with {variable}"
    home = environment.get("HOME") or os.path.expanduser("~")
    user_lua = os.path.join(environment.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "vlc", "lua")
    if os.path.lexists(user_lua):
        return f"{user_lua} exists: VLC runs the user's Lua scripts before its own"
    for argument in process_arguments(pid)[1:]:
        if argument.startswith("--") and argument[2:].split("=", 1)[0] in SOURCE_OPTIONS:
            return f"VLC (process {pid}) was started with {argument[:200]}"
    settings = os.path.join(environment.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "vlc", "vlcrc")
    try:
        with open(settings, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, _, value = line.partition("=")
                if key.strip() in SOURCE_OPTIONS and value.strip():
                    return f"VLC's settings ({settings}) set {key.strip()}"
    except OSError:
        pass
    return None


request = urllib.request.Request(f"http://localhost:{port}/requests/status.xml")
request.add_header("Authorization", "Basic " + base64.b64encode((":" + password).encode()).decode())
try:
    holders = port_holders(port, VLC)
    if not holders:  # an answer counts only from a holder checked before the request and after it
        raise ConnectionRefusedError(f"nothing listens on port {port}")
    for pid in holder_pids(holders):
        reason = redirected(pid)
        if reason:
            raise ForeignListener(f"port {port}: {reason}")
    with urllib.request.urlopen(request, timeout=10) as reply:
        body = reply.read()
    same_holders(port, holders, VLC)
    print(base64.b64encode(body).decode())
except ForeignListener as exc:
    print(exc, file=sys.stderr)
    sys.exit(4)
except urllib.error.HTTPError as exc:
    print(f"HTTP {exc.code}", file=sys.stderr)
    sys.exit(2)
except OSError as exc:
    print(f"no reply: {exc}", file=sys.stderr)
    sys.exit(3)
"""

_DEFAULT_APPS_SCRIPT = """
import json, subprocess, sys
found = {}
for subtype in sys.argv[1:]:
    reply = subprocess.run(["xdg-mime", "query", "default", f"video/{subtype}"], capture_output=True, text=True)
    found[subtype] = reply.stdout
print(json.dumps(found))
"""


def _run(ctx: EvalContext, kind: str, command: list[str]) -> Mapping[str, Any]:
    try:
        return ctx.client.execute(command)
    except ControllerError as exc:
        raise EvaluationError(f"{kind}: running {command[0]} in the session failed: {exc}") from exc


def get_vlc_playing_info(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """VLC's ``status.xml`` from its HTTP interface, saved as ``dest``: its local path.

    None when the interface answers with an error status (as OSWorld) or does not answer at all: VLC is not
    running, so it plays nothing (OSWorld's evaluation fails there instead). The answer counts only when the port
    is held by the installed VLC running its own code, before and after the request (``listener_probe``; VLC
    without Lua scripts in the user's data folder, ``http-src`` or ``lua-config``): anything else the agent left
    listening there raises :class:`EvaluationError`, which scores the episode 0.
    """
    reply = _run(ctx, "vlc_playing_info",
                 listener_probe_command(_STATUS_SCRIPT, str(VLC_HTTP_PORT), VLC_HTTP_PASSWORD,
                                        ",".join(VLC_PROGRAMS)))
    if reply.get("returncode") in (2, 3):
        return None
    if reply.get("returncode") == 4:
        raise EvaluationError(f"vlc_playing_info: VLC's port is not answered by VLC as installed: "
                              f"{(reply.get('error') or '').strip()[:400]}")
    if reply.get("returncode") != 0:
        raise EvaluationError(f"vlc_playing_info: reading VLC's status failed: {reply.get('error')!r:.300}")
    try:
        content = base64.b64decode((reply.get("output") or "").strip(), validate=True)
    except ValueError as exc:
        raise EvaluationError(f"vlc_playing_info: unexpected reply {reply.get('output')!r:.200}") from exc
    target = target_path(ctx, str(config.get("dest") or "status.xml"))
    target.write_bytes(content)
    return str(target)


def get_vlc_config(ctx: EvalContext, config: Mapping[str, Any]) -> str | None:
    """VLC's settings file (``~/.config/vlc/vlcrc`` in the session) saved as ``dest``: its local path, or None
    when VLC has not written one yet."""
    reply = _run(ctx, "vlc_config", probe_command(f"import os; print(os.path.expanduser({VLCRC!r}))"))
    path = (reply.get("output") or "").strip()
    if reply.get("returncode") != 0 or not path.startswith("/"):
        raise EvaluationError(f"vlc_config: could not find the session's home: {reply.get('error')!r:.300}")
    try:
        data = ctx.client.get_file(path)
    except ControllerError as exc:
        raise EvaluationError(f"vlc_config: could not read {path} from the session: {exc}") from exc
    if data is None:
        return None
    target = target_path(ctx, str(config.get("dest") or "vlcrc"))
    target.write_bytes(data)
    return str(target)


def get_default_video_player(ctx: EvalContext, config: Mapping[str, Any]) -> str:
    """The desktop file most video types open with (``xdg-mime query default``'s line, newline included, e.g.
    ``"vlc.desktop\\n"``), or ``"unknown"`` when none has a default."""
    reply = _run(ctx, "default_video_player", probe_command(_DEFAULT_APPS_SCRIPT, *_UNIQUE_VIDEO_SUBTYPES))
    try:
        defaults = json.loads(reply.get("output") or "")
    except ValueError as exc:
        raise EvaluationError(f"default_video_player: xdg-mime failed: {reply.get('error')!r:.300}") from exc
    votes = Counter(defaults[subtype] for subtype in VIDEO_SUBTYPES if defaults.get(subtype))
    return votes.most_common(1)[0][0] if votes else "unknown"


GETTERS: dict[str, Getter] = {
    "vlc_playing_info": get_vlc_playing_info,
    "vlc_config": get_vlc_config,
    "default_video_player": get_default_video_player,
}
"""The VLC getters, by OSWorld ``type``."""
