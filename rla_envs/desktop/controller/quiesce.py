"""Before an episode is scored: end the processes the agent's code left running that own no window.

The agent's code runs as the session's user, so a process it started in the background (``nohup sh -c 'while
true; do cp forged.xlsx ~/answer.xlsx; done' &``) keeps running while the evaluator saves the document, fetches
files and runs its probes, and could rewrite a file between the save and the fetch, or kill a probe. The
controller cannot tell the agent's intent, only where a process came from, so when the episode ends (``POST
/rla/quiesce``, called by the evaluator before its first step) it

1. ends the worker that ran the agent's actions (not its process group: an app the agent started from its
   code, say VLC, is judged by step 2 like any other process), so no thread of the agent's code runs on;
2. kills (SIGKILL) every process of the session that is not
   - a core process (Xvfb, the buses, openbox),
   - one the task's setup started (alive when the episode's first action arrived),
   - the owner of a window the window manager manages (the pid the X server knows from the connection, not the
     ``_NET_WM_PID`` a client may write) whose program is an installed app (:func:`installed_app`: under ``/usr``
     or ``/opt``, which the session's user cannot write, and not an interpreter: a Python or shell process that
     opened a window of its own runs whatever code the agent gave it), or
   - a descendant of such an owner that runs the same program (Chromium's renderers, Thunderbird's content
     processes),

   and stops (SIGSTOP) a window app's own child instead of killing it (the shell of a terminal window: a
   terminal closes its window when its shell dies).

So the apps a solution leaves open (LibreOffice, Chromium, VLC, Thunderbird, a terminal's window) keep running
and answering, while the scripts the agent left behind are gone before the first evaluator step. Killed, not
stopped: a stopped process wakes on SIGCONT, which a sibling, or a POSIX timer the process armed itself, sends (a
stopped writer went on rewriting its file 0.2 s later). An installed app the agent's code starts with a window of
its own is kept too (an xterm running a loop: its shell is stopped, but the app is the agent's to drive), and so is
a stopped child of a window app, which such an app can wake: the same user can always do that, which is why this
bounds what a leftover process can do instead of ruling it out (docs/threat-model.md).
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Collection, Mapping

__all__ = ["installed_app", "window_apps", "processes_to_end", "held_not_killed", "executable", "end", "quiesce"]

INSTALLED_PREFIXES = ("/usr/", "/opt/")
"""Where the session's apps are installed: read-only to the session's user (the host's, or the image's, system)."""
INTERPRETERS = re.compile(r"(python|perl|ruby|node|nodejs|lua|tclsh|wish|php|sh|bash|dash|zsh|ksh|busybox)[\d.]*")
"""Programs that run whatever code they are given: a window one of them opened does not make it an app."""


def installed_app(path: str | None) -> bool:
    """Whether ``path`` (a process's ``/proc/<pid>/exe``) is an installed program that is not an interpreter.

    >>> [installed_app(p) for p in ("/usr/bin/xterm", "/usr/lib/chromium/chromium", "/usr/bin/python3.11",
    ...                              "/home/user/a.out", "/tmp/xterm", None)]
    [True, True, False, False, False, False]
    """
    return (path is not None and path.startswith(INSTALLED_PREFIXES)
            and INTERPRETERS.fullmatch(path.rsplit("/", 1)[-1]) is None)


def executable(pid: int) -> str | None:
    """The program ``pid`` runs (``/proc/<pid>/exe``), None when it cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def window_apps(table: Mapping[int, tuple[int, str, int]], *, owners: Collection[int],
                program: Mapping[int, str | None]) -> set[int]:
    """The pids of ``table`` that own a window (``owners``) and run an :func:`installed_app`, or descend from such an
    owner through processes of the same program (Chromium's zygote and renderers): they keep running while the
    episode is scored.

    >>> table = {10: (1, "S", 5), 11: (10, "S", 6), 12: (10, "S", 7), 13: (1, "T", 8), 14: (12, "R", 9)}
    >>> chromium = "/usr/lib/chromium/chromium"
    >>> sorted(window_apps(table, owners={10, 99}, program={10: chromium, 11: chromium, 12: "/usr/lib/crashpad"}))
    [10, 11]
    >>> window_apps(table, owners={13}, program={13: "/usr/bin/python3"})  # the agent's own window: not an app
    set()
    """
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    seen: set[int] = set()
    frontier = [pid for pid in owners if pid in table and installed_app(program.get(pid))]
    while frontier:
        pid = frontier.pop()
        if pid in seen:
            continue
        seen.add(pid)
        frontier += [child for child in children.get(pid, ()) if program.get(child) is not None
                     and program.get(child) == program.get(pid)]
    return seen


def processes_to_end(table: Mapping[int, tuple[int, str, int]], *, core: Collection[tuple[int, int]],
                     setup: Collection[tuple[int, int]], owners: Collection[int],
                     program: Mapping[int, str | None]) -> list[int]:
    """The pids of ``table`` (pid -> (ppid, state, start time)) to end: not zombies, not core, not started by the
    setup, not one of the :func:`window_apps`. Stopped ones are named too (a stopped process wakes on SIGCONT).

    >>> table = {10: (1, "S", 5), 11: (10, "S", 6), 12: (10, "S", 7), 13: (1, "T", 8), 14: (12, "R", 9)}
    >>> chromium = "/usr/lib/chromium/chromium"
    >>> processes_to_end(table, core=set(), setup=set(), owners={10},
    ...                  program={10: chromium, 11: chromium, 12: "/usr/lib/crashpad", 13: "/bin/sh", 14: chromium})
    [12, 13, 14]
    """
    return _to_end(table, core=core, setup=setup, apps=window_apps(table, owners=owners, program=program))


def _to_end(table: Mapping[int, tuple[int, str, int]], *, core: Collection[tuple[int, int]],
            setup: Collection[tuple[int, int]], apps: Collection[int]) -> list[int]:
    """:func:`processes_to_end` with the window apps already found."""
    kept = {pid for pid, (_, _, start) in table.items() if (pid, start) in core or (pid, start) in setup}
    kept |= set(apps)
    return sorted(pid for pid, (_, state, _) in table.items() if pid not in kept and state not in ("Z", "X"))


def held_not_killed(table: Mapping[int, tuple[int, str, int]], pids: Collection[int], apps: Collection[int]) -> set[int]:
    """Of ``pids``, the children of a window app (``apps``): the shell of a terminal window, stopped rather than
    killed, since a terminal closes its window when its shell dies and a getter may read what the window shows.

    >>> sorted(held_not_killed({12: (10, "S", 7), 14: (12, "R", 9)}, [12, 14], apps={10, 11}))
    [12]
    """
    return {pid for pid in pids if pid in table and table[pid][0] in apps}


def end(pids: Collection[int], how: signal.Signals = signal.SIGKILL) -> list[int]:
    """Send ``how`` (SIGKILL, or SIGSTOP for :func:`held_not_killed`) to each of ``pids``; the ones still there."""
    ended = []
    for pid in pids:
        try:
            os.kill(pid, how)
            ended.append(pid)
        except ProcessLookupError:  # gone meanwhile: it cannot act either
            pass
    return ended


def quiesce(listing, *, core: Collection[tuple[int, int]], setup: Collection[tuple[int, int]],
            owners: Collection[int], timeout: float = 2.0) -> list[int]:
    """End every process :func:`processes_to_end` names, again until a pass finds none (a process may fork
    between the listing and its end); ``listing()`` gives the session's processes. Returns the pids ended (once
    each: a killed process may still be listed, not yet dead, on the next pass)."""
    ended: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        table = listing()
        program = {pid: executable(pid) for pid in table}
        apps = window_apps(table, owners=owners, program=program)  # once per pass: it walks the process tree
        pids = [pid for pid in _to_end(table, core=core, setup=setup, apps=apps) if pid not in ended]
        if not pids:
            return ended
        held = held_not_killed(table, pids, apps)
        ended += end([pid for pid in pids if pid not in held]) + end(sorted(held), signal.SIGSTOP)
        if time.monotonic() > deadline:
            return ended
        time.sleep(0.01)
