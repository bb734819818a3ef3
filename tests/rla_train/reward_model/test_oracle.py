"""The noisy-oracle judge: expert step labels as votes, each flipped with probability 1 - accuracy, seeded."""

from __future__ import annotations

import functools
import math
import random

import numpy as np
import pytest

from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory
from rla_train.reward_model import RewardModelDiagnoser, parse_verdict
from rla_train.reward_model.oracle import NoisyOracleJudge, noisy_votes, persistent_uniform, vote_good_probability
from rla_train.rollout.episode import Episode


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """One generated valid_unseen pick-and-place ALFWorld task, in a private cache."""
    from rla_envs.alfworld.generated import generated_tasks

    patch = pytest.MonkeyPatch()
    patch.setenv("RLA_CACHE", str(tmp_path_factory.mktemp("rla_cache")))
    try:
        [found] = generated_tasks("valid_unseen", n_per_type=1, seed=0, task_types=["pick_and_place_simple"],
                                  workers=1, progress=False)
    finally:
        patch.undo()
    return found


@pytest.fixture(scope="module")
def episode(task):
    """A real 20-step failed episode: a seeded random walk over the admissible commands, played in the env."""
    from rla_envs.alfworld.env import AlfWorldEnv

    env = AlfWorldEnv(tasks=[task], max_steps=50)
    rng = random.Random(3)
    observation, info = env.reset(seed=0, options={"task": task})
    observations, actions, infos = [observation], [], [info]
    while len(actions) < 20:
        action = rng.choice([a for a in info["admissible_actions"] if not a.startswith(("examine", "inventory"))])
        observation, _, terminated, truncated, info = env.step(action)
        observations.append(observation)
        actions.append(action)
        infos.append(info)
        if terminated or truncated:
            break
    env.close()
    return Episode(task_id=task.id, observations=observations, actions=actions, infos=infos, won=bool(info["won"]),
                   task=task)


@pytest.fixture(scope="module")
def labels(task, episode):
    from rla_envs.core.labels import step_labels

    found = step_labels(task, episode.actions)
    assert True in found and False in found  # the walk has good and bad steps, or the tests below prove little
    return found


def copy_of(episode):
    return Episode(task_id=episode.task_id, observations=episode.observations, actions=episode.actions,
                   infos=episode.infos, won=episode.won, task=episode.task)


def as_votes(labels):
    return [0 if label is None else (1 if label else -1) for label in labels]


# --------------------------------------------------------------------------- pure maths

def test_noisy_votes_by_hand():
    # 0.9 and 0.85 are >= 0.8: those votes flip; an undetermined label votes 0 whatever its draws
    uniforms = np.array([[0.1, 0.9], [0.5, 0.85], [0.3, 0.3]])
    assert noisy_votes([True, False, None], 0.8, uniforms) == [[1, -1], [-1, 1], [0, 0]]
    assert noisy_votes([True, False], 1.0, np.array([[0.999], [0.0]])) == [[1], [-1]]  # draws are < 1: never flip
    assert noisy_votes([True, False], 0.0, np.array([[0.0], [0.5]])) == [[-1], [1]]    # draws are >= 0: always flip
    with pytest.raises(ValueError, match="one row per label"):
        noisy_votes([True], 0.8, np.zeros((2, 3)))
    assert [vote_good_probability(label, 0.8) for label in (True, False, None)] == [0.8, pytest.approx(0.2), 0.5]


def test_it_says_what_it_needs():
    with pytest.raises(ValueError, match=r"accuracy must be a number in \[0, 1\]"):
        NoisyOracleJudge(1.5)
    with pytest.raises(ValueError, match="judgments_per_step"):
        NoisyOracleJudge(0.8, judgments_per_step=0)
    run = Trajectory(task_id="t", observations=["start", "next"], actions=["look"], infos=[{}, {}])
    with pytest.raises(ValueError, match="has no task to judge it by"):
        NoisyOracleJudge(0.8).judge(None, [run])
    with pytest.raises(RuntimeError, match="returned 2 labels for 1 actions"):
        NoisyOracleJudge(0.8, labeller=lambda task, actions: [True, True]).judge(
            Task(family="alfworld", instruction="x", spec={}), [run])


# --------------------------------------------------------------------------- on a real ALFWorld episode

def test_perfect_oracle_votes_the_labels_and_fills_the_episode(episode, labels):
    judged = copy_of(episode)
    report = NoisyOracleJudge(1.0, judgments_per_step=3, seed=0).judge(None, [judged])
    assert judged.judgments == [[vote] * 3 for vote in as_votes(labels)]
    assert [[parse_verdict(text) for text in step] for step in judged.judgment_texts] == judged.judgments
    assert report.texts == [judged.judgment_texts]
    assert (report.trajectories, report.steps, report.judgments) == (1, len(labels), 3 * len(labels))
    assert report.unparseable == 3 * labels.count(None)
    assert [g.good_probability for g in report.generations[0]] == [vote_good_probability(x, 1.0) for x in labels]


def test_zero_accuracy_contradicts_every_label(episode, labels):
    judged = copy_of(episode)
    NoisyOracleJudge(0.0, judgments_per_step=3, seed=0).judge(None, [judged])
    assert judged.judgments == [[-vote] * 3 for vote in as_votes(labels)]


def test_votes_agree_with_the_labels_at_the_accuracy_and_a_seed_repeats_them(task, episode, labels):
    # 40 copies x 20 steps x 3 votes = 2,400 votes on labelled steps; agreement ~ Binomial(2400, 0.8)/2400 has
    # sd sqrt(0.8 * 0.2 / 2400) = 0.0082, so 0.76-0.84 is +-4.9 sd (5 sd with the steps' exact count below).
    from rla_envs.core.labels import step_labels

    labeller = functools.lru_cache(maxsize=None)(lambda task, actions: tuple(step_labels(task, list(actions))))
    cached = lambda task, actions: list(labeller(task, tuple(actions)))  # noqa: E731 - the replay is done once

    def votes(seed):
        runs = [copy_of(episode) for _ in range(40)]
        NoisyOracleJudge(0.8, judgments_per_step=3, seed=seed, labeller=cached).judge(task, runs)
        return [run.judgments for run in runs]

    first = votes(11)
    truth = as_votes(labels)
    cast = [(vote, truth[i]) for run in first for i, step in enumerate(run) for vote in step if truth[i] != 0]
    agreement = sum(vote == label for vote, label in cast) / len(cast)
    sd = math.sqrt(0.8 * 0.2 / len(cast))
    assert abs(agreement - 0.8) <= 5 * sd
    assert len({str(run) for run in first}) > 1  # the copies got independent votes
    assert votes(11) == first
    assert votes(12) != first


def test_state_dict_resumes_the_vote_stream(episode):
    judge = NoisyOracleJudge(0.5, seed=5, labeller=lambda task, actions: [True] * len(actions))
    judge.judge(None, [copy_of(episode)])
    saved = judge.state_dict()
    after = copy_of(episode)
    judge.judge(None, [after])
    resumed = NoisyOracleJudge(0.5, seed=0, labeller=lambda task, actions: [True] * len(actions))
    resumed.load_state_dict(saved)
    again = copy_of(episode)
    resumed.judge(None, [again])
    assert again.judgments == after.judgments


def test_persistent_noise_errs_on_the_same_steps_on_every_visit_at_the_accuracy(episode):
    all_good = lambda task, actions: [True] * len(actions)  # noqa: E731 - every wrong vote is a -1
    assert persistent_uniform(3, "t", "You see a mug.", "take mug") == persistent_uniform(3, "t", "You see a mug.",
                                                                                           "take mug")
    draws = {persistent_uniform(seed, "t", "o", a) for seed in (3, 4) for a in ("take mug", "go to desk 1")}
    assert len(draws) == 4 and all(0.0 <= u < 1.0 for u in draws)

    judge = NoisyOracleJudge(0.8, judgments_per_step=3, seed=7, noise="persistent", labeller=all_good)
    runs = [copy_of(episode) for _ in range(3)]
    judge.judge(None, runs)
    assert all(len(set(step)) == 1 for step in runs[0].judgments)  # a step's votes are flipped together
    assert runs[1].judgments == runs[0].judgments == runs[2].judgments  # and again on every visit
    resumed = NoisyOracleJudge(0.8, judgments_per_step=3, seed=7, noise="persistent", labeller=all_good)
    assert resumed.judge(None, [again := copy_of(episode)]) and again.judgments == runs[0].judgments  # nothing to save
    other_seed = NoisyOracleJudge(0.8, judgments_per_step=3, seed=8, noise="persistent", labeller=all_good)
    many = [Trajectory(task_id="t", observations=[f"room {i}", "after"], actions=[f"take thing {i}"], infos=[{}, {}])
            for i in range(2000)]
    task = Task(family="alfworld", instruction="x", spec={})
    other_seed.judge(task, many)
    # 2,000 distinct (observation, action) steps: the wrong share ~ Binomial(2000, 0.2) / 2000, sd 0.0089; the
    # hash makes it one fixed number, checked against +-5 sd
    wrong = sum(run.judgments[0][0] == -1 for run in many) / len(many)
    assert abs(wrong - 0.2) <= 5 * math.sqrt(0.8 * 0.2 / len(many))
    # the same step in another episode (another history, the same observation and action) gets the same votes
    revisit = Trajectory(task_id="t", observations=["start", "room 5", "after"], actions=["look", "take thing 5"],
                         infos=[{}, {}, {}])
    other_seed.judge(task, [revisit])
    assert revisit.judgments[1] == many[5].judgments[0]
    with pytest.raises(ValueError, match="noise must be one of"):
        NoisyOracleJudge(0.8, noise="sticky")
    with pytest.raises(ValueError, match="an int seed"):
        NoisyOracleJudge(0.8, noise="persistent", seed=np.random.default_rng(0))


def test_diagnoser_reads_the_oracle(task, episode, labels):
    lost = copy_of(episode)
    lost.won = False
    summaries = RewardModelDiagnoser(NoisyOracleJudge(1.0, seed=0)).diagnose(task, [lost])
    bad = {a for a, label in zip(episode.actions, labels) if label is False}
    assert summaries and all("judged bad by all 3 judgments" in s for s in summaries)
    assert any(repr(action) in summaries[0] for action in bad)


# --------------------------------------------------------------------------- config and components

def test_config_takes_the_oracle_for_families_with_step_labels_only():
    from rla_train.config import ConfigError, load_config

    config = load_config(None, ["reward_model.kind=noisy_oracle", "reward_model.model=null"], check_hardware=False)
    assert config.reward_model.kind == "noisy_oracle"  # no reward-model weights needed
    with pytest.raises(ConfigError, match="noisy_oracle votes the expert's step labels.*not code"):
        load_config(None, ["env.id=rla/Code-v0", "policy.action_mode=text", "reward_model.kind=noisy_oracle"],
                    check_hardware=False)
    with pytest.raises(ConfigError, match="same-as-reward-model but the reward model has no weights"):
        load_config(None, ["reward_model.kind=noisy_oracle", "pool.rewriter=llm",
                           "pool.rewriter_model=same-as-reward-model"], check_hardware=False)


def test_components_build_the_oracle_without_a_model_so_nothing_trains_it():
    from rla_train.config import load_config
    from rla_train.cotrainer.play_setup import build_judge

    config = load_config(None, ["reward_model.kind=noisy_oracle", "reward_model.oracle_accuracy=0.7",
                                "reward_model.judgments_per_step=5", "train.seed=4"], check_hardware=False)
    judge, model, tokenizer, text = build_judge(config, None, None)
    assert isinstance(judge, NoisyOracleJudge) and (model, tokenizer, text) == (None, None, None)
    assert (judge.accuracy, judge.judgments_per_step, judge.noise) == (0.7, 5, "independent")
    persistent = load_config(None, ["reward_model.kind=noisy_oracle", "reward_model.oracle_noise=persistent",
                                    "train.seed=4"], check_hardware=False)
    assert build_judge(persistent, None, None)[0].noise == "persistent"
    # each rank draws its own independent votes, but a persistent error is the same step's on every rank
    assert build_judge(config, None, None, rank=1)[0].rng.random() != build_judge(config, None, None)[0].rng.random()
    assert build_judge(persistent, None, None, rank=1)[0].seed == build_judge(persistent, None, None)[0].seed
    again, *_ = build_judge(config, None, None)
    assert again.rng.random(4).tolist() == judge.rng.random(4).tolist()  # seeded from train.seed
