"""Benchmark: the rollout engine's overhead per env step, and batched vs one-episode-at-a-time generation.

* **engine_overhead**: 16 ALFWorld episodes through :class:`RolloutEngine` (16 envs in this process) with an
  instant scripted generator that answers the first admissible command, against a plain loop that steps
  the same envs with the same actions (``env.step`` only). Reported as ms per env step (lower is better),
  the generator's own time excluded (``stats.generate_seconds``); the goal says the engine (prompt
  building, parsing, bookkeeping, step records) adds at most 25%.
* **batched_speedup**: a tiny random-init Qwen2 model (built locally) plays 16 ALFWorld episodes of a
  few steps, once with 16 episodes in flight (one generate call per turn for all of them) and once with
  one episode at a time, same tasks, same sampling settings: 32 new tokens per turn and the agent's
  prompt showing the last 2 steps and the admissible commands (~400-600 tokens), a short-answer agent. Reported in episodes/s;
  goal >= 3. Both sides use every core (``torch.set_num_threads(os.cpu_count())``). (On CPU the prefill of long prompts costs the same batched or not, so the gain grows with
  the tokens generated per turn and shrinks with the prompt length.)

Run it alone with ``python -m benchmarks.perf.rollout [--quick]``.
"""

from __future__ import annotations

import re
import sys
import time

from benchmarks.perf.report import Metric

__all__ = ["run"]

PARALLEL = 16
_LIST = re.compile(r"Admissible actions: (.*)\n")


class FirstAdmissible:
    """An instant policy: the first admissible command of the last user turn."""

    def __call__(self, prompt: str) -> str:
        found = _LIST.search(prompt, max(0, prompt.rfind("Admissible actions: ")))
        return found.group(1).split(", ")[0] if found else "look"


def _tasks(n: int):
    from rla_train.rollout.envs import EnvSpec

    tasks = EnvSpec("rla/AlfWorld-v0").tasks()
    return [tasks[i % len(tasks)] for i in range(n)]


def _plain_loop(tasks, episodes, max_steps: int) -> float:
    """Seconds to replay the engine's actions with bare env.step calls (envs already warm), turn by turn."""
    import gymnasium as gym

    import rla_envs  # noqa: F401

    envs = [gym.make("rla/AlfWorld-v0", max_steps=max_steps) for _ in tasks]
    for env, task in zip(envs, tasks):  # warm: load each game once, as the engine's envs were
        env.reset(options={"task": task})
    started = time.perf_counter()
    for env, task, episode in zip(envs, tasks, episodes):
        env.reset(seed=episode.seed, options={"task": task})
    for turn in range(max(e.num_steps for e in episodes)):  # round-robin over the envs, as the engine steps them
        for env, episode in zip(envs, episodes):
            if turn < episode.num_steps:
                env.step(episode.actions[turn])
    seconds = time.perf_counter() - started
    for env in envs:
        env.close()
    return seconds


def engine_overhead(quick: bool) -> Metric:
    """ms per env step: engine + instant generator vs bare env.step on the same actions."""
    from rla_train.backends.scripted import ScriptedBackend
    from rla_train.rollout.engine import RolloutEngine

    max_steps = 20 if quick else 50
    tasks = _tasks(PARALLEL)
    with RolloutEngine("rla/AlfWorld-v0", backend=ScriptedBackend(FirstAdmissible()), num_envs=PARALLEL,
                       progress=False, env_options={"max_steps": max_steps}) as engine:
        engine.run(tasks)  # warm: every env loads its game once
        generator_before, started = engine.stats.generate_seconds, time.perf_counter()
        episodes = engine.run(tasks)
        engine_seconds = time.perf_counter() - started - (engine.stats.generate_seconds - generator_before)
    steps = sum(e.num_steps for e in episodes)
    plain_seconds = _plain_loop(tasks, episodes, max_steps)
    return Metric("rollout_engine_overhead", 1000 * engine_seconds / steps, 1000 * plain_seconds / steps,
                  "ms/step", higher_is_better=False, goal=0.8,
                  note=f"{PARALLEL} ALFWorld episodes, {steps} steps, engine minus generator time vs bare env.step")


def batched_speedup(quick: bool) -> Metric:
    """Episodes/s with 16 episodes in flight vs one at a time, tiny model, same tasks."""
    import torch

    from rla_train.agents import TextGameAgent
    from rla_train.backends import make_backend
    from rla_train.backends.base import SamplingParams
    from rla_train.backends.tiny import tiny_model_path
    from rla_train.rollout.engine import RolloutEngine

    import os

    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)  # both sides alike: generation uses every core
    max_steps = 3 if quick else 5
    backend = make_backend("transformers", model=str(tiny_model_path()))
    sampling = SamplingParams(max_new_tokens=32, temperature=1.0)
    tasks = _tasks(PARALLEL)
    rates = {}
    for in_flight in (PARALLEL, 1):
        with RolloutEngine("rla/AlfWorld-v0", TextGameAgent(history_window=2), backend, num_envs=in_flight,
                           sampling=sampling,
                           progress=False, env_options={"max_steps": max_steps}) as engine:
            engine.run(tasks[:in_flight])  # warm the envs' games and the model
            started = time.perf_counter()
            episodes = engine.run(tasks)
            rates[in_flight] = len(episodes) / (time.perf_counter() - started)
    backend.close()
    return Metric("batched_speedup", rates[PARALLEL], rates[1], "episodes/s", goal=3.0,
                  note=f"tiny Qwen2 (CPU, {threads} threads), {PARALLEL} ALFWorld episodes x {max_steps} steps, "
                       f"32 new tokens per turn, 2-step history: {PARALLEL} in flight vs 1")


def run(quick: bool = False) -> list[Metric]:
    """Both rollout benchmarks."""
    return [engine_overhead(quick), batched_speedup(quick)]


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv), machine_facts()))
