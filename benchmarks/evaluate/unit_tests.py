"""Code only: the reward model writes unit tests; UT accuracy and Detect rate against the policy's sampled programs.

For every task the reward model writes tests (:class:`~rla_train.reward_model.UnitTestWriter`); they run
against the ``k`` programs the policy sampled for pass@k. A test is correct when every correct program passes
it (:func:`rla_train.signals.rewards.unit_test_correctness`; undetermined when no program is correct). **UT accuracy**
is the share of determined tests that are correct; **Detect rate** the share of wrong programs that fail at least
one correct test (:mod:`rla_train.signals.metrics`). Both pool all tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rla_envs.core.task import Task

__all__ = ["unit_test_metrics"]


def unit_test_metrics(writer, tasks: Sequence[Task], sampled: Sequence[Mapping[str, Any]], samples: int, *,
                      sandbox_backend: str = "local") -> dict[str, Any]:
    """``ut_accuracy``, ``detect_rate`` and counts, from ``samples`` sampled episodes per task (in task order)."""
    from rla_envs.code.sandbox import make_sandbox
    from rla_train.reward_model import run_tests
    from rla_train.signals.metrics import detect_rate, ut_accuracy
    from rla_train.signals.rewards import unit_test_correctness

    tests = writer.write(list(tasks))
    correctness: list[bool | None] = []
    wrong_programs = caught = 0
    sandbox = make_sandbox(sandbox_backend)
    try:
        for index, (task, generated) in enumerate(zip(tasks, tests)):
            group = sampled[index * samples:(index + 1) * samples]
            programs = [str(r["actions"][0]) if r["actions"] else "" for r in group]
            correct = np.array([bool(r["won"]) for r in group], dtype=bool)
            valid = [t for t in generated if t.valid]
            passes = run_tests(task, programs, valid, sandbox) if valid else np.zeros((len(programs), 0), dtype=bool)
            verdict = list(unit_test_correctness(passes, correct)) if valid else []
            correctness += verdict
            rate = detect_rate(passes, correct, verdict) if valid else None
            wrong = int((~correct).sum())
            if rate is not None:
                wrong_programs += wrong
                caught += round(rate * wrong)
            elif not valid:
                wrong_programs += wrong  # no test at all catches nothing
    finally:
        sandbox.close()
    written = sum(len(t) for t in tests)
    return {"ut_accuracy": ut_accuracy(correctness), "detect_rate": caught / wrong_programs if wrong_programs else None,
            "unit_tests_written": written, "unit_tests_valid": sum(t.valid for ts in tests for t in ts),
            "unit_tests_determined": sum(c is not None for c in correctness), "wrong_programs": wrong_programs}
