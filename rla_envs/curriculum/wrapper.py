"""AdaptiveTaskPool: the pool as a ``gymnasium.Wrapper``, and TaskFeeder, the same plumbing without a wrapper.

One env::

    env = AdaptiveTaskPool(gym.make("rla/AlfWorld-v0"), TaskPool(tasks), policy=my_policy, adapt_every=200)
    observation, info = env.reset()        # the task comes from the pool
    ...                                    # at episode end the outcome goes back to the pool
    report = env.adapt()                   # or automatically every 200 episodes, at the next reset

Many envs in one process (``gymnasium.vector.SyncVectorEnv``): build one :class:`TaskFeeder` and wrap
every sub-env with it, so that all draw from and report to the same pool::

    feeder = TaskFeeder(pool, measure=EnvMeasure(gym.make("rla/AlfWorld-v0"), policy), adapt_every=100)
    envs = SyncVectorEnv([partial(AdaptiveTaskPool, gym.make("rla/AlfWorld-v0"), feeder) for _ in range(8)])

A rollout engine that owns its envs (possibly in worker processes) keeps the feeder in the main
process and passes tasks per reset; only Task objects (plain, picklable data) and outcomes cross::

    tasks = feeder.draw(len(workers))
    results = [worker.play(task) for worker, task in zip(workers, tasks)]   # env.reset(options={"task": task})
    for task, trajectory in zip(tasks, results):
        feeder.report(task.id, trajectory.won, trajectory)
    if feeder.adapt_due():
        feeder.adapt()

(``AsyncVectorEnv`` copies each sub-env into a worker process, so a wrapped sub-env would hold a copy
of the pool: use the engine path there.)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from rla_envs.core.task import Task
from rla_envs.curriculum.adapt import AdaptReport, EnvMeasure, Measure, adapt
from rla_envs.core.trajectory import Trajectory
from rla_envs.curriculum.diagnosers import Diagnoser, RuleDiagnoser
from rla_envs.curriculum.rewriters import MutatorRewriter, Rewriter

__all__ = ["AdaptiveTaskPool", "TaskFeeder"]


class TaskFeeder:
    """The main-process side of an adaptive pool: draws tasks, takes outcomes, keeps failures, adapts.

    Args:
        pool: the :class:`~rla_envs.curriculum.pool.TaskPool`.
        rewriter: proposes rewrites (default :class:`MutatorRewriter`, LLM-free).
        diagnoser: summarises failures for the rewriter (default :class:`RuleDiagnoser`).
        measure: ``measure(task, n) -> successes`` with the current policy, needed by :meth:`adapt`.
        adapt_every: run :meth:`adapt` when this many episodes were reported since the last round
            (checked by :meth:`adapt_due`; the wrapper checks it at reset). None: only on demand.
        keep_failures: failed trajectories kept per task for the diagnoser.
        adapt_options: passed to :func:`~rla_envs.curriculum.adapt.adapt` (``rollouts``, ``max_slots``, ...).
    """

    def __init__(self, pool, rewriter: Rewriter | None = None, diagnoser: Diagnoser | None = None,
                 measure: Measure | None = None, *, adapt_every: int | None = None, keep_failures: int = 8,
                 **adapt_options: Any):
        if adapt_every is not None and adapt_every < 1:
            raise ValueError(f"adapt_every must be >= 1 episodes or None (adapt on demand), got {adapt_every}")
        if keep_failures < 0:
            raise ValueError(f"keep_failures must be >= 0, got {keep_failures}")
        if measure is not None and not callable(measure):
            raise TypeError(f"measure must be callable as measure(task, n) -> successes, got {type(measure).__name__}")
        self.pool = pool
        self.rewriter = rewriter if rewriter is not None else MutatorRewriter()
        self.diagnoser = diagnoser if diagnoser is not None else RuleDiagnoser()
        self.measure = measure
        self.adapt_every = adapt_every
        self.keep_failures = keep_failures
        self.adapt_options = adapt_options
        self.failures: dict[str, deque[Trajectory]] = {}
        self.episodes_since_adapt = 0
        self.reports: list[AdaptReport] = []

    def draw(self, n: int | None = None) -> Task | list[Task]:
        """One task from the pool (``n=None``), or a list of ``n``."""
        return self.pool.sample(1)[0] if n is None else self.pool.sample(n)

    def report(self, task_id: str, won: bool | float, trajectory: Trajectory | None = None) -> bool:
        """Record one finished episode; False (and nothing recorded) when the pool does not hold ``task_id``."""
        if not self.pool.knows(task_id):
            return False
        self.pool.record(task_id, float(won))
        self.episodes_since_adapt += 1
        self._keep(task_id, won, trajectory)
        return True

    def report_group(self, task_id: str, outcomes: Sequence[float],
                     trajectories: Sequence[Trajectory] | None = None) -> bool:
        """Record a group of rollouts of one task (a GRPO group), which also tracks zero-variance streaks."""
        if not self.pool.knows(task_id):
            return False
        self.pool.record_group(task_id, [float(x) for x in outcomes])
        self.episodes_since_adapt += len(outcomes)
        for won, trajectory in zip(outcomes, trajectories or [None] * len(outcomes)):
            self._keep(task_id, won, trajectory)
        return True

    def _keep(self, task_id: str, won: bool | float, trajectory: Trajectory | None) -> None:
        if trajectory is not None and not won and self.keep_failures:
            self.failures.setdefault(task_id, deque(maxlen=self.keep_failures)).append(trajectory)

    def adapt_due(self) -> bool:
        """Whether ``adapt_every`` episodes were reported since the last round."""
        return self.adapt_every is not None and self.episodes_since_adapt >= self.adapt_every

    def adapt(self, measure: Measure | None = None, **options: Any) -> AdaptReport:
        """Run one adaptation round now (see :func:`~rla_envs.curriculum.adapt.adapt`)."""
        measure = measure if measure is not None else self.measure
        if measure is None:
            raise ValueError("adapt() needs a way to measure tasks with the current policy: pass measure= "
                             "(measure(task, n) -> successes, e.g. EnvMeasure(env, policy)) or, to the wrapper, policy=")
        report = adapt(self.pool, self.rewriter, measure, diagnoser=self.diagnoser, failures=self.failures,
                       **{**self.adapt_options, **options})
        self.episodes_since_adapt = 0
        active = {task.id for task in self.pool.active_tasks()}
        self.failures = {k: v for k, v in self.failures.items() if k in active}
        self.reports.append(report)
        return report


class AdaptiveTaskPool(gym.Wrapper):
    """Plays the pool's tasks in any rla env, reports outcomes to the pool, and adapts the pool.

    ``reset`` draws the task from the pool (unless ``options["task"]`` names one) and passes it on as
    ``options={"task": task}``; when an episode ends (terminated or truncated) its outcome
    (``info["won"]``) goes to ``pool.record`` and a failed trajectory is kept for the diagnoser. An
    episode of a task the pool does not hold is played but not recorded. :meth:`adapt` runs a round on
    demand; with ``adapt_every=K`` it runs at the first reset after K reported episodes.

    Args:
        env: an rla env (any ``TaskEnv``, possibly wrapped).
        pool: a ``TaskPool``, or a :class:`TaskFeeder` shared with other wrappers (then leave the other
            options unset: they belong to the feeder).
        rewriter, diagnoser, measure, adapt_every: see :class:`TaskFeeder`.
        policy: ``policy(observation, info) -> action``; when given without ``measure``, adaptation
            measures with :class:`EnvMeasure` on the wrapped env (between episodes).
        group_size: play each drawn task this many episodes in a row and report them as one group
            (``pool.record_group``, as GRPO batches do), which feeds the zero-variance trigger and
            metrics; 1 (default) draws a new task every episode.
        **adapt_options: passed to :func:`~rla_envs.curriculum.adapt.adapt`.
    """

    def __init__(self, env: gym.Env, pool, rewriter: Rewriter | None = None, diagnoser: Diagnoser | None = None,
                 adapt_every: int | None = None, measure: Measure | None = None, *,
                 policy: Callable[[Any, dict], Any] | None = None, keep_failures: int = 8, group_size: int = 1,
                 **adapt_options: Any):
        super().__init__(env)
        if group_size < 1:
            raise ValueError(f"group_size must be >= 1 episodes per drawn task, got {group_size}")
        self.group_size = int(group_size)
        self._group: list[Trajectory] = []
        self._group_task: Task | None = None
        if isinstance(pool, TaskFeeder):
            given = {"rewriter": rewriter, "diagnoser": diagnoser, "adapt_every": adapt_every, "measure": measure,
                     "policy": policy}
            clash = [name for name, value in given.items() if value is not None] + sorted(adapt_options)
            if clash:
                raise ValueError(f"{clash} belong to the shared TaskFeeder; set them when building it")
            self.feeder = pool
        else:
            if measure is None and policy is not None:
                measure = EnvMeasure(env, policy)
            self.feeder = TaskFeeder(pool, rewriter, diagnoser, measure, adapt_every=adapt_every,
                                     keep_failures=keep_failures, **adapt_options)
        self._trajectory: Trajectory | None = None

    @property
    def pool(self):
        """The task pool."""
        return self.feeder.pool

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode of the pool's next task (adapting first when a round is due)."""
        if self.feeder.adapt_due():
            self.adapt()
        options = dict(options or {})
        if options.get("task") is None:
            if self._group_task is None or not self.pool.knows(self._group_task.id):
                self._group, self._group_task = [], self.feeder.draw()
            options["task"] = self._group_task
        observation, info = self.env.reset(seed=seed, options=options)
        self._trajectory = Trajectory(task_id=str(info.get("task_id", "")), observations=[observation],
                                      infos=[dict(info)])
        return observation, info

    def step(self, action):
        """Step the env; at episode end report the outcome to the pool."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        trajectory = self._trajectory
        if trajectory is not None:
            trajectory.actions.append(action)
            trajectory.observations.append(observation)
            trajectory.infos.append(dict(info))
            if terminated or truncated:
                trajectory.won = bool(info.get("won"))
                trajectory.truncated = bool(truncated and not terminated)
                self._finish(trajectory)
                self._trajectory = None
        return observation, reward, terminated, truncated, info

    def _finish(self, trajectory: Trajectory) -> None:
        """Report a finished episode: alone, or as part of the current group once it is complete."""
        in_group = self._group_task is not None and trajectory.task_id == self._group_task.id
        if self.group_size == 1 or not in_group:
            self.feeder.report(trajectory.task_id, trajectory.won, trajectory)
            self._group_task = None if self.group_size == 1 else self._group_task
            return
        self._group.append(trajectory)
        if len(self._group) >= self.group_size:
            self.feeder.report_group(trajectory.task_id, [float(t.won) for t in self._group], self._group)
            self._group, self._group_task = [], None

    def adapt(self, **options: Any) -> AdaptReport:
        """Run one adaptation round now; the next episode starts with a fresh reset (and a fresh group)."""
        self._trajectory = None
        if self._group:  # report the part of the group played so far, so no outcome is lost
            self.feeder.report_group(self._group[0].task_id, [float(t.won) for t in self._group], self._group)
        self._group, self._group_task = [], None
        return self.feeder.adapt(**options)
