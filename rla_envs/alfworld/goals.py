"""The goal in words: type names, rewrite proposals, goal swaps and answer leaks (pure logic).

``AlfWorldFamily.apply_rewrite`` reads an LLM's proposal with :func:`parse_proposal`, maps its free-text
names to ALFWorld types with :func:`resolve_type` and checks the swap against the scene with
:func:`swap_goal`; ``validate`` asks :func:`leaked_receptacles` whether an instruction names where a
target lies. Every refusal is a ``RewriteRejected`` whose message starts with the reason.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from rla_envs.core.errors import RewriteRejected
from rla_envs.core.proposals import find_json_object
from rla_envs.alfworld.mutations import (
    LAMP_TYPES, STATIONS, TASK_ABILITY, can_hold, names_of, needed_copies, strip_hint,
)
from rla_envs.alfworld.scene import Goal, Scene, goal_text

__all__ = [
    "TYPE_ALIASES", "rewrite_format", "parse_proposal", "resolve_type", "object_types", "receptacle_types",
    "destination_types", "swap_goal", "template_index", "leaked_receptacles",
]

def _constants():
    from alfworld.gen import constants

    return constants


_ABILITY_VERB = {"cleanable": "cleaned", "heatable": "heated", "coolable": "cooled"}

_ROLE_KEYS = {
    "object": {"object", "obj", "objecttarget", "objecttype", "target", "targetobject", "item", "newobject"},
    "receptacle": {"receptacle", "recep", "receptacletype", "parent", "parenttarget", "parentreceptacle",
                   "destination", "newreceptacle", "targetreceptacle", "place", "container"},
    "toggle": {"toggle", "toggletarget", "lamp", "light", "newtoggle", "newlamp"},
}
_KEEP_WORDS = {"", "same", "unchanged", "keep", "none", "null", "n/a", "-"}


# ------------------------------------------------------------------------------------------ proposals

def rewrite_format(task_type: str) -> str:
    """The answer format :meth:`AlfWorldFamily.apply_rewrite` expects for a task type."""
    if task_type == "look_at_obj_in_light":
        keys = ('  "object": the object type to look at, e.g. "Book",\n'
                '  "toggle": the lamp type to switch on, "DeskLamp" or "FloorLamp".')
        example = "object: book"
    else:
        keys = ('  "object": the object type to carry, e.g. "Mug",\n'
                '  "receptacle": the destination receptacle type, e.g. "CoffeeMachine".')
        example = "object: mug\nreceptacle: coffee machine"
    return ("Answer with one JSON object (a ```json block is fine); a key you leave out keeps its current type:\n"
            f"{keys}\nPlain lines work too, e.g.\n{example}\n"
            "Use types from the candidate lists above; the task type and the room stay as they are.")


def parse_proposal(text: str) -> dict[str, str]:
    """The roles a rewrite proposal sets: ``{"object": "mug", "receptacle": "coffee machine"}`` (raw names).

    Accepts a JSON object (bare or in a ```json fence, anywhere in prose) or ``key: value`` lines; keys are
    matched loosely (``object``/``object_target``/``obj``, ``receptacle``/``parent``/``destination``,
    ``toggle``/``lamp``). Raises ``RewriteRejected`` ("unparseable: ...") when no role is set.
    """
    if not isinstance(text, str) or not text.strip():
        raise RewriteRejected("unparseable: the proposal is empty")
    pairs = _json_pairs(text)
    if pairs is None:
        pairs = [(m.group(1), m.group(2)) for line in text.splitlines()
                 if (m := re.match(r"^\s*(?:[-*>]+\s*)?[\"'`*]*([A-Za-z][A-Za-z _-]*?)[\"'`*]*\s*[:=]\s*(.+?)\s*$", line))]
    proposal: dict[str, str] = {}
    for key, value in pairs:
        role = _role(key)
        if role is None or value is None:
            continue
        if not isinstance(value, str):
            raise RewriteRejected(f"unparseable: the value of {key!r} must be a type name, got {value!r}")
        value = value.strip().strip("\"'`*.,;").strip()
        if value.lower() not in _KEEP_WORDS:
            proposal[role] = value
    if not proposal:
        raise RewriteRejected(f"unparseable: no object/receptacle/toggle found in the proposal {text[:160]!r}; "
                              'expected e.g. {"object": "Mug", "receptacle": "CoffeeMachine"}')
    return proposal


def _json_pairs(text: str) -> list[tuple[str, Any]] | None:
    data = find_json_object(text)
    return None if data is None else _flatten(data)


def _flatten(data: dict) -> list[tuple[str, Any]]:
    """Key/value pairs of a JSON object, nested objects included (``{"rewrite": {"object": ...}}``)."""
    pairs: list[tuple[str, Any]] = []
    for key, value in data.items():
        pairs += _flatten(value) if isinstance(value, dict) else [(str(key), value)]
    return pairs


def _role(key: str) -> str | None:
    normal = re.sub(r"[^a-z]", "", key.lower())
    return next((role for role, keys in _ROLE_KEYS.items() if normal in keys), None)


# ------------------------------------------------------------------------------------------ leaks

def _mentions(text: str, type_name: str) -> bool:
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z]*|[a-z]+", type_name)
    pattern = r"\s*".join(re.escape(w.lower()) for w in words)
    aliases = [a for a, t in TYPE_ALIASES.items() if t == type_name]
    return bool(re.search(r"\b(?:" + "|".join([pattern] + aliases) + r")(?:e?s)?\b", text.lower()))


def leaked_receptacles(text: str, scene: Scene) -> list[str]:
    """Receptacles (display names) where a target copy lies and that ``text`` names, by name or by type.

    Types the goal itself names (the destination, the lamp) are not leaks: they are the task.
    """
    from rla_envs.alfworld.scene import display_names

    goal = scene.goal
    named = {goal.parent_target, goal.toggle_target, goal.mrecep_target}
    names = display_names(scene)
    by_id = {o.id: o for o in scene.objects}
    leaks = []
    for obj in scene.objects_of_type(goal.object_target):
        holder, seen = obj, {obj.id}
        while holder.inside in by_id and holder.inside not in seen:  # in a mug that stands in a cabinet
            holder = by_id[holder.inside]
            seen.add(holder.id)
        if not holder.receptacle:
            continue
        rec = scene.receptacle(holder.receptacle)
        by_name = re.search(r"\b" + re.escape(names[rec.id]) + r"\b", text.lower())
        if by_name or (rec.type not in named and _mentions(text, rec.type)):
            leaks.append(names[rec.id])
    return sorted(set(leaks))


# ------------------------------------------------------------------------------------------ type names

#: Everyday words for ALFWorld types that the type names do not spell out.
TYPE_ALIASES = {
    "sink": "SinkBasin", "bathtub": "BathtubBasin", "tub": "BathtubBasin", "stove": "StoveBurner",
    "burner": "StoveBurner", "counter": "CounterTop", "trashcan": "GarbageCan", "trash": "GarbageCan",
    "bin": "GarbageCan", "garbage": "GarbageCan", "refrigerator": "Fridge", "tv": "TVStand",
    "remote": "RemoteControl", "phone": "CellPhone", "keys": "KeyChain",
}


def _all_types() -> dict[str, str]:
    constants = _constants()
    names = set(constants.OBJECTS) | set(constants.RECEPTACLES)
    return {t.lower(): t for t in names}


def resolve_type(name: str, role: str) -> str:
    """The ALFWorld type a free-text name means (``"coffee machine"``, ``"Mugs"``, ``"cabinet 2"``).

    Raises ``RewriteRejected`` ("unknown type ...", with the closest types) when nothing matches.
    """
    known = _all_types()
    text = re.sub(r"^(a|an|the|some|two)\s+", "", str(name).strip().lower())
    key = re.sub(r"[^a-z]", "", re.sub(r"\s+\d+$", "", text))
    for candidate in (key, key[:-1] if key.endswith("s") else "", key[:-2] if key.endswith("es") else ""):
        if candidate in TYPE_ALIASES:  # first: "sink" is also an object type, but people mean the basin
            return TYPE_ALIASES[candidate]
        if candidate in known:
            return known[candidate]
    close = difflib.get_close_matches(key, list(known), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(known[c] for c in close)}?" if close else ""
    raise RewriteRejected(f"unknown type {name!r} for the {role}: not an ALFWorld object or receptacle type{hint}")


def object_types(scene: Scene) -> list[str]:
    """Object types that could be the target of the scene's task type (present, carriable, able, enough)."""
    goal = scene.goal
    ability = TASK_ABILITY.get(goal.task_type)
    counts: dict[str, int] = {}
    for obj in scene.objects:
        if obj.receptacle and "pickupable" in obj.abilities and (ability is None or ability in obj.abilities):
            counts[obj.type] = counts.get(obj.type, 0) + 1
    return sorted(t for t, n in counts.items() if n >= needed_copies(goal) and t not in LAMP_TYPES)


def receptacle_types(scene: Scene) -> list[str]:
    """The static receptacle types of the scene, sorted."""
    return sorted({r.type for r in scene.receptacles})


def destination_types(scene: Scene, object_type: str) -> list[str]:
    """Receptacle types of the scene that could be the destination for ``object_type`` (not the station,
    and not a type where a copy of it already lies, which would satisfy the goal at the start)."""
    station = STATIONS.get(scene.goal.task_type)
    occupied = {scene.receptacle(o.receptacle).type for o in scene.objects_of_type(object_type) if o.receptacle}
    return [t for t in receptacle_types(scene) if t != station and t not in occupied and can_hold(t, object_type)]


def template_index(goal: Goal) -> int:
    """Which of alfworld's goal templates the goal sentence uses (0 when it matches none)."""
    base = strip_hint(goal.text)
    for index in range(3):
        if goal_text(goal, index) == base:
            return index
    return 0


def swap_goal(scene: Scene, *, object_type: str | None = None, receptacle_type: str | None = None,
              toggle_type: str | None = None) -> Scene:
    """A copy of the scene whose goal uses the given types (None keeps one), checked against the scene.

    Raises ``RewriteRejected`` saying why: "not in scene", "cannot be <verb>", "cannot contain",
    "already satisfied", "unchanged", or that the task type has no such role.
    """
    scene = scene.copy()
    goal = scene.goal
    old = (goal.object_target, goal.parent_target, goal.toggle_target)
    look = goal.task_type == "look_at_obj_in_light"
    if receptacle_type and look:
        raise RewriteRejected(f"{goal.task_type} has no destination receptacle; change 'object' or 'toggle'")
    if toggle_type and not look:
        raise RewriteRejected(f"{goal.task_type} has no lamp to toggle; change 'object' or 'receptacle'")
    obj_type = object_type or goal.object_target
    if object_type:
        _check_object(scene, object_type)
    if toggle_type:
        lamps = [o for o in scene.objects_of_type(toggle_type) if "toggleable" in o.abilities and o.receptacle]
        if toggle_type not in LAMP_TYPES or not lamps:
            present = sorted({o.type for o in scene.objects if "toggleable" in o.abilities})
            raise RewriteRejected(f"not in scene: no toggleable {toggle_type} stands in the room; lamps here: {present}")
    if not look:
        recep = receptacle_type or goal.parent_target
        if receptacle_type and not scene.receptacles_of_type(receptacle_type):
            raise RewriteRejected(f"not in scene: no {receptacle_type} in the room; receptacles here: "
                                  f"{receptacle_types(scene)}")
        if not can_hold(recep, obj_type):
            raise RewriteRejected(f"cannot contain: a {recep} cannot hold a {obj_type} in ALFWorld; receptacles here "
                                  f"that can: {[t for t in receptacle_types(scene) if can_hold(t, obj_type)]}")
        if recep == STATIONS.get(goal.task_type):
            raise RewriteRejected(f"cannot contain: the {recep} is where this task type changes the object's state; "
                                  f"choose another destination")
        holders = sorted(r.id for r in scene.receptacles_of_type(recep)
                         if any(o.receptacle == r.id for o in scene.objects_of_type(obj_type)))
        if holders:
            raise RewriteRejected(f"already satisfied: a {obj_type} already lies in {names_of(scene, holders)}, so the "
                                  f"goal would hold at the start; choose another receptacle or object")
        goal.parent_target = recep
    goal.object_target = obj_type
    goal.toggle_target = toggle_type or goal.toggle_target
    if (goal.object_target, goal.parent_target, goal.toggle_target) == old:
        raise RewriteRejected(f"unchanged: the proposal keeps the goal as it is ({goal.text!r})")
    goal.text = goal_text(goal, template_index(scene.goal))
    return scene


def _check_object(scene: Scene, object_type: str) -> None:
    goal = scene.goal
    constants = _constants()
    static = constants.RECEPTACLES - set(constants.MOVABLE_RECEPTACLES)
    if object_type in static:
        raise RewriteRejected(f"not an object: {object_type} is a receptacle and cannot be carried; "
                              f"objects here: {object_types(scene)}")
    copies = [o for o in scene.objects_of_type(object_type) if o.receptacle]
    if not copies:
        raise RewriteRejected(f"not in scene: no {object_type} lies in the room; candidate objects: {object_types(scene)}")
    if not all("pickupable" in o.abilities for o in copies) or object_type in LAMP_TYPES:
        raise RewriteRejected(f"not carriable: a {object_type} cannot be picked up; candidate objects: "
                              f"{object_types(scene)}")
    ability = TASK_ABILITY.get(goal.task_type)
    if ability and not any(ability in o.abilities for o in copies):
        raise RewriteRejected(f"cannot be {_ABILITY_VERB[ability]}: a {object_type} is not {ability} in ALFWorld; "
                              f"candidate objects: {object_types(scene)}")
    if len(copies) < needed_copies(goal):
        raise RewriteRejected(f"not in scene: {goal.task_type} needs {needed_copies(goal)} {object_type}, the room "
                              f"has {len(copies)}; candidate objects: {object_types(scene)}")
