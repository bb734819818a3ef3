"""TaskPool: one slot per original task (active version, pending rewrite, history), statistics, sampling.

The maths lives in pure modules (``stats``, ``sampling``, ``acceptance``); this class only keeps the
books: which task is active in each slot, what the pool has seen of each task, the seeded random
generator, the counters the caller reads (episodes, validation budget, rewrite funnel), and an atomic
JSON save/load from which a run continues exactly where it stopped.

Typical use (the ``AdaptiveTaskPool`` wrapper does this for you)::

    pool = TaskPool(tasks, PoolConfig(seed=0))
    for task in pool.sample(8):
        pool.record_group(task.id, [play(task) for _ in range(8)])
    for root_id, direction in pool.candidates_for_rewrite():
        pool.propose(root_id, rewrite(pool.slots[root_id].active, direction), direction=direction)
        ...measure parent and child fresh, decide with acceptance.accept_rewrite...
        pool.accept(root_id, evidence) or pool.reject(root_id, reason, evidence)
    pool.save("pool.json"); pool = TaskPool.load("pool.json")
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from rla_envs.core.errors import DataNotFound, InvalidFile, InvalidTask, TaskNotFound, did_you_mean
from rla_envs.core.files import atomic_write_json
from rla_envs.core.task import Task
from rla_envs.curriculum.acceptance import rewrite_direction, rlanything_direction
from rla_envs.curriculum.sampling import (
    cap_root_share,
    learnability_weights,
    rlanything_weights,
    uniform_weights,
)
from rla_envs.curriculum.pool_config import PoolConfig
from rla_envs.curriculum.saved import SavedPoolProblem, check_saved_pool
from rla_envs.curriculum.slots import HistoryEntry, Slot
from rla_envs.curriculum.stats import TaskStats, observe, observe_group

__all__ = ["TaskPool"]

_FORMAT = "rla.TaskPool"
_FORMAT_VERSION = 1


def _json_ready(value: Any, where: str) -> Any:
    """``value`` with numpy scalars/arrays and tuples made plain; raises now if it cannot be JSON."""
    def convert(item):
        if isinstance(item, dict):
            return {str(k): convert(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [convert(v) for v in item]
        if isinstance(item, np.ndarray):
            return item.tolist()
        if isinstance(item, np.generic):
            return item.item()
        return item
    plain = convert(value)
    try:
        json.dumps(plain)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where} must be JSON-serialisable (numbers, strings, lists, dicts): {exc}") from None
    return plain


class TaskPool:
    """Slots of tasks with success statistics, seeded sampling, rewrite bookkeeping and atomic persistence."""

    def __init__(self, tasks: Iterable[Task], config: PoolConfig | None = None):
        self.config = config or PoolConfig()
        self.slots: dict[str, Slot] = {}
        self._tasks: dict[str, Task] = {}
        self._root_of: dict[str, str] = {}
        self._stats: dict[str, TaskStats] = {}
        self.episodes = 0
        self.counters: dict[str, int] = {}
        self.history_log: list[dict] = []
        self.rng = np.random.Generator(np.random.PCG64(self.config.seed))
        for task in tasks:
            if not isinstance(task, Task):
                raise TypeError(f"TaskPool takes Task objects, got {type(task).__name__}; use Task.from_dict(d)")
            if task.id in self.slots:
                raise ValueError(f"task {task.id!r} appears twice in the tasks given to TaskPool; pass each once")
            self.slots[task.id] = Slot(root=task, active=task)
            self._register(task, task.id)
        if not self.slots:
            raise ValueError("TaskPool needs at least one task")

    # ----------------------------------------------------------------- lookup
    @property
    def roots(self) -> dict[str, Slot]:
        """Alias of :attr:`slots`: root id -> :class:`Slot`."""
        return self.slots

    def __len__(self) -> int:
        return len(self.slots)

    def _register(self, task: Task, root_id: str) -> None:
        self._tasks.setdefault(task.id, task)
        self._root_of.setdefault(task.id, root_id)

    def knows(self, task_id: str) -> bool:
        """Whether ``task_id`` is any task the pool has held (root, active, pending, archived or rejected)."""
        return task_id in self._tasks

    def task(self, task_id: str) -> Task:
        """Any task the pool has held, by id."""
        try:
            return self._tasks[task_id]
        except KeyError:
            hint = did_you_mean(task_id, self._tasks)
            raise TaskNotFound(f"the pool holds no task {task_id!r} ({len(self._tasks)} known).{hint}") from None

    def root_of(self, task_id: str) -> str:
        """The root id of the slot ``task_id`` belongs to."""
        self.task(task_id)
        return self._root_of[task_id]

    def slot(self, root_id: str) -> Slot:
        """The slot of root ``root_id``."""
        try:
            return self.slots[root_id]
        except KeyError:
            hint = did_you_mean(root_id, self.slots)
            raise TaskNotFound(f"no slot has root {root_id!r}; roots are ids of the tasks the pool was built with.{hint}") from None

    def active_tasks(self) -> list[Task]:
        """The active version of every slot, in slot order (what :meth:`sample` draws from)."""
        return [slot.active for slot in self.slots.values()]

    def stats(self, task_id: str) -> TaskStats:
        """What the pool has seen of ``task_id`` (the prior if it was never played)."""
        self.task(task_id)
        return self._stats.get(task_id) or TaskStats(alpha=self.config.prior[0], beta=self.config.prior[1])

    def rewritten_episodes(self) -> int:
        """Training episodes recorded on rewrites (tasks that are not their slot's root), of :attr:`episodes` in all:
        how much of the training the environment's adaptation actually reached."""
        return sum(stats.episodes for task_id, stats in self._stats.items() if self._root_of[task_id] != task_id)

    # --------------------------------------------------------------- sampling
    def weights(self) -> np.ndarray:
        """Sampling probabilities of :meth:`active_tasks` under the strategy, after the root-share cap."""
        config, active = self.config, self.active_tasks()
        if config.strategy == "uniform":
            weights = uniform_weights(len(active))
        elif config.strategy == "rlanything":
            weights = rlanything_weights(len(active))
        else:
            stats = [self.stats(task.id) for task in active]
            weights = learnability_weights(
                np.array([s.alpha for s in stats]), np.array([s.beta for s in stats]),
                np.array([s.last_seen for s in stats]), self.episodes, np.array([s.episodes == 0 for s in stats]),
                temperature=config.temperature, staleness_weight=config.staleness_weight,
                fresh_share=config.fresh_share)
        return cap_root_share(weights, np.arange(len(active)), config.max_root_share)

    def sample(self, n: int = 1) -> list[Task]:
        """``n`` active tasks drawn with replacement by the strategy, with the pool's own seeded generator."""
        if n < 1:
            raise ValueError(f"sample(n) needs n >= 1, got {n}")
        active = self.active_tasks()
        return [active[i] for i in self.rng.choice(len(active), size=n, p=self.weights())]

    # -------------------------------------------------------------- recording
    def record(self, task_id: str, success: float | bool) -> None:
        """Record one episode's outcome (True/False or a rate in [0, 1]) for ``task_id``."""
        stats = self.stats(task_id)
        self.episodes += 1
        self._stats[task_id] = observe(stats, float(success), self.episodes, decay=self.config.decay,
                                       prior=self.config.prior, window=self.config.group_size)
        every = self.config.snapshot_every
        if every and self.episodes % every == 0:
            self.snapshot()

    def record_group(self, task_id: str, successes: Sequence[float]) -> None:
        """Record a group of rollouts of one task (a GRPO group): each outcome, then the zero-variance streak."""
        successes = [float(s) for s in successes]
        if not successes:
            raise ValueError(f"record_group({task_id!r}, ...) got no outcomes")
        for success in successes:
            self.record(task_id, success)
        stats = observe_group(self._stats[task_id], successes)
        self._stats[task_id] = stats
        self.count("groups")
        if len(successes) > 1 and stats.zero_variance_streak:
            self.count("zero_variance_groups")
            self.count(f"zero_variance_{stats.zero_variance_kind}")

    def count(self, event: str, n: int = 1) -> None:
        """Add ``n`` to counter ``event`` (e.g. ``validation_rollouts``, ``generated``, ``valid``)."""
        self.counters[event] = self.counters.get(event, 0) + int(n)

    @property
    def validation_rollouts(self) -> int:
        """Rollouts spent measuring parents and candidates (what the caller counted with ``count``)."""
        return self.counters.get("validation_rollouts", 0)

    def snapshot(self) -> dict:
        """Append and return the pool's difficulty now: mean posterior success of the active tasks, etc."""
        active = self.active_tasks()
        mean_success = float(np.mean([self.stats(task.id).mean for task in active]))
        entry = {"episode": self.episodes, "mean_success": mean_success, "mean_difficulty": 1.0 - mean_success,
                 "accepted": self.counters.get("accepted", 0)}
        meta_difficulty = [task.meta.get("difficulty") for task in active]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in meta_difficulty):
            entry["mean_meta_difficulty"] = float(np.mean(meta_difficulty))
        self.history_log.append(entry)
        return entry

    # --------------------------------------------------------------- rewrites
    def candidates_for_rewrite(self) -> list[tuple[str, str]]:
        """``(root_id, "harder" | "easier")`` for every slot whose active task should be rewritten now.

        Slots with a pending candidate are skipped, and so are slots whose last candidate was rejected
        until the active task has gathered ``min_observations`` (``group_size`` for the released rule) new
        outcomes, so a refused task is not re-proposed on the same evidence.
        """
        config, candidates = self.config, []
        if config.rewrite_rule == "none":
            return candidates
        for root_id, slot in self.slots.items():
            if slot.pending is not None:
                continue
            stats = self.stats(slot.active.id)
            new_outcomes = stats.episodes - slot.observations_at_last_rejection
            if config.rewrite_rule == "rlanything":
                if len(stats.recent) < config.group_size or new_outcomes < config.group_size:
                    continue
                direction = rlanything_direction(stats.recent_success_rate, config.alpha_low, config.alpha_high)
            else:
                if slot.observations_at_last_rejection and new_outcomes < config.min_observations:
                    continue
                direction = rewrite_direction(
                    stats.alpha, stats.beta, stats.episodes, stats.zero_variance_streak, stats.zero_variance_kind,
                    alpha_low=config.alpha_low, alpha_high=config.alpha_high,
                    min_observations=config.min_observations, confidence=config.confidence,
                    zero_variance_repeats=config.zero_variance_repeats)
            if direction is not None:
                candidates.append((root_id, direction))
        return candidates

    def propose(self, root_id: str, candidate: Task, direction: str | None = None) -> None:
        """Make ``candidate`` the pending rewrite of slot ``root_id`` (one pending at a time)."""
        slot = self.slot(root_id)
        if slot.pending is not None:
            raise ValueError(f"slot {root_id!r} already has pending candidate {slot.pending.id!r}; "
                             "accept() or reject() it before proposing another")
        if not isinstance(candidate, Task):
            raise TypeError(f"propose() takes a Task, got {type(candidate).__name__}")
        if candidate.id == slot.active.id:
            raise ValueError(f"candidate {candidate.id!r} is the slot's active task itself; a rewrite must differ")
        if direction not in (None, "harder", "easier"):
            raise ValueError(f"direction must be 'harder', 'easier' or None, got {direction!r}")
        self._register(candidate, root_id)
        slot.pending, slot.pending_direction = candidate, direction
        self.count("proposed")

    def _take_pending(self, root_id: str, action: str) -> tuple[Slot, Task]:
        slot = self.slot(root_id)
        if slot.pending is None:
            raise ValueError(f"slot {root_id!r} has no pending candidate to {action}; call propose() first")
        return slot, slot.pending

    def accept(self, root_id: str, evidence: dict) -> None:
        """The pending candidate becomes active; the parent is archived in the history with ``evidence``."""
        evidence = _json_ready(dict(evidence or {}), "accept() evidence")
        slot, candidate = self._take_pending(root_id, "accept")
        slot.history.append(HistoryEntry("accepted", slot.active.id, candidate.id, slot.pending_direction,
                                         self.episodes, "accepted", evidence))
        slot.active, slot.pending, slot.pending_direction = candidate, None, None
        slot.observations_at_last_rejection = 0
        self.count("accepted")
        self.snapshot()

    def reject(self, root_id: str, reason: str, evidence: dict | None = None) -> None:
        """Drop the pending candidate, recording why (counted under ``rejected`` and ``rejected:<reason>``)."""
        evidence = _json_ready(dict(evidence or {}), "reject() evidence")
        slot, candidate = self._take_pending(root_id, "reject")
        slot.history.append(HistoryEntry("rejected", candidate.id, None, slot.pending_direction,
                                         self.episodes, str(reason), evidence))
        slot.pending, slot.pending_direction = None, None
        slot.observations_at_last_rejection = self.stats(slot.active.id).episodes
        self.count("rejected")
        self.count(f"rejected:{reason}")

    def lineage(self, task_id: str) -> list[str]:
        """Ids from the root down to ``task_id``, following each task's ``parent`` among known tasks."""
        chain, current = [], self.task(task_id)
        while True:
            chain.append(current.id)
            if current.parent is None or current.parent not in self._tasks or current.id == self._root_of[current.id]:
                break
            current = self._tasks[current.parent]
        return chain[::-1]

    # ------------------------------------------------------------ adaptation and pictures (other modules)
    def adapt(self, rewriter, measure, **options):
        """One adaptation round: rewrite, validate and re-measure flagged tasks (see :func:`curriculum.adapt.adapt`)."""
        from rla_envs.curriculum.adapt import adapt

        return adapt(self, rewriter, measure, **options)

    def plot(self, path, **options):
        """Write a PNG of difficulty over time and the lineage of rewritten tasks (see :func:`curriculum.plots.plot`)."""
        from rla_envs.curriculum.plots import plot

        return plot(self, path, **options)

    # ------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        """Everything the pool knows, as JSON-ready data (see :meth:`save`)."""
        return {
            "format": _FORMAT, "version": _FORMAT_VERSION, "config": asdict(self.config),
            "tasks": [task.to_dict() for task in self._tasks.values()],
            "root_of": self._root_of,
            "slots": [{"root": s.root.id, "active": s.active.id, "pending": s.pending.id if s.pending else None,
                       "pending_direction": s.pending_direction,
                       "observations_at_last_rejection": s.observations_at_last_rejection,
                       "history": [asdict(h) for h in s.history]} for s in self.slots.values()],
            "stats": {task_id: stats.to_dict() for task_id, stats in self._stats.items()},
            "episodes": self.episodes, "counters": dict(self.counters), "history_log": list(self.history_log),
            "rng_state": self.rng.bit_generator.state,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "TaskPool":
        """Rebuild a pool from :meth:`to_dict` output; it continues exactly (same future samples).

        Raises ``InvalidFile`` naming the first field that is missing, of the wrong type or out of range.
        """
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise InvalidFile(f"not a saved TaskPool (expected format {_FORMAT!r}, got "
                              f"{data.get('format') if isinstance(data, dict) else type(data).__name__!r:.60})")
        if data.get("version") != _FORMAT_VERSION:
            raise InvalidFile(f"saved TaskPool has format version {data.get('version')!r:.20}, this rla reads "
                              f"{_FORMAT_VERSION}")
        try:
            return cls._rebuild(data)
        except SavedPoolProblem as problem:
            raise InvalidFile(f"saved TaskPool field {problem}") from None

    @classmethod
    def _rebuild(cls, data: dict) -> "TaskPool":
        tasks: dict[str, Task] = {}
        for index, saved in enumerate(data["tasks"] if isinstance(data.get("tasks"), list) else []):
            try:
                task = Task.from_dict(saved)
            except InvalidTask as exc:
                raise SavedPoolProblem(f"tasks[{index}]", str(exc)) from None
            tasks[task.id] = task
        check_saved_pool(data, set(tasks))
        try:
            config = PoolConfig(**data["config"])
            if not all(math.isfinite(v) for v in asdict(config).values() if isinstance(v, float)):
                raise ValueError("a number is not finite")
            pool = cls([tasks[s["root"]] for s in data["slots"]], config)
        except (TypeError, ValueError, OverflowError) as exc:
            raise SavedPoolProblem("config", str(exc)) from None
        pool._tasks, pool._root_of = tasks, dict(data["root_of"])
        for saved in data["slots"]:
            slot = pool.slots[saved["root"]]
            slot.active = tasks[saved["active"]]
            slot.pending = tasks[saved["pending"]] if saved["pending"] else None
            slot.pending_direction = saved["pending_direction"]
            slot.observations_at_last_rejection = saved["observations_at_last_rejection"]
            slot.history = [HistoryEntry(**h) for h in saved["history"]]
        pool._stats = {task_id: TaskStats.from_dict(s) for task_id, s in data["stats"].items()}
        pool.episodes, pool.counters = int(data["episodes"]), dict(data["counters"])
        pool.history_log = list(data["history_log"])
        try:
            pool.rng.bit_generator.state = data["rng_state"]
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise SavedPoolProblem("rng_state", f"not a numpy PCG64 state ({type(exc).__name__}: {exc})") from None
        return pool

    def save(self, path: str | os.PathLike) -> Path:
        """Write the pool to ``path`` as JSON atomically: readers see the old file or the new one, never a part."""
        return atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "TaskPool":
        """Read a pool written by :meth:`save`."""
        path = Path(path)
        if not path.is_file():
            raise DataNotFound(f"no saved TaskPool at {path}; write one with pool.save({str(path)!r})")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise InvalidFile(f"{path} is not valid JSON ({type(exc).__name__}: {exc}); it was not written by "
                              "TaskPool.save") from None
        try:
            return cls.from_dict(data)
        except InvalidFile as exc:
            raise InvalidFile(f"{path}: {exc}; restore the file or start a new pool") from None
