"""Labelled judge data (played, labelled, balanced steps as judge prompts) and the reward-model warm start."""

from __future__ import annotations

import pytest

from rla_train.reward_model.label_data import (LabelledStep, balance_steps, class_counts, judge_dataset, label_steps,
                                               play_episodes)
from rla_train.reward_model.prompts import judge_chat
from rla_train.reward_model.verdicts import VERDICTS
from rla_train.reward_model.warm_start import class_weights, lr_factor, warm_start_reward_model
from tests.rla_envs.alfworld.conftest import alfworld_cache, alfworld_tasks  # noqa: F401  (session fixtures)


@pytest.fixture(scope="module")
def task(alfworld_tasks):
    """The generated pick_and_place_simple task of the shared ALFWorld fixtures."""
    return next(t for t in alfworld_tasks if t.spec["task_type"] == "pick_and_place_simple")


def _replay(task, actions):
    """An Episode of ``actions`` played in the env (observations and infos as the env gave them)."""
    from rla_envs.alfworld.env import AlfWorldEnv
    from rla_train.rollout.episode import Episode

    env = AlfWorldEnv("valid_unseen", tasks=[task], max_steps=50)
    try:
        observation, info = env.reset(seed=0, options={"task": task})
        episode = Episode(task_id=task.id, task=task, seed=0, observations=[observation], infos=[dict(info)])
        for action in actions:
            observation, _, _, _, info = env.step(action)
            episode.actions.append(action)
            episode.observations.append(observation)
            episode.infos.append(dict(info))
    finally:
        env.close()
    return episode


@pytest.fixture(scope="module")
def detour_episode(task):
    """The walkthrough with three detours away from the first receptacle (where the object is): 3 bad steps."""
    walkthrough = list(task.spec["walkthrough"])
    first = walkthrough[0]
    episode = _replay(task, [first])
    admissible = episode.infos[-1]["admissible_actions"]
    elsewhere = [a for a in admissible if a.startswith("go to ") and a != first][:3]
    assert len(elsewhere) == 3, admissible
    actions = [first, elsewhere[0], first, elsewhere[1], first, elsewhere[2], first] + walkthrough[1:]
    return _replay(task, actions)


def test_labelled_steps_are_the_oracles_labels_and_prompts_are_the_judges(task, detour_episode):
    from rla_envs.core.labels import step_labels

    steps = label_steps([detour_episode], source="policy")
    labels = step_labels(task, detour_episode.actions)
    assert [(s.step, s.good) for s in steps] == [(i, label) for i, label in enumerate(labels) if label is not None]
    # leaving the place that holds the object three times is bad; coming back and the walkthrough are good
    assert [s.step for s in steps if not s.good] == [1, 3, 5]
    assert class_counts(steps) == {"steps": len(steps), "good": len(steps) - 3, "bad": 3,
                                   "by_source": {"policy": {"good": len(steps) - 3, "bad": 3}}}
    for style in ("full", "compact"):
        dataset = judge_dataset(steps, style=style, max_history=4)
        for row, step in zip(dataset, steps):
            assert row["prompt"] == judge_chat(task, detour_episode, step.step, style=style, max_history=4)
            assert row["completion"] == [{"role": "assistant", "content": VERDICTS[0] if step.good else VERDICTS[1]}]
            assert row["good"] == step.good and row["candidates"] == list(VERDICTS)


def test_compact_prompt_shows_the_goal_the_state_before_the_step_the_step_and_both_verdicts(task, detour_episode):
    bad = judge_chat(task, detour_episode, 1, style="compact")[-1]["content"]
    target = task.spec["pddl_params"]["object_target"].lower()
    assert bad.startswith("Goal: ") and f"\nhere: {target}" in bad.lower()  # the object is at the agent's place
    assert f"Step: {detour_episode.actions[1]}" in bad
    assert all(verdict in bad for verdict in VERDICTS)
    full = judge_chat(task, detour_episode, 1)[-1]["content"]
    assert len(bad) * 3 < len(full)
    with pytest.raises(ValueError, match="style must be one of"):
        judge_chat(task, detour_episode, 1, style="compressed")


def test_epsilon_expert_episodes_are_seeded_and_say_who_played(task):
    first = play_episodes([task], epsilons=(0.0, 1.0), episodes_per_task=2, seed=3, max_steps=8, split="valid_unseen")
    again = play_episodes([task], epsilons=(0.0, 1.0), episodes_per_task=2, seed=3, max_steps=8, split="valid_unseen")
    assert [e.actions for e in first] == [e.actions for e in again]
    assert [e.source for e in first] == ["expert", "epsilon=1"]
    assert all(len(e.observations) == len(e.actions) + 1 == len(e.infos) for e in first)
    assert first[0].actions != first[1].actions  # the random player is not the expert
    with pytest.raises(ValueError, match="epsilons"):
        play_episodes([task], epsilons=(1.5,))


def _fake_steps(labels):
    from rla_envs.core.task import Task
    from rla_envs.core.trajectory import Trajectory

    task = Task(family="alfworld", instruction="x", spec={})
    return [LabelledStep(task, Trajectory(task_id=task.id), i, good) for i, good in enumerate(labels)]


def test_balance_keeps_every_bad_step_and_a_seeded_share_of_good_ones():
    steps = _fake_steps([True] * 20 + [False, True, False])  # 21 good, 2 bad
    kept = balance_steps(steps, good_per_bad=2.0, seed=1)
    assert class_counts(kept)["bad"] == 2 and class_counts(kept)["good"] == 4  # 2 per bad
    assert [s.step for s in kept] == sorted(s.step for s in kept)  # play order kept
    assert kept == balance_steps(steps, good_per_bad=2.0, seed=1)
    assert balance_steps(steps, good_per_bad=None) == steps
    assert balance_steps(steps, good_per_bad=100.0) == steps  # fewer good than the ratio allows: all kept
    assert balance_steps(_fake_steps([True] * 3), good_per_bad=2.0) == _fake_steps([True] * 3)


def test_class_weights_give_both_classes_half_the_weight():
    # 6 good, 2 bad: 8 / (2 * 6) = 0.667 per good row, 8 / (2 * 2) = 2.0 per bad row (6 * 0.667 = 2 * 2 = 4)
    assert class_weights([True] * 6 + [False] * 2) == (pytest.approx(2 / 3), 2.0)
    assert class_weights([True, True]) == (1.0, 0.0)


def test_the_learning_rate_warms_up_then_stays_or_falls_linearly_to_the_last_step():
    # 10 steps, 4 of warm-up: 1/4, 2/4, 3/4, 1, then constant 1 ... or linear (10 - k) / 6 for k = 4..9
    assert [lr_factor(k, 10, 4, "constant") for k in range(10)] == [0.25, 0.5, 0.75] + [1.0] * 7
    assert [lr_factor(k, 10, 4, "linear") for k in range(10)] == \
        [0.25, 0.5, 0.75, 1.0, 1.0, pytest.approx(5 / 6), pytest.approx(4 / 6), 0.5, pytest.approx(2 / 6),
         pytest.approx(1 / 6)]
    assert lr_factor(0, 1, 10, "linear") == 0.1   # all of a run shorter than its warm-up is warm-up


def test_warm_start_memorises_a_small_labelled_set(tiny_model_path, detour_episode):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rla_train.backends.choice import ChoiceBackend
    from rla_train.backends.hf import TransformersBackend
    from rla_train.reward_model import RewardModel
    from rla_train.reward_model.probe import Probe, probe_reward_model
    from rla_train.reward_model.verdicts import VerdictChoiceBackend

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_path))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_path))
    judge = RewardModel(VerdictChoiceBackend(ChoiceBackend(TransformersBackend(model, tokenizer))),
                        prompt_style="compact")
    steps = label_steps([detour_episode])
    dataset = judge_dataset(steps, style="compact")
    before = probe_reward_model(judge, Probe(steps, class_counts(steps)))
    weights = [p.detach().clone() for p in model.parameters()]
    history: list = []
    summary = warm_start_reward_model(judge, dataset, steps=60, lr=3e-3, batch_size=8, seed=0, log_history=history)
    after = probe_reward_model(judge, Probe(steps, class_counts(steps)))
    assert summary["rows"] == len(steps) and summary["bad"] == 3 and len(history) == 60
    assert any(not torch.equal(w, p) for w, p in zip(weights, model.parameters()))
    assert summary["last_loss"] < 0.5 * summary["first_loss"]
    assert summary["last_accuracy"] == sum(row["accuracy"] for row in history[-6:]) / 6   # the last tenth of 60 steps
    assert after["balanced_accuracy"] == 1.0 and after["auc"] == 1.0, (before, after)
    assert not model.training
    assert all(p.grad is None for p in model.parameters())  # nothing left for the first co-training update to add


def test_warm_start_needs_a_choice_judge_and_labelled_rows(detour_episode):
    from rla_train.reward_model import RewardModel

    class Text:
        def generate(self, prompts, n=1, sampling=None):
            return []

    dataset = judge_dataset(label_steps([detour_episode]), style="compact")
    with pytest.raises(TypeError, match="VerdictChoiceBackend"):
        warm_start_reward_model(RewardModel(Text()), dataset, steps=1)
    with pytest.raises(ValueError, match="'good'"):
        warm_start_reward_model(RewardModel(Text()), dataset.remove_columns("good"), steps=1)
    with pytest.raises(ValueError, match="schedule must be one of"):
        warm_start_reward_model(RewardModel(Text()), dataset, steps=1, schedule="cosine")


class _LookPolicy:
    """A generation backend that always answers "look" (a no-op: every step it takes is good)."""

    def __init__(self):
        self.prompts = []

    def generate(self, prompts, n=1, sampling=None):
        from rla_train.backends.base import Generation, Sample

        self.prompts.extend(prompts)
        return [Generation(prompt="", prompt_ids=[], samples=[Sample(text="look")]) for _ in prompts]


def test_a_policy_backend_plays_through_its_agent_and_warm_start_data_mixes_expert_and_policy(task):
    from rla_train.agents.text_games import TextGameAgent
    from rla_train.reward_model.label_data import warm_start_data

    policy, agent = _LookPolicy(), TextGameAgent(prompt_style="compact")
    episodes = play_episodes([task], episodes_per_task=1, max_steps=4, split="valid_unseen", policy=policy, agent=agent)
    assert episodes[0].actions == ["look"] * 4 and episodes[0].source == "policy"
    assert policy.prompts[0] == agent.prompt(type(episodes[0])(task_id=task.id, task=task,
                                                                  observations=episodes[0].observations[:1],
                                                                  infos=episodes[0].infos[:1]))
    dataset, counts = warm_start_data([task], episodes=4, expert_share=0.5, policy=_LookPolicy(), agent=agent,
                                      max_steps=4, split="valid_unseen", good_per_bad=None, style="compact")
    assert set(counts["by_source"]) == {"expert", "policy"}
    assert counts["by_source"]["policy"] == {"good": 8, "bad": 0}  # 2 episodes x 4 no-ops, all good
    assert len(dataset) == counts["steps"] and sorted(set(dataset["source"])) == ["expert", "policy"]
