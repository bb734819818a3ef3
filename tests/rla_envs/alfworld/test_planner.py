"""ALFWorld's step-label oracle (the privileged planner) on real (generated) games, through the registry too."""

from __future__ import annotations

import math
import random

import pytest

from rla_envs.alfworld.planner import alfworld_plan, alfworld_step_labels, distance_to_goal
from rla_envs.core.labels import step_labels


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """``{task_type: Task}``: one generated valid_unseen ALFWorld task per type, in a private cache."""
    from rla_envs.alfworld.generated import generated_tasks

    patch = pytest.MonkeyPatch()
    patch.setenv("RLA_CACHE", str(tmp_path_factory.mktemp("rla_cache")))
    try:
        found = generated_tasks("valid_unseen", n_per_type=1, seed=0, workers=2, progress=False)
    finally:
        patch.undo()
    return {t.spec["task_type"]: t for t in found}


def admissible_after(task, actions):
    """The admissible commands after playing ``actions`` (in this process's shared engine)."""
    from rla_envs.alfworld.tasks import game_from_task
    from rla_envs.alfworld.walkthrough import fast_engine

    engine = fast_engine()
    engine.load(game_from_task(task))
    state = engine.reset()
    for action in actions:
        state, _, _ = engine.step(action)
    return state["admissible_commands"]


def test_walkthrough_steps_are_all_good_and_each_saves_one_step(tasks):
    for task_type, task in tasks.items():
        walkthrough = list(task.spec["walkthrough"])
        assert len(alfworld_plan(task, verify=True)) == len(walkthrough), task_type
        assert alfworld_step_labels(task, walkthrough, verify=True) == [True] * len(walkthrough), task_type
    task = tasks["pick_clean_then_place_in_recep"]
    walkthrough = list(task.spec["walkthrough"])
    assert [distance_to_goal(task, walkthrough[:k]) for k in range(len(walkthrough) + 1)] == [6, 5, 4, 3, 2, 1, 0]


def test_detours_are_labelled_by_the_distance(tasks):
    task = tasks["pick_and_place_simple"]  # go to garbagecan 1, take dishsponge 2 ..., go to sinkbasin 1, move ...
    walkthrough = list(task.spec["walkthrough"])
    elsewhere = next(a for a in admissible_after(task, []) if a.startswith("go to ") and a != walkthrough[0])
    # From the middle of the room any "go to" costs one step, so a detour there keeps d = 4 (good);
    # once at the garbage can, walking away makes d grow from 3 to 4 (bad); coming back is good.
    labels = alfworld_step_labels(task, [elsewhere, walkthrough[0], elsewhere, walkthrough[0]], verify=True)
    assert labels == [True, True, False, True]


def test_taking_a_wrong_object_is_bad_and_putting_it_back_is_good_unless_only_records_count(tasks):
    for task in tasks.values():
        walkthrough = list(task.spec["walkthrough"])
        target = task.spec["pddl_params"]["object_target"].lower()
        for k, _action in enumerate(walkthrough):
            wrong = [a for a in admissible_after(task, walkthrough[:k]) if a.startswith("take ")
                     and not a.startswith(f"take {target} ")]
            if wrong:
                break
        else:
            continue
        obj, receptacle = wrong[0][len("take "):].split(" from ")
        actions = walkthrough[:k] + [wrong[0], f"move {obj} to {receptacle}"] + walkthrough[k:]
        labels = alfworld_step_labels(task, actions, verify=True)
        assert labels == [True] * k + [False, True] + [True] * (len(walkthrough) - k)
        # under progress the round trip is a bad step and a good one; under record, two bad ones (no new ground)
        assert (alfworld_step_labels(task, actions, rule="progress")
                == [True] * k + [False, True] + [True] * (len(walkthrough) - k))
        assert (alfworld_step_labels(task, actions, rule="record")
                == [True] * k + [False, False] + [True] * (len(walkthrough) - k))
        return
    pytest.fail("no walkthrough state of the six test games offers a wrong object to take")


def test_no_ops_keep_the_distance_and_steps_after_the_win_are_undetermined(tasks):
    task = tasks["look_at_obj_in_light"]
    walkthrough = list(task.spec["walkthrough"])
    actions = ["dance wildly", "look", walkthrough[0], "inventory"] + walkthrough[1:] + ["look", "look"]
    labels = alfworld_step_labels(task, actions)
    assert len(labels) == len(actions)
    assert labels == [True, True, True, True] + [True] * (len(walkthrough) - 1) + [None, None]


def test_random_walks_get_verified_plans_and_one_label_per_action(tasks):
    rng = random.Random(0)
    for task in (tasks["pick_two_obj_and_place"], tasks["pick_heat_then_place_in_recep"]):
        actions: list[str] = []
        for _ in range(12):
            actions.append(rng.choice(admissible_after(task, actions)))
        labels = alfworld_step_labels(task, actions, verify=True)  # raises PlanCheckFailed on a planner error
        assert len(labels) == len(actions)
        distances = [distance_to_goal(task, actions[:k]) for k in range(len(actions) + 1)]
        assert labels == [after <= before for before, after in zip(distances, distances[1:])]


def test_distance_cap_makes_states_undetermined(tasks):
    task = tasks["pick_two_obj_and_place"]  # 9 steps from the start
    assert distance_to_goal(task, max_expert_steps=8) == math.inf
    assert alfworld_step_labels(task, list(task.spec["walkthrough"][:2]), max_expert_steps=8) == [None, True]


def test_bad_arguments_raise_clear_errors(tasks):
    task = tasks["pick_and_place_simple"]
    with pytest.raises(TypeError, match="AlfWorldEngine"):
        alfworld_step_labels(task, [], env=object())
    # through the registry (the family's step_labels hook), and dicts are accepted
    assert step_labels(task.to_dict(), list(task.spec["walkthrough"])) == [True] * 4
