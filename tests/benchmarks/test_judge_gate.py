"""Gate C's measurement script: its variant names and its table (the measurement itself runs in benchmarks/)."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.ablation.judge_gate import format_table, parse_variant


def test_variants_are_named_episodes_steps_and_optionally_large_and_onpolicy():
    variant = parse_variant("432/1000/large")
    assert (variant.episodes, variant.steps, variant.large, variant.name) == (432, 1000, True, "432/1000/large")
    assert parse_variant("144/300").name == "144/300" and not parse_variant("144/300").large
    assert parse_variant("144/300").expert_share == 0.5
    onpolicy = parse_variant("1296/8000/onpolicy")
    assert (onpolicy.large, onpolicy.onpolicy, onpolicy.expert_share, onpolicy.name) == \
        (False, True, 0.0, "1296/8000/onpolicy")
    assert parse_variant("1/2/large/onpolicy").name == "1/2/large/onpolicy"
    linear = parse_variant("1296/8000/linear")
    assert (linear.schedule, linear.onpolicy, linear.name) == ("linear", False, "1296/8000/linear")
    assert parse_variant("144/300").schedule == "constant"
    for bad in ("144", "144/x", "144/300/huge", "1/2/large/3", "1/2/onpolicy/large", "1/2/large/large", "1/2/linear/onpolicy"):
        with pytest.raises(argparse.ArgumentTypeError, match="EPISODES/STEPS"):
            parse_variant(bad)


def test_the_table_passes_a_variant_only_when_every_seed_reaches_the_gate():
    def seed(number, votes):
        return {"seed": number, "labelled_steps": 100, "bad_steps": 10,
                "variants": {name: {"vote_balanced_accuracy": v, "verdict_balanced_accuracy": v + 0.01}
                             for name, v in votes.items()}}

    table = format_table([seed(0, {"144/300": 0.79, "144/1000": 0.85}), seed(1, {"144/300": 0.9, "144/1000": 0.8})])
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines() if line.startswith("| 144")}
    assert rows["144/300"].endswith("| no |") and rows["144/1000"].endswith("| yes |")   # 0.79 < 0.80 on seed 0
    assert "0.850 (majority 0.860)" in rows["144/1000"]


def test_a_variant_with_a_class_missing_is_not_a_pass_and_does_not_crash_the_table():
    result = {"seed": 0, "labelled_steps": 5, "bad_steps": 0,
              "variants": {"144/300": {"vote_balanced_accuracy": None, "verdict_balanced_accuracy": None}}}
    row = next(line for line in format_table([result]).splitlines() if line.startswith("| 144/300"))
    assert "n/a (majority n/a)" in row and row.endswith("| no |")


def test_votes_and_labels_pair_step_by_step_when_an_episode_has_fewer_labels_than_judged_steps():
    from types import SimpleNamespace

    from benchmarks.ablation.judge_gate import aligned

    episodes = [SimpleNamespace(judgments=[[1, 1], [-1, 1], [1, -1]]), SimpleNamespace(judgments=[[-1, -1]])]
    votes, labels = aligned(episodes, [[True, False], [False, True]])
    assert votes == [[1, 1], [-1, 1], [-1, -1]] and labels == [True, False, False]


def test_the_view_ceiling_gives_each_distinct_prompt_the_verdict_right_for_most_of_its_class_weight():
    from benchmarks.ablation.judge_gate import view_ceiling

    # 1 good, 3 bad: "a" holds the good step and a bad one; weighted, the good one counts 3x, so "a" is called good
    assert view_ceiling(["a", "a", "b", "c"], [True, False, False, False]) == {
        "steps": 4, "distinct_prompts": 3, "ambiguous_prompts": 1, "ceiling_balanced_accuracy": 0.8333}
    # every prompt decides its label: a judge could be right on all of them
    assert view_ceiling(["a", "b", "b"], [True, False, False])["ceiling_balanced_accuracy"] == 1.0
    # one class missing: no balanced accuracy
    assert view_ceiling(["a"], [True])["ceiling_balanced_accuracy"] is None
    with pytest.raises(ValueError, match="2 prompts for 1 labels"):
        view_ceiling(["a", "b"], [True])
