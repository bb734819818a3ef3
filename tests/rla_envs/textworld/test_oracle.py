"""TextWorld's step-label oracle (textworld's re-planning expert), asked through the family registry."""

from __future__ import annotations

from rla_envs.core.labels import step_labels
from rla_envs.textworld.env import TextWorldEnv
from rla_envs.textworld.tasks import default_tasks


def test_textworld_labels_follow_textworlds_replanning_expert(tmp_path, monkeypatch):
    monkeypatch.setenv("RLA_CACHE", str(tmp_path))
    task = default_tasks(games_per_level=1, levels=["custom-1"], progress=False)[0]  # ~2 s to generate
    walkthrough = list(_walkthrough(task))
    assert step_labels(task, walkthrough) == [True] * len(walkthrough)
    # "look" changes nothing (good); the walkthrough then still wins; a command after the win has no label
    assert step_labels(task, ["look"] + walkthrough + ["look"]) == [True] * (len(walkthrough) + 1) + [None]


def _walkthrough(task):
    env = TextWorldEnv(tasks=[task])
    try:
        env.reset(options={"task": task})
        return env.unwrapped.walkthrough
    finally:
        env.close()
