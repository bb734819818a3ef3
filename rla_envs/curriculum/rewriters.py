"""Rewriters: propose harder or easier versions of a task, graded from slight to strong.

A rewriter is anything with ``propose(task, direction, *, success_rate, diagnoses, rng) -> list[Proposal]``.
Each :class:`Proposal` holds either a new task or the reason there is none; nothing here touches a pool.
Two come built in:

* :class:`MutatorRewriter`: the family's LLM-free ``mutate(task, direction, rng, diagnoses=...)``;
  attempt ``i`` stacks ``strengths[i]`` mutations (1 = slight, 3 = strong); the failure diagnoses go to
  every ``mutate`` call, so a family can choose its edits by them (ALFWorld does).
* :class:`LLMRewriter`: any text-generation callable; the prompt is built from the family's
  ``describe(task)``, the direction, the measured success rate, the failure diagnoses and the strength
  asked for; each answer is parsed by the family's ``apply_rewrite``. Garbage answers become rejected
  proposals with the reason, never exceptions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import inspect

import numpy as np

from rla_envs.core.errors import InvalidTask
from rla_envs.core.family import DIRECTIONS, TaskFamily, get_family
from rla_envs.core.task import Task, thaw

__all__ = ["Proposal", "Rewriter", "MutatorRewriter", "LLMRewriter", "STRENGTH_WORDS", "build_prompt"]

#: How a strength level reads in a prompt.
STRENGTH_WORDS = {1: "slight", 2: "moderate", 3: "strong"}
_RAW_KEEP = 300  # characters of an LLM answer kept in a proposal, for the report


@dataclass(frozen=True)
class Proposal:
    """One candidate rewrite of ``parent``: the new task, or why there is none.

    Attributes:
        parent: the task that was rewritten.
        direction: ``"harder"`` or ``"easier"``.
        strength: 1 (slight) and up (stronger); what the rewriter was asked for.
        task: the proposed task (parent = ``parent.id``), or None when rejected.
        reason: why the proposal was rejected (None when ``task`` is set).
        source: which rewriter made it (``"mutator"``, ``"llm"``).
        raw: the start of the LLM's answer, if any (for reports).
    """

    parent: Task
    direction: str
    strength: int
    task: Task | None = None
    reason: str | None = None
    source: str = ""
    raw: str | None = None

    def __post_init__(self):
        if (self.task is None) == (self.reason is None):
            raise ValueError("a Proposal has either a task or a rejection reason, not both or neither")

    @property
    def ok(self) -> bool:
        """True when the proposal holds a task."""
        return self.task is not None


@runtime_checkable
class Rewriter(Protocol):
    """Proposes rewrites of a task in one direction (slight to strong)."""

    def propose(self, task: Task, direction: str, *, success_rate: float | None = None,
                diagnoses: Sequence[str] = (), rng: np.random.Generator | None = None) -> list[Proposal]:
        """Candidate rewrites of ``task``, each a task or a rejection reason."""


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def _family(cache: dict, family: TaskFamily | None, task: Task) -> TaskFamily:
    if family is not None:
        return family
    if task.family not in cache:
        cache[task.family] = get_family(task.family)
    return cache[task.family]


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


# ------------------------------------------------------------------------------------------ mutator

class MutatorRewriter:
    """Rewrites with the family's LLM-free ``mutate``: attempt ``i`` stacks ``strengths[i]`` mutations.

    The same ``rng`` state (and diagnoses) give the same proposals. The proposed task's parent is the
    task given (the intermediate steps of a stack are not kept); ``meta["strength"]`` records the stack
    height and ``meta["stacked_mutations"]`` the edits. ``diagnoses`` are passed to each ``mutate`` call
    (a family whose ``mutate`` has no ``diagnoses`` keyword, written before it existed, is called
    without them); when the family records ``meta["guided_by"]``, ``meta["stacked_guided"]`` says, per
    stacked edit, whether a diagnosis chose it.

    Args:
        family: the family hooks to use; default: ``get_family(task.family)`` for each task.
        strengths: how many mutations each attempt stacks, slight to strong (default ``(1, 2, 3)``).
    """

    source = "mutator"

    def __init__(self, family: TaskFamily | None = None, *, strengths: Sequence[int] = (1, 2, 3)):
        strengths = tuple(int(s) for s in strengths)
        if not strengths or min(strengths) < 1:
            raise ValueError(f"strengths must be a non-empty list of stack heights >= 1, got {strengths!r}")
        self.family = family
        self.strengths = strengths
        self._families: dict[str, TaskFamily] = {}

    def __getstate__(self):
        return {"family": self.family, "strengths": self.strengths, "_families": {}}

    def propose(self, task: Task, direction: str, *, success_rate: float | None = None,
                diagnoses: Sequence[str] = (), rng: np.random.Generator | int | None = None) -> list[Proposal]:
        """One proposal per strength; a strength that no mutation reaches is a rejected proposal."""
        _check_direction(direction)
        family, rng = _family(self._families, self.family, task), _rng(rng)
        seeds = rng.integers(2**63, size=len(self.strengths))
        proposals, seen = [], {task.id: "the task itself"}
        for strength, seed in zip(self.strengths, seeds):
            proposal = self._stack(family, task, direction, strength, np.random.default_rng(int(seed)), diagnoses)
            if proposal.ok:
                if proposal.task.id in seen:
                    proposal = Proposal(task, direction, strength, reason=f"duplicate: same task as "
                                        f"{seen[proposal.task.id]}", source=self.source)
                else:
                    seen[proposal.task.id] = f"the strength-{strength} proposal"
            proposals.append(proposal)
        return proposals

    def _stack(self, family: TaskFamily, task: Task, direction: str, strength: int,
               rng: np.random.Generator, diagnoses: Sequence[str]) -> Proposal:
        current, names, guided = task, [], []
        extra = {"diagnoses": tuple(diagnoses)} if diagnoses and _takes_diagnoses(family) else {}
        for level in range(strength):
            try:
                current = family.mutate(current, direction, rng, **extra)
            except InvalidTask as exc:
                reason = f"mutation {level + 1} of {strength} failed: {exc}"
                return Proposal(task, direction, strength, reason=reason, source=self.source)
            names.append(str(current.meta.get("mutation") or "?"))
            guided.append(bool(current.meta.get("guided_by")))
        meta = dict(thaw(current.meta))
        meta.update(strength=strength, stacked_mutations=names)
        if "guided_by" in meta:
            meta["stacked_guided"] = guided
        new = Task(family=current.family, instruction=current.instruction, spec=current.spec, parent=task.id,
                   origin=current.origin, meta=meta)
        return Proposal(task, direction, strength, task=new, source=self.source)


def _takes_diagnoses(family: TaskFamily) -> bool:
    """Whether ``family.mutate`` accepts a ``diagnoses`` keyword (or any keyword)."""
    try:
        parameters = inspect.signature(family.mutate).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature: call it as documented
        return True
    return any(p.name == "diagnoses" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


# ------------------------------------------------------------------------------------------ LLM

_PROMPT = """You rewrite tasks for an agent that is being trained, so that each task stays learnable.

{description}

The agent currently succeeds on this task {rate}.
{diagnoses}
Make the task {strength_word}ly {direction}: {advice}
Keep it solvable, keep the same kind of task, and do not reveal the solution in the goal text.
"""
_ADVICE = {"harder": "the agent succeeds too often, so it learns little from this task.",
           "easier": "the agent almost never succeeds, so it gets no learning signal from this task."}


def build_prompt(description: str, direction: str, success_rate: float | None, diagnoses: Sequence[str],
                 strength: int) -> str:
    """The rewrite prompt for one attempt (see :class:`LLMRewriter`)."""
    _check_direction(direction)
    rate = "at an unknown rate" if success_rate is None else f"{100 * success_rate:.0f}% of the time"
    if diagnoses:
        diag = "Why its attempts fail:\n" + "\n".join(f"- {d}" for d in diagnoses) + "\n"
    else:
        diag = ""
    word = STRENGTH_WORDS.get(strength, "strong" if strength > 3 else "slight")
    return _PROMPT.format(description=description.strip(), rate=rate, diagnoses=diag, strength_word=word,
                          direction=direction, advice=_ADVICE[direction])


class LLMRewriter:
    """Rewrites with a text generator: one prompt per attempt, answers parsed by ``apply_rewrite``.

    Args:
        generate: ``prompt -> text``, or with ``batch=True`` ``[prompts] -> [texts]`` (one call for all
            attempts). Must be a picklable object (not a closure) if the rewriter crosses processes.
        attempts: how many proposals per call, graded slight -> strong.
        batch: whether ``generate`` takes the list of prompts at once.
        family: the family hooks to use; default ``get_family(task.family)``.
        max_answer_chars: longer answers are rejected unparsed ("too long").

    Every answer that is not text, too long, unparseable, impossible in the scene, or equal to the
    parent becomes a rejected :class:`Proposal` whose ``reason`` says why; ``propose`` never raises for
    a bad answer. Errors raised by ``generate`` itself propagate (a broken backend is not a bad answer).
    """

    source = "llm"

    def __init__(self, generate: Callable[[str], str] | Callable[[list[str]], list[str]], *, attempts: int = 3,
                 batch: bool = False, family: TaskFamily | None = None, max_answer_chars: int = 20_000):
        if not callable(generate):
            raise TypeError(f"generate must be callable (prompt -> text), got {type(generate).__name__}")
        if attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {attempts}")
        if max_answer_chars < 1:
            raise ValueError(f"max_answer_chars must be >= 1, got {max_answer_chars}")
        self.generate = generate
        self.attempts = int(attempts)
        self.batch = bool(batch)
        self.family = family
        self.max_answer_chars = int(max_answer_chars)
        self._families: dict[str, TaskFamily] = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_families"] = {}
        return state

    def strengths(self) -> list[int]:
        """The strength asked for in each attempt: spread over 1..3, slight first."""
        if self.attempts == 1:
            return [1]
        return [1 + round(2 * i / (self.attempts - 1)) for i in range(self.attempts)]

    def prompts(self, task: Task, direction: str, *, success_rate: float | None = None,
                diagnoses: Sequence[str] = ()) -> list[str]:
        """The prompts :meth:`propose` sends, one per attempt."""
        description = _family(self._families, self.family, task).describe(task)
        return [build_prompt(description, direction, success_rate, diagnoses, s) for s in self.strengths()]

    def propose(self, task: Task, direction: str, *, success_rate: float | None = None,
                diagnoses: Sequence[str] = (), rng: np.random.Generator | int | None = None) -> list[Proposal]:
        """One proposal per attempt (``rng`` is unused: sampling belongs to the generator)."""
        _check_direction(direction)
        prompts = self.prompts(task, direction, success_rate=success_rate, diagnoses=diagnoses)
        answers = self._answers(prompts)
        family, seen = _family(self._families, self.family, task), {task.id: "the task itself"}
        proposals = []
        for index, (strength, answer) in enumerate(zip(self.strengths(), answers)):
            proposal = self.parse(family, task, direction, strength, answer)
            if proposal.ok:
                if proposal.task.id in seen:
                    proposal = Proposal(task, direction, strength, reason=f"duplicate: same task as "
                                        f"{seen[proposal.task.id]}", source=self.source, raw=proposal.raw)
                else:
                    seen[proposal.task.id] = f"attempt {index + 1}"
            proposals.append(proposal)
        return proposals

    def _answers(self, prompts: list[str]) -> list[object]:
        if not self.batch:
            return [self.generate(p) for p in prompts]
        answers = self.generate(prompts)
        if isinstance(answers, str) or not isinstance(answers, Sequence):
            return [answers] * len(prompts)  # parse() rejects each, saying what arrived
        answers = list(answers)
        missing = len(prompts) - len(answers)
        return answers[: len(prompts)] + [_Missing(len(answers), len(prompts))] * max(0, missing)

    def parse(self, family: TaskFamily, task: Task, direction: str, strength: int, answer: object) -> Proposal:
        """One answer turned into a proposal: the family's ``apply_rewrite`` result or a rejection."""
        def reject(reason: str, raw: str | None = None) -> Proposal:
            return Proposal(task, direction, strength, reason=reason, source=self.source, raw=raw)

        if isinstance(answer, _Missing):
            return reject(f"no answer: the batch generator returned {answer.got} texts for {answer.wanted} prompts")
        if not isinstance(answer, str):
            return reject(f"not text: the generator returned {type(answer).__name__}, expected str")
        raw = answer[:_RAW_KEEP]
        if len(answer) > self.max_answer_chars:
            return reject(f"too long: {len(answer)} characters (limit {self.max_answer_chars})", raw)
        try:
            new = family.apply_rewrite(task, answer)
        except InvalidTask as exc:
            return reject(f"rejected by {family.name}.apply_rewrite: {exc}", raw)
        except Exception as exc:  # an untrusted answer must not crash adaptation; keep the evidence
            return reject(f"{family.name}.apply_rewrite raised {type(exc).__name__}: {exc}", raw)
        if not isinstance(new, Task):
            return reject(f"{family.name}.apply_rewrite returned {type(new).__name__}, not a Task", raw)
        if new.id == task.id:
            return reject("unchanged: the rewrite equals the task", raw)
        if new.parent != task.id:
            meta = dict(thaw(new.meta))
            new = Task(family=new.family, instruction=new.instruction, spec=new.spec, parent=task.id,
                       origin=new.origin, meta=meta)
        return Proposal(task, direction, strength, task=new, source=self.source, raw=raw)


@dataclass(frozen=True)
class _Missing:
    """Stands for an answer a batch generator did not return."""

    got: int
    wanted: int
