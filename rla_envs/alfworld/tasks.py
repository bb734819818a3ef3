"""ALFWorld tasks as rla Tasks: conversions between tasks, scenes and games, and real ALFWorld data.

The generated splits (seeded, cached on disk) are in :mod:`rla_envs.alfworld.generated`.

A Task of family ``"alfworld"`` carries, in its ``spec``, what one episode needs besides the domain and
grammar that ship in the alfworld wheel::

    {"pddl_problem": "(define (problem ...", "goal": "put a clean apple in fridge",
     "task_type": "pick_clean_then_place_in_recep",
     "pddl_params": {"object_target": "Apple", "parent_target": "Fridge", "toggle_target": "",
                     "mrecep_target": "", "object_sliced": false},
     "walkthrough": ["go to countertop 1", ...], "floor_plan": "FloorPlan1"}

``instruction`` is the goal sentence (equal to ``spec["goal"]``, which is what the game text shows).
:func:`game_from_task` rebuilds the ``game.tw-pddl`` dict an engine loads.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from rla_envs.alfworld import FAMILY
from rla_envs.core.errors import DataNotFound, InvalidTask
from rla_envs.core.task import Task, thaw

__all__ = [
    "FAMILY", "GOAL_FORBIDDEN_CHARACTERS", "SPEC_FIELDS", "check_spec", "domain_and_grammar", "grammar_with_goal",
    "task_from_game", "game_from_task", "scene_from_task", "game_from_scene", "dataset_tasks",
]

_GOAL_RE = re.compile(r"Your task is to: (.*?)\.\"")


@lru_cache(maxsize=1)
def domain_and_grammar() -> tuple[str, str]:
    """The ALFWorld PDDL domain and TextWorld grammar (with ``UNKNOWN GOAL``) shipped in the alfworld wheel."""
    import alfworld

    data = Path(alfworld.__path__[0]) / "data"
    return (data / "alfred.pddl").read_text(), (data / "alfred.twl2").read_text()


#: Characters the TextWorld grammar would interpret (expansions, lists, JSON quoting) inside a goal.
GOAL_FORBIDDEN_CHARACTERS = '[]{}#"\\\n\r\t'


def grammar_with_goal(grammar: str, goal: str) -> str:
    """The grammar with its ``UNKNOWN GOAL`` placeholder replaced by ``goal`` (as alfworld does).

    Raises ``InvalidTask`` for an empty goal or one holding a character the grammar language would
    expand or choke on (``[ ] { } # " \\`` and line breaks): the text would be cut or fail to load.
    """
    bad = sorted({c for c in goal if c in GOAL_FORBIDDEN_CHARACTERS})
    if not goal.strip() or bad:
        raise InvalidTask(f"goal text {goal!r} cannot go into the ALFWorld grammar: "
                          + (f"it contains {bad}; remove or replace them" if bad else "it is empty"))
    if "UNKNOWN GOAL" not in grammar:
        raise InvalidTask("the grammar has no 'UNKNOWN GOAL' placeholder; pass the grammar shipped in alfworld")
    return grammar.replace("UNKNOWN GOAL", goal)


# ------------------------------------------------------------------------------------------ conversions

def task_from_game(game: Mapping[str, Any], *, origin: str = "generated", meta: Mapping[str, Any] | None = None,
                   goal_hint: Mapping[str, Any] | None = None) -> Task:
    """A Task from a ``game.tw-pddl`` dict (generated, or real with a ``traj_data.json`` as ``goal_hint``).

    The goal sentence comes from ``game["goal"]``, else from the grammar's "Your task is to: ..." line;
    task type and ``pddl_params`` from the game, else from ``goal_hint`` (traj_data), else from the PDDL goal.
    """
    from rla_envs.alfworld.scene import parse_problem

    hint = dict(goal_hint or {})
    goal = game.get("goal") or _goal_from_grammar(game.get("grammar", ""))
    task_type = game.get("task_type") or hint.get("task_type")
    params = game.get("pddl_params") or hint.get("pddl_params")
    floor_plan = game.get("floor_plan") or (hint.get("scene") or {}).get("floor_plan", "")
    if not (task_type and params):
        scene = parse_problem(game["pddl_problem"], floor_plan=floor_plan)
        task_type, params = scene.goal.task_type, scene.goal.pddl_params()
    if not goal:
        raise InvalidTask("the game has no goal sentence: expected game['goal'] or 'Your task is to: ...' in its grammar")
    spec = {
        "pddl_problem": game["pddl_problem"],
        "goal": goal,
        "task_type": task_type,
        "pddl_params": dict(params),
        "walkthrough": list(game.get("walkthrough") or []),
        "floor_plan": floor_plan,
    }
    merged = {"task_type": task_type, "floor_plan": floor_plan}
    merged.update(meta or {})
    return Task(family=FAMILY, instruction=goal, spec=spec, origin=origin, meta=merged)


def _goal_from_grammar(grammar: str) -> str:
    match = _GOAL_RE.search(grammar)
    return match.group(1) if match and match.group(1) != "UNKNOWN GOAL" else ""


def game_from_task(task: Task | Mapping[str, Any]) -> dict:
    """The ``game.tw-pddl`` dict of a task: the wheel's domain, its grammar with the task's goal, the problem."""
    if not isinstance(task, Task):
        task = Task.from_dict(task)
    if task.family != FAMILY:
        raise InvalidTask(f"expected an {FAMILY!r} task, got family {task.family!r} (task {task.id})")
    spec = thaw(task.spec)
    if "pddl_problem" not in spec:
        raise InvalidTask(f"task {task.id} has no spec['pddl_problem']; its spec keys are {sorted(spec)}")
    check_spec(spec, task.id)
    domain, grammar = domain_and_grammar()
    return {
        "pddl_domain": domain,
        "grammar": grammar_with_goal(grammar, spec.get("goal") or task.instruction),
        "pddl_problem": spec["pddl_problem"],
        "solvable": True,
        "walkthrough": list(spec.get("walkthrough") or []),
    }


#: The type of each field an ALFWorld spec may hold (``pddl_params`` values: str, or bool for ``object_sliced``).
SPEC_FIELDS: dict[str, type | tuple[type, ...]] = {
    "pddl_problem": str, "goal": str, "task_type": str, "pddl_params": Mapping, "walkthrough": list,
    "floor_plan": str,
}


def check_spec(spec: Mapping[str, Any], task_id: str = "") -> None:
    """Raise ``InvalidTask`` naming the field unless every field of an ALFWorld spec has the type it needs."""
    where = f"task {task_id}: " if task_id else ""
    for key, value in spec.items():
        expected = SPEC_FIELDS.get(key)
        if expected is not None and value is not None and not isinstance(value, expected):
            raise InvalidTask(f"{where}spec[{key!r}] must be a {getattr(expected, '__name__', expected)}, "
                              f"got {type(value).__name__} {value!r:.60}")
    for key, value in (spec.get("pddl_params") or {}).items():
        if not isinstance(value, bool if key == "object_sliced" else str):
            raise InvalidTask(f"{where}spec['pddl_params'][{key!r}] must be a string (a bool for object_sliced), "
                              f"got {type(value).__name__} {value!r:.60}")
    if not all(isinstance(command, str) for command in spec.get("walkthrough") or []):
        raise InvalidTask(f"{where}spec['walkthrough'] must be a list of command strings")


def scene_from_task(task: Task):
    """The editable :class:`~rla_envs.alfworld.scene.Scene` of a task (its problem, goal and floor plan)."""
    from rla_envs.alfworld.scene import parse_problem

    spec = thaw(task.spec)
    hint = {"task_type": spec.get("task_type"), "pddl_params": spec.get("pddl_params"),
            "text": spec.get("goal") or task.instruction}
    return parse_problem(spec["pddl_problem"], floor_plan=spec.get("floor_plan", ""), goal_hint=hint)


def game_from_scene(scene, walkthrough: list[str] | None = None) -> dict:
    """A ``game.tw-pddl`` dict for a scene; the walkthrough defaults to the scripted one (not yet played)."""
    from rla_envs.alfworld.scene import render_problem
    from rla_envs.alfworld.walkthrough import walkthrough as scripted

    domain, grammar = domain_and_grammar()
    return {
        "pddl_domain": domain,
        "grammar": grammar_with_goal(grammar, scene.goal.text),
        "pddl_problem": render_problem(scene),
        "solvable": True,
        "walkthrough": list(walkthrough) if walkthrough is not None else scripted(scene),
        "goal": scene.goal.text,
        "task_type": scene.goal.task_type,
        "pddl_params": scene.goal.pddl_params(),
        "floor_plan": scene.floor_plan,
    }


# ------------------------------------------------------------------------------------------ real data

def _json_root(root: str | os.PathLike | None) -> Path:
    candidates = []
    if root is not None:
        candidates.append(Path(root))
    elif os.environ.get("ALFWORLD_DATA"):
        candidates.append(Path(os.environ["ALFWORLD_DATA"]))
    else:
        candidates.append(Path.home() / ".cache" / "alfworld")  # alfworld's own default
    for base in candidates:
        base = base.expanduser()
        if (base / "json_2.1.1").is_dir():
            return base / "json_2.1.1"
        if base.name == "json_2.1.1" and base.is_dir():
            return base
    raise DataNotFound(
        f"no ALFWorld data found: expected a json_2.1.1 folder in {[str(c) for c in candidates]} "
        "(from the explicit root, else $ALFWORLD_DATA, else ~/.cache/alfworld). Download it with "
        "`alfworld-download` where the internet is reachable and set ALFWORLD_DATA to its folder, or use "
        "generated_tasks() to generate games offline.")


def dataset_tasks(root: str | os.PathLike | None = None, split: str = "train") -> list[Task]:
    """Tasks from real ALFWorld data: ``<root>/json_2.1.1/<split>/<task dir>/<trial dir>/game.tw-pddl``.

    ``root`` defaults to ``$ALFWORLD_DATA``. Like alfworld, games marked unsolvable and ``movable`` /
    ``Sliced`` task folders are skipped. ``traj_data.json`` beside a game, when present, gives the task
    type, ``pddl_params`` and floor plan. Raises ``DataNotFound`` when no playable game is there.
    """
    json_root = _json_root(root)
    split_dir = json_root / split
    if not split_dir.is_dir():
        present = sorted(p.name for p in json_root.iterdir() if p.is_dir())
        raise DataNotFound(f"no split folder {split_dir}; splits present in {json_root}: {present}")
    tasks = []
    for game_file in sorted(split_dir.glob("*/*/game.tw-pddl")):
        relative = game_file.relative_to(split_dir).as_posix()
        if "movable" in relative or "Sliced" in relative:
            continue
        try:
            game = json.loads(game_file.read_text())
        except ValueError as exc:
            raise InvalidTask(f"{game_file} is not a JSON game.tw-pddl file: {exc}") from None
        if not game.get("solvable"):
            continue
        traj_file = game_file.with_name("traj_data.json")
        hint = json.loads(traj_file.read_text()) if traj_file.exists() else None
        meta = {"split": split, "source": "alfworld", "game_file": str(game_file)}
        tasks.append(task_from_game(game, origin="dataset", meta=meta, goal_hint=hint))
    if not tasks:
        raise DataNotFound(f"no solvable game.tw-pddl under {split_dir}/<task>/<trial>/ "
                           "(movable and Sliced tasks are skipped, as in alfworld)")
    return tasks
