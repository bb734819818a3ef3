"""ALFWorld's step-label oracle: a privileged planner that re-plans from any game state.

d(s), the number of steps needed to win from state s (see :mod:`rla_envs.core.labels` for the labels built
from it), is measured by a *privileged* planner (it reads the game's facts, so it knows where hidden
objects are): neither expert of :mod:`rla_envs.alfworld.expert` can do this (the walkthrough is open-loop
and has no answer after a detour; the hand-coded expert searches, so its step count measures search luck
and its own search order, not the distance of the state). The planner enumerates every way of finishing
the task — which object(s) to use, which goal receptacle, which sink/microwave/fridge or lamp, where to put
down a wrongly held object — builds each as a command list (go to, open, take, clean/heat/cool, move, use)
and keeps the shortest; in ALFWorld's dynamics (every ``go to`` costs 1, one object in hand, receptacles
stay open) that is the true distance. So a ``go to`` somewhere irrelevant while the agent had to go
somewhere anyway is good; going away from where the next action had to happen, or taking a wrong object,
is bad.

With ``verify=True`` each plan is played in the game engine after replaying the action prefix and must
win on its last command, so a planner error raises (:class:`PlanCheckFailed`) instead of producing a wrong
label. Cost per episode of T steps: T engine steps and T planner calls (~7 ms a step on a kitchen);
verified, O(T^2) engine steps (~12x slower). Verification is off by default: the tests verify every plan on
random-walk episodes of all six task types, where it never failed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rla_envs.alfworld.tasks import game_from_task
from rla_envs.alfworld.walkthrough import fast_engine
from rla_envs.core.errors import InvalidTask, RlaError
from rla_envs.core.labels import INF, as_task, labels_from_distances
from rla_envs.core.task import Task, thaw

__all__ = ["PlanCheckFailed", "alfworld_plan", "distance_to_goal", "alfworld_step_labels"]


class PlanCheckFailed(RlaError, AssertionError):
    """The privileged ALFWorld planner's plan did not win when played (a planner bug: please report it)."""


# ------------------------------------------------------------------------------------------- world model
#: Task types whose object must be transformed first: (command verb, station receptacle type, state fact).
_TREATMENTS = {"pick_clean_then_place_in_recep": ("clean", "sinkbasintype", "isclean"),
               "pick_heat_then_place_in_recep": ("heat", "microwavetype", "ishot"),
               "pick_cool_then_place_in_recep": ("cool", "fridgetype", "iscool")}


@dataclass
class _World:
    """What the planner needs from one ALFWorld game state (PDDL ids, display names for commands)."""

    agent_at: str = ""
    holding: str | None = None
    receptacle_at: dict[str, str] = field(default_factory=dict)  # receptacle -> location
    receptacle_type: dict[str, str] = field(default_factory=dict)
    openable: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)
    object_type: dict[str, str] = field(default_factory=dict)
    object_in: dict[str, str] = field(default_factory=dict)  # object -> receptacle (not receptacle objects)
    flags: dict[str, set[str]] = field(default_factory=dict)  # object -> unary facts (isclean, pickupable...)
    can_contain: set[tuple[str, str]] = field(default_factory=set)
    names: dict[str, str] = field(default_factory=dict)


def _world_from_state(state: Mapping[str, Any]) -> _World:
    """The planner's view of an :class:`~rla_envs.alfworld.engine.AlfWorldEngine` game state."""
    world = _World(names={key: info.name for key, info in state["_entity_infos"].items()})
    for fact in state["_facts"]:
        args = [variable.name for variable in fact.arguments]
        name = fact.name
        if name == "atlocation":
            world.agent_at = args[1]
        elif name == "holds":
            world.holding = args[1]
        elif name == "receptacleatlocation":
            world.receptacle_at[args[0]] = args[1]
        elif name == "receptacletype":
            world.receptacle_type[args[0]] = args[1]
        elif name == "objecttype":
            world.object_type[args[0]] = args[1]
        elif name == "inreceptacle":
            world.object_in[args[0]] = args[1]
        elif name == "cancontain":
            world.can_contain.add((args[0], args[1]))
        elif name == "openable":
            world.openable.add(args[0])
        elif name == "opened":
            world.opened.add(args[0])
        elif len(args) == 1:
            world.flags.setdefault(args[0], set()).add(name)
    return world


class _Route:
    """A command list under construction, tracking where the agent stands and what is open."""

    def __init__(self, world: _World):
        self.world = world
        self.location = world.agent_at
        self.opened = set(world.opened)
        self.commands: list[str] = []

    def go(self, receptacle: str) -> None:
        """Walk to ``receptacle``'s location (no command when the agent already stands there)."""
        if self.world.receptacle_at[receptacle] != self.location:
            self.commands.append(f"go to {self.world.names[receptacle]}")
            self.location = self.world.receptacle_at[receptacle]

    def reach(self, receptacle: str) -> None:
        """Go to ``receptacle`` and open it if it is closed (needed to take from it or put into it)."""
        self.go(receptacle)
        if receptacle in self.world.openable and receptacle not in self.opened:
            self.commands.append(f"open {self.world.names[receptacle]}")
            self.opened.add(receptacle)

    def take(self, obj: str) -> None:
        """Reach the receptacle holding ``obj`` and pick it up."""
        receptacle = self.world.object_in[obj]
        self.reach(receptacle)
        self.commands.append(f"take {self.world.names[obj]} from {self.world.names[receptacle]}")

    def put(self, obj: str, receptacle: str) -> None:
        """Reach ``receptacle`` and put the held ``obj`` in it."""
        self.reach(receptacle)
        self.commands.append(f"move {self.world.names[obj]} to {self.world.names[receptacle]}")

    def treat(self, verb: str, obj: str, station: str) -> None:
        """Clean, heat or cool the held ``obj`` at ``station`` (sink, microwave, fridge: no need to open)."""
        self.go(station)
        self.commands.append(f"{verb} {self.world.names[obj]} with {self.world.names[station]}")


# ------------------------------------------------------------------------------------------- planner
def _goal(task: Task) -> tuple[str, Mapping[str, Any]]:
    spec = thaw(task.spec)
    task_type, params = spec.get("task_type"), spec.get("pddl_params")
    if not task_type or not isinstance(params, Mapping):
        raise InvalidTask(f"task {task.id} has no spec['task_type'] / spec['pddl_params'] (spec keys: {sorted(spec)}); "
                          "step labels need an ALFWorld task")
    if params.get("object_sliced"):
        raise InvalidTask(f"task {task.id} is a sliced-object task ({task_type}); the step-label planner does not "
                          "handle slicing: leave such tasks out of process-accuracy measurements")
    return task_type, params


def _routes_with_free_hands(world: _World, keep: str | None) -> Iterator[_Route]:
    """Starting routes whose hands are free (or hold ``keep``): one per place to put a held object down."""
    held = world.holding
    if held is None or held == keep:
        yield _Route(world)
        return
    for receptacle, rtype in world.receptacle_type.items():
        if (rtype, world.object_type.get(held)) in world.can_contain:
            route = _Route(world)
            route.put(held, receptacle)
            yield route


def _placing_routes(world: _World, task_type: str, params: Mapping[str, Any]) -> Iterator[list[str]]:
    """Every sensible way to finish a pick-(treat-)place task: object order x goal receptacle x station."""
    target = params["object_target"].lower() + "type"
    parent_type = params["parent_target"].lower() + "type"
    needed = 2 if task_type == "pick_two_obj_and_place" else 1
    treatment = _TREATMENTS.get(task_type)
    usable = [o for o, t in world.object_type.items() if t == target and "pickupable" in world.flags.get(o, ())
              and (o in world.object_in or o == world.holding)]
    stations = [r for r, t in world.receptacle_type.items() if treatment and t == treatment[1]]

    def done(obj: str) -> bool:
        return treatment is None or treatment[2] in world.flags.get(obj, ())

    for parent in [r for r, t in world.receptacle_type.items() if t == parent_type]:
        settled = [o for o in usable if world.object_in.get(o) == parent and done(o)]
        if len(settled) >= needed:
            yield []
            continue
        movable = [o for o in usable if o not in settled]
        for order in itertools.permutations(movable, needed - len(settled)):
            if world.holding in order and order[0] != world.holding:
                continue
            untreated = [o for o in order if not done(o)]
            for chosen in itertools.product(stations, repeat=len(untreated)) if untreated else [()]:
                station_of = dict(zip(untreated, chosen))
                for route in _routes_with_free_hands(world, order[0]):
                    for obj in order:
                        if obj != world.holding:
                            route.take(obj)
                        if obj in station_of:
                            route.treat(treatment[0], obj, station_of[obj])
                        route.put(obj, parent)
                    yield route.commands


def _lamp_routes(world: _World, params: Mapping[str, Any]) -> Iterator[list[str]]:
    """Every sensible way to finish look_at_obj_in_light: which object, which lamp, where to drop a held one."""
    target = params["object_target"].lower() + "type"
    lamp_type = params["toggle_target"].lower() + "type"
    objects = [o for o, t in world.object_type.items() if t == target and "pickupable" in world.flags.get(o, ())
               and (o in world.object_in or o == world.holding)]
    lamps = [o for o, t in world.object_type.items() if t == lamp_type and "toggleable" in world.flags.get(o, ())
             and o in world.object_in]
    for obj, lamp in itertools.product(objects, lamps):
        for route in _routes_with_free_hands(world, obj):
            if obj != world.holding:
                route.take(obj)
            route.go(world.object_in[lamp])
            if "istoggled" not in world.flags.get(lamp, ()):
                route.commands.append(f"use {world.names[lamp]}")
            yield route.commands


def _shortest_plan(state: Mapping[str, Any], task: Task) -> list[str] | None:
    """The shortest command list that wins ``task`` from an engine ``state`` (None: no way to win)."""
    if state["won"]:
        return []
    task_type, params = _goal(task)
    world = _world_from_state(state)
    if task_type == "look_at_obj_in_light":
        routes = _lamp_routes(world, params)
    else:
        routes = _placing_routes(world, task_type, params)
    return min(routes, key=len, default=None)


# ------------------------------------------------------------------------------------------- engine
class _Replay:
    """One ALFWorld game in an engine: restart it, play commands, read its state."""

    def __init__(self, task: Task, env: Any = None):
        if env is not None and not all(hasattr(env, name) for name in ("load", "reset", "step")):
            raise TypeError(f"env must be an rla_envs.alfworld.engine.AlfWorldEngine (or None for this process's "
                            f"shared engine), got {type(env).__name__}; a gymnasium AlfWorldEnv is not accepted "
                            "because replays would desynchronise the game it has loaded")
        self.task = task
        self.engine = env if env is not None else fast_engine()
        self.engine.load(game_from_task(task))

    def restart(self, actions: Sequence[str] = ()) -> Mapping[str, Any]:
        """The state after playing ``actions`` from the start of the game."""
        state = self.engine.reset()
        for action in actions:
            state, _, _ = self.engine.step(action)
        return state

    def step(self, action: str) -> Mapping[str, Any]:
        """The state after playing ``action`` in the current game."""
        state, _, _ = self.engine.step(action)
        return state


def _check_plan(replay: _Replay, task: Task, prefix: Sequence[str], plan: Sequence[str]) -> None:
    """Play ``prefix`` then ``plan``; raise :class:`PlanCheckFailed` unless the plan wins on its last command."""
    state = replay.restart(prefix)
    for index, command in enumerate(plan):
        problem = None
        if state["won"]:
            problem = f"the game was already won before plan step {index}"
        elif command not in state["admissible_commands"]:
            problem = f"plan step {index} {command!r} is not admissible"
        if problem:
            raise PlanCheckFailed(f"task {task.id}: {problem} (prefix {list(prefix)}, plan {list(plan)})")
        state = replay.step(command)
    if not state["won"]:
        raise PlanCheckFailed(f"task {task.id}: the plan {list(plan)} did not win after prefix {list(prefix)}")


def alfworld_plan(task: Task | Mapping[str, Any], actions: Sequence[str] = (), *, env: Any = None,
                  verify: bool = False) -> list[str] | None:
    """The shortest command list that wins ``task`` after ``actions`` were played (None: cannot be won).

    Privileged: it reads where every object is. ``env`` is an ``AlfWorldEngine`` to play in (default:
    this process's shared engine). With ``verify`` the plan is played and must win on its last command.
    """
    task = as_task(task)
    replay = _Replay(task, env)
    plan = _shortest_plan(replay.restart(actions), task)
    if verify and plan:
        _check_plan(replay, task, actions, plan)
    return plan


def distance_to_goal(task: Task | Mapping[str, Any], actions: Sequence[str] = (), *, env: Any = None,
                     max_expert_steps: int = 50, verify: bool = False) -> float:
    """d(s): how many steps the privileged ALFWorld expert needs to win from the state after ``actions``.

    0 when that state is won; inf when it cannot be won within ``max_expert_steps``. See
    :func:`alfworld_plan` for ``env`` and ``verify``.
    """
    plan = alfworld_plan(task, actions, env=env, verify=verify)
    if plan is None or len(plan) > max_expert_steps:
        return INF
    return float(len(plan))


def alfworld_step_labels(task: Task | Mapping[str, Any], actions: Sequence[str], *, max_expert_steps: int = 50,
                         env: Any = None, verify: bool = False, rule: str = "no_regress") -> list[bool | None]:
    """One label per action of an ALFWorld trajectory: True good, False bad, None undetermined.

    See the module docstring for the definition. ``env``: an ``AlfWorldEngine`` to replay in (default:
    this process's shared engine, loaded once per game); ``verify``: play every plan to check it.
    """
    task, actions = as_task(task), list(actions)
    if max_expert_steps < 0:
        raise ValueError(f"max_expert_steps must be >= 0, got {max_expert_steps}")
    replay = _Replay(task, env)
    plans = [_shortest_plan(replay.restart(), task)]
    for action in actions:
        if plans[-1] == []:
            break  # won: later actions get no label
        plans.append(_shortest_plan(replay.step(action), task))
    if verify:
        for index, plan in enumerate(plans):
            if plan:
                _check_plan(replay, task, actions[:index], plan)
    distances: list[float | None] = [INF if plan is None or len(plan) > max_expert_steps else float(len(plan))
                                     for plan in plans]
    distances += [None] * (len(actions) + 1 - len(distances))  # actions played after the win
    return labels_from_distances(distances, rule)
