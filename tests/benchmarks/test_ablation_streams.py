"""benchmarks.ablation.streams: arms replicated over training streams, read from ablation outputs on disk."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.ablation.streams import Run, format_streams, main, read_runs, stream_table, warm_start_fingerprint

W = warm_start_fingerprint({"before": {"outcomes": [1] + [0] * 7}}, "-")
"""The fingerprint of the warm start every run below trains from unless told otherwise."""


def _write_run(root, seed, arm, mode, stream, in_domain, ood, episodes=8, warm_start=1):
    """One finished arm run; ``warm_start`` is how many episodes its warm-started policy won before training (the
    seed's warm start, unless told otherwise)."""
    run = root / "real" / f"seed-{seed}" / f"arm-{arm}"
    (run / "ood").mkdir(parents=True)
    wins = lambda k: [True] * k + [False] * (episodes - k)  # noqa: E731
    (run / "summary.json").write_text(json.dumps({"before": {"outcomes": wins(warm_start)},
                                                  "after": {"outcomes": wins(in_domain)}}))
    (run / "ood" / "summary.json").write_text(json.dumps({"before": {"outcomes": wins(ood)}}))
    (run / "config.yaml").write_text(f"train:\n  seed: {seed}\n  mode: {mode}\n  training_stream: {stream}\n")


def test_streams_are_averaged_within_a_seed_and_the_seed_is_the_unit(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    _write_run(first, 0, "outcome_only", "outcome_only", 0, 2, 1)
    _write_run(first, 0, "control", "outcome_only", 1, 4, 1)      # the control arm is outcome_only's stream 1
    _write_run(second, 0, "outcome_only", "outcome_only", 2, 3, 1)
    _write_run(first, 0, "gigpo", "gigpo", 0, 5, 2)
    _write_run(first, 1, "outcome_only", "outcome_only", 0, 1, 0)
    _write_run(first, 1, "gigpo", "gigpo", 0, 3, 2)
    (first / "real" / "seed-1" / "arm-unfinished").mkdir()         # no summary: not a run
    runs = read_runs([first, second])
    assert sorted(runs) == sorted([Run(0, W, "outcome_only", 0, {"in_domain": .25, "ood": .125}),
                                   Run(0, W, "outcome_only", 1, {"in_domain": .5, "ood": .125}),
                                   Run(0, W, "outcome_only", 2, {"in_domain": .375, "ood": .125}),
                                   Run(0, W, "gigpo", 0, {"in_domain": .625, "ood": .25}),
                                   Run(1, W, "outcome_only", 0, {"in_domain": .125, "ood": 0.0}),
                                   Run(1, W, "gigpo", 0, {"in_domain": .375, "ood": .25})])
    table = stream_table(runs, ["outcome_only", "gigpo"])
    row = table["arms"]["outcome_only"]["in_domain"]
    assert row["per_seed"][0] == {W: {"streams": {0: .25, 1: .5, 2: .375}, "mean": .375}} and row["runs"] == 4
    # seed 0's three streams around their mean 0.375 (seed 1's single run adds nothing): sqrt(2 x 0.125^2 / 2)
    assert row["run_sd"] == pytest.approx(0.125)
    difference = table["differences"]["gigpo - outcome_only"]["in_domain"]
    assert difference["per_seed"] == {0: pytest.approx(.25), 1: pytest.approx(.25)}
    assert difference["mean"] == pytest.approx(.25) and difference["n"] == 2
    assert math.isclose(difference["ci_low"], difference["ci_high"])  # the same difference on both seeds
    text = format_streams(table)
    assert "seed 0: 25.0, 50.0, 37.5 (37.5)" in text and "+25.0 [+25.0, +25.0] (2 seeds)" in text
    assert "| gigpo | in_domain | seed 0: 62.5 (62.5); seed 1: 37.5 (37.5) | n/a |" in text
    one_seed = format_streams(stream_table([run for run in runs if run.seed == 0], ["outcome_only", "gigpo"]))
    assert "| gigpo - outcome_only | in_domain | +25.0 | +25.0 [no interval] (1 seed) |" in one_seed


def test_the_command_line_prints_and_writes_the_table(tmp_path, capsys):
    _write_run(tmp_path, 0, "outcome_only", "outcome_only", 0, 2, 1)
    _write_run(tmp_path, 0, "gigpo", "gigpo", 0, 4, 1)
    assert main([str(tmp_path), "--arms", "outcome_only", "gigpo", "--json", str(tmp_path / "t.json")]) == 0
    assert "gigpo - outcome_only" in capsys.readouterr().out
    assert json.loads((tmp_path / "t.json").read_text())["differences"]["gigpo - outcome_only"]["in_domain"]["n"] == 1


def test_arms_are_told_apart_by_name_and_a_copied_run_counts_once(tmp_path):
    # oracle and judge arms all run train.mode=policy: the arm is the directory's name
    first, copy = tmp_path / "first", tmp_path / "copy"
    _write_run(first, 0, "outcome_only", "outcome_only", 0, 2, 1)
    _write_run(first, 0, "oracle@0.9", "policy", 0, 5, 3)
    _write_run(first, 0, "judge@4x20", "policy", 0, 1, 0)
    _write_run(copy, 0, "outcome_only", "outcome_only", 0, 2, 1)   # the same run, copied into a second output
    _write_run(copy, 0, "control", "outcome_only", 1, 4, 1)
    runs = read_runs([first, copy])
    assert sorted(runs) == sorted([Run(0, W, "outcome_only", 0, {"in_domain": .25, "ood": .125}),
                                   Run(0, W, "outcome_only", 1, {"in_domain": .5, "ood": .125}),
                                   Run(0, W, "oracle@0.9", 0, {"in_domain": .625, "ood": .375}),
                                   Run(0, W, "judge@4x20", 0, {"in_domain": .125, "ood": 0.0})])
    table = stream_table(runs, ["outcome_only", "oracle@0.9"])
    assert table["differences"]["oracle@0.9 - outcome_only"]["in_domain"]["per_seed"] == {0: pytest.approx(.25)}


def test_two_results_for_one_warm_start_arm_and_stream_are_refused(tmp_path):
    # e.g. the same arm run under other step labels from the same warm start: not two streams of one arm
    first, other = tmp_path / "record", tmp_path / "progress"
    _write_run(first, 0, "oracle@0.9", "policy", 0, 5, 3)
    _write_run(other, 0, "oracle@0.9", "policy", 0, 4, 3)
    with pytest.raises(ValueError, match=f"two results for seed 0, warm start {W}, arm oracle@0.9, stream 0"):
        read_runs([first, other])


def test_another_machine_s_warm_starts_of_a_seed_are_averaged_within_the_seed(tmp_path):
    # two machines make different warm starts from one seed (their before-training outcomes differ); each arm is
    # paired with the other on its own warm start, and the seed's warm starts are averaged, never counted as seeds
    xeon, epyc = tmp_path / "xeon", tmp_path / "epyc"
    _write_run(xeon, 0, "outcome_only", "outcome_only", 0, 2, 1, warm_start=3)
    _write_run(xeon, 0, "oracle@0.9", "policy", 0, 5, 1, warm_start=3)     # +3 of 8 on the Xeon's warm start
    _write_run(epyc, 0, "outcome_only", "outcome_only", 0, 4, 1)
    _write_run(epyc, 0, "control", "outcome_only", 1, 2, 1)
    _write_run(epyc, 0, "oracle@0.9", "policy", 0, 4, 1)                   # +1 of 8 on the EPYC's (streams' mean 3)
    _write_run(epyc, 1, "outcome_only", "outcome_only", 0, 1, 0)
    _write_run(epyc, 1, "oracle@0.9", "policy", 0, 2, 0)                   # +1 of 8
    _write_run(epyc, 2, "oracle@0.9", "policy", 0, 2, 0)                   # no outcome_only on seed 2: no pair
    table = stream_table(read_runs([xeon, epyc]), ["outcome_only", "oracle@0.9"])
    seed_0 = table["arms"]["outcome_only"]["in_domain"]["per_seed"][0]
    assert len(seed_0) == 2 and sorted(cell["mean"] for cell in seed_0.values()) == [.25, .375]
    difference = table["differences"]["oracle@0.9 - outcome_only"]["in_domain"]
    assert difference["per_seed"] == {0: pytest.approx((3 / 8 + 1 / 8) / 2), 1: pytest.approx(1 / 8)}
    assert difference["n"] == 2 and difference["warm_starts"] == 3
    text = format_streams(table)
    assert f"seed 0 ({W}): 50.0, 25.0 (37.5)" in text and "(2 seeds, 3 warm starts)" in text
