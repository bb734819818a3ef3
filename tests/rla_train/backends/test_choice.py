"""ChoiceBackend: a tiny model constrained to the admissible commands, scored by log-likelihood."""

from __future__ import annotations

import pytest

from rla_train.agents.text_games import TextGameAgent
from rla_train.backends.base import GenerationBackend, SamplingParams
from rla_train.backends.choice import ChoiceBackend, admissible_from_prompt
from rla_train.rollout.engine import RolloutEngine
from tests.rla_envs.alfworld.conftest import alfworld_cache, alfworld_tasks  # noqa: F401  (session fixtures)

COMMANDS = ["go to cabinet 1", "go to cabinet 10", "open drawer 2", "take apple 1 from countertop 1", "look"]


def chat(commands, text="You are in the middle of a room.", action_format="text"):
    """The chat a TextGameAgent builds for a first observation with these admissible commands."""
    from rla_train.rollout.episode import Episode

    episode = Episode(task_id="t", observations=[text], infos=[{"admissible_actions": list(commands)}])
    return TextGameAgent(action_format=action_format).prompt(episode)


def plain_forward_logprobs(backend, prompt_ids, completion_ids):
    """Log-probabilities of the completion tokens by one unpadded forward pass over prompt + completion."""
    import torch

    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logits = backend.model(ids).logits[0, :-1]
    chosen = torch.log_softmax(logits.float(), dim=-1).gather(1, ids[0, 1:, None])[:, 0]
    return chosen[len(prompt_ids) - 1:].tolist()


def test_reads_both_listings_from_the_last_user_turn():
    assert admissible_from_prompt(chat(COMMANDS)) == COMMANDS
    assert admissible_from_prompt(chat(COMMANDS, action_format="index")) == COMMANDS
    assert admissible_from_prompt([{"role": "user", "content": "no list"}]) == []


def test_choices_are_admissible_with_exact_token_logprobs(tiny_backend):
    backend = ChoiceBackend(tiny_backend)
    assert isinstance(backend, GenerationBackend)
    prompts = [chat(COMMANDS[:2 + k], text="You see things. " * (5 * k + 1)) for k in range(4)]
    generations = backend.generate(prompts, n=3, sampling=SamplingParams(temperature=1.0, seed=0))
    end = tiny_backend.tokenizer.convert_tokens_to_ids("<|im_end|>")
    for prompt, generation in zip(prompts, generations):
        assert generation.prompt_ids == tiny_backend.tokenizer(generation.prompt, add_special_tokens=False)["input_ids"]
        for sample in generation.samples:
            assert sample.text in admissible_from_prompt(prompt)
            expected_ids = tiny_backend.tokenizer(sample.text, add_special_tokens=False)["input_ids"] + [end]
            assert sample.token_ids == expected_ids and len(sample.logprobs) == len(sample.token_ids)
            assert plain_forward_logprobs(tiny_backend, generation.prompt_ids, sample.token_ids) == pytest.approx(
                sample.logprobs, abs=1e-4)
    # the three scoring methods (KV cache, packed rows, from scratch) agree; scores = summed token logprobs
    cached = [x for c in backend.last_choices for x in c.scores]
    for method in ("packed", "full"):
        other = ChoiceBackend(tiny_backend, method=method)
        other.generate(prompts, sampling=SamplingParams(seed=0))
        assert [x for c in other.last_choices for x in c.scores] == pytest.approx(cached, abs=1e-4)
    assert backend.last_choices[1].scores[0] == pytest.approx(
        tiny_backend.score([prompts[1]], [COMMANDS[0] + "<|im_end|>"])[0], abs=1e-4)


def test_identical_prompts_are_scored_once_and_samples_carry_the_choice_distribution(tiny_backend):
    import math

    prompts = [chat(COMMANDS), chat(COMMANDS[1:], text="You arrive at drawer 2.")]
    backend = ChoiceBackend(tiny_backend, max_batch_tokens=1)  # one packed row per forward pass
    backend.generate(prompts, sampling=SamplingParams(seed=0))
    assert backend.forward_passes == 2
    alone = [c.scores for c in backend.last_choices]
    generations = backend.generate([prompts[0], prompts[1], prompts[0], prompts[0]], sampling=SamplingParams(seed=0))
    assert backend.forward_passes == 4                      # two distinct prompts: two more rows, not four
    assert [c.scores for c in backend.last_choices] == [alone[0], alone[1], alone[0], alone[0]]
    for generation, choice in zip(generations, backend.last_choices):
        [sample] = generation.samples
        assert sample.choice_logprobs == pytest.approx([math.log(p) for p in choice.probabilities], abs=1e-12)
        assert sample.alternatives[choice.index] == sample.token_ids


def test_greedy_picks_the_argmax_and_sampling_follows_the_softmax(tiny_backend):
    prompts = [chat(COMMANDS), chat(COMMANDS[1:], text="You arrive at drawer 2.")]
    greedy = ChoiceBackend(tiny_backend, temperature=0.0, max_batch_tokens=64, method="cache")  # many passes
    generations = greedy.generate(prompts, n=2)
    for generation, choice in zip(generations, greedy.last_choices):
        best = max(range(len(choice.scores)), key=choice.scores.__getitem__)
        assert [s.text for s in generation.samples] == [choice.candidates[best]] * 2
        assert choice.probabilities[best] == 1.0 and choice.choice_logprob == 0.0
    assert greedy.forward_passes > 2
    sampler = ChoiceBackend(tiny_backend, temperature=2.0)
    [generation] = sampler.generate(prompts[:1], n=4000, sampling=SamplingParams(seed=1))
    choice = sampler.last_choices[0]
    import torch

    expected = torch.softmax(torch.tensor(choice.scores) / 2.0, dim=0).tolist()
    # float32 scores: a softmax computed elsewhere differs by a few 1e-7, so compare far above that noise
    assert choice.probabilities == pytest.approx(expected, abs=1e-5)
    # 4,000 draws: a frequency's standard deviation is at most 0.008, so 0.05 is over 6 of them
    frequencies = [sum(s.text == c for s in generation.samples) / 4000 for c in choice.candidates]
    assert frequencies == pytest.approx(expected, abs=0.05)


def test_explicit_candidates_and_a_prompt_without_a_list(tiny_backend):
    backend = ChoiceBackend(tiny_backend, temperature=0.0, fallback="look")
    generations = backend.choose(["Pick one:", "Pick again:"], [["north", "south"], ["east"]])
    assert generations[0].samples[0].text in {"north", "south"} and generations[1].samples[0].text == "east"
    [generation] = backend.generate([[{"role": "user", "content": "nothing listed"}]])
    assert generation.samples[0].text == "look"
    with pytest.raises(ValueError, match="one candidate list per prompt"):
        backend.choose(["a", "b"], [["x"]])


class CountingChoice(ChoiceBackend):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    def generate(self, prompts, n=1, sampling=None):
        self.calls.append(len(prompts))
        return super().generate(prompts, n=n, sampling=sampling)


def test_plays_alfworld_in_the_rollout_engine_one_call_per_turn(tiny_backend, alfworld_tasks):
    backend = CountingChoice(tiny_backend, temperature=1.0)
    with RolloutEngine("rla/AlfWorld-v0", TextGameAgent(), backend, num_envs=4, progress=False,
                       env_options={"max_steps": 3, "tasks": alfworld_tasks[:2]}) as engine:
        episodes = engine.run(alfworld_tasks[:2], group_size=2)
    assert backend.calls == [4, 4, 4]  # one batched call per turn for all live episodes
    for episode in episodes:
        assert episode.error is None and len(episode.steps) == 3
        for step, info in zip(episode.steps, episode.infos):
            assert step.parse_error is None and step.action in info["admissible_actions"]
            assert not episode.infos[episode.steps.index(step) + 1].get("invalid_action")
            assert plain_forward_logprobs(tiny_backend, step.prompt_ids, step.completion_ids) == pytest.approx(
                step.logprobs, abs=1e-4)


def test_mean_score_divides_each_candidates_log_likelihood_by_its_token_count(tiny_backend):
    prompts = [chat(COMMANDS)]
    summed = ChoiceBackend(tiny_backend, temperature=0.0)
    summed.generate(prompts)
    mean = ChoiceBackend(tiny_backend, temperature=0.0, score="mean")
    mean.generate(prompts)
    lengths = [len(summed.command_ids(c)) for c in COMMANDS]
    # two scoring passes in float32: equal up to float noise, far below the 1e-4 allowed here
    assert mean.last_choices[0].scores == pytest.approx([s / n for s, n in zip(summed.last_choices[0].scores, lengths)],
                                                        abs=1e-4)
    with pytest.raises(ValueError, match="score must be one of"):
        ChoiceBackend(tiny_backend, score="max")


def test_each_command_is_tokenized_once_and_callers_get_their_own_list(tiny_backend, monkeypatch):
    import rla_train.backends.choice as choice_module

    calls = []
    tokenize = choice_module.text_token_ids
    monkeypatch.setattr(choice_module, "text_token_ids", lambda tok, text: calls.append(text) or tokenize(tok, text))
    monkeypatch.setattr(choice_module, "COMMAND_IDS_CACHE", 2)
    backend = ChoiceBackend(tiny_backend)
    expected = {c: tokenize(tiny_backend.tokenizer, c) + [backend.end_id] for c in COMMANDS[:3]}
    first = backend.command_ids(COMMANDS[0])
    first.append(-1)                                   # a caller's edit does not reach the cache
    assert backend.command_ids(COMMANDS[0]) == expected[COMMANDS[0]] and calls == [COMMANDS[0]]
    assert backend.command_ids(COMMANDS[1]) == expected[COMMANDS[1]] and len(calls) == 2
    # past the bound the cache starts again: the ids stay right, the command is tokenized anew
    assert backend.command_ids(COMMANDS[2]) == expected[COMMANDS[2]]
    assert backend.command_ids(COMMANDS[0]) == expected[COMMANDS[0]] and calls.count(COMMANDS[0]) == 2
