"""Before an episode is scored: stop the processes the agent's code left running that own no window.

The agent's code runs as the session's user, so a process it started in the background (``nohup sh -c 'while
true; do cp forged.xlsx ~/answer.xlsx; done' &``) keeps running while the evaluator saves the document, fetches
files and runs its probes, and could rewrite a file between the save and the fetch, or kill a probe. The
controller cannot tell the agent's intent, only where a process came from, so when the episode ends (``POST
/rla/quiesce``, called by the evaluator before its first step) it

1. ends the worker that ran the agent's actions (not its process group: an app the agent started from its
   code, say VLC, is judged by step 2 like any other process), so no thread of the agent's code runs on;
2. stops (SIGSTOP) every process of the session that is not
   - a core process (Xvfb, the buses, openbox),
   - one the task's setup started (alive when the episode's first action arrived),
   - the owner of a window the window manager manages (the pid the X server knows from the connection, not the
     ``_NET_WM_PID`` a client may write), or
   - a descendant of such an owner that runs the same program (Chromium's renderers, Thunderbird's content
     processes).

So the apps a solution leaves open (LibreOffice, Chromium, VLC, Thunderbird, a terminal's window) keep running
and answering, while the shells and scripts the agent left behind cannot act until the reset kills them. A
process the agent's code starts that opens a window of its own is kept too: the same user can always do that,
which is why this bounds what a leftover process can do instead of ruling it out (docs/threat-model.md).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Collection, Mapping

__all__ = ["processes_to_stop", "executable", "stop", "quiesce"]


def executable(pid: int) -> str | None:
    """The program ``pid`` runs (``/proc/<pid>/exe``), None when it cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def processes_to_stop(table: Mapping[int, tuple[int, str, int]], *, core: Collection[tuple[int, int]],
                      setup: Collection[tuple[int, int]], owners: Collection[int],
                      program: Mapping[int, str | None]) -> list[int]:
    """The pids of ``table`` (pid -> (ppid, state, start time)) to stop: not zombies or stopped already, not core,
    not started by the setup, not a window's owner or a same-program descendant of one.

    >>> table = {10: (1, "S", 5), 11: (10, "S", 6), 12: (10, "S", 7), 13: (1, "S", 8), 14: (12, "R", 9)}
    >>> processes_to_stop(table, core=set(), setup=set(), owners={10},
    ...                   program={10: "/chromium", 11: "/chromium", 12: "/crashpad", 13: "/sh", 14: "/chromium"})
    [12, 13, 14]
    """
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    kept = {pid for pid, (_, _, start) in table.items() if (pid, start) in core or (pid, start) in setup}
    seen: set[int] = set()
    frontier = [pid for pid in owners if pid in table]
    while frontier:  # a window's owner, and its descendants through processes of the same program
        pid = frontier.pop()
        if pid in seen:
            continue
        seen.add(pid)
        frontier += [child for child in children.get(pid, ()) if program.get(child) is not None
                     and program.get(child) == program.get(pid)]
    kept |= seen
    return sorted(pid for pid, (_, state, _) in table.items() if pid not in kept and state not in ("Z", "X", "T", "t"))


def stop(pids: Collection[int]) -> list[int]:
    """SIGSTOP each of ``pids``; the ones that were still there."""
    stopped = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        except ProcessLookupError:  # gone meanwhile: it cannot act either
            pass
    return stopped


def quiesce(listing, *, core: Collection[tuple[int, int]], setup: Collection[tuple[int, int]],
            owners: Collection[int], timeout: float = 2.0) -> list[int]:
    """Stop every process :func:`processes_to_stop` names, again until a pass finds none (a process may fork
    between the listing and its stop); ``listing()`` gives the session's processes. Returns the pids stopped."""
    stopped: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        table = listing()
        pids = processes_to_stop(table, core=core, setup=setup, owners=owners,
                                 program={pid: executable(pid) for pid in table})
        if not pids:
            return stopped
        stopped += stop(pids)
        if time.monotonic() > deadline:
            return stopped
        time.sleep(0.01)
