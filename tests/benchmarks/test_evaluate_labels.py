"""benchmarks.evaluate scores the judge against the step labels of the run's rule, not the oracle's first rule."""

from __future__ import annotations

from types import SimpleNamespace

from benchmarks.evaluate.episodes import _labels
from rla_envs.core.labels import step_labels
from tests.rla_train.cotrainer.test_toy_family import corridor_tasks


def test_the_labels_recorded_follow_the_rule_asked_for():
    task = corridor_tasks()[0]
    episode = SimpleNamespace(error=None, task=task, actions=["wait", "forward", "wait"])
    progress, no_regress = _labels(episode, "progress"), _labels(episode, "no_regress")
    assert progress == step_labels(task, episode.actions, rule="progress") == [False, True, False]
    assert no_regress == step_labels(task, episode.actions, rule="no_regress") == [True, True, True]
    assert _labels(SimpleNamespace(error="crashed", task=task, actions=[]), "progress") is None
