"""Step labels, the contract of every family's step-label oracle: was each step of a trajectory good?

d(s) is the number of expert steps needed to win from state s (0 once won; :data:`INF` when the expert cannot
win within ``max_expert_steps``). Which steps are good is a rule (:data:`LABEL_RULES`):

* ``no_regress`` (the default until the learning issue's gate B): good when the task stays solvable in no more
  steps than before, ``label[i] = d(s_{i+1}) <= d(s_i)``. A step that changes nothing (``look``, an
  inadmissible command, a ``go to`` a receptacle that does not matter in ALFWorld, where every ``go to`` costs one
  step) is good; only a step away from where the next action had to happen is bad. Measured on a warm-started
  ALFWorld policy's rollouts (64 episodes, 1,638 steps): 77% of steps change nothing, so 92% are "good", and the
  lost episodes' wandering is as good as the won episodes' progress (82% vs 55% of their steps do nothing).
* ``progress``: good when the step brings the goal closer, ``label[i] = d(s_{i+1}) < d(s_i)``: a step that does
  nothing is bad. On the same rollouts 15% of steps are good: 39% of the won episodes' steps, 10% of the lost ones'.
* ``record``: good when the step brings the goal closer than the episode has ever been,
  ``label[i] = d(s_{i+1}) < min(d(s_0), ..., d(s_i))``. Under ``progress`` undoing a step is progress: a policy
  that takes the wrong object and puts it back earns a bad and a good step per round trip, which beats walking
  about (every step bad), and a seed-1 co-training run learned exactly that loop (docs/ablation.md). Here a round
  trip is two bad steps, so no cycle of steps pays more than standing still, and a good step is new ground.

A step taken from a state the expert cannot win from is labelled None (undetermined), as is any action after the
game was won.

A family's oracle (its ``FamilySpec.step_labels`` hook, e.g. :func:`rla_envs.alfworld.planner.alfworld_step_labels`)
measures d along the trajectory and returns :func:`labels_from_distances` of it; :func:`step_labels` asks
the task's family for its oracle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rla_envs.core.registry import families, family_spec
from rla_envs.core.task import Task

__all__ = ["INF", "LABEL_RULES", "StepLabeller", "as_task", "labels_from_distances", "has_step_labels", "step_labels"]

LABEL_RULES = ("no_regress", "progress", "record")
"""What a good step is: the distance to the goal does not grow (``no_regress``), shrinks (``progress``), or falls
below the episode's best so far (``record``)."""

INF = math.inf
"""d(s) of a state the expert cannot win from (within its step budget)."""


def as_task(task: Task | Mapping[str, Any]) -> Task:
    """``task`` as a :class:`Task` (a Task, or its ``to_dict()`` form)."""
    if isinstance(task, Task):
        return task
    if isinstance(task, Mapping):
        return Task.from_dict(task)
    raise TypeError(f"task must be a Task or its dict, got {type(task).__name__}")


def labels_from_distances(distances: Sequence[float | None], rule: str = "no_regress") -> list[bool | None]:
    """Step labels from the distances d(s_0), ..., d(s_T): ``no_regress`` d(s_{i+1}) <= d(s_i), ``progress`` <,
    ``record`` d(s_{i+1}) < the least d of the states before it.

    None where d(s_i) is inf or None (undetermined state), where d(s_{i+1}) is None, and for every step
    after a state with d = 0 (the game was already won). By hand: distances [3, 3, 2, 4, 0] give
    [True, True, False, True] (no_regress) and [False, True, False, True] (progress); [3, 2, 3, 2, 1] give
    [True, False, True, True] (progress: the step back to 2 is progress again) and [True, False, False, True]
    (record). An undetermined state does not set a record.
    """
    if rule not in LABEL_RULES:
        raise ValueError(f"rule must be one of {LABEL_RULES}, got {rule!r}")
    labels: list[bool | None] = []
    best = INF  # the least known distance of the states so far
    for before, after in zip(distances, distances[1:]):
        if before is not None:
            best = min(best, before)
        if before is None or after is None or math.isinf(before) or before == 0:
            labels.append(None)
        elif rule == "record":
            labels.append(after < best)
        else:
            labels.append(after < before if rule == "progress" else after <= before)
    return labels


def has_step_labels(family: str) -> bool:
    """Whether ``family`` (a family name or env id) is registered with a step-label oracle."""
    spec = families().get(family)
    if spec is None:
        try:
            spec = family_spec(family)
        except KeyError:
            return False
    return spec.step_labels is not None


def step_labels(task: Task | Mapping[str, Any], actions: Sequence[str], **options: Any) -> list[bool | None]:
    """Expert step labels (True good, False bad, None undetermined) of ``actions`` played on ``task``.

    Asks the task's family for its oracle (``FamilySpec.step_labels``); ``options`` go to it
    (``rule``, one of :data:`LABEL_RULES`; ``max_expert_steps``; e.g. ``env`` / ``verify`` for ALFWorld's planner).
    """
    task = as_task(task)
    if not has_step_labels(task.family):
        with_labels = sorted(name for name, spec in families().items() if spec.step_labels is not None)
        raise NotImplementedError(f"expert step labels exist for the families {with_labels}; task {task.id} is of "
                                  f"family {task.family!r}, which has no expert that re-plans from a mid-episode "
                                  "state: measure outcome accuracy for it instead")
    return family_spec(task.family).hook("step_labels")(task, actions, **options)


class StepLabeller:
    """``labeller(task, actions) -> labels``: :func:`step_labels` under one rule (picklable, for worker processes).

    The default rule is not passed on, so a family oracle written before rules existed keeps working with it; any
    other rule needs an oracle that takes ``rule`` (the ``FamilySpec.step_labels`` contract).
    """

    def __init__(self, rule: str = "no_regress"):
        if rule not in LABEL_RULES:
            raise ValueError(f"rule must be one of {LABEL_RULES}, got {rule!r}")
        self.rule = rule

    def __call__(self, task: Task | Mapping[str, Any], actions: Sequence[str], **options: Any) -> list[bool | None]:
        if self.rule != LABEL_RULES[0]:
            options["rule"] = self.rule
        return step_labels(task, actions, **options)

    def __repr__(self) -> str:
        return f"StepLabeller({self.rule!r})"
