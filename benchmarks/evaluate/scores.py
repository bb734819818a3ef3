"""The evaluation's numbers from episode records: success per task type, the reward model's accuracies, pass@k.

Pure functions over the records (:mod:`benchmarks.evaluate.episodes` writes them); no files, no models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rla_train.signals.metrics import outcome_accuracy, process_accuracy, success_summary

__all__ = ["pass_at_k", "summarize", "pass_at_summary"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``c`` correct out of ``n`` samples: 1 - C(n-c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Overall and per-task-type success, env errors, and the reward model's accuracies when judged."""
    result: dict[str, Any] = success_summary([r["won"] for r in records], [r["num_steps"] for r in records])
    result["env_errors"] = sum(r.get("error") is not None for r in records)
    types = sorted({r["task_type"] for r in records})
    result["by_task_type"] = {t: success_summary([r["won"] for r in records if r["task_type"] == t],
                                                 [r["num_steps"] for r in records if r["task_type"] == t])
                              for t in types}
    judged = [r for r in records if r.get("judgments") is not None and r.get("error") is None]
    if judged:
        votes, labels = [], []
        for r in judged:
            if r.get("step_labels") is not None:
                votes += r["judgments"]
                labels += r["step_labels"]
        result["rm_process_accuracy"] = process_accuracy(votes, labels) if labels else None
        result["rm_labelled_steps"] = sum(label is not None for label in labels)
        result["rm_outcome_accuracy"] = outcome_accuracy([r["judgments"] for r in judged], [r["won"] for r in judged])
        result["rm_judged_episodes"] = len(judged)
    return result


def pass_at_summary(greedy: Sequence[Mapping[str, Any]], sampled: Sequence[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """pass@1 (greedy, its Wilson interval) and pass@k (unbiased, from ``k`` samples per task)."""
    per_task = [sampled[i:i + k] for i in range(0, len(sampled), k)]
    scores = [pass_at_k(len(group), sum(bool(r["won"]) for r in group), k) for group in per_task]
    greedy_summary = success_summary([r["won"] for r in greedy], [r["num_steps"] for r in greedy])
    return {"pass@1": greedy_summary["success_rate"],
            "pass@1_ci": [greedy_summary["ci_low"], greedy_summary["ci_high"]],
            f"pass@{k}": float(np.mean(scores)) if scores else 0.0, "samples_per_task": k}
