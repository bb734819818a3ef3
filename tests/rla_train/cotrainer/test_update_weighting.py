"""SampleTrainer's updates weigh every sample alike and clip against the sampling policy (issue 24, item 10)."""

from __future__ import annotations

import pytest
import torch

from rla_train.cotrainer.policy_update import SampleTrainer
from rla_train.signals.samples import Sample

PROMPT = "<|im_start|>user\nwhere now?<|im_end|>\n<|im_start|>assistant\n"
COMMANDS = ("go to fridge 1", "look", "open drawer 2", "take apple 1 from table 1", "inventory", "go to shelf 3",
            "put apple 1 in/on fridge 1", "examine table 1", "close drawer 2", "go to countertop 1")


def make_trainer(path, tmp_path, **options):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64)
    tokenizer = AutoTokenizer.from_pretrained(path)
    settings = {"learning_rate": 1e-3, "lr_scheduler_type": "constant", "beta": 0.0, "max_grad_norm": 0.0,
                "per_device_train_batch_size": 8, **options}
    args = GRPOConfig(output_dir=str(tmp_path), num_generations=2, use_cpu=True, report_to="none", bf16=False,
                      max_completion_length=16, **settings)
    return SampleTrainer(model, tokenizer, args, total_steps=10), tokenizer


def ten_samples(tokenizer):
    prompt = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    return [Sample(prompt, tokenizer(c + "<|im_end|>", add_special_tokens=False)["input_ids"], a)
            for c, a in zip(COMMANDS, (1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1.5, -1.5, 0.25, 1.0))]


def step_gradients(trainer, samples) -> list[torch.Tensor]:
    """The gradients of one optimizer step of ``trainer.update(samples)`` (taken just before the step)."""
    captured = []
    step = trainer.optimizer.step  # the step as the learning-rate scheduler wraps it (it counts the steps taken)

    def capture(*args, **kwargs):
        captured.append([p.grad.detach().clone() for p in trainer.model.parameters() if p.grad is not None])
        return step(*args, **kwargs)

    trainer.optimizer.step = capture
    trainer.update(samples)
    assert len(captured) == 1
    return captured[0]


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo"])
def test_a_partial_last_micro_batch_weighs_its_rows_as_the_others(tiny_model_path, tmp_path, loss_type):
    # 10 rows in micro-batches of 8 + 2 must give the gradient of one micro-batch of 10: before the fix TRL's
    # per-micro-batch mean / 2 micro-batches gave each of the last 2 rows 8/2 = 4 times the others' weight
    split, _ = make_trainer(tiny_model_path, tmp_path / "a", loss_type=loss_type, per_device_train_batch_size=8)
    whole, tokenizer = make_trainer(tiny_model_path, tmp_path / "b", loss_type=loss_type,
                                    per_device_train_batch_size=10)
    samples = ten_samples(tokenizer)
    a = torch.cat([g.flatten() for g in step_gradients(split, samples)])
    b = torch.cat([g.flatten() for g in step_gradients(whole, samples)])
    # the split's rounding (TRL computes log-probabilities in float32) stays near 1e-7 of the gradient's norm; the
    # old weighting was off by ~1e-1
    assert float((a - b).norm() / b.norm()) < 1e-5


def choice_trainer(path, tmp_path, temperature):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    tokenizer = AutoTokenizer.from_pretrained(path)
    args = GRPOConfig(output_dir=str(tmp_path), learning_rate=1e-3, per_device_train_batch_size=4, num_generations=2,
                      use_cpu=True, report_to="none", bf16=False, max_completion_length=8, beta=0.0,
                      temperature=temperature)
    return SampleTrainer(AutoModelForCausalLM.from_pretrained(path), tokenizer, args, total_steps=3,
                         choice_logprob=True), tokenizer


def trained_probability(trainer, sample: Sample) -> float:
    """exp of the log-probability the trainer's clipped ratio uses for ``sample`` (its choice, no gradient)."""
    (batch,) = trainer._micro_batches([sample])
    return float(trainer._logps(trainer.model, batch).exp())


@pytest.mark.parametrize("temperature", [0.5, 3.0])
def test_a_choice_policy_trains_the_distribution_it_sampled_from(tiny_model_path, tmp_path, temperature):
    # the choice is drawn from softmax(scores / T); the ratio's log-probability was log softmax(scores) (T = 1)
    from rla_train.backends.base import SamplingParams
    from rla_train.backends.choice import ChoiceBackend
    from rla_train.backends.hf import TransformersBackend

    trainer, tokenizer = choice_trainer(tiny_model_path, tmp_path, temperature)
    backend = ChoiceBackend(TransformersBackend(trainer.model, tokenizer))
    chat = [{"role": "user", "content": "You are in a kitchen. Your task is to put an apple in the fridge."}]
    commands = ["go to fridge 1", "go to shelf 1", "go to table 1"]  # alike, so that no choice is near-certain
    (generation,) = backend.choose([chat], [commands], sampling=SamplingParams(temperature=temperature, seed=0))
    choice, picked = backend.last_choices[0], generation.samples[0]
    sampled = choice.probabilities[commands.index(picked.text)]
    sample = Sample(generation.prompt_ids, picked.token_ids, 1.0, alternatives=picked.alternatives)
    assert trained_probability(trainer, sample) == pytest.approx(sampled, rel=1e-5)
    assert abs(sampled - 1 / 3) > 1e-3  # the scores differ, so the temperature matters


def test_a_choice_judge_trains_the_verdict_distribution_it_sampled_from(tiny_model_path, tmp_path):
    from rla_train.backends.base import SamplingParams
    from rla_train.backends.choice import ChoiceBackend
    from rla_train.backends.hf import TransformersBackend
    from rla_train.reward_model.verdicts import VerdictChoiceBackend

    trainer, tokenizer = choice_trainer(tiny_model_path, tmp_path, 4.0)
    judge = VerdictChoiceBackend(ChoiceBackend(TransformersBackend(trainer.model, tokenizer)))
    chat = [{"role": "user", "content": "Was the step 'go to fridge 1' good?"}]
    (generation,) = judge.generate([chat], n=1, sampling=SamplingParams(temperature=4.0, seed=0))
    vote = generation.samples[0]
    good = vote.token_ids == vote.alternatives[0]
    sampled = generation.good_probability if good else 1 - generation.good_probability
    sample = Sample(generation.prompt_ids, vote.token_ids, 1.0, alternatives=vote.alternatives)
    assert trained_probability(trainer, sample) == pytest.approx(sampled, rel=1e-5)


def test_the_policy_trainer_of_a_choice_policy_takes_the_rollout_temperature(tiny_model_path, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rla_train.config import load_config
    from rla_train.cotrainer.components import _policy_trainer

    config = load_config(None, ["policy.temperature=0.5", "policy.action_mode=choice"], check_hardware=False)
    trainer = _policy_trainer(config, tmp_path, AutoModelForCausalLM.from_pretrained(tiny_model_path),
                              AutoTokenizer.from_pretrained(tiny_model_path))
    assert trainer.temperature == 0.5 and trainer.choice_logprob


def test_several_passes_clip_against_the_policy_that_sampled(tiny_model_path, tmp_path):
    trainer, tokenizer = make_trainer(tiny_model_path, tmp_path, epsilon=0.001, learning_rate=1e-2,
                                      loss_type="grpo")
    samples = ten_samples(tokenizer)
    again = [trainer.update(samples)["trl/clip_ratio/region_mean"] for _ in range(2)]
    assert again == [0.0, 0.0]  # a second update() restarts the ratio at 1: nothing is ever clipped
    both = trainer.update(samples, passes=2)
    # the second pass's ratio is against the log-probabilities from before the first: it moved, and is clipped
    assert both["optimizer_steps"] == 2 and both["trl/clip_ratio/region_mean"] > 0
    with pytest.raises(ValueError, match="passes must be an int >= 1"):
        trainer.update(samples, passes=0)


def test_a_choice_update_reports_how_far_it_moved_the_choice_distributions(tiny_model_path, tmp_path):
    import math

    trainer, tokenizer = choice_trainer(tiny_model_path, tmp_path, 1.0)
    prompt = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    alternatives = [tokenizer(c + "<|im_end|>", add_special_tokens=False)["input_ids"]
                    for c in ("go to fridge 1", "go to shelf 2", "look")]
    samples = [Sample(prompt, alternatives[0], 1.0, alternatives=alternatives),
               Sample(prompt, alternatives[1], -1.0, alternatives=alternatives)]
    before = [trained_probability(trainer, s) for s in samples]
    metrics = trainer.update(samples)
    after = [trained_probability(trainer, s) for s in samples]
    # both rows share one state, so the KL is that state's; the changes are the ones measured here
    assert metrics["chosen_prob_change_pos_adv"] == pytest.approx(after[0] - before[0], abs=1e-6)
    assert metrics["chosen_prob_change_neg_adv"] == pytest.approx(after[1] - before[1], abs=1e-6)
    assert metrics["chosen_prob_change_pos_adv"] > 0 > metrics["chosen_prob_change_neg_adv"]
    assert metrics["chosen_prob_change"] == pytest.approx((after[0] - before[0] + after[1] - before[1]) / 2, abs=1e-6)
    assert 0 < metrics["choice_kl"] and math.isfinite(metrics["choice_kl"])
    # and the states each mean is over, which weigh this rank's means when ranks merge their metrics
    assert (metrics["choice_shift_states"], metrics["choice_shift_states_pos_adv"],
            metrics["choice_shift_states_neg_adv"]) == (2.0, 1.0, 1.0)
    only_positive = trainer.update(samples[:1])
    assert "chosen_prob_change_neg_adv" not in only_positive and only_positive["chosen_prob_change_pos_adv"] > 0
    assert (only_positive["choice_shift_states"], only_positive["choice_shift_states_neg_adv"]) == (1.0, 0.0)
