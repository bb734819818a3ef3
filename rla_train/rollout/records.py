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

from rla_envs.core.files import json_text

__all__ = ["read_records", "append_records", "record_line"]


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


def record_line(record: Mapping[str, Any]) -> str:
    """One JSON line for ``record``, whatever its content holds.

    Strings with lone surrogates are escaped (:func:`~rla_envs.core.files.json_text`), values JSON has no form for
    are written as their ``repr``; a record that still cannot be written (nested too deep, circular) becomes
    ``{"task_id": ..., "unwritable_record": why}``, so that the line count of the file stays one per record.
    """
    try:
        return json_text(record, default=repr) + "\n"
    except (ValueError, TypeError, RecursionError) as error:
        task_id = record.get("task_id") if isinstance(record, Mapping) else None
        stub = {"task_id": task_id if isinstance(task_id, str) else None,
                "unwritable_record": f"{type(error).__name__}: {error}"[:500]}
        return json_text(stub) + "\n"


def append_records(path: str | os.PathLike, records: Iterable[Mapping[str, Any]]) -> None:
    """Append one JSON line per record and fsync, so that finished work survives a crash.

    Writing never fails on a record's content (see :func:`record_line`): the rest of the batch is always written.
    """
    lines = [record_line(record) for record in records]
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(lines))
        handle.flush()
        os.fsync(handle.fileno())
