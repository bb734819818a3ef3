"""The user's home template: seeded settings (apps start without first-run dialogs), snapshot and restore.

The seeded settings follow OSWorld's VM where its tasks rely on them: VLC's HTTP interface on port 8080 with
the password ``password`` (its ``vlc_playing_info`` getter reads ``/requests/status.xml``), and a Thunderbird
profile at OSWorld's path ``~/.thunderbird/t5q2a5hp.default-release`` (its getters read ``prefs.js`` there).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

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


def _clear_directory(directory: Path) -> None:
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except FileNotFoundError:  # an app removed it meanwhile: the aim is met
                pass


class HomeTemplate:
    """A snapshot of the home directory taken at boot, restored on every reset.

    Args:
        home: the live home directory (``/home/user``).
        template: where the snapshot lives; when it already holds one (a prepared template, e.g. baked
            into a container image) that one is copied into ``home`` at boot instead.
    """

    def __init__(self, home: Path, template: Path):
        self.home = home
        self.template = template

    def prepare(self) -> None:
        """Seed ``home`` and snapshot it, or fill ``home`` from an existing template."""
        self.home.mkdir(parents=True, exist_ok=True)
        if self.template.is_dir() and any(self.template.iterdir()):
            self.restore()
            return
        seed_home(self.home)
        if self.template.exists():
            shutil.rmtree(self.template)
        _copy_tree(self.home, self.template)

    def restore(self) -> None:
        """Make ``home`` exactly the template again (everything added since is deleted)."""
        _clear_directory(self.home)
        _copy_tree(self.template, self.home)
