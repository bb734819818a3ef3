"""What a run prints at its end (rla_train.cotrainer.summary.format_summary)."""

from __future__ import annotations

from rla_train.cotrainer.judge_metrics import judge_summary
from rla_train.cotrainer.summary import format_summary


def test_the_summary_prints_the_judges_vote_balanced_accuracy_on_the_policys_steps_before_and_after():
    history = {"rm_probe_before": {"balanced_accuracy": 0.7, "policy": {"vote_balanced_accuracy": 0.6126, "good": 40,
                                                                        "bad": 20}},
               "rm_probe_after": {"balanced_accuracy": 0.72, "policy": {"vote_balanced_accuracy": 0.6875}},
               "judge_on_policy": {"first_step": {"judge_vote_balanced_accuracy": 0.55},
                                   "last_step": {"judge_vote_balanced_accuracy": 0.58}}}
    judge = judge_summary(history)
    assert judge == {"before": 0.6126, "after": 0.6875, "first_step": 0.55, "last_step": 0.58,
                     "probe_policy_steps": {"good": 40, "bad": 20}}
    lines = format_summary({"mode": "policy", "steps": 2, "judge_vote_balanced_accuracy": judge}).splitlines()
    start = lines.index("judge's vote balanced accuracy on the policy's steps (each vote against the step-label "
                        "oracle):")
    assert lines[start + 1].split() == ["probe", "steps", "the", "warm-started", "policy", "played", "before",
                                        "0.613,", "after", "0.688", "(40", "good", "/", "20", "bad",
                                        "steps)"]
    assert lines[start + 2].split() == ["votes", "on", "its", "training", "rollouts", "first", "step", "0.550,",
                                        "last", "step", "0.580"]


def test_without_an_oracle_or_a_probe_there_is_no_judge_accuracy_to_print():
    assert judge_summary({"rm_probe_before": {"balanced_accuracy": 0.7}}) is None
    assert "judge's vote" not in format_summary({"mode": "outcome_only", "steps": 2})
    only_steps = judge_summary({"judge_on_policy": {"first_step": {"judge_vote_balanced_accuracy": 0.5},
                                                    "last_step": {"judge_vote_balanced_accuracy": 0.75}}})
    assert only_steps == {"before": None, "after": None, "first_step": 0.5, "last_step": 0.75}
    assert "probe steps" not in format_summary({"judge_vote_balanced_accuracy": only_steps})
    # the policy's probe steps without a bad one: nothing to measure, and the counts say why
    no_bad = judge_summary({"rm_probe_before": {"policy": {"vote_balanced_accuracy": None, "good": 30, "bad": 0}}})
    assert no_bad == {"before": None, "after": None, "first_step": None, "last_step": None,
                      "probe_policy_steps": {"good": 30, "bad": 0}}
    assert "before n/a, after n/a  (30 good / 0 bad steps)" in format_summary({"judge_vote_balanced_accuracy": no_bad})


def _success(won, episodes=4):
    return {"success_rate": won / episodes, "won": won, "episodes": episodes, "ci_low": 0.0, "ci_high": 1.0,
            "mean_steps": 3.0}


def test_the_summary_prints_the_paired_test_and_no_raw_json():
    summary = {"mode": "policy", "steps": 2, "before": _success(1), "after": _success(3),
               "heldout_paired": {"episodes": 4, "improved": 2, "worsened": 0, "p_one_sided": 0.25}}
    lines = format_summary(summary).splitlines()
    assert lines[-1].strip().startswith("after vs before, same seeded episodes")
    assert "2 won only after, 0 only before: exact McNemar one-sided p = 0.25" in lines[-1]
    assert not any(line.lstrip().startswith("{") for line in lines)  # every figure is in summary.json, not on stdout


def test_a_phase_line_starts_its_own_line_in_a_log_beside_a_live_progress_bar(capsys):
    import sys

    from tqdm.auto import tqdm

    from rla_train.cotrainer.loop import _phase

    bar = tqdm(total=10, file=sys.stderr, leave=False, desc="rollouts")
    bar.update(3)  # a bar's line ends in a carriage return, not a newline
    _phase(True, "co-training steps 1-12")
    bar.close()
    lines = capsys.readouterr().err.split("\n")  # lines as grep sees them (splitlines would also split at \r)
    assert "[rla] co-training steps 1-12" in lines  # what grep '^\[rla\]' finds in a redirected stderr
