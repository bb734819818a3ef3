"""Demonstrations for the warm start: a family's expert playing tasks, and DAgger's states a policy reaches.

The family's expert (``FamilySpec.expert_options``; ALFWorld's is the searching hand-coded expert, which does not
know where hidden objects are, so its transcripts show search and recovery) plays ``train`` tasks; every step
becomes one (prompt, completion) pair, the prompt built by the very agent the policy will use, so training and test
prompts match::

    dataset = expert_demonstrations("train", n_tasks=60, env="rla/AlfWorld-v0", agent=TextGameAgent())

:func:`policy_demonstrations` is DAgger's data: the states a policy reaches, labelled with the expert's command.
The datasets train the policy in :mod:`rla_train.cotrainer.warm_start`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from rla_envs.core.registry import FamilySpec, family_spec, tasks_family
from rla_envs.core.task import Task
from rla_train.agents import make_agent
from rla_train.backends.base import SamplingParams
from rla_train.rollout.episode import Episode

__all__ = ["expert_demonstrations", "policy_demonstrations"]



def _family_and_tasks(env: str | None, tasks: Sequence[Task] | None, split: str, n_tasks: int,
                      task_seed: int) -> tuple[FamilySpec, list[Task]]:
    """The family to play (it must have an expert) and its tasks: ``tasks`` as given, else generated ones of ``env``."""
    if tasks is not None:
        tasks = list(tasks)
        if not tasks:
            raise ValueError(f"no tasks to play for split {split!r}")
        spec = tasks_family(tasks)
        if env is not None and family_spec(env).name != spec.name:
            raise ValueError(f"env={env!r} is of family {family_spec(env).name!r} but the tasks are {spec.name!r}")
    elif env is None:
        raise ValueError("expert demonstrations need the tasks to play, or env= (an env id or family name) whose "
                         "family generates them")
    else:
        spec = family_spec(env)
        if spec.generate_tasks is None:
            raise ValueError(f"family {spec.name!r} generates no tasks (FamilySpec.generate_tasks); pass tasks=")
        tasks = list(spec.hook("generate_tasks")(split, n_tasks, task_seed, progress=False))
    if spec.expert_options is None:
        raise ValueError(f"family {spec.name!r} has no expert to demonstrate (FamilySpec.expert_options is None)")
    return spec, tasks


def expert_demonstrations(split: str = "train", n_tasks: int = 30, seed: int = 0, *, env: str | None = None,
                          agent=None, tasks: Sequence[Task] | None = None, task_seed: int = 0, max_steps: int = 50,
                          only_won: bool = True, progress: bool = True):
    """(prompt, completion) pairs from a family's expert playing ``n_tasks`` episodes.

    Args:
        split: the task split to play (``"train"``; never a held-out split for training data).
        n_tasks: episodes to play; tasks are taken in order and, past the end of the task set, replayed
            with other seeds (ALFWorld's expert's search order is seeded, so replays differ).
        seed: base reset seed (episode ``k`` resets with ``seed + k``).
        env: an env id or family name: the family whose generated ``split`` tasks are played (default: the
            family of ``tasks``).
        agent: the agent that builds the prompts (default: the family's, ``make_agent``): pass the policy's own.
        tasks: tasks to play instead of generated ones.
        task_seed: the seed of the generated tasks (the family's ``generate_tasks`` hook, ``n_tasks`` of them).
        max_steps: the episode step limit.
        only_won: keep only episodes the expert won (default).
        progress: show a progress bar.

    Returns:
        a ``datasets.Dataset`` with ``prompt`` (the chat the agent builds before the step), ``completion``
        (``[{"role": "assistant", "content": command}]``), ``candidates`` (the admissible commands at that
        state, among which :func:`choice_sft` ranks the expert's), ``task_id``, ``task_type``, ``episode``, ``step``
        and ``won``.
    """
    import datasets
    from tqdm.auto import tqdm

    if type(n_tasks) is not int or n_tasks < 1:
        raise ValueError(f"n_tasks must be an int >= 1, got {n_tasks!r}")
    spec, tasks = _family_and_tasks(env, tasks, split, n_tasks, task_seed)
    agent = agent if agent is not None else make_agent(spec.name)
    game = spec.expert_env(tasks, split=split, max_steps=max_steps)
    rows: list[dict[str, Any]] = []
    won_count = 0
    try:
        for k in tqdm(range(n_tasks), desc="expert demonstrations", unit="ep", disable=not progress, leave=False):
            task = tasks[k % len(tasks)]
            episode_rows, won = _play_expert(game, agent, Episode(task_id=task.id, task=task, seed=seed + k), k)
            won_count += won
            if won or not only_won:
                rows.extend(episode_rows)
    finally:
        game.close()
    if not rows:
        raise RuntimeError(f"the expert won none of the {n_tasks} episodes (max_steps={max_steps}): no demonstrations")
    dataset = datasets.Dataset.from_list(rows)
    dataset.info.description = f"{won_count}/{n_tasks} expert episodes won on {split!r}"
    return dataset


def _play_expert(env, agent, episode, index: int) -> tuple[list[dict[str, Any]], bool]:
    """Play the expert's commands in ``env``; one row per step with the prompt the agent builds there."""
    observation, info = env.reset(seed=episode.seed, options={"task": episode.task})
    episode.observations, episode.infos = [observation], [dict(info)]
    rows, done = [], False
    while not done and info.get("expert_action") is not None:
        command = info["expert_action"]
        rows.append({"prompt": agent.prompt(episode), "completion": [{"role": "assistant", "content": command}],
                     "candidates": list(info.get("admissible_actions") or ()), "task_id": str(info["task_id"]), "task_type": str(info.get("task_type", "")),
                     "episode": index, "step": len(episode.actions)})
        observation, _, terminated, truncated, info = env.step(command)
        episode.actions.append(command)
        episode.observations.append(observation)
        episode.infos.append(dict(info))
        done = terminated or truncated
    won = bool(info.get("won"))
    for row in rows:
        row["won"] = won
    return rows, won


def policy_demonstrations(backend, split: str = "train", n_tasks: int = 30, seed: int = 0, *, env: str | None = None,
                          agent=None, tasks: Sequence[Task] | None = None, task_seed: int = 0, max_steps: int = 30,
                          expert_mix: float = 0.0, progress: bool = True):
    """DAgger data: the states a policy reaches, each labelled with the searching expert's command there.

    The policy (a generation backend answering the agent's chats, e.g. a
    :class:`~rla_train.backends.choice.ChoiceBackend` at temperature 1) plays ``n_tasks`` episodes, all in
    lockstep (one batched call per step); at every state the family's expert, which re-plans from
    whatever the agent did, says what it would do, and that becomes the completion. With ``expert_mix``
    > 0 the expert's own command is played instead of the policy's with that probability (DAgger's beta).
    Arguments and columns as in :func:`expert_demonstrations` (``won`` is the policy's outcome); states
    where the expert has no command are skipped.
    """
    import datasets

    if type(n_tasks) is not int or n_tasks < 1:
        raise ValueError(f"n_tasks must be an int >= 1, got {n_tasks!r}")
    if not 0.0 <= expert_mix <= 1.0:
        raise ValueError(f"expert_mix must be in [0, 1], got {expert_mix!r}")
    spec, tasks = _family_and_tasks(env, tasks, split, n_tasks, task_seed)
    agent = agent if agent is not None else make_agent(spec.name)
    rng = random.Random(seed)
    envs, episodes, rows, done = [], [], [], []
    try:
        for k in range(n_tasks):
            task = tasks[k % len(tasks)]
            game = spec.expert_env(tasks, split=split, max_steps=max_steps)
            observation, info = game.reset(seed=seed + k, options={"task": task})
            envs.append(game)
            episodes.append(Episode(task_id=task.id, task=task, seed=seed + k, observations=[observation],
                                    infos=[dict(info)]))
            done.append(False)
        for step in range(max_steps):
            live = [k for k in range(n_tasks) if not done[k]]
            if not live:
                break
            chats = [agent.prompt(episodes[k]) for k in live]
            answers = backend.generate(chats, sampling=SamplingParams(seed=rng.randrange(2**31)))
            for k, chat, answer in zip(live, chats, answers):
                info = episodes[k].infos[-1]
                expert = info.get("expert_action")
                if expert is not None:
                    rows.append({"prompt": chat, "completion": [{"role": "assistant", "content": expert}],
                                 "candidates": list(info.get("admissible_actions") or ()),
                                 "task_id": str(info["task_id"]), "task_type": str(info.get("task_type", "")),
                                 "episode": k, "step": step})
                command = expert if expert is not None and rng.random() < expert_mix else \
                    agent.parse(answer.samples[0].text, info).action
                observation, _, terminated, truncated, info = envs[k].step(command)
                episodes[k].actions.append(command)
                episodes[k].observations.append(observation)
                episodes[k].infos.append(dict(info))
                done[k] = terminated or truncated
    finally:
        for game in envs:
            game.close()
    won = {k: bool(e.infos[-1].get("won")) for k, e in enumerate(episodes)}
    rows.sort(key=lambda row: (row["episode"], row["step"]))  # episode by episode, as expert_demonstrations
    for row in rows:
        row["won"] = won[row["episode"]]
    if not rows:
        raise RuntimeError("the expert labelled no state: no demonstrations")
    dataset = datasets.Dataset.from_list(rows)
    dataset.info.description = f"{sum(won.values())}/{n_tasks} policy episodes won on {split!r}"
    return dataset
