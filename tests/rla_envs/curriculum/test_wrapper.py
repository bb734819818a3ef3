"""AdaptiveTaskPool and TaskFeeder plumbing on a small TaskEnv: one env, SyncVectorEnv, an engine of processes."""

from __future__ import annotations

import concurrent.futures
import pickle
from functools import partial

import gymnasium as gym
import pytest

from rla_envs.core.env import TaskEnv, Transition
from rla_envs.core.errors import InvalidTask, RewriteRejected
from rla_envs.core.task import Task
from rla_envs.core.trajectory import play_episode
from rla_envs.curriculum.adapt import EnvMeasure
from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.pool_config import PoolConfig
from rla_envs.curriculum.rewriters import MutatorRewriter
from rla_envs.curriculum.wrapper import AdaptiveTaskPool, TaskFeeder


def counting(target: int, parent: Task | None = None) -> Task:
    spec = {"target": target}
    if parent is None:
        return Task(family="counting", instruction=f"count to {target}", spec=spec)
    return parent.derive(instruction=f"count to {target}", spec=spec, origin="mutated")


class CountingEnv(TaskEnv):
    """Say 'next' until the counter reaches the target; anything else is invalid. Truncates at 6 steps."""

    family = "counting"

    def __init__(self, tasks=None, max_steps=6):
        super().__init__(tasks, max_steps=max_steps)
        self.count = 0

    def default_tasks(self):
        return [counting(2)]

    def _begin(self, task):
        self.count = 0
        return f"count to {task.spec['target']}: at 0", {"admissible_actions": ["next"]}

    def _play(self, action):
        if action != "next":
            return Transition("Nothing happens.", invalid_action=True, info={"admissible_actions": ["next"]})
        self.count += 1
        return Transition(f"at {self.count}", won=self.count >= self.task.spec["target"],
                          info={"admissible_actions": ["next"]})


class Counting:
    """Family hooks: harder = a higher target."""

    name = "counting"

    def describe(self, task):
        return f"count to {task.spec['target']}"

    def validate(self, task):
        if not 1 <= task.spec["target"] <= 20:
            raise InvalidTask("target out of range")

    def mutate(self, task, direction, rng):
        target = task.spec["target"] + (3 if direction == "harder" else -3)
        if target < 1:
            raise RewriteRejected("cannot get easier")
        return counting(target, task)

    def apply_rewrite(self, task, text):
        raise RewriteRejected("no LLM here")


class Patient:
    """A policy that says 'next' at most ``limit`` times per episode, then stalls (picklable)."""

    def __init__(self, limit):
        self.limit = limit

    def __call__(self, observation, info):
        return "next" if info["step"] < self.limit else "wait"


def make_pool(*targets, **config):
    return TaskPool([counting(t) for t in targets], PoolConfig(seed=0, **config))


def play(env, policy):
    observation, info = env.reset()
    while True:
        observation, reward, terminated, truncated, info = env.step(policy(observation, info))
        if terminated or truncated:
            return info


def test_reset_draws_from_the_pool_and_the_outcome_goes_back():
    pool = make_pool(2, 5)
    env = AdaptiveTaskPool(CountingEnv(), pool)
    ids = {t.id for t in pool.active_tasks()}
    infos = [play(env, Patient(3)) for _ in range(20)]
    assert {info["task_id"] for info in infos} == ids  # both pool tasks were played, nothing else
    assert pool.episodes == 20
    won = {info["task_id"]: info["won"] for info in infos}
    assert pool.stats(counting(2).id).successes == sum(1 for i in infos if i["task_id"] == counting(2).id)
    assert pool.stats(counting(5).id).successes == 0 and not won[counting(5).id]
    # Failed runs are kept (at most keep_failures per task) for the diagnoser, won runs are not.
    kept = env.feeder.failures
    assert set(kept) == {counting(5).id} and 0 < len(kept[counting(5).id]) <= 8
    failure = kept[counting(5).id][0]
    assert failure.truncated and failure.actions[-1] == "wait" and len(failure.observations) == 7


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_task_in_options_wins_and_unknown_tasks_are_not_recorded():
    pool = make_pool(2)
    env = AdaptiveTaskPool(CountingEnv(), pool)
    outside = counting(1)
    observation, info = env.reset(options={"task": outside})
    assert info["task_id"] == outside.id
    env.step("next")
    assert pool.episodes == 0
    from gymnasium.utils.env_checker import check_env

    check_env(env, skip_render_check=True)


def test_adapt_every_k_episodes_measures_with_the_policy_and_rewrites():
    pool = make_pool(1, min_observations=4, zero_variance_repeats=0)
    env = AdaptiveTaskPool(CountingEnv(), pool, rewriter=MutatorRewriter(Counting(), strengths=(1,)),
                           adapt_every=16, policy=Patient(2), family=Counting(), rollouts=16)
    for _ in range(16):
        play(env, Patient(2))  # count-to-1 always won: too easy
    assert not env.feeder.reports
    play(env, Patient(2))  # the reset of this episode runs the round first
    [report] = env.feeder.reports
    [attempt] = report.attempts
    assert attempt.direction == "harder" and attempt.accepted is False  # count to 4 with patience 2: never won
    assert attempt.reason == "child_never_succeeds"
    assert pool.validation_rollouts == 32 == report.rollouts
    assert pool.episodes == 17  # measurement episodes are not training episodes
    assert env.feeder.episodes_since_adapt == 1


def test_adapt_without_a_way_to_measure_says_what_to_pass():
    env = AdaptiveTaskPool(CountingEnv(), make_pool(1))
    with pytest.raises(ValueError, match="measure="):
        env.adapt()
    with pytest.raises(ValueError, match="adapt_every"):
        TaskFeeder(make_pool(1), adapt_every=0)
    with pytest.raises(ValueError, match="shared TaskFeeder"):
        AdaptiveTaskPool(CountingEnv(), TaskFeeder(make_pool(1)), adapt_every=3)


def test_sync_vector_env_sub_envs_share_one_pool():
    pool = make_pool(1, 2, 9)
    feeder = TaskFeeder(pool)
    envs = gym.vector.SyncVectorEnv([partial(AdaptiveTaskPool, CountingEnv(), feeder) for _ in range(3)])
    observations, infos = envs.reset(seed=0)
    assert set(infos["task_id"]) <= {t.id for t in pool.active_tasks()}
    finished = 0
    for _ in range(40):  # autoreset draws the next task from the pool too
        observations, rewards, terminated, truncated, infos = envs.step(["next"] * 3)
        finished += int((terminated | truncated).sum())
    assert pool.episodes == finished > 10
    played = {task_id for task_id in pool.to_dict()["stats"]}
    assert played == {t.id for t in pool.active_tasks()}
    assert pool.stats(counting(9).id).successes == 0 and pool.stats(counting(1).id).mean > 0.8
    envs.close()


def _worker_play(task_dict, limit, seed):
    """Runs in a worker process: its own env, the task as plain data, the trajectory back."""
    env = CountingEnv()
    return play_episode(env, Patient(limit), Task.from_dict(task_dict), seed=seed)


def test_engine_path_pool_in_main_process_tasks_to_worker_processes():
    pool = make_pool(1, 2, 9)
    feeder = TaskFeeder(pool)
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as workers:
        for round_index in range(3):
            tasks = feeder.draw(4)
            futures = [workers.submit(_worker_play, t.to_dict(), 3, round_index * 10 + i) for i, t in enumerate(tasks)]
            for task, future in zip(tasks, futures):
                trajectory = future.result()
                assert trajectory.task_id == task.id
                assert feeder.report(task.id, trajectory.won, trajectory)
    assert pool.episodes == 12
    assert pool.stats(counting(9).id).successes == 0
    assert all(not t.won for runs in feeder.failures.values() for t in runs)
    assert feeder.report("counting:unknown", True) is False


def test_group_reports_track_zero_variance_and_measure_pickles():
    pool = make_pool(9)
    feeder = TaskFeeder(pool)
    task = pool.active_tasks()[0]
    assert feeder.report_group(task.id, [0.0] * 4)
    assert pool.counters["zero_variance_all_fail"] == 1
    measure = EnvMeasure(CountingEnv(), Patient(3), seed=1)
    assert measure(counting(2), 5) == [1.0] * 5 and measure(counting(9), 2) == [0.0, 0.0]
    assert isinstance(pickle.loads(pickle.dumps(Patient(3))), Patient)


def test_group_size_repeats_a_task_and_reports_groups():
    pool = make_pool(1, 9)
    env = AdaptiveTaskPool(CountingEnv(), pool, group_size=4)
    infos = [play(env, Patient(3)) for _ in range(12)]
    ids = [info["task_id"] for info in infos]
    assert all(len(set(ids[i:i + 4])) == 1 for i in range(0, 12, 4))  # each group plays one task
    assert pool.episodes == 12 and pool.counters["groups"] == 3
    assert pool.counters["zero_variance_groups"] == 3  # count-to-1 always won, count-to-9 never
    with pytest.raises(ValueError, match="group_size"):
        AdaptiveTaskPool(CountingEnv(), pool, group_size=0)
