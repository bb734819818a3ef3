"""Benchmark: steps/s of rla/TextWorld-v0 (through gym.make) against raw ``textworld.start``.

Both sides play the same games with the same recorded action sequences in the same run, and ask the
game for the same extra information (admissible commands, won, lost). Each side loads every game once
and reuses it across episodes. After one warm-up pass, the two sides alternate for several repeats and
the best throughput of each is compared: ``textworld_ratio_vs_raw`` = rla steps/s / raw steps/s.
Both sides run in this process (the z-machine is an in-process library), so throughput is measured in
process CPU time, and the best of the repeats is kept: on a shared 2-core machine, wall time and medians
move with whatever else runs, while the least-disturbed repeat of each side is what the code costs.

Run it alone with ``python -m benchmarks.perf.textworld [--quick]``.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence

from benchmarks.perf.report import Metric

__all__ = ["run"]

_LEVELS_FULL = ("custom-2", "simple", "cooking-1", "cooking-2")
_LEVELS_QUICK = ("custom-2", "cooking-1")


def _record_episodes(path: str, rng: random.Random, episodes: int, max_steps: int) -> list[list[str]]:
    """Action sequences for one game: random admissible commands, an occasional invalid one, the walkthrough."""
    import textworld

    from rla_envs.textworld.generate import load_game

    env = textworld.start(path, textworld.EnvInfos(admissible_commands=True, won=True, lost=True))
    sequences = [list(load_game(path).walkthrough or [])]
    for _ in range(episodes - 1):
        state, actions = env.reset(), []
        for _ in range(max_steps):
            command = "dance wildly" if rng.random() < 0.1 else rng.choice(state["admissible_commands"])
            actions.append(command)
            state, _, done = env.step(command)
            if done:
                break
        sequences.append(actions)
    env.close()
    return sequences


def _time_raw(paths: Sequence[str], sequences: Sequence[Sequence[Sequence[str]]], envs: dict) -> tuple[float, int]:
    import textworld

    infos = textworld.EnvInfos(admissible_commands=True, won=True, lost=True)
    steps, start = 0, time.process_time()
    for path, episodes in zip(paths, sequences):
        if path not in envs:
            envs[path] = textworld.start(path, infos)
        env = envs[path]
        for actions in episodes:
            env.reset()
            for command in actions:
                env.step(command)
                steps += 1
    return time.process_time() - start, steps


def _time_rla(env, tasks, sequences) -> tuple[float, int]:
    steps, start = 0, time.process_time()
    for task, episodes in zip(tasks, sequences):
        for actions in episodes:
            env.reset(options={"task": task})
            for command in actions:
                env.step(command)
                steps += 1
    return time.process_time() - start, steps


def run(quick: bool = False) -> list[Metric]:
    """Measure rla/TextWorld-v0 against raw textworld on the same games and actions; one Metric."""
    import gymnasium as gym

    import rla_envs  # noqa: F401  (registers the env ids)
    from rla_envs.textworld.tasks import default_tasks, game_file_for

    levels = _LEVELS_QUICK if quick else _LEVELS_FULL
    repeats, episodes, max_steps = (3, 4, 30) if quick else (7, 8, 40)
    tasks = default_tasks(games_per_level=1, levels=levels)
    paths = [str(game_file_for(task)) for task in tasks]
    rng = random.Random(0)
    sequences = [_record_episodes(path, rng, episodes, max_steps) for path in paths]

    env = gym.make("rla/TextWorld-v0", tasks=tasks, max_steps=10_000)
    raw_envs: dict = {}
    _time_raw(paths, sequences, raw_envs)  # warm-up: loads every game once on both sides
    _time_rla(env, tasks, sequences)
    raw_rates, rla_rates = [], []
    for repeat in range(repeats):  # alternate which side goes first, so load drift hits both alike
        for side in ("raw", "rla") if repeat % 2 == 0 else ("rla", "raw"):
            if side == "raw":
                seconds, steps = _time_raw(paths, sequences, raw_envs)
                raw_rates.append(steps / seconds)
            else:
                seconds, steps = _time_rla(env, tasks, sequences)
                rla_rates.append(steps / seconds)
    env.close()
    for raw_env in raw_envs.values():
        raw_env.close()
    total_steps = sum(len(a) for episodes in sequences for a in episodes)
    return [Metric(
        name="textworld_ratio_vs_raw",
        value=max(rla_rates),
        baseline=max(raw_rates),
        unit="steps/s",
        goal=0.95,
        note=(f"{len(tasks)} games ({', '.join(levels)}), {total_steps} steps incl. resets, best of {repeats} alternating repeats, CPU time; "
              "raw = textworld.start with admissible commands"),
    )]


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv), machine_facts()))
