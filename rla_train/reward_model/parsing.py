"""Reading a judge's answer: the vote in its last ``\\boxed{...}`` and a short reason.

    >>> parse_verdict("It opens the fridge, which holds the apple. \\\\boxed{1}")
    1
    >>> parse_verdict("Wandering again. \\\\boxed{-1}")
    -1
    >>> parse_verdict("I think it is fine")       # no box: unparseable
    0

Only the LAST box counts (a judge may quote the format before answering); its content must be ``1``,
``+1`` or ``-1`` (a Unicode minus or dash counts as ``-``; spaces and ``$`` around it are ignored).
Anything else, including a missing or unclosed box, is 0: unparseable, recorded as such and never raised.
An answer cut at the token limit (``finish_reason="length"``) is unparseable too, whatever its text: it may
end inside the judge's quote of the policy's step, so a ``\\boxed{1}`` the policy wrote would count as the
judge's verdict (a 0 vote costs the judge the -2 reward-model reward of :mod:`rla_train.signals.rewards`).
"""

from __future__ import annotations

import re

__all__ = ["UNPARSEABLE", "parse_verdict", "judgment_reason"]

UNPARSEABLE = 0
"""The vote recorded for an answer with no readable ``\\boxed{1}`` / ``\\boxed{-1}``."""

_BOX = "\\boxed"
_MINUSES = {"\u2212": "-", "\u2013": "-", "\u2014": "-", "\ufe63": "-", "\uff0d": "-"}
_VALUES = {"1": 1, "+1": 1, "-1": -1}
_THINK_TAGS = re.compile(r"</?think>", re.IGNORECASE)


def _last_box(text: str) -> tuple[int, str | None]:
    """Where the last ``\\boxed`` starts (-1 if none) and its brace content (None if malformed)."""
    start = text.rfind(_BOX)
    if start < 0:
        return -1, None
    position = start + len(_BOX)
    while position < len(text) and text[position].isspace():
        position += 1
    if position >= len(text) or text[position] != "{":
        return start, None
    depth, content_start = 0, position + 1
    for index in range(position, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return start, text[content_start:index]
    return start, None


def parse_verdict(text: object, *, finish_reason: str = "stop") -> int:
    """The judge's vote: +1 (good step), -1 (bad step) or 0 (unparseable), from the last ``\\boxed{...}``.

    ``finish_reason`` is how the answer ended (:attr:`~rla_train.backends.base.Sample.finish_reason`):
    ``"length"`` (cut at max_new_tokens) makes it unparseable.
    """
    if not isinstance(text, str) or finish_reason == "length":
        return UNPARSEABLE
    _, content = _last_box(text)
    if content is None:
        return UNPARSEABLE
    value = "".join(_MINUSES.get(char, char) for char in content)
    value = "".join(value.split()).strip("$")
    return _VALUES.get(value, UNPARSEABLE)


def judgment_reason(text: object, *, limit: int = 160) -> str:
    """The judge's reasoning before its last box, whitespace collapsed, at most ``limit`` characters.

    When too long, the end is kept (a judge's conclusion comes last), starting at a word boundary.
    """
    if not isinstance(text, str):
        return ""
    start, _ = _last_box(text)
    reason = text[:start] if start >= 0 else text
    reason = " ".join(_THINK_TAGS.sub(" ", reason).split())
    reason = reason.rstrip(" :-=").strip()
    if len(reason) <= limit:
        return reason
    tail = reason[-(limit - 3):]
    cut = tail.find(" ")
    if 0 <= cut < len(tail) // 3:
        tail = tail[cut + 1:]
    return "..." + tail
