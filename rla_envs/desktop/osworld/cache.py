"""FileCache: where the files that OSWorld tasks download are found offline.

OSWorld's setup steps and ``cloud_file`` getters fetch files from URLs (mostly its Hugging Face file cache).
Here nothing is fetched: every URL is resolved to a local file, or to None when the cache does not hold it
(the runnable check then names the URL, before any episode starts).

Layouts understood, in this order:

1. ``rla-bundled://<relative path>`` -> ``rla_envs/desktop/tasks/files/<relative path>`` (the bundled tasks).
2. A mirror of OSWorld's Hugging Face file cache: the URL
   ``https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/<app>/<task-id>/<file>``
   -> ``<root>/<app>/<task-id>/<file>`` (or ``<root>/<task-id>/<file>``).
3. OSWorld's own cache directory, one folder per task: ``<root>/<task-id>/<dest>`` (what ``cloud_file`` wrote)
   and ``<root>/<task-id>/<uuid5(url)>_<name>`` (what a ``download`` step wrote).
4. Any other URL by its file name: ``<root>/<task-id>/<basename of the URL path>``.

Example::

    cache = FileCache("/data/osworld-cache")
    path = cache.resolve(url, task_id="0bf05a7d-...")     # a Path, or None
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from rla_envs.desktop.tasks import FILES_DIR

__all__ = ["FileCache", "BUNDLED_SCHEME", "BUNDLED_ROOT", "HF_FILE_CACHE_PREFIX"]

BUNDLED_SCHEME = "rla-bundled://"
BUNDLED_ROOT = FILES_DIR
"""Where ``rla-bundled://`` URLs point: the files of the bundled tasks, shipped with the package."""

HF_FILE_CACHE_PREFIX = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/"
_HF_PATTERN = re.compile(r"^https?://(?:www\.)?huggingface\.co/datasets/xlangai/ubuntu_osworld_file_cache/"
                         r"resolve/[^/]+/(?P<app>[^/]+)/(?P<task>[^/]+)/(?P<file>[^?#]+)")


class FileCache:
    """Resolves download URLs and ``cloud_file`` paths of OSWorld tasks to local files.

    Args:
        root: the cache directory (see the module docstring for its layouts), or None for none: then only
            ``rla-bundled://`` URLs resolve.
        bundled_root: where ``rla-bundled://`` URLs point (default: the package's bundled task files).
    """

    def __init__(self, root: str | os.PathLike | None = None, *, bundled_root: str | os.PathLike | None = None):
        self.root = Path(root).expanduser() if root is not None else None
        self.bundled_root = Path(bundled_root) if bundled_root is not None else BUNDLED_ROOT

    def __repr__(self) -> str:
        return f"FileCache({str(self.root) if self.root else None!r})"

    def describe(self) -> str:
        """The cache as named in messages: its directory, or ``(no cache directory)``."""
        return str(self.root) if self.root is not None else "(no cache directory)"

    def missing(self, kind: str, url: str) -> str:
        """The reason text for a file the cache lacks, e.g. ``download: <url> is not in the cache <root>``."""
        return f"{kind}: {url} is not in the cache {self.describe()}"

    def resolve(self, url: str, *, task_id: str | None = None, dest: str | None = None,
                kind: str = "download") -> Path | None:
        """The local file for ``url`` (a regular file), or None when the cache does not hold it.

        Args:
            url: the URL from the task (a ``download`` file's ``url`` or a ``cloud_file`` ``path``).
            task_id: the OSWorld task id (selects ``<root>/<task-id>/``).
            dest: for ``cloud_file``, the ``dest`` name OSWorld stores the file under; for ``download``, the
                path in the session (only its file name is used, with OSWorld's ``uuid5(url)_`` prefix).
            kind: ``"download"`` or ``"cloud_file"`` (which of OSWorld's cache layouts apply).
        """
        for candidate in self.candidates(url, task_id=task_id, dest=dest, kind=kind):
            try:
                if candidate.is_file():
                    return candidate
            except (OSError, ValueError):  # a name too long for the file system, a NUL: not in the cache
                continue
        return None

    def candidates(self, url: str, *, task_id: str | None = None, dest: str | None = None,
                   kind: str = "download") -> list[Path]:
        """Every local path ``url`` may be stored at, most specific first (they need not exist)."""
        if not isinstance(url, str) or not url:
            return []
        if url.startswith(BUNDLED_SCHEME):
            relative = _safe_relative(url[len(BUNDLED_SCHEME):])
            return [self.bundled_root / relative] if relative is not None else []
        if self.root is None:
            return []
        found: list[Path] = []
        match = _HF_PATTERN.match(url)
        if match:
            name = _safe_relative(unquote(match["file"]))
            if name is not None:
                found.append(self.root / match["app"] / match["task"] / name)
                found.append(self.root / match["task"] / name)
        if task_id and _safe_relative(task_id) is not None:
            task_dir = self.root / task_id
            if dest:
                dest_name = PurePosixPath(dest).name
                if kind == "cloud_file" and _safe_relative(dest) is not None:
                    found.append(task_dir / dest)
                if dest_name:
                    found.append(task_dir / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{dest_name}")
            url_name = PurePosixPath(unquote(urlsplit(url).path)).name
            if url_name and _safe_relative(url_name) is not None:
                found.append(task_dir / url_name)
        return list(dict.fromkeys(found))  # each path once, most specific first


def _safe_relative(text: str) -> PurePosixPath | None:
    """``text`` as a relative path that stays inside its base directory, or None (absolute, ``..``, empty)."""
    path = PurePosixPath(text)
    if not text or path.is_absolute() or any(part in ("..", "") for part in path.parts) or not path.parts:
        return None
    return path
