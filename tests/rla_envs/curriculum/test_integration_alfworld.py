"""AdaptiveTaskPool around rla/AlfWorld-v0 with MutatorRewriter and a policy whose skill depends on the task.

The scripted policy plays alfworld's (fixed) hand-coded expert for a whole episode with probability
``skill(task)``, else random admissible commands (which practically never win in 30 steps). ``skill``
reads the scene (see ``WEIGHTS``): +0.5 with a hint in the goal, +0.12 per spare copy of the target,
-0.4 x the share of target copies hidden in closed receptacles, -0.04 per receptacle, -0.01 per object,
offset per task type so that the generated tasks start at ``START_SKILL``. So the true success rate of
every task (and of every rewrite) is known, and the pool's estimates and rewrites can be checked against it.
"""

from __future__ import annotations

import numpy as np
import pytest

from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.pool_config import PoolConfig
from rla_envs.curriculum.rewriters import MutatorRewriter
from rla_envs.curriculum.wrapper import AdaptiveTaskPool

#: The policy's success rate on the generated task of each type (the roots): two too easy, two too hard.
START_SKILL = {"pick_and_place_simple": 0.94, "look_at_obj_in_light": 0.94, "pick_clean_then_place_in_recep": 0.5,
               "pick_heat_then_place_in_recep": 0.5, "pick_cool_then_place_in_recep": 0.07,
               "pick_two_obj_and_place": 0.07}


def features(task) -> dict[str, float]:
    """What makes an ALFWorld task hard for a searching agent, read from its scene."""
    from rla_envs.alfworld import mutations as mut
    from rla_envs.alfworld.tasks import scene_from_task

    scene = scene_from_task(task)
    copies = mut.target_copies(scene)
    closed = sum(mut.is_closed(scene.receptacle(o.receptacle)) for o in copies) / max(1, len(copies))
    return {"hint": float(bool(task.meta.get("hint"))), "spare_copies": len(copies) - mut.needed_copies(scene.goal),
            "closed_share": closed, "receptacles": len(scene.receptacles), "objects": len(scene.objects)}


WEIGHTS = {"hint": 0.5, "spare_copies": 0.12, "closed_share": -0.4, "receptacles": -0.04, "objects": -0.01}


def raw_skill(task) -> float:
    return sum(WEIGHTS[k] * v for k, v in features(task).items())


class Skill:
    """True success probability: START_SKILL on the roots, moved by ``WEIGHTS`` . (features - root features)."""

    def __init__(self, roots):
        self.offset = {t.spec["task_type"]: START_SKILL[t.spec["task_type"]] - raw_skill(t) for t in roots}

    def __call__(self, task) -> float:
        return float(np.clip(self.offset[task.spec["task_type"]] + raw_skill(task), 0.0, 0.98))


class FeatureSkillPolicy:
    """Expert for the whole episode with probability ``skill(task)``, else random admissible commands."""

    def __init__(self, skill, lookup, seed=0):
        self.true_skill = skill
        self.lookup = lookup  # task id -> Task (here: the pool, which knows every task it measures)
        self.rng = np.random.default_rng(seed)
        self.skills: dict[str, float] = {}
        self.expert = False

    def skill(self, task) -> float:
        if task.id not in self.skills:
            self.skills[task.id] = self.true_skill(task)
        return self.skills[task.id]

    def __call__(self, observation, info):
        if info["step"] == 0:
            self.expert = bool(self.rng.random() < self.skill(self.lookup(info["task_id"])))
        if self.expert and info.get("expert_action"):
            return info["expert_action"]
        return str(self.rng.choice(info["admissible_actions"]))


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """Six generated ALFWorld tasks (one per type) in a cache shared by this session's curriculum tests."""
    patch = pytest.MonkeyPatch()
    patch.setenv("RLA_CACHE", str(tmp_path_factory.getbasetemp() / "rla-cache-curriculum"))
    from rla_envs.alfworld.generated import generated_tasks

    yield {t.spec["task_type"]: t for t in generated_tasks("valid_unseen", n_per_type=1, seed=0, workers=2,
                                                            progress=False)}
    patch.undo()


def play_until_candidates(env, pool, max_episodes):
    """Play episodes through the wrapper until every slot asks for a rewrite (or the cap is reached)."""
    for _ in range(max_episodes):
        observation, info = env.reset()
        while True:
            observation, reward, terminated, truncated, info = env.step(env.policy(observation, info))
            if terminated or truncated:
                break
        if len(pool.candidates_for_rewrite()) == len(pool):
            return


def run_curriculum(tasks, types, *, warmup_cap, after_episodes):
    from rla_envs.alfworld.env import AlfWorldEnv
    from rla_envs.alfworld.family import AlfWorldFamily

    chosen = [tasks[t] for t in types]
    pool = TaskPool(chosen, PoolConfig(strategy="learnability", seed=0, snapshot_every=10, max_root_share=1.0,
                                       measure_rollouts=16, zero_variance_repeats=2))  # the 16 + 16 rollouts checked below
    policy = FeatureSkillPolicy(Skill(chosen), pool.task, seed=0)
    base = AlfWorldEnv(tasks=chosen, expert="handcoded", max_steps=30)
    env = AdaptiveTaskPool(base, pool, rewriter=MutatorRewriter(strengths=(1, 2, 3)), policy=policy)
    env.policy = policy
    true_before = {t.id: policy.skill(t) for t in chosen}
    play_until_candidates(env, pool, warmup_cap)
    estimate_before = {t.id: pool.stats(t.id).mean for t in chosen}
    report = env.adapt()
    for _ in range(after_episodes):
        observation, info = env.reset()
        while True:
            observation, reward, terminated, truncated, info = env.step(policy(observation, info))
            if terminated or truncated:
                break
    return pool, env, policy, report, true_before, estimate_before, AlfWorldFamily()


def check_curriculum(pool, env, policy, report, true_before, estimate_before, family):
    # The pool's estimates tracked the policy before adapting (16+ episodes per task).
    assert all(abs(estimate_before[i] - true_before[i]) < 0.2 for i in true_before), (estimate_before, true_before)
    # Rewrites were proposed, validated and accepted in both directions.
    directions = report.by_direction()
    assert directions["harder"]["accepted"] >= 1 and directions["easier"]["accepted"] >= 1, directions
    # Every rollout spent measuring is in the caller's budget.
    assert pool.validation_rollouts == report.rollouts == env.feeder.measure.episodes > 0
    for attempt in report.accepted:
        child = pool.task(attempt.child_id)
        family.validate(child)  # a valid game: loads, walkthrough wins, no leak
        assert child.parent == attempt.parent_id and child.origin == "mutated"
        moved = policy.skill(child) - policy.skill(pool.task(attempt.parent_id))
        assert (moved < 0) == (attempt.direction == "harder"), (attempt, moved)
        # Near the band: the rule reads 16 + 16 noisy rollouts, so a child just outside it can pass.
        assert 0.1 <= policy.skill(child) <= 0.9, policy.skill(child)
    # The pool's difficulty tracks the policy: the active tasks moved into the learnable band, and the
    # pool's mean estimate follows the true mean success of its active tasks.
    active = pool.active_tasks()
    distance = lambda skills: float(np.mean([abs(s - 0.5) for s in skills]))  # noqa: E731
    assert distance([policy.skill(t) for t in active]) < distance(true_before.values())
    true_now = float(np.mean([policy.skill(t) for t in active]))
    estimate_now = pool.snapshot()["mean_success"]
    assert abs(estimate_now - true_now) < 0.15, (estimate_now, true_now)
    return directions


def test_alfworld_pool_rewrites_both_ways_and_tracks_the_policy(tasks):
    """Default size: two tasks too easy, one too hard (~30 s)."""
    result = run_curriculum(tasks, ["pick_and_place_simple", "look_at_obj_in_light", "pick_cool_then_place_in_recep"],
                            warmup_cap=90, after_episodes=48)
    check_curriculum(*result)


@pytest.mark.slow
def test_alfworld_pool_four_tasks(tasks):
    """Four tasks (two too easy, two too hard), more evidence after the swap (~3 min)."""
    result = run_curriculum(tasks, ["pick_and_place_simple", "look_at_obj_in_light",
                                    "pick_cool_then_place_in_recep", "pick_two_obj_and_place"],
                            warmup_cap=120, after_episodes=80)
    check_curriculum(*result)
