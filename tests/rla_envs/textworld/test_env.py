"""rla/TextWorld-v0: the Gymnasium contract, determinism, the expert and the info keys."""

from __future__ import annotations

import random

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rla_envs  # noqa: F401  (registers the ids)
from rla_envs.core import Task, TaskNotFound
from rla_envs.core.errors import ResetNeeded


def test_check_env_passes(tw_env):
    check_env(tw_env, skip_render_check=True)


def test_gym_make_builds_the_env(tw_tasks):
    env = gym.make("rla/TextWorld-v0", tasks=tw_tasks, max_steps=7)
    observation, info = env.reset(seed=3)
    assert info["task_id"] in {t.id for t in tw_tasks}
    assert info["instruction"] and isinstance(observation, str)
    assert info["admissible_actions"] == sorted(info["admissible_actions"]) and info["admissible_actions"]
    env.close()


def _transcript(env, seed, steps=25):
    observation, info = env.reset(seed=seed)
    rng = random.Random(seed)
    transcript = [(observation, info["task_id"])]
    for _ in range(steps):
        action = rng.choice(info["admissible_actions"] + ["dance", "xyzzy"])
        observation, reward, terminated, truncated, info = env.step(action)
        transcript.append((action, observation, reward, terminated, truncated, info["invalid_action"],
                           tuple(info["admissible_actions"])))
        if terminated or truncated:
            observation, info = env.reset()
            transcript.append((observation, info["task_id"]))
    return transcript


def test_same_seed_same_actions_same_transcript(tw_tasks):
    from rla_envs.textworld.env import TextWorldEnv

    first, second = TextWorldEnv(tasks=tw_tasks), TextWorldEnv(tasks=tw_tasks)
    assert _transcript(first, seed=11) == _transcript(second, seed=11)
    assert _transcript(first, seed=11) == _transcript(first, seed=11)  # reused loaded games replay the same
    first.close(), second.close()


def test_expert_wins_every_task(tw_env, tw_tasks):
    for task in tw_tasks:
        observation, info = tw_env.reset(options={"task": task})
        assert tw_env.expert_actions() == [" ".join(c.lower().split()) for c in tw_env.walkthrough]
        reward, terminated, steps = 0.0, False, 0
        while not terminated:
            observation, reward, terminated, truncated, info = tw_env.step(tw_env.expert_action())
            steps += 1
            assert not truncated and not info["invalid_action"] or "already" in observation
        assert reward == 1.0 and info["won"], (task.meta, observation)
        assert steps == task.meta["expert_steps"]


def test_expert_recovers_after_a_detour(tw_env, tw_tasks):
    rng = random.Random(5)
    for task in tw_tasks:
        observation, info = tw_env.reset(options={"task": task}, seed=1)
        for _ in range(3):  # wander without eating or dropping what the quest needs
            safe = [a for a in info["admissible_actions"] if a.split()[0] in {"go", "examine", "look", "open"}]
            observation, reward, terminated, truncated, info = tw_env.step(rng.choice(safe))
        plan = tw_env.expert_actions()
        assert plan, task.meta
        for action in plan:
            observation, reward, terminated, truncated, info = tw_env.step(action)
        assert info["won"] and reward == 1.0, (task.meta, plan, observation)


@pytest.mark.slow
def test_expert_wins_every_default_task(tmp_path, monkeypatch):
    from rla_envs.textworld.env import TextWorldEnv

    monkeypatch.setenv("RLA_CACHE", str(tmp_path))
    env = TextWorldEnv()
    assert len(env.tasks) == 21
    for task in env.tasks:
        env.reset(options={"task": task})
        info = {}
        for action in env.walkthrough:
            _, reward, terminated, truncated, info = env.step(action)
        assert info["won"] and terminated, task.meta


def test_reset_accepts_task_dict_and_id(tw_env, tw_tasks):
    task = tw_tasks[1]
    for given in (task, task.to_dict(), task.id, Task.from_json(task.to_json())):
        _, info = tw_env.reset(options={"task": given})
        assert info["task_id"] == task.id and info["instruction"] == task.instruction


def test_unknown_task_id_raises_task_not_found(tw_env, tw_tasks):
    with pytest.raises(TaskNotFound, match="Did you mean"):
        tw_env.reset(options={"task": tw_tasks[0].id[:-1] + "x"})
    with pytest.raises(KeyError):  # TaskNotFound is a KeyError too
        tw_env.reset(options={"task": "textworld:nope"})


def test_invalid_action_gets_feedback_and_flag(tw_env, tw_tasks):
    tw_env.reset(options={"task": tw_tasks[0]})
    observation, reward, terminated, truncated, info = tw_env.step("dance with the moon")
    assert info["invalid_action"] and observation.strip() and reward == 0.0
    assert info["admissible_actions"]
    observation, _, _, _, info = tw_env.step("  " + info["admissible_actions"][0].upper() + " ")
    assert not info["invalid_action"]  # case and spacing do not matter


def test_meta_and_multi_commands_never_reach_the_game(tw_env, tw_tasks, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # frotz would write a save file (game.qzl) here on "save"
    task = tw_tasks[1]  # tw-simple
    first, info = tw_env.reset(options={"task": task})
    before = info["admissible_actions"]
    for action in ["quit", "y", "restart", "yes", "tw-trace-actions", "undo", "save", "restore"]:
        observation, _, terminated, _, info = tw_env.step(action)
        assert info["invalid_action"] and not terminated
    assert info["admissible_actions"] == before
    # "open X. take Y" would queue the second command for the next turn: only the first is played.
    walkthrough = tw_env.walkthrough
    tw_env.step(f"{walkthrough[0]}. look\nlook then inventory")
    observation, _, _, _, _ = tw_env.step("look")
    assert "-=" in observation  # the room description, not a queued command's answer
    for action in walkthrough[1:]:  # the game is alive and in step with textworld's tracker
        observation, reward, terminated, truncated, info = tw_env.step(action)
    assert info["won"] and reward == 1.0, observation
    assert list(tmp_path.iterdir()) == []


def test_truncation_at_max_steps_and_reset_needed(tw_tasks):
    from rla_envs.textworld.env import TextWorldEnv

    env = TextWorldEnv(tasks=tw_tasks, max_steps=3)
    env.reset(options={"task": tw_tasks[0]})
    results = [env.step("look") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True] and not any(r[2] for r in results)
    with pytest.raises(ResetNeeded):
        env.step("look")
    env.close()


def test_losing_the_game_terminates_without_reward(tw_env, tw_tasks):
    task = tw_tasks[1]  # tw-simple: eating the food you must grill loses
    tw_env.reset(options={"task": task})
    walkthrough = tw_env.walkthrough
    food = walkthrough[-1].removeprefix("put ").removesuffix(" on stove")
    for action in walkthrough[:-1]:
        tw_env.step(action)
    observation, reward, terminated, truncated, info = tw_env.step(f"eat {food}")
    assert terminated and reward == 0.0 and not info["won"], observation
    assert tw_env.expert_actions() == []  # a lost game has no winning plan
