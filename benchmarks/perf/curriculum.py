"""Benchmark: the released RLAnything rewrite rule against ours on simulated policies; guided rewrites on games.

Questions 1-3 are pure and fast (numpy only, no env, no model); question 4 plays ALFWorld games. Every
number is measured in this run:

1. **Null rewrites** (``null_false_accept_rlanything``, ``null_false_accept_ours``): a rewrite that changes
   nothing (child p == parent p). A parent p is drawn uniformly from [0, 1]; only parents whose rule
   triggers a rewrite count. *Released*: the step's 8 rollouts trigger (rate >= 0.8 or <= 0.2), the child
   is measured by 8 rollouts next step and compared with the rate of the same 8 rollouts that triggered.
   *Ours*: groups of 8 feed the decayed Beta posterior until it triggers (or 12 groups pass); then
   parent and child are re-measured fresh, 16 rollouts each, and ``acceptance.accept_rewrite`` decides.
2. **Real moves** (``true_move_accept_ours``): the same triggered parents, but the child really moved by
   >= 0.3 in the intended direction and lands in [0.2, 0.8] (child p uniform over that range).
3. **Curriculum** (``episodes_to_target_{uniform,rlanything,ours}``): a synthetic learner with one skill
   level ``s`` shared by all tasks (skills transfer). A task of difficulty ``d`` succeeds with
   ``p = sigmoid(2 (s - d))``; each GRPO group of 8 rollouts raises ``s`` by ``lr * 4 p_hat (1 - p_hat)``
   (a group with no variance teaches nothing). 32 root tasks; a rewrite shifts the
   difficulty by U(0.5, 2) in the asked direction, but 30 % of rewrites change nothing (a weak rewriter).
   Held-out: 16 tasks of difficulty 4..6; the target is a mean held-out success of 0.5. Episodes count
   training rollouts plus every rollout spent on validation (ours: 16 + 16 per candidate; the released
   rule measures the child inside the next training step, so those rollouts also train). Strategies:
   ``uniform`` (no rewriting), ``rlanything`` (uniform sampling + released rule), ``ours`` (learnability
   sampling + our trigger and acceptance). The median over seeds is reported; a seed that never reaches
   the target counts as the budget.
4. **Guided rewrites** (``guided_rewrite_{accept_rate,move_per_rollout,mean_move}``): on real ALFWorld games
   played by a weak sweep policy, mutations chosen from the failure diagnoses against undirected ones, on
   the same triggered tasks with the same seeds (:mod:`benchmarks.perf.guided_rewrites`; the only part that
   plays games, a few minutes on one core).

Run it alone with ``python -m benchmarks.perf.curriculum [--quick]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from benchmarks.perf.report import Metric
from rla_envs.core.task import Task
from rla_envs.curriculum.acceptance import accept_rewrite, rewrite_direction, rlanything_accepts, rlanything_direction
from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.pool_config import PoolConfig
from rla_envs.curriculum.stats import TaskStats, observe, observe_group

__all__ = ["run", "null_and_true_move_rates", "episodes_to_target"]

GROUP_SIZE = 8          # rollouts per task per step (RLAnything's default)
MEASURE_ROLLOUTS = 16   # fresh rollouts each for parent and child (ours)
MAX_TRIGGER_GROUPS = 12  # groups fed to our posterior before giving up on a parent
OUR_ZERO_VARIANCE_REPEATS = 2  # all-fail / all-pass groups in a row that trigger our rule
NULL_REWRITE_SHARE = 0.3
TARGET_HELD_OUT_SUCCESS = 0.5


# ------------------------------------------------------------------ null and real moves
def _released_trial(rng: np.random.Generator, parent_p: float, child_p: float) -> bool | None:
    """One released-rule rewrite: None if the 8 trigger rollouts do not trigger, else whether it is kept."""
    old_rate = rng.binomial(GROUP_SIZE, parent_p) / GROUP_SIZE
    direction = rlanything_direction(old_rate)
    if direction is None:
        return None
    new_rate = rng.binomial(GROUP_SIZE, child_p) / GROUP_SIZE
    return rlanything_accepts(direction, old_rate, new_rate)


def _our_trigger(rng: np.random.Generator, parent_p: float) -> str | None:
    """Feed groups of 8 outcomes of a task at ``parent_p`` to the pool's statistics until our rule triggers."""
    config, stats = PoolConfig(zero_variance_repeats=OUR_ZERO_VARIANCE_REPEATS), TaskStats()
    for _ in range(MAX_TRIGGER_GROUPS):
        outcomes = (rng.random(GROUP_SIZE) < parent_p).astype(float)
        for success in outcomes:
            stats = observe(stats, success, stats.episodes + 1, decay=config.decay, prior=config.prior)
        stats = observe_group(stats, outcomes)
        direction = rewrite_direction(
            stats.alpha, stats.beta, stats.episodes, stats.zero_variance_streak, stats.zero_variance_kind,
            alpha_low=config.alpha_low, alpha_high=config.alpha_high, min_observations=config.min_observations,
            confidence=config.confidence, zero_variance_repeats=config.zero_variance_repeats)
        if direction is not None:
            return direction
    return None


def _ours_accepts(rng: np.random.Generator, direction: str, parent_p: float, child_p: float) -> bool:
    parent_successes = int(rng.binomial(MEASURE_ROLLOUTS, parent_p))
    child_successes = int(rng.binomial(MEASURE_ROLLOUTS, child_p))
    return accept_rewrite(direction, parent_successes, MEASURE_ROLLOUTS, child_successes, MEASURE_ROLLOUTS).accepted


def _real_move_child(rng: np.random.Generator, direction: str, parent_p: float) -> float | None:
    """A child p moved by >= 0.3 in ``direction`` into [0.2, 0.8], uniform over what is possible."""
    low, high = (0.2, min(0.8, parent_p - 0.3)) if direction == "harder" else (max(0.2, parent_p + 0.3), 0.8)
    return None if high < low else float(rng.uniform(low, high))


def null_and_true_move_rates(trials: int, seed: int = 0) -> dict[str, float]:
    """Acceptance rates of null rewrites (both rules) and of real moves (both rules), over triggered parents."""
    rng = np.random.default_rng(seed)
    released_null, released_real, ours_null, ours_real = [], [], [], []
    for _ in range(trials):
        parent_p = float(rng.random())
        kept = _released_trial(rng, parent_p, parent_p)
        if kept is not None:
            released_null.append(kept)
        direction = _our_trigger(rng, parent_p)
        if direction is None:
            continue
        ours_null.append(_ours_accepts(rng, direction, parent_p, parent_p))
        child_p = _real_move_child(rng, direction, parent_p)
        if child_p is not None:
            ours_real.append(_ours_accepts(rng, direction, parent_p, child_p))
            # the released rule on the same real move: its own 8-rollout trigger, then 8 child rollouts
            kept = _released_trial(rng, parent_p, child_p)
            if kept is not None:
                released_real.append(kept)
    return {
        "null_false_accept_rlanything": float(np.mean(released_null)),
        "null_false_accept_ours": float(np.mean(ours_null)),
        "true_move_accept_ours": float(np.mean(ours_real)),
        "true_move_accept_rlanything": float(np.mean(released_real)),
        "triggered_released": len(released_null), "triggered_ours": len(ours_null), "real_moves": len(ours_real),
    }


# ------------------------------------------------------------------------- curriculum
def _success_probability(skill: float, difficulty) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-2.0 * (skill - np.asarray(difficulty, dtype=float))))


class _Learner:
    """The simulated policy: one skill level shared by every task; groups with variance raise it."""

    def __init__(self, rng: np.random.Generator, learning_rate: float):
        self.rng, self.learning_rate, self.skill = rng, learning_rate, 0.0

    def play(self, difficulty: float, rollouts: int, train: bool) -> np.ndarray:
        outcomes = (self.rng.random(rollouts) < _success_probability(self.skill, difficulty)).astype(float)
        if train:
            rate = outcomes.mean()
            self.skill += self.learning_rate * 4.0 * rate * (1.0 - rate)
        return outcomes


def _rewrite(rng: np.random.Generator, task: Task, direction: str) -> Task:
    """A simulated rewriter: shifts difficulty by U(0.5, 2) the asked way; 30 % of rewrites change nothing."""
    shift = 0.0 if rng.random() < NULL_REWRITE_SHARE else float(rng.uniform(0.5, 2.0))
    difficulty = task.meta["difficulty"] + (shift if direction == "harder" else -shift)
    version = task.meta.get("version", 0) + 1
    return task.derive(instruction=task.instruction, spec={"root": task.spec["root"], "version": version, "draw": int(rng.integers(2**31))},
                       origin="rewritten", meta={"difficulty": difficulty, "version": version})


def root_difficulties(rng: np.random.Generator, layout: str) -> np.ndarray:
    """32 root difficulties: ``spread`` U(-1, 8) covers every skill level; ``gap`` has 16 easy U(-2, 1) and
    16 hard U(7, 10) tasks and nothing in between (the frontier must be built by rewriting)."""
    if layout == "spread":
        return rng.uniform(-1.0, 8.0, 32)
    if layout == "gap":
        return np.r_[rng.uniform(-2.0, 1.0, 16), rng.uniform(7.0, 10.0, 16)]
    raise ValueError(f"layout must be 'spread' or 'gap', got {layout!r}")


def episodes_to_target(strategy: str, seed: int, budget: int, layout: str = "spread", learning_rate: float = 0.02,
                       batch_tasks: int = 8, adapt_every_steps: int = 4, eval_every: int = 256) -> int:
    """Episodes (training + validation rollouts) until held-out success >= 0.5; ``budget`` if never."""
    rng = np.random.default_rng(seed)
    difficulties = root_difficulties(rng, layout)
    tasks = [Task(family="sim", instruction=f"root {i}", spec={"root": i, "version": 0}, origin="dataset",
                  meta={"difficulty": float(d)}) for i, d in enumerate(difficulties)]
    pool_strategy = {"uniform": "uniform", "rlanything": "rlanything", "ours": "learnability"}[strategy]
    rule = {"uniform": "none", "rlanything": "rlanything", "ours": "ours"}[strategy]
    pool = TaskPool(tasks, PoolConfig(strategy=pool_strategy, rewrite_rule=rule, seed=seed, snapshot_every=0,
                                      zero_variance_repeats=OUR_ZERO_VARIANCE_REPEATS))
    learner, held_out = _Learner(rng, learning_rate), np.linspace(4.0, 6.0, 16)
    episodes, next_eval, step = 0, eval_every, 0
    released_trigger_rate: dict[str, float] = {}
    while episodes < budget:
        step += 1
        for task in pool.sample(batch_tasks):
            pool.record_group(task.id, learner.play(task.meta["difficulty"], GROUP_SIZE, train=True))
            episodes += GROUP_SIZE
        if rule == "rlanything":
            episodes += _released_adapt(pool, rng, learner, released_trigger_rate)
        elif rule == "ours" and step % adapt_every_steps == 0:
            episodes += _our_adapt(pool, rng, learner)
        while episodes >= next_eval:
            if _success_probability(learner.skill, held_out).mean() >= TARGET_HELD_OUT_SUCCESS:
                return next_eval
            next_eval += eval_every
    return budget


def _released_adapt(pool: TaskPool, rng, learner: _Learner, trigger_rate: dict[str, float]) -> int:
    """The released loop: measure last step's children in this step (training on them), then propose."""
    spent = 0
    for root_id, slot in pool.slots.items():
        if slot.pending is None:
            continue
        outcomes = learner.play(slot.pending.meta["difficulty"], GROUP_SIZE, train=True)
        spent += GROUP_SIZE
        old_rate, new_rate = trigger_rate.pop(root_id), float(outcomes.mean())
        evidence = {"old_rate": old_rate, "new_rate": new_rate}
        if rlanything_accepts(slot.pending_direction, old_rate, new_rate):
            pool.accept(root_id, evidence)
        else:
            pool.reject(root_id, "released_rule", evidence)
    for root_id, direction in pool.candidates_for_rewrite():
        slot = pool.slots[root_id]
        trigger_rate[root_id] = pool.stats(slot.active.id).recent_success_rate
        pool.propose(root_id, _rewrite(rng, slot.active, direction), direction=direction)
    return spent


def _our_adapt(pool: TaskPool, rng, learner: _Learner, max_candidates: int = 4) -> int:
    """Our loop: for a few triggered slots, measure parent and child fresh (no training) and decide."""
    spent = 0
    for root_id, direction in pool.candidates_for_rewrite()[:max_candidates]:
        slot = pool.slots[root_id]
        candidate = _rewrite(rng, slot.active, direction)
        if pool.knows(candidate.id):
            continue
        pool.propose(root_id, candidate, direction=direction)
        parent = learner.play(slot.active.meta["difficulty"], MEASURE_ROLLOUTS, train=False)
        child = learner.play(candidate.meta["difficulty"], MEASURE_ROLLOUTS, train=False)
        spent += 2 * MEASURE_ROLLOUTS
        pool.count("validation_rollouts", 2 * MEASURE_ROLLOUTS)
        decision = accept_rewrite(direction, int(parent.sum()), MEASURE_ROLLOUTS, int(child.sum()), MEASURE_ROLLOUTS)
        if decision.accepted:
            pool.accept(root_id, decision.evidence)
        else:
            pool.reject(root_id, decision.reason, decision.evidence)
    return spent


# ------------------------------------------------------------------------------- run
def run(quick: bool = False) -> list[Metric]:
    """Measure the four questions and return one Metric per issue key (see the module doc)."""
    started = time.perf_counter()
    trials = 4000 if quick else 20000
    rates = null_and_true_move_rates(trials, seed=0)
    released_null, ours_null = rates["null_false_accept_rlanything"], rates["null_false_accept_ours"]
    seeds, budget = (range(4) if quick else range(16)), 60000
    metrics = [
        Metric("null_false_accept_rlanything", released_null, released_null, "accept rate", higher_is_better=False,
               note=f"released rule, child == parent, old rate = the 8 rollouts that triggered; "
                    f"{rates['triggered_released']} triggered of {trials} parents p~U(0,1)"),
        Metric("null_false_accept_ours", ours_null, released_null, "accept rate", higher_is_better=False,
               goal=released_null / 0.10,
               note=f"ours (fresh 16+16, margin 0.15, P(moved)>=0.9, band) on {rates['triggered_ours']} triggered "
                    f"parents; baseline = released rule; goal ratio = released/0.10, i.e. ours <= 0.10 (issue bar)"),
        Metric("true_move_accept_ours", rates["true_move_accept_ours"], 1.0, "accept rate", goal=0.8,
               note=f"moves >= 0.3 into [0.2, 0.8], {rates['real_moves']} cases; baseline 1.0 = keep every real "
                    f"move, so ratio = acceptance rate, goal 0.8 (issue bar); released rule on the same moves: "
                    f"{rates['true_move_accept_rlanything']:.3f}"),
    ]
    for layout, prefix in (("spread", "episodes_to_target"), ("gap", "episodes_to_target_gap")):
        episodes = {name: [episodes_to_target(name, seed, budget, layout=layout) for seed in seeds]
                    for name in ("uniform", "rlanything", "ours")}
        medians = {name: float(np.median(values)) for name, values in episodes.items()}
        for name, values in episodes.items():
            reached = sum(v < budget for v in values)
            metrics.append(Metric(
                f"{prefix}_{name}", medians[name], medians["uniform"], "episodes", higher_is_better=False,
                note=f"{layout} roots; median over {len(seeds)} seeds of episodes (validation rollouts included) to "
                     f"held-out success >= {TARGET_HELD_OUT_SUCCESS}; reached in {reached}/{len(seeds)} within "
                     f"{budget} (else counted as {budget}); baseline = uniform"))
    print(f"curriculum benchmark: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    from benchmarks.perf import guided_rewrites

    return metrics + guided_rewrites.run(quick=quick)


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv[1:]), machine_facts()))
