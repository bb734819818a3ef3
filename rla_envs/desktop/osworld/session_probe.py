"""How evaluation runs Python inside the desktop session, out of the agent's reach: its probes, tasks' ``python -c``.

The agent being graded controls the session: it can write files in any folder it can reach (the probe's
working directory, ``~/.local``) and set variables its shells pass on. A plain ``python3 -c`` would import a
``json.py`` it left in the working directory, or follow its ``PYTHONPATH`` / ``PYTHONSTARTUP``, before the
probe's own code runs, and so write the probe's answer for it. A probe therefore runs with the session's
Debian interpreter by its absolute path (no lookup in ``PATH``) in isolated mode (``-I``: no working
directory or script directory on ``sys.path``, no ``PYTHON*`` variables, no user site-packages). Probes use
the standard library and Debian's own modules only.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["SESSION_PYTHON", "LISTENER_SOURCE", "probe_command", "listener_probe_command", "isolated_python"]

SESSION_PYTHON = "/usr/bin/python3"
"""The session's Debian interpreter (it has python3-websocket; the controller's own venv may not)."""


def probe_command(script: str, *args: str) -> list[str]:
    """The command that runs ``script`` (with ``args`` as ``sys.argv[1:]``) in the session, isolated.

    >>> probe_command("import sys; print(sys.argv[1])", "x")
    ['/usr/bin/python3', '-I', '-c', 'import sys; print(sys.argv[1])', 'x']
    """
    return [SESSION_PYTHON, "-I", "-c", script, *args]


LISTENER_SOURCE = Path(__file__).with_name("listener_probe.py").read_text(encoding="utf-8")
"""The session-side check of who holds a port (:mod:`.listener_probe`), prepended to the probes that ask an app."""


def listener_probe_command(script: str, *args: str) -> list[str]:
    """:func:`probe_command` for a ``script`` that asks an app over a port: :mod:`.listener_probe`'s functions
    (``port_holders``, ``same_holders``, ``ForeignListener``, ...) are defined before it runs."""
    return probe_command(LISTENER_SOURCE + "\n# ---- the probe\n" + script, *args)


_PYTHON = re.compile(r"python(3(\.\d+)?)?")


def isolated_python(command: Any) -> Any:
    """A task's ``python -c CODE`` step (a list, or a string split or run by a shell) with ``-I`` after the
    interpreter, unchanged otherwise.

    OSWorld's postconfig steps run ``python -c "import pyautogui; pyautogui.hotkey('ctrl', 's')"`` from the home
    directory after the agent's episode, so a ``~/pyautogui.py`` or a user ``usercustomize.py`` the agent left
    would run in their place, after its leftover processes were stopped. ``-I`` keeps the interpreter's own
    modules (the runtime's pyautogui included) and drops the working directory and the user's site-packages.

    >>> isolated_python(["python", "-c", "import pyautogui"])
    ['python', '-I', '-c', 'import pyautogui']
    >>> isolated_python("python3 -c 'import time'")
    "python3 -I -c 'import time'"
    >>> isolated_python(["python", "script.py"])
    ['python', 'script.py']
    """
    if isinstance(command, list) and len(command) >= 2 and isinstance(command[0], str):
        if _PYTHON.fullmatch(PurePosixPath(command[0]).name) and command[1] == "-c":
            return [command[0], "-I", *command[1:]]
        return command
    if isinstance(command, str):
        head, _, rest = command.strip().partition(" ")
        if _PYTHON.fullmatch(PurePosixPath(head).name) and rest.lstrip().startswith("-c "):
            return f"{head} -I {rest.lstrip()}"
    return command
