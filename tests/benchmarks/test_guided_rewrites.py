"""The guided-rewrite benchmark: its weak sweep policy, one comparison end to end, and the summary maths."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.perf.guided_rewrites import (ArmResult, SweepPolicy, TaskComparison, compare_guided_and_undirected,
                                             summarize)


@pytest.fixture(scope="module")
def simple(tmp_path_factory):
    """One generated pick_and_place_simple task, in a private cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("RLA_CACHE", str(tmp_path_factory.getbasetemp() / "rla-cache-guided"))
    from rla_envs.alfworld.generated import generated_tasks

    yield generated_tasks("valid_unseen", n_per_type=1, seed=0, task_types=["pick_and_place_simple"], workers=1,
                          progress=False)[0]
    patch.undo()


def _play(task, seed: int, max_steps: int, epsilon: float = 0.0):
    from rla_envs.alfworld.env import AlfWorldEnv
    from rla_envs.core.trajectory import play_episode

    env = AlfWorldEnv(tasks=[task], max_steps=max_steps)
    try:
        return play_episode(env, SweepPolicy(task, seed, epsilon), task, seed=seed)
    finally:
        env.close()


def test_sweep_policy_plays_only_admissible_actions_and_reads_a_hint(simple):
    from rla_envs.alfworld.family import AlfWorldFamily

    for seed in range(3):
        run = _play(simple, seed, max_steps=40, epsilon=0.2)
        assert all(action in info["admissible_actions"] for action, info in zip(run.actions, run.infos))
    hinted = AlfWorldFamily().mutate(simple, "easier", np.random.default_rng(0), only=["hint_in_goal"])
    budget = len(hinted.spec["walkthrough"]) + 2  # straight to the hinted place, and perhaps two doors to open
    for seed in range(3):
        run = _play(hinted, seed, max_steps=budget)
        assert run.won, run.actions
        assert run.actions[0] == f"go to {list(hinted.meta['hint'])[0]}"


def test_a_comparison_triggers_diagnoses_and_rewrites_both_ways(simple):
    from rla_envs.alfworld.guidance import guided_edits

    # one step can win nothing: the task triggers "easier", every failed run is diagnosed, no child wins either
    [comparison] = compare_guided_and_undirected([simple], max_steps=1, rollouts=4, screen_rollouts=16,
                                                 strengths=(1, 2))
    assert comparison.direction == "easier" and comparison.parent_successes == 0 and comparison.diagnoses
    guided, undirected = comparison.arms["guided"], comparison.arms["undirected"]
    first, second = guided.mutation.split("+")  # the strength-2 child, the last one measured
    assert guided.guided and {first, second} <= set(guided_edits(comparison.diagnoses, "easier"))
    assert not undirected.guided and undirected.mutation is not None
    for arm in (guided, undirected):
        assert arm.child_successes == 0 and not arm.accepted and arm.reason == "child_never_succeeds"
        assert arm.children_measured == 2 and arm.strength == 2  # nothing accepted: every strength was tried


def test_summary_counts_moves_per_rollout_and_the_paired_difference():
    def task(guided: ArmResult, undirected: ArmResult) -> TaskComparison:
        return TaskComparison("t", "easier", [], 2, 16, {"guided": guided, "undirected": undirected})

    comparisons = [task(ArmResult("hint_in_goal", True, 10, True, "accepted", 0.5, 1),
                        ArmResult("remove_distractors", False, 2, False, "move_below_margin", 0.0, 1)),
                   task(ArmResult("more_target_copies", True, 4, False, "move_not_significant", 0.1, 1),
                        ArmResult(reason="no rewrite: none applies"))]
    summary = summarize(comparisons)
    guided, undirected = summary["guided"], summary["undirected"]
    assert (guided["accepted"], guided["accept_rate"], undirected["accepted"]) == (1, 0.5, 0)
    assert guided["validation_rollouts"] == 64 and undirected["validation_rollouts"] == 48  # 16 + 16 per child
    assert guided["move_per_rollout"] == pytest.approx(0.5 / 64)  # only the accepted move counts
    assert guided["mean_move"] == pytest.approx(0.3) and undirected["mean_move"] == 0.0  # (0.5 + 0.1) / 2
    # differences 0.5 and 0.1: mean 0.3, sd 0.2828, t(0.975, 1 dof) = 12.706 -> 12.706 * 0.2828 / sqrt(2) = 2.541
    difference, half = summary["mean_move_difference"]
    assert difference == pytest.approx(0.3) and half == pytest.approx(2.541, abs=0.001)
    assert guided["guided_edits"] == 2 and summary["same_child"] == 0
    assert (summary["only_guided_accepted"], summary["only_undirected_accepted"]) == (1, 0)
