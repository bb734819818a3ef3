"""Diagnosis-guided mutation: the pure mapping (hand-built diagnoses -> ranked edits) and mutate with it."""

from __future__ import annotations

import numpy as np
import pytest

from rla_envs.alfworld import mutations as mut
from rla_envs.alfworld.guidance import (CUE_KINDS, EASIER_EDITS, HARDER_EDITS, Cue, action_kind, guided_edits,
                                        read_diagnosis)

NOT_FOUND = "3/4 failed runs never found the apple"
NOT_TAKEN = "1/4 failed runs saw the apple but never took it"
OUT_OF_STEPS = "4/4 failed runs ran out of steps (30 steps)"
LOOPED = "2/4 failed runs looped over repeated states (e.g. 'go to cabinet 1' x3 with the same result)"
RULE_JUDGED = "2/4 failed runs had steps judged wrong (first: step 3 'go to cabinet 2', 4 in all)"
RM_TAKE = ("2/4 failed runs: step judged bad by all 3 judgments: 'take mug 1 from countertop 1' (x2 in all) "
           "— the goal asks for an 'apple'")
RM_HEAT = "3/4 failed runs: step judged bad by all 3 judgments: \"heat it's 1 with microwave 1\""


# ------------------------------------------------------------------------------------------ reading

def test_rule_diagnoser_sentences_become_cues_with_the_share_of_failed_runs():
    assert read_diagnosis(NOT_FOUND) == [Cue("not_found", 0.75, NOT_FOUND)]
    assert read_diagnosis(NOT_TAKEN) == [Cue("not_taken", 0.25, NOT_TAKEN)]
    assert read_diagnosis(OUT_OF_STEPS) == [Cue("out_of_steps", 1.0, OUT_OF_STEPS)]
    # the quoted action of a loop is not a judged step: only the loop counts
    assert read_diagnosis(LOOPED) == [Cue("looped", 0.5, LOOPED)]
    assert read_diagnosis(RULE_JUDGED) == [Cue("bad_search", 0.5, RULE_JUDGED, "go to cabinet 2")]
    assert read_diagnosis("repeated invalid actions (e.g. 3 invalid)") == [
        Cue("invalid", 1.0, "repeated invalid actions (e.g. 3 invalid)")]  # no "k/n": the share is 1


def test_reward_model_sentences_give_the_judged_action_in_either_quote():
    assert read_diagnosis(RM_TAKE) == [Cue("bad_take", 0.5, RM_TAKE, "take mug 1 from countertop 1")]
    assert read_diagnosis(RM_HEAT) == [Cue("bad_treatment", 0.75, RM_HEAT, "heat it's 1 with microwave 1")]


def test_unknown_sentences_and_unknown_verbs_give_no_cue():
    assert read_diagnosis("the agent was unlucky") == []
    assert read_diagnosis("1/2 failed runs: step judged bad by the judgment: 'inventory please'") == [
        Cue("bad_search", 0.5, "1/2 failed runs: step judged bad by the judgment: 'inventory please'",
            "inventory please")]
    assert read_diagnosis("1/2 failed runs: step judged bad by the judgment: 'dance'") == []
    assert read_diagnosis("1/2 failed runs: step judged bad, no quote") == []
    with pytest.raises(TypeError, match="must be a str"):
        read_diagnosis(3)


@pytest.mark.parametrize("action, kind", [
    ("go to cabinet 2", "bad_search"), ("open drawer 1", "bad_search"), ("examine sidetable 1", "bad_search"),
    ("take apple 1 from countertop 1", "bad_take"), ("move apple 1 to fridge 1", "bad_place"),
    ("put apple 1 in/on fridge 1", "bad_place"), ("clean apple 1 with sinkbasin 1", "bad_treatment"),
    ("use desklamp 1", "bad_treatment"), ("  Heat   apple 1 with microwave 1", "bad_treatment"),
    ("gothrough the door", None)])
def test_action_kind_reads_the_verb(action, kind):
    assert action_kind(action) == kind


# ------------------------------------------------------------------------------------------ ranking

def test_easier_ranks_specific_cues_first_then_by_share():
    # not_found (specific, 3/4) > bad_take (specific, 2/4) > out_of_steps (generic, although 4/4)
    edits = guided_edits([OUT_OF_STEPS, RM_TAKE, NOT_FOUND], "easier")
    assert list(edits) == ["more_target_copies", "hint_in_goal", "place_in_open_receptacle",
                           "open_target_receptacles", "remove_distractors", "remove_empty_receptacles"]
    assert edits["place_in_open_receptacle"] == [NOT_FOUND]
    assert edits["more_target_copies"] == [NOT_FOUND, RM_TAKE, OUT_OF_STEPS]  # every diagnosis that asked for it
    assert edits["remove_empty_receptacles"] == [OUT_OF_STEPS]


def test_easier_for_a_wrong_take_removes_distractors_first():
    assert list(guided_edits([RM_TAKE], "easier")) == ["remove_distractors", "more_target_copies"]
    assert list(guided_edits([NOT_TAKEN], "easier")) == ["more_target_copies", "remove_distractors"]
    assert list(guided_edits([LOOPED], "easier")) == ["remove_empty_receptacles", "hint_in_goal"]


def test_harder_pushes_on_the_weakness_the_failures_show():
    assert list(guided_edits([NOT_FOUND], "harder")) == [
        "hide_in_closed_receptacle", "move_to_crowded_receptacle", "add_receptacles", "fewer_target_copies"]
    assert list(guided_edits([RM_TAKE], "harder")) == ["add_distractors", "fewer_target_copies"]


def test_treatment_cues_count_only_for_task_types_with_a_treatment():
    assert list(guided_edits([RM_HEAT], "easier", task_type="pick_heat_then_place_in_recep")) == [
        "hint_in_goal", "remove_distractors"]
    assert guided_edits([RM_HEAT], "easier", task_type="pick_and_place_simple") == {}
    assert list(guided_edits([RM_HEAT], "easier")) == ["hint_in_goal", "remove_distractors"]  # type unknown


def test_no_understood_diagnosis_gives_no_guidance_and_bad_arguments_are_refused():
    assert guided_edits([], "easier") == {}
    assert guided_edits(["the agent was unlucky"], "harder") == {}
    with pytest.raises(ValueError, match="direction must be one of"):
        guided_edits([NOT_FOUND], "sideways")
    with pytest.raises(TypeError, match="wrap it in a list"):
        guided_edits(NOT_FOUND, "easier")


def test_every_cue_kind_maps_to_catalogue_edits_of_its_direction():
    for table, direction in ((EASIER_EDITS, "easier"), (HARDER_EDITS, "harder")):
        assert set(table) == set(CUE_KINDS)
        assert all(name in mut.CATALOGUE[direction] for names in table.values() for name in names)


# ------------------------------------------------------------------------------------------ mutate

@pytest.fixture(scope="module")
def family():
    from rla_envs.alfworld.family import AlfWorldFamily

    return AlfWorldFamily()


@pytest.fixture(scope="module")
def simple(alfworld_tasks):
    return next(t for t in alfworld_tasks if t.spec["task_type"] == "pick_and_place_simple")


@pytest.fixture(scope="module")
def hidden(family, simple):
    """The simple task with every target copy behind a closed door."""
    return family.mutate(simple, "harder", np.random.default_rng(0), only=["hide_in_closed_receptacle"])


def test_guided_mutate_makes_the_edit_the_diagnosis_asks_for_whatever_the_seed(family, simple, hidden):
    chosen = set()
    for seed in range(3):
        new = family.mutate(simple, "easier", np.random.default_rng(seed), diagnoses=[RM_TAKE])
        assert new.meta["mutation"] == "remove_distractors"  # the first guided edit, and it applies
        assert list(new.meta["guided_by"]) == [RM_TAKE]
        assert list(new.meta["guidance"]) == list(guided_edits([RM_TAKE], "easier"))
        family.validate(new)
        chosen.add(family.mutate(simple, "easier", np.random.default_rng(seed)).meta["mutation"])
    assert chosen != {"remove_distractors"}  # unguided, the seed decides (so the guided choice is not luck)
    found = family.mutate(hidden, "easier", np.random.default_rng(0), diagnoses=[NOT_FOUND])
    assert found.meta["mutation"] == "more_target_copies" and list(found.meta["guided_by"]) == [NOT_FOUND]


def test_guided_mutate_skips_guided_edits_that_do_not_apply_and_falls_back(family, hidden):
    shown = family.mutate(hidden, "easier", np.random.default_rng(0), only=["place_in_open_receptacle"])
    # every target is in view now: neither guided edit below applies, so the unguided one is made
    only = ["place_in_open_receptacle", "open_target_receptacles", "remove_empty_receptacles"]
    new = family.mutate(shown, "easier", np.random.default_rng(0), only=only, diagnoses=[NOT_FOUND])
    assert new.meta["mutation"] == "remove_empty_receptacles"
    assert list(new.meta["guided_by"]) == [] and list(new.meta["guidance"]) == ["place_in_open_receptacle",
                                                                    "open_target_receptacles"]
    # a later unguided mutation does not inherit the parent's guidance
    later = family.mutate(new, "harder", np.random.default_rng(0), only=["add_distractors"])
    assert list(later.meta["guided_by"]) == [] and list(later.meta["guidance"]) == []


def test_guided_mutate_is_deterministic_and_harder_follows_the_diagnosis(family, simple):
    diagnoses = [OUT_OF_STEPS, NOT_FOUND]
    first = family.mutate(simple, "harder", np.random.default_rng(5), diagnoses=diagnoses)
    again = family.mutate(simple, "harder", np.random.default_rng(5), diagnoses=diagnoses)
    assert first == again
    assert first.meta["mutation"] in HARDER_EDITS["not_found"]
    assert list(first.meta["guided_by"]) == [NOT_FOUND, OUT_OF_STEPS][: len(first.meta["guided_by"])]


def test_without_diagnoses_mutate_is_unchanged(family, simple):
    for direction in ("easier", "harder"):
        plain = family.mutate(simple, direction, np.random.default_rng(3))
        assert plain == family.mutate(simple, direction, np.random.default_rng(3), diagnoses=())
        assert "guided_by" not in plain.meta and "guidance" not in plain.meta
        # diagnoses that ask for nothing keep the rng's order: the same task, only the record differs
        unread = family.mutate(simple, direction, np.random.default_rng(3), diagnoses=["the agent was unlucky"])
        assert unread.id == plain.id
        assert list(unread.meta["guided_by"]) == [] and list(unread.meta["guidance"]) == []
    with pytest.raises(TypeError, match="wrap it in a list"):
        family.mutate(simple, "easier", np.random.default_rng(0), diagnoses=NOT_FOUND)
