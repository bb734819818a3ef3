"""SampleTrainer: TRL's GRPO loss, optimizer and scheduler on our own (prompt, completion, advantage) samples."""

from __future__ import annotations

import dataclasses
import math

import inspect

import pytest
import torch
from trl import GRPOTrainer

from rla_train.cotrainer.policy_update import (TRL_ATTRIBUTES, TRL_LOSS_INPUTS, TRL_METHODS, SampleTrainer,
                                               pad_samples)
from rla_train.signals.samples import Sample

PROMPT = "<|im_start|>user\nwhere now?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture
def trainer_factory(tiny_model_path, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    def make(*, mini_batches=1, kl_reference="initial", **options):
        model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
        tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
        options = {"learning_rate": 1e-3, "lr_scheduler_type": "constant", "beta": 0.0, **options}
        args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2,
                          use_cpu=True, report_to="none", bf16=False, max_completion_length=8, **options)
        return SampleTrainer(model, tokenizer, args, total_steps=10, mini_batches=mini_batches,
                             kl_reference=kl_reference), tokenizer
    return make


def test_the_trl_internals_sample_trainer_relies_on_are_there(trainer_factory):
    assert [name for name in TRL_METHODS if not callable(getattr(GRPOTrainer, name, None))] == []
    trainer, _ = trainer_factory()
    assert [name for name in TRL_ATTRIBUTES if not hasattr(trainer, name)] == []
    loss_source = inspect.getsource(GRPOTrainer.compute_loss) + inspect.getsource(GRPOTrainer._compute_loss)
    assert [key for key in TRL_LOSS_INPUTS if f'"{key}"' not in loss_source] == []
    assert "current_gradient_accumulation_steps" in loss_source
    assert set(pad_samples([Sample([1], [2], 1.0)], 0)) == set(TRL_LOSS_INPUTS[:6])


def ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def completion_logprob(trainer, prompt, completion):
    batch = pad_samples([Sample(prompt, completion, 1.0)], 0)
    with torch.no_grad():
        logits = trainer.model(torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)).logits[0, :-1]
    logps = logits.log_softmax(-1)[len(prompt) - 1:]
    return float(logps.gather(1, torch.tensor(completion)[:, None]).sum())


def test_positive_advantages_rise_negative_fall_zero_dropped(trainer_factory):
    trainer, tokenizer = trainer_factory()
    prompt, good, bad = ids(tokenizer, PROMPT), ids(tokenizer, "go to fridge 1<|im_end|>"), ids(tokenizer, "look<|im_end|>")
    before = completion_logprob(trainer, prompt, good), completion_logprob(trainer, prompt, bad)
    for _ in range(5):
        metrics = trainer.update([Sample(prompt, good, 1.0), Sample(prompt, bad, -1.0), Sample(prompt, bad, 0.0)])
    after = completion_logprob(trainer, prompt, good), completion_logprob(trainer, prompt, bad)
    assert after[0] > before[0] + 1 and after[1] < before[1]
    assert metrics["samples"] == 2 and metrics["dropped_zero_advantage"] == 1 and trainer.state.global_step == 5
    assert metrics["tokens"] == len(good) + len(bad) and torch.isfinite(torch.tensor(metrics["loss"]))
    assert trainer.update([Sample(prompt, good, 0.0)])["samples"] == 0 and trainer.state.global_step == 5


def test_an_update_adds_nothing_to_a_gradient_left_on_the_model_by_an_earlier_backward_pass(trainer_factory):
    trainer, tokenizer = trainer_factory()
    clean, _ = trainer_factory()
    prompt, good = ids(tokenizer, PROMPT), ids(tokenizer, "go to fridge 1<|im_end|>")
    for parameter in trainer.model.parameters():  # e.g. a warm start's last step, in the same run
        parameter.grad = torch.full_like(parameter, 0.5)
    for updated in (trainer, clean):
        updated.update([Sample(prompt, good, 1.0), Sample(prompt, ids(tokenizer, "look<|im_end|>"), -1.0)])
    assert all(torch.equal(a, b) for a, b in zip(trainer.model.parameters(), clean.model.parameters()))


def test_several_iterations_clip_against_the_first_logprobs(trainer_factory):
    trainer, tokenizer = trainer_factory(num_iterations=3, epsilon=0.01)
    prompt, good = ids(tokenizer, PROMPT), ids(tokenizer, "go to fridge 1<|im_end|>")
    metrics = trainer.update([Sample(prompt, good, 1.0), Sample(prompt, ids(tokenizer, "look<|im_end|>"), -1.0)])
    assert trainer.state.global_step == 3  # three optimizer steps on the same samples
    assert metrics["trl/clip_ratio/region_mean"] > 0  # later iterations moved past the tiny clip range


def test_optimizer_and_schedule_state_round_trip(trainer_factory):
    trainer, tokenizer = trainer_factory()
    prompt = ids(tokenizer, PROMPT)
    trainer.update([Sample(prompt, ids(tokenizer, "look<|im_end|>"), 1.0), Sample(prompt, [5, 6], -1.0)])
    other, _ = trainer_factory()
    other.load_state_dicts(trainer.state_dicts())
    assert other.state.global_step == 1
    assert other.optimizer.state_dict()["state"][0]["step"] == trainer.optimizer.state_dict()["state"][0]["step"]


def test_a_resumed_trainer_takes_its_learning_rate_from_its_args_at_the_same_point_of_the_schedule(trainer_factory):
    trainer, tokenizer = trainer_factory(lr_scheduler_type="linear")
    prompt = ids(tokenizer, PROMPT)
    batch = [Sample(prompt, ids(tokenizer, "look<|im_end|>"), 1.0), Sample(prompt, [5, 6], -1.0)]
    for _ in range(2):
        trainer.update(batch)
    decayed = trainer.lr_scheduler.get_last_lr()[0]
    assert decayed == pytest.approx(1e-3 * 8 / 10)  # linear decay over 10 steps, 2 taken
    halved, _ = trainer_factory(lr_scheduler_type="linear", learning_rate=5e-4)  # resumed with --set policy.lr=5e-4
    halved.load_state_dicts(trainer.state_dicts())
    assert [g["lr"] for g in halved.optimizer.param_groups] == pytest.approx([decayed / 2] * len(halved.optimizer.param_groups))
    halved.update(batch)
    assert halved.lr_scheduler.get_last_lr()[0] == pytest.approx(5e-4 * 7 / 10)
    same, _ = trainer_factory(lr_scheduler_type="linear")  # resumed unchanged: exactly the saved state
    same.load_state_dicts(trainer.state_dicts())
    assert same.optimizer.state_dict()["param_groups"] == trainer.optimizer.state_dict()["param_groups"]


def test_pad_samples_layout():
    batch = pad_samples([Sample([1, 2, 3], [4], 0.5), Sample([7], [8, 9], -1.0)], pad_token_id=0)
    assert batch["prompt_ids"].tolist() == [[1, 2, 3], [0, 0, 7]] and batch["prompt_mask"].tolist() == [[1, 1, 1], [0, 0, 1]]
    assert batch["completion_ids"].tolist() == [[4, 0], [8, 9]] and batch["completion_mask"].tolist() == [[1, 0], [1, 1]]
    assert batch["advantages"].tolist() == [0.5, -1.0] and int(batch["num_items_in_batch"]) == 3


def choice_logprob(trainer, prompt, alternatives, index):
    from rla_train.backends.choice import ChoiceBackend
    from rla_train.backends.hf import TransformersBackend

    scorer = ChoiceBackend(TransformersBackend(trainer.model, trainer.processing_class))
    [scores] = scorer.token_logprobs([prompt], [alternatives])
    return float(torch.log_softmax(torch.tensor([sum(s) for s in scores]), 0)[index])


def test_choice_logprob_trains_the_choice_among_the_alternatives(trainer_factory):
    trainer, tokenizer = trainer_factory()
    trainer.choice_logprob = True  # as SampleTrainer(..., choice_logprob=True) sets it, with its scorer
    from rla_train.backends.choice import ChoiceBackend
    from rla_train.backends.hf import TransformersBackend

    trainer._scorer = ChoiceBackend(TransformersBackend(trainer.model, tokenizer), method="packed")
    prompt = ids(tokenizer, PROMPT)
    alternatives = [ids(tokenizer, c + "<|im_end|>") for c in ("go to fridge 1", "go to shelf 2", "look")]
    before = [choice_logprob(trainer, prompt, alternatives, k) for k in (0, 1)]
    for _ in range(5):
        metrics = trainer.update([Sample(prompt, alternatives[0], 1.0, alternatives=alternatives),
                                  Sample(prompt, alternatives[1], -1.0, alternatives=alternatives)])
    after = [choice_logprob(trainer, prompt, alternatives, k) for k in (0, 1)]
    assert after[0] > before[0] + 1 and after[1] < before[1]
    assert metrics["samples"] == 2 and metrics["tokens"] == 2  # one choice per sample
    with pytest.raises(ValueError, match="alternatives"):
        trainer.update([Sample(prompt, alternatives[0], 1.0)])


def test_choice_logprob_with_several_iterations(trainer_factory, tiny_model_path, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    args = GRPOConfig(output_dir=str(tmp_path), learning_rate=1e-3, per_device_train_batch_size=2, num_generations=2,
                      use_cpu=True, report_to="none", bf16=False, max_completion_length=8, beta=0.0, num_iterations=2)
    trainer = SampleTrainer(AutoModelForCausalLM.from_pretrained(tiny_model_path), tokenizer, args, total_steps=3,
                            choice_logprob=True)
    prompt = ids(tokenizer, PROMPT)
    alternatives = [ids(tokenizer, c + "<|im_end|>") for c in ("open drawer 1", "look")]
    metrics = trainer.update([Sample(prompt, alternatives[0], 1.0, alternatives=alternatives),
                              Sample(prompt, alternatives[1], -1.0, alternatives=alternatives),
                              Sample(prompt, alternatives[1], 0.5, alternatives=alternatives)])
    assert trainer.state.global_step == 2 and torch.isfinite(torch.tensor(metrics["loss"]))


def test_mini_batches_take_one_optimizer_step_each_and_clip_against_the_first_logprobs(trainer_factory):
    trainer, tokenizer = trainer_factory(mini_batches=2, num_iterations=2, epsilon=0.01)
    prompt = ids(tokenizer, PROMPT)
    samples = [Sample(prompt, ids(tokenizer, text), advantage) for text, advantage in
               (("go to fridge 1<|im_end|>", 1.0), ("look<|im_end|>", -1.0), ("open fridge 1<|im_end|>", 1.0))]
    metrics = trainer.update(samples)
    # 3 samples in 2 mini-batches (slices [0:2] and [2:3]) x 2 passes = 4 optimizer steps
    assert trainer.state.global_step == 4 and metrics["optimizer_steps"] == 4
    assert metrics["trl/clip_ratio/region_mean"] > 0  # the last step's ratio is against the pre-update policy
    one = trainer.update(samples[:1])  # fewer samples than mini-batches: one slice per sample
    assert one["optimizer_steps"] == 2 and trainer.state.global_step == 6


def test_kl_to_the_pre_update_policy_keeps_no_reference_copy(trainer_factory):
    trainer, tokenizer = trainer_factory(beta=0.5, kl_reference="pre_update", num_iterations=2)
    assert trainer.ref_model is None and trainer.beta == 0.5
    prompt, good = ids(tokenizer, PROMPT), ids(tokenizer, "go to fridge 1<|im_end|>")
    metrics = trainer.update([Sample(prompt, good, 1.0), Sample(prompt, ids(tokenizer, "look<|im_end|>"), -1.0)])
    # the first pass starts at the reference itself (KL 0); the second has moved away from it
    assert metrics["trl/kl"] > 0 and math.isfinite(metrics["loss"])


def test_kl_to_the_initial_model_uses_trls_reference_copy(trainer_factory):
    trainer, tokenizer = trainer_factory(beta=0.5, kl_reference="initial")
    assert trainer.ref_model is not None
    prompt, good = ids(tokenizer, PROMPT), ids(tokenizer, "go to fridge 1<|im_end|>")
    first = trainer.update([Sample(prompt, good, 1.0), Sample(prompt, ids(tokenizer, "look<|im_end|>"), -1.0)])
    second = trainer.update([Sample(prompt, good, 1.0), Sample(prompt, ids(tokenizer, "look<|im_end|>"), -1.0)])
    assert first["trl/kl"] == 0.0 and second["trl/kl"] > 0  # the policy moved away from its frozen start


def _choice_trainer(tiny_model_path, tmp_path, max_update_kl=None, **options):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    options = {"learning_rate": 1e-3, **options}
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2,
                      use_cpu=True, report_to="none", bf16=False, max_completion_length=8, beta=0.0, **options)
    return SampleTrainer(AutoModelForCausalLM.from_pretrained(tiny_model_path), tokenizer, args, total_steps=3,
                         choice_logprob=True, max_update_kl=max_update_kl), tokenizer


def _played(trainer, tokenizer) -> list[Sample]:
    """What a choice policy's rollout records: choices with their distributions, under ``trainer``'s weights."""
    from rla_train.backends.choice import ChoiceBackend
    from rla_train.backends.hf import TransformersBackend

    backend = ChoiceBackend(TransformersBackend(trainer.model, tokenizer), temperature=1.0)
    chats = [[{"role": "user", "content": text, "admissible_actions": ["go to fridge 1", "look", "open drawer 1"]}]
             for text in ("where now?", "You see a fridge.", "where now?")]
    generations = backend.generate(chats, n=2)
    return [Sample(g.prompt_ids, s.token_ids, advantage, alternatives=s.alternatives, choice_logprobs=s.choice_logprobs)
            for g, advantages in zip(generations, ((1.0, -1.0), (0.5, -0.5), (-1.0, 1.0)))
            for s, advantage in zip(g.samples, advantages)]


def test_the_samplers_choice_distributions_stand_in_for_scoring_the_states_before_the_update(tiny_model_path, tmp_path):
    played = _played
    runs = {}
    for name in ("sampler's", "scored again"):
        torch.manual_seed(0)
        trainer, tokenizer = _choice_trainer(tiny_model_path, tmp_path / name, num_iterations=2)
        samples = played(trainer, tokenizer)
        if name == "scored again":
            samples = [Sample(s.prompt_ids, s.completion_ids, s.advantage, alternatives=s.alternatives) for s in samples]
        passes = []
        original = trainer._scorer.packed_token_logprobs
        trainer._scorer.packed_token_logprobs = (lambda p, c, passes=passes, original=original:
                                                 passes.append(len(p)) or original(p, c))
        metrics = trainer.update(samples)
        runs[name] = (torch.cat([p.detach().flatten() for p in trainer.model.parameters()]), metrics, passes)
    (weights, metrics, passes), (reference, reference_metrics, reference_passes) = runs["sampler's"], runs["scored again"]
    assert torch.allclose(weights, reference, atol=1e-6)               # the same update, up to float rounding
    assert metrics["choice_kl"] == pytest.approx(reference_metrics["choice_kl"], rel=1e-3, abs=1e-9)
    # 6 samples of 2 distinct states in micro-batches of 4: the states sit together, each scored once per pass;
    # the old policy's pass before the update is skipped (2 training passes + 1 after, against 1 + 2 + 1)
    assert sum(passes) < sum(reference_passes) and len(passes) == len(reference_passes) - 2
    assert max(passes) <= 2


def test_a_trainer_whose_model_changed_since_sampling_scores_the_states_again(tiny_model_path, tmp_path):
    # reward_model.model=same-as-policy: the judge votes, then the policy's update changes the shared weights
    runs = {}
    for name, trust, stale in (("scored again", True, False), ("flagged", False, True), ("trusted stale", True, True)):
        torch.manual_seed(0)
        trainer, tokenizer = _choice_trainer(tiny_model_path, tmp_path / name, num_iterations=2)
        trainer.sampled_by_these_weights = trust
        samples = _played(trainer, tokenizer)
        if stale:  # the distributions of other weights than the ones the update starts from
            samples = [dataclasses.replace(s, choice_logprobs=[math.log(1 / 3)] * 3) for s in samples]
        else:
            samples = [dataclasses.replace(s, choice_logprobs=None) for s in samples]
        trainer.update(samples)
        runs[name] = torch.cat([p.detach().flatten() for p in trainer.model.parameters()])
    assert torch.allclose(runs["flagged"], runs["scored again"], atol=1e-6)
    assert not torch.allclose(runs["trusted stale"], runs["scored again"], atol=1e-6)  # what the flag prevents


def test_a_state_twice_in_a_micro_batch_is_scored_once_and_weighs_twice(tiny_model_path, tmp_path):
    trainer, tokenizer = _choice_trainer(tiny_model_path, tmp_path)
    prompt = ids(tokenizer, PROMPT)
    alternatives = [ids(tokenizer, c + "<|im_end|>") for c in ("go to fridge 1", "look")]
    twice = [Sample(prompt, alternatives[0], 1.0, alternatives=alternatives)] * 2
    gradients = []
    for samples in (twice, twice[:1]):
        trainer._choice_rows = trainer._choice_batch(samples, 0)["choice_rows"]
        logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, None, None, 1)
        trainer._choice_rows = None
        trainer.model.zero_grad()
        logps.sum().backward()
        gradients.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None]))
    assert torch.allclose(gradients[0], 2 * gradients[1], atol=1e-6)


def _bounded_update(tiny_model_path, tmp_path, bound):
    """One update of 2 passes on the same samples, from the same weights, under ``bound``; what it left. At T = 20
    the tiny random model's choice is far from certain, and at this rate the KL grows as the rate squared (1e-4:
    4.4e-5 nats, 1e-5: 4.5e-7), so a halved step moves the choice about a quarter as far."""
    trainer, tokenizer = _choice_trainer(tiny_model_path, tmp_path, max_update_kl=bound, num_iterations=2,
                                         learning_rate=1e-4, lr_scheduler_type="constant", temperature=20.0)
    prompt = ids(tokenizer, PROMPT)
    alternatives = [ids(tokenizer, c + "<|im_end|>") for c in ("go to fridge 1", "go to shelf 2", "look")]
    samples = [Sample(prompt, alternatives[0], 1.0, alternatives=alternatives),
               Sample(prompt, alternatives[1], -1.0, alternatives=alternatives)]
    weights = torch.cat([p.detach().flatten().clone() for p in trainer.model.parameters()])
    metrics = trainer.update(samples)
    after = torch.cat([p.detach().flatten() for p in trainer.model.parameters()])
    return trainer, metrics, weights, after


def test_a_trust_region_that_holds_changes_nothing(tiny_model_path, tmp_path):
    free, free_metrics, start, free_after = _bounded_update(tiny_model_path, tmp_path / "free", None)
    held, metrics, held_start, after = _bounded_update(tiny_model_path, tmp_path / "held", 1e9)
    assert torch.equal(start, held_start) and torch.equal(after, free_after)  # bit for bit the unbounded update
    assert metrics["choice_kl"] == free_metrics["choice_kl"] > 0
    assert (metrics["update_tries"], metrics["update_lr_factor"], metrics["update_rejected"]) == (1, 1, 0)
    assert held.state.global_step == free.state.global_step == 2


def test_an_update_too_large_is_undone_and_taken_again_at_half_the_rate(tiny_model_path, tmp_path):
    _, free_metrics, _, _ = _bounded_update(tiny_model_path, tmp_path / "free", None)
    bound = free_metrics["choice_kl"] * 0.6  # the full step overshoots; a half step does not
    trainer, metrics, start, after = _bounded_update(tiny_model_path, tmp_path / "held", bound)
    assert (metrics["update_rejected"], metrics["update_tries"], metrics["update_lr_factor"]) == (0, 2, 0.5)
    assert 0 < metrics["choice_kl"] <= bound < metrics["rejected_choice_kl"]
    assert not torch.equal(after, start)
    # the undone tries left nothing behind: the step count is one update's, the schedule's rate the configured one
    assert trainer.state.global_step == 2 and metrics["optimizer_steps"] == 2
    assert [group["lr"] for group in trainer.optimizer.param_groups] == [1e-4] * len(trainer.optimizer.param_groups)
    assert trainer.lr_scheduler.get_last_lr() == [1e-4] * len(trainer.optimizer.param_groups)


def test_an_update_that_no_halving_brings_inside_the_region_is_rejected(tiny_model_path, tmp_path):
    trainer, metrics, start, after = _bounded_update(tiny_model_path, tmp_path, 1e-30)
    assert torch.equal(after, start)  # the policy as it was, bit for bit
    assert (metrics["update_rejected"], metrics["update_tries"], metrics["choice_kl"]) == (1, 4, 0)
    assert metrics["rejected_choice_kl"] > 1e-30
    assert trainer.state.global_step == 0 and not trainer.optimizer.state_dict()["state"]  # Adam's moments: none yet


def test_a_trust_region_needs_the_choice_distribution(trainer_factory, tiny_model_path, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, use_cpu=True,
                      report_to="none", bf16=False, max_completion_length=8, beta=0.0)
    with pytest.raises(ValueError, match="choice_logprob=True"):
        SampleTrainer(AutoModelForCausalLM.from_pretrained(tiny_model_path),
                      AutoTokenizer.from_pretrained(tiny_model_path), args, total_steps=1, max_update_kl=0.05)
