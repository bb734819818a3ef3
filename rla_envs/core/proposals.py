"""Reading structured answers out of free LLM text (rewrite proposals and the like)."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["find_json_object"]

_FENCED_OBJECT = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text``: a fenced ```json block first, then the outermost ``{...}``; else None."""
    candidates = _FENCED_OBJECT.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None
