"""DesktopFamily: the curriculum hooks (describe, apply_rewrite, validate, mutate) for OSWorld desktop tasks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

import numpy as np

from rla_envs.core.closing import ClosesOnExit
from rla_envs.core.errors import InvalidTask, RewriteRejected
from rla_envs.core.proposals import find_json_object
from rla_envs.core.spaces import is_printable_text
from rla_envs.core.task import Task, thaw

__all__ = ["DesktopFamily", "HINT_MARKER", "REWRITE_FORMAT", "split_hints", "anchors"]

HINT_MARKER = "\n\nHint: "
"""What :meth:`DesktopFamily.mutate` puts before each hint it adds to an instruction."""

REWRITE_FORMAT = """Answer with one JSON object (a ```json block is fine):
  "instruction": the new instruction shown to the agent; keep every file path and quoted value of the
                 current one (the evaluator checks them), and do not give away the expected answer,
  "variant" (optional): the name of one of the task's declared evaluator variants to switch to."""

_MAX_INSTRUCTION = 2_000
_COMMENTARY_KEYS = {"reasoning", "explanation", "analysis", "rationale", "thoughts", "notes"}
_PATH = re.compile(r"(?<![\w/])/(?:home|tmp)/[\w./-]*[\w/]")
_QUOTED = re.compile(r"'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"")


def split_hints(instruction: str) -> tuple[str, list[str]]:
    """(the instruction without added hints, the hints in the order they were added)."""
    base, *hints = instruction.split(HINT_MARKER)
    return base, hints


def anchors(instruction: str) -> list[str]:
    """The parts of an instruction a rewrite must keep: absolute paths and quoted values."""
    found = [match.group(0) for match in _PATH.finditer(instruction)]
    found += [a or b for a, b in _QUOTED.findall(instruction)]
    return sorted(set(found))


def _variants(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    from rla_envs.desktop.tasks import VARIANTS_KEY

    variants = raw.get(VARIANTS_KEY) or []
    if not isinstance(variants, list) or not all(
            isinstance(v, Mapping) and isinstance(v.get("name"), str) and isinstance(v.get("level"), int)
            and isinstance(v.get("evaluator"), Mapping) for v in variants):
        raise InvalidTask(f"task {raw.get('id')!r}: 'rla_variants' must be a list of {{'name': str, 'level': int, "
                          f"'evaluator': {{...}}}}, got {variants!r:.200}")
    return [dict(v) for v in variants]


def _current_variant(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    from rla_envs.desktop.tasks import VARIANT_KEY

    for variant in _variants(raw):
        if variant["name"] == raw.get(VARIANT_KEY):
            return variant
    return None


class DesktopFamily(ClosesOnExit):
    """Curriculum hooks for ``desktop`` tasks (see ``rla_envs.core.family.TaskFamily``).

    Tasks are OSWorld JSON dicts under ``spec["osworld"]``. Edits never invent new files or gold answers:
    mutations add or remove the hints a task declares (``rla_hints``) and switch among the evaluator
    variants it declares (``rla_variants``, a higher ``level`` being stricter); rewrites change the
    instruction wording (keeping its paths and quoted values) and may pick a declared variant.

    Validation checks the task statically (an OSWorld task, runnable here, with a scripted solution, the
    instruction matching the JSON's, no exact expected answer written in the instruction) and, when
    ``live`` (the default), plays it on a desktop: the scripted solution must score 1 and doing nothing
    (``DONE`` at once) must score below 1.

    Args:
        live: play tasks on a desktop in :meth:`validate` (needs a provider; started on first use).
        provider, provider_options, cache_dir: how the validation env gets its desktop and files
            (see :class:`rla_envs.desktop.env.OSWorldEnv`).
        has_app: ``has_app(program) -> bool``, whether the desktop that will play the tasks has a program
            (default: this machine's PATH); static checks of tasks meant for another desktop (a container, or
            a machine without the apps, as in tests) pass their own.
    """

    name = "desktop"

    def __init__(self, *, live: bool = True, provider: Any = "local", provider_options: Mapping[str, Any] | None = None,
                 cache_dir: str | None = None, has_app: Callable[[str], bool] | None = None):
        from rla_envs.desktop.osworld.cache import FileCache

        self.live = bool(live)
        self._has_app = has_app
        self._provider = provider
        self._provider_options = dict(provider_options or {})
        self.cache = FileCache(cache_dir)
        self._cache_dir = cache_dir
        self._env = None

    # ----------------------------------------------------------------- describe
    def describe(self, task: Task) -> str:
        """The task for a rewrite prompt: instruction, setup, evaluator, variants, hints, solution, answer format."""
        from rla_envs.desktop.osworld.tasks import osworld_json
        from rla_envs.desktop.tasks import HINTS_KEY, SOLUTION_KEY, VARIANT_KEY

        raw = osworld_json(task)
        evaluator = raw.get("evaluator") or {}
        lines = [f"Desktop task {raw.get('id')} (app {task.meta.get('app') or raw.get('snapshot')}, "
                 f"apps {raw.get('related_apps', [])}).",
                 f"Instruction shown to the agent:\n{task.instruction}",
                 "Setup steps: " + ("; ".join(_step_text(step) for step in raw.get("config") or []) or "(none)"),
                 f"Evaluator: {_evaluator_text(evaluator)}"]
        variants = _variants(raw)
        if variants:
            lines.append("Declared evaluator variants (level: higher is stricter): " + "; ".join(
                f"{v['name']} (level {v['level']}): {_evaluator_text(v['evaluator'])}" for v in variants)
                + f". In use: {raw.get(VARIANT_KEY)}.")
        hints = raw.get(HINTS_KEY) or []
        if hints:
            lines.append(f"Hints the task declares: {json.dumps(hints)}")
        solution = raw.get(SOLUTION_KEY) or []
        lines.append("Scripted solution (pyautogui steps):\n" + "\n---\n".join(map(str, solution)))
        lines.append(REWRITE_FORMAT)
        return "\n".join(lines)

    # ----------------------------------------------------------------- rewrite
    def apply_rewrite(self, task: Task, text: str) -> Task:
        """Parse an LLM proposal (see ``REWRITE_FORMAT``) into a validated new task, or raise ``RewriteRejected``."""
        from rla_envs.desktop.osworld.tasks import osworld_json

        if not isinstance(text, str) or not text.strip():
            raise RewriteRejected("the rewrite proposal is empty; expected a JSON object. " + REWRITE_FORMAT)
        proposal = find_json_object(text)
        if proposal is None:
            raise RewriteRejected(f"no JSON object found in the proposal {text[:120]!r}. " + REWRITE_FORMAT)
        unknown = set(proposal) - {"instruction", "variant"} - _COMMENTARY_KEYS
        if unknown:
            raise RewriteRejected(f"proposal has unknown keys {sorted(unknown)}; expected 'instruction' and "
                                  "optionally 'variant'. " + REWRITE_FORMAT)
        instruction = proposal.get("instruction")
        if not isinstance(instruction, str) or not instruction.strip():
            raise RewriteRejected("proposal needs 'instruction', the new instruction as a non-empty string. "
                                  + REWRITE_FORMAT)
        instruction = instruction.strip()
        if len(instruction) > _MAX_INSTRUCTION or not is_printable_text(instruction):
            raise RewriteRejected(f"the instruction must be printable text of at most {_MAX_INSTRUCTION} characters")
        base, _ = split_hints(task.instruction)
        dropped = [anchor for anchor in anchors(base) if anchor not in instruction]
        if dropped:
            raise RewriteRejected(f"the new instruction drops {dropped}, which the evaluator checks; keep every "
                                  "file path and quoted value of the current instruction")
        raw = osworld_json(task)
        if proposal.get("variant") is not None:
            raw = self._with_variant(raw, proposal["variant"])
        raw["instruction"] = instruction
        return self._derive(task, raw, origin="rewritten", meta={"rewrite": sorted(set(proposal) - _COMMENTARY_KEYS)})

    def _with_variant(self, raw: dict[str, Any], name: Any) -> dict[str, Any]:
        variants = {v["name"]: v for v in _variants(raw)}
        if name not in variants:
            raise RewriteRejected(f"variant {name!r} is not declared by task {raw.get('id')!r}; declared: "
                                  f"{sorted(variants) or 'none'}")
        return _switched(raw, variants[name])

    def _derive(self, task: Task, raw: dict[str, Any], *, origin: str, meta: dict[str, Any]) -> Task:
        try:
            new_task = task.derive(instruction=raw["instruction"], spec={**thaw(task.spec), "osworld": raw},
                                   origin=origin, meta=meta)
            if new_task.id == task.id:
                raise RewriteRejected("the proposal changes nothing: the new task equals the old one")
            self.validate(new_task)
        except RewriteRejected:
            raise
        except InvalidTask as exc:
            raise RewriteRejected(f"the proposed task is not valid: {exc}") from None
        return new_task

    # ----------------------------------------------------------------- validate
    def validate(self, task: Task) -> None:
        """Raise ``InvalidTask`` unless the task is a runnable OSWorld task whose scripted solution scores 1
        (played live when ``live``) while doing nothing does not, and whose instruction leaks no answer."""
        from rla_envs.desktop.osworld.runnable import not_runnable_reasons
        from rla_envs.desktop.osworld.tasks import osworld_json
        from rla_envs.desktop.tasks import VARIANT_KEY, solution_steps

        if task.family != self.name:
            raise InvalidTask(f"task {task.id} is a {task.family!r} task, not a desktop task")
        raw = osworld_json(task)
        if raw.get("instruction") != task.instruction:
            raise InvalidTask(f"task {task.id}: the Task's instruction differs from its OSWorld JSON's; the agent "
                              "and OSWorld would see different tasks")
        reasons = not_runnable_reasons(raw, cache=self.cache, has_app=self._has_app)
        if reasons:
            raise InvalidTask(f"task {task.id} is not runnable here: {'; '.join(reasons)}")
        solution = solution_steps(task)
        if raw.get(VARIANT_KEY) is not None:
            variant = _current_variant(raw)
            if variant is None or thaw(variant["evaluator"]) != thaw(raw["evaluator"]):
                raise InvalidTask(f"task {task.id}: 'rla_variant' {raw.get(VARIANT_KEY)!r} does not name a declared "
                                  "variant whose evaluator is the one in use")
        leaked = _leaked_answers(raw)
        if leaked:
            raise InvalidTask(f"task {task.id}: the instruction gives away the expected answer {leaked}")
        if self.live:
            self._check_live(task, solution)

    def _check_live(self, task: Task, solution: list[Any]) -> None:
        solved, solved_error = self.play(task, solution)
        if solved is None or solved < 1.0:
            raise InvalidTask(f"task {task.id}: the scripted solution scores {solved} (not 1.0)"
                              + (f": {solved_error}" if solved_error else ""))
        idle, idle_error = self.play(task, ["DONE"])
        if idle is None or idle >= 1.0:
            raise InvalidTask(f"task {task.id}: doing nothing scores {idle}; the evaluator does not tell a done "
                              "task from an untouched one" + (f" ({idle_error})" if idle_error else ""))

    def play(self, task: Task, actions: list[Any]) -> tuple[float | None, str | None]:
        """Play ``actions`` on ``task`` in the validation env; return (score, evaluation error)."""
        env = self.env
        env.reset(options={"task": task})
        info: dict[str, Any] = {}
        for action in actions:
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        else:
            _, _, _, _, info = env.step("DONE")
        return info.get("score"), info.get("evaluation_error")

    @property
    def env(self):
        """The env :meth:`validate` plays tasks in (made on first use; closed by :meth:`close`)."""
        if self._env is None:
            from rla_envs.desktop.env import OSWorldEnv

            self._env = OSWorldEnv(provider=self._provider, provider_options=self._provider_options or None,
                                   cache_dir=self._cache_dir, max_steps=100, accessibility_tree=False)
        return self._env

    def close(self) -> None:
        """Close the validation env and its desktop session, if one was started."""
        if self._env is not None:
            self._env.close()
            self._env = None

    # ----------------------------------------------------------------- mutate
    def mutate(self, task: Task, direction: str, rng: np.random.Generator, *,
               diagnoses: Sequence[str] = ()) -> Task:
        """An LLM-free edit making the task ``harder`` or ``easier`` (validated); ``RewriteRejected`` if none fits.

        Easier: add the next declared hint to the instruction, or switch to a more lenient declared evaluator
        variant. Harder: remove the last added hint, or switch to a stricter variant.

        ``diagnoses`` (failure summaries) are accepted for the protocol and ignored: the edit is drawn from ``rng``.
        """
        if direction not in ("harder", "easier"):
            raise ValueError(f"direction must be 'harder' or 'easier', got {direction!r}")
        candidates = self._candidate_edits(task, direction)
        reasons = []
        for index in (rng.permutation(len(candidates)) if candidates else []):
            label, raw = candidates[int(index)]
            try:
                return self._derive(task, raw, origin="mutated", meta={"mutation": label})
            except RewriteRejected as exc:
                reasons.append(f"{label}: {exc}")
        raise RewriteRejected(f"no {direction} mutation of {task.id} is valid; tried: {reasons or 'none possible'}")

    def _candidate_edits(self, task: Task, direction: str) -> list[tuple[str, dict[str, Any]]]:
        from rla_envs.desktop.osworld.tasks import osworld_json
        from rla_envs.desktop.tasks import HINTS_KEY

        raw = osworld_json(task)
        base, added = split_hints(task.instruction)
        declared = [h for h in raw.get(HINTS_KEY) or [] if isinstance(h, str) and h.strip()]
        edits: list[tuple[str, dict[str, Any]]] = []
        if direction == "easier":
            unused = [h for h in declared if h not in added]
            if unused:
                edits.append((f"hints {len(added)}->{len(added) + 1}",
                              {**raw, "instruction": HINT_MARKER.join([base, *added, unused[0]])}))
        elif added:
            edits.append((f"hints {len(added)}->{len(added) - 1}",
                          {**raw, "instruction": HINT_MARKER.join([base, *added[:-1]])}))
        current = _current_variant(raw)
        if current is not None:
            for variant in _variants(raw):
                softer = variant["level"] < current["level"]
                stricter = variant["level"] > current["level"]
                if (direction == "easier" and softer) or (direction == "harder" and stricter):
                    edits.append((f"variant {current['name']}->{variant['name']}", _switched(raw, variant)))
        return edits


def _switched(raw: Mapping[str, Any], variant: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with the declared ``variant``'s evaluator in use."""
    from rla_envs.desktop.tasks import VARIANT_KEY

    return {**raw, "evaluator": thaw(variant["evaluator"]), VARIANT_KEY: variant["name"]}


def _leaked_answers(raw: Mapping[str, Any]) -> list[str]:
    """Exact expected answers (``exact_match`` rules) written in the instruction as whole words."""
    evaluator = raw.get("evaluator") or {}
    funcs = evaluator.get("func")
    funcs = funcs if isinstance(funcs, list) else [funcs]
    expected = evaluator.get("expected")
    expected = expected if isinstance(expected, list) else [expected]
    leaked = []
    for func, getter in zip(funcs, expected):
        if func != "exact_match" or not isinstance(getter, Mapping) or getter.get("type") != "rule":
            continue
        answer = str((getter.get("rules") or {}).get("expected", "")).strip()
        if answer and re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", str(raw.get("instruction", ""))):
            leaked.append(answer)
    return leaked


def _step_text(step: Mapping[str, Any]) -> str:
    kind = step.get("type")
    params = step.get("parameters") or {}
    if kind == "download":
        return "download " + ", ".join(f"{PurePath(f.get('url', '')).name} -> {f.get('path')}"
                                       for f in params.get("files") or [])
    if kind in ("launch", "execute", "command"):
        command = params.get("command")
        return f"{kind} {command if isinstance(command, str) else ' '.join(map(str, command or []))}"[:200]
    if kind == "open":
        return f"open {params.get('path')}"
    return f"{kind} {json.dumps(thaw(params))[:120]}"


def _evaluator_text(evaluator: Mapping[str, Any]) -> str:
    parts = [f"func={thaw(evaluator.get('func'))}"]
    for key in ("result", "expected", "options"):
        if evaluator.get(key) is not None:
            parts.append(f"{key}={json.dumps(thaw(evaluator[key]))[:300]}")
    if evaluator.get("postconfig"):
        parts.append(f"postconfig: {len(evaluator['postconfig'])} steps")
    return ", ".join(parts)

