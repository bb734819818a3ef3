"""adapt() on the real TaskPool with a small numeric family: funnel, rules, budget, rejections, garbage.

The "ladder" family: a task is a level 0..10 whose true success probability under the simulated policy
is ``SKILL[level]``; mutations move one level per step; ``validate`` refuses levels outside 0..10.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rla_envs.core.errors import InvalidTask, RewriteRejected
from rla_envs.core.task import Task
from rla_envs.curriculum.adapt import EnvMeasure, adapt, verifier_change
from rla_envs.core.trajectory import Trajectory
from rla_envs.curriculum.diagnosers import RuleDiagnoser
from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.pool_config import PoolConfig
from rla_envs.curriculum.rewriters import LLMRewriter, MutatorRewriter

SKILL = {0: 1.0, 1: 0.95, 2: 0.9, 3: 0.75, 4: 0.6, 5: 0.5, 6: 0.4, 7: 0.25, 8: 0.1, 9: 0.02, 10: 0.0}


def ladder(level: int, parent: Task | None = None) -> Task:
    spec = {"level": level, "task_type": "ladder"}
    if parent is None:
        return Task(family="ladder", instruction=f"climb to rung {level}", spec=spec)
    return parent.derive(instruction=f"climb to rung {level}", spec=spec, origin="mutated", meta={"mutation": "step"})


class Ladder:
    """Family hooks of the ladder tasks."""

    name = "ladder"

    def describe(self, task):
        return f"A ladder task at rung {task.spec['level']}. Answer with JSON {{\"level\": n}}."

    def validate(self, task):
        if not 0 <= task.spec["level"] <= 10:
            raise InvalidTask(f"rung {task.spec['level']} does not exist")

    def mutate(self, task, direction, rng):
        level = task.spec["level"] + (1 if direction == "harder" else -1)
        if not 0 <= level <= 10:
            raise RewriteRejected(f"no rung {level}")
        return ladder(level, task)

    def apply_rewrite(self, task, text):
        try:
            level = json.loads(text)["level"]
        except Exception as exc:
            raise RewriteRejected(f"unparseable: {type(exc).__name__}") from None
        if not isinstance(level, int) or isinstance(level, bool):
            raise RewriteRejected(f"level must be an integer, got {level!r}")
        new = task.derive(instruction=f"climb to rung {level}", spec={"level": level, "task_type": "ladder"},
                          origin="rewritten")
        self.validate(new)
        return new


class SimulatedMeasure:
    """measure(task, n): Bernoulli(SKILL[level]) outcomes from a seeded generator; counts calls."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.calls = []

    def __call__(self, task, n):
        self.calls.append((task.id, n))
        return list((self.rng.random(n) < SKILL[task.spec["level"]]).astype(float))


def pool_with_evidence(levels, outcomes_per_task=16, **config):
    """A pool over ladder tasks, each with outcomes recorded at its true rate (deterministic pattern)."""
    tasks = [ladder(level) for level in levels]
    pool = TaskPool(tasks, PoolConfig(seed=0, **config))
    for task in tasks:
        wins = round(SKILL[task.spec["level"]] * outcomes_per_task)
        pool.record_group(task.id, [1.0] * wins + [0.0] * (outcomes_per_task - wins))
    return pool


def test_rewrites_both_ways_and_counts_every_rollout_exactly():
    pool = pool_with_evidence([0, 9, 5], measure_rollouts=16)  # too easy, too hard, in the band
    assert sorted(d for _, d in pool.candidates_for_rewrite()) == ["easier", "harder"]
    measure = SimulatedMeasure()
    report = adapt(pool, MutatorRewriter(Ladder(), strengths=(1, 2, 3)), measure, family=Ladder())
    # Budget: every rollout measure played is in the pool's counter and in the report.
    played = sum(n for _, n in measure.calls)
    assert pool.validation_rollouts == report.rollouts == played
    assert all(n == 16 for _, n in measure.calls)
    # The parent is measured once per slot, then candidates until one is accepted.
    assert {a.direction for a in report.accepted} == {"harder", "easier"}
    by_root = {a.root_id: a for a in report.accepted}
    for attempt in report.accepted:
        new_level = pool.task(attempt.child_id).spec["level"]
        old_level = pool.task(attempt.parent_id).spec["level"]
        assert (new_level > old_level) == (attempt.direction == "harder")
        assert 0.2 <= SKILL[new_level] <= 0.8 or attempt.evidence["child_posterior_mean"] <= 0.8
        assert pool.slot(attempt.root_id).active.id == attempt.child_id
    assert len(by_root) == 2
    # The funnel in the pool matches the report.
    funnel = report.funnel
    assert pool.counters["generated"] == funnel["generated"] == 6
    assert pool.counters["valid"] == funnel["valid"]
    assert pool.counters["proposed"] == funnel["measured"]
    assert pool.counters["accepted"] == funnel["accepted"] == 2


def test_slight_move_is_rejected_as_too_small_and_recorded_in_history():
    pool = pool_with_evidence([0])  # 1.0 -> rung 1 (0.95): a move of 0.05 is below the 0.15 margin
    report = adapt(pool, MutatorRewriter(Ladder(), strengths=(1,)), SimulatedMeasure(seed=3), family=Ladder())
    assert not report.accepted
    [attempt] = report.rejected
    assert attempt.stage == "difficulty" and attempt.reason in ("move_below_margin", "move_not_significant")
    slot = pool.slot(pool.active_tasks()[0].id)
    assert slot.history[-1].event == "rejected" and slot.history[-1].reason == attempt.reason
    assert slot.pending is None and slot.active.spec["level"] == 0
    # Once the slot has new evidence it is a candidate again; the refused rung is now a known task.
    pool.record_group(slot.active.id, [1.0] * 16)
    again = adapt(pool, MutatorRewriter(Ladder(), strengths=(1,)), SimulatedMeasure(seed=3), family=Ladder())
    assert again.attempts[0].reason == f"duplicate: task {attempt.child_id} is already in the pool"


def test_invalid_duplicate_and_verifier_candidates_never_enter_the_pool():
    class Bad(Ladder):
        """Harder mutations: jump off the ladder, repeat the task, or change the verifier."""

        def __init__(self):
            self.calls = 0

        def mutate(self, task, direction, rng):
            self.calls += 1
            if self.calls == 1:
                return task.derive(instruction="off", spec={"level": 99, "task_type": "ladder"}, origin="mutated")
            if self.calls == 2:
                return task.derive(instruction=task.instruction, spec=dict(task.spec), origin="mutated")
            return task.derive(instruction="other", spec={"level": 4, "task_type": "ropes"}, origin="mutated")

    pool = pool_with_evidence([0])
    before = pool.to_dict()
    measure = SimulatedMeasure()
    report = adapt(pool, MutatorRewriter(Bad(), strengths=(1, 1, 1)), measure, family=Bad())
    reasons = [a.reason for a in report.attempts]
    assert reasons[0] == "invalid: rung 99 does not exist"
    assert reasons[1].startswith("duplicate")
    assert reasons[2] == "verifier changed: spec['task_type'] changed"
    assert measure.calls == [] and report.rollouts == 0
    after = pool.to_dict()
    assert after["counters"] == {**before["counters"], "generated": 3, "invalid": 3, "invalid:structure": 2,
                                 "invalid:rewrite": 1}
    assert {k: v for k, v in after.items() if k != "counters"} == {k: v for k, v in before.items() if k != "counters"}


def test_released_rule_measures_only_the_child_against_the_recent_rate():
    pool = pool_with_evidence([9], outcomes_per_task=8, strategy="rlanything")
    assert pool.config.rewrite_rule == "rlanything"
    measure = SimulatedMeasure()
    report = adapt(pool, MutatorRewriter(Ladder(), strengths=(2,)), measure, family=Ladder())
    [attempt] = report.attempts
    assert [n for _, n in measure.calls] == [8]  # group_size rollouts of the child, parent not re-measured
    assert attempt.evidence["rule"] == "rlanything" and attempt.evidence["parent_rate"] == 0.0
    assert pool.validation_rollouts == 8


def test_measure_must_return_n_outcomes_and_leaves_no_pending_candidate():
    pool = pool_with_evidence([9])
    with pytest.raises(ValueError, match="returned 3 outcomes"):
        adapt(pool, MutatorRewriter(Ladder(), strengths=(1,)), lambda task, n: [0.0] * 3, family=Ladder())
    assert pool.validation_rollouts == 3  # what was played is still counted
    assert all(slot.pending is None for slot in pool.slots.values())
    assert list(pool.slots.values())[0].history[-1].reason == "measurement_failed"


def test_diagnoses_reach_the_llm_prompt():
    seen = []

    def generate(prompt):
        seen.append(prompt)
        return '{"level": 7}'

    pool = pool_with_evidence([9])
    task = pool.active_tasks()[0]
    failure = Trajectory(task_id=task.id, observations=["start", "Nothing happens."], actions=["fly"],
                         infos=[{}, {"invalid_action": True}], truncated=True)
    report = adapt(pool, LLMRewriter(generate, attempts=1, family=Ladder()), SimulatedMeasure(), family=Ladder(),
                   diagnoser=RuleDiagnoser(invalid_repeats=1), failures={task.id: [failure]})
    assert "1/1 failed runs ran out of steps (1 steps)" in seen[0]
    assert report.diagnoses[task.id][0].startswith("1/1 failed runs")
    assert report.attempts[0].stage == "difficulty"


def test_thousand_garbage_llm_answers_are_rejected_and_change_no_task():
    rng = np.random.default_rng(0)
    alphabet = list("abcdefghijklmnopqrstuvwxyz {}[]\":,0123456789\n")

    def garbage(i):
        kind = i % 5
        if kind == 0:
            return "".join(rng.choice(alphabet, size=int(rng.integers(0, 200))))
        if kind == 1:
            return '{"level": ' + "".join(rng.choice(alphabet, size=5))  # broken JSON
        if kind == 2:
            return json.dumps({"level": int(rng.choice([-5, 11, 99, 10**9]))})  # impossible rung
        if kind == 3:
            return "x" * int(rng.integers(20_001, 200_000))  # huge
        return json.dumps({"level": "nine"} if i % 2 else [1, 2, 3])

    answers = [garbage(i) for i in range(1000)]

    class Replay:
        def __init__(self):
            self.index = 0

        def __call__(self, prompt):
            self.index += 1
            return answers[self.index - 1]

    pool = pool_with_evidence([9])
    before = pool.to_dict()
    report = adapt(pool, LLMRewriter(Replay(), attempts=1000, family=Ladder()), SimulatedMeasure(), family=Ladder())
    assert len(report.attempts) == 1000 and not report.accepted
    assert all(a.stage == "rewrite" and a.reason for a in report.attempts)
    assert report.rollouts == 0
    after = pool.to_dict()
    assert after["counters"] == {**before["counters"], "generated": 1000, "invalid": 1000, "invalid:rewrite": 1000}
    assert {k: v for k, v in after.items() if k != "counters"} == {k: v for k, v in before.items() if k != "counters"}


def test_verifier_change_and_env_measure_checks():
    a, b = ladder(1), ladder(2)
    assert verifier_change(a, b) is None
    assert verifier_change(a, Task(family="other", instruction="x", spec={})) == "family changed from 'ladder' to 'other'"
    with pytest.raises(TypeError, match="policy"):
        EnvMeasure(env=None, policy="not callable")


def test_metrics_after_a_round_match_the_pool_books(tmp_path):
    from rla_envs.curriculum import plots

    pool = pool_with_evidence([0, 9, 5], measure_rollouts=16)  # one all-pass group, one 0.02*16 -> 0 wins (all-fail), one mixed
    # groups: 3 recorded; rung 0: 16/16 all-pass; rung 9: round(0.32) = 0 wins -> all-fail; rung 5: 8/16.
    assert plots.zero_variance_fraction(pool) == {"all_fail": 1 / 3, "all_pass": 1 / 3, "total": 2 / 3}
    assert plots.effective_sample_ratio(pool) == pytest.approx(1 / 3)
    counts, edges = plots.difficulty_histogram(pool, bins=4)
    # Posterior means (decay 0.95): rung 0 ~0.92 -> difficulty 0.08; rung 9 ~0.08 -> 0.92; rung 5 = 0.5 -> bin 2.
    assert counts == [1, 0, 1, 1] and edges == [0.0, 0.25, 0.5, 0.75, 1.0]
    report = adapt(pool, MutatorRewriter(Ladder(), strengths=(1, 2, 3)), SimulatedMeasure(), family=Ladder())
    funnel = plots.rewrite_funnel(pool)
    assert funnel == {"generated": report.funnel["generated"], "valid": report.funnel["valid"],
                      "proposed": report.funnel["measured"], "accepted": report.funnel["accepted"]}
    assert plots.accepted_over_time(pool) == [(48, 1), (48, 2)]
    chains = plots.lineage(pool)
    assert [len([v for v in c if v["event"] == "accepted"]) for c in chains] == [1, 1, 0]
    assert chains[0][0]["event"] == "root" and chains[0][-1]["task_id"] == pool.active_tasks()[0].id
    json.dumps(plots.metrics(pool))  # JSON-ready
    path = pool.plot(tmp_path / "pool.png")  # matplotlib is a dependency: no skip
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
