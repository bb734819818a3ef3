"""TextWorldFamily hooks: describe, apply_rewrite, validate, mutate."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rla_envs.core import InvalidTask, RewriteRejected, TaskFamily, get_family
from rla_envs.textworld.family import leaks_answer


@pytest.fixture(scope="module")
def family():
    return get_family("textworld")


def test_family_is_registered_and_satisfies_the_protocol(family):
    assert isinstance(family, TaskFamily) and family.name == "textworld"


def test_describe_mentions_goal_solution_and_format(family, tw_tasks):
    text = family.describe(tw_tasks[0])
    assert tw_tasks[0].instruction in text and "Reference solution" in text and '"quest"' in text


def test_validate_accepts_generated_tasks(family, tw_tasks):
    for task in tw_tasks:
        family.validate(task)


def test_validate_rejects_a_changed_instruction(family, tw_tasks):
    task = tw_tasks[0]
    forged = type(task)(family="textworld", instruction="Win.", spec=task.spec)
    with pytest.raises(InvalidTask, match="instruction differs"):
        family.validate(forged)


@pytest.mark.parametrize("direction", ["harder", "easier"])
def test_mutate_returns_a_validated_child(family, tw_tasks, direction):
    task = tw_tasks[0]  # custom-2
    child = family.mutate(task, direction, np.random.default_rng(0))
    assert child.parent == task.id and child.origin == "mutated" and child.id != task.id
    assert child.meta["mutation"] and child.family == "textworld"
    family.validate(child)
    if direction == "harder":
        assert child.meta["expert_steps"] >= task.meta["expert_steps"]
    else:
        assert child.meta["expert_steps"] <= task.meta["expert_steps"]


def test_easier_hints_reveal_the_first_command(family, tw_tasks):
    from rla_envs.core.task import thaw

    task = tw_tasks[1]  # tw-simple
    spec = dict(thaw(task.spec), hints=1)
    child = family._derive(task, spec, origin="mutated", meta={"mutation": "hints 0->1"})
    first = family.describe(task).split("Reference solution")[1]
    assert "Hint: start with" in child.instruction
    assert child.instruction.split("Hint: start with '")[1].split("'")[0] in first
    harder = family.mutate(child, "harder", np.random.default_rng(1))
    assert harder.parent == child.id


@pytest.mark.parametrize("proposal", [
    "", "no json here", "{not json}", "[1, 2]", '{"colour": "blue"}', '{"quest": "go north"}',
    '{"quest": ["fly to the moon"]}', '{"quest": ["look"]}', '{"hints": -1}', '{"settings": {"nb_rooms": "many"}}',
])
def test_apply_rewrite_rejects_garbage(family, tw_tasks, proposal):
    with pytest.raises(RewriteRejected):
        family.apply_rewrite(tw_tasks[0], proposal)


def test_apply_rewrite_builds_a_new_quest(family, tw_tasks, tw_env):
    task = tw_tasks[0]
    _, info = tw_env.reset(options={"task": task})
    moves = [a for a in info["admissible_actions"] if a.startswith("go ")]
    proposal = "Here you go:\n```json\n" + json.dumps({"objective": "Leave this room.", "quest": moves[:1]}) + "\n```"
    new = family.apply_rewrite(task, proposal)
    assert new.origin == "rewritten" and new.parent == task.id and new.instruction == "Leave this room."
    _, info = tw_env.reset(options={"task": new})
    _, reward, terminated, _, info = tw_env.step(moves[0])
    assert reward == 1.0 and terminated


def test_apply_rewrite_rejects_a_leaked_solution(family, tw_tasks, tw_env):
    task = tw_tasks[0]
    tw_env.reset(options={"task": task})
    solution = tw_env.walkthrough
    with pytest.raises(RewriteRejected, match="whole solution"):
        family.apply_rewrite(task, json.dumps({"objective": "Type: " + "; ".join(solution)}))


def test_leaks_answer():
    assert leaks_answer("first open box, then take key from box", ["open box", "take key from box"])
    assert not leaks_answer("take key from box, then open box", ["open box", "take key from box"])
    assert not leaks_answer("open the box", ["open box"])  # one-command quests are exempt
