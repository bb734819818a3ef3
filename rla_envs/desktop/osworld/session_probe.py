"""How evaluation runs a short Python probe inside the desktop session, out of the agent's reach.

The agent being graded controls the session: it can write files in any folder it can reach (the probe's
working directory, ``~/.local``) and set variables its shells pass on. A plain ``python3 -c`` would import a
``json.py`` it left in the working directory, or follow its ``PYTHONPATH`` / ``PYTHONSTARTUP``, before the
probe's own code runs, and so write the probe's answer for it. A probe therefore runs with the session's
Debian interpreter by its absolute path (no lookup in ``PATH``) in isolated mode (``-I``: no working
directory or script directory on ``sys.path``, no ``PYTHON*`` variables, no user site-packages). Probes use
the standard library and Debian's own modules only.
"""

from __future__ import annotations

__all__ = ["SESSION_PYTHON", "probe_command"]

SESSION_PYTHON = "/usr/bin/python3"
"""The session's Debian interpreter (it has python3-websocket; the controller's own venv may not)."""


def probe_command(script: str, *args: str) -> list[str]:
    """The command that runs ``script`` (with ``args`` as ``sys.argv[1:]``) in the session, isolated.

    >>> probe_command("import sys; print(sys.argv[1])", "x")
    ['/usr/bin/python3', '-I', '-c', 'import sys; print(sys.argv[1])', 'x']
    """
    return [SESSION_PYTHON, "-I", "-c", script, *args]
