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
