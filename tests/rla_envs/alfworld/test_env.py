"""rla/AlfWorld-v0: the Gymnasium contract, determinism, vector envs, info keys and hostile actions."""

from __future__ import annotations

import json
import random

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rla_envs  # noqa: F401  (registers the ids)
from rla_envs.alfworld.env import AlfWorldEnv
from rla_envs.core.errors import DataNotFound, InvalidTask, ResetNeeded

INTRO = "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see "


@pytest.fixture
def env(alfworld_tasks):
    env = gym.make("rla/AlfWorld-v0", tasks=alfworld_tasks)
    yield env
    env.close()


def test_check_env_passes(alfworld_tasks):
    env = AlfWorldEnv(tasks=alfworld_tasks)
    check_env(env, skip_render_check=True)
    env.close()


def test_reset_gives_the_alfworld_text_and_the_info_contract(env, alfworld_tasks):
    observation, info = env.reset(seed=0)
    task = next(t for t in alfworld_tasks if t.id == info["task_id"])
    assert observation.startswith(INTRO) and observation.endswith(f"Your task is to: {task.instruction}.")
    assert info["instruction"] == task.instruction and info["task_type"] == task.spec["task_type"]
    assert info["step"] == 0 and info["won"] is False and info["invalid_action"] is False
    assert info["admissible_actions"] == sorted(info["admissible_actions"]) and "look" in info["admissible_actions"]
    assert "expert_action" not in info


def test_the_walkthrough_wins_with_reward_one(env, alfworld_tasks):
    task = next(t for t in alfworld_tasks if t.spec["task_type"] == "pick_cool_then_place_in_recep")
    env.reset(options={"task": task})
    for index, command in enumerate(task.spec["walkthrough"]):
        observation, reward, terminated, truncated, info = env.step(command)
        assert not info["invalid_action"] and info["step"] == index + 1
    assert (reward, terminated, truncated, info["won"]) == (1.0, True, False, True)
    with pytest.raises(ResetNeeded):
        env.step("look")


def test_inadmissible_actions_are_answered_and_flagged(env):
    env.reset(seed=1)
    for action in ["", "fly to the moon", "ÉCOUTE 冰箱", "take everything"]:
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation == "Nothing happens." and info["invalid_action"] and reward == 0.0 and not terminated
    observation, _, _, _, info = env.step("x" * 1_000_000)
    assert info["invalid_action"] and "longer than the limit" in observation
    observation, _, _, _, info = env.step("look")
    assert not info["invalid_action"] and observation.startswith("You are in the middle of a room")


def test_truncation_at_max_steps(alfworld_tasks):
    env = gym.make("rla/AlfWorld-v0", tasks=alfworld_tasks, max_steps=3)
    env.reset(seed=0)
    flags = [env.step("look")[3] for _ in range(3)]
    assert flags == [False, False, True]
    env.close()


def _transcript(env, seed, steps=20):
    observation, info = env.reset(seed=seed)
    rng = random.Random(seed)
    transcript = [(observation, info["task_id"], info.get("expert_action"))]
    for _ in range(steps):
        action = rng.choice(info["admissible_actions"] + ["nonsense"])
        observation, reward, terminated, truncated, info = env.step(action)
        transcript.append((action, observation, reward, info["admissible_actions"], info.get("expert_action")))
        if terminated or truncated:
            break
    return transcript


def test_same_seed_and_actions_give_the_same_transcript(alfworld_tasks):
    first = gym.make("rla/AlfWorld-v0", tasks=alfworld_tasks, expert="handcoded")
    second = gym.make("rla/AlfWorld-v0", tasks=alfworld_tasks, expert="handcoded")
    for seed in (0, 5):
        assert _transcript(first, seed) == _transcript(second, seed)
    assert _transcript(first, 0)[0][1] != _transcript(first, 3)[0][1] or len(alfworld_tasks) == 1
    first.close()
    second.close()


def test_async_vector_env_of_two_envs_steps_in_processes(alfworld_tasks):
    tasks = [t.to_dict() for t in alfworld_tasks]
    vector = gym.vector.AsyncVectorEnv([lambda: gym.make("rla/AlfWorld-v0", tasks=tasks)] * 2)
    single = gym.make("rla/AlfWorld-v0", tasks=alfworld_tasks)
    try:
        observations, infos = vector.reset(seed=[3, 4])
        expected = [single.reset(seed=3)[0], single.reset(seed=4)[0]]
        assert list(observations) == expected
        actions = [infos["admissible_actions"][i][0] for i in range(2)]
        observations, rewards, terminated, truncated, infos = vector.step(actions)
        single.reset(seed=4)
        assert observations[1] == single.step(actions[1])[0]
        assert list(rewards) == [0.0, 0.0] and not any(infos["invalid_action"])
        assert all(o and not o.startswith(INTRO) for o in observations)
    finally:
        vector.close()
        single.close()


def test_ten_thousand_hostile_actions_never_raise(alfworld_tasks):
    env = gym.make("rla/AlfWorld-v0", tasks=alfworld_tasks, max_steps=500)
    rng = random.Random(0)
    pool = ["", " ", "\t", "look", "take", "go to", "ça va ?", "冰箱 1", "🍎" * 50, "x" * 1_000_000,
            "go to fridge 1\x00", "\n\n", "move  apple 1  to fridge 1", "\u202e help"]
    _, info = env.reset(seed=0)
    invalid = 0
    for _ in range(10_000):
        kind = rng.random()
        if kind < 0.6:
            action = rng.choice(pool)
        elif kind < 0.65:  # a few real moves, so hostile text also meets states other than the first
            action = rng.choice(info["admissible_actions"])
        elif kind < 0.85:
            action = "".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randrange(0, 40)))
        else:
            action = bytes(rng.randrange(256) for _ in range(20)).decode("latin-1")
        observation, _, terminated, truncated, info = env.step(action)
        assert isinstance(observation, str) and observation
        invalid += info["invalid_action"]
        if terminated or truncated:
            _, info = env.reset()
    env.close()
    assert invalid > 9_000


def test_task_types_filter_the_default_and_given_tasks(alfworld_tasks):
    env = gym.make("rla/AlfWorld-v0", tasks=alfworld_tasks, task_types=["pick_two_obj_and_place"])
    assert {env.reset(seed=s)[1]["task_type"] for s in range(4)} == {"pick_two_obj_and_place"}
    env.close()
    with pytest.raises(InvalidTask, match="task type"):
        AlfWorldEnv(tasks=[t for t in alfworld_tasks if t.spec["task_type"] != "look_at_obj_in_light"],
                    task_types=["look_at_obj_in_light"])


def test_bad_arguments_fail_when_the_env_is_built(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="split"):
        AlfWorldEnv(split="test")
    with pytest.raises(ValueError, match="unknown task types"):
        AlfWorldEnv(task_types=["pick_and_slice"])
    with pytest.raises(DataNotFound):
        AlfWorldEnv(data_path=tmp_path / "missing")
    (tmp_path / "json_2.1.1" / "train").mkdir(parents=True)
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    with pytest.raises(DataNotFound, match="no solvable game"):
        AlfWorldEnv().reset()


def test_real_alfworld_data_is_played_from_data_path(tmp_path, alfworld_tasks):
    from rla_envs.alfworld.tasks import game_from_task

    # The layout of ALFWorld's download: json_2.1.1/<split>/<task folder>/<trial folder>/game.tw-pddl
    for task in alfworld_tasks:
        spec = task.spec
        trial = tmp_path / "json_2.1.1" / "valid_seen" / f"{spec['task_type']}-Thing-None-Place-1" / "trial_T0"
        trial.mkdir(parents=True)
        (trial / "game.tw-pddl").write_text(json.dumps(game_from_task(task)))
        traj = {"task_type": spec["task_type"], "pddl_params": dict(spec["pddl_params"]),
                "scene": {"floor_plan": spec["floor_plan"]}}
        (trial / "traj_data.json").write_text(json.dumps(traj))
    env = gym.make("rla/AlfWorld-v0", split="valid_seen", data_path=tmp_path, task_types=["pick_two_obj_and_place"],
                   expert="handcoded")
    observation, info = env.reset(seed=0)
    assert info["task_type"] == "pick_two_obj_and_place" and observation.startswith(INTRO)
    assert len(env.unwrapped.tasks) == 1 and env.unwrapped.tasks[0].origin == "dataset"
    env.close()


def test_alfworld_setting_its_default_data_variable_does_not_hide_generated_games(tmp_path, monkeypatch):
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))  # what `import alfworld` does: a folder without data
    assert AlfWorldEnv()._data_root() is None


def test_the_default_task_set_is_generated_for_the_split(alfworld_tasks):
    env = AlfWorldEnv(split="valid_unseen", n_per_type=1)
    assert {t.id for t in env.tasks} == {t.id for t in alfworld_tasks}  # the session fixture's cache
    env.close()
