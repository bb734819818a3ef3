"""Adaptation: diagnose -> rewrite -> validate structure -> measure difficulty fresh -> swap or reject.

:func:`adapt` runs one round over the slots the pool wants rewritten (``pool.candidates_for_rewrite()``)::

    report = adapt(pool, MutatorRewriter(), EnvMeasure(env, policy), diagnoser=RuleDiagnoser(),
                   failures={task_id: [trajectory, ...]})
    report.accepted, report.rejected, report.rollouts, report.funnel

For each slot: the rewriter proposes candidates (slight -> strong); each candidate must pass the
family's ``validate``, keep the verifier (``spec`` keys in :data:`VERIFIER_KEYS`) and not be a task the
pool already knows. Valid candidates are then measured **fresh** with the caller's policy through
``measure(task, n) -> list[success]``, the parent once per slot and round, and kept only by the pool's
acceptance rule (``PoolConfig.rewrite_rule``): ``"ours"`` -> :func:`acceptance.accept_rewrite` on
``measure_rollouts`` fresh rollouts of parent and child; ``"rlanything"`` (the released rule, faithful)
-> :func:`acceptance.rlanything_accepts` comparing ``group_size`` rollouts of the child with the
parent's recent rate. The first accepted candidate of a slot is swapped in (``pool.accept``); the
others are rejected with their reason (``pool.reject``). Candidates that fail before measurement never
enter the pool.

Every rollout ``measure`` returns is added to ``pool.counters["validation_rollouts"]``; the funnel is
counted in ``pool.counters`` as ``generated`` -> ``valid`` -> ``proposed`` (measured) -> ``accepted``,
with ``invalid`` / ``invalid:<stage>`` for the candidates dropped on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rla_envs.core.errors import InvalidTask
from rla_envs.core.family import TaskFamily, get_family
from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory, play_episode
from rla_envs.curriculum.acceptance import accept_rewrite, rlanything_accepts
from rla_envs.curriculum.diagnosers import Diagnoser
from rla_envs.curriculum.rewriters import Proposal, Rewriter

__all__ = ["adapt", "AdaptReport", "AdaptAttempt", "Measure", "EnvMeasure", "VERIFIER_KEYS",
           "verifier_change"]

#: ``spec`` keys that hold how success is checked; a rewrite must leave them as they are.
VERIFIER_KEYS = ("task_type", "tests", "test_code", "evaluator", "verifier")

Measure = Callable[[Task, int], Sequence[float]]
"""``measure(task, n)`` plays ``n`` fresh episodes of ``task`` with the current policy; returns successes."""


@dataclass
class AdaptAttempt:
    """One candidate's fate in a round.

    ``stage`` says how far it got: ``"rewrite"`` (the rewriter gave no task), ``"structure"`` (failed
    validate / verifier / duplicate checks), ``"skipped"`` (valid, not measured: the slot already took an
    earlier candidate), ``"difficulty"`` (measured, then accepted or rejected).
    """

    root_id: str
    parent_id: str
    direction: str
    strength: int
    source: str
    child_id: str | None
    stage: str
    accepted: bool
    reason: str
    evidence: dict = field(default_factory=dict)


@dataclass
class AdaptReport:
    """What one :func:`adapt` round tried, kept and refused, and the rollouts it spent."""

    attempts: list[AdaptAttempt] = field(default_factory=list)
    rollouts: int = 0
    slots: list[tuple[str, str]] = field(default_factory=list)
    diagnoses: dict[str, list[str]] = field(default_factory=dict)

    @property
    def accepted(self) -> list[AdaptAttempt]:
        """Attempts whose candidate became the active task of its slot."""
        return [a for a in self.attempts if a.accepted]

    @property
    def rejected(self) -> list[AdaptAttempt]:
        """Attempts that were refused (each with its ``reason``)."""
        return [a for a in self.attempts if not a.accepted]

    @property
    def funnel(self) -> dict[str, int]:
        """``generated`` -> ``valid`` (passed structure) -> ``measured`` -> ``accepted`` counts of this round."""
        return _funnel(self.attempts)

    def by_direction(self) -> dict[str, dict[str, int]]:
        """The funnel split by direction: ``{"harder": {...}, "easier": {...}}``."""
        return {d: _funnel([a for a in self.attempts if a.direction == d]) for d in ("harder", "easier")}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"attempts": [asdict(a) for a in self.attempts], "rollouts": self.rollouts,
                "slots": [list(s) for s in self.slots], "diagnoses": dict(self.diagnoses), "funnel": self.funnel}


def _funnel(attempts: Sequence[AdaptAttempt]) -> dict[str, int]:
    return {"generated": len(attempts),
            "valid": sum(a.stage in ("skipped", "difficulty") for a in attempts),
            "measured": sum(a.stage == "difficulty" for a in attempts),
            "accepted": sum(a.accepted for a in attempts)}


# ------------------------------------------------------------------------------------------ checks

def verifier_change(parent: Task, child: Task) -> str | None:
    """Why ``child`` checks success differently from ``parent`` (family or a :data:`VERIFIER_KEYS` entry), or None."""
    if child.family != parent.family:
        return f"family changed from {parent.family!r} to {child.family!r}"
    for key in VERIFIER_KEYS:
        if key in parent.spec and child.spec.get(key) != parent.spec[key]:
            return f"spec[{key!r}] changed"
    return None


def _structure_problem(pool, family: TaskFamily, parent: Task, child: Task, validate: bool) -> str | None:
    if pool.knows(child.id):
        return f"duplicate: task {child.id} is already in the pool"
    if child.parent != parent.id:
        return f"lineage: candidate's parent is {child.parent!r}, expected {parent.id!r}"
    change = verifier_change(parent, child)
    if change:
        return f"verifier changed: {change}"
    if validate:
        try:
            family.validate(child)
        except InvalidTask as exc:
            return f"invalid: {exc}"
        except Exception as exc:  # a family bug on an odd candidate must not end the round
            return f"invalid: {family.name}.validate raised {type(exc).__name__}: {exc}"
    return None


# ------------------------------------------------------------------------------------------ measuring

def _measure(pool, measure: Measure, task: Task, n: int) -> list[float]:
    """``measure(task, n)``, each rollout counted in the pool's validation budget; outcomes checked."""
    outcomes = [float(x) for x in measure(task, n)]
    pool.count("validation_rollouts", len(outcomes))
    if len(outcomes) != n:
        raise ValueError(f"measure(task, {n}) returned {len(outcomes)} outcomes; it must play exactly n episodes")
    if any(not 0.0 <= x <= 1.0 for x in outcomes):
        raise ValueError(f"measure returned outcomes outside [0, 1]: {outcomes}")
    return outcomes


def _decide(pool, direction: str, parent_outcomes: list[float] | None, child_outcomes: list[float],
            parent_rate: float | None):
    """(accepted, reason, evidence) by the pool's rewrite rule."""
    config = pool.config
    child_successes = round(sum(child_outcomes))
    if config.rewrite_rule == "rlanything":
        new_rate = child_successes / len(child_outcomes)
        accepted = rlanything_accepts(direction, parent_rate, new_rate, config.alpha_low, config.alpha_high)
        evidence = {"rule": "rlanything", "direction": direction, "parent_rate": parent_rate,
                    "child_rate": new_rate, "child_rollouts": len(child_outcomes)}
        reason = "accepted" if accepted else ("child_never_succeeds" if new_rate == 0 else "rlanything_rule")
        return accepted, reason, evidence
    decision = accept_rewrite(direction, round(sum(parent_outcomes)), len(parent_outcomes), child_successes,
                              len(child_outcomes), alpha_low=config.alpha_low, alpha_high=config.alpha_high,
                              margin=config.margin, accept_confidence=config.accept_confidence)
    return decision.accepted, decision.reason, {"rule": "ours", **decision.evidence}


# ------------------------------------------------------------------------------------------ the round

def adapt(pool, rewriter: Rewriter, measure: Measure, *, diagnoser: Diagnoser | None = None,
          failures: Mapping[str, Sequence[Trajectory]] | None = None, rollouts: int | None = None,
          max_slots: int | None = None, validate: bool = True, family: TaskFamily | None = None,
          rng: np.random.Generator | int | None = None) -> AdaptReport:
    """One adaptation round over ``pool.candidates_for_rewrite()``; returns what happened.

    Args:
        pool: the :class:`~rla_envs.curriculum.pool.TaskPool` to adapt (changed in place).
        rewriter: proposes candidates (e.g. :class:`MutatorRewriter`, :class:`LLMRewriter`).
        measure: ``measure(task, n) -> successes`` with the current policy (e.g. :class:`EnvMeasure`).
        diagnoser: summarises ``failures`` of the slot's active task for the rewriter (optional).
        failures: failed trajectories by task id (what the wrapper keeps).
        rollouts: fresh rollouts each for parent and child (default ``pool.config.measure_rollouts``, or
            ``group_size`` under the released rule, which measures only the child).
        max_slots: rewrite at most this many slots this round (default: all candidates).
        validate: call the family's ``validate`` on each candidate (rewriters may validate already).
        family: the family hooks (default ``get_family(task.family)``).
        rng: seeds the rewriter; default derived from the pool's seed and counters (the pool's own
            sampling generator is not touched).
    """
    config = pool.config
    if rollouts is None:
        rollouts = config.group_size if config.rewrite_rule == "rlanything" else config.measure_rollouts
    if rollouts < 1:
        raise ValueError(f"rollouts must be >= 1, got {rollouts}")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng if rng is not None else
                                    [config.seed, pool.episodes, pool.counters.get("generated", 0)])
    report = AdaptReport()
    candidates = pool.candidates_for_rewrite()
    for root_id, direction in candidates[: max_slots if max_slots is not None else len(candidates)]:
        report.slots.append((root_id, direction))
        _adapt_slot(pool, root_id, direction, rewriter, measure, diagnoser, failures or {}, rollouts,
                    validate, family, rng, report)
    return report


def _adapt_slot(pool, root_id, direction, rewriter, measure, diagnoser, failures, rollouts, validate, family,
                rng, report: AdaptReport) -> None:
    parent = pool.slot(root_id).active
    family = family or get_family(parent.family)
    stats = pool.stats(parent.id)
    rate = stats.recent_success_rate if pool.config.rewrite_rule == "rlanything" else stats.mean
    diagnoses = list(diagnoser.diagnose(parent, failures.get(parent.id, ()))) if diagnoser is not None else []
    report.diagnoses[root_id] = diagnoses
    proposals = rewriter.propose(parent, direction, success_rate=rate, diagnoses=diagnoses, rng=rng)
    parent_outcomes: list[float] | None = None
    done = False
    for proposal in proposals:
        pool.count("generated")
        attempt = _attempt(root_id, parent, direction, proposal)
        report.attempts.append(attempt)
        problem = proposal.reason if not proposal.ok else _structure_problem(pool, family, parent, proposal.task,
                                                                             validate)
        if problem is not None:
            attempt.reason = problem
            pool.count("invalid")
            pool.count(f"invalid:{attempt.stage}")
            continue
        pool.count("valid")
        if done:
            attempt.stage, attempt.reason = "skipped", "not measured: an earlier candidate of this slot was accepted"
            continue
        attempt.stage = "difficulty"
        pool.propose(root_id, proposal.task, direction=direction)
        try:
            if pool.config.rewrite_rule != "rlanything" and parent_outcomes is None:
                parent_outcomes = _measure(pool, measure, parent, rollouts)
                report.rollouts += rollouts
            child_outcomes = _measure(pool, measure, proposal.task, rollouts)
            report.rollouts += rollouts
        except BaseException as exc:  # leave no pending candidate behind: the slot would be stuck
            pool.reject(root_id, "measurement_failed", {"error": f"{type(exc).__name__}: {exc}"})
            raise
        accepted, reason, evidence = _decide(pool, direction, parent_outcomes, child_outcomes,
                                             stats.recent_success_rate)
        evidence.update(strength=proposal.strength, source=proposal.source, diagnoses=diagnoses)
        attempt.accepted, attempt.reason, attempt.evidence = accepted, reason, evidence
        if accepted:
            pool.accept(root_id, evidence)
            done = True
        else:
            pool.reject(root_id, reason, evidence)


def _attempt(root_id: str, parent: Task, direction: str, proposal: Proposal) -> AdaptAttempt:
    return AdaptAttempt(root_id=root_id, parent_id=parent.id, direction=direction, strength=proposal.strength,
                        source=proposal.source, child_id=proposal.task.id if proposal.ok else None,
                        stage="structure" if proposal.ok else "rewrite", accepted=False,
                        reason=proposal.reason or "")


class EnvMeasure:
    """``measure(task, n)`` built from an env and a policy: plays ``n`` episodes, returns ``info["won"]`` as 0/1.

    Args:
        env: any rla env (or a wrapper; ``options={"task": task}`` must reach the base env).
        policy: ``policy(observation, info) -> action``; a picklable object if this crosses processes.
        seed: seeds the episodes (episode ``i`` of the measurer's life gets a seed drawn from it).
        keep_failures: keep the failed trajectories of the last call in :attr:`failures`.
    """

    def __init__(self, env, policy: Callable[[Any, dict], Any], *, seed: int | None = 0, keep_failures: bool = False):
        if not callable(policy):
            raise TypeError(f"policy must be callable as policy(observation, info) -> action, got {type(policy).__name__}")
        self.env = env
        self.policy = policy
        self.rng = np.random.default_rng(seed)
        self.keep_failures = keep_failures
        self.failures: list[Trajectory] = []
        self.episodes = 0

    def __call__(self, task: Task, n: int) -> list[float]:
        """Play ``n`` fresh episodes of ``task``; 1.0 for each won, else 0.0."""
        outcomes, self.failures = [], []
        for seed in self.rng.integers(2**31, size=n):
            trajectory = play_episode(self.env, self.policy, task, seed=int(seed))
            self.episodes += 1
            outcomes.append(1.0 if trajectory.won else 0.0)
            if self.keep_failures and not trajectory.won:
                self.failures.append(trajectory)
        return outcomes
