"""Failure diagnoses from the reward model: the steps every judgment called bad, counted over failed runs.

:class:`RewardModelDiagnoser` implements the curriculum's
:class:`~rla_envs.curriculum.diagnosers.Diagnoser` protocol, so the LLM rewriter can read why a task's
runs fail::

    RewardModelDiagnoser(RewardModel(backend)).diagnose(task, runs)
    ["3/4 failed runs: step judged bad by all 3 judgments: 'go to countertop 1' — the apple is in the fridge, ...",
     ...]

Only failed runs count. Runs without judgments (or with judgments for a different number of steps) are
judged first, in one batched call; a run's steps whose votes are all -1 are its bad steps. The same
action judged bad several times in one run counts once for that run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory
from rla_train.reward_model.parsing import judgment_reason

__all__ = ["RewardModelDiagnoser"]


@dataclass
class _BadStep:
    """What the summary says about one action judged bad (first occurrence kept)."""

    action: str
    votes: int
    reason: str
    runs: int = 0
    times: int = 0
    first_step: int = 0


class RewardModelDiagnoser:
    """Summarises failed runs by the steps a reward model judged bad unanimously (most common first).

    Args:
        reward_model: a :class:`~rla_train.reward_model.judge.RewardModel` (used for runs not yet judged).
        max_summaries: at most this many summaries are returned.
        reason_chars: the longest judge's reason quoted in a summary.
    """

    def __init__(self, reward_model, *, max_summaries: int = 5, reason_chars: int = 120):
        if not callable(getattr(reward_model, "judge", None)):
            raise TypeError(f"reward_model must have judge(task, trajectories) (a RewardModel), "
                            f"got {type(reward_model).__name__}")
        if type(max_summaries) is not int or max_summaries < 1:
            raise ValueError(f"max_summaries must be an int >= 1, got {max_summaries!r}")
        if type(reason_chars) is not int or reason_chars < 20:
            raise ValueError(f"reason_chars must be an int >= 20, got {reason_chars!r}")
        self.reward_model = reward_model
        self.max_summaries = max_summaries
        self.reason_chars = reason_chars

    def diagnose(self, task: Task, trajectories: Sequence[Trajectory]) -> list[str]:
        """Summaries of the failed runs among ``trajectories``; [] when none failed or no step was judged bad.

        Failed runs without judgments are judged first (their ``judgments`` are filled, as
        :meth:`RewardModel.judge` does); won runs are neither judged nor counted.
        """
        failed = [t for t in trajectories if not t.won]
        if not failed:
            return []
        texts = self._judge_missing(task, failed)
        found: dict[str, _BadStep] = {}
        for index, trajectory in enumerate(failed):
            seen_in_run: set[str] = set()
            for step, votes in enumerate(trajectory.judgments or []):
                if not votes or any(vote != -1 for vote in votes) or step >= len(trajectory.actions):
                    continue
                action = _one_line(trajectory.actions[step], 80)
                key = action.lower()
                if key not in found:
                    answers = texts[index][step] if texts[index] and step < len(texts[index]) else []
                    found[key] = _BadStep(action, len(votes), self._reason(answers), first_step=step)
                entry = found[key]
                entry.times += 1
                if key not in seen_in_run:
                    seen_in_run.add(key)
                    entry.runs += 1
        ranked = sorted(found.values(), key=lambda entry: (-entry.runs, -entry.times, entry.first_step))
        return [self._summary(entry, len(failed)) for entry in ranked[: self.max_summaries]]

    def _judge_missing(self, task: Task, failed: list[Trajectory]) -> list[list[list[str]]]:
        """Judge the runs that lack judgments (one call); the judge's answers per run and step."""
        texts = [list(getattr(t, "judgment_texts", None) or []) for t in failed]
        missing = [i for i, t in enumerate(failed) if t.judgments is None or len(t.judgments) != len(t.actions)]
        if missing:
            report = self.reward_model.judge(task, [failed[i] for i in missing])
            for i, answers in zip(missing, report.texts):
                texts[i] = answers
        return texts

    def _reason(self, answers: Sequence[str]) -> str:
        """The most informative of the judges' reasons for one step (the longest, clipped)."""
        reasons = [judgment_reason(text, limit=self.reason_chars) for text in answers]
        return max(reasons, key=len, default="")

    @staticmethod
    def _summary(entry: _BadStep, failed: int) -> str:
        """``"k/n failed runs: step judged bad by all m judgments: 'action' (x t in all) — reason"``."""
        judgments = "the judgment" if entry.votes == 1 else f"all {entry.votes} judgments"
        repeated = f" (x{entry.times} in all)" if entry.times > entry.runs else ""
        reason = f" — {entry.reason}" if entry.reason else ""
        return (f"{entry.runs}/{failed} failed runs: step judged bad by {judgments}: "
                f"{entry.action!r}{repeated}{reason}")


def _one_line(text: object, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
