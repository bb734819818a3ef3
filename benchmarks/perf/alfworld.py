"""rla/AlfWorld-v0 against the stock textworld PDDL env, side by side on the same kitchen games and actions.

The baseline is what ALFWorld itself plays: ``AlfredDemangler(textworld.envs.PddlEnv(EnvInfos(
admissible_commands=True, won=True)))``. Both play the same generated kitchen games (floor plans 1-30)
with the same action sequence (random admissible commands with some garbage text, chosen once from a
seeded generator while rla plays); the transcripts (observation, admissible commands, won) must be
identical, otherwise :func:`run` raises. Three ratios are reported:

- ``alfworld_speedup_vs_stock``: steps per second (goal 10x);
- ``alfworld_reset_speedup_vs_stock``: seconds per reset of a game already loaded (goal 10x);
- ``alfworld_first_load_speedup_vs_stock``: seconds to load and reset a game not seen before.

Run it with ``python -m benchmarks.perf textenvs`` (or call :func:`run` directly).
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass, field

from benchmarks.perf.report import Metric

__all__ = ["run", "KITCHEN_GAMES"]

#: (floor plan, task type, seed) of the kitchen games played; the quick run plays the first one.
KITCHEN_GAMES = (
    ("FloorPlan1", "pick_two_obj_and_place", 1),
    ("FloorPlan5", "pick_heat_then_place_in_recep", 2),
    ("FloorPlan12", "pick_cool_then_place_in_recep", 3),
)
GARBAGE = ("", "xyzzy", "take it", "go to the moon", "ouvre le frigo ñ", "GO TO FRIDGE 1")


@dataclass
class _Timings:
    step_seconds: float = 0.0
    steps: int = 0
    reset_seconds: list[float] = field(default_factory=list)
    first_load_seconds: list[float] = field(default_factory=list)
    transcript: list = field(default_factory=list)


def _kitchen_games(quick: bool) -> list[dict]:
    from rla_envs.alfworld.generate import generate_game

    return [generate_game(*job, verify=False) for job in KITCHEN_GAMES[: 1 if quick else len(KITCHEN_GAMES)]]


def _play_rla(games: list[dict], steps: int, resets: int, seed: int) -> tuple[_Timings, list[list[str]]]:
    """Play rla/AlfWorld-v0; returns timings, transcript and the actions chosen (per game)."""
    import gymnasium as gym

    import rla_envs  # noqa: F401
    from rla_envs.alfworld.tasks import task_from_game

    tasks = [task_from_game(game) for game in games]
    env = gym.make("rla/AlfWorld-v0", tasks=tasks, max_steps=10 * steps)
    timings, actions_per_game, rng = _Timings(), [], random.Random(seed)
    for task in tasks:
        started = time.perf_counter()
        observation, info = env.reset(options={"task": task})
        timings.first_load_seconds.append(time.perf_counter() - started)
        actions = []
        for episode in range(resets + 1):
            if episode:
                started = time.perf_counter()
                observation, info = env.reset(options={"task": task})
                timings.reset_seconds.append(time.perf_counter() - started)
            timings.transcript.append((observation, info["admissible_actions"], info["won"]))
            for _ in range(steps):
                action = rng.choice(GARBAGE) if rng.random() < 0.1 else rng.choice(info["admissible_actions"])
                started = time.perf_counter()
                observation, _, terminated, _, info = env.step(action)
                timings.step_seconds += time.perf_counter() - started
                timings.steps += 1
                actions.append(action)
                timings.transcript.append((action, observation, info["admissible_actions"], info["won"]))
                if terminated:
                    break
            actions.append(None)  # end of episode
        actions_per_game.append(actions)
    env.close()
    return timings, actions_per_game


def _play_stock(games: list[dict], actions_per_game: list[list[str]]) -> _Timings:
    """Replay the same actions in the stock engine (textworld PddlEnv + AlfredDemangler)."""
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs.pddl import PddlEnv

    argv = list(sys.argv)  # fast_downward's translator overwrites sys.argv
    env = AlfredDemangler(PddlEnv(textworld.EnvInfos(admissible_commands=True, won=True)), shuffle=False)
    timings = _Timings()
    try:
        for game, actions in zip(games, actions_per_game):
            started = time.perf_counter()
            env.load(game)
            state = env.reset()
            timings.first_load_seconds.append(time.perf_counter() - started)
            timings.transcript.append((state.feedback, state["admissible_commands"], bool(state["won"])))
            for index, action in enumerate(actions):
                if action is None:
                    if index + 1 < len(actions):
                        started = time.perf_counter()
                        state = env.reset()
                        timings.reset_seconds.append(time.perf_counter() - started)
                        timings.transcript.append((state.feedback, state["admissible_commands"], bool(state["won"])))
                    continue
                started = time.perf_counter()
                state, _, _ = env.step(action)
                timings.step_seconds += time.perf_counter() - started
                timings.steps += 1
                timings.transcript.append((action, state.feedback, state["admissible_commands"], bool(state["won"])))
    finally:
        sys.argv[:] = argv
    return timings


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def run(quick: bool = False) -> list[Metric]:
    """Measure rla/AlfWorld-v0 against the stock engine; raises RuntimeError if any transcript differs."""
    games = _kitchen_games(quick)
    steps, resets = (20, 2) if quick else (60, 3)
    fast, actions = _play_rla(games, steps, resets, seed=0)
    stock = _play_stock(games, actions)
    if fast.transcript != stock.transcript:
        first = next(i for i, (a, b) in enumerate(zip(fast.transcript, stock.transcript)) if a != b)
        raise RuntimeError(f"rla/AlfWorld-v0 and the stock engine disagree at transcript entry {first}: "
                           f"rla {fast.transcript[first]!r} vs stock {stock.transcript[first]!r}")
    plans = ", ".join(f"{plan} {task_type}" for plan, task_type, _ in KITCHEN_GAMES[: len(games)])
    note = (f"{len(games)} kitchen game(s) ({plans}), {fast.steps} steps with admissible commands on, "
            f"{len(fast.reset_seconds)} resets; transcripts identical: yes")
    return [
        Metric("alfworld_speedup_vs_stock", fast.steps / fast.step_seconds, stock.steps / stock.step_seconds,
               "steps/s", higher_is_better=True, goal=10.0, note=note),
        Metric("alfworld_reset_speedup_vs_stock", _mean(fast.reset_seconds), _mean(stock.reset_seconds), "s",
               higher_is_better=False, goal=10.0, note="reset of a game already loaded; " + note),
        Metric("alfworld_first_load_speedup_vs_stock", _mean(fast.first_load_seconds),
               _mean(stock.first_load_seconds), "s", higher_is_better=False,
               note="load + reset of a game not seen before (rla translates once and caches); " + note),
    ]


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv), machine_facts()))
