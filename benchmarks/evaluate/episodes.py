"""Playing a task list through the rollout engine and recording each episode as one JSON line, resumably.

Greedy episodes are appended to their file after every engine batch, and a rerun plays only the rest; sampled
ones play in one engine pass, as the trainer's evaluation does, and are written when it ends. With a judge,
every step is judged and the expert step labels (:mod:`rla_envs.core.labels`) are recorded beside the votes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from benchmarks.evaluate.tasks import task_type
from rla_envs.core.files import atomic_write_json
from rla_envs.core.labels import has_step_labels, step_labels
from rla_envs.core.task import Task
from rla_train.cotrainer.play_setup import play_heldout
from rla_train.rollout.records import append_records, read_records

__all__ = ["play_episodes", "identity_path", "ForeignEpisodes"]


class ForeignEpisodes(ValueError):
    """An episodes file in ``--out`` that this evaluation must not resume (another task list, policy or settings)."""


def _record(episode, index: int, labels: list | None) -> dict[str, Any]:
    """An episode as one JSON line: its transcript and outcome (prompts left out: they are rebuilt from it)."""
    data = episode.to_dict()
    for step in data.get("steps", []):
        step.pop("prompt", None)
        step.pop("prompt_ids", None)
    data.pop("task", None)
    data.update({"index": index, "task_type": task_type(episode.task), "num_steps": episode.num_steps,
                 "step_labels": labels})
    return data


def identity_path(path: Path) -> Path:
    """The file beside an episodes file that says who played its episodes, and how."""
    return path.with_suffix(".identity.json")


def _claim(path: Path, identity: dict[str, Any], has_records: bool) -> None:
    """Resume ``path`` only with the policy and settings that wrote it (``identity``); a new file records them."""
    beside = identity_path(path)
    identity = json.loads(json.dumps(identity, sort_keys=True, default=str))  # as the file holds it (lists, str keys)
    if beside.is_file():
        try:
            recorded = json.loads(beside.read_text())
        except (OSError, ValueError):
            recorded = None
        if recorded != identity:
            keys = sorted(k for k in identity if not isinstance(recorded, dict) or recorded.get(k) != identity[k])
            raise ForeignEpisodes(f"{path} holds episodes of another policy or settings ({', '.join(keys) or 'unreadable'} "
                             f"differ, {beside.name}): remove both or use a new --out")
    elif has_records:
        raise ForeignEpisodes(f"{path} holds episodes but not who played them ({beside.name} is missing): remove it or use "
                         "a new --out")
    else:
        atomic_write_json(beside, identity)


def play_episodes(engine, tasks: Sequence[Task], path: Path, *, group_size: int = 1, judge=None, desc: str = "",
          one_pass: bool = False, label_rule: str | None = None, identity: dict[str, Any] | None = None) -> list[dict]:
    """Play ``group_size`` episodes of every task not yet in ``path``, one engine batch at a time; all records.

    ``one_pass``: one episode of every task in one engine pass (:func:`rla_train.cotrainer.play_setup.play_heldout`, the
    trainer's evaluation), written when it ends: a file holding only some of them is refused. ``label_rule``: the
    step labels the judge's votes are recorded beside (:data:`rla_envs.core.labels.LABEL_RULES`; None: the family's
    own default). ``identity``: who plays and how (the policy's fingerprint, the seed, ...), kept beside ``path``
    (:func:`identity_path`): a file another policy or other settings wrote is refused, not resumed.
    """
    records = read_records(path)
    if identity is not None:
        _claim(path, identity, has_records=bool(records))
    if len(records) % group_size:
        raise ForeignEpisodes(f"{path} holds {len(records)} episodes, not whole groups of {group_size}; "
                         "remove it to restart")
    for index, record in enumerate(records):
        expected = tasks[index // group_size].id if index // group_size < len(tasks) else None
        if record.get("task_id") != expected:
            raise ForeignEpisodes(f"{path} line {index + 1} is task {record.get('task_id')!r}, but the task list has "
                             f"{expected!r} there; it belongs to another evaluation: remove it or use a new --out")
    done = len(records) // group_size
    if one_pass:
        if done not in (0, len(tasks)):
            raise ForeignEpisodes(f"{path} holds {done} of {len(tasks)} episodes, but a sampled evaluation plays all in one "
                             "pass; remove it to restart")
        return records or _play_all(engine, tasks, path, judge=judge, desc=desc, label_rule=label_rule)
    chunk = max(1, engine.num_envs // group_size)
    sampling = engine.sampling
    with tqdm(total=len(tasks), initial=done, desc=desc, unit="task", disable=not engine.progress) as bar:
        for first in range(done, len(tasks), chunk):
            batch = list(tasks[first:first + chunk])
            if not sampling.greedy:  # seeded by the batch, so a resumed evaluation samples the same
                engine.sampling = dataclasses.replace(sampling, seed=(engine.seed * 1_000_003 + first) % 2**31)
            episodes = engine.run(batch, group_size=group_size, seed=engine.seed + first * group_size, desc=desc)
            labels = [None] * len(episodes)
            if judge is not None:
                judge.judge(None, episodes)
                labels = [_labels(e, label_rule) for e in episodes]
            new = [_record(e, first * group_size + k, labels[k]) for k, e in enumerate(episodes)]
            append_records(path, new)
            records.extend(new)
            bar.update(len(batch))
    engine.sampling = sampling
    return records


def _play_all(engine, tasks: Sequence[Task], path: Path, *, judge=None, desc: str = "",
              label_rule: str | None = None) -> list[dict]:
    """One episode of every task in one pass, as the trainer evaluates; their records, appended to ``path``."""
    episodes = play_heldout(engine, tasks, desc=desc)
    labels = [None] * len(episodes)
    if judge is not None:
        judge.judge(None, episodes)
        labels = [_labels(e, label_rule) for e in episodes]
    records = [_record(e, k, labels[k]) for k, e in enumerate(episodes)]
    append_records(path, records)
    return records


def _labels(episode, rule: str | None) -> list | None:
    """Expert step labels of an episode under ``rule`` (None for families without them, or an episode that failed)."""
    if episode.error is not None or episode.task is None or not has_step_labels(episode.task.family):
        return None
    return step_labels(episode.task, [str(a) for a in episode.actions], **({} if rule is None else {"rule": rule}))
