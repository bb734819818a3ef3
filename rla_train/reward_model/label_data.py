"""Labelled judge data: steps of played episodes, each with the step-label oracle's verdict, as judge prompts.

The reward model learns to judge steps from the family's step-label oracle (:mod:`rla_envs.core.labels`;
ALFWorld's is a privileged planner: a step is good when it does not move the agent away from the goal). Those labels need steps of both
kinds, and the searching expert almost never takes a bad step, so episodes come from two players:

* the family's expert (``epsilon=0``; ``FamilySpec.expert_options``), and
* a "policy": an **epsilon-expert** (each step, with probability ``epsilon`` a seeded random admissible
  action, else the expert's; ``epsilon=1`` is a random-admissible player), or a real policy (a
  generation backend + agent, as in :func:`rla_train.cotrainer.demonstrations.policy_demonstrations`: the training run
  passes its warm-started policy so that the reward model learns on the steps it will judge).

Pipeline, each piece usable alone (episodes from the rollout engine can go straight to :func:`label_steps`)::

    episodes = play_episodes(tasks, epsilons=(0.0, 0.5, 1.0), episodes_per_task=3, seed=0)
    steps = balance_steps(label_steps(episodes), good_per_bad=2.0, seed=0)   # every bad step, 2 good per bad
    dataset = judge_dataset(steps, style="compact")                          # prompt / completion / good / ...

Each row's prompt is :func:`~rla_train.reward_model.prompts.judge_chat` of that step, the very chat the
reward model sees in training; its completion is the right verdict of
:data:`~rla_train.reward_model.verdicts.VERDICTS`. In pick-and-place ~8-10% of a random player's labelled
steps are bad and ~0% of the expert's (measured), hence :func:`balance_steps`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rla_envs.core.labels import StepLabeller
from rla_envs.core.registry import tasks_family
from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory
from rla_train.agents import make_agent
from rla_train.backends.base import SamplingParams
from rla_train.reward_model.judge import resolve_tasks
from rla_train.reward_model.prompts import DEFAULT_MAX_CHARS, DEFAULT_MAX_HISTORY, judge_chat
from rla_train.reward_model.verdicts import VERDICTS
from rla_train.rollout.episode import Episode

__all__ = ["LabelledStep", "play_episodes", "label_steps", "balance_steps", "class_counts", "judge_dataset",
           "warm_start_data"]


@dataclass(frozen=True)
class LabelledStep:
    """One step of a played episode with the oracle's label.

    Attributes:
        task: the task played.
        trajectory: the whole episode (the judge prompt reads its earlier steps).
        step: the step's index in ``trajectory.actions``.
        good: the oracle's label (True good, False bad).
        source: who played it: ``"expert"``, ``"epsilon=0.5"``, ``"policy"``, ...
    """

    task: Task
    trajectory: Trajectory
    step: int
    good: bool
    source: str = ""


def _source(epsilon: float) -> str:
    return "expert" if epsilon == 0 else f"epsilon={epsilon:g}"


def play_episodes(tasks: Sequence[Task], *, epsilons: Sequence[float] = (0.0, 0.5, 1.0),
                  episodes_per_task: int = 3, seed: int = 0, max_steps: int = 30, split: str = "train",
                  policy=None, agent=None) -> list[Trajectory]:
    """Play ``episodes_per_task`` episodes on each task; each trajectory's ``source`` says who played.

    Args:
        tasks: tasks of one family with an expert (``FamilySpec.expert_options``; e.g. ALFWorld's generated tasks).
        epsilons: episode ``k`` (counting over all tasks) is played by the epsilon-expert with
            ``epsilons[k % len(epsilons)]`` (0 = the searching expert, 1 = random admissible actions; the
            expert re-plans after a random one).
        episodes_per_task: episodes on each task (a task's episodes are played one after the other, so
            each game is loaded once); episode ``j`` of task ``t`` resets with seed
            ``seed + t * episodes_per_task + j``, and the random actions come from ``random.Random(seed)``.
        max_steps: the episode step limit.
        split: the env's split, for families with splits (names where the tasks come from; the tasks are given).
        policy, agent: a generation backend and the agent that builds its prompts and parses its answers
            (default agent: the family's, ``make_agent(family)``): when given, the policy plays every episode instead of the
            epsilon-expert (``epsilons`` is then ignored) at temperature 1, source ``"policy"``.

    Returns:
        :class:`~rla_train.rollout.episode.Episode` objects (task set, infos with ``admissible_actions``) with
        an extra ``source`` attribute.
    """
    if type(episodes_per_task) is not int or episodes_per_task < 1:
        raise ValueError(f"episodes_per_task must be an int >= 1, got {episodes_per_task!r}")
    epsilons = [float(e) for e in epsilons]
    if not epsilons or not all(0.0 <= e <= 1.0 for e in epsilons):
        raise ValueError(f"epsilons must be a non-empty list of probabilities in [0, 1], got {epsilons}")
    tasks = list(tasks)
    family = tasks_family(tasks)
    if family.expert_options is None:
        raise ValueError(f"play_episodes needs tasks of a family with an expert (FamilySpec.expert_options), got "
                         f"family {family.name!r}")
    if policy is not None and agent is None:
        agent = make_agent(family.name)
    rng = random.Random(seed)
    env = family.expert_env(tasks, split=split, max_steps=max_steps)
    episodes: list[Trajectory] = []
    try:
        for t, task in enumerate(tasks):
            for j in range(episodes_per_task):
                episode = Episode(task_id=task.id, task=task, seed=seed + t * episodes_per_task + j)
                epsilon = epsilons[(t * episodes_per_task + j) % len(epsilons)]
                _play(env, episode, rng, epsilon, policy, agent)
                episode.source = "policy" if policy is not None else _source(epsilon)
                episodes.append(episode)
    finally:
        env.close()
    return episodes


def _play(env, episode, rng: random.Random, epsilon: float, policy, agent) -> None:
    """One episode in ``env``: the policy's actions, or the epsilon-expert's."""
    observation, info = env.reset(seed=episode.seed, options={"task": episode.task})
    episode.observations, episode.infos = [observation], [dict(info)]
    done = False
    while not done:
        if policy is not None:
            answer = policy.generate([agent.prompt(episode)],
                                     sampling=SamplingParams(temperature=1.0, seed=rng.randrange(2**31)))[0]
            action = agent.parse(answer.samples[0].text, info).action
        else:
            expert, admissible = info.get("expert_action"), list(info.get("admissible_actions") or ["look"])
            action = expert if expert is not None and rng.random() >= epsilon else rng.choice(admissible)
        observation, _, terminated, truncated, info = env.step(action)
        episode.actions.append(action)
        episode.observations.append(observation)
        episode.infos.append(dict(info))
        done = terminated or truncated
    episode.won, episode.truncated = bool(info.get("won")), bool(truncated and not info.get("won"))


def label_steps(trajectories: Sequence[Trajectory], tasks: Sequence[Task] | None = None, *,
                source: str | None = None, rule: str = "no_regress") -> list[LabelledStep]:
    """Every step of ``trajectories`` that the family's step-label oracle labels (None labels are left out).

    ``tasks``: one per trajectory (default: each Episode's ``task``). ``source``: the label of who played
    (default: each trajectory's ``source`` attribute, else ``"policy"``). Uses
    :func:`rla_envs.core.labels.step_labels` (ALFWorld: the privileged planner, ~7 ms a step) under ``rule``
    (:data:`rla_envs.core.labels.LABEL_RULES`).
    """
    trajectories = list(trajectories)
    tasks = resolve_tasks(None if tasks is None else list(tasks), trajectories)
    steps = []
    for task, trajectory in zip(tasks, trajectories):
        who = source or getattr(trajectory, "source", None) or "policy"
        labels = StepLabeller(rule)(task, list(trajectory.actions))
        steps.extend(LabelledStep(task, trajectory, i, bool(label), who)
                     for i, label in enumerate(labels) if label is not None)
    return steps


def balance_steps(steps: Sequence[LabelledStep], *, good_per_bad: float | None = 2.0,
                  seed: int = 0) -> list[LabelledStep]:
    """Every bad step, and at most ``good_per_bad`` good steps per bad one (a seeded sample; None: all).

    Bad steps are rare (see the module docstring): keeping them all and thinning the good ones gives
    training and the probe both classes at a bounded cost. The result keeps the input's order. With no
    bad step at all, no good step is dropped (there is no ratio to keep) unless ``good_per_bad`` is 0.
    """
    if good_per_bad is not None and not good_per_bad >= 0:
        raise ValueError(f"good_per_bad must be >= 0 or None (keep every good step), got {good_per_bad!r}")
    good = [i for i, s in enumerate(steps) if s.good]
    bad = [i for i, s in enumerate(steps) if not s.good]
    if good_per_bad is not None and bad and len(good) > good_per_bad * len(bad):
        good = random.Random(seed).sample(good, int(round(good_per_bad * len(bad))))
    elif good_per_bad == 0:
        good = []
    kept = sorted(set(good) | set(bad))
    return [steps[i] for i in kept]


def class_counts(steps: Sequence[LabelledStep]) -> dict[str, Any]:
    """``{"steps", "good", "bad", "by_source": {source: {"good", "bad"}}}`` of labelled steps."""
    by_source: dict[str, dict[str, int]] = {}
    for step in steps:
        counts = by_source.setdefault(step.source, {"good": 0, "bad": 0})
        counts["good" if step.good else "bad"] += 1
    good = sum(s.good for s in steps)
    return {"steps": len(steps), "good": good, "bad": len(steps) - good, "by_source": by_source}


def judge_dataset(steps: Sequence[LabelledStep], *, max_history: int | None = None, max_chars: int | None = None,
                  style: str = "full"):
    """A ``datasets.Dataset`` of judge prompts, one row per labelled step.

    Columns: ``prompt`` (:func:`~rla_train.reward_model.prompts.judge_chat` of the step with these
    options: pass the reward model's), ``completion`` (``[{"role": "assistant", "content": verdict}]``, the
    right one of :data:`~rla_train.reward_model.verdicts.VERDICTS`), ``candidates`` (both verdicts),
    ``good``, ``source``, ``task_id``, ``step``.
    """
    import datasets

    if not steps:
        raise ValueError("no labelled steps to build judge data from (did the oracle label none?)")
    options = {"max_history": DEFAULT_MAX_HISTORY if max_history is None else max_history,
               "max_chars": DEFAULT_MAX_CHARS if max_chars is None else max_chars, "style": style}
    rows = [{"prompt": judge_chat(s.task, s.trajectory, s.step, **options),
             "completion": [{"role": "assistant", "content": VERDICTS[0] if s.good else VERDICTS[1]}],
             "candidates": list(VERDICTS), "good": s.good, "source": s.source, "task_id": s.task.id,
             "step": s.step} for s in steps]
    return datasets.Dataset.from_list(rows)


def warm_start_data(tasks: Sequence[Task], *, episodes: int, expert_share: float = 0.5, policy=None, agent=None,
                    epsilons: Sequence[float] = (0.5, 1.0), good_per_bad: float | None = 2.0, seed: int = 0,
                    max_steps: int = 30, split: str = "train", max_history: int | None = None,
                    max_chars: int | None = None, style: str = "full", rule: str = "no_regress"):
    """The reward-model warm start's data in one call: ``(judge_dataset rows, class_counts)``.

    ``episodes`` are played on ``tasks`` in turn: ``round(expert_share * episodes)`` by the expert, the rest
    by ``policy`` (a generation backend, with ``agent``) or, without one, by the epsilon-expert cycling
    through ``epsilons``; every labelled step is kept when bad, good ones thinned to ``good_per_bad`` per
    bad one (seeded), and each becomes a judge prompt with the given prompt options (pass the reward
    model's: ``max_history``, ``max_chars``, ``style``) and the labels' ``rule``. Pass the run's training tasks, never
    the probe's.
    """
    if type(episodes) is not int or episodes < 1:
        raise ValueError(f"episodes must be an int >= 1, got {episodes!r}")
    if not 0.0 <= expert_share <= 1.0:
        raise ValueError(f"expert_share must be in [0, 1], got {expert_share!r}")
    tasks = list(tasks)
    if not tasks:
        raise ValueError("warm_start_data needs tasks to play")
    n_expert = int(round(expert_share * episodes))
    n_other = episodes - n_expert
    played: list[Trajectory] = []
    if n_expert:
        played += play_episodes([tasks[k % len(tasks)] for k in range(n_expert)], epsilons=(0.0,),
                                episodes_per_task=1, seed=seed, max_steps=max_steps, split=split)
    if n_other:  # other seeds than the expert's episodes on the same tasks
        played += play_episodes([tasks[k % len(tasks)] for k in range(n_other)], epsilons=epsilons,
                                episodes_per_task=1, seed=seed + episodes, max_steps=max_steps, split=split,
                                policy=policy, agent=agent)
    steps = balance_steps(label_steps(played, rule=rule), good_per_bad=good_per_bad, seed=seed)
    dataset = judge_dataset(steps, max_history=max_history, max_chars=max_chars, style=style)
    return dataset, class_counts(steps)
