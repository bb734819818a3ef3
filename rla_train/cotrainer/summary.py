"""What a co-training run prints at its end: its summary as readable lines (pure formatting, no I/O)."""

from __future__ import annotations

from typing import Any

__all__ = ["format_summary"]


def _success_line(label: str, result: dict[str, Any]) -> str:
    return (f"  {label:<42} {result['success_rate']:6.1%}  ({int(result['won'])}/{int(result['episodes'])}, "
            f"95% CI {result['ci_low']:.1%}-{result['ci_high']:.1%}, mean steps {result['mean_steps']:.1f})")


def format_summary(summary: dict[str, Any]) -> str:
    """What the run prints at the end: held-out success, training success on the fixed probe, the reward model's
    balanced accuracy on its labelled probe, its vote balanced accuracy on the policy's steps before and after,
    the pool's rewrites (every figure, and the rest, is in ``summary.json``)."""
    before_label = "before co-training" + (" (after the warm start)" if "initial" in summary else "")
    lines = ["held-out success:"]
    for key, label in (("initial", "initial model"), ("before", before_label), ("after", "after co-training")):
        if summary.get(key):
            lines.append(_success_line(label, summary[key]))
    if summary.get("heldout_paired"):
        lines.append(_paired_line(summary["heldout_paired"]))
    if summary.get("probe_before"):
        lines.append("training-game success on the fixed probe:")
        for key, label in (("probe_before", before_label), ("probe_after", "after co-training")):
            if summary.get(key):
                lines.append(_success_line(label, summary[key]))
        if summary.get("probe_paired"):
            lines.append(_paired_line(summary["probe_paired"]))
    rm_rows = [(k, label) for k, label in (("rm_probe_initial", "untrained"), ("rm_probe_before", "before co-training"),
                                           ("rm_probe_after", "after co-training")) if summary.get(k)]
    if rm_rows:
        lines.append("reward model on its labelled probe (balanced accuracy, AUC):")
        for key, label in rm_rows:
            result = summary[key]
            ci = result.get("balanced_accuracy_ci")
            interval = f", 95% CI {ci[0]:.3f}-{ci[1]:.3f}" if ci else ""
            lines.append(f"  {label:<42} {_num(result.get('balanced_accuracy'))}{interval}, AUC "
                         f"{_num(result.get('auc'))}  ({int(result.get('good', 0))} good / {int(result.get('bad', 0))} "
                         "bad steps)")
    judge = summary.get("judge_vote_balanced_accuracy")
    if judge:
        lines.append("judge's vote balanced accuracy on the policy's steps (each vote against the step-label oracle):")
        counts = judge.get("probe_policy_steps")
        if counts or judge.get("before") is not None or judge.get("after") is not None:
            steps = f"  ({counts['good']} good / {counts['bad']} bad steps)" if counts else ""
            lines.append(f"  {'probe steps the warm-started policy played':<42} before {_num(judge.get('before'))}, "
                         f"after {_num(judge.get('after'))}{steps}")
        if judge.get("first_step") is not None or judge.get("last_step") is not None:
            lines.append(f"  {'votes on its training rollouts':<42} first step {_num(judge.get('first_step'))}, "
                         f"last step {_num(judge.get('last_step'))}")
    if summary.get("pool"):
        pool = summary["pool"]
        lines.append(f"task pool: {pool.get('triggered', 0)} rewrites triggered, {pool.get('generated', 0)} candidates, "
                     f"{pool.get('valid', 0)} valid, {pool.get('measured', 0)} measured, {pool.get('accepted', 0)} accepted")
    return "\n".join(lines)


def _paired_line(test: dict[str, Any]) -> str:
    return (f"  {'after vs before, same seeded episodes':<42} {int(test['improved'])} won only after, "
            f"{int(test['worsened'])} only before: exact McNemar one-sided p = {test['p_one_sided']:.3g}")


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"
