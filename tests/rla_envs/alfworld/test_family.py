"""ALFWorld curriculum hooks: describe, apply_rewrite, validate and mutate on real generated games."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rla_envs.core.errors import InvalidTask, RewriteRejected
from rla_envs.core.family import TaskFamily, get_family
from rla_envs.core.task import Task, thaw
from rla_envs.alfworld import goals
from rla_envs.alfworld import mutations as mut
from rla_envs.alfworld.family import AlfWorldFamily
from rla_envs.alfworld.scene import display_names, goal_text
from rla_envs.alfworld.tasks import game_from_scene, scene_from_task, task_from_game


@pytest.fixture(scope="module")
def family() -> AlfWorldFamily:
    return AlfWorldFamily()


@pytest.fixture(scope="module")
def by_type(alfworld_tasks) -> dict[str, Task]:
    return {t.spec["task_type"]: t for t in alfworld_tasks}


@pytest.fixture(scope="module")
def simple(by_type) -> Task:
    return by_type["pick_and_place_simple"]


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def copies(task: Task):
    """(scene, target copies) of a task."""
    scene = scene_from_task(task)
    return scene, mut.target_copies(scene)


def assert_derived(new: Task, parent: Task, origin: str, family: AlfWorldFamily) -> None:
    assert new.origin == origin and new.parent == parent.id and new.id != parent.id
    assert new.instruction == new.spec["goal"]
    family.validate(new)  # mutate/apply_rewrite validated it; a second look must agree


def task_with_goal_text(task: Task, text: str, **meta) -> Task:
    """The same scene and walkthrough under another goal sentence."""
    scene = scene_from_task(task)
    scene.goal.text = text
    game = game_from_scene(scene, walkthrough=list(task.spec["walkthrough"]))
    return task_from_game(game, meta={**thaw(task.meta), **meta})


# ------------------------------------------------------------------------------------------ basics

def test_family_is_registered_and_follows_the_protocol():
    family = get_family("alfworld")
    assert isinstance(family, AlfWorldFamily) and isinstance(family, TaskFamily) and family.name == "alfworld"


def test_validate_accepts_every_generated_task(family, alfworld_tasks):
    for task in alfworld_tasks:
        family.validate(task)


def test_describe_lists_goal_room_candidates_and_answer_format(family, by_type, simple):
    text = family.describe(simple)
    scene = scene_from_task(simple)
    names = display_names(scene)
    assert simple.instruction in text and simple.spec["task_type"] in text
    assert all(names[r.id] in text for r in scene.receptacles)
    assert "Possible swaps" in text and '"receptacle"' in text and '"object"' in text
    assert f"takes {len(simple.spec['walkthrough'])} commands" in text
    look = family.describe(by_type["look_at_obj_in_light"])
    assert '"toggle"' in look and '"receptacle"' not in look


# ------------------------------------------------------------------------------------------ mutate

def test_hide_in_closed_receptacle_puts_every_target_behind_a_door(family, simple):
    scene, before = copies(simple)
    assert any(not mut.is_closed(scene.receptacle(o.receptacle)) for o in before), "fixture: a target in view"
    new = family.mutate(simple, "harder", rng(), only=["hide_in_closed_receptacle"])
    assert_derived(new, simple, "mutated", family)
    assert new.meta["mutation"] == "hide_in_closed_receptacle" and new.meta["direction"] == "harder"
    scene, after = copies(new)
    assert len(after) == len(before) and all(mut.is_closed(scene.receptacle(o.receptacle)) for o in after)
    assert any(c.startswith("open ") for c in new.spec["walkthrough"])


def test_target_copies_go_up_when_easier_and_down_when_harder(family, simple):
    more = family.mutate(simple, "easier", rng(), only=["more_target_copies"])
    assert_derived(more, simple, "mutated", family)
    fewer = family.mutate(more, "harder", rng(), only=["fewer_target_copies"])
    assert_derived(fewer, more, "mutated", family)
    counts = [len(copies(t)[1]) for t in (simple, more, fewer)]
    assert counts[1] > counts[0] and counts[2] == counts[1] - 1
    assert fewer.meta["mutations"] == ("more_target_copies", "fewer_target_copies")


def test_fewer_copies_never_goes_below_what_the_goal_needs(family, by_type):
    task = by_type["pick_two_obj_and_place"]
    current = task
    for _ in range(len(copies(task)[1]) - 2):
        current = family.mutate(current, "harder", rng(), only=["fewer_target_copies"])
    assert len(copies(current)[1]) == 2
    with pytest.raises(RewriteRejected, match="applies"):
        family.mutate(current, "harder", rng(), only=["fewer_target_copies"])


def test_easier_mutations_bring_hidden_targets_into_view(family, simple):
    hidden = family.mutate(simple, "harder", rng(), only=["hide_in_closed_receptacle"])
    shown = family.mutate(hidden, "easier", rng(), only=["place_in_open_receptacle"])
    assert_derived(shown, hidden, "mutated", family)
    scene, targets = copies(shown)
    assert targets and not any(mut.is_closed(scene.receptacle(o.receptacle)) for o in targets)
    opened = family.mutate(hidden, "easier", rng(), only=["open_target_receptacles"])
    scene, targets = copies(opened)
    assert all(scene.receptacle(o.receptacle).opened for o in targets)
    assert not any(c.startswith("open ") for c in opened.spec["walkthrough"])


def test_distractors_are_unrelated_to_the_goal_and_can_be_removed(family, by_type):
    task = by_type["pick_heat_then_place_in_recep"]
    before = scene_from_task(task)
    new = family.mutate(task, "harder", rng(), only=["add_distractors"])
    assert_derived(new, task, "mutated", family)
    after = scene_from_task(new)
    added = [o for o in after.objects if o.id not in {b.id for b in before.objects}]
    target = before.goal.object_target.lower()
    assert 2 <= len(added) <= 4
    assert all(target not in o.type.lower() and o.type.lower() not in target for o in added)
    kitchen = scene_from_task(by_type["pick_and_place_simple"])
    assert kitchen.objects_of_type("ButterKnife"), "fixture: a kitchen with a butter knife"
    kitchen.goal.object_target = "Knife"  # a butter knife would be a fair reading of "knife": not a distractor
    kinds = mut.distractor_types(kitchen)
    assert kinds and not [t for t in kinds if "knife" in t.lower()]
    fewer = family.mutate(new, "easier", rng(), only=["remove_distractors"])
    assert len(scene_from_task(fewer).objects) < len(after.objects)
    assert len(mut.target_copies(scene_from_task(fewer))) == len(mut.target_copies(after))


def test_scene_size_grows_when_harder_and_shrinks_when_easier(family, by_type):
    task = by_type["pick_cool_then_place_in_recep"]
    size = len(scene_from_task(task).receptacles)
    bigger = family.mutate(task, "harder", rng(), only=["add_receptacles"])
    smaller = family.mutate(task, "easier", rng(), only=["remove_empty_receptacles"])
    assert_derived(bigger, task, "mutated", family)
    assert_derived(smaller, task, "mutated", family)
    assert len(scene_from_task(bigger).receptacles) > size > len(scene_from_task(smaller).receptacles)


def test_a_hint_names_where_the_target_is_and_stays_true_through_later_edits(family, simple):
    hinted = family.mutate(simple, "easier", rng(), only=["hint_in_goal"])
    assert_derived(hinted, simple, "mutated", family)
    taken_from = mut.hint_receptacles(list(hinted.spec["walkthrough"]))
    assert list(hinted.meta["hint"]) == taken_from
    assert hinted.instruction.endswith(mut.HINT_MARK + taken_from[0])
    moved = family.mutate(hinted, "harder", rng(), only=["hide_in_closed_receptacle"])
    assert_derived(moved, hinted, "mutated", family)  # the hint was rewritten for the new place
    assert list(moved.meta["hint"]) == mut.hint_receptacles(list(moved.spec["walkthrough"]))
    assert moved.meta["hint"] != hinted.meta["hint"]
    plain = family.mutate(moved, "harder", rng(), only=["remove_hint"])
    assert plain.meta["hint"] is None and mut.HINT_MARK not in plain.instruction
    family.validate(plain)


@pytest.mark.parametrize("direction", ["harder", "easier"])
def test_mutate_is_seeded(family, by_type, direction):
    task = by_type["pick_clean_then_place_in_recep"]
    first, again = family.mutate(task, direction, rng(3)), family.mutate(task, direction, rng(3))
    assert first == again and first.meta["mutation"] in mut.CATALOGUE[direction]


def test_mutate_refuses_bad_requests(family, simple):
    with pytest.raises(ValueError, match="direction"):
        family.mutate(simple, "sideways", rng())
    with pytest.raises(ValueError, match="unknown harder mutations"):
        family.mutate(simple, "harder", rng(), only=["hint_in_goal"])
    with pytest.raises(RewriteRejected, match="no harder mutation.*remove_hint applies"):
        family.mutate(simple, "harder", rng(), only=["remove_hint"])  # it has no hint to remove


# ------------------------------------------------------------------------------------------ apply_rewrite

def _swap(task: Task) -> tuple[str, str]:
    """An (object, receptacle) pair the scene allows that differs from the task's goal in both types."""
    scene = scene_from_task(task)
    for otype in goals.object_types(scene):
        choices = [r for r in goals.destination_types(scene, otype) if r != scene.goal.parent_target]
        if otype != scene.goal.object_target and choices:
            return otype, choices[0]
    raise AssertionError("fixture: no allowed swap in the scene")


def test_apply_rewrite_reads_a_json_proposal_inside_prose(family, simple):
    otype, rtype = _swap(simple)
    text = f'The agent always wins. Try:\n```json\n{json.dumps({"object": otype, "receptacle": rtype})}\n```\nThanks'
    new = family.apply_rewrite(simple, text)
    assert_derived(new, simple, "rewritten", family)
    assert new.spec["pddl_params"]["object_target"] == otype and new.spec["pddl_params"]["parent_target"] == rtype
    assert new.spec["walkthrough"] != simple.spec["walkthrough"]
    assert otype.lower() in new.instruction and rtype.lower() in new.instruction
    assert new.meta["rewrite"]["from"]["object_target"] == simple.spec["pddl_params"]["object_target"]


def test_apply_rewrite_reads_plain_lines_with_everyday_names(family, simple):
    otype, rtype = _swap(simple)
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", rtype).lower()  # "CoffeeMachine" -> "coffee machine"
    new = family.apply_rewrite(simple, f"- **Object**: {otype.lower()}s\n- receptacle: {spaced} 1\n")
    assert (new.spec["pddl_params"]["object_target"], new.spec["pddl_params"]["parent_target"]) == (otype, rtype)


def test_apply_rewrite_swaps_the_lamp_of_a_look_task(family, by_type):
    task = by_type["look_at_obj_in_light"]
    scene = scene_from_task(task)
    other = next(t for t in goals.object_types(scene) if t != scene.goal.object_target)
    new = family.apply_rewrite(task, json.dumps({"object": other, "toggle": "same"}))
    assert new.spec["pddl_params"]["object_target"] == other
    assert new.instruction == goal_text(scene_from_task(new).goal, goals.template_index(scene.goal))


def _rejections(task: Task) -> list[tuple[str, str]]:
    scene = scene_from_task(task)
    goal = scene.goal
    absent = next(t for t in ("Laptop", "Pillow", "BasketBall", "Apple", "Mug") if not scene.objects_of_type(t))
    wrong_home = next(r.type for r in scene.receptacles if not mut.can_hold(r.type, goal.object_target))
    return [
        ("", "unparseable"),
        ("please make it harder", "unparseable"),
        ('{"object": ["Mug"]}', "unparseable"),
        ('{"object": "spaceship"}', "unknown type"),
        (f'{{"object": "{absent}"}}', "not in scene"),
        (f"receptacle: {wrong_home}", "cannot contain"),
        ('{"object": "CounterTop"}', "not an object"),
        (json.dumps({"object": goal.object_target, "receptacle": goal.parent_target}), "unchanged"),
    ]


def test_apply_rewrite_rejects_with_the_reason(family, simple):
    for text, reason in _rejections(simple):
        with pytest.raises(RewriteRejected, match=f"^{reason}"):
            family.apply_rewrite(simple, text)


def test_apply_rewrite_rejects_a_goal_that_holds_at_the_start(family, simple):
    scene, targets = copies(simple)
    home = scene.receptacle(targets[0].receptacle).type
    with pytest.raises(RewriteRejected, match="^already satisfied"):
        family.apply_rewrite(simple, f"receptacle: {home}")


def test_apply_rewrite_rejects_a_role_the_task_type_lacks(family, by_type):
    with pytest.raises(RewriteRejected, match="no destination"):
        family.apply_rewrite(by_type["look_at_obj_in_light"], '{"receptacle": "Desk"}')


def test_apply_rewrite_rejects_what_the_engine_cannot_win(family, simple, monkeypatch):
    from rla_envs.alfworld import family as family_module

    def lose(game, commands):
        raise InvalidTask("the walkthrough does not win the game")

    monkeypatch.setattr(family_module, "_play_walkthrough", lose)
    otype, rtype = _swap(simple)
    with pytest.raises(RewriteRejected, match="^not winnable: the walkthrough does not win"):
        family.apply_rewrite(simple, json.dumps({"object": otype, "receptacle": rtype}))


def test_parse_proposal_and_type_names():
    assert goals.parse_proposal('x {"object_target": "Mug", "parent": "coffee machine"} y') == {
        "object": "Mug", "receptacle": "coffee machine"}
    assert goals.parse_proposal('{"rewrite": {"object": "Apple", "receptacle": null}}') == {"object": "Apple"}
    assert goals.parse_proposal("Object = `apple`.\nReceptacle: unchanged\nLamp: floor lamp") == {
        "object": "apple", "toggle": "floor lamp"}
    names = {"coffee machine": "CoffeeMachine", "Mugs": "Mug", "cabinet 2": "Cabinet", "tomatoes": "Tomato",
             "the sink": "SinkBasin", "COUNTERTOP": "CounterTop", "desk lamp": "DeskLamp"}
    assert {name: goals.resolve_type(name, "object") for name in names} == names
    with pytest.raises(RewriteRejected, match="unknown type 'tomatoe'.*Tomato"):
        goals.resolve_type("tomatoe", "object")


# ------------------------------------------------------------------------------------------ validate

def test_validate_rejects_a_walkthrough_that_no_longer_wins(family, simple):
    data = simple.to_dict()
    data["spec"]["walkthrough"] = data["spec"]["walkthrough"][:-1]
    with pytest.raises(InvalidTask, match="does not win"):
        family.validate(Task.from_dict({**data, "id": ""}))
    data["spec"]["walkthrough"] = ["jump over the fridge", *simple.spec["walkthrough"]]
    with pytest.raises(InvalidTask, match="not admissible"):
        family.validate(Task.from_dict({**data, "id": ""}))


def test_validate_rejects_an_instruction_that_names_the_hiding_place(family, simple):
    scene, targets = copies(simple)
    place = display_names(scene)[targets[0].receptacle]
    leaky = task_with_goal_text(simple, f"{simple.instruction}, you will find it in the {place.split()[0]}")
    with pytest.raises(InvalidTask, match=f"names where.*{place}"):
        family.validate(leaky)


def test_validate_accepts_a_declared_hint_only_when_it_is_true(family, simple):
    hinted = family.mutate(simple, "easier", rng(), only=["hint_in_goal"])
    undeclared = Task.from_dict({**hinted.to_dict(), "id": "", "meta": {**thaw(hinted.meta), "hint": None}})
    with pytest.raises(InvalidTask, match="names where"):
        family.validate(undeclared)
    scene, targets = copies(simple)
    names = display_names(scene)
    empty = next(names[r.id] for r in scene.receptacles if not any(o.receptacle == r.id for o in targets))
    lying = task_with_goal_text(simple, mut.with_hint(simple.instruction, [empty]), hint=[empty])
    with pytest.raises(InvalidTask, match="the hint names"):
        family.validate(lying)


def test_validate_rejects_a_goal_that_holds_at_the_start(family, simple):
    scene, targets = copies(simple)
    targets[0].receptacle = scene.receptacles_of_type(scene.goal.parent_target)[0].id
    game = game_from_scene(scene, walkthrough=list(simple.spec["walkthrough"]))
    with pytest.raises(InvalidTask, match="already holds at the start"):
        family.validate(task_from_game(game))


@pytest.mark.parametrize("change, reason", [
    (lambda d: d["spec"].pop("walkthrough"), "incomplete spec"),
    (lambda d: d.update(instruction="put a mug somewhere"), "differs from the goal"),
    (lambda d: d["spec"]["pddl_params"].update(object_target="Mug"), "PDDL goal asks for"),
    (lambda d: d["spec"].update(task_type="juggle"), "unknown task type"),
    (lambda d: d["spec"].update(pddl_problem=d["spec"]["pddl_problem"].replace(
        "(:init", "(:init (inReceptacle Ghost_bar_1 Ghost_bar_2)", 1)), "does not load in the engine"),
    (lambda d: d["spec"].update(goal=d["instruction"] + " #now#") or d.update(instruction=d["spec"]["goal"]),
     "characters the text grammar"),
])
def test_validate_rejects_malformed_tasks(family, simple, change, reason):
    data = simple.to_dict()
    change(data)
    with pytest.raises(InvalidTask, match=reason):
        family.validate(Task.from_dict({**data, "id": ""}))


def test_validate_can_require_the_searching_expert(by_type):
    strict = AlfWorldFamily(check_expert=True)
    strict.validate(by_type["pick_two_obj_and_place"])
    with pytest.raises(InvalidTask, match="hand-coded expert does not win"):
        AlfWorldFamily(check_expert=True, expert_steps=2).validate(by_type["pick_two_obj_and_place"])


# ------------------------------------------------------------------------------------------ sweep

@pytest.mark.slow
def test_most_tasks_have_a_valid_mutation_each_way(alfworld_cache):
    """Over 30 generated train tasks, each direction yields a validated mutation for >= 90% of them."""
    from rla_envs.alfworld.generated import generated_tasks

    family = AlfWorldFamily(check_expert=True)
    tasks = generated_tasks("train", n_per_type=5, seed=0, workers=2, progress=False)
    for direction in ("harder", "easier"):
        made = 0
        for index, task in enumerate(tasks):
            try:
                family.mutate(task, direction, rng(index))
                made += 1
            except RewriteRejected:
                pass
        assert made >= 0.9 * len(tasks), f"{direction}: {made}/{len(tasks)}"
