"""The verdict-choice judge: no length bias, what it trains on is what it chose, the probability of "good" kept."""

from __future__ import annotations

import math
import random

import pytest

from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory
from rla_train.backends.base import SamplingParams
from rla_train.reward_model import RewardModel, judge_chat, parse_verdict
from rla_train.reward_model.verdicts import (VERDICTS, VerdictChoiceBackend, VerdictGeneration,
                                             good_verdict_probability, parting_tokens)

RECEPTACLES = ["countertop 1", "countertop 2", "fridge 1", "sinkbasin 1", "cabinet 1", "cabinet 2", "drawer 1",
               "microwave 1", "stoveburner 1", "shelf 1", "garbagecan 1", "diningtable 1"]
OBJECTS = ["apple", "mug", "knife", "bread", "egg", "plate", "tomato", "cup", "spoon", "potato"]


def judge_prompts(count: int, *, seed: int = 0) -> list:
    """``count`` real judge_chat prompts (all different) from seeded, hand-built ALFWorld-like runs."""
    rng = random.Random(seed)
    prompts = []
    while len(prompts) < count:
        target, goal = rng.choice(OBJECTS), rng.choice(RECEPTACLES)
        task = Task(family="alfworld", instruction=f"put a {target} in {goal}.", spec={"task_type": "pick"})
        observations = [f"-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly "
                        f"around you, you see {', '.join('a ' + r for r in RECEPTACLES)}.\n\nYour task is to: "
                        f"{task.instruction}"]
        actions, infos = [], [{"admissible_actions": [f"go to {r}" for r in RECEPTACLES] + ["look"]}]
        for _ in range(10):
            place, thing = rng.choice(RECEPTACLES), rng.choice(OBJECTS)
            action = rng.choice([f"go to {place}", f"open {place}", f"take {thing} 1 from {place}", "look",
                                 f"put {thing} 1 in/on {place}", "inventory"])
            actions.append(action)
            observations.append(f"You arrive at {place}. On the {place}, you see a {thing} {rng.randint(1, 3)}.")
            infos.append({"admissible_actions": [f"go to {r}" for r in RECEPTACLES] + [f"take {thing} 1 from {place}"]})
        run = Trajectory(task_id=task.id, observations=observations, actions=actions, infos=infos, won=False)
        prompts += [judge_chat(task, run, i) for i in range(len(actions))]
    return prompts[:count]


@pytest.fixture(scope="module")
def prompts():
    found = judge_prompts(200)
    assert len({str(p) for p in found}) == 200  # 200 different prompts
    return found


@pytest.fixture
def judge(tiny_backend):
    from rla_train.backends.choice import ChoiceBackend

    return VerdictChoiceBackend(ChoiceBackend(tiny_backend))


# --------------------------------------------------------------------------- pure maths

def test_parting_tokens_are_the_first_difference():
    assert parting_tokens([62, 629, 93, 13, 19, 95], [62, 629, 93, 15, 19, 95]) == ([62, 629, 93], 13, 15)
    assert parting_tokens([62, 19, 95], [62, 15, 19, 95]) == ([62], 19, 15)  # lengths may differ
    with pytest.raises(ValueError, match="never differ"):
        parting_tokens([62, 19], [62, 19, 95])


def test_good_verdict_probability_by_hand():
    assert good_verdict_probability(-6.0, -7.0, 1.0) == pytest.approx(0.7310586)  # 1 / (1 + e^-1)
    assert good_verdict_probability(-6.0, -7.0, 2.0) == pytest.approx(0.6224593)  # 1 / (1 + e^-0.5)
    assert good_verdict_probability(-7.0, -6.0, 1.0) == pytest.approx(0.2689414)  # 1 - 0.7311
    assert good_verdict_probability(-900.0, 0.0, 1.0) == 0.0                       # underflows, no overflow error
    assert (good_verdict_probability(-5.0, -5.0, 0), good_verdict_probability(-5.1, -5.0, 0)) == (1.0, 0.0)
    with pytest.raises(ValueError, match="temperature"):
        good_verdict_probability(0.0, 0.0, -1.0)


# --------------------------------------------------------------------------- the tiny model

def test_verdicts_part_at_one_token_with_the_tiny_tokenizer(judge, tiny_backend):
    tokenizer = tiny_backend.tokenizer
    assert [parse_verdict(v) for v in VERDICTS] == [1, -1]
    assert tokenizer.decode(judge.prefix_ids) == "\\boxed{"
    assert tokenizer.convert_ids_to_tokens([judge.good_token, judge.bad_token]) == ["+", "-"]


def test_untrained_judge_says_good_and_bad_in_equal_shares(judge, prompts):
    # A random-init model has no reason to prefer either verdict, but its weights give it a fixed lean: the gap
    # log p(+) - log p(-) after "\\boxed{" is ~(e_+ - e_-) . h with 64 dims of init std 0.02, sd ~0.23 nats
    # (measured over tiny-model seeds 0-4: mean P(+1) 0.494, 0.459, 0.601, 0.523, 0.539, each nearly the same on
    # every prompt). 5 sd of that is 1.15 nats: P(+1) in [0.24, 0.76], far from summed scoring's 0.999 (next test).
    # Given the model's own P(+1) = p, the share of +1 among 200 votes has sd sqrt(p(1-p)/200) <= 0.035.
    import torch

    torch.manual_seed(0)
    generations = judge.generate(prompts, n=1, sampling=SamplingParams(temperature=1.0))
    share_good = sum(parse_verdict(g.samples[0].text) == 1 for g in generations) / len(generations)
    mean_good = sum(g.good_probability for g in generations) / len(generations)
    assert 0.25 <= mean_good <= 0.75
    assert abs(share_good - mean_good) <= 5 * math.sqrt(mean_good * (1 - mean_good) / len(generations))


def test_summed_scoring_of_unequal_verdicts_was_biased_to_good(tiny_backend, prompts):
    # The bug this module fixes: \boxed{-1} is one token longer than \boxed{1}; an untrained model pays
    # ~log(1024) = 6.9 nats for it, so with summed log-likelihood P(+1) ~ 1 - e^-7 on every prompt.
    from rla_train.backends.choice import ChoiceBackend

    old = ChoiceBackend(tiny_backend, score="sum")
    old.choose(prompts, [["\\boxed{1}", "\\boxed{-1}"]] * len(prompts), sampling=SamplingParams(temperature=1.0))
    gaps = [choice.scores[0] - choice.scores[1] for choice in old.last_choices]
    assert min(choice.probabilities[0] for choice in old.last_choices) > 0.95
    assert sum(gaps) / len(gaps) > 3.0  # nats in favour of the shorter verdict


def test_samples_carry_what_decided_and_the_probability(judge, tiny_backend, prompts):
    generations = judge.generate(prompts[:4], n=3, sampling=SamplingParams(temperature=1.0, seed=7))
    for generation, choice in zip(generations, judge.last_choices):
        assert isinstance(generation, VerdictGeneration)
        assert generation.prompt_ids[-len(judge.prefix_ids):] == judge.prefix_ids
        assert generation.prompt.endswith("<|im_start|>assistant\n\\boxed{")
        assert choice.probabilities[0] == generation.good_probability
        assert 0.0 < generation.good_probability < 1.0
        for sample in generation.samples:
            assert sample.alternatives == [[judge.good_token], [judge.bad_token]]
            assert sample.token_ids == [judge.good_token if sample.text == VERDICTS[0] else judge.bad_token]
            # the sample's logprob is the parting token's under the model (what a trainer recomputes)
            index = sample.alternatives.index(sample.token_ids)
            assert sample.logprobs == [pytest.approx(choice.scores[index], abs=1e-5)]
    again = judge.generate(prompts[:4], n=3, sampling=SamplingParams(temperature=1.0, seed=7))
    assert [[s.text for s in g.samples] for g in again] == [[s.text for s in g.samples] for g in generations]


def test_choice_probability_is_the_two_token_softmax_of_a_full_forward_pass(judge, tiny_backend, prompts):
    import torch

    generation = judge.generate(prompts[:1], sampling=SamplingParams(temperature=1.0))[0]
    model = tiny_backend.model
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([generation.prompt_ids])).logits[0, -1].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    pair = torch.softmax(logprobs[[judge.good_token, judge.bad_token]], dim=0)
    assert generation.good_probability == pytest.approx(float(pair[0]), abs=1e-5)


def test_temperature_zero_picks_the_likelier_verdict(judge, prompts):
    generations = judge.generate(prompts[:6], n=2, sampling=SamplingParams(temperature=0))
    for generation, choice in zip(generations, judge.last_choices):
        likelier = VERDICTS[0] if choice.scores[0] >= choice.scores[1] else VERDICTS[1]
        assert [s.text for s in generation.samples] == [likelier, likelier]
        assert generation.good_probability in (0.0, 1.0)


def test_reward_model_keeps_the_probability_per_judged_step(judge, prompts):
    task = Task(family="alfworld", instruction="put a mug in fridge 1.", spec={"task_type": "pick"})
    run = Trajectory(task_id=task.id, observations=["You are in a kitchen.", "You arrive.", "Nothing happens."],
                     actions=["go to fridge 1", "open fridge 1"], infos=[{}, {}, {}], won=False)
    report = RewardModel(judge, judgments_per_step=3).judge(task, [run])
    assert [len(votes) for votes in run.judgments] == [3, 3]
    assert all(vote in (1, -1) for votes in run.judgments for vote in votes)
    assert [g.good_probability for g in report.generations[0]] == [c.probabilities[0] for c in judge.last_choices]


def test_the_rm_trainer_trains_the_choice_it_made(judge, tiny_backend, prompts, tmp_path):
    # SampleTrainer(choice_logprob=True) on the judge's samples: a positive advantage on "+1" raises P(+1).
    from rla_train.config.sections import OptimizerConfig, RewardModelConfig
    from rla_train.cotrainer.components import grpo_args
    from rla_train.cotrainer.policy_update import SampleTrainer
    from rla_train.signals.samples import Sample

    generations = judge.generate(prompts[:8], n=2, sampling=SamplingParams(temperature=1.0, seed=3))
    before = [g.good_probability for g in generations]
    samples = [Sample(g.prompt_ids, s.token_ids, 1.0 if s.text == VERDICTS[0] else -1.0, s.logprobs,
                      alternatives=s.alternatives) for g in generations for s in g.samples]
    section = RewardModelConfig(learning_rate=0.05)
    trainer = SampleTrainer(tiny_backend.model, tiny_backend.tokenizer,
                            grpo_args(section, OptimizerConfig(), tmp_path, seed=0, temperature=1.0), total_steps=1, choice_logprob=True)
    metrics = trainer.update(samples)
    assert math.isfinite(metrics["loss"])
    after = [g.good_probability for g in judge.generate(prompts[:8], sampling=SamplingParams(temperature=1.0))]
    assert sum(after) / 8 > sum(before) / 8 + 0.05


def test_it_needs_a_choice_backend_and_parseable_verdicts(tiny_backend):
    from rla_train.backends.choice import ChoiceBackend

    with pytest.raises(TypeError, match="ChoiceBackend"):
        VerdictChoiceBackend(tiny_backend)
    with pytest.raises(ValueError, match="parse as"):
        VerdictChoiceBackend(ChoiceBackend(tiny_backend), verdicts=("\\boxed{-1}", "\\boxed{+1}"))


def test_components_wrap_a_choice_judge_in_the_verdict_chooser(tiny_backend):
    from rla_train.config import load_config
    from rla_train.cotrainer.play_setup import build_judge

    config = load_config(None, ["reward_model.model=same-as-policy"], check_hardware=False)
    judge, model, _, _ = build_judge(config, tiny_backend.model, tiny_backend.tokenizer)
    assert isinstance(judge, RewardModel) and isinstance(judge.backend, VerdictChoiceBackend)
    assert model is tiny_backend.model
