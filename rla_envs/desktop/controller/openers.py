"""Which app opens a file, by extension: the one table the controller's open_file and the host's runnable check share.

No imports beyond the standard library, so that the host (``rla_envs.desktop.osworld.runnable``) can read it
without the controller's runtime.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TEXT_EXTENSIONS", "CALC_EXTENSIONS", "WRITER_EXTENSIONS", "IMPRESS_EXTENSIONS", "MEDIA_EXTENSIONS",
           "IMAGE_EXTENSIONS", "PDF_EXTENSIONS", "Opener", "OPENERS", "opener_for", "describe_openers"]

TEXT_EXTENSIONS = frozenset({".txt", ".py", ".md", ".json", ".log", ".sh", ".cfg", ".ini", ".yaml", ".yml", ".xml",
                             ".html", ".htm", ".css", ".js", ".c", ".h", ".cpp", ".java", ".tex", ".toml", ".rst",
                             ".srt", ".bib", ""})
CALC_EXTENSIONS = frozenset({".xlsx", ".xls", ".csv", ".ods", ".tsv", ".xlsm", ".fods"})
WRITER_EXTENSIONS = frozenset({".docx", ".doc", ".odt", ".rtf", ".fodt"})
IMPRESS_EXTENSIONS = frozenset({".pptx", ".ppt", ".odp"})
MEDIA_EXTENSIONS = frozenset({".mp4", ".mkv", ".webm", ".avi", ".mov", ".ogv", ".mpg", ".mpeg", ".mp3", ".wav",
                              ".ogg", ".oga", ".flac", ".m4a", ".opus"})
IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".xcf", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".svg",
                              ".raw", ".ico"})
PDF_EXTENSIONS = frozenset({".pdf"})


@dataclass(frozen=True)
class Opener:
    """An app that opens files: its name, the extensions it takes, the command before the path, and the program
    whose presence on PATH says the app is installed (Debian's ``lo*`` launchers come with each LibreOffice
    module's package, so no launcher means no module)."""

    app: str
    extensions: frozenset[str]
    command: tuple[str, ...]
    program: str


OPENERS: tuple[Opener, ...] = (
    Opener("LibreOffice Calc", CALC_EXTENSIONS, ("libreoffice", "--calc"), "localc"),
    Opener("LibreOffice Writer", WRITER_EXTENSIONS, ("libreoffice", "--writer"), "lowriter"),
    Opener("LibreOffice Impress", IMPRESS_EXTENSIONS, ("libreoffice", "--impress"), "loimpress"),
    # as OSWorld's VLC tasks start it (VLC_VERBOSE=-1 vlc --no-audio --no-video-title-show), less --no-audio:
    # a session has no sound card, and a task about audio may want the audio track selected
    Opener("VLC", MEDIA_EXTENSIONS, ("vlc", "--no-video-title-show"), "vlc"),
    Opener("GIMP", IMAGE_EXTENSIONS, ("gimp",), "gimp"),
    # Chromium's PDF viewer (OSWorld's Ubuntu opens PDFs in its document viewer; the window shows the file name too)
    Opener("Chromium", PDF_EXTENSIONS, ("google-chrome",), "google-chrome"),
    Opener("Mousepad", TEXT_EXTENSIONS, ("mousepad",), "mousepad"),
)
"""Every app an ``open`` step may start, in the order they are tried."""


def opener_for(path: Path) -> list[str] | None:
    """The command that opens ``path`` with its app, chosen by extension (None: no installed app for it)."""
    suffix = path.suffix.lower()
    for opener in OPENERS:
        if suffix in opener.extensions:
            return [*opener.command, str(path)] if shutil.which(opener.program) else None
    return None


def describe_openers() -> str:
    """One line naming each app and the extensions it opens (for an error reply)."""
    return "; ".join(f"{o.app}: {' '.join(sorted(e or '(none)' for e in o.extensions))}" for o in OPENERS)
