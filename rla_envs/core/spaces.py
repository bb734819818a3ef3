"""Observation and action spaces for text environments: any printable text."""

from __future__ import annotations

import string
from typing import Any

from gymnasium.spaces import Text

__all__ = ["PrintableText", "is_printable_text"]

_WHITESPACE = frozenset("\n\r\t")


def is_printable_text(value: Any) -> bool:
    """True for a str whose characters are all printable (any script) or ordinary whitespace."""
    if not isinstance(value, str):
        return False
    return value.isprintable() or all(ch.isprintable() or ch in _WHITESPACE for ch in value)


class PrintableText(Text):
    """A text space holding any printable Unicode text (newlines and tabs included) up to ``max_length``.

    ``sample()`` draws ASCII printable strings; ``contains()`` accepts any script, so observations in
    other languages and actions written by a model are members. Being a ``gymnasium.spaces.Text``,
    it batches in vector envs like any other text space.
    """

    def __init__(self, max_length: int = 100_000, *, min_length: int = 0, seed: Any = None):
        super().__init__(max_length=max_length, min_length=min_length, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return is_printable_text(x) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"PrintableText(min_length={self.min_length}, max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, PrintableText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )


# --- vector envs ---------------------------------------------------------------------------------
# gymnasium's shared memory for Text stores indices into the space's charset, which would garble any
# character outside string.printable. PrintableText instead stores Unicode code points, 0-padded
# (NUL is not printable, so it never occurs in a member of the space).
import multiprocessing as _mp  # noqa: E402

import numpy as _np  # noqa: E402
from gymnasium.vector.utils import shared_memory as _shm  # noqa: E402


@_shm.create_shared_memory.register(PrintableText)
def _create_printable_shared_memory(space: PrintableText, n: int = 1, ctx=_mp):
    return ctx.Array(_np.dtype(_np.int32).char, n * space.max_length)


class SharedTextView:
    """The texts of a vector env's shared observation buffer, decoded when read.

    gymnasium reads a shared buffer once and expects a live view (as numpy gives for arrays); strings
    cannot be views, so this sequence decodes the buffer on every access. ``copy.deepcopy`` (what
    ``AsyncVectorEnv(copy=True)`` does) returns a plain tuple snapshot.
    """

    def __init__(self, rows: _np.ndarray):
        self._rows = rows

    def _decode(self, row: _np.ndarray) -> str:
        end = _np.flatnonzero(row == 0)
        codes = row[: end[0]] if len(end) else row
        return "".join(map(chr, codes.tolist()))

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self._decode(row) for row in self._rows[index])
        return self._decode(self._rows[index])

    def __iter__(self):
        return (self._decode(row) for row in self._rows)

    def __eq__(self, other) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, list, SharedTextView)) else other)

    def __deepcopy__(self, memo) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return repr(tuple(self))


@_shm.read_from_shared_memory.register(PrintableText)
def _read_printable_from_shared_memory(space: PrintableText, shared_memory, n: int = 1):
    rows = _np.frombuffer(shared_memory.get_obj(), dtype=_np.int32).reshape((n, space.max_length))
    return SharedTextView(rows)


@_shm.write_to_shared_memory.register(PrintableText)
def _write_printable_to_shared_memory(space: PrintableText, index: int, value: str, shared_memory) -> None:
    if len(value) > space.max_length:
        raise ValueError(f"text of {len(value)} characters does not fit {space!r}")
    size = space.max_length
    destination = _np.frombuffer(shared_memory.get_obj(), dtype=_np.int32)[index * size:(index + 1) * size]
    destination[:] = 0
    destination[: len(value)] = _np.frombuffer(value.encode("utf-32-le"), dtype=_np.int32)
