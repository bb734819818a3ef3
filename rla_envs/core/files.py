"""Crash-safe file writes and the on-disk cache directory."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from collections.abc import Mapping
from typing import Any

__all__ = ["atomic_write_text", "atomic_write_json", "cache_root", "cache_dir", "jsonable"]


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def json_text(data: Any, **options: Any) -> str:
    """``json.dumps(data)`` that UTF-8 can always encode: readable non-ASCII text, ``\\udXXX`` escapes when needed.

    Text from a policy or an env can hold a lone surrogate (``'\\ud800'``, e.g. from ``errors="surrogateescape"``
    decoding); ``ensure_ascii=False`` output with one cannot be written to a UTF-8 file. Such data is written
    with ``ensure_ascii=True`` instead, which reads back as the same string.
    """
    text = json.dumps(data, ensure_ascii=False, **options)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, **options)
    return text


def atomic_write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (any string content, see :func:`json_text`)."""
    return atomic_write_text(path, json_text(data, indent=1))


def cache_root() -> Path:
    """``$RLA_CACHE`` (default ``~/.cache/rla``): where every :func:`cache_dir` lies (not created here)."""
    return Path(os.environ.get("RLA_CACHE") or Path.home() / ".cache" / "rla")


def cache_dir(*parts: str) -> Path:
    """A directory under ``$RLA_CACHE`` (default ``~/.cache/rla``), created on demand."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def jsonable(value: Any) -> Any:
    """``value`` with mappings and sequences made plain dicts and lists; other non-JSON values become repr()."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return jsonable(value.tolist())
    return repr(value)
