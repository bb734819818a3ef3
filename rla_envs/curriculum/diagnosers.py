"""Failure diagnosis: failed trajectories in, short failure summaries out (fed to an LLM rewriter).

A diagnoser is anything with
``diagnose(task, trajectories) -> list[str]``; :class:`RuleDiagnoser` needs no model::

    RuleDiagnoser().diagnose(task, failed_runs)
    ['3/4 failed runs ran out of steps (50 steps)', '2/4 failed runs never took the apple', ...]

The reward-model diagnoser lives with the co-trainer (``rla_train``); it implements the same protocol.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory

__all__ = ["Diagnoser", "RuleDiagnoser", "target_object"]


@runtime_checkable
class Diagnoser(Protocol):
    """Turns failed trajectories of one task into short failure summaries (most common first)."""

    def diagnose(self, task: Task, trajectories: Sequence[Trajectory]) -> list[str]:
        """Short, human-readable summaries of why these runs of ``task`` failed."""


def target_object(task: Task) -> str | None:
    """The object the task is about, as the game text names it, or None when the family has none.

    ALFWorld: the goal's object type in lower case (``"DishSponge"`` -> ``"dishsponge"``). Any family may
    declare one in ``task.meta["target"]``.
    """
    declared = task.meta.get("target")
    if isinstance(declared, str) and declared.strip():
        return declared.strip().lower()
    params = task.spec.get("pddl_params")
    if isinstance(params, Mapping) and isinstance(params.get("object_target"), str) and params["object_target"]:
        return params["object_target"].lower()
    return None


class RuleDiagnoser:
    """Rule-based failure summaries: loops, repeated invalid actions, target never reached, out of steps.

    Each failed trajectory gets zero or more findings; findings are then counted over the trajectories
    and reported most common first, as ``"<k>/<n> failed runs <finding>"``.

    Args:
        loop_repeats: a (action, observation) pair seen this many times in one run counts as a loop.
        invalid_repeats: this many invalid actions in one run are reported.
        max_summaries: at most this many summaries are returned.
    """

    def __init__(self, *, loop_repeats: int = 3, invalid_repeats: int = 2, max_summaries: int = 5):
        if loop_repeats < 2:
            raise ValueError(f"loop_repeats must be >= 2 (a pair seen twice is a repeat), got {loop_repeats}")
        if invalid_repeats < 1:
            raise ValueError(f"invalid_repeats must be >= 1, got {invalid_repeats}")
        if max_summaries < 1:
            raise ValueError(f"max_summaries must be >= 1, got {max_summaries}")
        self.loop_repeats = loop_repeats
        self.invalid_repeats = invalid_repeats
        self.max_summaries = max_summaries

    def diagnose(self, task: Task, trajectories: Sequence[Trajectory]) -> list[str]:
        """Summaries of the failed runs among ``trajectories`` (won runs are ignored); [] when none failed."""
        failed = [t for t in trajectories if not t.won]
        if not failed:
            return []
        counts: Counter[str] = Counter()
        example: dict[str, str] = {}
        for trajectory in failed:
            for kind, detail in self.findings(task, trajectory):
                counts[kind] += 1
                example.setdefault(kind, detail)
        summaries = [f"{k}/{len(failed)} failed runs {kind}{example[kind]}"
                     for kind, k in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
        return summaries[: self.max_summaries]

    def findings(self, task: Task, trajectory: Trajectory) -> list[tuple[str, str]]:
        """``(finding, example detail)`` pairs for one trajectory; the finding text is shared across runs."""
        found = []
        for rule in (self._loop, self._invalid, self._target, self._out_of_steps, self._judged):
            result = rule(task, trajectory)
            if result is not None:
                found.append(result)
        return found

    # ----------------------------------------------------------------- rules
    def _loop(self, task: Task, trajectory: Trajectory) -> tuple[str, str] | None:
        """The same action met the same answer ``loop_repeats`` times (a loop over repeated states)."""
        pairs = Counter(zip(trajectory.actions, trajectory.observations[1:]))
        if not pairs:
            return None
        (action, _), repeats = pairs.most_common(1)[0]
        if repeats < self.loop_repeats:
            return None
        return "looped over repeated states", f" (e.g. {_short(action)!r} x{repeats} with the same result)"

    def _invalid(self, task: Task, trajectory: Trajectory) -> tuple[str, str] | None:
        """At least ``invalid_repeats`` actions flagged ``info["invalid_action"]``."""
        invalid = [a for a, info in zip(trajectory.actions, trajectory.infos[1:]) if info.get("invalid_action")]
        if len(invalid) < self.invalid_repeats:
            return None
        action, repeats = Counter(invalid).most_common(1)[0]
        return "repeated invalid actions", f" (e.g. {len(invalid)} invalid, {_short(action)!r} x{repeats})"

    def _target(self, task: Task, trajectory: Trajectory) -> tuple[str, str] | None:
        """Never saw the target object, or saw it and never took it."""
        target = target_object(task)
        if target is None:
            return None
        took = any(a.strip().lower().startswith(("take ", "pick up ")) and target in a.lower()
                   for a in trajectory.actions)
        if took:
            return None
        seen = any(target in o.lower() for o in trajectory.observations[1:])
        if not seen:
            return f"never found the {target}", ""
        return f"saw the {target} but never took it", ""

    def _out_of_steps(self, task: Task, trajectory: Trajectory) -> tuple[str, str] | None:
        if trajectory.truncated and not trajectory.won:
            return "ran out of steps", f" ({trajectory.num_steps} steps)"
        return None

    def _judged(self, task: Task, trajectory: Trajectory) -> tuple[str, str] | None:
        """Steps that the reward model's judgments mark wrong (majority of votes negative)."""
        if not trajectory.judgments:
            return None
        wrong = [i for i, votes in enumerate(trajectory.judgments) if votes and sum(votes) < 0]
        if not wrong:
            return None
        first = wrong[0]
        action = trajectory.actions[first] if first < len(trajectory.actions) else "?"
        return "had steps judged wrong", f" (first: step {first} {_short(action)!r}, {len(wrong)} in all)"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

