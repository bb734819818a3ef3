"""Benchmark: ALFWorld rewrites guided by failure diagnoses against undirected ones, on the same triggered tasks.

Real games, a real (weak) policy, the pool's acceptance rule; nothing simulated. The 32 generated
``valid_unseen`` pick-and-place tasks are played at two step budgets (:data:`LEGS`): 6 steps, where most
tasks are too hard, and 20, where some are too easy. Per task and budget:

1. **Trigger.** A weak, non-privileged :class:`SweepPolicy` plays ``screen_rollouts`` episodes; our
   trigger (``acceptance.rewrite_direction`` on Beta(1 + successes, 1 + failures)) says ``easier``,
   ``harder`` or nothing. Only triggered tasks count.
2. **Diagnose.** :class:`~rla_envs.curriculum.diagnosers.RuleDiagnoser` summarises the screen's failed runs.
3. **Rewrite, both arms from the same rng seed.** *Guided*: ``MutatorRewriter(strengths=(1, 2, 3))`` given
   the diagnoses (``AlfWorldFamily.mutate`` tries the edits they ask for first). *Undirected*: the same
   call without diagnoses (the edits drawn by the rng, as before guidance existed).
4. **Measure fresh**, as the pool does: the parent once more and the children in strength order until one
   is accepted, ``rollouts`` episodes each, with the same episode seeds (common random numbers; two arms
   that made the same child share its measurement); ``acceptance.accept_rewrite`` decides.

Reported per arm: **acceptance rate** (accepted / triggered tasks, Wilson 95 % interval), **move per
validation rollout** (the success-rate move in the intended direction of accepted children, summed, over
every validation rollout spent: parent + each child measured), and the **mean move** of the last child
measured (the accepted one, else the strongest tried) over all triggered tasks (no child = 0) with the
paired guided - undirected difference and its 95 % t-interval.

The policy (:class:`SweepPolicy`): reads the goal (the object and destination types, and a hint if the goal
has one: those receptacles first), visits the room's receptacles in a random order, opens closed ones,
takes the target when it is in view, then goes to a destination receptacle and puts it there; with
probability ``epsilon`` it takes a random admissible action instead (if that left it holding something else,
it puts that down first). It never reads where objects lie. ``max_steps`` bounds every episode.

The guidance order of the easier search edits was set from :func:`edit_effects` on ``valid_seen`` tasks, so
these ``valid_unseen`` tasks are held out from it.

Run it alone with ``python -m benchmarks.perf.guided_rewrites [--quick]``.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from benchmarks.perf.report import Metric
from rla_envs.core.task import Task

__all__ = ["SweepPolicy", "ArmResult", "TaskComparison", "compare_guided_and_undirected", "edit_effects", "summarize",
           "run"]

SPLIT, N_PER_TYPE, TASK_TYPE = "valid_unseen", 32, "pick_and_place_simple"
#: (step budget, what it is for): a tight budget makes most tasks too hard (easier rewrites), a loose one too easy.
LEGS = ((6, "tight"), (20, "loose"))
EPSILON = 0.1
#: Stack heights each arm proposes, measured in order until one is accepted (MutatorRewriter's and adapt's default).
STRENGTHS = (1, 2, 3)
ARMS = ("guided", "undirected")

_TAKE = re.compile(r"^take (\S+) \d+ from (.+)$")
_MOVE = re.compile(r"^move (\S+ \d+) to (\S+) \d+$")
_GO = re.compile(r"^go to (.+)$")


# ------------------------------------------------------------------------------------------ policy

class SweepPolicy:
    """A weak searching policy for pick-and-place goals: sweep receptacles in a random order (see module doc).

    Args:
        task: the task played (its goal's object and destination types are what the goal sentence says).
        seed: seeds the sweep order and the random actions.
        epsilon: probability of a random admissible action at each step.
    """

    def __init__(self, task: Task, seed: int, epsilon: float = EPSILON):
        from rla_envs.alfworld.mutations import HINT_MARK

        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        params = task.spec["pddl_params"]
        self.target = str(params["object_target"]).lower()
        self.destination = str(params["parent_target"]).lower()
        hint = task.instruction.split(HINT_MARK, 1)[1] if HINT_MARK in task.instruction else ""
        self.hinted = [name.strip() for name in re.split(r",| and ", hint) if name.strip()]
        self.epsilon = float(epsilon)
        self.rng = np.random.default_rng(seed)
        self.order: list[str] | None = None
        self.visited: set[str] = set()
        self.here: str | None = None
        self.holding: str | None = None
        self.last: str | None = None

    def __call__(self, observation: str, info: dict) -> str:
        """The next command, from the last observation and ``info["admissible_actions"]``."""
        admissible = list(info["admissible_actions"])
        self._track(observation)
        if self.order is None:
            places = [m.group(1) for a in admissible if (m := _GO.match(a))]
            rest = [places[int(i)] for i in self.rng.permutation(len(places)) if places[int(i)] not in self.hinted]
            self.order = [p for p in self.hinted if p in places] + rest
        if self.rng.random() < self.epsilon:
            action = admissible[int(self.rng.integers(len(admissible)))]
        else:
            action = self._plan(admissible)
        self.last = action
        if (m := _GO.match(action)) is not None:
            self.here = m.group(1)
            self.visited.add(self.here)
        return action

    def _track(self, observation: str) -> None:
        """Update what it holds from the answer to its last command."""
        if self.last is None:
            return
        if self.last.startswith("take ") and observation.startswith("You pick up"):
            self.holding = self.last[len("take "):].split(" from ")[0]
        elif self.last.startswith("move ") and observation.startswith("You move"):
            self.holding = None

    def _plan(self, admissible: list[str]) -> str:
        holding_target = self.holding is not None and self.holding.split(" ")[0] == self.target
        if self.holding is not None and not holding_target:  # a random action picked up something else
            return next((a for a in admissible if a.startswith(f"move {self.holding} to ")), self._go(admissible))
        if holding_target:
            for action in admissible:
                if (m := _MOVE.match(action)) and m.group(1) == self.holding and m.group(2) == self.destination:
                    return action
            if self.here and f"open {self.here}" in admissible and self.here.split(" ")[0] == self.destination:
                return f"open {self.here}"
            spots = [f"go to {p}" for p in self.order if p.split(" ")[0] == self.destination and p != self.here]
            return spots[0] if spots else self._go(admissible)
        for action in admissible:
            if (m := _TAKE.match(action)) and m.group(1) == self.target:
                return action
        if self.here and f"open {self.here}" in admissible:
            return f"open {self.here}"
        return self._go(admissible)

    def _go(self, admissible: list[str]) -> str:
        """Go to the next receptacle not yet visited (a random admissible action when all were)."""
        for place in self.order:
            if place not in self.visited and f"go to {place}" in admissible:
                return f"go to {place}"
        return admissible[int(self.rng.integers(len(admissible)))]


def _measure(env, task: Task, rollouts: int, seed: int, epsilon: float, *, offset: int = 0):
    """``(successes, failed trajectories)`` of ``rollouts`` episodes; episode i uses seed ``[seed, offset + i]``."""
    from rla_envs.core.trajectory import play_episode

    successes, failures = 0, []
    for index in range(rollouts):
        episode_seed = int(np.random.default_rng([seed, offset + index]).integers(2**31))
        trajectory = play_episode(env, SweepPolicy(task, episode_seed, epsilon), task, seed=episode_seed)
        successes += trajectory.won
        if not trajectory.won:
            failures.append(trajectory)
    return successes, failures


# ------------------------------------------------------------------------------------------ comparison

@dataclass
class ArmResult:
    """One arm's rewrite of one task: the last child measured (the accepted one, if any) and the decision.

    ``children_measured`` counts the children measured before the decision (one per strength tried), so
    the arm spent ``rollouts * (1 + children_measured)`` validation rollouts on the task.
    """

    mutation: str | None = None
    guided: bool = False
    child_successes: int | None = None
    accepted: bool = False
    reason: str = ""
    move: float = 0.0
    children_measured: int = 0
    strength: int | None = None


@dataclass
class TaskComparison:
    """Both arms on one triggered task."""

    task_id: str
    direction: str
    diagnoses: list[str]
    parent_successes: int
    rollouts: int
    arms: dict[str, ArmResult] = field(default_factory=dict)


def compare_guided_and_undirected(tasks: list[Task], *, max_steps: int, rollouts: int = 16, screen_rollouts: int = 24,
                                  strengths: tuple[int, ...] = (1,), epsilon: float = EPSILON,
                                  seed: int = 0) -> list[TaskComparison]:
    """Screen ``tasks`` (``screen_rollouts`` each), rewrite each triggered one both ways and measure the parent
    and the children afresh (``rollouts`` each); one :class:`TaskComparison` per triggered task.

    Each arm gets one proposal per strength (``MutatorRewriter(strengths=...)``) and, as ``adapt`` does,
    measures them in order until one is accepted.
    """
    from rla_envs.alfworld.env import AlfWorldEnv
    from rla_envs.alfworld.family import AlfWorldFamily
    from rla_envs.curriculum.acceptance import accept_rewrite
    from rla_envs.curriculum.diagnosers import RuleDiagnoser
    from rla_envs.curriculum.rewriters import MutatorRewriter

    env = AlfWorldEnv(tasks=tasks, max_steps=max_steps)
    rewriter, diagnoser, results = MutatorRewriter(AlfWorldFamily(), strengths=strengths), RuleDiagnoser(), []
    try:
        for index, task in enumerate(tasks):
            direction, failures = _triggered(env, task, screen_rollouts, seed, epsilon)
            if direction is None:
                continue
            diagnoses = diagnoser.diagnose(task, failures)
            parent, _ = _measure(env, task, rollouts, seed, epsilon)  # fresh, as the pool does
            comparison = TaskComparison(task.id, direction, diagnoses, parent, rollouts)
            children: dict[str, int] = {}
            for arm in ARMS:
                given = diagnoses if arm == "guided" else ()
                proposals = rewriter.propose(task, direction, diagnoses=given, rng=np.random.default_rng([seed, index]))
                result = ArmResult(reason=f"no rewrite: {proposals[-1].reason}")
                for proposal in (p for p in proposals if p.ok):
                    child = proposal.task
                    if child.id not in children:  # the same child in both arms: one measurement
                        children[child.id], _ = _measure(env, child, rollouts, seed, epsilon)
                    decision = accept_rewrite(direction, parent, rollouts, children[child.id], rollouts)
                    result = ArmResult(
                        mutation="+".join(child.meta["stacked_mutations"]),
                        guided=any(child.meta.get("stacked_guided", ())),
                        child_successes=children[child.id], accepted=decision.accepted, reason=decision.reason,
                        move=float(decision.evidence["move"]), children_measured=result.children_measured + 1,
                        strength=proposal.strength)
                    if decision.accepted:
                        break
                comparison.arms[arm] = result
            results.append(comparison)
    finally:
        env.close()
    return results


def _triggered(env, task: Task, screen_rollouts: int, seed: int, epsilon: float):
    """``(direction, failed trajectories)``: the pool's trigger on ``screen_rollouts`` screening episodes of ``task``."""
    from rla_envs.curriculum.acceptance import rewrite_direction

    screened, failures = _measure(env, task, screen_rollouts, seed, epsilon, offset=10_000)
    return rewrite_direction(1 + screened, 1 + screen_rollouts - screened, screen_rollouts), failures


def edit_effects(tasks: list[Task], *, max_steps: int, rollouts: int = 16, screen_rollouts: int = 24,
                 epsilon: float = EPSILON, seed: int = 0) -> list[dict]:
    """Every edit of the triggered direction on every triggered task, each measured: what each edit does.

    One row per triggered task: ``direction``, ``diagnoses``, ``parent`` (fresh successes) and ``edits``
    (``{mutation: child successes, or None when it does not apply}``), ``rollouts`` each. This is the
    evidence a diagnosis -> edit ranking should follow: which edit moves a task whose runs fail this way.
    """
    from rla_envs.alfworld.env import AlfWorldEnv
    from rla_envs.alfworld.family import AlfWorldFamily
    from rla_envs.alfworld.mutations import CATALOGUE
    from rla_envs.core.errors import InvalidTask
    from rla_envs.curriculum.diagnosers import RuleDiagnoser

    env, family, rows = AlfWorldEnv(tasks=tasks, max_steps=max_steps), AlfWorldFamily(), []
    try:
        for index, task in enumerate(tasks):
            direction, failures = _triggered(env, task, screen_rollouts, seed, epsilon)
            if direction is None:
                continue
            row = {"task_id": task.id, "direction": direction, "diagnoses": RuleDiagnoser().diagnose(task, failures),
                   "parent": _measure(env, task, rollouts, seed, epsilon)[0], "edits": {}}
            for name in CATALOGUE[direction]:
                try:
                    child = family.mutate(task, direction, np.random.default_rng([seed, index]), only=[name])
                except InvalidTask:
                    row["edits"][name] = None
                    continue
                row["edits"][name] = _measure(env, child, rollouts, seed, epsilon)[0]
            rows.append(row)
    finally:
        env.close()
    return rows


def summarize(comparisons: list[TaskComparison]) -> dict:
    """Per-arm counts and rates, and the paired difference of the mean move (guided - undirected)."""
    from rla_train.signals.metrics import wilson_interval

    summary: dict = {"triggered": len(comparisons),
                     "directions": dict(Counter(c.direction for c in comparisons))}
    moves = {}
    for arm in ARMS:
        results = [c.arms[arm] for c in comparisons]
        accepted = sum(r.accepted for r in results)
        made = [r for r in results if r.child_successes is not None]
        rollouts = sum(c.rollouts * (1 + c.arms[arm].children_measured) for c in comparisons)
        moves[arm] = np.array([r.move if r.child_successes is not None else 0.0 for r in results])
        summary[arm] = {
            "accepted": accepted, "accept_rate": accepted / len(results) if results else 0.0,
            "accept_interval": wilson_interval(accepted, len(results)), "children": len(made),
            "guided_edits": sum(r.guided for r in results), "validation_rollouts": rollouts,
            "move_per_rollout": sum(r.move for r in results if r.accepted) / rollouts if rollouts else 0.0,
            "mean_move": float(moves[arm].mean()) if results else 0.0,
            "mutations": dict(Counter(r.mutation or "none" for r in results).most_common()),
            "reasons": dict(Counter(r.reason.split(":")[0] for r in results).most_common()),
        }
    difference = moves["guided"] - moves["undirected"]
    if difference.size >= 2:
        from scipy.stats import t as student_t

        half = float(student_t.ppf(0.975, difference.size - 1) * difference.std(ddof=1) / np.sqrt(difference.size))
    else:
        half = float("nan")
    summary["mean_move_difference"] = (float(difference.mean()) if difference.size else 0.0, half)
    summary["same_child"] = sum(c.arms["guided"].mutation == c.arms["undirected"].mutation for c in comparisons)
    summary["only_guided_accepted"] = sum(c.arms["guided"].accepted and not c.arms["undirected"].accepted
                                          for c in comparisons)
    summary["only_undirected_accepted"] = sum(c.arms["undirected"].accepted and not c.arms["guided"].accepted
                                              for c in comparisons)
    return summary


# ------------------------------------------------------------------------------------------ run

def _tasks(quick: bool) -> list[Task]:
    from rla_envs.alfworld.generated import generated_tasks

    tasks = generated_tasks(SPLIT, n_per_type=N_PER_TYPE, seed=0, task_types=[TASK_TYPE], workers=1, progress=False)
    return tasks[:8] if quick else tasks


def _arm_line(summary: dict, arm: str) -> str:
    low, high = summary[arm]["accept_interval"]
    return f"{summary[arm]['accepted']}/{summary['triggered']} [{low:.2f}, {high:.2f}]"


def run(quick: bool = False) -> list[Metric]:
    """Guided against undirected rewrites on the generated tasks at both budgets (quick: 8 tasks, fewer rollouts)."""
    started = time.perf_counter()
    tasks = _tasks(quick)
    rollouts, screen = (8, 16) if quick else (16, 24)
    comparisons, legs = [], []
    for max_steps, label in LEGS:
        found = compare_guided_and_undirected(tasks, max_steps=max_steps, rollouts=rollouts, screen_rollouts=screen,
                                              strengths=STRENGTHS)
        comparisons += found
        leg = summarize(found)
        legs.append(f"{label} budget ({max_steps} steps): {leg['triggered']} triggered {leg['directions']}, accepted "
                    f"guided {_arm_line(leg, 'guided')} vs undirected {_arm_line(leg, 'undirected')}, mean move "
                    f"guided {leg['guided']['mean_move']:+.3f} vs {leg['undirected']['mean_move']:+.3f}")
    summary = summarize(comparisons)
    guided, undirected = summary["guided"], summary["undirected"]
    setting = (f"{len(tasks)} {SPLIT} {TASK_TYPE} tasks x {len(LEGS)} step budgets, {summary['triggered']} triggered "
               f"{summary['directions']}; sweep policy eps {EPSILON}; {screen} screen + {rollouts} parent + {rollouts} "
               f"rollouts per child, strengths {STRENGTHS} tried in order until accepted")
    diff, half = summary["mean_move_difference"]
    metrics = [
        Metric("guided_rewrite_accept_rate", guided["accept_rate"], undirected["accept_rate"], "accept rate",
               note=f"{setting}; accepted guided {_arm_line(summary, 'guided')} vs undirected "
                    f"{_arm_line(summary, 'undirected')} (Wilson 95%), discordant pairs: only guided "
                    f"{summary['only_guided_accepted']}, only undirected {summary['only_undirected_accepted']}; "
                    f"{'; '.join(legs)}; guided arm: "
                    f"{guided['guided_edits']} edits chosen by a diagnosis, {summary['same_child']} tasks got the "
                    f"same edit in both arms; edits guided {guided['mutations']}, undirected "
                    f"{undirected['mutations']}; outcomes guided {guided['reasons']}, undirected "
                    f"{undirected['reasons']}"),
        Metric("guided_rewrite_move_per_rollout", guided["move_per_rollout"], undirected["move_per_rollout"],
               "rate/rollout",
               note=f"accepted children's success-rate move (intended way), summed, per validation rollout (parent + "
                    f"each child measured): guided {guided['validation_rollouts']}, undirected "
                    f"{undirected['validation_rollouts']} rollouts"),
        Metric("guided_rewrite_mean_move", guided["mean_move"], undirected["mean_move"], "success rate",
               note=f"mean move (intended way) of the last child measured over the {summary['triggered']} triggered "
                    f"tasks, no child = 0; paired guided - undirected {diff:+.3f} +/- {half:.3f} (95% t)"),
    ]
    print(f"guided rewrites benchmark: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return metrics


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv[1:]), machine_facts()))
