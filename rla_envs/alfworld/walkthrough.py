"""The scripted (privileged) walkthrough of an ALFWorld scene, and its check in a game engine.

:func:`walkthrough` reads the scene (it knows where every object lies) and returns the shortest sensible
command list in ALFWorld's demangled text ("go to countertop 1", "take apple 1 from countertop 1",
"clean apple 1 with sinkbasin 1", "move apple 1 to fridge 1", "use desklamp 1"). It is a reference
solution, not a demonstration of search: it never looks anywhere the target is not.

:func:`play_walkthrough` plays commands, requiring each one to be admissible, and reports whether the game
was won. It plays in this process's :class:`~rla_envs.alfworld.engine.AlfWorldEngine` (``engine="fast"``,
the default: one engine per process and thread, reused across games) or in textworld's stock
``PddlEnv`` wrapped in alfworld's ``AlfredDemangler`` (``engine="stock"``, 2-8 s per game). Both give
the same transcripts (``tests/rla_envs/alfworld/test_engine.py`` checks it), so the fast one decides.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from dataclasses import dataclass, field

from rla_envs.core.errors import InvalidTask
from rla_envs.alfworld.scene import Receptacle, Scene, SceneObject, display_names

__all__ = ["walkthrough", "PlayResult", "play_walkthrough", "stock_engine", "fast_engine", "ENGINES"]

#: Engines :func:`play_walkthrough` can play in: the fast ``AlfWorldEngine`` and textworld's stock ``PddlEnv``.
ENGINES = ("fast", "stock")


class _Route:
    """Builds the command list while tracking where the agent stands and what is open."""

    def __init__(self, scene: Scene):
        self.scene = scene
        self.names = display_names(scene)
        self.location = scene.agent_location
        self.opened = {r.id for r in scene.receptacles if r.opened}
        self.commands: list[str] = []

    def go(self, rec: Receptacle) -> None:
        if self.location != rec.location:
            self.commands.append(f"go to {self.names[rec.id]}")
            self.location = rec.location
        if rec.openable and rec.id not in self.opened:
            self.commands.append(f"open {self.names[rec.id]}")
            self.opened.add(rec.id)

    def take(self, obj: SceneObject) -> None:
        rec = self.scene.receptacle(obj.receptacle)
        self.go(rec)
        self.commands.append(f"take {self.names[obj.id]} from {self.names[rec.id]}")

    def use_station(self, verb: str, obj: SceneObject, station: Receptacle) -> None:
        if self.location != station.location:
            self.commands.append(f"go to {self.names[station.id]}")
            self.location = station.location
        self.commands.append(f"{verb} {self.names[obj.id]} with {self.names[station.id]}")

    def put(self, obj: SceneObject, rec: Receptacle) -> None:
        self.go(rec)
        self.commands.append(f"move {self.names[obj.id]} to {self.names[rec.id]}")


def _reachable_targets(scene: Scene, type_name: str) -> list[SceneObject]:
    """Objects of the type lying directly in a receptacle, nearest-first in walkthrough terms (closed last)."""
    candidates = [o for o in scene.objects_of_type(type_name) if o.receptacle and "pickupable" in o.abilities]
    return sorted(candidates, key=lambda o: (scene.receptacle(o.receptacle).openable, o.id))


def _first_receptacle(scene: Scene, type_name: str, purpose: str) -> Receptacle:
    found = sorted(scene.receptacles_of_type(type_name), key=lambda r: (r.openable, r.id))
    if not found:
        raise InvalidTask(f"the scene has no {type_name} to {purpose}; receptacle types present: "
                          f"{sorted({r.type for r in scene.receptacles})}")
    return found[0]


def walkthrough(scene: Scene) -> list[str]:
    """Commands that win the scene's goal in the demangled ALFWorld text game (uses privileged knowledge)."""
    goal = scene.goal
    targets = [o for o in _reachable_targets(scene, goal.object_target)
               if goal.task_type == "look_at_obj_in_light" or scene.receptacle(o.receptacle).type != goal.parent_target]
    needed = 2 if goal.task_type == "pick_two_obj_and_place" else 1
    if len(targets) < needed:
        raise InvalidTask(f"{goal.task_type} needs {needed} pickable {goal.object_target} outside "
                          f"{goal.parent_target or 'the goal receptacle'}; the scene has {len(targets)}")
    route = _Route(scene)
    if goal.task_type == "look_at_obj_in_light":
        lamps = [o for o in scene.objects_of_type(goal.toggle_target) if o.receptacle and "toggleable" in o.abilities]
        if not lamps:
            raise InvalidTask(f"look_at_obj_in_light needs a toggleable {goal.toggle_target} standing in a receptacle")
        route.take(targets[0])
        lamp_host = scene.receptacle(lamps[0].receptacle)
        if route.location != lamp_host.location:
            route.commands.append(f"go to {route.names[lamp_host.id]}")
            route.location = lamp_host.location
        route.commands.append(f"use {route.names[lamps[0].id]}")
        return route.commands
    parent = _first_receptacle(scene, goal.parent_target, "put the object in")
    stations = {"pick_clean_then_place_in_recep": ("clean", "SinkBasin"),
                "pick_heat_then_place_in_recep": ("heat", "Microwave"),
                "pick_cool_then_place_in_recep": ("cool", "Fridge")}
    for obj in targets[:needed]:
        route.take(obj)
        if goal.task_type in stations:
            verb, station_type = stations[goal.task_type]
            route.use_station(verb, obj, _first_receptacle(scene, station_type, verb + " the object"))
        route.put(obj, parent)
    return route.commands


# ------------------------------------------------------------------------------------------ engines

@contextlib.contextmanager
def _keep_argv():
    """fast_downward's translator overwrites ``sys.argv``; put it back."""
    saved = list(sys.argv)
    try:
        yield
    finally:
        sys.argv[:] = saved


_STOCK_ENGINE = None


def stock_engine():
    """This process's stock ``PddlEnv`` + ``AlfredDemangler`` (admissible commands requested), built once."""
    global _STOCK_ENGINE
    if _STOCK_ENGINE is None:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
        from textworld.envs import PddlEnv

        infos = textworld.EnvInfos(admissible_commands=True, won=True, feedback=True)
        _STOCK_ENGINE = AlfredDemangler(PddlEnv(infos), shuffle=False)
    return _STOCK_ENGINE


class _FastEngines(threading.local):
    """This thread's engine (an engine is not thread-safe); forked workers start with the parent's copy."""

    engine = None


_FAST_ENGINES = _FastEngines()


def fast_engine():
    """This process's (and thread's) :class:`~rla_envs.alfworld.engine.AlfWorldEngine`, built once, reused."""
    if _FAST_ENGINES.engine is None:
        import textworld

        from rla_envs.alfworld.engine import AlfWorldEngine

        _FAST_ENGINES.engine = AlfWorldEngine(textworld.EnvInfos(admissible_commands=True, won=True, feedback=True))
    return _FAST_ENGINES.engine


@dataclass
class PlayResult:
    """The outcome of playing a command list: won?, why not, and the transcript (observation per step)."""

    won: bool
    reason: str = ""
    transcript: list[str] = field(default_factory=list)


def play_walkthrough(game: dict, commands: list[str] | None = None, *, engine: str = "fast") -> PlayResult:
    """Play ``commands`` (default: the game's walkthrough); every one must be admissible.

    Wins only if the goal holds after the last command and not before it. ``engine`` is one of
    :data:`ENGINES`: ``"fast"`` (this process's ``AlfWorldEngine``) or ``"stock"`` (textworld's
    ``PddlEnv`` + ``AlfredDemangler``, the reference ALFWorld plays in; ~80x slower per step).
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")
    commands = list(game.get("walkthrough") or []) if commands is None else list(commands)
    if not commands:
        return PlayResult(False, "the game has no walkthrough to play")
    env = stock_engine() if engine == "stock" else fast_engine()
    with _keep_argv():
        env.load({k: game[k] for k in ("pddl_domain", "grammar", "pddl_problem")})
        state = env.reset()
    transcript = [state.feedback]
    for index, command in enumerate(commands):
        if state["won"]:
            return PlayResult(False, f"goal already satisfied before step {index} ({command!r})", transcript)
        admissible = state["admissible_commands"]
        if command not in admissible:
            return PlayResult(False, f"step {index}: {command!r} is not admissible; admissible: {admissible[:12]}",
                              transcript)
        with _keep_argv():
            state, _, _ = env.step(command)
        transcript.append(state.feedback)
    if not state["won"]:
        return PlayResult(False, f"all {len(commands)} commands played but the goal does not hold", transcript)
    return PlayResult(True, "", transcript)
