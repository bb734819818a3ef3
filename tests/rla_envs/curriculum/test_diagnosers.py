"""RuleDiagnoser on hand-built trajectories: each rule fires on its pattern and stays quiet otherwise."""

from __future__ import annotations

import pytest

from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory
from rla_envs.curriculum.diagnosers import Diagnoser, RuleDiagnoser, target_object

TASK = Task(family="alfworld", instruction="put a clean apple in fridge",
            spec={"pddl_params": {"object_target": "Apple", "parent_target": "Fridge"}, "goal": "x"})
PLAIN = Task(family="textworld", instruction="open the chest", spec={"game": "g"})


def run(actions, observations, *, invalid=(), won=False, truncated=True, judgments=None):
    """A trajectory: reset observation 'start' + one observation per action; ``invalid`` step indices."""
    infos = [{"invalid_action": False}] + [{"invalid_action": i in invalid} for i in range(len(actions))]
    return Trajectory(task_id="t", observations=["start"] + list(observations), actions=list(actions),
                      infos=infos, won=won, truncated=truncated, judgments=judgments)


def test_target_object_from_alfworld_goal_and_meta():
    assert target_object(TASK) == "apple"
    assert target_object(PLAIN) is None
    declared = Task(family="textworld", instruction="x", spec={}, meta={"target": "Key"})
    assert target_object(declared) == "key"


def test_loop_fires_on_repeated_action_and_state():
    looping = run(["go to cabinet 1", "go to drawer 1"] * 3, ["cabinet is closed", "drawer is empty"] * 3)
    findings = dict(RuleDiagnoser().findings(PLAIN, looping))
    assert "looped over repeated states" in findings
    assert "'go to cabinet 1' x3" in findings["looped over repeated states"]


def test_no_loop_when_the_same_action_meets_new_states():
    exploring = run(["look"] * 4, ["room 1", "room 2", "room 3", "room 4"])
    assert "looped over repeated states" not in dict(RuleDiagnoser().findings(PLAIN, exploring))


def test_repeated_invalid_actions():
    bad = run(["fly", "fly", "look", "dance"], ["Nothing happens."] * 2 + ["room"] + ["Nothing happens."],
              invalid={0, 1, 3})
    findings = dict(RuleDiagnoser().findings(PLAIN, bad))
    assert findings["repeated invalid actions"] == " (e.g. 3 invalid, 'fly' x2)"
    one_bad = run(["fly", "look"], ["Nothing happens.", "room"], invalid={0})
    assert "repeated invalid actions" not in dict(RuleDiagnoser().findings(PLAIN, one_bad))


def test_target_never_found_seen_not_taken_and_taken():
    never = run(["go to cabinet 1"], ["On the cabinet 1, you see a mug 1."])
    seen = run(["go to countertop 1"], ["On the countertop 1, you see a apple 1."])
    taken = run(["go to countertop 1", "take apple 1 from countertop 1"],
                ["you see a apple 1.", "You pick up the apple 1."])
    diagnoser = RuleDiagnoser()
    assert "never found the apple" in dict(diagnoser.findings(TASK, never))
    assert "saw the apple but never took it" in dict(diagnoser.findings(TASK, seen))
    assert not any("apple" in kind for kind, _ in diagnoser.findings(TASK, taken))
    # The goal sentence in the reset observation does not count as finding the object.
    assert "never found the apple" in dict(diagnoser.findings(TASK, run([], [])))


def test_out_of_steps_only_when_truncated():
    assert dict(RuleDiagnoser().findings(PLAIN, run(["look"] * 2, ["a", "b"])))["ran out of steps"] == " (2 steps)"
    assert "ran out of steps" not in dict(RuleDiagnoser().findings(PLAIN, run(["look"], ["a"], truncated=False)))


def test_judgments_mark_wrong_steps():
    judged = run(["look", "eat key"], ["a", "b"], judgments=[[1, 1, -1], [-1, -1, 0]])
    findings = dict(RuleDiagnoser().findings(PLAIN, judged))
    assert findings["had steps judged wrong"] == " (first: step 1 'eat key', 1 in all)"


def test_diagnose_counts_findings_over_failed_runs_most_common_first():
    runs = [
        run(["go to cabinet 1"], ["you see a mug 1"]),                          # never found, out of steps
        run(["go to countertop 1"], ["you see a apple 1"]),                     # seen not taken, out of steps
        run(["x", "x"], ["Nothing happens."] * 2, invalid={0, 1}),              # invalid, never found, out of steps
        run(["take apple 1 from countertop 1"], ["You pick up the apple 1."], won=True, truncated=False),
    ]
    summaries = RuleDiagnoser().diagnose(TASK, runs)
    assert summaries[0] == "3/3 failed runs ran out of steps (1 steps)"
    assert summaries[1] == "2/3 failed runs never found the apple"
    assert set(summaries[2:]) == {"1/3 failed runs repeated invalid actions (e.g. 2 invalid, 'x' x2)",
                                  "1/3 failed runs saw the apple but never took it"}
    assert RuleDiagnoser(max_summaries=1).diagnose(TASK, runs) == summaries[:1]
    assert RuleDiagnoser().diagnose(TASK, runs[3:]) == []


def test_rule_diagnoser_is_a_diagnoser_and_checks_arguments():
    assert isinstance(RuleDiagnoser(), Diagnoser)
    with pytest.raises(ValueError, match="loop_repeats"):
        RuleDiagnoser(loop_repeats=1)
    with pytest.raises(ValueError, match="max_summaries"):
        RuleDiagnoser(max_summaries=0)
