"""The user's home template: seeded settings (apps start without first-run dialogs), snapshot and restore.

The seeded settings follow OSWorld's VM where its tasks rely on them: VLC's HTTP interface on port 8080 with
the password ``password`` (its ``vlc_playing_info`` getter reads ``/requests/status.xml``), and a Thunderbird
profile at OSWorld's path ``~/.thunderbird/t5q2a5hp.default-release`` (its getters read ``prefs.js`` there).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from .scratch import EntryState, open_up, put_back, remember, remove_entry

__all__ = ["HomeTemplate", "seed_home"]

# LibreOffice's user settings: no first-start wizard, tip of the day, "what's new"/donation infobars or
# update check; autosave and crash recovery off, so a killed LibreOffice never asks to recover documents;
# no "keep the current format?" question when saving Office formats.
_LO_ITEMS = [
    ("/org.openoffice.Setup/Office", "ooSetupInstCompleted", "true"),
    ("/org.openoffice.Setup/Office", "FirstStartWizardCompleted", "true"),
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "{version}"),
    ("/org.openoffice.Setup/Product", "LastTimeGetInvolvedShown", "{now}"),
    ("/org.openoffice.Setup/Product", "LastTimeDonateShown", "{now}"),
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "false"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "false"),
    ("/org.openoffice.Office.Common/Misc", "CrashReport", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "AutoSave", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "CreateBackup", "false"),
    # ctrl+s keeps a .xlsx/.docx as it is, without the "Use Excel 2007-365!" dialog (OSWorld's postconfig
    # saves with a bare ctrl+s and reads the file right after)
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "UserAutoSave", "false"),
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "Enabled", "false"),
    ("/org.openoffice.Office.Jobs/Jobs/org.openoffice.Office.Jobs:Job['UpdateCheck']/Arguments",
     "AutoCheckEnabled", "false"),
    ("/org.openoffice.Office.Common/Misc", "UseOpenCL", "false"),
    ("/org.openoffice.Office.Common/VCL", "UseSkia", "false"),
]


def _libreoffice_xcu(version: str) -> str:
    now = str(int(time.time()))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
             'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">']
    for path, name, value in _LO_ITEMS:
        value = value.format(version=version, now=now)
        lines.append(f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value>'
                     f'</prop></item>')
    lines.append("</oor:items>")
    return "\n".join(lines) + "\n"


VLC_RC = """\
# rla: VLC as OSWorld's VM configures it: the HTTP interface (port 8080, password 'password'), no privacy
# question at first start, no network look-ups for metadata or updates.
[core]
extraintf=http
metadata-network-access=0
[lua]
http-password=password
[qt]
qt-privacy-ask=0
qt-updates-notif=0
"""
"""``~/.config/vlc/vlcrc``: VLC keeps the options it does not know from a partial file and fills in the rest."""

THUNDERBIRD_PROFILE = "t5q2a5hp.default-release"
"""The profile directory under ``~/.thunderbird`` (OSWorld's; its task tarballs replace it)."""
THUNDERBIRD_PROFILES_INI = f"""\
[Profile0]
Name=default-release
IsRelative=1
Path={THUNDERBIRD_PROFILE}
Default=1

[General]
StartWithLastProfile=1
Version=2
"""
# No account wizard, default-client question, start page, telemetry notice or update check; a profile with
# no account opens on an empty main window.
_THUNDERBIRD_PREFS = {
    "mail.provider.suppress_dialog_on_startup": True,
    "mail.accounthub.enabled": False,
    "mail.shell.checkDefaultClient": False,
    "mail.spotlight.firstRunDone": True,
    "mail.winsearch.firstRunDone": True,
    "mail.rights.version": 1,
    "mailnews.start_page.enabled": False,
    "app.update.enabled": False,
    "app.update.auto": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.policy.dataSubmissionPolicyBypassNotification": True,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "browser.aboutConfig.showWarning": False,
    "browser.shell.checkDefaultBrowser": False,
}


def _user_prefs(prefs: dict[str, bool | int | str]) -> str:
    """Mozilla ``user.js`` text setting ``prefs``."""
    return "".join(f"user_pref({json.dumps(name)}, {json.dumps(value)});\n" for name, value in prefs.items())


def _write_new(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless it exists (a file already there is kept)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _libreoffice_version() -> str:
    """The installed LibreOffice's ``major.minor`` (``7.4``) from dpkg; ``7.4`` (Debian 12's) when unknown."""
    import re
    import subprocess

    try:
        version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libreoffice-core"], capture_output=True,
                                 text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    match = re.match(r"(?:\d+:)?(\d+\.\d+)", version)
    return match.group(1) if match else "7.4"


def seed_home(home: Path) -> None:
    """Write the session's default settings into ``home`` (files already there are kept)."""
    for name in ("Desktop", "Documents", "Downloads", ".config", ".cache", ".local/share"):
        (home / name).mkdir(parents=True, exist_ok=True)
    xcu = home / ".config/libreoffice/4/user/registrymodifications.xcu"
    if not xcu.exists():
        _write_new(xcu, _libreoffice_xcu(_libreoffice_version()))
    _write_new(home / ".config/vlc/vlcrc", VLC_RC)
    _write_new(home / ".thunderbird/profiles.ini", THUNDERBIRD_PROFILES_INI)
    _write_new(home / ".thunderbird" / THUNDERBIRD_PROFILE / "user.js", _user_prefs(_THUNDERBIRD_PREFS))


def _copy_tree(source: Path, target: Path) -> None:
    """Copy ``source``'s entries into ``target``, skipping files that vanish meanwhile (caches being written)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(source):
        destination = target / entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                _copy_tree(Path(entry.path), destination)
            else:
                shutil.copy2(entry.path, destination, follow_symlinks=False)
        except FileNotFoundError:
            continue


def _clear_directory(directory: Path) -> list[str]:
    """Remove everything in ``directory`` (opened up first: the agent may have made folders read-only); the
    entries that could not go."""
    open_up(str(directory))
    return [entry.path for entry in os.scandir(directory)
            if not remove_entry(entry.path, entry.is_dir(follow_symlinks=False))]


SNAPSHOT_LIMIT_BYTES = 256 * 2**20
"""The most file content a home kept in memory may hold; a larger home needs a prepared ``--home-template``."""


@dataclass(frozen=True)
class _Entry:
    """One entry of a home snapshot, relative to the home: a directory, a file (its bytes) or a symbolic link."""

    path: str
    mode: int
    mtime_ns: int
    data: bytes | None = None     # a file's content
    link: str | None = None       # a symbolic link's target


def _snapshot(home: Path) -> list[_Entry]:
    """Every entry under ``home``, parents before children, skipping what vanishes meanwhile."""
    entries: list[_Entry] = []
    total = 0
    for root, dirs, files in os.walk(home):
        dirs.sort()  # in place: os.walk then descends in this order too
        for name in [*dirs, *sorted(files)]:
            full = os.path.join(root, name)
            relative = os.path.relpath(full, home)
            try:
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    entries.append(_Entry(relative, 0, info.st_mtime_ns, link=os.readlink(full)))
                elif stat.S_ISDIR(info.st_mode):
                    entries.append(_Entry(relative, stat.S_IMODE(info.st_mode), info.st_mtime_ns))
                elif stat.S_ISREG(info.st_mode):
                    data = Path(full).read_bytes()
                    total += len(data)
                    if total > SNAPSHOT_LIMIT_BYTES:
                        raise RuntimeError(f"the home {home} holds over {SNAPSHOT_LIMIT_BYTES >> 20} MiB of files, too "
                                           "much to keep in memory; pass a prepared one with --home-template")
                    entries.append(_Entry(relative, stat.S_IMODE(info.st_mode), info.st_mtime_ns, data=data))
                # sockets, fifos and devices are not restored: no app needs one left from boot
            except FileNotFoundError:
                continue
    return entries


def _write_snapshot(entries: list[_Entry], home: Path) -> None:
    """Recreate ``entries`` under ``home`` (empty or not: what is there is overwritten), modes and times included."""
    directories = []
    for entry in entries:
        target = home / entry.path
        if entry.link is not None:
            os.symlink(entry.link, target)
        elif entry.data is not None:
            target.write_bytes(entry.data)
            os.chmod(target, entry.mode)
            os.utime(target, ns=(entry.mtime_ns, entry.mtime_ns))
        else:
            target.mkdir(exist_ok=True)
            directories.append(entry)
    for entry in reversed(directories):  # after their contents, which touch their times
        os.chmod(home / entry.path, entry.mode)
        os.utime(home / entry.path, ns=(entry.mtime_ns, entry.mtime_ns))


class HomeTemplate:
    """A snapshot of the home directory taken at boot, restored on every reset.

    Args:
        home: the live home directory (``/home/user``).
        template: a prepared template to copy into ``home`` at boot and on every reset (bound read-only into the
            session by the local provider), or None: then ``home`` is seeded at boot and the snapshot is kept in
            this process's memory, where the agent's code (the same user, but the controller is non-dumpable)
            cannot change what a reset restores. A template on disk in a place the agent can write (the session's
            runtime dir, as before) could be edited by one episode to plant files in every later one.
    """

    def __init__(self, home: Path, template: Path | None = None):
        self.home = home
        self.template = template
        self._snapshot: list[_Entry] | None = None
        self._folder: EntryState | None = None  # the home folder's own mode, time and extended attributes

    def prepare(self) -> None:
        """Fill ``home`` from the prepared template, or seed it and snapshot it into memory."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._folder = remember(str(self.home))
        if self.template is not None and self.template.is_dir() and any(self.template.iterdir()):
            self.restore()
            return
        seed_home(self.home)
        if self.template is not None:  # an empty template directory given: fill it, as before
            if self.template.exists():
                shutil.rmtree(self.template)
            _copy_tree(self.home, self.template)
        else:
            self._snapshot = _snapshot(self.home)

    def restore(self) -> list[str]:
        """Make ``home`` exactly the template again (everything added since is deleted); returns what could not
        be removed (then the home is not the template, and the reset asks for a fresh session)."""
        left = _clear_directory(self.home)
        if self._snapshot is not None:
            _write_snapshot(self._snapshot, self.home)
        elif self.template is not None:
            _copy_tree(self.template, self.home)
        else:
            raise RuntimeError("HomeTemplate.restore before prepare: there is nothing to restore yet")
        if self._folder is not None:  # the folder itself stays: a marker in its attributes or mode must not
            put_back(str(self.home), self._folder)
        return left
