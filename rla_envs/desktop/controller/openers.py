"""Which app opens a file, by extension: the one table the controller's open_file and the host's runnable check share.

No imports beyond the standard library, so that the host (``rla_envs.desktop.osworld.runnable``) can read it
without the controller's runtime.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["TEXT_EXTENSIONS", "CALC_EXTENSIONS", "WRITER_EXTENSIONS", "IMPRESS_EXTENSIONS", "OFFICE_MODULES",
           "opener_for"]

TEXT_EXTENSIONS = frozenset({".txt", ".py", ".md", ".json", ".log", ".sh", ".cfg", ".ini", ".yaml", ".yml", ".xml",
                             ".html", ".htm", ".css", ".js", ".c", ".h", ".cpp", ".java", ".tex", ".toml", ".rst",
                             ".srt", ".bib", ""})
"""Opened in mousepad."""
CALC_EXTENSIONS = frozenset({".xlsx", ".xls", ".csv", ".ods", ".tsv", ".xlsm", ".fods"})
WRITER_EXTENSIONS = frozenset({".docx", ".doc", ".odt", ".rtf", ".fodt"})
IMPRESS_EXTENSIONS = frozenset({".pptx", ".ppt", ".odp"})

OFFICE_MODULES: tuple[tuple[frozenset[str], str, str], ...] = (
    (CALC_EXTENSIONS, "--calc", "localc"),
    (WRITER_EXTENSIONS, "--writer", "lowriter"),
    (IMPRESS_EXTENSIONS, "--impress", "loimpress"),
)
"""(extensions, ``libreoffice`` option, launcher): Debian's lo* launcher comes with each module's package, so
no launcher means no module."""


def opener_for(path: Path) -> list[str] | None:
    """The command that opens ``path`` with its app, chosen by extension (None: no installed app for it)."""
    suffix = path.suffix.lower()
    for extensions, module, launcher in OFFICE_MODULES:
        if suffix in extensions:
            return ["libreoffice", module, str(path)] if shutil.which(launcher) else None
    if suffix in TEXT_EXTENSIONS:
        return ["mousepad", str(path)]
    return None
