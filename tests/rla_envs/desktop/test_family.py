"""DesktopFamily: describe, rewrite, validate and mutate OSWorld tasks (static checks; live ones need a desktop)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rla_envs.core.errors import InvalidTask, RewriteRejected
from rla_envs.core.family import TaskFamily
from rla_envs.core.task import Task, thaw
from rla_envs.desktop.family import HINT_MARKER, DesktopFamily, anchors, split_hints
from rla_envs.desktop.tasks import bundled_tasks
from tests.rla_envs.desktop.conftest import by_osworld_id


def every_app(program: str) -> bool:
    """A desktop that has every app: the static checks test the tasks, not this machine's packages."""
    return True


@pytest.fixture(scope="module")
def family():
    return DesktopFamily(live=False, has_app=every_app)


def test_it_is_a_task_family(family):
    assert isinstance(family, TaskFamily)
    assert family.name == "desktop"


def test_every_bundled_task_validates_statically(family):
    for task in bundled_tasks():
        family.validate(task)


def test_describe_names_the_instruction_evaluator_variants_and_solution(family):
    text = family.describe(by_osworld_id("rla-os-count-errors"))
    assert "Count the lines of /home/user/logs/app.log" in text
    assert "func=exact_match" in text
    assert "ignore_whitespace (level 0)" in text and "In use: exact" in text
    assert "grep -c ERROR" in text  # the scripted solution
    assert '"instruction"' in text  # the answer format


def test_easier_adds_a_hint_and_harder_removes_it(family):
    task = by_osworld_id("rla-mousepad-fix-typos")  # no variants: the hint is the only edit
    easier = family.mutate(task, "easier", np.random.default_rng(0))
    base, hints = split_hints(easier.instruction)
    assert base == task.instruction and hints == ["Three words need fixing, one on each line."]
    assert easier.spec["osworld"]["instruction"] == easier.instruction
    assert easier.parent == task.id and easier.origin == "mutated"
    harder = family.mutate(easier, "harder", np.random.default_rng(0))
    assert harder.instruction == task.instruction
    with pytest.raises(RewriteRejected, match="no easier mutation"):
        family.mutate(easier, "easier", np.random.default_rng(0))  # its one hint is used up
    with pytest.raises(RewriteRejected, match="no harder mutation"):
        family.mutate(task, "harder", np.random.default_rng(0))


def test_mutations_switch_between_declared_evaluator_variants(family):
    task = by_osworld_id("rla-os-count-errors")  # variant "exact" (level 1) in use
    seen = set()
    for seed in range(6):
        easier = family.mutate(task, "easier", np.random.default_rng(seed))
        seen.add(easier.meta["mutation"])
        if easier.meta["mutation"].startswith("variant"):
            raw = thaw(easier.spec["osworld"])
            assert raw["rla_variant"] == "ignore_whitespace"
            assert raw["evaluator"]["result"]["command"].startswith("tr -d")
            back = family.mutate(easier, "harder", np.random.default_rng(0))
            assert thaw(back.spec["osworld"])["evaluator"] == thaw(task.spec["osworld"])["evaluator"]
    assert seen == {"variant exact->ignore_whitespace", "hints 0->1"}


def test_rewrite_changes_the_wording_and_keeps_the_evaluator(family):
    task = by_osworld_id("rla-mousepad-append-line")
    proposal = json.dumps({"instruction": "Append the line 'milk' to /home/user/shopping.txt in the open editor, "
                                          "then save it.", "reasoning": "shorter"})
    new = family.apply_rewrite(task, f"Here you go:\n```json\n{proposal}\n```")
    assert new.instruction.startswith("Append the line 'milk'")
    assert new.origin == "rewritten" and new.parent == task.id
    assert thaw(new.spec["osworld"])["evaluator"] == thaw(task.spec["osworld"])["evaluator"]
    switched = family.apply_rewrite(task, json.dumps({"instruction": new.instruction, "variant": "ignore_blanks"}))
    assert thaw(switched.spec["osworld"])["evaluator"]["options"] == {"ignore_blanks": True}


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    ("no json here", "no JSON object"),
    ('{"instruction": ""}', "non-empty string"),
    ('{"instruction": "Add milk", "gold": 1}', "unknown keys"),
    ('{"instruction": "Add milk to the list and save."}', "drops"),
    ('{"instruction": "Add \'milk\' to /home/user/shopping.txt.", "variant": "fuzzy"}', "not declared"),
])
def test_bad_rewrites_are_rejected_with_the_reason(family, text, fragment):
    with pytest.raises(RewriteRejected, match=fragment):
        family.apply_rewrite(by_osworld_id("rla-mousepad-append-line"), text)


def test_a_rewrite_that_changes_nothing_is_rejected(family):
    task = by_osworld_id("rla-os-make-dirs")
    with pytest.raises(RewriteRejected, match="changes nothing"):
        family.apply_rewrite(task, json.dumps({"instruction": task.instruction}))


def test_validate_refuses_broken_tasks(family):
    task = by_osworld_id("rla-os-count-errors")
    raw = thaw(task.spec["osworld"])

    def variant(**changes) -> Task:
        new_raw = {**raw, **changes}
        return Task(family="desktop", instruction=new_raw["instruction"], spec={"osworld": new_raw})

    with pytest.raises(InvalidTask, match="gives away the expected answer"):
        family.validate(variant(instruction=raw["instruction"] + " (It is 7.)"))
    with pytest.raises(InvalidTask, match="no scripted solution"):
        family.validate(variant(rla_solution=[]))
    with pytest.raises(InvalidTask, match="not runnable"):
        family.validate(variant(config=[{"type": "googledrive", "parameters": {}}]))
    with pytest.raises(InvalidTask, match="does not name a declared variant"):
        family.validate(variant(rla_variant="ignore_whitespace"))  # the evaluator in use is the exact one
    mismatched = Task(family="desktop", instruction="Something else.", spec={"osworld": raw})
    with pytest.raises(InvalidTask, match="differs"):
        family.validate(mismatched)


def test_anchors_are_paths_and_quoted_values():
    assert anchors("Put 'milk' in /home/user/a.txt and \"x y\" in /tmp/b/.") == ["/home/user/a.txt", "/tmp/b/",
                                                                                "milk", "x y"]
    assert HINT_MARKER in HINT_MARKER.join(["a", "b"])


@pytest.mark.desktop
def test_live_validation_plays_the_solution_and_a_no_op(local_provider):
    live = DesktopFamily(provider=local_provider)
    try:
        easier = live.mutate(by_osworld_id("rla-os-make-dirs"), "easier", np.random.default_rng(0))
        assert split_hints(easier.instruction)[1] == ["mkdir -p creates the parent directories too."]
        broken_raw = thaw(easier.spec["osworld"])
        broken_raw["rla_solution"] = ["pyautogui.typewrite('mkdir ~/elsewhere\\n')", "DONE"]
        broken = Task(family="desktop", instruction=easier.instruction, spec={"osworld": broken_raw})
        with pytest.raises(InvalidTask, match="scripted solution scores 0.0"):
            live.validate(broken)
    finally:
        live.close()
