"""The fixed labelled probe of the reward model: seeded steps of both classes, and what it measures."""

from __future__ import annotations

import pytest

from rla_train.reward_model.probe import Probe, build_probe, probe_reward_model
from rla_train.reward_model.prompts import judge_chat
from tests.rla_envs.alfworld.conftest import alfworld_cache, alfworld_tasks  # noqa: F401  (session fixtures)


@pytest.fixture(scope="module")
def task(alfworld_tasks):
    return next(t for t in alfworld_tasks if t.spec["task_type"] == "pick_and_place_simple")


def _build(task):
    # two random players of 30 steps each: ~8% of a random player's labelled steps are bad (measured)
    return build_probe([task], epsilons=(0.0, 1.0), episodes_per_task=4, seed=0, max_steps=30, split="valid_unseen")


@pytest.fixture(scope="module")
def probe(task):
    return _build(task)


def test_probe_is_fixed_by_its_seed_and_holds_both_classes(task, probe):
    again = _build(task)
    assert [(s.trajectory.actions, s.step, s.good, s.source) for s in probe.steps] == \
        [(s.trajectory.actions, s.step, s.good, s.source) for s in again.steps]
    counts = probe.counts
    assert counts["good"] >= 1 and counts["bad"] >= 1 and counts["steps"] == len(probe) == counts["good"] + counts["bad"]
    assert counts["good"] <= 2 * counts["bad"]  # every bad step kept, at most 2 good per bad
    assert probe.played > len(probe)
    assert counts["by_source"].get("expert", {}).get("bad", 0) <= 1  # the expert's steps are (nearly) all good


class _ChoiceStub:
    """A choice-judge backend whose P(good) is a function of the label of the step each chat shows."""

    def __init__(self, p_good_of_chat):
        self.p_good_of_chat, self.seen = p_good_of_chat, []

    def scored_inputs(self, prompts):  # marks it as a VerdictChoiceBackend for the probe
        raise AssertionError("not used by the probe")

    def generate(self, prompts, n=1, sampling=None):
        from rla_train.reward_model.verdicts import VerdictGeneration

        self.seen.extend(prompts)
        return [VerdictGeneration(prompt="", prompt_ids=[], samples=[], good_probability=self.p_good_of_chat(p))
                for p in prompts]


class _Judge:
    def __init__(self, backend, prompt_style="compact"):
        self.backend, self.prompt_style, self.max_history, self.max_chars = backend, prompt_style, 6, 600


def _label_lookup(probe, style="compact"):
    labels = {}
    for s in probe.steps:
        labels[str(judge_chat(s.task, s.trajectory, s.step, style=style))] = s.good
    return labels


def test_an_oracle_scores_one_a_constant_judge_one_half_and_the_probe_asks_the_judges_prompts(probe):
    labels = _label_lookup(probe)
    oracle = _ChoiceStub(lambda chat: 0.9 if labels[str(chat)] else 0.2)
    result = probe_reward_model(_Judge(oracle), probe, batch_size=7)
    assert result["balanced_accuracy"] == 1.0 and result["auc"] == 1.0
    assert (result["recall_good"], result["recall_bad"]) == (1.0, 1.0)
    assert result["vote_balanced_accuracy"] == pytest.approx((0.9 + 0.8) / 2)  # one vote: right w.p. 0.9 / 0.8
    assert (result["steps"], result["good"], result["bad"]) == (len(probe), probe.counts["good"], probe.counts["bad"])
    assert oracle.seen == [judge_chat(s.task, s.trajectory, s.step, style="compact") for s in probe.steps]
    constant = probe_reward_model(_Judge(_ChoiceStub(lambda chat: 0.7)), probe)
    assert constant["balanced_accuracy"] == 0.5 and constant["auc"] == 0.5  # "always good": no information
    assert constant["recall_good"] == 1.0 and constant["recall_bad"] == 0.0
    low, high = constant["balanced_accuracy_ci"]
    assert low <= 0.5 <= high
    inverted = probe_reward_model(_Judge(_ChoiceStub(lambda chat: 0.1 if labels[str(chat)] else 0.8)), probe)
    assert inverted["balanced_accuracy"] == 0.0 and inverted["auc"] == 0.0


class _VotingJudge:
    """A judge with judge(tasks, trajectories) voting the oracle label on listed steps, the opposite elsewhere."""

    def __init__(self, probe, wrong_on_bad: bool):
        self.bad = {(id(s.trajectory), s.step) for s in probe.steps if not s.good}
        self.originals, self.wrong_on_bad = [s.trajectory for s in probe.steps], wrong_on_bad

    def judge(self, tasks, trajectories):
        for trajectory in trajectories:
            original = next(o for o in self.originals if o.actions is trajectory.actions)
            votes = []
            for i in range(len(trajectory.actions)):
                bad = (id(original), i) in self.bad
                votes.append([1, 1, -1] if not bad or self.wrong_on_bad else [-1, -1, 1])
            trajectory.judgments = votes


def test_judges_without_a_choice_backend_are_scored_by_their_majority_vote(probe):
    right = probe_reward_model(_VotingJudge(probe, wrong_on_bad=False), probe)
    assert right["balanced_accuracy"] == 1.0 and right["auc"] == 1.0
    always_good = probe_reward_model(_VotingJudge(probe, wrong_on_bad=True), probe)
    assert always_good["balanced_accuracy"] == 0.5 and always_good["recall_bad"] == 0.0
    # votes [1, 1, -1] everywhere: 2/3 right on good steps, 1/3 on bad ones -> 0.5 for one vote
    assert always_good["vote_balanced_accuracy"] == pytest.approx(0.5)
    assert right["vote_balanced_accuracy"] == pytest.approx(2 / 3)  # 2 of 3 votes right on every step
    assert all(s.trajectory.judgments is None for s in probe.steps)  # the probe's episodes stay as built
    with pytest.raises(TypeError, match="judge"):
        probe_reward_model(object(), probe)
    with pytest.raises(ValueError, match="no steps"):
        probe_reward_model(_VotingJudge(probe, False), Probe([]))


def test_untrained_tiny_reward_model_on_the_probe(tiny_backend, probe):
    from rla_train.backends.choice import ChoiceBackend
    from rla_train.reward_model import RewardModel
    from rla_train.reward_model.verdicts import VerdictChoiceBackend

    judge = RewardModel(VerdictChoiceBackend(ChoiceBackend(tiny_backend)), prompt_style="compact")
    result = probe_reward_model(judge, probe)
    assert result["balanced_accuracy"] == pytest.approx((result["recall_good"] + result["recall_bad"]) / 2)
    assert 0.0 <= result["auc"] <= 1.0 and result["steps"] == len(probe)
    assert result == probe_reward_model(judge, probe)  # judging does not change the judge or the probe
