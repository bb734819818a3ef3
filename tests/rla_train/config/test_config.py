"""The co-trainer's config: defaults == configs/cpu-tiny.yaml, YAML round trip, --set overrides, checks, --help."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest
import yaml

from rla_train.config import (CONFIG_FILENAME, MODES, SECTIONS, ConfigError, TrainConfig, build_arg_parser, load_config,
                              parse_args)
from tests.paths import REPO_ROOT

CONFIGS = REPO_ROOT / "configs"
PAPER_CONFIGS = ["alfworld-qwen2.5-7b.yaml", "code-qwen2.5-7b.yaml", "osworld-qwen2.5-7b.yaml"]


def all_paths() -> list[str]:
    return [f"{name}.{f.name}" for name, cls in SECTIONS.items() for f in dataclasses.fields(cls)]


def test_defaults_equal_cpu_tiny_yaml_which_lists_every_field():
    path = CONFIGS / "cpu-tiny.yaml"
    assert load_config(path, check_hardware=False) == TrainConfig()
    written = yaml.safe_load(path.read_text())
    assert {s: set(v) for s, v in written.items()} == {s: set(v) for s, v in TrainConfig().to_dict().items()}
    assert TrainConfig().policy.model == "tiny" and TrainConfig().policy.action_mode == "choice"
    assert load_config() == TrainConfig()  # no file: the defaults, and they pass the hardware check on CPU


def test_every_field_has_help():
    for cls in SECTIONS.values():
        for spec in dataclasses.fields(cls):
            assert len(spec.metadata["help"]) > 10, f"{cls.__name__}.{spec.name} has no help"


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_paper_configs_load_at_paper_scale(name):
    config = load_config(CONFIGS / name, check_hardware=False)
    assert config.policy.model == "Qwen/Qwen2.5-7B-Instruct" and config.policy.backend == "transformers"
    assert config.policy.learning_rate == 1e-6  # written 1e-6, which YAML 1.1 reads as text
    assert config.rollout.group_size == 8 and config.reward_model.judgments_per_step == 3
    assert (config.pool.alpha_low, config.pool.alpha_high) == (0.2, 0.8)
    assert config.train.mode == "policy+reward+env"
    assert config.pool.pool_config(group_size=8).alpha_high == 0.8


def test_vllm_without_gpu_fails_at_start_with_the_cpu_fix():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    frozen_vllm_judge = ["train.mode=policy", "reward_model.backend=vllm", "reward_model.verdict_mode=text",
                         "reward_model.warm_start_steps=0"]
    with pytest.raises(ConfigError, match="reward_model.backend=transformers"):
        load_config(None, frozen_vllm_judge)


VLLM_POLICY = ["policy.backend=vllm", "policy.action_mode=text", "policy.show_admissible=last", "reward_model.kind=noisy_oracle",
               "reward_model.model=null"]


def test_a_vllm_policy_is_legal_and_fails_on_a_machine_without_cuda_before_any_model_loads():
    config = load_config(None, [*VLLM_POLICY, "policy.vllm_mode=server", "policy.vllm_server_port=8001"],
                         check_hardware=False)
    assert (config.policy.backend, config.policy.vllm_mode, config.policy.vllm_server_port) == ("vllm", "server", 8001)
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None:
        pytest.skip("this machine has a GPU and vllm")
    with pytest.raises(ConfigError, match=r'policy.backend=vllm needs a CUDA GPU and pip install "rla\[vllm\]"; '
                                          r"this machine lacks .*--set policy.backend=transformers"):
        load_config(None, VLLM_POLICY)


def test_yaml_round_trip(tmp_path):
    config = load_config(CONFIGS / "code-qwen2.5-7b.yaml", ["env.options.backend=docker"], check_hardware=False)
    saved = config.save(tmp_path / "run" / CONFIG_FILENAME)
    assert TrainConfig.load(saved) == config
    assert TrainConfig.from_dict(config.to_dict()) == config
    assert not list((tmp_path / "run").glob("*.tmp"))  # atomic write leaves no temp file


def test_overrides_nested_lists_booleans_numbers_and_aliases():
    config = load_config(None, [
        "policy.lr=1e-6", "policy.max_new_tokens=64", "rollout.group_size=4", "output.tensorboard=true",
        "env.options.task_types=[pick, clean]", "env.train_options.n_per_type=3", "policy.history_window=null",
        "train.mode=policy", "pool.decay=0.95", "pool.prior=[2, 1]", "reward_model.lam=0.5",
    ])
    assert config.policy.learning_rate == 1e-6 and isinstance(config.policy.learning_rate, float)
    assert config.policy.max_completion_length == 64
    assert config.rollout.group_size == 4 and config.output.tensorboard is True
    assert config.env.options == {"task_types": ["pick", "clean"]}
    assert config.env.train_options == {"split": "train", "n_per_type": 3}
    assert config.policy.history_window is None and config.train.mode == "policy"
    assert config.pool.pool_config().decay == 0.95 and config.reward_model.step_reward_weight == 0.5
    assert config.pool.pool_config().prior == (2.0, 1.0)
    # overrides apply over the file, and an int is accepted where a float is expected
    config = load_config(CONFIGS / "alfworld-qwen2.5-7b.yaml", ["train.steps=3", "reward_model.step_reward_weight=2"],
                         check_hardware=False)
    assert config.train.steps == 3 and config.reward_model.step_reward_weight == 2.0
    assert config.policy.model == "Qwen/Qwen2.5-7B-Instruct"


@pytest.mark.parametrize("override, match", [
    ("policy.learnin_rate=1e-6", "Did you mean 'policy.learning_rate'"),
    ("polcy.temperature=0.5", "Did you mean 'policy.temperature'"),
    ("rollout.group_sise=8", "Did you mean 'rollout.group_size'"),
    ("policy", "section.field=value"),
    ("policy.learning_rate.x=1", "is not a mapping"),
])
def test_unknown_keys_fail_with_did_you_mean(override, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, [override])


@pytest.mark.parametrize("override, match", [
    ("policy.lr_scheduler_type=linear", r"policy.lr_scheduler_type in --set was moved to optimizer.lr_scheduler_type"),
    ("policy.max_grad_norm=2", r"moved to optimizer.max_grad_norm.*policy.optimizer: \{max_grad_norm: ...\}"),
    ("train.logging_steps=5", r"train.logging_steps in --set was removed: it did nothing"),
    ("pool.options.decay=0.9", r"pool.options in --set was removed: .*pool.options.decay -> pool.decay"),
    ("reward_model.unit_test_samples=2", r"removed: the co-trainer does not run the reward model's unit-test writer"),
])
def test_retired_keys_say_what_became_of_them(override, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, [override])


def test_unknown_key_in_a_file_names_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("reward_model:\n  judgements_per_step: 3\n")
    with pytest.raises(ConfigError, match=r"bad.yaml.*Did you mean 'reward_model.judgments_per_step'"):
        load_config(path)


@pytest.mark.parametrize("override, match", [
    ("rollout.group_size=eight", r"rollout.group_size expects int, got str 'eight'"),
    ("policy.learning_rate=fast", r"policy.learning_rate expects float, got str 'fast'"),
    ("output.tensorboard=1", r"output.tensorboard expects bool, got int 1"),
    ("policy.model=7", r"policy.model expects str, got int 7.*quote"),
    ("env.options=[1]", r"env.options expects dict"),
])
def test_wrong_types_fail_with_field_type_and_value(override, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, [override])


@pytest.mark.parametrize("overrides, match", [
    (["train.mode=policy+rewards"], r"train.mode must be one of .*Did you mean 'policy\+reward'"),
    (["pool.alpha_low=0.9"], r"pool: need 0 <= alpha_low < alpha_high <= 1, got alpha_low=0.9, alpha_high=0.8"),
    (["pool.alpha_high=1.5"], r"pool: need 0 <= alpha_low < alpha_high <= 1"),
    (["rollout.group_size=1"], r"rollout.group_size must be >= 2.*GRPO"),
    (["reward_model.judgments_per_step=0"], r"judgments_per_step must be >= 1"),
    (["policy.learning_rate=0"], r"policy.learning_rate must be > 0"),
    (["policy.temperature=0"], r"GRPO advantages are all zero"),
    (["reward_model.model=null"], r"needs a reward model.*outcome_only"),
    (["policy.backend=openai", "policy.action_mode=text"],
     r"policy.backend must be one of \['transformers', 'vllm'\].*does not follow the trained weights"),
    (["policy.backend=vllm"], r"policy.action_mode=choice scores candidates with the transformers backend"),
    (["policy.vllm_mode=server"], r"policy.vllm_\* fields apply to policy.backend=vllm, but policy.backend=transformers"),
    (["policy.backend=vllm", "policy.action_mode=text", "policy.vllm_server_port=8001"],
     r"policy.vllm_server_port apply to policy.vllm_mode=server, got vllm_mode=colocate"),
    (["policy.backend=vllm", "policy.action_mode=text", "policy.vllm_mode=remote"], r"policy.vllm_mode must be one of"),
    (["policy.backend=vllm", "policy.action_mode=text", "reward_model.model=same-as-policy",
      "reward_model.backend=vllm"], r"shares the policy's weights .*would not see"),
    (["policy.optimizer={lr_scheduler: linear}"], r"policy.optimizer.lr_scheduler is not an optimizer field.*"
                                                   r"Did you mean 'lr_scheduler_type'"),
    (["reward_model.optimizer.learning_rate=1e-5"], r"not an optimizer field.*reward_model.learning_rate"),
    (["reward_model.optimizer.adam_beta2=1"], r"reward_model.optimizer: optimizer.adam_beta2 must be >= 0 and < 1"),
    (["optimizer.lr_scheduler_type=step"], r"optimizer.lr_scheduler_type must be one of"),
    # the CPU default's judge objective needs step labels, which code tasks do not have: the first fix named ...
    (["env.id=rla/Code-v0"], r"objective=labelled_balanced rewards agreeing .* not code; use reward_model.objective=paper"),
    (["env.id=rla/Code-v0", "reward_model.objective=paper"], r"action_mode=text"),  # ... then the next
    (["env.id=rla/AlfWorld-v1"], r"Did you mean 'rla/AlfWorld-v0'"),
    (["pool.rewriter=llm"], r"pool.rewriter_model"),
    (["reward_model.backend=openai", "reward_model.base_url=http://x/v1"], r"train.mode=policy to keep a frozen"),
    (["pool.decay=2"], r"pool: PoolConfig.decay must be in \(0, 1\]"),
    (["pool.strategy=learnabilty"], r"pool.strategy must be one of .*Did you mean 'learnability'"),
    (["pool.group_size=4"], r"unknown config key 'pool.group_size'.*Did you mean 'rollout.group_size'"),
    (["scale.vllm_mode=server"], r"unknown config key 'scale.vllm_mode'"),
    (["train.warm_start_demos=0"], r"warm_start_sft_steps=0"),
    (["reward_model.judgments_per_step=1"], r"trains the reward model .*judgments_per_step >= 2"),
    (["policy.group_filter=alfworld"], r"policy.group_filter must be one of .*Did you mean 'alfworld_release'"),
    (["policy.kl_reference=pre-update"], r"policy.kl_reference must be one of"),
])
def test_bad_values_fail_at_load_with_the_fix(overrides, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, overrides, check_hardware=False)


def test_modes_table_and_mode_specific_rules():
    assert set(MODES) == {"outcome_only", "policy", "policy+reward", "policy+reward+env", "reward_only", "gigpo"}
    assert not MODES["outcome_only"].reward_model and not MODES["reward_only"].outcome
    assert MODES["policy+reward+env"] == (True, True, True, True, "grpo")
    assert MODES["gigpo"] == (True, False, False, False, "gigpo")
    # no reward model is fine for the GRPO baseline; a frozen RM may be served over HTTP
    assert load_config(None, ["train.mode=outcome_only", "reward_model.model=null"]).mode.reward_model is False
    frozen = load_config(None, ["train.mode=policy", "reward_model.backend=openai", "reward_model.verdict_mode=text",
                                "reward_model.base_url=http://localhost:8000/v1", "reward_model.warm_start_steps=0"])
    assert frozen.mode == MODES["policy"]
    with pytest.raises(ConfigError, match="warm_start_steps=300 trains a choice judge.*set reward_model.warm_start_steps=0"):
        load_config(None, ["reward_model.verdict_mode=text"])
    with pytest.raises(ConfigError, match="verdict_mode=choice scores the two verdicts"):
        load_config(None, ["train.mode=policy", "reward_model.backend=openai",
                           "reward_model.base_url=http://localhost:8000/v1"])


def test_sections_accept_mappings_and_check_on_construction():
    config = TrainConfig(policy={"lr": 2e-5})
    assert config.policy.learning_rate == 2e-5
    with pytest.raises(ConfigError, match="Did you mean 'rollout.group_size'"):
        TrainConfig(rollout={"group_sizes": 4})


def test_help_lists_every_field_with_default_and_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_arg_parser().parse_args(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for path in all_paths():
        assert f"  {path} (" in text, path
    assert "default: 'policy+reward+env'" in text and "alias: policy.lr" in text
    assert "--config" in text and "--set" in text and "--resume" in text


def test_parse_args_config_set_and_resume(tmp_path, capsys):
    config = parse_args(["--config", str(CONFIGS / "cpu-tiny.yaml"), "--set", "train.steps=5",
                         "--set", f"output.dir={tmp_path / 'run'}"])
    assert config.train.steps == 5 and parse_args([]) == TrainConfig()
    config.save(tmp_path / "run" / CONFIG_FILENAME)
    resumed = parse_args(["--resume", str(tmp_path / "run"), "--set", "train.steps=9"])
    assert resumed.train.steps == 9 and resumed.train.resume_from == str(tmp_path / "run")
    assert resumed.output.dir == str(tmp_path / "run")
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--set", "rollout.group_size=1"])
    assert exit_info.value.code == 2 and "group_size must be >= 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--resume", str(tmp_path / "nothing-here")])
    assert "pass the output.dir of an earlier run" in capsys.readouterr().err


def test_the_labelled_judge_objective_needs_a_family_with_step_labels():
    config = load_config(None, ["reward_model.objective=labelled"])
    assert config.reward_model.objective == "labelled"                 # ALFWorld has the planner's labels
    with pytest.raises(ConfigError, match="reward_model.objective=labelled .* not code"):
        load_config(CONFIGS / "code-qwen2.5-7b.yaml", ["reward_model.objective=labelled", "train.mode=policy+reward"],
                    check_hardware=False)
    with pytest.raises(ConfigError, match="Did you mean|must be one of|choose"):
        load_config(None, ["reward_model.objective=consistency"])


def test_report_to_takes_trl_names_one_or_a_list():
    def trackers(*overrides):
        return load_config(None, list(overrides)).output.trackers()

    assert trackers() == [] and trackers("output.report_to=wandb") == ["wandb"]
    assert trackers("output.report_to=[wandb, tensorboard]", "output.tensorboard=true") == ["wandb", "tensorboard"]
    assert trackers("output.tensorboard=true") == ["tensorboard"]
    with pytest.raises(ConfigError, match=r"output.report_to names \['mlflow'\]; known: none, tensorboard, trackio"):
        trackers("output.report_to=mlflow")
    with pytest.raises(ConfigError, match="lists none beside trackers"):
        trackers("output.report_to=[none, wandb]")


def test_a_config_file_extends_another_and_names_only_what_it_changes(tmp_path):
    lora = load_config(REPO_ROOT / "configs" / "alfworld-qwen2.5-7b-lora.yaml", check_hardware=False)
    full = load_config(REPO_ROOT / "configs" / "alfworld-qwen2.5-7b.yaml", check_hardware=False)
    assert lora.policy.use_peft and lora.reward_model.use_peft and lora.policy.learning_rate == 1e-5
    changed = {f"{section}.{name}" for section, fields in full.to_dict().items() for name, value in fields.items()
               if lora.to_dict()[section][name] != value}
    assert changed == {f"{role}.{name}" for role in ("policy", "reward_model")
                       for name in ("use_peft", "lora_target_modules", "learning_rate")} | {"output.dir"}
    (tmp_path / "a.yaml").write_text("extends: b.yaml\ntrain: {steps: 3}\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match="extend each other in a loop"):
        load_config(tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: [x]\n")
    with pytest.raises(ConfigError, match="must name a YAML file"):
        load_config(tmp_path / "c.yaml")


def test_a_trust_region_on_the_policys_updates_needs_its_choice_distribution():
    config = load_config(None, ["policy.max_update_kl=0.05", "policy.update_backtracks=2"])
    assert (config.policy.max_update_kl, config.policy.update_backtracks) == (0.05, 2)
    with pytest.raises(ConfigError, match="action_mode=choice and policy.choice_logprob=true"):
        load_config(None, ["policy.max_update_kl=0.05", "policy.choice_logprob=false"])
    with pytest.raises(ConfigError, match="max_update_kl"):
        load_config(None, ["policy.max_update_kl=0"])
