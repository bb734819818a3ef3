"""Warm start: the searching expert's demonstrations as SFT data, and a short TRL SFT run on them."""

from __future__ import annotations

import math

import pytest

from rla_train.agents.text_games import TextGameAgent
from rla_train.rollout.episode import Episode
from rla_train.cotrainer.demonstrations import expert_demonstrations
from rla_train.cotrainer.warm_start import choice_accuracy, choice_sft, sft_warm_start
from tests.rla_envs.alfworld.conftest import alfworld_cache, alfworld_tasks  # noqa: F401  (session fixtures)


@pytest.fixture(scope="module")
def demonstrations(alfworld_tasks):
    agent = TextGameAgent(history_window=3)
    return agent, expert_demonstrations("train", n_tasks=3, seed=5, agent=agent, tasks=alfworld_tasks[:3],
                                        progress=False)


def test_completions_are_the_experts_commands_and_prompts_what_the_agent_builds(demonstrations, alfworld_tasks):
    from rla_envs.alfworld.env import AlfWorldEnv

    agent, dataset = demonstrations
    assert set(dataset["episode"]) == {0, 1, 2} and all(dataset["won"])
    env = AlfWorldEnv("train", tasks=alfworld_tasks[:3], expert="handcoded")
    try:
        for index in range(3):
            rows = [row for row in dataset if row["episode"] == index]
            observation, info = env.reset(seed=5 + index, options={"task": alfworld_tasks[index]})
            episode = Episode(task_id=info["task_id"], observations=[observation], infos=[info])
            for step, row in enumerate(rows):
                assert row["step"] == step and row["task_id"] == info["task_id"]
                assert row["completion"] == [{"role": "assistant", "content": info["expert_action"]}]
                assert info["expert_action"] in info["admissible_actions"]
                assert row["candidates"] == list(info["admissible_actions"])
                assert row["prompt"] == agent.prompt(episode)
                observation, _, terminated, _, info = env.step(info["expert_action"])
                episode.actions.append(row["completion"][0]["content"])
                episode.observations.append(observation)
                episode.infos.append(info)
            assert terminated and info["won"]  # the rows cover the whole won episode
    finally:
        env.close()


def test_short_sft_lowers_the_loss_and_raises_the_experts_likelihood(demonstrations, tiny_model_path, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rla_train.backends.hf import TransformersBackend

    _, dataset = demonstrations
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_path))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_path))
    backend = TransformersBackend(model, tokenizer)
    rows = dataset.select(range(0, len(dataset), max(1, len(dataset) // 8)))
    commands = [row["completion"][0]["content"] + "<|im_end|>" for row in rows]

    def mean_likelihood():
        return sum(backend.score(rows["prompt"], commands)) / len(commands)

    before = mean_likelihood()
    weights = [p.detach().clone() for p in model.parameters()]
    history = []
    trained = sft_warm_start(model, tokenizer, dataset, steps=12, lr=3e-3, batch_size=4, output_dir=tmp_path,
                             progress=False, log_history=history, logging_steps=1)
    assert trained is model
    losses = [entry["loss"] for entry in history if "loss" in entry]
    assert len(losses) == 12 and all(math.isfinite(loss) for loss in losses)
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3
    assert any(not (a == b).all() for a, b in zip(weights, model.parameters()))
    assert mean_likelihood() > before + 1.0  # nats per command


def test_a_few_listwise_steps_raise_the_experts_choice_probability(demonstrations, tiny_model_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rla_train.backends.choice import ChoiceBackend
    from rla_train.backends.hf import TransformersBackend

    _, dataset = demonstrations
    rows = dataset.select(range(0, len(dataset), max(1, len(dataset) // 8)))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_path))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_path))
    policy = ChoiceBackend(TransformersBackend(model, tokenizer), temperature=1.0)

    def expert_logprob():  # mean log softmax(scores) of the expert's command among the row's candidates
        policy.choose(rows["prompt"], rows["candidates"])
        return sum(float(torch.log_softmax(torch.tensor(choice.scores), 0)[choice.candidates.index(done[0]["content"])])
                   for choice, done in zip(policy.last_choices, rows["completion"])) / len(rows)

    before = expert_logprob()  # ~ -29: a random model's choice favours short commands
    weights = [p.detach().clone() for p in model.parameters()]
    history = []
    trained = choice_sft(model, tokenizer, rows, steps=8, lr=1e-2, batch_size=4, warmup_steps=1, progress=False,
                         log_history=history)
    assert trained is model and not model.training
    assert all(p.grad is None for p in model.parameters())  # nothing left for the first co-training update to add
    assert [entry["step"] for entry in history] == list(range(1, 9))
    assert all(math.isfinite(entry["loss"]) for entry in history)
    assert any(not torch.equal(a, b) for a, b in zip(weights, model.parameters()))
    assert expert_logprob() > before + 10.0  # nats (-28.8 -> -7.1 when written)
    # deterministic: the same seed, the same trained weights
    again = AutoModelForCausalLM.from_pretrained(str(tiny_model_path))
    choice_sft(again, tokenizer, rows, steps=8, lr=1e-2, batch_size=4, warmup_steps=1, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))


def test_bad_inputs_are_refused(tmp_path, tiny_model_path):
    import datasets

    with pytest.raises(ValueError, match="n_tasks"):
        expert_demonstrations(n_tasks=0)
    with pytest.raises(ValueError, match="'prompt' and 'completion'"):
        sft_warm_start(str(tiny_model_path), None, datasets.Dataset.from_list([{"text": "x"}]), steps=1,
                       output_dir=tmp_path)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_path))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_path))
    lone = datasets.Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}], "candidates": ["look"],
                                        "completion": [{"role": "assistant", "content": "look"}]}])
    with pytest.raises(ValueError, match="two or more candidates"):
        choice_sft(model, tokenizer, lone, steps=1, progress=False)
    with pytest.raises(ValueError, match="score"):
        choice_sft(model, tokenizer, lone, steps=1, score="max", progress=False)


def test_choice_accuracy_is_the_share_of_states_where_the_greedy_choice_is_the_experts(demonstrations, tiny_backend):
    from rla_train.backends.base import SamplingParams
    from rla_train.backends.choice import Choice, ChoiceBackend, admissible_from_prompt

    _, dataset = demonstrations
    rows = dataset.select(range(8))
    experts = [row["completion"][0]["content"] for row in rows]

    class Oracle:  # prefers the expert's command on even rows, another command on odd rows
        def choose(self, prompts, candidates):
            self.last_choices = []
            for _prompt, commands in zip(prompts, candidates):
                row = self.seen
                self.seen += 1
                scores = [float((command == experts[row]) == (row % 2 == 0)) for command in commands]
                self.last_choices.append(Choice(commands, scores, scores, 0))

    oracle = Oracle()
    oracle.seen = 0
    assert choice_accuracy(oracle, rows, batch_size=3) == 0.5  # rows 0, 2, 4, 6 of 8
    # a real choice policy (sampling at T=1 does not matter: the top score counts)
    policy = ChoiceBackend(tiny_backend, temperature=1.0)
    greedy = ChoiceBackend(tiny_backend, temperature=0.0).generate(rows["prompt"], sampling=SamplingParams(seed=0))
    expected = sum(g.samples[0].text == e for g, e in zip(greedy, experts)) / len(rows)
    assert choice_accuracy(policy, rows) == expected
    assert all(admissible_from_prompt(p) for p in rows["prompt"])
    with pytest.raises(ValueError, match="at least one"):
        choice_accuracy(policy, rows.select([]))


def test_policy_demonstrations_label_the_states_the_policy_reaches_with_the_experts_command(
        demonstrations, alfworld_tasks, tiny_backend):
    from rla_train.backends.choice import ChoiceBackend, admissible_from_prompt
    from rla_train.cotrainer.demonstrations import policy_demonstrations

    agent, experts = demonstrations
    policy = ChoiceBackend(tiny_backend, temperature=1.0)
    # the expert always playing (DAgger's beta = 1) reproduces the expert's own demonstrations
    mixed = policy_demonstrations(policy, "train", n_tasks=2, seed=5, agent=agent, tasks=alfworld_tasks[:3],
                                  max_steps=50, expert_mix=1.0, progress=False)
    own = experts.filter(lambda row: row["episode"] < 2)
    assert list(mixed["prompt"]) == list(own["prompt"]) and list(mixed["completion"]) == list(own["completion"])
    # the policy playing: its states (a random tiny model wanders), the expert's labels, admissible each time
    rows = policy_demonstrations(policy, "train", n_tasks=2, seed=5, agent=agent, tasks=alfworld_tasks[:3],
                                 max_steps=6, progress=False)
    assert len(rows) == 12 and list(rows["prompt"]) != list(own["prompt"])[:12]
    assert all(row["completion"][0]["content"] in admissible_from_prompt(row["prompt"]) for row in rows)
