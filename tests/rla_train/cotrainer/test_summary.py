"""What a run prints at its end (rla_train.cotrainer.summary.format_summary)."""

from __future__ import annotations

from rla_train.cotrainer.judge_metrics import judge_summary
from rla_train.cotrainer.summary import format_summary


def test_the_summary_prints_the_judges_vote_balanced_accuracy_on_the_policys_steps_before_and_after():
    history = {"rm_probe_before": {"balanced_accuracy": 0.7, "policy": {"vote_balanced_accuracy": 0.6126}},
               "rm_probe_after": {"balanced_accuracy": 0.72, "policy": {"vote_balanced_accuracy": 0.6875}},
               "judge_on_policy": {"first_step": {"judge_vote_balanced_accuracy": 0.55},
                                   "last_step": {"judge_vote_balanced_accuracy": 0.58}}}
    judge = judge_summary(history)
    assert judge == {"before": 0.6126, "after": 0.6875, "first_step": 0.55, "last_step": 0.58}
    lines = format_summary({"mode": "policy", "steps": 2, "judge_vote_balanced_accuracy": judge}).splitlines()
    start = lines.index("judge's vote balanced accuracy on the policy's steps (each vote against the step-label "
                        "oracle):")
    assert lines[start + 1].split() == ["probe", "steps", "the", "warm-started", "policy", "played", "before",
                                        "0.613,", "after", "0.688"]
    assert lines[start + 2].split() == ["votes", "on", "its", "training", "rollouts", "first", "step", "0.550,",
                                        "last", "step", "0.580"]


def test_without_an_oracle_or_a_probe_there_is_no_judge_accuracy_to_print():
    assert judge_summary({"rm_probe_before": {"balanced_accuracy": 0.7}}) is None
    assert "judge's vote" not in format_summary({"mode": "outcome_only", "steps": 2})
    only_steps = judge_summary({"judge_on_policy": {"first_step": {"judge_vote_balanced_accuracy": 0.5},
                                                    "last_step": {"judge_vote_balanced_accuracy": 0.75}}})
    assert only_steps == {"before": None, "after": None, "first_step": 0.5, "last_step": 0.75}
    assert "probe steps" not in format_summary({"judge_vote_balanced_accuracy": only_steps})
