"""Task: frozen, JSON round-trip, content-hash ids."""

import json

import pytest

from rla_envs.core import InvalidTask, Task


def make_task(**overrides):
    fields = dict(family="alfworld", instruction="put a clean apple in fridge",
                  spec={"pddl_problem": "(define ...)", "walkthrough": ["go to fridge 1"], "nested": {"b": 1, "a": [1, 2]}},
                  meta={"split": "train"})
    fields.update(overrides)
    return Task(**fields)


def test_same_content_gives_same_id_and_key_order_does_not_matter():
    a = make_task()
    b = make_task(spec={"nested": {"a": [1, 2], "b": 1}, "walkthrough": ["go to fridge 1"], "pddl_problem": "(define ...)"})
    assert a.id == b.id
    assert a.id.startswith("alfworld:") and len(a.id) == len("alfworld:") + 16


def test_id_depends_on_instruction_and_spec_but_not_on_meta_or_lineage():
    base = make_task()
    assert make_task(instruction="put a hot apple in fridge").id != base.id
    assert make_task(spec={"pddl_problem": "(other)"}).id != base.id
    assert make_task(meta={"split": "valid_seen"}, origin="mutated", parent="alfworld:x").id == base.id


def test_json_round_trip_is_exact():
    task = make_task(parent="alfworld:0123456789abcdef", origin="mutated")
    again = Task.from_json(task.to_json())
    assert again == task and again.id == task.id
    assert json.loads(task.to_json())["spec"]["nested"]["a"] == [1, 2]


def test_task_is_frozen_deeply_and_hashable():
    task = make_task()
    with pytest.raises(AttributeError):
        task.instruction = "x"
    with pytest.raises(TypeError):
        task.spec["pddl_problem"] = "x"
    assert isinstance(task.spec["nested"]["a"], tuple)
    assert len({task, make_task()}) == 1


def test_explicit_id_is_kept():
    task = make_task(id="bundled:fizzbuzz")
    assert task.id == "bundled:fizzbuzz"
    assert Task.from_dict(task.to_dict()).id == "bundled:fizzbuzz"


@pytest.mark.parametrize("bad, message", [
    (dict(origin="invented"), "origin"),
    (dict(spec=["not", "a", "dict"]), "spec"),
    (dict(spec={"f": object()}), "JSON"),
    (dict(family=""), "family"),
])
def test_bad_fields_raise_invalid_task_with_reason(bad, message):
    with pytest.raises(InvalidTask, match=message):
        make_task(**bad)


def test_from_dict_names_missing_and_unknown_keys():
    with pytest.raises(InvalidTask, match="missing"):
        Task.from_dict({"family": "alfworld"})
    with pytest.raises(InvalidTask, match="unknown"):
        Task.from_dict(dict(make_task().to_dict(), colour="red"))


def test_derive_sets_parent_and_merges_meta():
    parent = make_task()
    child = parent.derive(instruction="put two apples in fridge", spec={"pddl_problem": "(x)"}, origin="mutated",
                          meta={"mutation": "more_targets"})
    assert child.parent == parent.id and child.origin == "mutated"
    assert child.meta["split"] == "train" and child.meta["mutation"] == "more_targets"
