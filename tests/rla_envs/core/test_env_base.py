"""TaskEnv base: task resolution, bad actions, truncation, info contract — with a tiny real family."""

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from rla_envs.core import InvalidTask, ResetNeeded, Task, TaskEnv, TaskNotFound, Transition


class CountdownEnv(TaskEnv):
    """A minimal family: say the task's word ``spec['count']`` times to win."""

    family = "countdown"

    def default_tasks(self):
        return [Task(family="countdown", instruction=f"say {w} {n} times", spec={"word": w, "count": n})
                for w, n in (("hop", 2), ("skip", 3), ("jump", 1))]

    def _begin(self, task):
        self._said = 0
        return f"Say '{task.spec['word']}'.", {"admissible_actions": [task.spec["word"]]}

    def _current_info(self):
        return {"admissible_actions": [self.task.spec["word"]]}

    def _play(self, action):
        if action.strip() != self.task.spec["word"]:
            return Transition("Nothing happens.", invalid_action=True, info=self._current_info())
        self._said += 1
        won = self._said >= self.task.spec["count"]
        return Transition("Well done." if won else "Again.", won=won, info=self._current_info())


def test_check_env_passes():
    check_env(CountdownEnv(), skip_render_check=True)


def test_reset_takes_task_as_object_dict_or_id():
    env = CountdownEnv()
    task = env.tasks[1]
    for given in (task, task.to_dict(), task.id):
        _, info = env.reset(options={"task": given})
        assert info["task_id"] == task.id and info["instruction"] == task.instruction
        assert info["step"] == 0 and info["won"] is False and info["invalid_action"] is False


def test_unknown_id_suggests_the_closest():
    env = CountdownEnv()
    wrong = env.tasks[0].id[:-1] + "x"
    with pytest.raises(TaskNotFound, match="Did you mean"):
        env.reset(options={"task": wrong})
    with pytest.raises(KeyError):  # TaskNotFound is a KeyError too
        env.reset(options={"task": "nothing-like-it"})


def test_task_of_another_family_is_refused():
    with pytest.raises(InvalidTask, match="countdown"):
        CountdownEnv().reset(options={"task": Task(family="code", instruction="x", spec={})})


def test_same_seed_draws_same_tasks():
    draws = []
    for _ in range(2):
        env = CountdownEnv()
        env.reset(seed=123)
        draws.append([env.reset()[1]["task_id"] for _ in range(10)])
    assert draws[0] == draws[1] and len(set(draws[0])) > 1


def test_win_gives_reward_one_and_terminates():
    env = CountdownEnv()
    env.reset(options={"task": env.tasks[0]})  # hop x2
    _, reward, terminated, truncated, info = env.step("hop")
    assert (reward, terminated, info["won"]) == (0.0, False, False)
    _, reward, terminated, truncated, info = env.step("hop")
    assert (reward, terminated, truncated, info["won"], info["step"]) == (1.0, True, False, True, 2)
    with pytest.raises(ResetNeeded):
        env.step("hop")


@pytest.mark.parametrize("action", [42, None, b"hop", "x" * 1_000_001, "hop\x00", "", "日本語"])
def test_unusable_actions_give_feedback_never_an_exception(action):
    env = CountdownEnv()
    env.reset(options={"task": env.tasks[1]})
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and obs
    assert info["invalid_action"] is True and reward == 0.0 and not terminated
    assert info["admissible_actions"] == ["skip"]


def test_truncates_at_max_steps():
    env = CountdownEnv(max_steps=3)
    env.reset(options={"task": env.tasks[1]})
    results = [env.step("nope") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert not any(r[2] for r in results)


def test_step_before_reset_is_a_clear_error():
    with pytest.raises(ResetNeeded, match="reset"):
        CountdownEnv().step("hop")


def test_a_reset_that_fails_leaves_no_episode_to_step():
    env = CountdownEnv()
    env.reset(options={"task": env.tasks[0]})
    broken = Task(family="countdown", instruction="say nothing", spec={"count": 1})  # no 'word': _begin raises
    with pytest.raises(KeyError):
        env.reset(options={"task": broken})
    with pytest.raises(ResetNeeded, match="reset"):
        env.step("hop")  # not a step of the previous episode


def test_render_ansi_returns_last_observation():
    env = CountdownEnv(render_mode="ansi")
    obs, _ = env.reset(options={"task": env.tasks[0]})
    assert env.render() == obs


@pytest.mark.parametrize("shared_memory", [True, False])
def test_async_vector_env_carries_unicode_text_observations(shared_memory):
    tasks = [Task(family="countdown", instruction="say ünï 1 times", spec={"word": "ünï", "count": 1}),
             Task(family="countdown", instruction="say 跳 2 times", spec={"word": "跳", "count": 2})]
    envs = gym.vector.AsyncVectorEnv([lambda: CountdownEnv(tasks=tasks)] * 2, shared_memory=shared_memory)
    try:
        obs, _ = envs.reset(options={"task": tasks[0].to_dict()})
        assert tuple(obs) == ("Say 'ünï'.", "Say 'ünï'.")
        obs, reward, terminated, _, info = envs.step(["ünï", "nope"])
        assert tuple(obs) == ("Well done.", "Nothing happens.")
        assert list(reward) == [1.0, 0.0] and list(terminated) == [True, False]
        assert list(info["invalid_action"]) == [False, True]
    finally:
        envs.close()
