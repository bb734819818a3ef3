"""benchmarks.ablation.objectives: the judge's co-training objectives side by side, the seed as the unit."""

from __future__ import annotations

import json

import pytest

from benchmarks.ablation.objectives import (ARMS, FINAL_POLICY_FILE, main, objective_table, overrides, read_run,
                                           read_runs, rejudge_config)
from rla_train.config import load_config
from rla_train.config.sections import RewardModelConfig


def test_the_arms_differ_only_in_what_trains_the_judge(tmp_path):
    configs = {arm: load_config(None, overrides(arm, 1, tmp_path / "warm", tmp_path / "out", steps=12,
                                                rm_learning_rate=1e-3), check_hardware=False).to_dict()
               for arm in ARMS}
    frozen = configs["frozen"]
    assert frozen["train"]["mode"] == "policy"  # the judge votes, is never trained
    assert frozen["policy"]["model"] == str(tmp_path / "warm" / "seed-1" / "warm-start" / "checkpoints"
                                            / "step-000000" / "policy")
    assert frozen["train"]["seed"] == 1 and frozen["train"]["steps"] == 12
    assert frozen["reward_model"]["learning_rate"] == 1e-3 and frozen["reward_model"]["label_rule"] == "progress"
    for arm, config in configs.items():
        differences = {(section, key) for section, fields in config.items() for key, value in fields.items()
                       if frozen[section][key] != value}
        expected = set() if arm == "frozen" else {("train", "mode"), ("reward_model", "objective"),
                                                   ("output", "dir")}
        assert differences == expected - ({("reward_model", "objective")} if arm == RewardModelConfig.objective else set()), arm
        assert config["output"]["dir"] == str(tmp_path / "out" / "seed-1" / arm)
    assert configs["labelled"]["reward_model"]["objective"] == "labelled"
    with pytest.raises(ValueError, match="unknown arm 'oracle'; the arms are frozen, paper"):
        overrides("oracle", 0, tmp_path, tmp_path, steps=1, rm_learning_rate=1e-3)


def _write_run(root, seed, arm, policy_before, policy_after, votes, labelled=(0.7, 0.7)):
    run = root / f"seed-{seed}" / arm
    run.mkdir(parents=True)
    probe = lambda policy, whole: {"vote_balanced_accuracy": whole, "auc": 0.8,  # noqa: E731
                                   "policy": {"vote_balanced_accuracy": policy, "good": 90, "bad": 500}}
    (run / "summary.json").write_text(json.dumps({"rm_probe_before": probe(policy_before, labelled[0]),
                                                  "rm_probe_after": probe(policy_after, labelled[1])}))
    (run / "metrics.jsonl").write_text("".join(json.dumps({"step": i + 1, "judge_vote_balanced_accuracy": v}) + "\n"
                                               for i, v in enumerate(votes)))
    return run


def test_changes_are_read_against_the_frozen_judge_per_seed(tmp_path):
    votes = [0.70, 0.71, 0.72, 0.66, 0.60, 0.62, 0.61]  # first three mean 0.71, last three 0.61
    _write_run(tmp_path, 0, "frozen", 0.66, 0.66, votes)
    _write_run(tmp_path, 0, "labelled", 0.66, 0.70, [v + 0.03 for v in votes], labelled=(0.7, 0.6))
    _write_run(tmp_path, 1, "frozen", 0.60, 0.60, votes)
    _write_run(tmp_path, 1, "labelled", 0.60, 0.62, votes)
    (tmp_path / "seed-1" / "paper").mkdir()  # unfinished: no summary
    (tmp_path / "seed-1" / "notes").mkdir()  # not an arm
    run = read_run(tmp_path / "seed-0" / "frozen")
    assert run["before"]["rollouts"] == pytest.approx(0.71) and run["after"]["rollouts"] == pytest.approx(0.61)
    assert read_run(tmp_path / "seed-1" / "paper") is None
    runs = read_runs(tmp_path)
    assert sorted(runs) == ["frozen", "labelled"] and sorted(runs["labelled"]) == [0, 1]
    table = objective_table(runs)
    against = table["against_frozen"]["labelled"]
    # policy probe: seed 0 (0.70 - 0.66) - 0 = +0.04, seed 1 (0.62 - 0.60) - 0 = +0.02: mean +0.03
    assert against["policy_probe"]["per_seed"] == {0: pytest.approx(0.04), 1: pytest.approx(0.02)}
    assert against["policy_probe"]["mean"] == pytest.approx(0.03) and against["policy_probe"]["n"] == 2
    # rollouts: both judges lose 0.10 on their own rollouts, so the difference is 0 on each seed
    assert against["rollouts"]["per_seed"] == {0: pytest.approx(0.0), 1: pytest.approx(0.0)}
    # the labelled probe: seed 0 loses 0.1 where the frozen judge keeps 0.7
    assert against["labelled_probe"]["per_seed"][0] == pytest.approx(-0.1)
    assert table["arms"]["frozen"]["policy_probe"]["mean"] == pytest.approx(0.0)


def test_a_run_without_the_policy_probe_is_refused_with_the_settings_to_use(tmp_path):
    run = _write_run(tmp_path, 0, "paper", 0.6, 0.6, [0.7])
    (run / "summary.json").write_text(json.dumps({"rm_probe_before": {"vote_balanced_accuracy": 0.7}}))
    with pytest.raises(ValueError, match="reward_model.probe_policy_episodes > 0"):
        read_run(run)


def test_report_only_prints_and_writes_the_table(tmp_path, capsys):
    _write_run(tmp_path, 0, "frozen", 0.66, 0.65, [0.7, 0.6])
    _write_run(tmp_path, 0, "paper", 0.66, 0.60, [0.7, 0.5])
    assert main(["--out", str(tmp_path), "--report-only", "--json", str(tmp_path / "table.json")]) == 0
    printed = capsys.readouterr().out
    assert "| paper | the warm-started policy's probe steps | 0: -0.050 |" in printed
    assert "| frozen | the warm-started policy's probe steps | 0: 0.660 -> 0.650 |" in printed
    saved = json.loads((tmp_path / "table.json").read_text())
    assert saved["against_frozen"]["paper"]["policy_probe"]["mean"] == pytest.approx(-0.05)
    assert main(["--out", str(tmp_path / "nothing"), "--report-only"]) == 1


def test_rejudge_plays_the_final_policy_and_asks_the_step_0_and_the_last_judge(tmp_path):
    run = tmp_path / "seed-0" / "paper"
    recorded = load_config(None, overrides("paper", 0, tmp_path / "warm", tmp_path, steps=12, rm_learning_rate=1e-3),
                           check_hardware=False)
    run.mkdir(parents=True)
    recorded.save(run / "config.yaml")
    with pytest.raises(FileNotFoundError, match="step-000012/policy is missing: --rejudge needs"):
        rejudge_config(run, 0)
    for step in (0, 12):
        for role in ("policy", "reward_model"):
            (run / "checkpoints" / f"step-{step:06d}" / role).mkdir(parents=True)
    before, after = rejudge_config(run, 0), rejudge_config(run, 12, probe=False)
    for config in (before, after):
        assert config.policy.model == str(run / "checkpoints" / "step-000012" / "policy")  # the final policy plays
        assert (config.train.warm_start_sft_steps, config.train.warm_start_listwise_steps,
                config.reward_model.warm_start_steps) == (0, 0, 0)
        assert config.train.seed == 0 and config.reward_model.label_rule == "progress"
    assert before.reward_model.model == str(run / "checkpoints" / "step-000000" / "reward_model")
    assert after.reward_model.model == str(run / "checkpoints" / "step-000012" / "reward_model")
    assert before.reward_model.probe_episodes == recorded.reward_model.probe_episodes > 0
    assert after.reward_model.probe_episodes == 0  # the steps are played once, with the first judge's components


def test_the_final_policys_steps_are_a_change_within_the_run(tmp_path):
    _write_run(tmp_path, 0, "frozen", 0.66, 0.66, [0.7])  # no judge saved: never rejudged
    for seed, (before, after) in enumerate([(0.58, 0.61), (0.60, 0.64)]):
        run = _write_run(tmp_path, seed, "labelled", 0.66, 0.65, [0.7])
        (run / FINAL_POLICY_FILE).write_text(json.dumps({
            "before": {"vote_balanced_accuracy": before, "good": 120, "bad": 500},
            "after": {"vote_balanced_accuracy": after, "good": 120, "bad": 500}}))
    runs = read_runs(tmp_path)
    assert runs["labelled"][1]["before"]["final_policy"] == 0.60 and "final_policy" not in runs["frozen"][0]["after"]
    table = objective_table(runs)
    row = table["arms"]["labelled"]["final_policy"]
    # the same steps judged by the step-0 and the last judge: +0.03 and +0.04, mean +0.035 over the two seeds
    assert [round(cell["change"], 3) for cell in row["per_seed"].values()] == [0.03, 0.04]
    assert row["mean"] == pytest.approx(0.035) and row["n"] == 2
    assert "final_policy" not in table["arms"]["frozen"]
    assert "final_policy" not in table["against_frozen"]["labelled"]  # the control has none: the change stands alone
    assert set(table["against_frozen"]["labelled"]) == {"policy_probe", "labelled_probe", "rollouts"}
