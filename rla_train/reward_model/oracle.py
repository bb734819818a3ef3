"""A judge of known accuracy: the family's expert step labels, each vote flipped with probability 1 - accuracy.

``reward_model.kind: noisy_oracle`` replaces the generative reward model with this judge, to check the
machinery that uses judgments (integrated rewards, diagnoses, rewrites) with a judge whose quality is
known and set by one number::

    judge = NoisyOracleJudge(accuracy=0.8, judgments_per_step=3, seed=0)
    report = judge.judge(None, episodes)      # fills every episode's judgments and judgment_texts
    episodes[0].judgments                     # [[1, 1, -1], [-1, -1, -1], ...]

Every step is labelled by :func:`rla_envs.core.labels.step_labels` (ALFWorld: the privileged planner,
replaying the game: the judge needs each trajectory's task; TextWorld: textworld's own plan), then each
of the ``m`` votes on a step is the label (good -> +1, bad -> -1), flipped independently with probability
``1 - accuracy``: accuracy 1 repeats the labels, 0 contradicts them, 0.5 is pure noise.

**Undetermined steps vote 0.** A step the expert cannot label (taken from a state it cannot win from
within its step budget) gets ``m`` votes of 0, what :mod:`rla_train.signals.rewards` reads as "unparseable":
it adds nothing to the step reward ``R_i = O + (λ/m)·Σ_j S_ij``, so the outcome alone rewards that step
(a random ±1 would add noise the accuracy does not describe, and a fixed one a bias). The consistency
reward of a 0 vote (-2) only matters for a trained judge, and this one is never trained: the
:class:`~rla_train.reward_model.judge.JudgeReport` counts the 0 votes as ``unparseable``, so
``judge_unparseable_fraction`` is the share of undetermined steps' votes.

Votes come from one seeded ``numpy`` Generator (the run's seed): the same seed and the same
trajectories, judged in the same order, give the same votes. :meth:`NoisyOracleJudge.state_dict`
returns the Generator's state for a checkpoint, so a resumed run can draw what the uninterrupted one would.

**Independent or persistent errors** (``noise``). ``"independent"`` (the default, above) flips each vote on its
own: a bad step that one vote calls good is called bad by most of the votes it gets on its next visits, so over
many visits the votes average to the label. A learned judge is not like that: its votes come from P(good | what it
sees), so where it is wrong it is wrong every time it sees the same thing, with all m votes alike, and a policy
trained on it is paid every time it takes that bad step again. ``"persistent"`` is that judge of known accuracy:
each (task, the observation the step was taken from, the action) is drawn once, from a hash of the run's seed and
those three (:func:`persistent_uniform`, the same in every process and after a resume), and where the draw is at
or above ``accuracy`` every vote on that step, on every visit, is flipped. The share of wrong votes is
``1 - accuracy`` in both, as is the balanced accuracy that ``judge_vote_balanced_accuracy`` measures; what differs
is whether the errors can be learned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rla_envs.core.labels import StepLabeller
from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory
from rla_train.backends.base import Sample
from rla_train.reward_model.judge import JudgeReport, resolve_tasks
from rla_train.reward_model.parsing import UNPARSEABLE
from rla_train.reward_model.verdicts import VerdictGeneration

__all__ = ["NoisyOracleJudge", "noisy_votes", "persistent_uniform", "vote_good_probability", "ORACLE_TEXTS",
           "ORACLE_NOISE"]

ORACLE_NOISE = ("independent", "persistent")
"""How the oracle's wrong votes fall: each vote on its own, or the same steps wrong on every visit (module doc)."""

ORACLE_TEXTS = {1: "\\boxed{1}", -1: "\\boxed{-1}", UNPARSEABLE: "undetermined: the expert cannot finish from here"}
"""The answer text of each vote (the undetermined one has no box, so it parses as 0)."""


def noisy_votes(labels: Sequence[bool | None], accuracy: float, uniforms: np.ndarray) -> list[list[int]]:
    """Votes per step: the label as ±1, kept where the step's uniform draw is below ``accuracy``, else flipped.

    ``uniforms`` has one row per label and one column per vote (draws in [0, 1)); an undetermined label
    (None) votes 0 whatever its draws. By hand: labels ``[True, False, None]``, accuracy 0.8, uniforms
    ``[[0.1, 0.9], [0.5, 0.85], [0.3, 0.3]]`` give ``[[1, -1], [-1, 1], [0, 0]]`` (0.9 and 0.85 >= 0.8 flip).
    """
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must be in [0, 1] (the probability a vote equals the label), got {accuracy!r}")
    uniforms = np.asarray(uniforms, dtype=float)
    if uniforms.ndim != 2 or uniforms.shape[0] != len(labels):
        raise ValueError(f"uniforms must have one row per label ({len(labels)}) and one column per vote, "
                         f"got shape {uniforms.shape}")
    votes = []
    for label, draws in zip(labels, uniforms):
        if label is None:
            votes.append([UNPARSEABLE] * len(draws))
            continue
        truth = 1 if label else -1
        votes.append([truth if draw < accuracy else -truth for draw in draws])
    return votes


def persistent_uniform(seed: int, task_id: str, observation: str, action: str) -> float:
    """A draw in [0, 1) fixed by ``(seed, task_id, observation, action)``: a 64-bit BLAKE2b hash of their JSON, as a
    fraction of 2**64 (not Python's ``hash``, which changes between processes). The same four give the same draw."""
    key = json.dumps([int(seed), str(task_id), str(observation), str(action)], ensure_ascii=True)
    digest = hashlib.blake2b(key.encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0 ** 64


def vote_good_probability(label: bool | None, accuracy: float) -> float:
    """The probability that a vote on a step is +1: ``accuracy`` (good), ``1 - accuracy`` (bad), 0.5 (undetermined).

    For an undetermined step, whose votes are all 0, 0.5 says "no preference" (as a score, e.g. for an AUC).
    """
    if label is None:
        return 0.5
    return float(accuracy) if label else 1.0 - float(accuracy)


class NoisyOracleJudge:
    """Judges every step with the family's expert label, each of ``m`` votes flipped w.p. ``1 - accuracy``.

    Implements what the co-trainer and :class:`~rla_train.reward_model.RewardModelDiagnoser` call on a
    :class:`~rla_train.reward_model.RewardModel`: :meth:`judge` and :attr:`judgments_per_step`. It is never
    trained (build it with no reward-model weights: ``rla_train.cotrainer.components`` returns no ``rm_model``).

    Args:
        accuracy: the probability that each vote equals the label (``reward_model.oracle_accuracy``).
        judgments_per_step: ``m``, votes per step.
        seed: an int (the run's seed) or a ``numpy.random.Generator`` the votes are drawn from.
        noise: ``"independent"`` (each vote flipped on its own) or ``"persistent"`` (a step's votes flipped
            together, on every visit to the same observation and action; needs an int ``seed``): module doc.
        labeller: ``labeller(task, actions) -> [True | False | None]`` per action (default
            :func:`rla_envs.core.labels.step_labels`: the family's oracle, e.g. ALFWorld's or TextWorld's).
    """

    name = "noisy-oracle"

    def __init__(self, accuracy: float, *, judgments_per_step: int = 3, seed: int | np.random.Generator = 0,
                 noise: str = "independent", labeller: Callable[[Task, list[str]], list[bool | None]] | None = None):
        if isinstance(accuracy, bool) or not isinstance(accuracy, (int, float)) or not 0.0 <= accuracy <= 1.0:
            raise ValueError(f"accuracy must be a number in [0, 1] (reward_model.oracle_accuracy; 0.5 = pure noise), "
                             f"got {accuracy!r}")
        if type(judgments_per_step) is not int or judgments_per_step < 1:
            raise ValueError(f"judgments_per_step must be an int >= 1 (votes per step; the method uses 3), "
                             f"got {judgments_per_step!r}")
        if noise not in ORACLE_NOISE:
            raise ValueError(f"noise must be one of {ORACLE_NOISE} (reward_model.oracle_noise), got {noise!r}")
        if noise == "persistent" and isinstance(seed, np.random.Generator):
            raise ValueError("noise='persistent' draws from a hash of an int seed: pass the run's seed, not a Generator")
        if labeller is None:
            labeller = StepLabeller()
        self.accuracy, self.noise = float(accuracy), noise
        self.seed = None if isinstance(seed, np.random.Generator) else int(seed)
        self.judgments_per_step = judgments_per_step
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.labeller = labeller

    def labels(self, task: Task, trajectory: Trajectory) -> list[bool | None]:
        """The expert's label of each step of ``trajectory`` (one per action; the labeller's length checked)."""
        labels = list(self.labeller(task, list(trajectory.actions)))
        if len(labels) != len(trajectory.actions):
            raise RuntimeError(f"the step labeller returned {len(labels)} labels for {len(trajectory.actions)} "
                               f"actions of task {task.id}; it must return one per action")
        return labels

    def judge(self, task_or_tasks: Task | Sequence[Task | None] | None,
              trajectories: Trajectory | Sequence[Trajectory]) -> JudgeReport:
        """Fill ``judgments`` (and an Episode's ``judgment_texts``) of every trajectory; the report as RewardModel's.

        ``task_or_tasks`` as for :meth:`RewardModel.judge` (None: each Episode's ``task``). The report's
        ``generations`` hold one :class:`~rla_train.reward_model.verdicts.VerdictGeneration` per step (no
        tokens; ``good_probability`` from :func:`vote_good_probability`), its ``texts`` the answers.
        """
        if isinstance(trajectories, Trajectory):
            trajectories = [trajectories]
        trajectories = list(trajectories)
        tasks = resolve_tasks(task_or_tasks, trajectories)
        report = JudgeReport(trajectories=len(trajectories))
        for task, trajectory in zip(tasks, trajectories):
            labels = self.labels(task, trajectory)
            uniforms = self.uniforms(task, trajectory, len(labels))
            votes = noisy_votes(labels, self.accuracy, uniforms)
            answers = [[ORACLE_TEXTS[vote] for vote in step] for step in votes]
            trajectory.judgments = votes
            trajectory.oracle_labels = labels  # the co-trainer measures the votes against them without relabelling
            trajectory.oracle_label_rule = getattr(self.labeller, "rule", None)
            if hasattr(trajectory, "judgment_texts"):
                trajectory.judgment_texts = answers
            report.texts.append(answers)
            report.generations.append([
                VerdictGeneration(prompt="", prompt_ids=[], samples=[Sample(text=text) for text in step],
                                  good_probability=vote_good_probability(label, self.accuracy))
                for label, step in zip(labels, answers)])
            report.steps += len(votes)
            report.judgments += sum(len(step) for step in votes)
            report.unparseable += sum(vote == UNPARSEABLE for step in votes for vote in step)
        return report

    def uniforms(self, task: Task, trajectory: Trajectory, steps: int) -> np.ndarray:
        """The draws of ``steps`` steps' votes (one row per step, one column per vote): from the Generator, or, for
        persistent noise, one hashed draw per step repeated across its votes."""
        if self.noise == "independent":
            return self.rng.random((steps, self.judgments_per_step))
        if len(trajectory.observations) < steps:
            raise ValueError(f"persistent noise keys each step on the observation it was taken from: the trajectory "
                             f"of task {task.id} has {len(trajectory.observations)} observations for {steps} actions")
        draws = [persistent_uniform(self.seed, task.id, trajectory.observations[i], trajectory.actions[i])
                 for i in range(steps)]
        return np.repeat(np.asarray(draws, dtype=float).reshape(steps, 1), self.judgments_per_step, axis=1)

    def state_dict(self) -> dict[str, Any]:
        """The vote Generator's state (for a checkpoint)."""
        return {"bit_generator": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back what :meth:`state_dict` returned: the next votes are drawn as after the save."""
        self.rng.bit_generator.state = state["bit_generator"]

    def close(self) -> None:
        """Nothing to release (the labeller's engine belongs to the process)."""
