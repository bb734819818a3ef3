"""RolloutEngine: plays many episodes at once with one batched generate call per turn for all live episodes.

::

    engine = RolloutEngine(EnvSpec("rla/AlfWorld-v0"), make_agent("alfworld"), backend, num_envs=16, workers=4)
    episodes = engine.run(tasks, group_size=8)        # 8 rollouts of each task: GRPO groups
    engine.close()

Each turn the engine asks the agent for every live episode's prompt, calls ``backend.generate`` once for
all of them, parses each completion into an action (an unparseable one still goes to the env, which flags
it as invalid) and steps all envs (in worker processes when ``workers > 0``). A finished episode frees
its env slot, and the next queued episode starts there at the following turn, so the batch stays full.
Episodes come back in input order with their prompts, completion token ids, logprobs and masks.

Failures. An env that raises on the agent's action ends that episode as a lost one (``action_error`` set,
``won`` False, the last observation repeated, the error in the step's info): it is trained on like any wrong
answer, since anything cheaper would teach the policy to crash the env. Only a failure before any action
(the env could not be built or reset) or of the infrastructure (its worker died) marks the episode
``error``, which training drops. :class:`RolloutStats` counts the two apart.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rla_envs.core.closing import ClosesOnExit
from rla_envs.core.task import Task
from rla_train.backends.base import GenerationBackend, SamplingParams
from rla_train.rollout.envs import EnvFailure, EnvSpec
from rla_train.rollout.workers import make_env_slots
from rla_train.rollout.episode import Episode, StepRecord

__all__ = ["RolloutEngine", "RolloutStats", "SamplingStream"]


@dataclass
class RolloutStats:
    """Counters over an engine's life: calls, turns, steps and where the time went (seconds)."""

    generate_calls: int = 0
    prompts_generated: int = 0
    env_steps: int = 0
    episodes: int = 0
    action_failures: int = 0
    """Episodes the env failed on the agent's action: lost, and trained on."""
    infrastructure_failures: int = 0
    """Episodes whose env could not be built or reset: no action was taken, dropped from training."""
    generate_seconds: float = 0.0
    env_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def overhead_seconds(self) -> float:
        """Time spent neither generating nor in env calls (prompt building, parsing, bookkeeping)."""
        return max(0.0, self.total_seconds - self.generate_seconds - self.env_seconds)


@dataclass
class SamplingStream:
    """The sampling seeds of a sequence of generate calls: call ``turns`` of stream ``index`` samples with
    :meth:`next_seed`, and ``turns`` (saved on checkpoints) says where the stream is.

    Stream 0 is an engine's own rollouts, seeded ``(base * 1_000_003 + t) mod 2**31`` (the seeds the README's figures
    were made with). A caller whose rollouts must not shift the engine's later draws passes its own stream to
    :meth:`RolloutEngine.run`: the task pool's validation rollouts play on stream 1, so a rewrite round changes the
    training rollouts only through the tasks it rewrites. Streams other than 0 draw from
    ``SeedSequence([base, index, t])``: independent of stream 0 and of each other.

    >>> stream = SamplingStream(base=7)
    >>> stream.next_seed(), stream.next_seed(), stream.turns
    (7000021, 7000022, 2)
    >>> SamplingStream(base=7, index=1).next_seed() == SamplingStream(base=7, index=1).next_seed() != 7000021
    True
    """

    base: int
    index: int = 0
    turns: int = 0

    def next_seed(self) -> int:
        """The seed of the next generate call (and the stream moves on by one)."""
        turn, self.turns = self.turns, self.turns + 1
        if self.index == 0:
            return (self.base * 1_000_003 + turn) % 2**31
        entropy = [self.base % 2**64, self.index % 2**64, turn]  # SeedSequence takes non-negative ints
        return int(np.random.SeedSequence(entropy).generate_state(1)[0]) % 2**31


def _lose_on_failure(episode: Episode, action: Any, error: str) -> None:
    """End ``episode`` as lost after the env raised on ``action``: the action counts, nothing more is earned."""
    episode.action_error = error
    episode.actions.append(action)
    episode.observations.append(episode.observations[-1])  # the env said nothing new; keep the type it uses
    episode.infos.append({"won": False, "env_error": error})
    episode.won, episode.truncated = False, False


class RolloutEngine(ClosesOnExit):
    """Plays episodes of an env with an agent and a generation backend, batched across envs.

    Args:
        env: an env id (``"rla/AlfWorld-v0"``), an :class:`EnvSpec`, or any picklable no-argument env
            factory (picklable only when ``workers > 0``).
        agent: the agent (prompts and parsing); default: ``make_agent`` for the env id.
        backend: the policy's :class:`GenerationBackend`.
        num_envs: env instances, i.e. episodes in flight at once (the generate batch size).
        workers: env workers: processes (0 = envs in this process), or Ray actors with ``env_backend="ray"``.
        env_backend: ``"process"`` (default) or ``"ray"`` (envs on Ray actors, :mod:`rla_train.rollout.ray_envs`).
        env_backend_options: for the ray backend: ``address``, ``resources``, ``num_cpus`` of
            :class:`~rla_train.rollout.ray_envs.RayEnvs`.
        sampling: the policy's sampling parameters.
        seed: base seed: episode ``k`` of a run resets with ``seed + k`` and generate call ``t`` samples
            with a seed derived from ``(seed, t)`` (the engine's :class:`SamplingStream`, ``engine.stream``)
            unless ``sampling.seed`` is set, so the same seed and the same backend give the same transcripts.
        progress: show a progress bar over finished episodes.
        env_options: keyword arguments for :class:`EnvSpec` when ``env`` is an id.
    """

    def __init__(self, env: str | EnvSpec | Callable[[], Any], agent=None, backend: GenerationBackend | None = None, *,
                 num_envs: int = 16, workers: int = 0, sampling: SamplingParams | None = None, seed: int = 0,
                 progress: bool = True, start_method: str = "spawn", env_options: Mapping[str, Any] | None = None,
                 env_backend: str = "process", env_backend_options: Mapping[str, Any] | None = None):
        if isinstance(env, str):
            env = EnvSpec(env, **dict(env_options or {}))
        elif env_options:
            raise ValueError("env_options apply only when env is an env id; put them into the EnvSpec instead")
        if not callable(env):
            raise TypeError(f"env must be an env id, an EnvSpec or an env factory, got {type(env).__name__}")
        if backend is None or not hasattr(backend, "generate"):
            raise TypeError(f"backend must be a generation backend (see rla_train.backends), got {backend!r}")
        if agent is None:
            from rla_train.agents import make_agent

            if not isinstance(env, EnvSpec):
                raise ValueError("pass agent= when env is a custom factory (the family cannot be inferred)")
            agent = make_agent(env.env_id)
        if type(num_envs) is not int or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        self.env = env
        self.agent = agent
        self.backend = backend
        self.num_envs = num_envs
        self.sampling = sampling or SamplingParams()
        self.seed = int(seed)
        self.progress = progress
        self.stats = RolloutStats()
        self.stream = SamplingStream(self.seed)  # its generate calls' seeds; stream.turns is saved on checkpoints
        slot_options = dict(env_backend_options or {})
        if env_backend == "process" and workers:
            slot_options["start_method"] = start_method
        self._slots = make_env_slots(env, num_envs, workers, backend=env_backend, **slot_options)

    @property
    def turns(self) -> int:
        """Generate calls on the engine's own stream so far (turn t samples with a seed derived from (seed, t))."""
        return self.stream.turns

    @turns.setter
    def turns(self, value: int) -> None:
        self.stream.turns = int(value)

    # ----------------------------------------------------------------- tasks
    def sample_tasks(self, n: int, *, seed: int | None = None) -> list[Task]:
        """``n`` tasks drawn (without replacement while possible) from the env's task set."""
        if not isinstance(self.env, EnvSpec):
            raise TypeError("sample_tasks needs env given as an id or EnvSpec; pass tasks to run() instead")
        tasks = self.env.tasks()
        rng = np.random.default_rng(self.seed if seed is None else seed)
        order = np.concatenate([rng.permutation(len(tasks)) for _ in range(-(-n // len(tasks)))])[:n]
        return [tasks[i] for i in order]

    # ----------------------------------------------------------------- rollouts
    def run(self, tasks: Sequence[Task | Mapping[str, Any]], *, group_size: int = 1, seed: int | None = None,
            desc: str = "rollouts", stream: SamplingStream | None = None) -> list[Episode]:
        """Play ``group_size`` episodes of every task (group ``g`` = the rollouts of ``tasks[g]``).

        ``stream``: the sampling seeds' stream of these rollouts (default the engine's own, ``engine.stream``);
        a stream of the caller's own leaves the engine's later draws as they would have been without this call.
        """
        stream = self.stream if stream is None else stream
        if type(group_size) is not int or group_size < 1:
            raise ValueError(f"group_size must be an int >= 1, got {group_size!r}")
        tasks = [t if isinstance(t, Task) else Task.from_dict(t) for t in tasks]
        base = self.seed if seed is None else int(seed)
        episodes = [Episode(task_id=task.id, task=task, group=g, seed=base + g * group_size + k)
                    for g, task in enumerate(tasks) for k in range(group_size)]
        from tqdm.auto import tqdm

        started = time.perf_counter()
        with tqdm(total=len(episodes), desc=desc, unit="ep", disable=not self.progress, leave=False) as bar:
            pending, live = deque(range(len(episodes))), {}
            free = list(range(self.num_envs - 1, -1, -1))
            while pending or live:
                self._start(episodes, pending, live, free, bar)
                if live:
                    self._turn(episodes, live, free, bar, stream)
        self.stats.total_seconds += time.perf_counter() - started
        self.stats.episodes += len(episodes)
        return episodes

    def _start(self, episodes, pending, live, free, bar) -> None:
        """Reset free slots with the next queued episodes."""
        starts = {}
        while free and pending:
            starts[free.pop()] = pending.popleft()
        if not starts:
            return
        results = self._env_call(self._slots.reset_many,
                                 {slot: (episodes[i].task, episodes[i].seed) for slot, i in starts.items()})
        for slot, index in starts.items():
            episode, result = episodes[index], results[slot]
            if isinstance(result, EnvFailure):
                episode.error = f"reset failed: {result.error}"
                self.stats.infrastructure_failures += 1
                free.append(slot)
                bar.update(1)
                continue
            observation, info = result
            episode.observations, episode.infos = [observation], [dict(info)]
            episode.task_id = str(info.get("task_id", episode.task_id))
            live[slot] = index

    def _turn(self, episodes, live, free, bar, stream: SamplingStream) -> None:
        """One generate call for every live episode, then one step of every env."""
        slots = list(live)
        prompts = [self.agent.prompt(episodes[live[slot]]) for slot in slots]
        sampling = self.sampling
        if sampling.seed is None:
            sampling = dataclasses.replace(sampling, seed=stream.next_seed())
        else:
            stream.turns += 1  # counted alike, so a checkpoint's turns mean the same with or without a fixed seed
        started = time.perf_counter()
        generations = self.backend.generate(prompts, n=1, sampling=sampling)
        self.stats.generate_seconds += time.perf_counter() - started
        self.stats.generate_calls += 1
        self.stats.prompts_generated += len(prompts)
        if len(generations) != len(prompts):
            raise RuntimeError(f"the backend returned {len(generations)} generations for {len(prompts)} prompts")
        actions = {}
        for slot, generation in zip(slots, generations):
            episode, sample = episodes[live[slot]], generation.samples[0]
            parsed = self.agent.parse(sample.text, episode.infos[-1])
            episode.steps.append(StepRecord(
                prompt=generation.prompt, prompt_ids=generation.prompt_ids, completion=sample.text,
                completion_ids=sample.token_ids, logprobs=sample.logprobs, action=parsed.action,
                parse_error=parsed.error, finish_reason=sample.finish_reason,
                alternatives=getattr(sample, "alternatives", None),
                choice_logprobs=getattr(sample, "choice_logprobs", None)))
            actions[slot] = parsed.action
        results = self._env_call(self._slots.step_many, actions)
        self.stats.env_steps += len(actions)
        for slot in slots:
            episode, result = episodes[live[slot]], results[slot]
            if isinstance(result, EnvFailure) and result.infrastructure:  # e.g. its worker died: not the agent's
                episode.error = f"step {len(episode.actions)} failed: {result.error}"
                episode.steps.pop()  # keep one step record per action taken
                self.stats.infrastructure_failures += 1
                done = True
            elif isinstance(result, EnvFailure):
                _lose_on_failure(episode, actions[slot], f"step {len(episode.actions)} failed: {result.error}")
                self.stats.action_failures += 1
                done = True
            else:
                observation, reward, terminated, truncated, info = result
                episode.actions.append(actions[slot])
                episode.observations.append(observation)
                episode.infos.append(dict(info))
                episode.reward += float(reward)
                done = terminated or truncated
                if done:
                    episode.won = bool(info.get("won"))
                    episode.truncated = bool(truncated and not terminated)
            if done:
                del live[slot]
                free.append(slot)
                bar.update(1)

    def _env_call(self, method, calls):
        started = time.perf_counter()
        try:
            return method(calls)
        finally:
            self.stats.env_seconds += time.perf_counter() - started

    def close(self) -> None:
        """Close the envs (and stop their worker processes)."""
        slots = getattr(self, "_slots", None)
        if slots is not None:
            slots.close()
