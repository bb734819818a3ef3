"""The generated ALFWorld splits: games generated offline (:mod:`rla_envs.alfworld.generate`), verified, and cached.

:func:`generated_tasks` is what ``rla/AlfWorld-v0`` plays without ALFWorld's data; :func:`generated_task_sample` is the
family's ``generate_tasks`` hook. Each game is cached as it is ready, so an interrupted generation loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from rla_envs.alfworld import FAMILY
from rla_envs.alfworld.generate import SPLITS, generate_split, split_jobs
from rla_envs.alfworld.scene import TASK_TYPES
from rla_envs.alfworld.tasks import task_from_game
from rla_envs.core.errors import InvalidTask
from rla_envs.core.files import atomic_write_json, cache_dir
from rla_envs.core.task import Task

__all__ = ["DEFAULT_N_PER_TYPE", "GENERATOR_VERSION", "generated_tasks", "generated_task_sample"]

#: Games per task type in a default generated split: 6 x 5 = 30 games, about a minute with 2 workers.
DEFAULT_N_PER_TYPE = 5
#: Bumped whenever generation changes, so that old caches are not mistaken for new ones.
GENERATOR_VERSION = 3


def _game_file_name(job: tuple[str, str, int]) -> str:
    floor_plan, task_type, seed = job
    return f"{task_type}-{floor_plan}-{seed}.tw-pddl"


def generated_tasks(split: str = "train", n_per_type: int = DEFAULT_N_PER_TYPE, seed: int = 0, *,
                    task_types: Collection[str] | None = None, workers: int = 2, progress: bool = True) -> list[Task]:
    """The generated ALFWorld tasks of a split: ``n_per_type`` for each of the 6 task types, seeded.

    ``task_types`` generates (and returns) only the games of those types: the very games the full set
    holds for them (same floor plans and seeds), at a fraction of the cost.

    Games are generated once (each verified by playing its walkthrough in the engine) and cached under
    ``cache_dir("alfworld", "generated", ...)`` as one ``.tw-pddl`` game file per task plus ``tasks.json``;
    later calls with the same arguments read the cache. Each game file is written (atomically) as soon as
    its game is ready, so a run that was interrupted loses nothing: the next call reuses the finished
    games and generates only the rest. ``workers`` processes play the games (the PDDL engine is not
    thread-safe); ``progress`` shows a tqdm bar (default: when generating).
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    wanted = None if task_types is None else {task_types} if isinstance(task_types, str) else set(task_types)
    if wanted is not None and (not wanted or wanted - set(TASK_TYPES)):
        raise ValueError(f"task_types must name some of {list(TASK_TYPES)}, got {sorted(wanted)}")
    folder = cache_dir(FAMILY, "generated", f"v{GENERATOR_VERSION}-{split}-n{n_per_type}-seed{seed}")
    index = folder / ("tasks.json" if wanted is None else f"tasks-{'+'.join(sorted(wanted))}.json")
    if index.exists():
        try:
            return [Task.from_dict(item) for item in json.loads(index.read_text())]
        except (ValueError, KeyError, InvalidTask):
            pass  # a corrupt cache (should not happen with atomic writes): rebuild it
    every_job = split_jobs(split, n_per_type, seed)  # all types: each type's seeds depend on the ones before it
    jobs = [job for job in every_job if wanted is None or job[1] in wanted]
    games = {job: game for job in jobs if (game := _finished_game(folder, job)) is not None}
    skip = set(games) | (set(every_job) - set(jobs))
    for job, game in generate_split(split, n_per_type, seed, workers=workers, progress=progress, skip=skip):
        atomic_write_json(folder / "games" / _game_file_name(job), game)
        games[job] = game
    tasks = []
    for job in jobs:  # in job order, whichever run generated the game
        if job in games:
            meta = {"split": split, "source": "generated", "game_file": str(folder / "games" / _game_file_name(job)),
                    "seed": job[2]}
            tasks.append(task_from_game(games[job], origin="generated", meta=meta))
    atomic_write_json(index, [t.to_dict() for t in tasks])
    return tasks


def generated_task_sample(split: str, n: int, seed: int = 0, *, progress: bool = False,
                          task_types: Collection[str] | None = None, **_env_options: Any) -> list[Task]:
    """At least ``n`` generated tasks of ``split``, spread over the task types (the family's ``generate_tasks`` hook).

    ``ceil(n / types)`` games of each of ``task_types`` (default: all six), in :func:`generated_tasks`' order
    (type by type). The other env options a run passes (``max_steps``, ...) do not select tasks.
    """
    if type(n) is not int or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    types = len(TASK_TYPES) if task_types is None else 1 if isinstance(task_types, str) else len(set(task_types))
    options = {} if task_types is None else {"task_types": task_types}
    return generated_tasks(split, max(1, -(-n // max(1, types))), seed, progress=progress, **options)


def _finished_game(folder: Path, job: tuple[str, str, int]) -> dict | None:
    """The game an earlier (maybe interrupted) run wrote for ``job``, or None if there is no usable one."""
    path = folder / "games" / _game_file_name(job)
    try:
        game = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    expected = {"floor_plan": job[0], "task_type": job[1]}
    if not isinstance(game, dict) or any(game.get(key) != value for key, value in expected.items()):
        return None
    if not all(isinstance(game.get(key), str) for key in ("pddl_domain", "grammar", "pddl_problem", "goal")):
        return None
    return game
