"""TextWorldFamily: the curriculum hooks (describe, apply_rewrite, validate, mutate) for TextWorld tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rla_envs.core.errors import InvalidTask, RewriteRejected, TaskError
from rla_envs.core.proposals import find_json_object
from rla_envs.core.task import Task, thaw
from rla_envs.textworld.game import normalize_command
from rla_envs.textworld.generate import EXPERT_STEP_LIMIT, normalize_spec

__all__ = ["TextWorldFamily", "leaks_answer", "REWRITE_FORMAT"]

REWRITE_FORMAT = """Answer with one JSON object (a ```json block is fine) using any of these keys:
  "objective": the new goal text the player reads (do not list the solution's commands),
  "quest": the new quest as the list of commands that solve it from the start, e.g. ["open chest", "take key from chest"],
  "settings": generator settings to change, e.g. {"quest_length": 4} (generated games only),
  "hints": how many of the solution's first commands the objective reveals (0 for none)."""

_COOKING_GO = (1, 6, 9, 12)
_SIMPLE_GOALS = ("detailed", "brief", "none")  # easiest first
_CUSTOM_LIMITS = {"quest_length": (1, 10, 1), "nb_rooms": (1, 12, 1), "nb_objects": (1, 40, 4)}


def leaks_answer(instruction: str, walkthrough: list[str]) -> bool:
    """True when the instruction spells out the whole solution: every walkthrough command, verbatim, in order.

    One-command solutions are exempt (any objective names its single action), and so are objectives
    that describe the steps in prose, as textworld's own detailed objectives do.
    """
    commands = [normalize_command(c) for c in walkthrough]
    if len(commands) < 2:
        return False
    text, position = normalize_command(instruction), 0
    for command in commands:
        found = text.find(command, position)
        if found < 0:
            return False
        position = found + len(command)
    return True


def _parse_proposal(text: str) -> dict[str, Any]:
    """The JSON object in an LLM's answer (fenced or bare), or ``RewriteRejected`` saying what was wrong."""
    if not isinstance(text, str) or not text.strip():
        raise RewriteRejected("the rewrite proposal is empty; expected a JSON object. " + REWRITE_FORMAT)
    data = find_json_object(text)
    if data is not None:
        return data
    raise RewriteRejected(f"no JSON object found in the proposal {text[:120]!r}. " + REWRITE_FORMAT)


class TextWorldFamily:
    """Curriculum hooks for ``textworld`` tasks (see ``rla_envs.core.family.TaskFamily``)."""

    name = "textworld"

    # ----------------------------------------------------------------- describe
    def describe(self, task: Task) -> str:
        """The task for a rewrite prompt: objective, how it was made, the world, the solution, the answer format."""
        from rla_envs.textworld.generate import load_game
        from rla_envs.textworld.tasks import game_file_for

        game = load_game(game_file_for(task))
        spec = thaw(task.spec)
        source = (f"generator {spec['generator']} with settings {spec['settings']} (seed {spec['seed']})"
                  if "generator" in spec else f"game file {spec['game_file']}")
        rooms = sorted({info.name for info in game.infos.values() if info.type == "r" and info.name})
        objects = sorted({info.name for info in game.infos.values()
                          if info.type not in {"r", "d", "P", "I"} and info.name})
        walkthrough = list(game.walkthrough or [])
        lines = [
            f"TextWorld task {task.id} ({source}).",
            f"Objective shown to the player: {task.instruction!r}",
            f"Rooms: {', '.join(rooms) or 'unknown'}.",
            f"Objects: {', '.join(objects) or 'unknown'}.",
            f"Reference solution ({len(walkthrough)} commands): {walkthrough}",
            f"Hints currently revealed: {spec.get('hints', 0)}.",
            REWRITE_FORMAT,
        ]
        return "\n".join(lines)

    # ----------------------------------------------------------------- rewrite
    def apply_rewrite(self, task: Task, text: str) -> Task:
        """Parse an LLM's proposal (see ``REWRITE_FORMAT``) into a validated new task, or raise ``RewriteRejected``."""
        proposal = _parse_proposal(text)
        allowed = {"objective", "quest", "settings", "hints"}
        unknown = set(proposal) - allowed
        if unknown or not proposal:
            raise RewriteRejected(f"proposal keys {sorted(proposal)}: expected some of {sorted(allowed)}. " + REWRITE_FORMAT)
        spec = dict(thaw(task.spec))
        if "settings" in proposal:
            if "generator" not in spec:
                raise RewriteRejected("'settings' can only change generated games; this task is a game file")
            if not isinstance(proposal["settings"], Mapping):
                raise RewriteRejected(f"'settings' must be an object, got {proposal['settings']!r}")
            spec["settings"] = {**spec["settings"], **proposal["settings"]}
        for key in ("objective", "quest", "hints"):
            if key in proposal:
                spec[key] = proposal[key]
        if "quest" in proposal and "objective" not in proposal:
            spec.pop("objective", None)  # let textworld describe the new quest
        return self._derive(task, spec, origin="rewritten", meta={"rewrite": sorted(proposal)})

    def _derive(self, task: Task, spec: dict[str, Any], *, origin: str, meta: dict[str, Any]) -> Task:
        """Build, validate and return the task made from ``spec``; any failure becomes ``RewriteRejected``."""
        from rla_envs.textworld.tasks import task_from_spec

        try:
            new_task = task_from_spec(normalize_spec(spec), origin=origin, meta=meta, parent=task)
            self.validate(new_task)
        except RewriteRejected:
            raise
        except (TaskError, OSError) as exc:
            raise RewriteRejected(f"the proposed task is not playable: {exc}") from exc
        if new_task.id == task.id or (new_task.instruction == task.instruction and thaw(new_task.spec) == thaw(task.spec)):
            raise RewriteRejected("the proposal changes nothing: the new task equals the old one")
        return new_task

    # ----------------------------------------------------------------- validate
    def validate(self, task: Task) -> None:
        """Raise ``InvalidTask`` unless the game builds, the walkthrough wins within 50 steps and no answer leaks."""
        from rla_envs.textworld.game import check_expert_wins
        from rla_envs.textworld.generate import load_game
        from rla_envs.textworld.tasks import game_file_for

        if task.family != self.name:
            raise InvalidTask(f"TextWorldFamily validates 'textworld' tasks, got family {task.family!r}")
        path = game_file_for(task)
        game = load_game(path)
        if (game.objective or "") != task.instruction:
            raise InvalidTask(f"task {task.id}: its instruction differs from the objective compiled into the game; "
                              "build tasks with rla_envs.textworld.tasks.task_from_spec")
        walkthrough = check_expert_wins(path, max_steps=EXPERT_STEP_LIMIT)
        if leaks_answer(task.instruction, walkthrough):
            raise RewriteRejected(f"task {task.id}: the instruction lists the whole solution {walkthrough}")

    # ----------------------------------------------------------------- mutate
    def mutate(self, task: Task, direction: str, rng: np.random.Generator, *,
               diagnoses: Sequence[str] = ()) -> Task:
        """An LLM-free edit making the task ``harder`` or ``easier`` (validated); ``RewriteRejected`` if none fits.

        Edits: quest length, rooms and distractor objects (tw-custom); ingredients, rooms and skills
        (tw-cooking); objective detail (tw-simple); hints in the objective (every task).

        ``diagnoses`` (failure summaries) are accepted for the protocol and ignored: the edit is drawn from ``rng``.
        """
        if direction not in ("harder", "easier"):
            raise ValueError(f"direction must be 'harder' or 'easier', got {direction!r}")
        spec = dict(thaw(task.spec))
        candidates = self._candidate_edits(spec, int(task.meta.get("expert_steps", 0)), direction)
        order = rng.permutation(len(candidates)) if candidates else []
        reasons = []
        for index in order:
            label, new_spec = candidates[int(index)]
            try:
                new_task = self._derive(task, new_spec, origin="mutated", meta={"mutation": label})
            except RewriteRejected as exc:
                reasons.append(f"{label}: {exc}")
                continue
            old_steps, new_steps = task.meta.get("expert_steps", 0), new_task.meta["expert_steps"]
            if (direction == "harder" and new_steps < old_steps) or (direction == "easier" and new_steps > old_steps):
                reasons.append(f"{label}: the solution went from {old_steps} to {new_steps} commands")
                continue
            return new_task
        raise RewriteRejected(f"no {direction} mutation of {task.id} is valid; tried: {reasons or 'none possible'}")

    def _candidate_edits(self, spec: dict[str, Any], expert_steps: int, direction: str) -> list[tuple[str, dict]]:
        sign = 1 if direction == "harder" else -1
        edits: list[tuple[str, dict]] = []
        hints = spec.get("hints", 0)
        if direction == "easier" and hints + 1 < expert_steps:
            edits.append((f"hints {hints}->{hints + 1}", {**spec, "hints": hints + 1}))
        if direction == "harder" and hints > 0:
            edits.append((f"hints {hints}->{hints - 1}", {**spec, "hints": hints - 1}))
        settings = spec.get("settings", {})
        changes: list[tuple[str, Any]] = []
        if spec.get("generator") == "tw-custom":
            for key, (low, high, stride) in _CUSTOM_LIMITS.items():
                value = settings[key] + sign * stride
                if low <= value <= high:
                    changes.append((key, value))
        elif spec.get("generator") == "tw-cooking":
            recipe = settings["recipe"] + sign
            if 1 <= recipe <= 5:
                changes.append(("recipe", recipe))
            go = _COOKING_GO.index(settings["go"]) + sign if settings["go"] in _COOKING_GO else -1
            if 0 <= go < len(_COOKING_GO):
                changes.append(("go", _COOKING_GO[go]))
            for skill in ("open", "cook", "cut"):
                if bool(settings[skill]) != (direction == "harder"):
                    changes.append((skill, direction == "harder"))
        elif spec.get("generator") == "tw-simple":
            goal = _SIMPLE_GOALS.index(settings["goal"]) + sign
            if 0 <= goal < len(_SIMPLE_GOALS):
                changes.append(("goal", _SIMPLE_GOALS[goal]))
        for key, value in changes:
            new_settings = {**settings, key: value}
            if key == "recipe" and new_settings.get("take"):
                new_settings["take"] = min(value, max(1, settings["take"] + sign))
            # A regenerated game has a new map and quest: a rewritten quest or objective no longer fits it.
            new_spec = {k: v for k, v in spec.items() if k not in ("quest", "objective")}
            edits.append((f"{key} {settings[key]}->{value}", {**new_spec, "settings": new_settings}))
        return edits
