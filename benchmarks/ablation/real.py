"""The ablation on the real stack: ALFWorld games, the tiny transformer policy and reward model, TRL.

Per seed (directories under ``OUT/real/seed-S/``):

1. ``warm-start/`` — one run of ``rla_train.cotrainer.loop.train`` with ``train.steps=0`` in mode ``policy+reward``: the
   policy's SFT + listwise warm start and the reward model's warm start, saved as checkpoint 0. Every arm of the
   seed starts from these weights (the paired design).
2. ``arm-NAME/`` — each arm trained from that checkpoint (its warm starts off, ``train.steps`` steps), evaluated
   at the end on the seed's in-domain list (``env.eval_options.split=valid_seen``, ``train.eval_episodes``
   seeded episodes: the same tasks and episode seeds for every arm) and, when the reward model has a probe, its
   balanced process accuracy (``summary["rm_probe_after"]``).
3. ``arm-NAME/ood/`` — the arm's final policy played on the out-of-domain list (``valid_unseen``), a
   ``train.steps=0`` run whose ``summary["before"]`` is that evaluation; ``warm-start/ood/`` the same for the warm
   start, so that every arm's gain over its start is paired in both splits (:func:`with_warm_start`).

Per-episode outcomes come from ``summary[...]["outcomes"]`` (1/0 per episode in task order), which pairs arms
episode by episode. A directory that already has its ``summary.json`` is read instead of run (resumable).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.ablation.aggregate import WARM_START
from benchmarks.ablation.arms import Arm

__all__ = ["RealSetup", "QUICK_OVERRIDES", "run_real", "finished_real_results", "with_warm_start", "episode_outcomes"]

QUICK_OVERRIDES = (
    "env.train_options.n_per_type=8", "env.max_steps=15", "env.num_envs=8",
    "rollout.tasks_per_step=2", "rollout.group_size=4",
    "train.warm_start_demos=16", "train.warm_start_sft_steps=40", "train.warm_start_listwise_steps=40",
    "reward_model.warm_start_steps=20", "reward_model.warm_start_episodes=4", "reward_model.probe_episodes=4",
    "train.probe_episodes=0", "pool.adapt_every=8", "pool.measure_rollouts=4", "output.checkpoint_every=0",
)
"""``--quick``: 8 training games, 2 tasks x 4 rollouts per step, a warm start of a few dozen steps, short episodes."""


@dataclass(frozen=True)
class RealSetup:
    """What every run of the real ablation shares: the steps, held-out sizes and extra config overrides."""

    steps: int = 12
    episodes: int = 128
    games_per_split: int = 32
    probe_episodes: int = 16
    config: str | None = None
    overrides: tuple[str, ...] = ()


def _run(overrides: list[str], run_dir: Path, log: Callable[[str], None], label: str) -> dict[str, Any]:
    """``train(load_config(overrides))`` in ``run_dir``, or its saved summary when the run is already done.

    A run that did not finish (no ``summary.json``) continues from its newest intact checkpoint (a run saves one after
    its warm starts and first evaluation, then every ``output.checkpoint_every`` steps; a resumed run computes what the
    uninterrupted one would have), so an interrupted arm does not redo its judge's warm start; a run with none starts
    again from scratch (``overwrite`` clears its files)."""
    summary_path = run_dir / "summary.json"
    if summary_path.is_file():
        log(f"real: {label}: done already ({summary_path})")
        return json.loads(summary_path.read_text())
    from rla_train.config import load_config
    from rla_train.cotrainer.checkpoint import CorruptCheckpoint, latest_checkpoint
    from rla_train.cotrainer.loop import train

    started = time.perf_counter()
    try:
        checkpoint = latest_checkpoint(run_dir)  # None when the run saved none (or never started)
    except CorruptCheckpoint as error:  # none of its checkpoints is intact: start again
        log(f"real: {label}: {error}")
        checkpoint = None
    resume = [] if checkpoint is None else [f"train.resume_from={run_dir}"]
    if checkpoint is not None:
        log(f"real: {label}: resuming from {checkpoint}")
    config = load_config(None, [*overrides, f"output.dir={run_dir}", *resume], check_hardware=False)
    summary = train(config, progress=True, overwrite=checkpoint is None)  # its phases and a step bar with ETA, on stderr
    log(f"real: {label}: {time.perf_counter() - started:.0f} s")
    return summary


def episode_outcomes(evaluation: dict | None, where: str) -> list[int]:
    """An evaluation's per-episode outcomes (1 won, 0 not, in task order); a clear error naming ``where`` without."""
    if not evaluation or "outcomes" not in evaluation:
        raise KeyError(f"{where} has no per-episode 'outcomes' (1/0 per episode, task order); the paired tests need "
                       "them: rla_train.cotrainer.loop.evaluate must record them")
    return [int(v) for v in evaluation["outcomes"]]


def _split(setup: RealSetup, split: str) -> list[str]:
    return [f"env.eval_options.split={split}", f"env.eval_options.n_per_type={setup.games_per_split}",
            f"train.eval_episodes={setup.episodes}"]


def _curve(run_dir: Path) -> list[float]:
    """Success per training step: on the fixed training-game probe when it was played every step, else on the
    tasks the pool drew that step."""
    from rla_train.cotrainer.run_log import read_metrics

    try:
        records = read_metrics(run_dir)
    except FileNotFoundError:
        return []
    probe = [float(r["probe_success_rate"]) for r in records if "probe_success_rate" in r]
    if probe and len(probe) == len(records):
        return probe
    return [float(r["success_rate"]) for r in records if "success_rate" in r]


def _heldout_curve(run_dir: Path, summary: dict[str, Any]) -> dict[int, float]:
    """In-domain held-out success by training step: 0 (the warm start, ``summary["before"]``), every
    ``train.eval_every`` evaluation the metrics logged, and the end (``summary["after"]``)."""
    from rla_train.cotrainer.run_log import read_metrics

    curve = {}
    if "success_rate" in (summary.get("before") or {}):
        curve[0] = float(summary["before"]["success_rate"])
    try:
        records = read_metrics(run_dir)
    except FileNotFoundError:
        records = []
    curve.update({int(r["step"]): float(r["heldout_success_rate"]) for r in records if "heldout_success_rate" in r})
    if "success_rate" in (summary.get("after") or {}) and summary.get("steps"):
        curve[int(summary["steps"])] = float(summary["after"]["success_rate"])
    return curve


def run_real_arm(arm: Arm, seed: int, setup: RealSetup, out: Path, warm: Path,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train ``arm`` from the seed's warm-start checkpoint ``warm``, then evaluate it in and out of domain."""
    from rla_train.cotrainer.checkpoint import latest_checkpoint

    base = [*setup.overrides, f"train.seed={seed}"]
    from_warm = [f"policy.model={warm / 'policy'}", "train.warm_start_sft_steps=0", "train.warm_start_listwise_steps=0"]
    if arm.judge_warm_start is None:  # the seed's shared judge; a judge@ExK arm warm-starts a fresh one of its own
        from_warm.append("reward_model.warm_start_steps=0")
        if (warm / "reward_model").is_dir():
            from_warm.append(f"reward_model.model={warm / 'reward_model'}")
    run_dir = out / f"arm-{arm.name}"
    summary = _run([*base, *arm.overrides(), *from_warm, f"train.steps={setup.steps}",
                    f"reward_model.probe_episodes={setup.probe_episodes}", *_split(setup, "valid_seen")],
                   run_dir, log, f"seed {seed} {arm.name}: train {setup.steps} steps + in-domain eval")
    final = latest_checkpoint(run_dir)
    if final is None:
        raise FileNotFoundError(f"{run_dir} has no checkpoint; delete the directory and run again")
    ood = _ood_run(base, final / "policy", setup, run_dir / "ood", log, f"seed {seed} {arm.name}: out-of-domain eval")
    return _arm_result(arm.name, seed, run_dir, summary, ood, _warm_ood(warm))


def _ood_run(base: list[str], policy: Path, setup: RealSetup, run_dir: Path, log: Callable[[str], None],
             label: str) -> dict[str, Any]:
    """The policy in ``policy`` played on the out-of-domain list (``valid_unseen``): a ``train.steps=0`` run whose
    ``summary["before"]`` is that evaluation."""
    return _run([*base, "train.mode=outcome_only", "reward_model.kind=model", f"policy.model={policy}",
                 "train.warm_start_sft_steps=0", "train.warm_start_listwise_steps=0", "reward_model.warm_start_steps=0",
                 "reward_model.probe_episodes=0", "train.probe_episodes=0", "train.steps=0",
                 *_split(setup, "valid_unseen")], run_dir, log, label)


def _warm_ood(warm_checkpoint: Path) -> list[int] | None:
    """The out-of-domain outcomes of the seed's warm start (``warm-start/ood``), when that evaluation has run."""
    path = warm_checkpoint.parent.parent / "ood" / "summary.json"
    return (json.loads(path.read_text()).get("before") or {}).get("outcomes") if path.is_file() else None


def _arm_result(arm: str, seed: int, run_dir: Path, summary: dict[str, Any], ood: dict[str, Any],
                warm_ood: list[int] | None = None) -> dict[str, Any]:
    """One (arm, seed) result from its run's summary and its out-of-domain evaluation's summary (and the seed's
    warm start's out-of-domain outcomes, when known)."""
    probe = summary.get("rm_probe_after") or {}
    return {"arm": arm, "seed": seed,
            "splits": {"in_domain": episode_outcomes(summary.get("after"), f"{run_dir}/summary.json['after']"),
                       "ood": episode_outcomes(ood.get("before"), f"{run_dir / 'ood'}/summary.json['before']")},
            "rm_balanced_accuracy": probe.get("balanced_accuracy"), "curve": _curve(run_dir),
            "heldout_curve": _heldout_curve(run_dir, summary),
            "warm_start_in_domain": (summary.get("before") or {}).get("success_rate"),
            "warm_start_outcomes": (summary.get("before") or {}).get("outcomes"), "warm_start_ood_outcomes": warm_ood,
            "machine": summary.get("machine")}


def machines_note(results: Sequence[dict[str, Any]]) -> str:
    """Which kind of machine computed each seed's runs (a seeded run's figures depend on the CPU: ``summary.json``'s
    ``machine``; runs made before it was recorded are "not recorded"), e.g. ``"Runs computed on: AMD EPYC ...: seeds
    0, 1 (4 runs); not recorded: seed 2 (2 runs)."``"""
    by_machine: dict[str, list[int]] = {}
    for result in results:
        by_machine.setdefault(result.get("machine") or "not recorded", []).append(result["seed"])
    parts = [f"{machine}: seed{'s' if len(set(seeds)) > 1 else ''} {', '.join(map(str, sorted(set(seeds))))} "
             f"({len(seeds)} run{'s' if len(seeds) > 1 else ''})" for machine, seeds in by_machine.items()]
    return f"Runs computed on: {'; '.join(parts)}." if parts else ""


def with_warm_start(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``results`` plus one ``warm_start`` result per seed: the in-domain outcomes of the seed's shared warm start,
    which every arm's run evaluated before training (``summary["before"]``) on the same seeded episodes as after,
    and its out-of-domain outcomes where ``warm-start/ood`` was played.

    Paired against an arm it is that arm's gain over its own start (gate A: does RL move the policy at all). Every
    arm of a seed must report the same warm-start outcomes (they start from one checkpoint and play the same
    seeded episodes); a seed whose arms disagree raises, naming them.
    """
    by_seed: dict[int, tuple[str, dict[str, list[int]]]] = {}
    for result in results:
        if result.get("warm_start_outcomes") is None:
            continue
        splits = {"in_domain": list(result["warm_start_outcomes"])}
        if result.get("warm_start_ood_outcomes") is not None:
            splits["ood"] = list(result["warm_start_ood_outcomes"])
        seen = by_seed.setdefault(result["seed"], (result["arm"], splits))
        if seen[1] != splits:
            raise ValueError(f"seed {result['seed']}: arms {seen[0]!r} and {result['arm']!r} report different "
                             "warm-start outcomes; they must start from the seed's one warm start (delete the seed's "
                             "directory and run it again)")
    warm = [{"arm": WARM_START, "seed": seed, "splits": splits, "rm_balanced_accuracy": None, "curve": []}
            for seed, (_, splits) in sorted(by_seed.items())]
    return [*warm, *results]


def finished_real_results(arms: Sequence[Arm], seeds: Sequence[int], out: str | Path
                          ) -> tuple[list[dict[str, Any]], list[tuple[str, int]]]:
    """The results of every (arm, seed) whose training and out-of-domain evaluation have finished, running nothing;
    and the (arm, seed) pairs that have not (yet)."""
    results, unfinished = [], []
    for seed in seeds:
        for arm in arms:
            run_dir = Path(out) / f"seed-{seed}" / f"arm-{arm.name}"
            paths = run_dir / "summary.json", run_dir / "ood" / "summary.json"
            if all(path.is_file() for path in paths):
                summary, ood = (json.loads(path.read_text()) for path in paths)
                warm = Path(out) / f"seed-{seed}" / "warm-start" / "checkpoints" / "step-000000"
                results.append(_arm_result(arm.name, seed, run_dir, summary, ood, _warm_ood(warm)))
            else:
                unfinished.append((arm.name, seed))
    return results, unfinished


def run_real(arms: Sequence[Arm], seeds: Sequence[int], setup: RealSetup, out: str | Path,
             log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """For each seed: one shared warm start, then every arm trained from it and evaluated (see the module doc)."""
    from rla_train.cotrainer.checkpoint import list_checkpoints, verify_checkpoint

    results = []
    for seed in seeds:
        seed_dir = Path(out) / f"seed-{seed}"
        warm_dir = seed_dir / "warm-start"
        _run([*setup.overrides, f"train.seed={seed}", "train.mode=policy+reward", "train.steps=0",
              "reward_model.probe_episodes=0", "train.probe_episodes=0", *_split(setup, "valid_seen")],
             warm_dir, log, f"seed {seed}: shared warm start")
        checkpoints = dict(list_checkpoints(warm_dir))
        if 0 not in checkpoints:
            raise FileNotFoundError(f"{warm_dir} has no step-0 checkpoint; delete it and run again")
        verify_checkpoint(checkpoints[0])  # every arm starts from it: a corrupt one fails here, naming the file
        _ood_run([*setup.overrides, f"train.seed={seed}"], checkpoints[0] / "policy", setup, warm_dir / "ood", log,
                 f"seed {seed}: the warm start's out-of-domain eval")
        for arm in arms:
            results.append(run_real_arm(arm, seed, setup, seed_dir, checkpoints[0], log))
    return results
