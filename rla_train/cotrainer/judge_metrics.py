"""How right the judge is on the policy's own steps: per training step, on its probe, and in the run's summary.

The policy trains on the votes its rollouts get. Where the env's family has a step-label oracle
(``FamilySpec.step_labels``; ALFWorld: the planner), each step's rollouts are labelled and the votes measured
against the labels (:func:`judge_step_metrics`, pure maths in :mod:`rla_train.signals.metrics`); where it has
none, the fields are absent (nothing is made up). The reward model's fixed probe gains the warm-started
policy's own labelled steps (:func:`extend_probe`, kept in the run directory so a resumed run judges the same
ones), and the summary carries the vote balanced accuracy on them before and after co-training
(:func:`judge_summary`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from rla_envs.core.files import atomic_write_json
from rla_train.cotrainer.run_dir import PROBE_POLICY_FILE, RunDirError

__all__ = ["oracle_labels", "judge_step_metrics", "extend_probe", "load_probe_extension", "judge_summary",
           "record_step", "PROBE_POLICY_FILE"]


def oracle_labels(episode, rule: str = "no_regress") -> list[bool | None] | None:
    """The family's step labels of one episode under ``rule`` (True good, False bad, None undetermined), or None
    without an oracle.

    Labels already made under the same rule (the noisy oracle's, or an earlier call's, kept as ``oracle_labels``)
    are not asked for twice. Episodes with an env error or no task are not labelled (None), nor is one the oracle fails on (a
    warning says why: the measurement never ends the run).
    """
    from rla_envs.core.labels import StepLabeller, has_step_labels

    cached = getattr(episode, "oracle_labels", None)
    if cached is not None and getattr(episode, "oracle_label_rule", None) == rule:
        return list(cached)
    task = getattr(episode, "task", None)
    if task is None or getattr(episode, "error", None) is not None or not has_step_labels(task.family):
        return None
    try:
        labels = list(StepLabeller(rule)(task, list(episode.actions)))
    except Exception as error:  # noqa: BLE001 - a measurement must not end the run it measures
        warnings.warn(f"the step-label oracle could not label an episode of task {task.id} ({type(error).__name__}: "
                      f"{error}); its steps are left out of judge_vote_balanced_accuracy", RuntimeWarning, stacklevel=2)
        return None
    if len(labels) != len(episode.actions):
        warnings.warn(f"the step-label oracle gave {len(labels)} labels for {len(episode.actions)} actions of task "
                      f"{task.id}; its steps are left out of judge_vote_balanced_accuracy", RuntimeWarning,
                      stacklevel=2)
        return None
    episode.oracle_labels, episode.oracle_label_rule = labels, rule
    return labels


def judge_step_metrics(episodes, rule: str = "no_regress") -> dict[str, float]:
    """The judge's balanced accuracy on the votes these episodes received, against the family's oracle (``rule``).

    ``judge_vote_balanced_accuracy`` (each vote a prediction; an unparseable 0 is wrong),
    ``judge_verdict_balanced_accuracy`` (the majority of each step's m votes; a tie is wrong),
    ``judge_vote_good_recall`` and ``judge_vote_false_good_rate`` (the share of "good" votes on good and on bad
    steps: a judge the policy can exploit pays for bad steps, and a falling recall shows less), and the labelled
    step counts (ALFWorld's planner labels ~7 ms a step: a timing belongs in benchmarks/, not in metrics.jsonl,
    whose rows a resumed run reproduces exactly). Empty when no episode could be labelled; an accuracy is left out when a class is missing.
    """
    from rla_train.signals.metrics import verdict_balanced_accuracy, vote_balanced_accuracy, vote_class_rates

    votes, labels = [], []
    for episode in episodes:
        if not episode.judgments:
            continue
        episode_labels = oracle_labels(episode, rule)
        if episode_labels is None:
            continue
        votes.extend(list(step) for step in episode.judgments[:len(episode_labels)])
        labels.extend(episode_labels[:len(episode.judgments)])
    if not labels:
        return {}
    known = [label for label in labels if label is not None]
    metrics = {"judge_labelled_steps": float(len(known)), "judge_labelled_bad_steps": float(sum(not k for k in known))}
    for name, measure in (("judge_vote_balanced_accuracy", vote_balanced_accuracy),
                          ("judge_verdict_balanced_accuracy", verdict_balanced_accuracy)):
        value = measure(votes, labels)
        if value is not None:
            metrics[name] = value
    for name, value in vote_class_rates(votes, labels).items():
        if value is not None:
            metrics[f"judge_vote_{name}"] = value
    return metrics


def extend_probe(rm_probe, run_dir: Path, policy, agent, *, episodes: int, seed: int, max_steps: int,
                 split: str, rule: str = "no_regress") -> int:
    """Add the labelled steps of ``policy`` playing one episode on each of the probe's first ``episodes`` games (at
    most one per game) to ``rm_probe`` (a RewardModelProbe) and keep them in ``run_dir``; returns how many steps
    were added.

    The steps are read back from the file written (as a resume does), so a fresh and a resumed run judge the same
    prompts.
    """
    from rla_train.reward_model.probe import policy_probe_steps, steps_to_json

    tasks = rm_probe.probe.tasks()[:episodes]
    steps = policy_probe_steps(tasks, policy, agent, seed=seed, max_steps=max_steps, split=split, rule=rule)
    atomic_write_json(Path(run_dir) / PROBE_POLICY_FILE, steps_to_json(steps))
    return load_probe_extension(rm_probe, run_dir)


def load_probe_extension(rm_probe, run_dir: Path, expected: int | None = None) -> int:
    """Put the policy's probe steps saved in ``run_dir`` back into ``rm_probe`` (a resumed run); returns how many.

    ``expected``: how many the fresh run added (its history's ``rm_probe_policy_steps``, 0 when it added none). A
    resumed run whose file is missing or holds another number of steps (its checkpoints copied without the file
    beside them) raises :class:`~rla_train.cotrainer.run_dir.RunDirError`, naming the file: the probe after
    co-training would not be the probe it is compared with.
    """
    import json

    from rla_train.reward_model.probe import steps_from_json

    path = Path(run_dir) / PROBE_POLICY_FILE
    if rm_probe is None:
        return 0
    saved = path.is_file()
    steps = steps_from_json(json.loads(path.read_text())) if saved else []
    if expected is not None and len(steps) != expected:
        raise RunDirError(
            f"{path}: the fresh run added {expected} of the policy's steps to the reward model's probe, and "
            f"{f'the file holds {len(steps)}' if saved else 'the file is missing'}; the probe after "
            f"co-training would not be the one it is compared with. Copy the file from the run that made the "
            f"checkpoint (it sits beside checkpoints/), or start the run afresh")
    rm_probe.probe = rm_probe.probe.extended(steps)
    return len(steps)


def record_step(history: dict, metrics: dict[str, float]) -> None:
    """Keep the first and the latest training step's on-policy judge accuracies in the run's history."""
    values = {k: metrics[k] for k in ("judge_vote_balanced_accuracy", "judge_verdict_balanced_accuracy")
              if metrics.get(k) is not None}
    if values:
        on_policy = history.setdefault("judge_on_policy", {})
        on_policy.setdefault("first_step", values)
        on_policy["last_step"] = values


def judge_summary(history: dict) -> dict[str, Any] | None:
    """``summary["judge_vote_balanced_accuracy"]``: the judge's vote balanced accuracy on the policy's steps.

    ``before`` / ``after``: on the probe's steps that the warm-started policy played (the same steps both times:
    the change is the judge's), judged before and after co-training; ``first_step`` / ``last_step``: on the
    votes the policy's own rollouts received in the first and the last training step; ``probe_policy_steps``: the
    good and bad counts of those probe steps. A part that was not measured (no probe, no oracle, a class without a
    step) is None; None altogether when nothing was.
    """
    def probe_value(key: str):
        policy = (history.get(key) or {}).get("policy") or {}
        return policy.get("vote_balanced_accuracy")

    on_policy = history.get("judge_on_policy") or {}
    result = {"before": probe_value("rm_probe_before"), "after": probe_value("rm_probe_after"),
              "first_step": (on_policy.get("first_step") or {}).get("judge_vote_balanced_accuracy"),
              "last_step": (on_policy.get("last_step") or {}).get("judge_vote_balanced_accuracy")}
    probe_steps = ((history.get("rm_probe_before") or {}).get("policy") or {})
    if not any(v is not None for v in result.values()) and not probe_steps:
        return None
    if probe_steps:  # a class without a step leaves before/after at None: the counts say why
        result["probe_policy_steps"] = {"good": int(probe_steps.get("good", 0)), "bad": int(probe_steps.get("bad", 0))}
    return result
