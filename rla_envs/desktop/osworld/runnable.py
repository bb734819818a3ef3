"""Which OSWorld tasks this env can play, decided before an episode: every reason one cannot be played.

:func:`not_runnable_reasons` walks a task's setup steps, its evaluator's postconfig steps, getters, metrics and
``compare_table`` rules, and the files they need from the :class:`FileCache`. An empty list means runnable.
Reasons are short, stable sentences (the survey counts them), e.g.::

    setup step 'chrome_open_tabs' is not supported
    download: https://huggingface.co/.../Customers.xlsx is not in the cache /data/osworld-cache
    launch: 'google-chrome' is not installed
    metric 'compare_audios' is not supported
    compare_pptx_files option 'examine_run_count' is not supported
    getter 'active_tab_info' is not supported
    compare_table rule 'chart' is not supported
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from rla_envs.core.task import Task
from rla_envs.desktop.controller.openers import OPENERS as APP_OPENERS
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.getters import GETTERS, dest_problem
from rla_envs.desktop.osworld.getters.terminal import TERMINAL_APP
from rla_envs.desktop.osworld.getters.wallpaper import WALLPAPER_COMMAND
from rla_envs.desktop.osworld.metrics import is_supported
from rla_envs.desktop.osworld.metrics.archive import FILE_TYPE_METRICS
from rla_envs.desktop.osworld.metrics.rules import rule_method_supported
from rla_envs.desktop.osworld.metrics.slides import unsupported_pptx_options
from rla_envs.desktop.osworld.metrics.table import CELL_STYLE_PROPS, CHART_PROPS, SUPPORTED_RULES
from rla_envs.desktop.osworld.page_queries import html_parse_problem
from rla_envs.desktop.osworld.setup import EMPTY_HISTORY_TASK, EMPTY_HISTORY_URL, STEP_TYPES
from rla_envs.desktop.osworld.tasks import osworld_json

__all__ = ["not_runnable_reasons", "evaluator_reasons", "steps_reasons", "default_has_app", "program_of",
           "programs_of", "OPENERS", "REFUSED_STEPS", "REFUSED_GETTERS", "REFUSED_METRICS", "LIVE_WEB_STATE_METRICS",
           "MISSING_SERVICES"]

HasApp = Callable[[str], bool]

OPENERS: dict[str, tuple[str, frozenset[str]]] = {opener.program: (opener.app, opener.extensions)
                                                 for opener in APP_OPENERS}
"""The program whose presence says an ``open`` step's file has its app (Debian's ``localc``/``lowriter``/
``loimpress`` come with ``libreoffice-calc``/``-writer``/``-impress``), and the extensions it opens: built
from the controller's own table (``controller/openers.py``), so the two never disagree."""

REFUSED_STEPS: dict[str, str] = {
    "googledrive": "setup step 'googledrive': needs the internet and OSWorld's Google Drive account",
    "login": "setup step 'login': signs in to a website (Google Drive), which needs the internet",
}
"""Setup steps that stay refused, with the exact reason (the session has no internet)."""

REFUSED_GETTERS: dict[str, str] = {
    "gotoRecreationPage_and_get_html_content": "getter 'gotoRecreationPage_and_get_html_content': needs the "
                                               "internet (it searches recreation.gov for the expected value)",
    "info_from_website": "getter 'info_from_website': needs the internet (it reads the expected values from a "
                         "live web page)",
}
"""Getters that stay refused, with the exact reason."""

REFUSED_METRICS: dict[str, str] = {
    "compare_image_text": "metric 'compare_image_text' needs OCR (easyocr), which is not installed",
    "compare_audios": "metric 'compare_audios' is not supported: OSWorld scores librosa MFCCs aligned by fastdtw, "
                      "which no light library reproduces",
    "compare_videos": "metric 'compare_videos' is not supported: OSWorld decodes the frames with OpenCV",
    "check_thunderbird_folder": "metric 'check_thunderbird_folder' is not supported: OSWorld's version scores 1 "
                                "for any existing file",
}
"""OSWorld metrics that stay refused on purpose, with the exact reason."""

LIVE_WEB_STATE_METRICS: dict[str, str] = {
    "is_cookie_deleted": "metric 'is_cookie_deleted': the cookies it asks to delete are set by the live websites its "
                         "setup opens; the session has no internet, so none exist and the goal holds at reset",
}
"""Metrics whose goal is the absence of state that only live websites create: refused when the setup opens web pages
(a task that seeds the state offline, such as ``update_browse_history``, stays runnable)."""

MISSING_SERVICES: dict[str, str] = {
    "timedatectl": "needs systemd's time service (timedatectl), which the session does not run",
    "org.gnome.shell": "needs GNOME Shell's settings (org.gnome.shell), which the openbox session does not have",
}
"""Text in a command -> why the session cannot serve it (a service or desktop it does not run)."""

_SHELL_WORDS = {"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case", "esac", "in",
                "function", "[", "[[", "test", "echo", "cd", "export", "source", ".", "set", "unset", "true",
                "false", "printf", "read", "eval", "exec", "!", "{", "}", "(", ")", "exit", "return", "local",
                "shift", "wait", "trap", "break", "continue", "history", "alias", "ulimit", "umask", "time"}
_SUDO = re.compile(r"(^|[\s;&|(])sudo(\s|$)|\{CLIENT_PASSWORD\}")


def default_has_app(name: str) -> bool:
    """Whether the program ``name`` is on this machine's PATH (``shutil.which``)."""
    return shutil.which(name) is not None


def programs_of(command: Any) -> list[str]:
    """The programs a command runs that can be checked: the first word of a list, or of each line of a shell
    string (shell builtins and constructs, ``VAR=$(...)`` and quoting errors are skipped)."""
    if isinstance(command, list):
        if not command or not isinstance(command[0], str):
            return []
        command = command[0]
    if not isinstance(command, str):
        return []
    found, pending = [], ""
    for line in command.strip().splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:  # a quoted string may span lines: wait for its end
            words = shlex.split(pending, comments=True)
        except ValueError:
            continue
        pending = ""
        program = _first_program(words)
        if program is not None:
            found.append(program)
        if "<<" in words or any(word.startswith("<<") for word in words):
            break  # a here-document follows: its lines are data, not commands
    return found


def program_of(command: Any) -> str | None:
    """The first checkable program a command runs (see :func:`programs_of`), or None."""
    programs = programs_of(command)
    return programs[0] if programs else None


def _first_program(words: list[str]) -> str | None:
    for word in words:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word, flags=re.S):
            if "$(" in word or "`" in word:
                return None  # VAR=$(command ...): a subshell, not a program to check
            continue  # VAR=value prefix
        if word in _SHELL_WORDS or not re.fullmatch(r"[\w./+-]+", word):
            return None
        return word
    return None


def _texts(command: Any) -> Iterable[str]:
    if isinstance(command, str):
        yield command
    elif isinstance(command, list):
        yield from (part for part in command if isinstance(part, str))


def steps_reasons(steps: Any, *, phase: str, cache: FileCache, task_id: str | None,
                  has_app: HasApp) -> list[str]:
    """Reasons the setup (``phase="setup"``) or postconfig steps cannot run here."""
    reasons: list[str] = []
    if steps is None:
        return reasons
    if not isinstance(steps, list):
        return [f"{phase}: the steps must be a list, got {type(steps).__name__}"]
    for step in steps:
        kind = _name(step.get("type") if isinstance(step, Mapping) else None)
        if kind in REFUSED_STEPS:
            reasons.append(REFUSED_STEPS[kind] if phase == "setup" else f"{phase}: {REFUSED_STEPS[kind]}")
            continue
        if kind not in STEP_TYPES:
            reasons.append(f"{phase} step '{kind}' is not supported")
            continue
        params = step.get("parameters") or {}
        if not isinstance(params, Mapping):
            reasons.append(f"{phase} step '{kind}': 'parameters' must be an object")
            continue
        if kind == "download":
            files = params.get("files") or []
            if not isinstance(files, list):
                reasons.append(f"{phase} step 'download': 'files' must be a list of {{'url', 'path'}} objects")
                continue
            for entry in files:
                url = _name(entry.get("url") if isinstance(entry, Mapping) else None)
                dest = _name(entry.get("path") if isinstance(entry, Mapping) else None)
                if not url or cache.resolve(url, task_id=task_id, dest=dest, kind="download") is None:
                    reasons.append(cache.missing("download", url))
        elif kind == "update_browse_history":
            if cache.resolve(EMPTY_HISTORY_URL, task_id=EMPTY_HISTORY_TASK, dest="history_empty.sqlite") is None:
                reasons.append(cache.missing("download", EMPTY_HISTORY_URL))
        elif kind == "open":
            reasons += _open_reasons(params.get("path"), has_app)
        elif kind in ("launch", "execute", "command"):
            command = params.get("command")
            label = "launch" if kind == "launch" else "execute"
            if any(_SUDO.search(text) for text in _texts(command)):
                reasons.append(f"{label}: needs sudo (the password), which the session does not grant")
                continue
            reasons += _program_reasons(label, command, has_app) + _service_reasons(label, command)
    return reasons


def _open_reasons(path: Any, has_app: HasApp) -> list[str]:
    """Why the session cannot open ``path`` with the app its extension calls for (``[]`` when it can)."""
    if not isinstance(path, str) or not path:
        return ["open: the step has no 'path'"]
    suffix = PurePosixPath(path).suffix.lower()
    for program, (app, suffixes) in OPENERS.items():
        if suffix in suffixes:
            return [] if has_app(program) else [f"open: '{suffix or path}' files need {app} ('{program}'), "
                                                f"which is not installed"]
    return [f"open: no app in the session opens '{suffix}' files"]


def _program_reasons(label: str, command: Any, has_app: HasApp) -> list[str]:
    """``["<label>: '<program>' is not installed"]`` when the command's program is missing, else ``[]``.

    Only bare names and absolute paths are checked: a relative path (``./setup.sh``) is usually a file an
    earlier step put there.
    """
    return [f"{label}: '{program}' is not installed" for program in dict.fromkeys(programs_of(command))
            if ("/" not in program or program.startswith("/")) and not has_app(program)]


def _service_reasons(label: str, command: Any) -> list[str]:
    """``["<label>: needs ..."]`` for each service of :data:`MISSING_SERVICES` the command uses."""
    return [f"{label}: {why}" for text, why in MISSING_SERVICES.items()
            if any(text in part for part in _texts(command))]


def _name(value: Any) -> str | None:
    """``value`` when it is a string (a step type, getter type, rule or metric name), else None."""
    return value if isinstance(value, str) else None


def _as_list(value: Any, count: int) -> list[Any]:
    return list(value) if isinstance(value, list) else [value] * count


def _getter_reasons(config: Any, cache: FileCache, task_id: str | None, has_app: HasApp) -> list[str]:
    if not config:
        return []
    if not isinstance(config, Mapping):
        return [f"evaluator: a getter must be an object, got {type(config).__name__}"]
    kind = _name(config.get("type"))
    if kind in REFUSED_GETTERS:
        return [REFUSED_GETTERS[kind]]
    if kind not in GETTERS:
        return [f"getter '{kind}' is not supported"]
    reasons = []
    if kind == "rule_relativeTime":
        reasons += _relative_time_reasons(config.get("rules"))
    if kind == "active_tab_html_parse" and html_parse_problem(config):
        reasons.append(html_parse_problem(config))
    if kind in ("vm_command_line", "vm_command_error"):
        reasons += _program_reasons(f"getter {kind}", config.get("command"), has_app)
        reasons += _service_reasons(f"getter {kind}", config.get("command"))
    if kind == "vm_terminal_output" and not has_app(TERMINAL_APP):
        reasons.append(f"getter 'vm_terminal_output': '{TERMINAL_APP}' is not installed")
    if kind == "vm_wallpaper":
        reasons += _program_reasons(f"getter {kind}", WALLPAPER_COMMAND, has_app)
        problem = dest_problem(str(config.get("dest") or ""))
        reasons += [f"getter '{kind}': {problem}"] if problem else []
    if kind == "default_video_player":
        reasons += _program_reasons(f"getter {kind}", ["xdg-mime"], has_app)
    if kind in ("vm_file", "cloud_file"):
        multi = config.get("multi", False)
        paths = config.get("path") if multi else [config.get("path")]
        dests = config.get("dest") if multi else [config.get("dest")]
        if not isinstance(paths, list) or not isinstance(dests, list) or len(paths) != len(dests) or not all(
                isinstance(p, str) and p and isinstance(d, str) and d for p, d in zip(paths, dests)):
            return [f"getter '{kind}': 'path' and 'dest' must be strings (or equal-length lists with 'multi')"]
        reasons += [f"getter '{kind}': {dest_problem(d)}" for d in dests if dest_problem(d)]
        if kind == "cloud_file":
            reasons += [cache.missing("cloud_file", url) for url, dest in zip(paths, dests)
                        if cache.resolve(url, task_id=task_id, dest=dest, kind="cloud_file") is None]
    return reasons


def _relative_time_reasons(rules: Any) -> list[str]:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from rla_envs.desktop.osworld.relative_time import is_supported_phrase

    relative = rules.get("relativeTime") if isinstance(rules, Mapping) else None
    if not isinstance(relative, Mapping) or "from" not in relative or not isinstance(rules.get("expected"), Mapping):
        return ["getter 'rule_relativeTime': needs rules with 'relativeTime' {'from': ...} and 'expected'"]
    reasons = [f"getter 'rule_relativeTime': relative time '{phrase}' is not supported"
               for phrase in (relative.get("from"), relative.get("to", "tomorrow")) if not is_supported_phrase(phrase)]
    try:
        ZoneInfo(rules.get("timezone") or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        reasons.append(f"getter 'rule_relativeTime': unknown timezone '{rules.get('timezone')}'")
    return reasons


def _table_reasons(options: Any) -> list[str]:
    rules = options.get("rules") if isinstance(options, Mapping) else None
    if not isinstance(rules, list):
        return ["compare_table: options must hold a list of 'rules'"]
    reasons = []
    for rule in rules:
        kind = _name(rule.get("type") if isinstance(rule, Mapping) else None)
        if kind not in SUPPORTED_RULES:
            reasons.append(f"compare_table rule '{kind}' is not supported")
            continue
        if kind == "check_cell":
            props = rule.get("props") or {}
            if not isinstance(props, Mapping):
                reasons.append("compare_table check_cell: 'props' must be an object")
                continue
            for prop, value_rule in props.items():
                if prop != "value" and prop not in CELL_STYLE_PROPS:
                    reasons.append(f"compare_table check_cell property '{prop}' is not supported")
                method = _name(value_rule.get("method")) if isinstance(value_rule, Mapping) else None
                if not rule_method_supported(method):
                    reasons.append(f"compare_table rule method '{method}' is not supported")
        elif kind in ("style", "chart"):
            key, known = ("props", CELL_STYLE_PROPS) if kind == "style" else ("chart_props", CHART_PROPS)
            names = rule.get(key, [])
            if not isinstance(names, list):
                reasons.append(f"compare_table {kind}: '{key}' must be a list")
                continue
            reasons += [f"compare_table {kind} property '{p}' is not supported"
                        for p in names if _name(p) not in known]
        elif kind == "zoom" and not rule_method_supported(_name(rule.get("method"))):
            reasons.append(f"compare_table rule method '{rule.get('method')}' is not supported")
    return reasons


def _archive_reasons(options: Any) -> list[str]:
    file_type = options.get("file_type", "text") if isinstance(options, Mapping) else "text"
    metric = FILE_TYPE_METRICS.get(file_type) if isinstance(file_type, str) else None
    if metric is None:
        return [f"compare_archive file_type '{file_type}' is not supported"]
    return [] if is_supported(metric) else [f"compare_archive file_type '{file_type}' needs metric '{metric}', "
                                            f"which is not supported"]


def _docx_reasons(*getters: Any) -> list[str]:
    for config in getters:
        if isinstance(config, Mapping) and config.get("type") in ("vm_file", "cloud_file"):
            dests = config.get("dest") if isinstance(config.get("dest"), list) else [config.get("dest")]
            if any(isinstance(d, str) and PurePosixPath(d).suffix.lower() == ".odt" for d in dests):
                return ["compare_docx_files: .odt files are not supported"]
    return []


def _slider_colours_reasons(expected: Any) -> list[str]:
    rules = expected.get("rules") if isinstance(expected, Mapping) and expected.get("type") == "rule" else None
    kind = rules.get("type") if isinstance(rules, Mapping) else None
    if kind is None or kind in ("match", "blackish"):
        return []
    return [f"check_qt_slider_colours rule type '{kind}' is not supported"]


def evaluator_reasons(evaluator: Any, *, cache: FileCache, task_id: str | None, has_app: HasApp) -> list[str]:
    """Reasons a task's evaluator (postconfig, getters, metrics, options) cannot run here."""
    if not isinstance(evaluator, Mapping) or "func" not in evaluator:
        return ["evaluator: it must be an object with a 'func'"]
    reasons = steps_reasons(evaluator.get("postconfig"), phase="postconfig", cache=cache, task_id=task_id,
                            has_app=has_app)
    funcs = evaluator["func"]
    if funcs == "infeasible":
        return reasons
    names = funcs if isinstance(funcs, list) else [funcs]
    count = len(names)
    results = _as_list(evaluator.get("result"), count) if evaluator.get("result") else [None] * count
    expected = _as_list(evaluator.get("expected"), count) if evaluator.get("expected") else [None] * count
    options = _as_list(evaluator.get("options") or {}, count)
    if isinstance(funcs, list):
        # the evaluator walks 'result' and 'expected' entry by entry beside 'func' (OSWorld indexes them too)
        mismatched = [f"evaluator: 'func' lists {count} metrics but '{key}' is not a list"
                      for key in ("result", "expected")
                      if evaluator.get(key) and not isinstance(evaluator.get(key), list)]
        mismatched += [f"evaluator: 'func' lists {count} metrics but '{key}' has {len(values)} entries"
                       for key, values in (("result", results), ("expected", expected), ("options", options))
                       if len(values) != count]
        if mismatched:
            return reasons + mismatched
    if evaluator.get("conj", "and") not in ("and", "or"):
        reasons.append(f"evaluator: conj {evaluator.get('conj')!r} is not 'and' or 'or'")
    for name, result, want, option in zip(names, results, expected, options):
        if not isinstance(name, str):  # a list or an object where a metric's name belongs
            reasons.append(f"evaluator: metric name {name!r:.80} is not a string")
            continue
        if not is_supported(name) or name == "infeasible":
            reasons.append(REFUSED_METRICS.get(name, f"metric '{name}' is not supported"))
            continue
        reasons += (_getter_reasons(result, cache, task_id, has_app)
                    + _getter_reasons(want, cache, task_id, has_app))
        if name == "compare_table":
            reasons += _table_reasons(option)
        elif name == "compare_docx_files":
            reasons += _docx_reasons(result, want)
        elif name == "compare_pptx_files":
            reasons += [f"compare_pptx_files option '{key}' is not supported" for key in unsupported_pptx_options(option)]
        elif name == "compare_archive":
            reasons += _archive_reasons(option)
        elif name == "check_qt_slider_colours":
            reasons += _slider_colours_reasons(want)
    return reasons


def _opens_web_pages(steps: Any) -> bool:
    """Whether setup steps open http(s) pages (``chrome_open_tabs``)."""
    if not isinstance(steps, list):
        return False
    return any(isinstance(step, Mapping) and step.get("type") == "chrome_open_tabs"
               and isinstance(step.get("parameters"), Mapping)
               and isinstance(step["parameters"].get("urls_to_open"), list)
               and any(str(url).startswith(("http://", "https://")) for url in step["parameters"]["urls_to_open"])
               for step in steps)


def _live_web_state_reasons(raw: Mapping[str, Any]) -> list[str]:
    """A goal that holds at reset because the state it removes could only come from the internet."""
    evaluator = raw.get("evaluator")
    if not isinstance(evaluator, Mapping) or not _opens_web_pages(raw.get("config")):
        return []
    funcs = evaluator.get("func")
    names = funcs if isinstance(funcs, list) else [funcs]
    return [LIVE_WEB_STATE_METRICS[name] for name in names if isinstance(name, str) and name in LIVE_WEB_STATE_METRICS]


def not_runnable_reasons(task_json: Task | Mapping[str, Any], *, cache: FileCache | None = None,
                         has_app: HasApp | None = None) -> list[str]:
    """Every reason this env cannot play the OSWorld task (empty: runnable), without touching a session.

    Args:
        task_json: the task's JSON dict, or a Task from :func:`~rla_envs.desktop.osworld.tasks.load_task`.
        cache: where downloads and reference files are looked up (default: none, only bundled files).
        has_app: whether a program is installed in the session (default: on this machine's PATH); the env
            passes its provider's ``has_app`` (a container answers for its own image).
    """
    raw = osworld_json(task_json)
    cache = cache or FileCache(None)
    has_app = has_app or default_has_app
    task_id = raw.get("id")
    reasons = steps_reasons(raw.get("config", []), phase="setup", cache=cache, task_id=task_id, has_app=has_app)
    reasons += evaluator_reasons(raw.get("evaluator"), cache=cache, task_id=task_id, has_app=has_app)
    reasons += _live_web_state_reasons(raw)
    return list(dict.fromkeys(reasons))  # each reason once, in the order found
