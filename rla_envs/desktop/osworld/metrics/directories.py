"""Metrics over a folder's listing (the ``list_directory`` getter's tree): ``check_moved_jpgs``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["check_moved_jpgs"]


def check_moved_jpgs(result: Mapping[str, Any] | None, rule: Any) -> float:
    """1 when the folder holds exactly the rule's ``expected`` names (any order), else 0.

    A folder that does not exist (None) scores 0 (OSWorld raises).
    """
    if not isinstance(rule, Mapping) or not isinstance(rule.get("expected"), list):
        raise EvaluationError(f"check_moved_jpgs needs a rule with an 'expected' list, got {rule!r:.200}")
    if not isinstance(result, Mapping):
        return 0.0
    names = [child["name"] for child in result.get("children", [])]
    expected = rule["expected"]
    return 1.0 if len(names) == len(expected) and set(names) == set(expected) else 0.0
