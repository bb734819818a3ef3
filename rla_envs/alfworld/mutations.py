"""LLM-free edits of an ALFWorld scene: the mutation catalogue and goal hints (pure logic).

Every function here takes a :class:`~rla_envs.alfworld.scene.Scene` and returns an edited copy (or
``None`` when the edit does not apply); nothing plays a game. ``rla_envs.alfworld.family`` renders the
result, writes the walkthrough and validates it in the engine.

Mutations (``HARDER`` / ``EASIER``), named as recorded in ``Task.meta["mutation"]``:

==============================  ======  ===================================================================
name                            way     edit
==============================  ======  ===================================================================
hide_in_closed_receptacle       harder  every target copy in view moves into a closed cabinet/drawer/...
move_to_crowded_receptacle      harder  target copies move to a receptacle type with >= 3 instances
fewer_target_copies             harder  one spare copy of the target object is removed
add_distractors                 harder  2-4 objects of other, unrelated types are added
add_receptacles                 harder  1-2 empty receptacles that could hold the target are added
remove_hint                     harder  the hint sentence is dropped from the goal
more_target_copies              easier  1-2 copies of the target object are added, in open receptacles
place_in_open_receptacle        easier  target copies in closed receptacles move to open ones
open_target_receptacles         easier  the closed receptacles holding target copies start opened
hint_in_goal                    easier  the goal names the receptacles where the solution finds its targets
remove_distractors              easier  a third of the objects unrelated to the goal are removed
remove_empty_receptacles        easier  1-2 empty receptacles unrelated to the goal are removed
==============================  ======  ===================================================================

"Distractors" never share the target's type (another copy is an easier task, not a harder one) nor a
name that contains it or is contained in it ("butterknife" for "knife", "pencil" for "pen"): an agent
could fairly read those as the target, which would make the goal ambiguous. Text ALFWorld has no
distances (every receptacle is one "go to" away), so "far" placements are not a mutation here; the
number of places to search is what makes a search long.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rla_envs.alfworld.scene import Goal, Receptacle, Scene, SceneObject

__all__ = [
    "Edit", "HARDER", "EASIER", "CATALOGUE", "STATIONS", "TASK_ABILITY", "HINT_MARK", "LAMP_TYPES",
    "needed_copies", "target_copies", "is_closed", "can_hold", "distractor_types", "names_of",
    "strip_hint", "with_hint", "hint_receptacles",
]

#: The receptacle type that performs a task type's state change.
STATIONS = {"pick_clean_then_place_in_recep": "SinkBasin",
            "pick_heat_then_place_in_recep": "Microwave",
            "pick_cool_then_place_in_recep": "Fridge"}
#: The object ability a task type needs (as in ``SceneObject.abilities``).
TASK_ABILITY = {"pick_clean_then_place_in_recep": "cleanable",
                "pick_heat_then_place_in_recep": "heatable",
                "pick_cool_then_place_in_recep": "coolable"}
#: What separates the goal sentence from a hint (the grammar eats brackets, so the hint is plain words).
HINT_MARK = ". Hint: look in "
LAMP_TYPES = ("DeskLamp", "FloorLamp")
MAX_TARGET_COPIES = 5
MAX_RECEPTACLES = 60
MAX_OBJECTS = 90
CROWDED = 3  # a receptacle type with this many instances offers "many options" to search


@dataclass
class Edit:
    """An edited scene, what changed (for ``meta["mutation_detail"]``) and what to do with the hint.

    ``hint``: True adds a hint, False drops it, None keeps it as the parent task had it (recomputed for
    the edited scene, so that it stays true).
    """

    scene: Scene
    detail: str
    hint: bool | None = None


# ------------------------------------------------------------------------------------------ scene rules

def _constants():
    from alfworld.gen import constants

    return constants


def needed_copies(goal: Goal) -> int:
    """How many copies of the target object the goal needs."""
    return 2 if goal.task_type == "pick_two_obj_and_place" else 1


def is_closed(rec: Receptacle) -> bool:
    """True when the receptacle hides what it holds (openable and not opened)."""
    return rec.openable and not rec.opened


def can_hold(receptacle_type: str, object_type: str) -> bool:
    """True when ALFWorld lets a receptacle of this type contain objects of this type."""
    return object_type in _constants().VAL_RECEPTACLE_OBJECTS.get(receptacle_type, ())


def _start_forbidden(goal: Goal) -> set[str]:
    """Receptacle types where a target copy must not start: the destination, and the station."""
    return {t for t in (goal.parent_target, STATIONS.get(goal.task_type, "")) if t}


def target_copies(scene: Scene) -> list[SceneObject]:
    """Copies of the goal's object type lying directly in a receptacle, in scene order."""
    return [o for o in scene.objects_of_type(scene.goal.object_target) if o.receptacle and not o.inside]


def _has_contents(scene: Scene, obj: SceneObject) -> bool:
    return any(o.inside == obj.id for o in scene.objects)


def _destinations(scene: Scene, object_type: str, *, closed: bool | None = None) -> list[Receptacle]:
    """Receptacles that may hold a target copy at the start (``closed`` filters on :func:`is_closed`)."""
    forbidden = _start_forbidden(scene.goal)
    return [r for r in sorted(scene.receptacles, key=lambda r: r.id)
            if r.type not in forbidden and can_hold(r.type, object_type)
            and (closed is None or is_closed(r) == closed)]


def _pick(rng: np.random.Generator, items: list):
    return items[int(rng.integers(len(items)))]


def _move(scene: Scene, obj: SceneObject, rec: Receptacle) -> None:
    obj.receptacle, obj.location, obj.inside = rec.id, None, None


def names_of(scene: Scene, ids: list[str]) -> str:
    """The display names ("cabinet 3") of receptacle/object ids, comma-separated."""
    from rla_envs.alfworld.scene import display_names

    names = display_names(scene)
    return ", ".join(names.get(i, i) for i in ids)


# ------------------------------------------------------------------------------------------ harder

def hide_in_closed_receptacle(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Move every target copy that lies in view into a closed receptacle that can hold it."""
    scene = scene.copy()
    in_view = [o for o in target_copies(scene) if not is_closed(scene.receptacle(o.receptacle))]
    closed = [r for r in _destinations(scene, scene.goal.object_target) if r.openable]
    if not in_view or not closed:
        return None
    moved = []
    for obj in in_view:
        rec = _pick(rng, closed)
        rec.opened = False
        _move(scene, obj, rec)
        moved.append(rec.id)
    return Edit(scene, f"{len(in_view)} target cop{'y' if len(in_view) == 1 else 'ies'} hidden in "
                       f"closed {names_of(scene, moved)}")


def move_to_crowded_receptacle(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Move target copies into receptacles of a type the scene has many of (one cabinet among twelve)."""
    scene = scene.copy()
    options = _destinations(scene, scene.goal.object_target)
    counts: dict[str, int] = {}
    for rec in options:
        counts[rec.type] = counts.get(rec.type, 0) + 1
    crowded = sorted(t for t, n in counts.items() if n >= CROWDED)
    movable = [o for o in target_copies(scene) if scene.receptacle(o.receptacle).type not in crowded]
    if not crowded or not movable:
        return None
    chosen_type = _pick(rng, crowded)
    hosts = [r for r in options if r.type == chosen_type]
    for obj in movable:
        _move(scene, obj, _pick(rng, hosts))
    return Edit(scene, f"{len(movable)} target cop{'y' if len(movable) == 1 else 'ies'} moved among the "
                       f"{len(hosts)} {chosen_type} receptacles")


def fewer_target_copies(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Remove one spare copy of the target object (the goal keeps the copies it needs)."""
    scene = scene.copy()
    copies = [o for o in target_copies(scene) if not _has_contents(scene, o)]
    if len(target_copies(scene)) <= needed_copies(scene.goal) or not copies:
        return None
    gone = _pick(rng, copies)
    detail = f"removed {names_of(scene, [gone.id])} (was in {names_of(scene, [gone.receptacle])})"
    scene.objects = [o for o in scene.objects if o.id != gone.id]
    return Edit(scene, detail)


def _related(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a in b or b in a


def distractor_types(scene: Scene) -> list[str]:
    """Object types that may be added as distractors: carriable, placeable here, unrelated to the goal."""
    constants = _constants()
    static = constants.RECEPTACLES - set(constants.MOVABLE_RECEPTACLES)
    pool = {o.type for o in scene.objects}
    if scene.floor_plan:
        from rla_envs.alfworld.generate import load_floor_plan

        pool |= set(load_floor_plan(scene.floor_plan).object_types)
    goal = scene.goal
    named = [t for t in (goal.object_target, goal.toggle_target, goal.mrecep_target, goal.parent_target) if t]
    present = {r.type for r in scene.receptacles}
    return sorted(t for t in pool if t in constants.OBJECTS and t not in static and t not in LAMP_TYPES
                  and not t.endswith("Sliced") and not any(_related(t, n) for n in named)
                  and any(can_hold(r, t) for r in present))


def _new_object(scene: Scene, object_type: str, host: Receptacle, rng: np.random.Generator) -> SceneObject:
    """A fresh object of ``object_type`` in ``host``, with the abilities its type has in ALFWorld."""
    from rla_envs.alfworld.generate import new_object as make

    taken = {o.id for o in scene.objects} | {r.id for r in scene.receptacles}
    obj = make(object_type, host, random.Random(int(rng.integers(2**62))), taken)
    twin = next((o for o in scene.objects if o.type == object_type), None)
    if twin is not None:  # keep copies consistent with the scene (real data may differ from the defaults)
        obj.abilities = list(twin.abilities)
    scene.objects.append(obj)
    return obj


def add_distractors(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Add 2-4 objects of types unrelated to the goal, in receptacles that can hold them."""
    scene = scene.copy()
    types = distractor_types(scene)
    room = MAX_OBJECTS - len(scene.objects)
    if not types or room <= 0:
        return None
    added = []
    for _ in range(min(room, int(rng.integers(2, 5)))):
        object_type = _pick(rng, types)
        hosts = [r for r in sorted(scene.receptacles, key=lambda r: r.id) if can_hold(r.type, object_type)]
        added.append(_new_object(scene, object_type, _pick(rng, hosts), rng).id)
    return Edit(scene, f"added distractors {names_of(scene, added)}")


def add_receptacles(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Add 1-2 empty receptacles (of types already in the room) that could hold the target: more to search."""
    scene = scene.copy()
    options = sorted({r.type for r in _destinations(scene, scene.goal.object_target)})
    room = MAX_RECEPTACLES - len(scene.receptacles)
    if not options or room <= 0:
        return None
    openable = [t for t in options if t in _constants().OPENABLE_CLASS_SET]
    added = []
    for _ in range(min(room, int(rng.integers(1, 3)))):
        rtype = _pick(rng, openable or options)
        model = _pick(rng, scene.receptacles_of_type(rtype))
        rec = Receptacle(_fresh_receptacle_id(scene, model, rng), rtype, _fresh_location(scene, rng),
                         openable=model.openable, opened=False)
        scene.receptacles.append(rec)
        added.append(rec.id)
    return Edit(scene, f"added receptacles {names_of(scene, added)}")


def _fresh_receptacle_id(scene: Scene, model: Receptacle, rng: np.random.Generator) -> str:
    parts = model.id.split("|")
    taken = {r.id for r in scene.receptacles} | {o.id for o in scene.objects}
    while True:
        try:
            x, y, z = (float(v) + float(rng.uniform(-0.9, 0.9)) for v in parts[1:4])
        except (ValueError, IndexError):
            x, y, z = (float(v) for v in rng.uniform(-3, 3, size=3))
        candidate = "|".join([model.type, f"{x:+06.2f}", f"{y:+06.2f}", f"{z:+06.2f}"] + parts[4:])
        if candidate not in taken:
            return candidate


def _fresh_location(scene: Scene, rng: np.random.Generator) -> str:
    """A location id no receptacle uses: a floor-plan grid point when known, else near a used location."""
    used = set(scene.locations())
    if scene.floor_plan:
        from rla_envs.alfworld.generate import load_floor_plan

        grid = load_floor_plan(scene.floor_plan).grid
    else:
        grid = ()
    for _ in range(500):
        if grid:
            x, z = grid[int(rng.integers(len(grid)))]
            gx, gz = int(round(x / 0.25)), int(round(z / 0.25))
        else:
            base = _pick(rng, sorted(used)).split("|")
            gx, gz = int(base[1]) + int(rng.integers(-4, 5)), int(base[2]) + int(rng.integers(-4, 5))
        location = f"loc|{gx}|{gz}|{int(rng.integers(4))}|30"
        if location not in used:
            return location
    raise RuntimeError("no free location left in the scene")  # a scene with 500 full draws: not ALFWorld


def remove_hint(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Drop the hint from the goal sentence."""
    if HINT_MARK not in scene.goal.text:
        return None
    scene = scene.copy()
    scene.goal.text = strip_hint(scene.goal.text)
    return Edit(scene, "removed the hint from the goal", hint=False)


# ------------------------------------------------------------------------------------------ easier

def more_target_copies(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Add 1-2 copies of the target object, in receptacles that show their contents."""
    scene = scene.copy()
    room = min(MAX_TARGET_COPIES - len(target_copies(scene)), MAX_OBJECTS - len(scene.objects))
    hosts = _destinations(scene, scene.goal.object_target, closed=False)
    if room <= 0 or not hosts or not scene.objects_of_type(scene.goal.object_target):
        return None
    added = [_new_object(scene, scene.goal.object_target, _pick(rng, hosts), rng).id
             for _ in range(min(room, int(rng.integers(1, 3))))]
    return Edit(scene, f"added target copies {names_of(scene, added)}")


def place_in_open_receptacle(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Move the target copies that lie in closed receptacles to receptacles that show their contents."""
    scene = scene.copy()
    hidden = [o for o in target_copies(scene) if is_closed(scene.receptacle(o.receptacle))]
    hosts = _destinations(scene, scene.goal.object_target, closed=False)
    if not hidden or not hosts:
        return None
    moved = []
    for obj in hidden:
        rec = _pick(rng, hosts)
        _move(scene, obj, rec)
        moved.append(rec.id)
    return Edit(scene, f"{len(hidden)} target cop{'y' if len(hidden) == 1 else 'ies'} moved into view: "
                       f"{names_of(scene, moved)}")


def open_target_receptacles(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Start with the receptacles that hold target copies opened (their contents show on arrival)."""
    scene = scene.copy()
    closed = sorted({o.receptacle for o in target_copies(scene) if is_closed(scene.receptacle(o.receptacle))})
    if not closed:
        return None
    for rec_id in closed:
        scene.receptacle(rec_id).opened = True
    return Edit(scene, f"opened {names_of(scene, closed)}")


def hint_in_goal(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Name, in the goal sentence, the receptacles where the reference solution finds its targets."""
    if HINT_MARK in scene.goal.text:
        return None
    return Edit(scene.copy(), "the goal names where the targets are", hint=True)


def _unrelated_objects(scene: Scene) -> list[SceneObject]:
    goal = scene.goal
    named = {t for t in (goal.object_target, goal.toggle_target, goal.mrecep_target) if t} | set(LAMP_TYPES)
    return [o for o in scene.objects if o.type not in named and not _has_contents(scene, o)]


def remove_distractors(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Remove about a third (at least one, at most six) of the objects that the goal does not involve."""
    scene = scene.copy()
    pool = _unrelated_objects(scene)
    if not pool:
        return None
    count = min(6, max(1, len(pool) // 3))
    gone = sorted(pool[int(i)].id for i in rng.choice(len(pool), size=count, replace=False))
    detail = f"removed {names_of(scene, gone)}"
    scene.objects = [o for o in scene.objects if o.id not in set(gone)]
    return Edit(scene, detail)


def remove_empty_receptacles(scene: Scene, rng: np.random.Generator) -> Edit | None:
    """Remove 1-2 empty receptacles whose type the goal does not name: fewer places to search."""
    scene = scene.copy()
    goal = scene.goal
    keep_types = _start_forbidden(goal) | {goal.parent_target}
    full = {o.receptacle for o in scene.objects if o.receptacle}
    pool = [r for r in sorted(scene.receptacles, key=lambda r: r.id)
            if r.id not in full and r.type not in keep_types and r.location != scene.agent_location]
    if not pool:
        return None
    count = min(len(pool), int(rng.integers(1, 3)))
    gone = sorted(pool[int(i)].id for i in rng.choice(len(pool), size=count, replace=False))
    detail = f"removed {names_of(scene, gone)}"
    scene.receptacles = [r for r in scene.receptacles if r.id not in set(gone)]
    return Edit(scene, detail)


Mutation = Callable[[Scene, np.random.Generator], "Edit | None"]
HARDER: dict[str, Mutation] = {f.__name__: f for f in (
    hide_in_closed_receptacle, move_to_crowded_receptacle, fewer_target_copies, add_distractors,
    add_receptacles, remove_hint)}
EASIER: dict[str, Mutation] = {f.__name__: f for f in (
    more_target_copies, place_in_open_receptacle, open_target_receptacles, hint_in_goal, remove_distractors,
    remove_empty_receptacles)}
#: Mutations by direction, as ``mutate(task, direction, rng)`` chooses among them.
CATALOGUE: dict[str, dict[str, Mutation]] = {"harder": HARDER, "easier": EASIER}


# ------------------------------------------------------------------------------------------ hints

def strip_hint(text: str) -> str:
    """The goal sentence without its hint."""
    return text.split(HINT_MARK, 1)[0]


def with_hint(text: str, receptacle_names: list[str]) -> str:
    """The goal sentence with a hint naming where to look: ``"... Hint: look in drawer 1 and cabinet 2"``."""
    names = list(dict.fromkeys(receptacle_names))
    places = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return strip_hint(text) + HINT_MARK + places


_TAKE_RE = re.compile(r"^take (.+?) from (.+)$")


def hint_receptacles(walkthrough: list[str]) -> list[str]:
    """The receptacles (display names) that a walkthrough takes objects from, in order."""
    return list(dict.fromkeys(m.group(2) for c in walkthrough if (m := _TAKE_RE.match(c))))
