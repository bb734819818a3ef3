"""Errors raised while setting up or scoring an OSWorld task.

    RlaError
    ├── InvalidTask (rla_envs.core.errors)
    │   ├── NotRunnable        a task this env cannot play (an unsupported step, getter, metric; a missing file)
    │   └── BadTaskFile        a JSON file that is not an OSWorld task
    ├── SetupFailed (RuntimeError)      a setup or postconfig step that failed at run time
    └── EvaluationError (RuntimeError)  a getter or metric that could not produce a score

Run-time failures are raised, never turned into a score: a score of 0 means the agent did not do the task.
"""

from __future__ import annotations

from collections.abc import Sequence

from rla_envs.core.errors import InvalidTask, RlaError

__all__ = ["NotRunnable", "BadTaskFile", "SetupFailed", "EvaluationError"]


class NotRunnable(InvalidTask):
    """A task that needs something this env does not have; ``reasons`` lists each missing thing."""

    def __init__(self, task_id: str, reasons: Sequence[str]):
        self.task_id = task_id
        self.reasons = list(reasons)
        listed = "; ".join(self.reasons)
        super().__init__(f"OSWorld task {task_id} is not runnable here: {listed} "
                         f"(check tasks first with rla_envs.desktop.osworld.runnable.not_runnable_reasons)")


class BadTaskFile(InvalidTask):
    """A JSON document that is not an OSWorld task (missing ``id``, ``instruction`` or ``evaluator``...)."""


class SetupFailed(RlaError, RuntimeError):
    """A setup (or postconfig) step that failed at run time; the message names the step and the reason."""

    def __init__(self, message: str, *, step_index: int | None = None, step_type: str | None = None):
        self.step_index = step_index
        self.step_type = step_type
        super().__init__(message)


class EvaluationError(RlaError, RuntimeError):
    """A getter or metric that could not produce a score (not the agent's fault: no score is made up)."""
