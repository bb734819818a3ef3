"""Append-only JSONL files of episodes that survive crashes: appended and fsynced per batch, torn lines cut.

``python -m rla_train.collect`` and ``python -m benchmarks.evaluate`` write one episode per line as batches
finish; a rerun reads back the complete lines (cutting a line a crash left half-written) and resumes after them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["read_records", "append_records"]


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The complete JSON lines of ``path`` ([] when it does not exist); a torn last line is cut from the file."""
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    complete = [line for line in lines[:-1] if line.strip()]
    if lines[-1].strip():  # a line cut by a crash: keep the file to its complete lines
        with open(path, "wb") as handle:
            handle.write(b"".join(line + b"\n" for line in complete))
            handle.flush()
            os.fsync(handle.fileno())
    return [json.loads(line) for line in complete]


def append_records(path: str | os.PathLike, records: Iterable[Mapping[str, Any]]) -> None:
    """Append one JSON line per record and fsync, so that finished work survives a crash."""
    with open(path, "a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
