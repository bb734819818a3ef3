"""LoRA adapters in the co-trainer (policy.use_peft / reward_model.use_peft) on the tiny models: only the adapters
train, checkpoints hold adapters, benchmarks.evaluate plays them, merge_lora writes a model that computes the same."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("peft")

from rla_train.config import ConfigError, load_config  # noqa: E402
from tests.rla_envs.alfworld.conftest import alfworld_cache  # noqa: E402,F401  (a private RLA_CACHE for the session)
from tests.rla_train.cotrainer.test_cotrain import SMALL  # noqa: E402

LORA = ["policy.use_peft=true", "reward_model.use_peft=true", "policy.lora_target_modules=all-linear",
        "reward_model.lora_r=4", "reward_model.lora_alpha=8"]


@pytest.fixture(scope="module")
def lora_run(alfworld_cache, tmp_path_factory):
    from rla_train.cotrainer.loop import train

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("lora-run")
    # policy+reward: the choice policy and the verdict chooser both score and train through their adapters
    summary = train(load_config(None, [*SMALL, *LORA, "train.mode=policy+reward", f"output.dir={out}"]), progress=False)
    assert summary["steps"] == 2
    return out


def _state(path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path).state_dict()  # an adapter directory loads over its base


@pytest.mark.parametrize("role, seed_offset", [("policy", 0), ("reward_model", 1)])
def test_only_the_adapters_train_and_checkpoints_hold_them(lora_run, role, seed_offset):
    from rla_train.cotrainer.play_setup import load_model

    first, last = (lora_run / "checkpoints" / step / role for step in ("step-000000", "step-000002"))
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in last.iterdir()}
    assert not (last / "model.safetensors").exists()
    before, after = _state(first), _state(last)
    changed = [name for name in after if not torch.equal(before[name], after[name])]
    assert changed and all(".lora_" in name for name in changed)
    base = load_model("tiny", seed=seed_offset)[0].state_dict()  # the run's base: the tiny model of the run's seed
    kept = {name: value for name, value in after.items() if ".lora_" not in name}
    assert all(torch.equal(base[name.replace(".base_layer", "")], value) for name, value in kept.items())


def test_evaluate_plays_the_adapter_and_merge_lora_computes_the_same(lora_run, tmp_path):
    from transformers import AutoModelForCausalLM

    from benchmarks.evaluate.checkpoints import resolve_policy
    from benchmarks.evaluate.cli import main as evaluate
    from rla_train.cotrainer.play_setup import load_model
    from rla_train.merge_lora import main as merge

    source = resolve_policy(lora_run)
    assert source.model.endswith("step-000002/policy") and source.reward_model.endswith("step-000002/reward_model")
    assert evaluate(["--policy", str(lora_run), "--episodes", "2", "--out", str(tmp_path / "eval"), "--no-progress"]) == 0
    results = json.loads((tmp_path / "eval" / "table.json").read_text())
    assert results and "step-000002" in json.dumps(results)
    assert merge([str(lora_run), "--out", str(tmp_path / "merged")]) == 0
    ids = torch.arange(1, 40).unsqueeze(0)
    with torch.no_grad():
        adapted = AutoModelForCausalLM.from_pretrained(source.model).eval()(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(tmp_path / "merged").eval()(ids).logits
        base = load_model("tiny", seed=0)[0].eval()(ids).logits
    assert (merged - adapted).abs().max() < 1e-4      # measured 5e-7: the same function, rounded differently
    assert (adapted - base).abs().max() > 1e-2        # measured 1.06: the adapter does change the policy
    with pytest.raises(SystemExit):
        merge([str(tmp_path / "merged"), "--out", str(tmp_path / "again")])  # a full model: nothing to merge


def test_lora_settings_are_checked_where_they_cannot_apply():
    with pytest.raises(ConfigError, match="set policy.use_peft instead"):
        load_config(None, ["reward_model.use_peft=true", "reward_model.model=same-as-policy"])
    with pytest.raises(ConfigError, match=r"policy.lora_dropout must be >= 0 and < 1, got 1.0"):
        load_config(None, ["policy.use_peft=true", "policy.lora_dropout=1.0"])


def test_the_warm_starts_train_the_adapters_alone(alfworld_cache, tmp_path):
    """The policy's SFT and listwise warm starts and the reward model's warm start, each on its adapter."""
    from rla_train.cotrainer.loop import train
    from rla_train.cotrainer.play_setup import load_model
    from tests.rla_train.cotrainer.test_cotrain import WARM_START

    torch.set_num_threads(1)
    settings = [s for s in WARM_START if s not in ("train.mode=outcome_only", "reward_model.model=null")]
    config = load_config(None, [*settings, *LORA, "train.mode=policy+reward", "reward_model.warm_start_steps=4",
                                "reward_model.warm_start_episodes=2", "reward_model.probe_episodes=0",
                                "reward_model.probe_policy_episodes=0", f"output.dir={tmp_path}"])
    summary = train(config, progress=False)
    assert summary["warm_start"]["warm_start_listwise_steps"] == 8 and "rm_warm_start" in summary
    for role, seed in (("policy", 0), ("reward_model", 1)):
        started = _state(tmp_path / "checkpoints" / "step-000000" / role)
        base = load_model("tiny", seed=seed)[0].state_dict()
        lora = {name: value for name, value in started.items() if ".lora_B." in name}
        assert lora and any(value.abs().sum() > 0 for value in lora.values()), role  # B starts at 0: it trained
        kept = {name: value for name, value in started.items() if ".lora_" not in name}
        assert all(torch.equal(base[name.replace(".base_layer", "")], value) for name, value in kept.items()), role


def test_a_resume_refuses_an_adapter_saved_with_other_settings(tmp_path):
    from types import SimpleNamespace

    from rla_train.cotrainer.lora import load_saved_weights, with_adapter
    from rla_train.cotrainer.play_setup import load_model

    def adapted(rank):
        section = SimpleNamespace(lora_r=rank, lora_alpha=8, lora_dropout=0.0, lora_target_modules=None)
        return with_adapter(load_model("tiny", seed=0)[0], section, base="tiny-base")

    saved = adapted(4)
    saved.save_pretrained(tmp_path / "adapter")
    same = adapted(4)
    load_saved_weights(same, tmp_path / "adapter")
    assert all(torch.equal(a, b) for a, b in zip(saved.state_dict().values(), same.state_dict().values()))
    with pytest.raises(ValueError, match="saved with r=4, but the model was built with r=8"):
        load_saved_weights(adapted(8), tmp_path / "adapter")
    with pytest.raises(ValueError, match="built without one"):
        load_saved_weights(load_model("tiny", seed=0)[0], tmp_path / "adapter")
    with pytest.raises(ConfigError, match="is a LoRA adapter, not a model; merge it"):
        load_config(None, [f"policy.model={tmp_path / 'adapter'}"])
    with pytest.raises(ConfigError, match="kl_reference=pre_update"):
        load_config(None, ["policy.use_peft=true", "policy.beta=0.01"])
