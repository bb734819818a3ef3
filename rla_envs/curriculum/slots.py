"""A pool slot (one original task: its active version, pending rewrite and history) and its history entries."""

from __future__ import annotations

from dataclasses import dataclass, field

from rla_envs.core.task import Task

__all__ = ["Slot", "HistoryEntry"]


@dataclass
class HistoryEntry:
    """One decision in a slot's life: a rewrite accepted (the parent archived) or a candidate rejected.

    Attributes:
        event: ``"accepted"`` or ``"rejected"``.
        task_id: the archived parent (accepted) or the refused candidate (rejected).
        replaced_by: the new active task's id (accepted), else None.
        direction: ``"harder"``, ``"easier"`` or None if the proposer did not say.
        episode: the pool's episode counter at the decision.
        reason: ``"accepted"`` or why the candidate was refused.
        evidence: the measurements behind the decision (JSON-ready).
    """

    event: str
    task_id: str
    replaced_by: str | None
    direction: str | None
    episode: int
    reason: str
    evidence: dict = field(default_factory=dict)


@dataclass
class Slot:
    """One original task's place in the pool: its root, the active version, a pending rewrite, the history."""

    root: Task
    active: Task
    pending: Task | None = None
    pending_direction: str | None = None
    history: list[HistoryEntry] = field(default_factory=list)
    observations_at_last_rejection: int = 0  # active's episode count when its last candidate was refused
