"""Building blocks of the bundled desktop tasks: OSWorld setup steps, evaluators and solution code snippets.

:mod:`rla_envs.desktop.tasks.build` and :mod:`rla_envs.desktop.tasks.app_tasks` write their tasks with these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rla_envs.desktop.osworld.cache import BUNDLED_SCHEME

__all__ = ["HOME", "SAVE_OFFICE_CODE", "SAVE_OFFICE_COMMAND", "NAME_BOX", "bundled", "download_step", "launch_steps",
           "open_step", "open_office_steps", "mkdir_step", "text_eval", "office_postconfig", "command_eval",
           "exact_command_eval", "type_code", "xterm_steps", "make_task", "wait_window_code"]

HOME = "/home/user"

# Saving an Office-format file in LibreOffice asks "Keep current format?" ("Confirm File Format" dialog) unless
# the profile turns the question off; Enter keeps the format. Used by the solutions and the postconfig.
SAVE_OFFICE_CODE = (
    "import subprocess\n"
    "pyautogui.hotkey('ctrl', 's')\n"
    "time.sleep(1.5)\n"
    "found = subprocess.run(['xdotool', 'search', '--name', 'Confirm File Format'], capture_output=True)\n"
    "if found.stdout.strip():\n"
    "    pyautogui.press('enter')\n"
    "    time.sleep(1.0)\n"
)
SAVE_OFFICE_COMMAND = ["python", "-c", "import pyautogui, time\n" + SAVE_OFFICE_CODE]
NAME_BOX = "pyautogui.hotkey('ctrl', 'shift', 'f5')\ntime.sleep(0.3)\n"


def bundled(task_id: str, name: str) -> str:
    return f"{BUNDLED_SCHEME}{task_id}/{name}"


def download_step(task_id: str, name: str, path: str) -> dict[str, Any]:
    return {"type": "download", "parameters": {"files": [{"url": bundled(task_id, name), "path": path}]}}


def launch_steps(command: list[str], title: str, seconds: float = 2.0) -> list[dict[str, Any]]:
    return [{"type": "launch", "parameters": {"command": command}},
            {"type": "sleep", "parameters": {"seconds": seconds}},
            {"type": "activate_window", "parameters": {"window_name": title}}]


def open_step(path: str) -> dict[str, Any]:
    """OSWorld's ``open`` step: the file's app (or the named app) is started and its window waited for."""
    return {"type": "open", "parameters": {"path": path}}


def open_office_steps(path: str, title: str) -> list[dict[str, Any]]:
    """Open a document in LibreOffice: its window shows before it takes keys, so wait, then focus it."""
    return [open_step(path), {"type": "sleep", "parameters": {"seconds": 2.0}},
            {"type": "activate_window", "parameters": {"window_name": title, "strict": True}}]


def mkdir_step(path: str) -> dict[str, Any]:
    return {"type": "execute", "parameters": {"command": ["mkdir", "-p", path]}}


def text_eval(task_id: str, path: str, gold: str, **options: Any) -> dict[str, Any]:
    name = Path(path).name
    evaluator = {"func": "compare_text_file",
                 "result": {"type": "vm_file", "path": path, "dest": name},
                 "expected": {"type": "cloud_file", "path": bundled(task_id, gold), "dest": gold}}
    if options:
        evaluator["options"] = options
    return evaluator


def office_postconfig(title: str) -> list[dict[str, Any]]:
    return [{"type": "activate_window", "parameters": {"window_name": title, "strict": True}},
            {"type": "sleep", "parameters": {"seconds": 0.5}},
            {"type": "execute", "parameters": {"command": SAVE_OFFICE_COMMAND}},
            {"type": "sleep", "parameters": {"seconds": 0.5}}]


def command_eval(command: str, include: list[str], exclude: list[str]) -> dict[str, Any]:
    return {"func": "check_include_exclude",
            "result": {"type": "vm_command_line", "command": command, "shell": True},
            "expected": {"type": "rule", "rules": {"include": include, "exclude": exclude}}}


def type_code(text: str) -> str:
    return f"pyautogui.typewrite({text!r}, interval=0.01)"


def xterm_steps() -> list[dict[str, Any]]:
    """Start a terminal titled 'Terminal' (bash prompts may not retitle it) and wait for its window."""
    return [{"type": "launch", "parameters": {"command": ["xterm", "-title", "Terminal", "-xrm",
                                                          "XTerm*allowTitleOps: false"]}},
            {"type": "execute", "parameters": {"command": "wmctrl -l | grep -q ' Terminal$'", "shell": True,
                                               "until": {"returncode": 0}}},
            {"type": "activate_window", "parameters": {"window_name": "Terminal", "strict": True}}]


def exact_command_eval(command: str, expected: str, postconfig: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An evaluator scoring 1 when ``command`` (a shell line run in the session) prints exactly ``expected``."""
    evaluator: dict[str, Any] = {"func": "exact_match",
                                 "result": {"type": "vm_command_line", "command": command, "shell": True},
                                 "expected": {"type": "rule", "rules": {"expected": expected}}}
    if postconfig:
        evaluator = {"postconfig": postconfig, **evaluator}
    return evaluator


def make_task(task_id: str, app: str, instruction: str, config: list, evaluator: dict, solution: list[str],
              files: dict[str, Any], *, hints: list[str] = (), variants: list[dict] | None = None,
              related_apps: list[str] = ()) -> dict[str, Any]:
    """One bundled task: ``{"app", "json", "files"}`` (the OSWorld JSON with the rla keys, and its files' contents)."""
    task: dict[str, Any] = {
        "id": task_id, "snapshot": app, "instruction": instruction,
        "source": "rla bundled task (original)", "config": config,
        "related_apps": list(related_apps) or [app], "evaluator": evaluator,
        "proxy": False, "fixed_ip": False, "possibility_of_env_change": "low",
        "rla_solution": solution, "rla_hints": list(hints),
    }
    if variants:
        task["rla_variants"] = variants
        task["rla_variant"] = next(v["name"] for v in variants if v["evaluator"] == evaluator)
    return {"app": app, "json": task, "files": files}


def wait_window_code(title: str, timeout: float = 30.0) -> str:
    """Solution code that waits until a visible window's title contains ``title`` (a dialog opening), then 0.5 s."""
    return ("import subprocess\n"
            f"deadline = time.time() + {timeout}\n"
            f"while not subprocess.run(['xdotool', 'search', '--onlyvisible', '--name', {title!r}],\n"
            "                          capture_output=True).stdout.strip() and time.time() < deadline:\n"
            "    time.sleep(0.2)\n"
            "time.sleep(0.5)\n")
