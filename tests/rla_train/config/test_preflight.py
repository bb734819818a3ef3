"""Checks before any work (issue 15, item 6): model names that would go to the hub by mistake, env options the env
rejects, and a warm-start-and-evaluate run (train.steps=0), each a one-line error naming the field and the fix."""

from __future__ import annotations

import json

import pytest

from rla_train.config import ConfigError, load_config
from rla_train.config.preflight import check_env_options, check_model_name, is_hub_id
from tests.rla_envs.alfworld.conftest import alfworld_cache  # noqa: F401  (a private RLA_CACHE for the session)

SMALL = ["env.id=rla/TextWorld-v0", "env.options={levels: [custom-1], games_per_level: 2}", "env.train_options={}",
         "env.eval_options={}", "train.mode=outcome_only", "reward_model.model=null", "train.steps=2",
         "train.warm_start_sft_steps=0"]
ALFWORLD = ["env.id=rla/AlfWorld-v0", "env.options={task_types: [pick_and_place_simple]}"]


@pytest.mark.parametrize("name", ["bogus", "./missing/model", "/nowhere/model", "runs/a/checkpoints/step-000001/policy",
                                  "~/missing"])
def test_a_model_name_that_is_no_directory_nor_hub_id_fails_at_load(name):
    with pytest.raises(ConfigError, match=f"policy.model='{name}' is not 'tiny', an existing model directory"):
        load_config(None, [f"policy.model={name}"])


def test_hub_ids_are_the_only_names_left_for_the_hub(monkeypatch, tmp_path):
    assert is_hub_id("Qwen/Qwen2.5-7B-Instruct") and not is_hub_id("bogus") and not is_hub_id("/abs/path")
    assert not is_hub_id("a/b/c") and not is_hub_id("../model")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert not is_hub_id("runs/typo") and is_hub_id("org/model")  # beside runs/, runs/typo is a mistyped path
    check_model_name("policy.model", "Qwen/Qwen2.5-7B-Instruct")  # asked for by name: allowed, nothing fetched
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="not in the local cache, and HF_HUB_OFFLINE is set"):
        check_model_name("policy.model", "rla-tests-nobody/no-such-model")


def test_a_directory_without_a_model_points_at_the_checkpoints_policy(tmp_path):
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "config.json").write_text(json.dumps({}))
    with pytest.raises(ConfigError, match=f"no config.json\\); its model is {tmp_path / 'policy'}"):
        check_model_name("reward_model.model", str(tmp_path))
    check_model_name("reward_model.model", str(tmp_path / "policy"))


def test_server_model_names_are_not_paths():
    config = load_config(None, ["train.mode=policy", "reward_model.backend=openai", "reward_model.model=judge-7b",
                                "reward_model.base_url=http://localhost:8000/v1", "reward_model.verdict_mode=text",
                                "reward_model.warm_start_steps=0", "reward_model.probe_episodes=0"])
    config.check_models()  # an OpenAI-compatible server's model name: not checked as a path


@pytest.mark.parametrize("options, match", [
    ({"split": "bogus"}, "env.train_options: rla/AlfWorld-v0 rejects .*split must be one of"),
    ({"n_per_typ": 3}, "takes no option 'n_per_typ'.*Did you mean 'n_per_type'"),
])
def test_env_options_the_env_rejects_fail_with_the_field(options, match):
    with pytest.raises(ConfigError, match=match):
        check_env_options("rla/AlfWorld-v0", options, "env.train_options")


def test_train_checks_env_options_before_touching_the_run_directory(tmp_path):
    from rla_train.cotrainer.loop import train

    run_dir = tmp_path / "run"
    config = load_config(None, [*SMALL, *ALFWORLD, "env.train_options={split: bogus}", f"output.dir={run_dir}"])
    with pytest.raises(ConfigError, match="env.train_options .*split must be one of"):
        train(config, progress=False)
    assert not run_dir.exists()


def test_the_command_line_prints_one_line_for_a_bad_model_name(tmp_path, capsys):
    from rla_train.run import main

    with pytest.raises(SystemExit) as exited:
        main(["--set", "policy.model=no-such-model", "--set", f"output.dir={tmp_path}"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "policy.model='no-such-model'" in err and "hub id written org/name" in err


@pytest.mark.slow
def test_train_steps_zero_warm_starts_evaluates_and_saves_step_zero(alfworld_cache, tmp_path):
    """train.steps=0 is a legal run (the ablation's warm start and its out-of-domain evaluation): end to end."""
    from rla_train.cotrainer.checkpoint import latest_checkpoint
    from rla_train.cotrainer.loop import train
    from tests.rla_train.cotrainer.test_cotrain import SMALL as TINY_RUN

    config = load_config(None, [*TINY_RUN, "train.steps=0", "train.mode=outcome_only", "reward_model.model=null",
                                "train.probe_episodes=0", f"output.dir={tmp_path}"])
    summary = train(config, progress=False)
    assert summary["steps"] == 0 and "before" in summary and "after" not in summary
    assert latest_checkpoint(tmp_path).name == "step-000000"
    assert json.loads((tmp_path / "summary.json").read_text())["before"]["episodes"] == 2
