"""A fast synthetic family for the ablation's mechanics: the project's own reward maths, pool and acceptance code.

What is synthetic is only the world and the models; every decision the method makes goes through the code the
real co-trainer uses:

* **Tasks** (:class:`rla_envs.core.task.Task`, family ``"synthetic"``): a list of skills to perform in order
  plus a difficulty ``offset``. Step t of a task succeeds with probability σ(θ_skill − offset); the episode is
  won when every step succeeds. :class:`SyntheticFamily` implements the curriculum's family hooks
  (``describe``, ``apply_rewrite``, ``validate``, ``mutate``: harder = +0.5 offset or one more step).
* **Policy**: one logit θ_k per skill (a Bernoulli policy per step: good or bad). Its update is REINFORCE with
  the advantages :func:`rla_train.signals.samples.policy_samples` computes (outcome-only / integrated / reward-only
  step rewards, z-scored per step index, zero advantages dropped): θ_k += lr · mean_samples A·(a − p).
* **Judge**: each of m votes on a step equals the step's true label with probability c, else the opposite.
  ``noisy_oracle`` arms fix c = a; the ``model`` judge starts at c₀ (its "warm start") and, in the modes that
  train it, learns c = σ(φ) by REINFORCE on :func:`rla_train.signals.samples.reward_model_samples` (the consistency
  reward R_i·S_ij, z-scored within the step, tasks in [0.2, 0.8] only).
* **Environment**: a :class:`~rla_envs.curriculum.pool.TaskPool` draws the tasks of every step; in the full
  method :func:`rla_envs.curriculum.adapt.adapt` rewrites the too-hard / too-easy ones with
  :class:`~rla_envs.curriculum.rewriters.MutatorRewriter`, measured fresh with the current policy and kept by
  the pool's acceptance rule.

Pairing: per seed the warm start (initial θ), the training task set, the held-out episode lists (in-domain: new
tasks from the training distribution; out-of-domain: longer tasks) and their random numbers are shared by all
arms, so two arms' held-out outcomes pair episode by episode.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from benchmarks.ablation.arms import Arm
from rla_envs.core.errors import InvalidTask, RewriteRejected
from rla_envs.core.task import Task
from rla_train.signals.samples import RewardSpec, policy_samples, reward_model_samples

__all__ = ["SyntheticSetup", "SyntheticFamily", "make_task", "run_synthetic_arm", "run_synthetic"]

FAMILY = "synthetic"


@dataclass(frozen=True)
class SyntheticSetup:
    """Sizes of the synthetic ablation (defaults: ~0.1 s per arm and seed)."""

    skills: int = 4
    train_tasks: int = 16
    steps: int = 30
    tasks_per_step: int = 4
    group_size: int = 8
    judgments_per_step: int = 3
    step_reward_weight: float = 1.0
    policy_learning_rate: float = 0.5
    judge_learning_rate: float = 0.5
    judge_start_accuracy: float = 0.65
    initial_skill: float = 1.0
    normalized_update: bool = False
    eval_episodes: int = 400
    probe_steps: int = 400
    adapt_every: int = 64
    measure_rollouts: int = 16
    in_domain_length: tuple[int, int] = (2, 4)
    ood_length: tuple[int, int] = (5, 7)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=float)))


def make_task(skills: Sequence[int], offset: float, *, parent: Task | None = None, origin: str = "generated",
              meta: dict | None = None) -> Task:
    """A synthetic task: perform ``skills`` in order against difficulty ``offset``."""
    spec = {"skills": [int(s) for s in skills], "offset": round(float(offset), 3)}
    instruction = f"perform skills {spec['skills']} at difficulty {spec['offset']}"
    if parent is not None:
        return parent.derive(instruction=instruction, spec=spec, origin=origin, meta=meta)
    return Task(family=FAMILY, instruction=instruction, spec=spec, origin=origin, meta=meta or {})


class SyntheticFamily:
    """The curriculum's family hooks for synthetic tasks (see :class:`rla_envs.core.family.TaskFamily`)."""

    name = FAMILY

    def __init__(self, skills: int = 4, max_steps: int = 10, max_offset: float = 4.0):
        self.skills, self.max_steps, self.max_offset = skills, max_steps, max_offset

    def describe(self, task: Task) -> str:
        """The task in words (what a rewriter would read)."""
        return f"{len(task.spec['skills'])} steps on skills {list(task.spec['skills'])}, difficulty {task.spec['offset']}"

    def apply_rewrite(self, task: Task, text: str) -> Task:
        """A proposal given as JSON ``{"skills": [...], "offset": x}``; RewriteRejected if it is not one."""
        try:
            data = json.loads(text)
            child = make_task(data["skills"], data["offset"], parent=task, origin="rewritten")
        except (ValueError, KeyError, TypeError) as exc:
            raise RewriteRejected(f"expected JSON {{'skills': [ints], 'offset': number}}, got {text!r} ({exc})") from None
        self.validate(child)
        return child

    def validate(self, task: Task) -> None:
        """InvalidTask unless the skills are known, the length is 1..max_steps and the offset is in range."""
        skills, offset = list(task.spec.get("skills", ())), task.spec.get("offset")
        if not 1 <= len(skills) <= self.max_steps or any(not 0 <= s < self.skills for s in skills):
            raise InvalidTask(f"a synthetic task needs 1..{self.max_steps} skills in [0, {self.skills}), got {skills}")
        if not isinstance(offset, (int, float)) or not abs(offset) <= self.max_offset:
            raise InvalidTask(f"offset must be a number in [-{self.max_offset}, {self.max_offset}], got {offset!r}")

    def mutate(self, task: Task, direction: str, rng: np.random.Generator) -> Task:
        """Harder: +0.5 difficulty or one more step; easier: −0.5 or one step fewer (chosen by ``rng``)."""
        skills, offset = list(task.spec["skills"]), float(task.spec["offset"])
        sign = 1.0 if direction == "harder" else -1.0
        if rng.random() < 0.5 or (direction == "easier" and len(skills) == 1) or \
                (direction == "harder" and len(skills) == self.max_steps):
            offset, name = offset + 0.5 * sign, f"offset{'+' if sign > 0 else '-'}0.5"
        elif direction == "harder":
            skills.insert(int(rng.integers(len(skills) + 1)), int(rng.integers(self.skills)))
            name = "add_step"
        else:
            skills.pop(int(rng.integers(len(skills))))
            name = "drop_step"
        child = make_task(skills, offset, parent=task, origin="mutated", meta={"mutation": name})
        self.validate(child)
        return child


# ----------------------------------------------------------------------------------------------- episodes
@dataclass
class _Step:
    """One policy step in the shape policy_samples reads: skill as the prompt, good (1) / bad (0) as the answer."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    alternatives: None = None


@dataclass
class _Episode:
    task_id: str
    steps: list[_Step]
    won: bool
    labels: list[bool]
    judgments: list[list[int]] | None = None
    error: None = None

    @property
    def num_steps(self) -> int:
        return len(self.steps)

    @property
    def observations(self) -> list[str]:
        """The state before each step and after the last, as GiGPO keys it: the step index and whether every step
        so far was good (on track) or not (derailed: the episode can no longer be won)."""
        return [f"{t}:{'on track' if all(self.labels[:t]) else 'derailed'}" for t in range(len(self.steps) + 1)]

    @property
    def infos(self) -> list[dict]:
        return [{} for _ in range(len(self.steps) + 1)]


@dataclass
class _Vote:
    token_ids: list[int]          # [1] the vote equals the label, [0] it is flipped
    logprobs: list[float]


@dataclass
class _Judgment:
    prompt_ids: list[int]
    samples: list[_Vote]


def _play(task: Task, theta: np.ndarray, uniforms: np.ndarray) -> tuple[list[bool], list[float]]:
    """Step labels (good/bad) and the policy's probability of a good step, for one episode on given uniforms."""
    skills = np.asarray(task.spec["skills"], dtype=int)
    p_good = _sigmoid(theta[skills] - float(task.spec["offset"]))
    return list(uniforms[: len(skills)] < p_good), list(p_good)


def _episode(task: Task, theta: np.ndarray, rng: np.random.Generator) -> _Episode:
    labels, p_good = _play(task, theta, rng.random(len(task.spec["skills"])))
    steps = [_Step([int(k)], [int(good)], [math.log(p if good else 1.0 - p)])
             for k, good, p in zip(task.spec["skills"], labels, p_good)]
    return _Episode(task.id, steps, won=all(labels), labels=labels)


def _judge(episode: _Episode, accuracy: float, m: int, rng: np.random.Generator) -> list[_Judgment]:
    """m votes per step (+1 good / −1 bad), each the true label with probability ``accuracy``; fills judgments."""
    episode.judgments, generations = [], []
    for step, good in zip(episode.steps, episode.labels):
        correct = rng.random(m) < accuracy
        label = 1 if good else -1
        episode.judgments.append([label if c else -label for c in correct])
        generations.append(_Judgment(step.prompt_ids, [_Vote([int(c)], [math.log(accuracy if c else 1.0 - accuracy)])
                                                       for c in correct]))
    return generations


def _policy_gradient(samples, skills: int) -> np.ndarray:
    """mean over samples of A·∂log π(a)/∂θ = A·(a − p) on the sample's skill (Bernoulli-logistic policy)."""
    gradient = np.zeros(skills)
    for sample in samples:
        good, chosen = sample.completion_ids[0], math.exp(sample.logprobs[0])
        p_good = chosen if good else 1.0 - chosen
        gradient[sample.prompt_ids[0]] += sample.advantage * (good - p_good)
    return gradient / max(1, len(samples))


def _judge_gradient(samples, accuracy: float) -> float:
    """mean over judgment samples of A·∂log P(vote)/∂φ = A·(correct − c), with c = σ(φ)."""
    if not samples:
        return 0.0
    return float(np.mean([s.advantage * (s.completion_ids[0] - accuracy) for s in samples]))


# ----------------------------------------------------------------------------------------------- the world
@dataclass
class _World:
    """Everything a seed shares across arms: warm start, training tasks, held-out episodes and their randomness."""

    theta0: np.ndarray
    train_tasks: list[Task]
    heldout: dict[str, tuple[list[Task], np.ndarray]] = field(default_factory=dict)
    probe_labels: np.ndarray | None = None
    probe_uniforms: np.ndarray | None = None


def _random_task(rng: np.random.Generator, setup: SyntheticSetup, lengths: tuple[int, int]) -> Task:
    length = int(rng.integers(lengths[0], lengths[1] + 1))
    offset = float(rng.integers(-4, 5)) / 4.0          # -1.0, -0.75, ..., 1.0
    return make_task(rng.integers(setup.skills, size=length).tolist(), offset)


@functools.lru_cache(maxsize=8)
def _world(seed: int, setup: SyntheticSetup) -> _World:
    """The seed's shared world (cached: every arm of a seed reads the same one and changes none of it)."""
    rng = np.random.default_rng([seed, 0])
    theta0 = setup.initial_skill + rng.normal(0.0, 0.5, setup.skills)
    train_tasks: dict[str, Task] = {}
    while len(train_tasks) < setup.train_tasks:          # distinct tasks: the pool keeps one slot per task
        task = _random_task(rng, setup, setup.in_domain_length)
        train_tasks.setdefault(task.id, task)
    world = _World(theta0, list(train_tasks.values()))
    for split, lengths in (("in_domain", setup.in_domain_length), ("ood", setup.ood_length)):
        tasks = [_random_task(rng, setup, lengths) for _ in range(setup.eval_episodes)]
        world.heldout[split] = (tasks, rng.random((setup.eval_episodes, lengths[1])))
    world.probe_labels = np.arange(setup.probe_steps) % 2 == 0          # half good steps, half bad
    world.probe_uniforms = rng.random(setup.probe_steps)
    return world


def _expected_success(tasks: Sequence[Task], theta: np.ndarray) -> float:
    """Exact mean success probability of ``tasks`` under logits ``theta`` (a noise-free fixed probe)."""
    return float(np.mean([np.prod(_sigmoid(theta[list(t.spec["skills"])] - float(t.spec["offset"]))) for t in tasks]))


def _heldout_outcomes(tasks: Sequence[Task], uniforms: np.ndarray, theta: np.ndarray) -> list[int]:
    return [int(all(_play(task, theta, u)[0])) for task, u in zip(tasks, uniforms)]


def _balanced_accuracy(accuracy: float, labels: np.ndarray, uniforms: np.ndarray) -> float:
    """Balanced accuracy of single votes on the probe: mean of the hit rates on good and on bad steps."""
    correct = uniforms < accuracy
    return float(0.5 * (correct[labels].mean() + correct[~labels].mean()))


class _Measure:
    """``measure(task, n)`` for :func:`adapt`: n fresh episodes with the policy's current logits."""

    def __init__(self, theta: np.ndarray, rng: np.random.Generator):
        self.theta, self.rng = theta, rng

    def __call__(self, task: Task, n: int) -> list[float]:
        return [float(_episode(task, self.theta, self.rng).won) for _ in range(n)]


def run_synthetic_arm(arm: Arm, seed: int, setup: SyntheticSetup = SyntheticSetup()) -> dict:
    """Train one arm from the seed's shared warm start; held-out outcomes, judge accuracy, curve, rewrites."""
    from rla_envs.curriculum.adapt import adapt
    from rla_envs.curriculum.pool import TaskPool
    from rla_envs.curriculum.pool_config import PoolConfig
    from rla_envs.curriculum.rewriters import MutatorRewriter

    world = _world(seed, setup)
    stream = 10 * arm.training_stream  # the control arm: the same world, other training draws
    play_rng, judge_rng, adapt_rng = (np.random.default_rng([seed, k + stream]) for k in (1, 2, 3))
    theta = world.theta0.copy()
    judge_logit = math.log(setup.judge_start_accuracy / (1 - setup.judge_start_accuracy))
    accuracy = arm.oracle_accuracy if arm.judge == "noisy_oracle" else setup.judge_start_accuracy
    pool = TaskPool(world.train_tasks, PoolConfig(strategy="learnability",
                                                  rewrite_rule="ours" if arm.adapts_env else "none",
                                                  group_size=setup.group_size, measure_rollouts=setup.measure_rollouts,
                                                  zero_variance_repeats=2, snapshot_every=0,
                                                  seed=seed + 1_000_000 * arm.training_stream))
    spec = RewardSpec(use_outcome=arm.mode != "reward_only", use_judgments=arm.uses_judge,
                      lam=setup.step_reward_weight, advantage=arm.advantage)
    family, curve, train_curve, since_adapt, accepted = SyntheticFamily(setup.skills), [], [], 0, 0
    probe = world.heldout["in_domain"][0][:50]            # the curve: exact success on 50 fixed in-domain tasks
    rewriter = MutatorRewriter(family)
    for _ in range(setup.steps):
        tasks = pool.sample(setup.tasks_per_step)
        groups = [[_episode(task, theta, play_rng) for _ in range(setup.group_size)] for task in tasks]
        generations = {id(e): _judge(e, accuracy, setup.judgments_per_step, judge_rng)
                       for group in groups for e in group} if arm.uses_judge else {}
        samples, _ = policy_samples(groups, spec)
        gradient = _policy_gradient(samples, setup.skills)
        if setup.normalized_update:          # a fixed step length, like Adam: the reward's scale does not matter
            gradient /= max(float(np.linalg.norm(gradient)), 1e-12)
        theta += setup.policy_learning_rate * gradient
        if arm.trains_judge:
            judge_samples, _ = reward_model_samples(groups, generations, spec)
            judge_logit += setup.judge_learning_rate * _judge_gradient(judge_samples, accuracy)
            accuracy = float(_sigmoid(judge_logit))
        for task, group in zip(tasks, groups):
            pool.record_group(task.id, [float(e.won) for e in group])
        train_curve.append(float(np.mean([e.won for group in groups for e in group])))
        curve.append(_expected_success(probe, theta))
        since_adapt += setup.tasks_per_step * setup.group_size
        if arm.adapts_env and since_adapt >= setup.adapt_every:
            since_adapt = 0
            report = adapt(pool, rewriter, _Measure(theta, adapt_rng), family=family, rng=adapt_rng)
            accepted += len(report.accepted)
    return {"arm": arm.name, "seed": seed,
            "splits": {split: _heldout_outcomes(tasks, uniforms, theta)
                       for split, (tasks, uniforms) in world.heldout.items()},
            "rm_balanced_accuracy": _balanced_accuracy(accuracy, world.probe_labels, world.probe_uniforms),
            "curve": curve, "train_curve": train_curve, "accepted_rewrites": accepted, "judge_accuracy": float(accuracy)}


def run_synthetic(arms: Sequence[Arm], seeds: Sequence[int], setup: SyntheticSetup = SyntheticSetup(),
                  *, log=None) -> list[dict]:
    """:func:`run_synthetic_arm` for every (seed, arm) pair, seeds outermost."""
    results = []
    for seed in seeds:
        for arm in arms:
            results.append(run_synthetic_arm(arm, seed, setup))
        if log is not None:
            log(f"synthetic: seed {seed} done ({len(arms)} arms)")
    return results
