"""The step-label contract (labels from distances) and the dispatcher that asks the task's family for its oracle."""

from __future__ import annotations

import math

import pytest

from rla_envs.core.labels import has_step_labels, labels_from_distances, step_labels
from rla_envs.core.task import Task


def test_labels_from_distances():
    # d: 3 -> 3 (kept: good) -> 4 (bad) -> 3 (good) -> 0 (won: good) -> None (after the win)
    assert labels_from_distances([3, 3, 4, 3, 0, None]) == [True, False, True, True, None]
    assert labels_from_distances([math.inf, 2, 1]) == [None, True]  # unsolvable state -> undetermined


def test_families_without_an_oracle_are_refused_with_the_families_that_have_one():
    assert has_step_labels("alfworld") and has_step_labels("rla/TextWorld-v0")
    assert not has_step_labels("code") and not has_step_labels("no-such-family")
    other = Task(family="code", instruction="add two numbers", spec={"prompt": "def add(a, b):"})
    with pytest.raises(NotImplementedError, match=r"'alfworld'.*'textworld'.*family 'code'.*outcome accuracy"):
        step_labels(other, ["return a + b"])
    with pytest.raises(TypeError, match="Task or its dict"):
        step_labels("not a task", [])


def test_the_progress_rule_calls_a_step_that_changes_nothing_bad():
    from rla_envs.core.labels import StepLabeller

    # d: 3 -> 3 (nothing changes), 3 -> 2 (closer), 2 -> 4 (away), 4 -> 0 (won)
    assert labels_from_distances([3, 3, 2, 4, 0]) == [True, True, False, True]
    assert labels_from_distances([3, 3, 2, 4, 0], "progress") == [False, True, False, True]
    assert labels_from_distances([float("inf"), 3, 0, 0], "progress") == [None, True, None]
    with pytest.raises(ValueError, match="rule must be one of"):
        labels_from_distances([1, 0], "strict")
    with pytest.raises(ValueError, match="rule must be one of"):
        StepLabeller("strict")


def test_the_record_rule_pays_no_round_trip():
    # d: 3 -> 2 (closer) -> 3 (away) -> 2 (back: progress, but no record) -> 1 (a record)
    assert labels_from_distances([3, 2, 3, 2, 1], "progress") == [True, False, True, True]
    assert labels_from_distances([3, 2, 3, 2, 1], "record") == [True, False, False, True]
    # a loop of any length nets no good step; standing still is bad, as under progress
    assert labels_from_distances([2, 3, 2, 3, 2, 2], "record") == [False] * 5
    # undetermined states are undetermined and set no record; after the win nothing counts
    assert labels_from_distances([None, 2, 3, 1, 0, 0], "record") == [None, False, True, True, None]
    assert labels_from_distances([math.inf, 3, 2], "record") == [None, True]
