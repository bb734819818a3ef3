"""A plain-data model of one ALFWorld scene, rendered to and parsed from an ALFWorld PDDL problem.

A :class:`Scene` holds what an ``initial_state.pddl`` says: the receptacles (type, location, openable,
opened), the objects (type, the receptacle they lie in, abilities such as ``cleanable`` and states such as
``isHot``), the agent's starting location and the :class:`Goal` (task type and ALFRED ``pddl_params``).
Everything is an ordinary dataclass with lists, so a mutation is "copy, edit, :func:`render_problem`".

Ids are kept in ALFRED's readable form (``"Apple|-01.65|+00.81|+00.07"``, ``"loc|-5|0|2|30"``) and mangled
into PDDL names (``Apple_bar__minus_01_dot_65_bar_...``) only when rendering. This module is pure: no file
access, no game engine.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass, field

from rla_envs.core.errors import InvalidTask

__all__ = [
    "TASK_TYPES", "Goal", "Receptacle", "SceneObject", "Scene",
    "mangle", "demangle", "render_problem", "parse_problem", "display_names", "goal_pddl", "goal_text",
]

#: The six ALFWorld task types, in ALFWorld's numbering order.
TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)

# Unary object facts: abilities never change during play, states do.
ABILITIES = ("pickupable", "isReceptacleObject", "cleanable", "heatable", "coolable", "toggleable", "sliceable")
STATES = ("isClean", "isHot", "isCool", "isOn", "isToggled", "isSliced")

_MANGLE = {"-": "_minus_", "|": "_bar_", "+": "_plus_", ".": "_dot_", ",": "_comma_"}
_MANGLE_RE = re.compile("|".join(re.escape(k) for k in _MANGLE))
_DEMANGLE = {v: k for k, v in _MANGLE.items()}
_DEMANGLE_RE = re.compile("|".join(re.escape(k) for k in _DEMANGLE))


def mangle(name: str) -> str:
    """ALFRED id to PDDL name: ``"Apple|-01.65"`` -> ``"Apple_bar__minus_01_dot_65"``."""
    return _MANGLE_RE.sub(lambda m: _MANGLE[m.group(0)], name)


def demangle(name: str) -> str:
    """PDDL name to ALFRED id (inverse of :func:`mangle`)."""
    return _DEMANGLE_RE.sub(lambda m: _DEMANGLE[m.group(0)], name)


@dataclass
class Goal:
    """What the agent must do: ALFRED's task type and ``pddl_params``, plus the goal sentence.

    ``object_target`` and ``parent_target`` are ALFRED types (``"Apple"``, ``"Fridge"``); ``toggle_target``
    is set for ``look_at_obj_in_light`` (``"DeskLamp"``); ``text`` is what the agent reads after
    "Your task is to: " (``"put a clean apple in fridge"``).
    """

    task_type: str
    object_target: str
    parent_target: str = ""
    toggle_target: str = ""
    mrecep_target: str = ""
    object_sliced: bool = False
    text: str = ""

    def pddl_params(self) -> dict:
        """ALFRED's ``pddl_params`` dict (as in ``traj_data.json``)."""
        return {
            "object_target": self.object_target, "parent_target": self.parent_target,
            "toggle_target": self.toggle_target, "mrecep_target": self.mrecep_target,
            "object_sliced": self.object_sliced,
        }


@dataclass
class Receptacle:
    """A static receptacle (cabinet, fridge, countertop...) the agent can go to."""

    id: str  # "Cabinet|+00.68|+00.50|-02.20"
    type: str  # "Cabinet"
    location: str  # "loc|0|-5|2|30"
    openable: bool = False
    opened: bool = False


@dataclass
class SceneObject:
    """A portable or fixed object lying in a receptacle (or inside a movable receptacle object)."""

    id: str  # "Apple|-01.65|+00.81|+00.07"
    type: str  # "Apple"
    receptacle: str | None = None  # id of the Receptacle it is in
    inside: str | None = None  # id of a SceneObject (a bowl, a mug) it is in
    location: str | None = None  # objectAtLocation; None means "the location of its receptacle"
    abilities: list[str] = field(default_factory=list)  # subset of ABILITIES
    states: list[str] = field(default_factory=list)  # subset of STATES


@dataclass
class Scene:
    """One ALFWorld level: floor plan, receptacles, objects, the agent's start and the goal."""

    floor_plan: str  # "FloorPlan1"; "" when unknown (a parsed problem without a hint)
    agent_location: str
    receptacles: list[Receptacle]
    objects: list[SceneObject]
    goal: Goal
    problem_name: str = "plan_rla"
    can_contain: list[tuple[str, str]] = field(default_factory=list)  # extra (rtype, otype) pairs to keep
    extra_facts: list[str] = field(default_factory=list)  # init facts the model does not interpret, verbatim

    def copy(self) -> "Scene":
        """A deep copy, safe to edit."""
        return copy.deepcopy(self)

    def receptacle(self, receptacle_id: str) -> Receptacle:
        """The receptacle with this id (KeyError naming the known ids otherwise)."""
        for rec in self.receptacles:
            if rec.id == receptacle_id:
                return rec
        raise KeyError(f"no receptacle {receptacle_id!r} in scene; known: {[r.id for r in self.receptacles]}")

    def objects_of_type(self, type_name: str) -> list[SceneObject]:
        """The objects whose type is ``type_name``, in scene order."""
        return [obj for obj in self.objects if obj.type == type_name]

    def receptacles_of_type(self, type_name: str) -> list[Receptacle]:
        """The receptacles whose type is ``type_name``, in scene order."""
        return [rec for rec in self.receptacles if rec.type == type_name]

    def object_location(self, obj: SceneObject) -> str | None:
        """Where the object is (its own location, else its receptacle's, else its container's)."""
        if obj.location:
            return obj.location
        if obj.receptacle:
            return self.receptacle(obj.receptacle).location
        if obj.inside:
            container = next((o for o in self.objects if o.id == obj.inside), None)
            return self.object_location(container) if container else None
        return None

    def locations(self) -> list[str]:
        """Every location mentioned by the scene, sorted, the agent's start included."""
        locs = {rec.location for rec in self.receptacles} | {self.agent_location}
        locs |= {loc for obj in self.objects if (loc := self.object_location(obj))}
        return sorted(locs)


# ----------------------------------------------------------------------------------------------- goals

def _goal_library():
    import alfworld.gen.goal_library as goal_library  # light: a dict of strings

    return goal_library.gdict


def goal_pddl(goal: Goal) -> str:
    """The ``(:goal ...)`` block (closing the problem) from alfworld's goal library, PDDL-ready."""
    key = goal.task_type + ("_slice" if goal.object_sliced else "")
    try:
        template = _goal_library()[key]["pddl"]
    except KeyError:
        raise InvalidTask(f"unknown ALFWorld task type {key!r}; expected one of {TASK_TYPES}") from None
    text = template.format(obj=goal.object_target, recep=goal.parent_target,
                           toggle=goal.toggle_target, mrecep=goal.mrecep_target)
    return text.replace("#", "-")


def goal_text(goal: Goal, template_index: int = 0) -> str:
    """The goal sentence from alfworld's templates, e.g. ``"put a clean apple in fridge"``."""
    key = goal.task_type + ("_slice" if goal.object_sliced else "")
    templates = _goal_library()[key]["templates"]
    template = templates[template_index % len(templates)]
    return template.format(obj=goal.object_target.lower(), recep=goal.parent_target.lower(),
                           toggle=goal.toggle_target.lower(), mrecep=goal.mrecep_target.lower())


# ----------------------------------------------------------------------------------------------- render

def _constants():
    from alfworld.gen import constants

    return constants


def _type_lists() -> tuple[list[str], list[str]]:
    """(object types, static receptacle types) as declared in every ALFWorld problem."""
    constants = _constants()
    static = constants.RECEPTACLES - set(constants.MOVABLE_RECEPTACLES)
    return sorted(constants.OBJECTS_SET - static), sorted(static)


def _can_contain_pairs(scene: Scene) -> list[tuple[str, str]]:
    constants = _constants()
    present = {obj.type for obj in scene.objects}
    pairs = set(scene.can_contain)
    for rtype in {rec.type for rec in scene.receptacles}:
        pairs.update((rtype, otype) for otype in constants.VAL_RECEPTACLE_OBJECTS.get(rtype, ()) if otype in present)
    return sorted(pairs)


def render_problem(scene: Scene) -> str:
    """The scene as an ALFWorld PDDL problem (the ``initial_state.pddl`` layout), goal included."""
    object_types, receptacle_types = _type_lists()
    declared_types = set(object_types) | set(receptacle_types)
    unknown = sorted({o.type for o in scene.objects} - set(object_types)) + sorted(
        {r.type for r in scene.receptacles} - set(receptacle_types))
    if unknown:
        raise InvalidTask(f"scene uses types unknown to the ALFWorld domain: {unknown}; "
                          f"object types must come from alfworld.gen.constants (known: {sorted(declared_types)})")
    m = mangle
    objects = sorted(scene.objects, key=lambda o: o.id)
    receptacles = sorted(scene.receptacles, key=lambda r: r.id)
    header = ["(define (problem %s)" % m(scene.problem_name), "(:domain alfred)", "(:objects", "agent1 - agent"]
    header += [f"{t} - object" for t in object_types]
    header += [f"{t}Type - otype" for t in object_types]
    header += [f"{t}Type - rtype" for t in receptacle_types]
    header += [f"        {m(o.id)} - object" for o in objects]
    header += [f"        {m(r.id)} - receptacle" for r in receptacles]
    header += [f"        {m(loc)} - location" for loc in scene.locations()]
    header.append("        )")

    facts = [f"(receptacleType {m(r.id)} {r.type}Type)" for r in receptacles]
    facts += [f"(objectType {m(o.id)} {o.type}Type)" for o in objects]
    facts += [f"(canContain {rt}Type {ot}Type)" for rt, ot in _can_contain_pairs(scene)]
    for ability in ("pickupable", "isReceptacleObject"):
        facts += [f"({ability} {m(o.id)})" for o in objects if ability in o.abilities]
    facts += [f"(openable {m(r.id)})" for r in receptacles if r.openable]
    facts.append(f"(atLocation agent1 {m(scene.agent_location)})")
    facts += [f"(opened {m(r.id)})" for r in receptacles if r.opened]
    for ability in ("cleanable", "heatable", "coolable", "toggleable", "sliceable"):
        facts += [f"({ability} {m(o.id)})" for o in objects if ability in o.abilities]
    for state in STATES:
        facts += [f"({state} {m(o.id)})" for o in objects if state in o.states]
    facts += [f"(inReceptacle {m(o.id)} {m(o.receptacle)})" for o in objects if o.receptacle]
    facts += [f"(inReceptacleObject {m(o.id)} {m(o.inside)})" for o in objects if o.inside]
    facts += [f"(receptacleAtLocation {m(r.id)} {m(r.location)})" for r in receptacles]
    facts += [f"(objectAtLocation {m(o.id)} {m(loc)})" for o in objects if (loc := scene.object_location(o))]
    facts += list(scene.extra_facts)
    init = ["(:init", ""] + [f"        {fact}" for fact in facts] + ["        )"]
    return "\n".join(header) + "\n    \n\n" + "\n".join(init) + "\n    \n\n" + goal_pddl(scene.goal).strip("\n") + "\n"


# ----------------------------------------------------------------------------------------------- parse

_TOKEN_RE = re.compile(r"\(|\)|[^\s()]+")


def _section(text: str, keyword: str) -> str | None:
    """The balanced ``(keyword ...)`` block of ``text``, or None."""
    match = re.search(r"\(\s*" + re.escape(keyword) + r"\b", text, flags=re.IGNORECASE)
    if not match:
        return None
    depth = 0
    for index in range(match.start(), len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return text[match.start():index + 1]
    raise InvalidTask(f"unbalanced parentheses in the {keyword} section of the PDDL problem")


def _strip_comments(text: str) -> str:
    return re.sub(r";[^\n]*", "", text)


def _typed_names(block: str) -> list[tuple[str, str]]:
    tokens = _TOKEN_RE.findall(block)[2:-1]  # drop "(", ":objects" and the closing ")"
    pairs, pending = [], []
    index = 0
    while index < len(tokens):
        if tokens[index] == "-" and index + 1 < len(tokens):
            pairs += [(name, tokens[index + 1]) for name in pending]
            pending = []
            index += 2
        else:
            pending.append(tokens[index])
            index += 1
    return pairs


def _facts(block: str) -> list[list[str]]:
    body = block[block.index(":init") + len(":init"):block.rindex(")")]
    return [fact.split() for fact in re.findall(r"\(([^()]*)\)", body)]


def _parse_goal(goal_block: str, goal_hint: dict | None) -> Goal:
    hint = dict(goal_hint or {})
    params = hint.get("pddl_params") or {}
    text = hint.get("text", "")
    task_type = hint.get("task_type")
    if task_type and params:
        return Goal(task_type=task_type, object_target=params.get("object_target", ""),
                    parent_target=params.get("parent_target", ""), toggle_target=params.get("toggle_target", ""),
                    mrecep_target=params.get("mrecep_target", ""), object_sliced=bool(params.get("object_sliced")),
                    text=text)
    lowered = goal_block.lower()
    if "istoggled" in lowered:
        task_type = "look_at_obj_in_light"
    elif "inreceptacleobject" in lowered:
        task_type = "pick_and_place_with_movable_recep"
    elif "?o2" in lowered:
        task_type = "pick_two_obj_and_place"
    elif "isclean" in lowered:
        task_type = "pick_clean_then_place_in_recep"
    elif "ishot" in lowered:
        task_type = "pick_heat_then_place_in_recep"
    elif "iscool" in lowered:
        task_type = "pick_cool_then_place_in_recep"
    else:
        task_type = "pick_and_place_simple"
    types = dict(re.findall(r"\((?:objectType|receptacleType)\s+(\?\w+)\s+(\w+?)Type\s*\)", goal_block, flags=re.I))
    obj = types.get("?o") or types.get("?o1") or ""
    if not obj:
        raise InvalidTask("could not find the target object type (objectType ?o XType) in the PDDL goal: "
                          f"{goal_block[:300]!r}; pass goal_hint={{'task_type': ..., 'pddl_params': ...}}")
    return Goal(task_type=task_type, object_target=obj, parent_target=types.get("?r", ""),
                toggle_target=types.get("?ot", ""), mrecep_target=types.get("?mo", ""),
                object_sliced="issliced" in lowered, text=text)


def parse_problem(text: str, *, floor_plan: str = "", goal_hint: dict | None = None) -> Scene:
    """Read an ALFWorld PDDL problem (real ``initial_state.pddl`` or generated) into a :class:`Scene`.

    ``goal_hint`` may carry ``task_type``, ``pddl_params`` (as in ``traj_data.json``) and ``text`` (the
    goal sentence); without it the task type and targets are read from the ``(:goal ...)`` block.
    """
    clean = _strip_comments(text)
    objects_block, init_block, goal_block = (_section(clean, k) for k in (":objects", ":init", ":goal"))
    if not (objects_block and init_block and goal_block):
        raise InvalidTask("expected a PDDL problem with (:objects ...), (:init ...) and (:goal ...) sections; "
                          f"got text starting {text[:120]!r}")
    name_match = re.search(r"\(\s*problem\s+([^\s()]+)", clean, flags=re.I)
    objects: dict[str, SceneObject] = {}
    receptacles: dict[str, Receptacle] = {}
    for name, kind in _typed_names(objects_block):
        if kind == "object" and "_bar_" in name:
            objects[name] = SceneObject(id=demangle(name), type="")
        elif kind == "receptacle":
            receptacles[name] = Receptacle(id=demangle(name), type="", location="")
    scene = Scene(floor_plan=floor_plan, agent_location="", receptacles=list(receptacles.values()),
                  objects=list(objects.values()), goal=_parse_goal(goal_block, goal_hint),
                  problem_name=demangle(name_match.group(1)) if name_match else "plan_rla")
    for fact in _facts(init_block):
        _apply_fact(scene, fact, objects, receptacles)
    receptacle_locations = {r.id: r.location for r in scene.receptacles}
    for obj in scene.objects:  # keep an explicit location only where it differs from the receptacle's
        if obj.location and receptacle_locations.get(obj.receptacle) == obj.location:
            obj.location = None
    missing = [r.id for r in scene.receptacles if not r.type or not r.location]
    missing += [o.id for o in scene.objects if not o.type]
    if missing or not scene.agent_location:
        raise InvalidTask(f"PDDL problem lacks types/locations for {missing[:5]} or the agent's atLocation")
    return scene


def _apply_fact(scene: Scene, fact: list[str], objects: dict, receptacles: dict) -> None:
    pred, args = fact[0], fact[1:]
    key = pred.lower()
    obj = objects.get(args[0]) if args else None
    rec = receptacles.get(args[0]) if args else None
    if key == "receptacletype" and rec:
        rec.type = args[1][:-4]
    elif key == "objecttype" and obj:
        obj.type = args[1][:-4]
    elif key == "receptacleatlocation" and rec:
        rec.location = demangle(args[1])
    elif key == "objectatlocation" and obj:
        obj.location = demangle(args[1])
    elif key == "openable" and rec:
        rec.openable = True
    elif key == "opened" and rec:
        rec.opened = True
    elif key == "atlocation" and len(args) == 2:
        scene.agent_location = demangle(args[1])
    elif key == "inreceptacle" and obj and args[1] in receptacles:
        obj.receptacle = demangle(args[1])
    elif key == "inreceptacleobject" and obj and args[1] in objects:
        obj.inside = demangle(args[1])
    elif key == "cancontain":
        scene.can_contain.append((args[0][:-4], args[1][:-4]))
    elif obj and len(args) == 1 and key in {a.lower(): a for a in ABILITIES}:
        obj.abilities.append({a.lower(): a for a in ABILITIES}[key])
    elif obj and len(args) == 1 and key in {s.lower(): s for s in STATES}:
        obj.states.append({s.lower(): s for s in STATES}[key])
    else:
        scene.extra_facts.append("(" + " ".join(fact) + ")")


# ----------------------------------------------------------------------------------------------- names

def display_names(scene: Scene) -> dict[str, str]:
    """The name the text game shows for each receptacle and object id: ``{"Apple|...": "apple 1"}``.

    Mirrors alfworld's ``Demangler``: ids are lower-cased PDDL names, grouped by the prefix before the
    first ``_bar_`` (``sink...basin`` becomes ``sinkbasin``); in sorted id order, each group hands out its
    numbers from the highest down.
    """
    entities = {mangle(r.id).lower(): r.id for r in scene.receptacles}
    entities.update({mangle(o.id).lower(): o.id for o in scene.objects})
    locations = {mangle(loc).lower(): loc for loc in scene.locations()}

    def prefix(pddl_id: str) -> str:
        return pddl_id.split("_bar_", 1)[0] + ("basin" if "basin" in pddl_id else "")

    every = {**entities, **locations}  # locations are numbered too ("loc 3"), though never shown
    counts = Counter(prefix(pid) for pid in every if "_bar_" in pid)
    remaining = {name: list(range(1, count + 1)) for name, count in counts.items()}
    names = {}
    for pid in sorted(every):
        if "_bar_" in pid and pid in entities:
            group = prefix(pid)
            names[entities[pid]] = f"{group} {remaining[group].pop()}"
    return names
