"""Generate new ALFWorld games offline from the floor plans, domain and grammar shipped in the alfworld wheel.

:func:`sample_scene` builds a :class:`~rla_envs.alfworld.scene.Scene` for one floor plan and task type:
the floor plan's receptacles (with their poses from ``FloorPlanN-openable.json``; types the scene lists
without a pose get a free grid point of ``FloorPlanN-layout.npy``), the object types it lists placed in
compatible receptacles (``alfworld.gen.constants.VAL_RECEPTACLE_OBJECTS``) and a goal from
``alfworld.gen.goal_library``. :func:`generate_game` renders it, plays the scripted walkthrough (in the fast
:class:`~rla_envs.alfworld.engine.AlfWorldEngine`, or in the stock TextWorld PDDL engine on request) and
returns the ``game.tw-pddl`` dict, resampling when a check fails.
:func:`split_jobs` / :func:`generate_split` produce the seeded ``train`` / ``valid_seen`` / ``valid_unseen``
splits (``valid_unseen`` uses floor plans that ``train`` never does).
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import re
import warnings
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rla_envs.core.errors import InvalidTask, TaskGenerationError
from rla_envs.alfworld.scene import TASK_TYPES, Goal, Receptacle, Scene, SceneObject, goal_text
from rla_envs.alfworld.tasks import game_from_scene

__all__ = [
    "SPLITS", "UNSEEN_FLOOR_PLANS", "FloorPlan", "floor_plan_names", "load_floor_plan", "split_floor_plans",
    "goal_options", "feasible_task_types", "sample_scene", "generate_game", "split_jobs", "generate_split",
]

SPLITS = ("train", "valid_seen", "valid_unseen")
#: Floor plans held out of ``train``/``valid_seen``: ALFRED's valid_unseen scenes (10, 219, 308, 424) plus
#: one more per room type, so that every task type has unseen floor plans.
UNSEEN_FLOOR_PLANS = ("FloorPlan10", "FloorPlan20", "FloorPlan219", "FloorPlan227",
                      "FloorPlan308", "FloorPlan318", "FloorPlan414", "FloorPlan424")
ROOM_RANGES = {"Kitchen": range(1, 31), "LivingRoom": range(201, 231),
               "Bedroom": range(301, 331), "Bathroom": range(401, 431)}
LAMP_TYPES = ("DeskLamp", "FloorLamp")
# Furniture a lamp may stand on (lamps have no entry in VAL_RECEPTACLE_OBJECTS).
LAMP_HOSTS = ("SideTable", "Desk", "Dresser", "Shelf", "CoffeeTable", "DiningTable", "TVStand")
# The receptacle that performs the state change; it cannot also be where the object ends.
STATE_CHANGER = {"pick_clean_then_place_in_recep": ("SinkBasin", "Cleanable"),
                 "pick_heat_then_place_in_recep": ("Microwave", "Heatable"),
                 "pick_cool_then_place_in_recep": ("Fridge", "Coolable")}
MAX_ATTEMPTS = 8


def _constants():
    from alfworld.gen import constants

    return constants


@dataclass(frozen=True)
class FloorPlan:
    """What the alfworld wheel knows about one AI2-THOR floor plan."""

    name: str  # "FloorPlan1"
    room: str  # "Kitchen", "LivingRoom", "Bedroom" or "Bathroom"
    object_types: tuple[str, ...]  # every type the scene holds (FloorPlanN-objects.json)
    poses: tuple[tuple[str, tuple[float, float, int, int]], ...]  # receptacle id -> (x, z, rotation, horizon)
    grid: tuple[tuple[float, float], ...]  # reachable (x, z) points (FloorPlanN-layout.npy)


def _layouts_dir() -> Path:
    import alfworld.gen

    return Path(alfworld.gen.__path__[0]) / "layouts"


def floor_plan_names() -> list[str]:
    """Every floor plan shipped in the alfworld wheel, in numeric order (120 of them)."""
    numbers = sorted(int(m.group(1)) for p in _layouts_dir().glob("FloorPlan*-objects.json")
                     if (m := re.match(r"FloorPlan(\d+)-", p.name)))
    return [f"FloorPlan{n}" for n in numbers]


@lru_cache(maxsize=None)
def load_floor_plan(name: str) -> FloorPlan:
    """Read ``FloorPlanN-{objects,openable}.json`` and ``-layout.npy`` from the alfworld wheel."""
    import numpy as np

    match = re.fullmatch(r"FloorPlan(\d+)", name)
    folder = _layouts_dir()
    if not match or not (folder / f"{name}-objects.json").exists():
        raise TaskGenerationError(f"unknown floor plan {name!r}; expected one of {floor_plan_names()[:4]}... "
                                  f"(the names of {folder}/FloorPlanN-objects.json)")
    number = int(match.group(1))
    room = next(room for room, numbers in ROOM_RANGES.items() if number in numbers)
    object_types = tuple(json.loads((folder / f"{name}-objects.json").read_text()))
    openable = json.loads((folder / f"{name}-openable.json").read_text())
    poses = tuple((key, (float(p[0]), float(p[1]), int(p[2]), int(p[3]))) for key, p in sorted(openable.items()))
    grid = tuple((float(x), float(z)) for x, z in np.load(folder / f"{name}-layout.npy").tolist())
    return FloorPlan(name=name, room=room, object_types=object_types, poses=poses, grid=grid)


def split_floor_plans(split: str) -> list[str]:
    """The floor plans a split draws from: ``valid_unseen`` gets :data:`UNSEEN_FLOOR_PLANS`, others the rest."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    names = floor_plan_names()
    if split == "valid_unseen":
        return [n for n in names if n in UNSEEN_FLOOR_PLANS]
    return [n for n in names if n not in UNSEEN_FLOOR_PLANS]


# ------------------------------------------------------------------------------------------ feasibility

def _location(x: float, z: float, rotation: int, horizon: int) -> str:
    """ALFRED's location id: grid coordinates in 0.25 m steps, rotation index, camera horizon."""
    return f"loc|{int(round(x / 0.25))}|{int(round(z / 0.25))}|{int(rotation // 90) % 4}|{int(horizon)}"


def _receptacle_type(key: str) -> str:
    parts = key.split("|")
    return parts[-1] if len(parts) > 4 else parts[0]


def _static_receptacle_types(plan: FloorPlan) -> set[str]:
    constants = _constants()
    static = constants.RECEPTACLES - set(constants.MOVABLE_RECEPTACLES)
    types = {_receptacle_type(key) for key, _ in plan.poses}
    return {t for t in types | set(plan.object_types) if t in static}


def _placeable_types(plan: FloorPlan) -> set[str]:
    """Object types of the plan that some receptacle type can hold (movable receptacles included)."""
    constants = _constants()
    containable = set().union(*constants.VAL_RECEPTACLE_OBJECTS.values())
    static = constants.RECEPTACLES - set(constants.MOVABLE_RECEPTACLES)
    return {t for t in plan.object_types if t in containable and t not in static and t in constants.OBJECTS}


def _holders(object_type: str, receptacle_types: set[str]) -> set[str]:
    val = _constants().VAL_RECEPTACLE_OBJECTS
    return {r for r in receptacle_types if object_type in val.get(r, ())}


def goal_options(plan: FloorPlan, task_type: str) -> list[Goal]:
    """Every (object, parent/toggle) goal that ``task_type`` allows in this floor plan, sorted."""
    constants = _constants()
    if task_type not in TASK_TYPES:
        raise TaskGenerationError(f"unknown task type {task_type!r}; expected one of {TASK_TYPES}")
    if plan.room not in constants.GOALS_VALID[task_type]:
        return []
    receptacle_types = _static_receptacle_types(plan)
    objects = sorted(_placeable_types(plan))
    if task_type == "look_at_obj_in_light":
        if not receptacle_types & set(LAMP_HOSTS):
            return []
        lamps = [lamp for lamp in LAMP_TYPES if lamp in plan.object_types]
        return [Goal(task_type, obj, toggle_target=lamp) for lamp in lamps for obj in objects
                if _holders(obj, receptacle_types)]
    options = []
    changer, ability = STATE_CHANGER.get(task_type, (None, None))
    if changer and changer not in receptacle_types:
        return []
    for obj in objects:
        if ability and obj not in constants.VAL_ACTION_OBJECTS[ability]:
            continue
        holders = _holders(obj, receptacle_types)
        for parent in sorted(holders - {changer}):
            # The object must be able to start somewhere else (and not already cold in a fridge).
            start_excluded = {parent, "Fridge"} if task_type == "pick_cool_then_place_in_recep" else {parent}
            if holders - start_excluded:
                options.append(Goal(task_type, obj, parent_target=parent))
    return options


def feasible_task_types(floor_plan: str) -> list[str]:
    """The task types that :func:`generate_game` can build in this floor plan."""
    plan = load_floor_plan(floor_plan)
    return [t for t in TASK_TYPES if goal_options(plan, t)]


# ------------------------------------------------------------------------------------------ sampling

def _coordinate_id(type_name: str, rng: random.Random, near: tuple[float, float, float]) -> str:
    x, y, z = (c + rng.uniform(-0.6, 0.6) for c in near)
    return f"{type_name}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}"


def _id_coordinates(receptacle_id: str) -> tuple[float, float, float]:
    try:
        return tuple(float(v) for v in receptacle_id.split("|")[1:4])  # type: ignore[return-value]
    except (ValueError, IndexError):
        return (0.0, 0.5, 0.0)


def _sample_receptacles(plan: FloorPlan, rng: random.Random, used_locations: set[str]) -> list[Receptacle]:
    constants = _constants()
    static_types = _static_receptacle_types(plan)
    receptacles = []
    for key, (x, z, rotation, horizon) in plan.poses:
        rtype = _receptacle_type(key)
        if rtype in static_types:
            receptacles.append(Receptacle(key, rtype, _location(x, z, rotation, horizon),
                                          openable=rtype in constants.OPENABLE_CLASS_SET))
    present = {r.type for r in receptacles}
    for rtype in sorted(static_types - present):  # listed in the scene, no pose shipped
        for _ in range(4 if rtype == "StoveBurner" else 1):
            for _attempt in range(100):
                x, z = rng.choice(plan.grid)
                loc = _location(x, z, rng.randrange(4) * 90, 30)
                if loc not in used_locations:
                    break
            used_locations.add(loc)
            taken_ids = {r.id for r in receptacles}
            while True:  # four burners may land on one grid point: their heights keep their ids apart
                coordinates = f"{x:+06.2f}|{rng.uniform(0.2, 1.0):+06.2f}|{z:+06.2f}"
                # ALFRED names basins after their fixture ("Sink|x|y|z|SinkBasin"), which alfworld's demangler
                # turns into "sinkbasin 1"; a bare "SinkBasin|..." id would read "sinkbasinbasin 1".
                receptacle_id = (f"{rtype[:-len('Basin')]}|{coordinates}|{rtype}" if rtype.endswith("Basin")
                                 else f"{rtype}|{coordinates}")
                if receptacle_id not in taken_ids:
                    break
            receptacles.append(Receptacle(receptacle_id, rtype, loc, openable=rtype in constants.OPENABLE_CLASS_SET))
    return receptacles


def _abilities(object_type: str) -> list[str]:
    constants = _constants()
    actions = constants.VAL_ACTION_OBJECTS
    abilities = [] if object_type in LAMP_TYPES else ["pickupable"]
    if object_type in constants.MOVABLE_RECEPTACLES_SET:
        abilities.append("isReceptacleObject")
    for ability, key in (("cleanable", "Cleanable"), ("heatable", "Heatable"), ("coolable", "Coolable"),
                         ("toggleable", "Toggleable"), ("sliceable", "Sliceable")):
        if object_type in actions[key]:
            abilities.append(ability)
    return abilities


def sample_scene(floor_plan: str, task_type: str, seed: int | str) -> Scene:
    """A random scene of ``floor_plan`` with a ``task_type`` goal (deterministic in its arguments).

    Raises ``TaskGenerationError`` when the floor plan cannot host the task type (no microwave for a heat
    task, no lamp for a look task, a room type ALFRED never uses for it).
    """
    plan = load_floor_plan(floor_plan)
    options = goal_options(plan, task_type)
    if not options:
        raise TaskGenerationError(
            f"{floor_plan} ({plan.room}) cannot host {task_type}: no object/receptacle pair fits "
            f"(room types allowed: {sorted(_constants().GOALS_VALID.get(task_type, ()))}); "
            f"feasible here: {feasible_task_types(floor_plan)}")
    rng = random.Random(f"rla-alfworld:{floor_plan}:{task_type}:{seed}")
    goal = rng.choice(options)
    goal.text = goal_text(goal, rng.randrange(2))
    used_locations: set[str] = set()
    receptacles = _sample_receptacles(plan, rng, used_locations)
    used_locations |= {r.location for r in receptacles}
    by_type: dict[str, list[Receptacle]] = {}
    for rec in receptacles:
        by_type.setdefault(rec.type, []).append(rec)

    counts = {t: (2 if rng.random() < 0.3 else 1) for t in sorted(_placeable_types(plan))}
    counts[goal.object_target] = rng.randint(2, 3) if task_type == "pick_two_obj_and_place" else rng.randint(1, 3)
    objects: list[SceneObject] = []
    taken_ids = {r.id for r in receptacles}
    for otype, count in counts.items():
        holders = sorted(_holders(otype, set(by_type)))
        if otype == goal.object_target:  # never start in the goal receptacle (or already cold in the fridge)
            holders = [h for h in holders if h not in (goal.parent_target, "Fridge" if "cool" in task_type else "")]
        for _ in range(count):
            if holders:
                host = rng.choice(by_type[rng.choice(holders)])
                objects.append(new_object(otype, host, rng, taken_ids))
    if goal.toggle_target:
        objects.append(new_object(goal.toggle_target, rng.choice(_lamp_hosts(receptacles)), rng, taken_ids))
    for _attempt in range(200):
        x, z = rng.choice(plan.grid)
        agent_location = _location(x, z, rng.randrange(4) * 90, 30)
        if agent_location not in used_locations:
            break
    return Scene(floor_plan=floor_plan, agent_location=agent_location, receptacles=receptacles, objects=objects,
                 goal=goal, problem_name=re.sub(r"\W", "_", f"plan_rla_{floor_plan}_{task_type}_{seed}"))


def _lamp_hosts(receptacles: list[Receptacle]) -> list[Receptacle]:
    """The furniture a goal lamp may stand on, preferring hosts that share their location with no other receptacle.

    At a shared location only one receptacle can be "gone to" (``go to`` the other is not admissible
    there), so a lamp on the other is easily never seen; real ALFWorld lamps stand where one can find them.
    """
    hosts = [r for t in LAMP_HOSTS for r in receptacles if r.type == t]
    per_location = Counter(r.location for r in receptacles)
    alone = [r for r in hosts if per_location[r.location] == 1]
    return alone or hosts


def new_object(otype: str, host: Receptacle, rng: random.Random, taken_ids: set[str]) -> SceneObject:
    """A fresh object of type ``otype`` in ``host`` with an id not in ``taken_ids`` (which it joins)."""
    while True:
        object_id = _coordinate_id(otype, rng, _id_coordinates(host.id))
        if object_id not in taken_ids:
            taken_ids.add(object_id)
            return SceneObject(object_id, otype, receptacle=host.id, abilities=_abilities(otype))


# ------------------------------------------------------------------------------------------ games

def generate_game(floor_plan: str, task_type: str, seed: int, *, verify: bool = True, engine: str = "fast") -> dict:
    """A new, verified ALFWorld game in the ``game.tw-pddl`` format.

    Returns ``{"pddl_domain", "grammar", "pddl_problem", "solvable": True, "walkthrough": [...]}`` plus the
    keys ``"goal"`` (the goal sentence), ``"task_type"``, ``"pddl_params"`` and ``"floor_plan"`` (extra keys
    that TextWorld ignores). With ``verify`` (default) the walkthrough must win with admissible commands
    only, played in ``engine``: ``"fast"`` (this process's ``AlfWorldEngine``, reused across games) or
    ``"stock"`` (TextWorld's ``PddlEnv`` + ``AlfredDemangler``; same verdicts, 2-8 s per game). A failing
    sample is redrawn (seed ``seed``, then derived seeds) up to a few times before ``TaskGenerationError``.
    """
    from rla_envs.alfworld.walkthrough import ENGINES, play_walkthrough

    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")
    failures = []
    for attempt in range(MAX_ATTEMPTS):
        scene = sample_scene(floor_plan, task_type, seed if attempt == 0 else f"{seed}_retry{attempt}")
        try:
            game = game_from_scene(scene)
        except InvalidTask as exc:  # the sampled scene has no scripted solution
            failures.append(str(exc))
            continue
        if not verify:
            return game
        try:
            result = play_walkthrough(game, engine=engine)
        except InvalidTask as exc:  # the engine refused the problem (a generator bug): resample, keep the reason
            failures.append(str(exc))
            continue
        if result.won:
            return game
        failures.append(result.reason)
    raise TaskGenerationError(f"no winnable {task_type} game in {floor_plan} (seed {seed}) after {MAX_ATTEMPTS} "
                              f"samples; last reasons: {failures[-3:]}")


def split_jobs(split: str, n_per_type: int, seed: int = 0,
               task_types: tuple[str, ...] = TASK_TYPES) -> list[tuple[str, str, int]]:
    """The (floor_plan, task_type, game_seed) triples of a split: ``n_per_type`` per task type, seeded.

    Floor plans are spread evenly (each feasible plan of the split once before any repeats);
    ``valid_seen`` draws its game seeds from another stream than ``train``, so it holds new placements.
    """
    if n_per_type < 0:
        raise ValueError(f"n_per_type must be >= 0, got {n_per_type}")
    plans = split_floor_plans(split)
    stream = "train" if split == "train" else "valid"
    rng = random.Random(f"rla-alfworld-split:{stream}:{split}:{seed}")
    jobs = []
    for task_type in task_types:
        feasible = [p for p in plans if goal_options(load_floor_plan(p), task_type)]
        if not feasible:
            raise TaskGenerationError(f"no floor plan of split {split!r} can host {task_type}")
        order = []
        while len(order) < n_per_type:
            batch = feasible[:]
            rng.shuffle(batch)
            order += batch
        jobs += [(plan, task_type, rng.randrange(2**31)) for plan in order[:n_per_type]]
    return jobs


def _generate_job(job: tuple[str, str, int], engine: str = "fast") -> tuple[tuple[str, str, int], dict | None, str]:
    floor_plan, task_type, game_seed = job
    try:
        return job, generate_game(floor_plan, task_type, game_seed, engine=engine), ""
    except TaskGenerationError as exc:
        return job, None, str(exc)


def generate_split(split: str, n_per_type: int, seed: int = 0, *, workers: int = 1, progress: bool = False,
                   engine: str = "fast", skip: Collection[tuple[str, str, int]] = ()
                   ) -> Iterator[tuple[tuple[str, str, int], dict]]:
    """Yield ``(job, game)`` for every job of :func:`split_jobs` not in ``skip``, in job order, verified.

    ``workers > 1`` plays the walkthroughs in that many processes, each with its own engine reused
    across its games (the PDDL engine is not thread-safe; processes are forked where the OS allows, so
    callers need no ``if __name__ == "__main__"`` guard). ``engine`` is what verifies each walkthrough
    (see :func:`generate_game`). A job whose game cannot be built is skipped with a warning;
    ``progress`` shows a tqdm bar.
    """
    skip = set(skip)
    jobs = [job for job in split_jobs(split, n_per_type, seed) if job not in skip]
    make = functools.partial(_generate_job, engine=engine)
    with contextlib.ExitStack() as stack:
        results: Iterator = map(make, jobs)
        if workers > 1 and len(jobs) > 1:
            import multiprocessing

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            pool = stack.enter_context(multiprocessing.get_context(method).Pool(min(workers, len(jobs))))
            results = pool.imap(make, jobs)
        bar = None
        if progress:  # after the fork: tqdm starts a monitor thread
            from tqdm import tqdm

            bar = stack.enter_context(tqdm(total=len(jobs), desc=f"generating ALFWorld {split} games", unit="game"))
        for job, game, error in results:
            if bar is not None:
                bar.update(1)
            if game is None:
                warnings.warn(f"skipping ALFWorld job {job}: {error}", stacklevel=2)
                continue
            yield job, game
