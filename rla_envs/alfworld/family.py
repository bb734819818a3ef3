"""AlfWorldFamily: the curriculum hooks (describe, apply_rewrite, validate, mutate) for ALFWorld tasks.

A rewrite, as in RLAnything, swaps the goal's object and/or receptacle type (the lamp for
``look_at_obj_in_light``) for types the scene allows; a mutation is one of the LLM-free scene edits of
:mod:`rla_envs.alfworld.mutations`, chosen at random or, given failure diagnoses, by what they say
(:mod:`rla_envs.alfworld.guidance`). Either way the scene is re-rendered to a PDDL problem with a new
scripted walkthrough, and the new task is validated in the engine before it is returned.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from rla_envs.core.errors import InvalidTask, RewriteRejected
from rla_envs.core.task import Task, thaw
from rla_envs.alfworld import FAMILY
from rla_envs.alfworld import goals
from rla_envs.alfworld import mutations as mut

__all__ = ["AlfWorldFamily"]

_SPEC_TYPES = {"pddl_problem": str, "goal": str, "task_type": str, "pddl_params": Mapping, "walkthrough": (list, tuple)}
_GRAMMAR_CHARS = re.compile(r'[#\[\](){}"\\\n\r]')  # the text grammar interprets these inside a goal
_TASK_SUMMARY = {
    "pick_and_place_simple": "find the object and put it in/on the receptacle",
    "look_at_obj_in_light": "find the object, carry it to the lamp and switch the lamp on",
    "pick_clean_then_place_in_recep": "find the object, clean it with the sinkbasin, put it in/on the receptacle",
    "pick_heat_then_place_in_recep": "find the object, heat it with the microwave, put it in/on the receptacle",
    "pick_cool_then_place_in_recep": "find the object, cool it with the fridge, put it in/on the receptacle",
    "pick_two_obj_and_place": "find two copies of the object and put both in/on one receptacle",
}


# ------------------------------------------------------------------------------------------ engine

class _Engines(threading.local):
    """One engine per thread and kind (the engine is not thread-safe)."""

    plain = None
    with_facts = None


_ENGINES = _Engines()


def _engine(facts: bool):
    from textworld import EnvInfos

    from rla_envs.alfworld.engine import AlfWorldEngine

    attr = "with_facts" if facts else "plain"
    if getattr(_ENGINES, attr) is None:
        setattr(_ENGINES, attr, AlfWorldEngine(EnvInfos(admissible_commands=True, won=True, facts=facts)))
    return getattr(_ENGINES, attr)


def _start(game: dict, *, facts: bool):
    """The engine with ``game`` loaded and reset, and the first state; ``InvalidTask`` if it does not load."""
    engine = _engine(facts)
    try:
        engine.load(game)
        state = engine.reset()
    except InvalidTask:
        raise
    except (Exception, SystemExit) as exc:  # the PDDL translator and the grammar raise anything, even exit
        raise InvalidTask(f"the game does not load in the engine: {type(exc).__name__}: {exc}") from None
    if state["won"]:
        raise InvalidTask("the goal already holds at the start")
    return engine, state


def _play_walkthrough(game: dict, commands: list[str]) -> None:
    engine, state = _start(game, facts=False)
    for index, command in enumerate(commands):
        if command not in state["admissible_commands"]:
            raise InvalidTask(f"walkthrough step {index}: {command!r} is not admissible; "
                              f"admissible: {state['admissible_commands'][:10]}")
        state, _, _ = engine.step(command)
        if state["won"] and index < len(commands) - 1:
            raise InvalidTask(f"the walkthrough wins at step {index}, before its last command")
    if not state["won"]:
        raise InvalidTask(f"the walkthrough ({len(commands)} commands) does not win the game")


def _play_expert(game: dict, task: Task, max_steps: int) -> int:
    from rla_envs.alfworld.expert import HandCodedExpert

    engine, state = _start(game, facts=True)
    expert = HandCodedExpert.from_task(task, seed=0, max_steps=max_steps)
    expert.reset(state.feedback, state)
    last = None
    for step in range(max_steps):
        command = expert.act(state.feedback, state, last)
        if command is None:
            break
        state, _, _ = engine.step(command)
        last = command
        if state["won"]:
            return step + 1
    raise InvalidTask(f"the hand-coded expert does not win within {max_steps} steps")


# ------------------------------------------------------------------------------------------ family

class AlfWorldFamily:
    """Curriculum hooks for ``alfworld`` tasks (see ``rla_envs.core.family.TaskFamily``).

    Args:
        check_expert: also require alfworld's (fixed) hand-coded expert to win in :meth:`validate`, so
            that every accepted task has a searching demonstration (slower: it plays up to
            ``expert_steps`` steps). Tasks without a walkthrough are always checked with the expert.
        expert_steps: the expert's step budget.
    """

    name = FAMILY

    def __init__(self, *, check_expert: bool = False, expert_steps: int = 150):
        self.check_expert = check_expert
        self.expert_steps = expert_steps

    # ----------------------------------------------------------------- describe
    def describe(self, task: Task) -> str:
        """The task for a rewrite prompt: goal, room, candidate swaps, the solution and the answer format."""
        from rla_envs.alfworld.scene import display_names

        scene = self._scene(task)
        goal, names = scene.goal, display_names(scene)
        roles = {"object": goal.object_target, "receptacle": goal.parent_target, "toggle": goal.toggle_target}
        lines = [f"ALFWorld task, type {goal.task_type}: {_TASK_SUMMARY.get(goal.task_type, '')}.",
                 f"Goal the agent reads: {task.instruction!r}",
                 "Current types: " + ", ".join(f"{k}={v}" for k, v in roles.items() if v),
                 f"Room: {scene.floor_plan or 'unknown floor plan'}, {len(scene.receptacles)} receptacles, "
                 f"{len(scene.objects)} objects.", "", "Receptacles (type: names; closed ones need 'open'):"]
        for rtype in goals.receptacle_types(scene):
            recs = sorted(scene.receptacles_of_type(rtype), key=lambda r: names[r.id])
            state = " (closed)" if any(mut.is_closed(r) for r in recs) else ""
            lines.append(f"- {rtype}{state}: {', '.join(names[r.id] for r in recs)}")
        lines += ["", "Objects (type: name in receptacle):"]
        for otype in sorted({o.type for o in scene.objects}):
            where = [f"{names[o.id]} in {names.get(o.receptacle or o.inside or '', '?')}"
                     for o in scene.objects_of_type(otype)]
            lines.append(f"- {otype}: {', '.join(where)}")
        lines += ["", "Possible swaps in this room (object type -> destination types that can hold it):"]
        for otype in goals.object_types(scene):
            if goal.task_type == "look_at_obj_in_light":
                lines.append(f"- {otype}")
            elif destinations := goals.destination_types(scene, otype):
                lines.append(f"- {otype} -> {', '.join(destinations)}")
        if goal.task_type == "look_at_obj_in_light":
            lamps = sorted({o.type for o in scene.objects if "toggleable" in o.abilities})
            lines.append(f"Lamps: {', '.join(lamps)}")
        walkthrough = list(task.spec.get("walkthrough") or [])
        lines += ["", f"The reference solution takes {len(walkthrough)} commands: {'; '.join(walkthrough)}.",
                  "An agent does not know where objects lie: it must go to receptacles, open closed ones and look.",
                  "", goals.rewrite_format(goal.task_type)]
        return "\n".join(lines)

    # ----------------------------------------------------------------- rewrite
    def apply_rewrite(self, task: Task, text: str) -> Task:
        """The task with the goal's types swapped as the proposal says, validated (origin ``rewritten``).

        Raises ``RewriteRejected`` whose message starts with the reason: unparseable, unknown type,
        not an object, not in scene, not carriable, cannot be cleaned/heated/cooled, cannot contain,
        already satisfied, unchanged, not winnable.
        """
        proposal = goals.parse_proposal(text)
        types = {role: goals.resolve_type(value, role) for role, value in proposal.items()}
        scene = goals.swap_goal(self._scene(task), object_type=types.get("object"),
                                receptacle_type=types.get("receptacle"), toggle_type=types.get("toggle"))
        old = thaw(task.spec["pddl_params"])
        meta = {"rewrite": {"proposal": proposal, "from": {k: old.get(k, "") for k in ("object_target",
                "parent_target", "toggle_target")}, "to": {"object_target": scene.goal.object_target,
                "parent_target": scene.goal.parent_target, "toggle_target": scene.goal.toggle_target}},
                "mutation": None, "mutation_detail": None}
        try:
            new = self._derive(task, scene, origin="rewritten", meta=meta)
            self.validate(new)
        except RewriteRejected:
            raise
        except InvalidTask as exc:
            raise RewriteRejected(f"not winnable: {exc}") from None
        return new

    # ----------------------------------------------------------------- validate
    def validate(self, task: Task) -> None:
        """Raise ``InvalidTask`` unless the task is complete, loads, is winnable, not won at the start and
        leaks no answer (a hint the task's ``meta["hint"]`` declares is allowed, and must be true)."""
        spec = self._check_spec(task)
        scene = self._scene(task)
        self._check_goal(task, spec, scene)
        self._check_leaks(task, scene)
        from rla_envs.alfworld.tasks import game_from_task

        game = game_from_task(task)
        if spec["walkthrough"]:
            _play_walkthrough(game, list(spec["walkthrough"]))
        if self.check_expert or not spec["walkthrough"]:
            _play_expert(game, task, self.expert_steps)

    def _check_spec(self, task: Task) -> dict:
        if task.family != FAMILY:
            raise InvalidTask(f"expected an {FAMILY!r} task, got family {task.family!r} (task {task.id})")
        spec = thaw(task.spec)
        problems = [f"{key} (expected {kind.__name__ if isinstance(kind, type) else 'list'})"
                    for key, kind in _SPEC_TYPES.items() if not isinstance(task.spec.get(key), kind)]
        if problems:
            raise InvalidTask(f"task {task.id} has an incomplete spec: missing or wrong {problems}; keys: {sorted(spec)}")
        from rla_envs.alfworld.scene import TASK_TYPES

        if spec["task_type"] not in TASK_TYPES:
            raise InvalidTask(f"unknown task type {spec['task_type']!r}; expected one of {TASK_TYPES}")
        if not spec["pddl_params"].get("object_target"):
            raise InvalidTask(f"spec['pddl_params'] has no object_target: {spec['pddl_params']}")
        if task.instruction != spec["goal"]:
            raise InvalidTask(f"the instruction {task.instruction!r} differs from the goal the game shows "
                              f"{spec['goal']!r}; they must be equal")
        if not spec["goal"].strip() or _GRAMMAR_CHARS.search(spec["goal"]):
            raise InvalidTask(f"the goal {spec['goal']!r} is empty or has characters the text grammar interprets "
                              "(# [ ] ( ) { } quotes, backslash, newline)")
        return spec

    def _check_goal(self, task: Task, spec: dict, scene) -> None:
        """The PDDL goal block must ask for the types that pddl_params (and the instruction) name."""
        from rla_envs.alfworld.scene import parse_problem

        try:
            block = parse_problem(spec["pddl_problem"]).goal
        except InvalidTask:
            return  # the goal block is not one the model reads back; pddl_params stand
        declared = (scene.goal.object_target, scene.goal.parent_target, scene.goal.toggle_target)
        found = (block.object_target, block.parent_target, block.toggle_target)
        if declared != found:
            raise InvalidTask(f"the PDDL goal asks for (object, receptacle, toggle) = {found} but pddl_params say "
                              f"{declared}")

    def _check_leaks(self, task: Task, scene) -> None:
        text, declared = task.instruction, task.meta.get("hint")
        if declared:
            if mut.strip_hint(text) == text or mut.with_hint(text, list(declared)) != text:
                raise InvalidTask(f"meta['hint'] declares a hint naming {list(declared)}, but the instruction "
                                  f"{text!r} does not end with it")
            holders = set(goals.leaked_receptacles(text, scene))
            false = [name for name in declared if name not in holders]
            if false:
                raise InvalidTask(f"the hint names {false}, where no {scene.goal.object_target} lies")
            text = mut.strip_hint(text)
        leaks = goals.leaked_receptacles(text, scene)
        if leaks:
            raise InvalidTask(f"the instruction {text!r} names where the {scene.goal.object_target} lies "
                              f"({', '.join(leaks)}); only a hint declared in meta['hint'] may")

    # ----------------------------------------------------------------- mutate
    def mutate(self, task: Task, direction: str, rng: np.random.Generator, *,
               only: Collection[str] | None = None, diagnoses: Sequence[str] = ()) -> Task:
        """An LLM-free edit making the task ``harder`` or ``easier``, validated (origin ``mutated``).

        Tries the applicable mutations of ``mutations.CATALOGUE[direction]`` (or just those named in
        ``only``) and returns the first that validates; ``meta["mutation"]`` names it. Without
        ``diagnoses`` they are tried in an order drawn from ``rng``. With ``diagnoses`` (failure
        summaries of a diagnoser, e.g. ``"3/4 failed runs never found the apple"``), the mutations they
        ask for (:func:`rla_envs.alfworld.guidance.guided_edits`) are tried first, best first, then the
        rest in the ``rng`` order; ``meta["guidance"]`` lists the guided names and ``meta["guided_by"]``
        the diagnoses behind the chosen one (``[]`` when it was a fall-back). The same rng state (and
        diagnoses) give the same result. Raises ``RewriteRejected`` when none applies.
        """
        if direction not in mut.CATALOGUE:
            raise ValueError(f"direction must be one of {sorted(mut.CATALOGUE)}, got {direction!r}")
        if isinstance(diagnoses, str):
            raise TypeError(f"diagnoses must be a sequence of sentences, got one str: {diagnoses!r}; "
                            "wrap it in a list")
        catalogue = mut.CATALOGUE[direction]
        if only is not None:
            unknown = sorted(set(only) - set(catalogue))
            if unknown:
                raise ValueError(f"unknown {direction} mutations {unknown}; known: {list(catalogue)}")
            catalogue = {name: fn for name, fn in catalogue.items() if name in set(only)}
        scene, names = self._scene(task), list(catalogue)
        drawn = [names[int(index)] for index in rng.permutation(len(names))]
        guided = {}
        if diagnoses:
            from rla_envs.alfworld.guidance import guided_edits

            asked = guided_edits(diagnoses, direction, task_type=task.spec.get("task_type"))
            guided = {name: reasons for name, reasons in asked.items() if name in catalogue}
        failures = []
        for name in [*guided, *(name for name in drawn if name not in guided)]:
            edit = catalogue[name](scene, rng)
            if edit is None:
                continue
            keep_hint = edit.hint if edit.hint is not None else bool(task.meta.get("hint"))
            meta = {"mutation": name, "mutation_detail": edit.detail, "direction": direction, "rewrite": None,
                    "mutations": [*task.meta.get("mutations", ()), name]}
            if diagnoses or "guided_by" in task.meta:  # (a parent's guidance must not carry over to its child)
                meta.update(guidance=list(guided), guided_by=list(guided.get(name, ())))
            try:
                new = self._derive(task, edit.scene, origin="mutated", meta=meta, hint=keep_hint)
                if new.id == task.id:
                    raise InvalidTask("the edit left the task as it was")
                self.validate(new)
            except InvalidTask as exc:
                failures.append(f"{name}: {exc}")
                continue
            return new
        reason = "; ".join(failures) if failures else "none of " + ", ".join(catalogue) + " applies to this scene"
        raise RewriteRejected(f"no {direction} mutation for task {task.id}: {reason}")

    # ----------------------------------------------------------------- helpers
    def _scene(self, task: Task):
        from rla_envs.alfworld.tasks import scene_from_task

        if task.family != FAMILY:
            raise InvalidTask(f"expected an {FAMILY!r} task, got family {task.family!r} (task {task.id})")
        if not isinstance(task.spec.get("pddl_problem"), str):
            raise InvalidTask(f"task {task.id} has no spec['pddl_problem']; spec keys: {sorted(task.spec)}")
        return scene_from_task(task)

    def _derive(self, task: Task, scene, *, origin: str, meta: dict, hint: bool = False) -> Task:
        """The task built from an edited scene: new problem, new walkthrough, goal (with hint if asked)."""
        from rla_envs.alfworld.tasks import game_from_scene, task_from_game
        from rla_envs.alfworld.walkthrough import walkthrough as scripted

        scene.goal.text = mut.strip_hint(scene.goal.text)
        commands = scripted(scene)  # InvalidTask when the scene has no scripted solution
        meta["hint"] = mut.hint_receptacles(commands) if hint else None
        if hint:
            scene.goal.text = mut.with_hint(scene.goal.text, meta["hint"])
        spec = task_from_game(game_from_scene(scene, walkthrough=commands)).spec
        return task.derive(instruction=scene.goal.text, spec=spec, origin=origin, meta=meta)
