"""A fixed labelled probe of the reward model: balanced process accuracy and AUC on the same steps every time.

Judging the steps of each training batch measures a moving target (other tasks, another policy). The
probe is built once, seeded, from tasks the reward model never trains on, and re-judged at every
evaluation, so its numbers are comparable across a run and across arms::

    probe = build_probe(generated_tasks("valid_seen", 32, 0, task_types=["pick_and_place_simple"]), seed=0)
    probe_reward_model(rm, probe)   # {"balanced_accuracy": 0.71, "auc": 0.78, "good": 300, "bad": 150, ...}

Its steps come from expert and epsilon-expert episodes (:func:`~rla_train.reward_model.label_data.play_episodes`),
labelled by the step-label oracle, with every bad step kept and at most ``good_per_bad`` good steps per bad
one. **The policy's own steps** join it (:func:`policy_probe_steps`, :meth:`Probe.extended`: the warm-started
policy playing the probe's games, source ``"policy"``), since those are the steps the judge rewards in training;
the report gives the metrics on them separately (``"policy"``) beside the overall ones. **Score and prediction.** For a choice judge (:class:`~rla_train.reward_model.verdicts.VerdictChoiceBackend`)
the score of a step is ``P(good)``, the probability that one of its votes is +1 at temperature 1, and the
prediction is good when ``P(good) >= 0.5`` (the greedy verdict; the majority of many votes). Any other judge
(e.g. one that writes its verdict) is asked for ``judgments_per_step`` votes per step with its own sampling:
the score is the mean vote and the prediction the majority vote (a tie or no parseable vote counts as "bad",
i.e. wrong on good steps). Reported: balanced accuracy (the mean of the two recalls: 0.5 for a judge that
always says the same), AUC, both recalls, the class counts and approximate 95% intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rla_envs.core.task import Task
from rla_train.reward_model.label_data import LabelledStep

__all__ = ["Probe", "build_probe", "probe_reward_model", "policy_probe_steps", "steps_to_json", "steps_from_json",
           "POLICY_SOURCE"]

POLICY_SOURCE = "policy"
"""The ``source`` of probe steps played by the policy (:func:`policy_probe_steps`)."""


@dataclass
class Probe:
    """A fixed set of labelled steps to judge (see the module docstring).

    Attributes:
        steps: the labelled steps, in play order.
        counts: :func:`~rla_train.reward_model.label_data.class_counts` of ``steps`` (steps, good, bad, by source).
        played: how many steps the probe's episodes had before balancing (labelled or not).
    """

    steps: list[LabelledStep]
    counts: dict[str, Any] = field(default_factory=dict)
    played: int = 0

    def __len__(self) -> int:
        return len(self.steps)

    def extended(self, steps: Sequence[LabelledStep]) -> Probe:
        """This probe with ``steps`` added after its own (counts recomputed; ``played`` grows by their count)."""
        from rla_train.reward_model.label_data import class_counts

        everything = [*self.steps, *steps]
        return Probe(everything, class_counts(everything), played=self.played + len(steps))

    def tasks(self) -> list[Task]:
        """The probe's tasks, each once, in the order its steps first use them."""
        return list({step.task.id: step.task for step in self.steps}.values())


def policy_probe_steps(tasks: Sequence[Task], policy, agent, *, seed: int = 0, max_steps: int = 30,
                       split: str = "valid_seen", good_per_bad: float | None = 2.0,
                       rule: str = "no_regress") -> list[LabelledStep]:
    """Labelled steps of ``policy`` (a generation backend, with ``agent``) playing one episode on each task.

    The steps the judge is asked about in training are the policy's, not an expert's or a random player's:
    these join the probe (:meth:`Probe.extended`) with source :data:`POLICY_SOURCE`, balanced as the probe
    (every bad step, at most ``good_per_bad`` good ones per bad one; seeded). The episodes are seeded
    (:func:`~rla_train.reward_model.label_data.play_episodes`), so the same weights give the same steps.
    """
    from rla_train.reward_model.label_data import balance_steps, label_steps, play_episodes

    episodes = play_episodes(list(tasks), episodes_per_task=1, seed=seed, max_steps=max_steps, split=split,
                             policy=policy, agent=agent)
    return balance_steps(label_steps(episodes, source=POLICY_SOURCE, rule=rule), good_per_bad=good_per_bad, seed=seed)


def steps_to_json(steps: Sequence[LabelledStep]) -> list[dict[str, Any]]:
    """Labelled steps as JSON-ready rows (one per trajectory: its task, the trajectory, its steps and labels)."""
    rows: dict[int, dict[str, Any]] = {}
    for step in steps:
        row = rows.setdefault(id(step.trajectory), {"task": step.task.to_dict(), "trajectory": _trajectory_dict(step),
                                                    "source": step.source, "steps": []})
        row["steps"].append([step.step, bool(step.good)])
    return list(rows.values())


def _trajectory_dict(step: LabelledStep) -> dict[str, Any]:
    from rla_envs.core.trajectory import Trajectory

    trajectory = step.trajectory
    plain = Trajectory(task_id=trajectory.task_id, observations=list(trajectory.observations),
                       actions=list(trajectory.actions), infos=[dict(i) for i in trajectory.infos],
                       won=trajectory.won, truncated=trajectory.truncated)
    return plain.to_dict()


def steps_from_json(rows: Sequence[dict[str, Any]]) -> list[LabelledStep]:
    """What :func:`steps_to_json` wrote, as labelled steps again."""
    from rla_envs.core.trajectory import Trajectory

    steps = []
    for row in rows:
        task, trajectory = Task.from_dict(row["task"]), Trajectory.from_dict(row["trajectory"])
        steps.extend(LabelledStep(task, trajectory, int(i), bool(good), row.get("source", POLICY_SOURCE))
                     for i, good in row["steps"])
    return steps


def build_probe(tasks: Sequence[Task], *, epsilons: Sequence[float] = (0.0, 0.5, 1.0), episodes_per_task: int = 3,
                good_per_bad: float | None = 2.0, seed: int = 0, max_steps: int = 30,
                split: str = "valid_seen", rule: str = "no_regress") -> Probe:
    """The fixed probe: ``episodes_per_task`` epsilon-expert episodes on each task, labelled and balanced.

    ``tasks`` must be disjoint from the reward model's training tasks (e.g. ``valid_seen`` generated tasks
    when it warm-starts on ``train`` ones). Same arguments, same probe (everything is seeded). See
    :func:`~rla_train.reward_model.label_data.play_episodes` for ``epsilons``, ``episodes_per_task``,
    ``max_steps`` and ``split``, :func:`~rla_train.reward_model.label_data.balance_steps` for ``good_per_bad``, and
    :data:`rla_envs.core.labels.LABEL_RULES` for ``rule``.
    """
    from rla_train.reward_model.label_data import balance_steps, class_counts, label_steps, play_episodes

    episodes = play_episodes(tasks, epsilons=epsilons, episodes_per_task=episodes_per_task, seed=seed,
                             max_steps=max_steps, split=split)
    steps = balance_steps(label_steps(episodes, rule=rule), good_per_bad=good_per_bad, seed=seed)
    counts = class_counts(steps)
    if not counts["good"] or not counts["bad"]:
        raise ValueError(f"the probe has {counts['good']} good and {counts['bad']} bad steps; it needs both: "
                         "play more episodes or higher epsilons (bad steps come from random actions)")
    return Probe(steps, counts, played=sum(len(e.actions) for e in episodes))


def _prompt_options(judge) -> dict[str, Any]:
    """The judge's own prompt options, so the probe judges the very prompts training judges."""
    from rla_train.reward_model.prompts import DEFAULT_MAX_CHARS, DEFAULT_MAX_HISTORY

    return {"max_history": getattr(judge, "max_history", DEFAULT_MAX_HISTORY),
            "max_chars": getattr(judge, "max_chars", DEFAULT_MAX_CHARS),
            "style": getattr(judge, "prompt_style", "full")}


def _choice_scores(backend, chats: list, batch_size: int) -> tuple[list[float], list[bool], list[float]]:
    """(P(good), P(good) >= 0.5, P(good)) per chat from a VerdictChoiceBackend."""
    from rla_train.backends.base import SamplingParams

    scores: list[float] = []
    for start in range(0, len(chats), batch_size):
        generations = backend.generate(chats[start:start + batch_size], n=1,
                                       sampling=SamplingParams(temperature=1.0, seed=0))
        scores.extend(float(generation.good_probability) for generation in generations)
    return scores, [score >= 0.5 for score in scores], scores


def _vote_scores(judge, probe: Probe) -> tuple[list[float], list[bool], list[float]]:
    """(mean vote, majority is +1, share of +1 votes) per probe step, from ``judge.judge`` on copies of the probe's
    trajectories."""
    import copy

    from rla_train.signals.metrics import majority_vote

    index: dict[int, int] = {}
    tasks, trajectories = [], []
    for step in probe.steps:
        if id(step.trajectory) not in index:
            index[id(step.trajectory)] = len(trajectories)
            tasks.append(step.task)
            trajectories.append(copy.copy(step.trajectory))  # the probe's own trajectories keep no judgments
    judge.judge(tasks, trajectories)
    scores, predicted, good_votes = [], [], []
    for step in probe.steps:
        votes = list(trajectories[index[id(step.trajectory)]].judgments[step.step])
        scores.append(sum(votes) / len(votes) if votes else 0.0)
        predicted.append(majority_vote(votes) == 1)
        good_votes.append(sum(v == 1 for v in votes) / len(votes) if votes else 0.0)
    return scores, predicted, good_votes


def probe_reward_model(judge, probe: Probe, *, batch_size: int = 64) -> dict[str, Any]:
    """Judge the probe's steps with ``judge`` and measure it against their labels.

    Args:
        judge: a :class:`~rla_train.reward_model.judge.RewardModel` (a choice judge is scored on the probe's
            steps with its own prompt options), or any judge with ``judge(tasks, trajectories)``.
        probe: from :func:`build_probe`.
        batch_size: prompts per backend call (choice judges).

    Returns:
        ``{"balanced_accuracy", "auc", "vote_balanced_accuracy", "recall_good", "recall_bad", "steps", "good", "bad",
        "balanced_accuracy_ci", "auc_ci"}`` (the two intervals: approximate 95%, see :mod:`rla_train.signals.metrics`),
        and when the probe holds steps the policy played, the same keys on those alone under ``"policy"``.
        ``vote_balanced_accuracy`` is that of one vote as training samples it: a choice judge's expected one
        (the mean of P(good) on good steps and of 1 - P(good) on bad ones, at temperature 1), other judges' share
        of right votes; below ``balanced_accuracy`` when the judge is unsure (P(good) near 0.5).
    """
    from rla_train.reward_model.prompts import judge_chat

    if not len(probe):
        raise ValueError("the probe has no steps; build it with build_probe")
    backend = getattr(judge, "backend", None)
    if hasattr(backend, "scored_inputs"):  # a choice judge: P(good) straight from the scored verdict tokens
        options = _prompt_options(judge)
        chats = [judge_chat(s.task, s.trajectory, s.step, **options) for s in probe.steps]
        scores, predicted, good_votes = _choice_scores(backend, chats, batch_size)
    elif callable(getattr(judge, "judge", None)):
        scores, predicted, good_votes = _vote_scores(judge, probe)
    else:
        raise TypeError(f"probe_reward_model needs a judge with judge(tasks, trajectories) (a RewardModel, "
                        f"NoisyOracleJudge, ...), got {type(judge).__name__}")
    labels = [s.good for s in probe.steps]
    result = _measure(scores, predicted, good_votes, labels)
    mine = [i for i, s in enumerate(probe.steps) if s.source == POLICY_SOURCE]
    if mine:
        result[POLICY_SOURCE] = _measure(*([values[i] for i in mine] for values in (scores, predicted, good_votes,
                                                                                   labels)))
    return result


def _measure(scores: list[float], predicted: list[bool], good_votes: list[float], labels: list[bool]) -> dict[str, Any]:
    """The probe's metrics on some of its steps (see :func:`probe_reward_model`)."""
    from rla_train.signals.metrics import auc_interval, balanced_accuracy, balanced_accuracy_interval, roc_auc

    good = sum(labels)
    bad = len(labels) - good
    good_right = sum(p for p, label in zip(predicted, labels) if label)
    bad_right = sum(not p for p, label in zip(predicted, labels) if not label)
    accuracy, auc = balanced_accuracy(predicted, labels), roc_auc(scores, labels)
    vote_good = sum(p for p, label in zip(good_votes, labels) if label) / good if good else None
    vote_bad = sum(1 - p for p, label in zip(good_votes, labels) if not label) / bad if bad else None
    return {"balanced_accuracy": accuracy, "auc": auc,
            "vote_balanced_accuracy": (vote_good + vote_bad) / 2 if good and bad else None,
            "recall_good": good_right / good if good else None, "recall_bad": bad_right / bad if bad else None,
            "steps": len(labels), "good": good, "bad": bad,
            "balanced_accuracy_ci": balanced_accuracy_interval(good_right, good, bad_right, bad) if good and bad
            else None,
            "auc_ci": auc_interval(auc, good, bad) if auc is not None else None}
