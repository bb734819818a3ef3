"""Who answers on a port in the desktop session: the installed app the evaluator asks, or something else.

Some getters ask a running app over a local port (VLC's HTTP status on 8080, Chrome's DevTools on 1337/9222). The
agent's code runs as the same user as those apps, so anything it leaves running could listen there in the app's
place and answer what the check wants. The probes therefore ask the kernel who holds the port before and after
their exchange (:func:`port_holders`): every process holding a listening socket on it must be one of the expected
programs, installed where the session's user cannot write (``/usr``, ``/opt``), running only installed code (no
executable mapping of a file outside the system's directories, no dynamic-loader variable that could add one), and
the holders must be the same after the exchange as before it, so no other process answered in between (a port held
by a listening socket cannot be bound by another one).

This file runs INSIDE the session: the host prepends its source to a probe's script
(:func:`rla_envs.desktop.osworld.session_probe.listener_probe_command`), which runs under ``python3 -I``. It uses the standard library only and must not import anything from rla.
"""

import os
import re

INSTALLED_PREFIXES = ("/usr/", "/opt/")
"""Where an app answering the evaluator must be installed: read-only to the session's user."""

SYSTEM_CODE_PREFIXES = ("/usr/", "/lib/", "/lib64/", "/opt/")
"""Where an answering app's executable mappings may come from (the system's own files)."""

LOADER_VARIABLES = ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT")
"""Dynamic-loader variables that make a program load code it was not installed with."""

LISTEN = "0A"
"""A listening TCP socket's state in ``/proc/net/tcp``."""

_SOCKET = re.compile(r"socket:\[(\d+)\]")


class ForeignListener(Exception):
    """The port is held by a process other than the expected installed app, or by one the probe cannot see."""


def listening_sockets(port, proc="/proc"):
    """The inode numbers of the TCP sockets listening on ``port`` (IPv4 and IPv6, any address)."""
    inodes = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            with open(os.path.join(proc, table), encoding="ascii") as rows:
                lines = rows.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(int(fields[9]))
    return inodes


def socket_holders(inodes, proc="/proc"):
    """``{inode: sorted pids}``: the processes holding each socket (a forked child may share its parent's)."""
    holders = {inode: set() for inode in inodes}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        fd_dir = os.path.join(proc, name, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to read
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            found = _SOCKET.fullmatch(target)
            if found and int(found.group(1)) in holders:
                holders[int(found.group(1))].add(int(name))
    return {inode: sorted(pids) for inode, pids in holders.items()}


def process_environment(pid, proc="/proc"):
    """The environment ``pid`` was started with (``/proc/<pid>/environ``)."""
    with open(os.path.join(proc, str(pid), "environ"), "rb") as raw:
        entries = raw.read().split(b"\0")
    pairs = (entry.decode("utf-8", "replace").partition("=") for entry in entries if entry)
    return {key: value for key, _, value in pairs}


def process_arguments(pid, proc="/proc"):
    """``pid``'s command line as a list of arguments."""
    with open(os.path.join(proc, str(pid), "cmdline"), "rb") as raw:
        return [arg.decode("utf-8", "replace") for arg in raw.read().split(b"\0") if arg]


def foreign_code(pid, proc="/proc"):
    """Why ``pid`` may run code it was not installed with (a loader variable, an executable mapping of a file
    outside the system's directories), or None."""
    environment = process_environment(pid, proc)
    for variable in LOADER_VARIABLES:
        if environment.get(variable):
            return f"it was started with {variable}={environment[variable][:200]!r}"
    with open(os.path.join(proc, str(pid), "maps"), encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.split(None, 5)
            path = fields[5].strip() if len(fields) == 6 else ""
            if "x" in fields[1] and path.startswith("/") and not path.startswith(SYSTEM_CODE_PREFIXES):
                return f"it runs code mapped from {path[:200]}"
    return None


def untrusted_holder(pid, programs, proc="/proc"):
    """Why ``pid`` is not one of ``programs`` (executable names) as installed, running installed code; or None."""
    try:
        executable = os.readlink(os.path.join(proc, str(pid), "exe"))
        if not executable.startswith(INSTALLED_PREFIXES) or os.path.basename(executable) not in programs:
            return f"process {pid} runs {executable[:200]}, not an installed {'/'.join(sorted(programs))}"
        reason = foreign_code(pid, proc)
    except OSError as exc:
        return f"process {pid} cannot be inspected ({exc.strerror})"
    return f"process {pid} ({executable}): {reason}" if reason else None


def port_holders(port, programs, proc="/proc"):
    """``{inode: pids}`` of the sockets listening on ``port`` when every holder is one of ``programs`` as installed
    (``{}`` when nothing listens); raises :class:`ForeignListener` saying which process is not."""
    holders = socket_holders(listening_sockets(port, proc), proc)
    for inode, pids in sorted(holders.items()):
        if not pids:
            raise ForeignListener(f"port {port} is held by a process the session's user cannot see (socket {inode})")
        for pid in pids:
            reason = untrusted_holder(pid, programs, proc)
            if reason:
                raise ForeignListener(f"port {port}: {reason}")
    return holders


def holder_pids(holders):
    """Every process in :func:`port_holders`' answer, once each, in order."""
    return sorted({pid for pids in holders.values() for pid in pids})


def same_holders(port, before, programs, proc="/proc"):
    """Raise :class:`ForeignListener` unless ``port`` is still held as it was (``before``: :func:`port_holders`)
    after an exchange, so that the answer came from those processes."""
    after = port_holders(port, programs, proc)
    if after != before:
        raise ForeignListener(f"port {port} changed hands during the exchange ({before} -> {after})")
