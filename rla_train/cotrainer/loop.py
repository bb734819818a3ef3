"""The co-training loop: policy, reward model and environment improving each other (RLAnything), on TRL.

One training step, top to bottom (:func:`train_step`):

1. draw ``tasks_per_step`` tasks from the adaptive pool;
2. play ``group_size`` rollouts of each (one GRPO group per task) with the rollout engine;
3. the reward model judges every step ``m`` times (modes that use it);
4. step rewards and advantages (:mod:`rla_train.signals.samples`, maths in :mod:`rla_train.signals.rewards`);
5. one policy update with TRL's GRPO loss, optimizer and scheduler (:class:`~rla_train.cotrainer.policy_update.SampleTrainer`);
6. reward-model updates on the consistency reward (modes that train it);
7. the groups' outcomes go to the pool, which rewrites tasks that are too hard or too easy when a round is due,
   guided by the reward model's failure diagnoses (the full method).

Every step's metrics say whether learning can happen: how far the update moved the policy (``policy_choice_kl``,
``policy_chosen_prob_change*``, ``policy_clip_fraction``) and how right the votes it trained on were against the
family's step-label oracle (``judge_vote_balanced_accuracy``, ``judge_verdict_balanced_accuracy``;
:mod:`rla_train.cotrainer.judge_metrics`).

:func:`train` runs the warm start, the steps, held-out evaluations before and after, logs, and atomic
checkpoints from which ``--resume`` continues exactly.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from collections import deque
from contextlib import ExitStack, nullcontext
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import numpy as np

from rla_envs.core.files import atomic_write_json
from rla_envs.core.trajectory import Trajectory
from rla_envs.curriculum.pool import TaskPool
from rla_train.config import CONFIG_FILENAME, MODES, ConfigError, TrainConfig
from rla_train.config.preflight import check_env_options
from rla_train.cotrainer.checkpoint import (CorruptCheckpoint, apply_rng, capture_rng, latest_checkpoint, load_meta,
                                           load_states, restore_rng, save_checkpoint)
from rla_train.cotrainer.components import build_components
from rla_train.cpu_kernels import cpu_model
from rla_train.cotrainer.distributed import ONE_PROCESS, Ranks, merge_rank_metrics
from rla_train.cotrainer.lora import load_saved_weights
from rla_train.cotrainer.judge_metrics import (extend_probe, judge_step_metrics, judge_summary, load_probe_extension,
                                               oracle_labels, record_step)
from rla_train.cotrainer.play_setup import env_spec, play_heldout
from rla_train.cotrainer.plots import plot_run
from rla_train.cotrainer.run_dir import SCRATCH_DIRS, RunDirError, claim_run_dir
from rla_train.cotrainer.run_log import RunLog
from rla_train.cotrainer.trackers import close_trackers, log_evaluation, log_summary, open_trackers
from rla_train.reward_model.label_data import warm_start_data
from rla_train.reward_model.warm_start import warm_start_reward_model
from rla_train.signals.metrics import outcome_accuracy, paired_improvement, success_summary
from rla_train.signals.rewards import LABELLED_OBJECTIVES, outcome_value
from rla_train.signals.samples import (RewardSpec, advantage_change_fraction, policy_samples, reward_model_samples,
                                       step_rewards)
from rla_train.cotrainer.demonstrations import expert_demonstrations
from rla_train.cotrainer.warm_start import choice_sft, sft_warm_start

__all__ = ["train", "train_step", "evaluate", "reward_spec", "pool_funnel", "TIMING_PREFIX"]


def evaluate(engine, tasks, *, desc: str = "held-out") -> dict[str, Any]:
    """Success rate on ``tasks`` (one seeded episode each) with its 95% Wilson interval, mean steps and outcomes.

    The engine's sampling stream restarts at every evaluation, so the result depends on the weights alone: two
    checkpoints (or two ablation arms) are compared on the same tasks with the same random numbers, and
    ``outcomes`` (1/0 per episode, in task order) pairs them episode by episode.
    """
    episodes = play_heldout(engine, tasks, desc=desc)
    return {**success_summary([e.won for e in episodes], [e.num_steps for e in episodes]),
            "outcomes": [int(bool(e.won)) for e in episodes]}


def _paired_tests(history: dict[str, Any]) -> dict[str, dict[str, float]]:
    """After vs before co-training on the same seeded episodes (held-out, probe): exact one-sided McNemar each."""
    tests = {}
    for name, before, after in (("heldout_paired", "before", "after"), ("probe_paired", "probe_before", "probe_after")):
        if history.get(before) and history.get(after):
            tests[name] = paired_improvement(history[before]["outcomes"], history[after]["outcomes"])
    return tests


def _scalars(prefix: str, result: dict[str, Any]) -> dict[str, float]:
    """The numeric entries of an evaluation result, prefixed, for metrics.jsonl."""
    return {f"{prefix}{k}": float(v) for k, v in result.items() if isinstance(v, (int, float))}


def _phase(progress: bool, message: str) -> None:
    """One line saying which phase of the run starts (beside the progress bars, on stderr)."""
    if progress:  # tqdm.write clears the live bars' line first, so every phase line starts a line of its own; in a
        from tqdm.auto import tqdm  # log file (no terminal) a newline ends the bar's line too, so grep '^\[rla\]' finds it

        tqdm.write(("" if sys.stderr.isatty() else "\n") + f"[rla] {message}", file=sys.stderr)


def _evaluations(parts, label: str, progress: bool = False) -> dict[str, dict[str, Any]]:
    """Held-out success, training success on the fixed probe, and the reward model's accuracy on its probe."""
    what = [f"{len(parts.eval_tasks)} held-out episodes"]
    if parts.probe_engine is not None:
        what.append(f"{len(parts.probe_tasks)} training-game probe episodes")
    if parts.rm_probe is not None and parts.reward_model is not None:
        what.append("the reward model's labelled probe")
    _phase(progress, f"evaluating {label}: {', '.join(what)}")
    results = {"heldout": evaluate(parts.eval_engine, parts.eval_tasks, desc=f"held-out {label}")}
    if parts.probe_engine is not None:
        results["probe"] = evaluate(parts.probe_engine, parts.probe_tasks, desc=f"training-game probe {label}")
    if parts.rm_probe is not None and parts.reward_model is not None:
        results["rm_probe"] = parts.rm_probe(parts.reward_model)
    return results


def reward_spec(config: TrainConfig):
    """How this run forms step rewards: the mode's parts, λ, the outcome encoding and the policy's group filter."""
    mode = MODES[config.train.mode]
    policy = config.policy
    return RewardSpec(use_outcome=mode.outcome, use_judgments=mode.reward_model,
                      lam=config.reward_model.step_reward_weight, outcome_encoding=config.reward_model.outcome_encoding,
                      group_filter=policy.group_filter, advantage=mode.advantage, gamma=policy.gigpo_gamma,
                      step_advantage_weight=policy.gigpo_step_advantage_weight, gigpo_norm=policy.gigpo_mode)


TIMING_PREFIX = "seconds_"
"""Metrics named so (and ``step_seconds``, ``episodes_per_second``) are wall times: they differ between equal runs."""


class _PhaseClock:
    """Wall seconds of a step's phases, as ``seconds_<phase>`` metrics (a profile of every step, in metrics.jsonl)."""

    def __init__(self, started: float) -> None:
        self._last = started
        self.seconds: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        """The time since the previous lap was spent in ``phase``."""
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._last
        self._last = now

    def split(self, phase: str, **parts: float) -> None:
        """Name the parts of ``phase`` measured elsewhere; what is left of it becomes ``<phase>_other``."""
        total = self.seconds.pop(phase, 0.0)
        for name, seconds in parts.items():
            self.seconds[f"{phase}_{name}"] = seconds
        self.seconds[f"{phase}_other"] = max(0.0, total - sum(parts.values()))

    def metrics(self) -> dict[str, float]:
        return {f"{TIMING_PREFIX}{phase}": seconds for phase, seconds in self.seconds.items()}


def train_step(config: TrainConfig, parts, ranks: Ranks = ONE_PROCESS, played: list | None = None) -> dict[str, float]:
    """One step of the loop (see the module docstring); returns its metrics (on rank 0; other ranks get ``{}``).

    ``played``, when given, receives the step's groups (every rank's, on rank 0): the trackers' trajectory table.

    With several ranks (:mod:`rla_train.cotrainer.distributed`) rank 0 draws ``tasks_per_step`` tasks per rank,
    each rank plays, judges and updates on its share (the updates all-reduce gradients), and rank 0 gets every
    rank's groups for the pool and the metrics.
    """
    mode = MODES[config.train.mode]
    started = time.perf_counter()
    clock = _PhaseClock(started)
    draw = config.rollout.tasks_per_step * ranks.world_size
    tasks = ranks.scatter(parts.feeder.draw(draw) if ranks.is_main else None)                   # 1
    engine_before = dataclasses.replace(parts.engine.stats)
    episodes = parts.engine.run(tasks, group_size=config.rollout.group_size)                     # 2
    clock.lap("rollout")
    size = config.rollout.group_size
    groups = [episodes[g * size:(g + 1) * size] for g in range(len(tasks))]
    local: dict[str, float] = {}
    generations = {}
    if mode.reward_model:                                                                         # 3
        report = parts.reward_model.judge(None, episodes)
        generations = {id(e): g for e, g in zip(episodes, report.generations)}
        local["judge_unparseable_fraction"] = report.unparseable_fraction
        clock.lap("judge")
    spec = reward_spec(config)
    samples, stats = policy_samples(groups, spec)                                                # 4
    policy = parts.policy_trainer.update(samples)                                                 # 5
    clock.lap("policy_update")
    local.update({f"policy_{k}": v for k, v in policy.items() if not k.startswith("trl/")})
    if parts.rm_trainer is not None:                                                              # 6
        objective = config.reward_model.objective
        labels = ({id(e): oracle_labels(e, config.reward_model.label_rule) for group in groups for e in group
                   if e.error is None}
                  if objective in LABELLED_OBJECTIVES else None)  # kept on the episodes: the step's metrics reuse them
        rm_samples, rm_stats = reward_model_samples(groups, generations, spec, low=config.reward_model.task_filter_low,
                                                    high=config.reward_model.task_filter_high, objective=objective,
                                                    labels=labels)
        if config.reward_model.updates_per_step:  # 0: judged with, not trained
            # one call: every pass's clipped ratio is against the judge that gave the votes
            rm = parts.rm_trainer.update(rm_samples, passes=config.reward_model.updates_per_step)
            local.update({f"rm_{k}": v for k, v in rm.items() if not k.startswith("trl/")})
        local["rm_judgments"] = rm_stats["judgments"]
        local["rm_groups_filtered"] = rm_stats["groups_filtered"]
        clock.lap("rm_update")
    engine = parts.engine.stats  # where the rollouts' time went: the policy's model, the envs, the engine itself
    clock.split("rollout", generate=engine.generate_seconds - engine_before.generate_seconds,
                env=engine.env_seconds - engine_before.env_seconds)
    local.update(clock.metrics())  # this rank's phases
    local.update(zero_advantage_fraction=stats["zero_advantage_fraction"], groups_filtered=stats["groups_filtered"])
    local.update({k: v for k, v in stats.items() if k.endswith("_fraction") and k.startswith("gigpo_")})
    gathered = ranks.gather((tasks, groups, local))
    if not ranks.is_main:
        return {}
    tasks = [task for rank_tasks, _, _ in gathered for task in rank_tasks]
    groups = [group for _, rank_groups, _ in gathered for group in rank_groups]
    if played is not None:
        played[:] = groups
    clock = _PhaseClock(time.perf_counter())  # rank 0's phases from here on
    metrics = {**merge_rank_metrics([rank_metrics for _, _, rank_metrics in gathered]),
               **_episode_metrics(groups, spec, mode, config.reward_model.label_rule)}
    clock.lap("step_metrics")
    usable_groups = [[e for e in group if e.error is None] for group in groups]
    for task, usable in zip(tasks, usable_groups):                                                # 7
        if usable:
            parts.feeder.report_group(task.id, [float(e.won) for e in usable], usable)
    if mode.adapt_env:
        funnel = {"triggered": 0, "generated": 0, "valid": 0, "measured": 0, "accepted": 0}
        if parts.feeder.adapt_due():
            adapt = parts.feeder.adapt()
            parts.feeder.pool.count("triggered", len(adapt.slots))
            funnel.update(adapt.funnel, triggered=len(adapt.slots))
        metrics.update({f"pool_{k}": float(v) for k, v in funnel.items()})
        metrics["pool_accepted_total"] = float(parts.feeder.pool.counters.get("accepted", 0))
        # the share of this step's training episodes played on rewritten tasks: how far the env arm reaches
        pool = parts.feeder.pool  # counted as the pool counts them: usable episodes, tasks that are not their root
        on_rewrites = sum(len(usable) for task, usable in zip(tasks, usable_groups) if pool.root_of(task.id) != task.id)
        metrics["pool_rewritten_episode_fraction"] = on_rewrites / max(1, sum(map(len, usable_groups)))
    clock.lap("pool")
    metrics.update(clock.metrics())
    seconds = time.perf_counter() - started
    episodes = [e for group in groups for e in group]
    metrics.update({"pool_tasks": float(len(parts.feeder.pool.active_tasks())),
                    "episodes_per_second": len(episodes) / seconds, "step_seconds": seconds})
    if ranks.distributed:
        metrics["ranks"] = float(ranks.world_size)
    return metrics


def _episode_metrics(groups, spec: RewardSpec, mode, label_rule: str = "no_regress") -> dict[str, float]:
    """The step's metrics that depend on the played groups alone (every rank's, on rank 0); the judge's accuracy is
    measured against the family's step labels under ``label_rule``."""
    episodes = [e for group in groups for e in group]
    metrics: dict[str, float] = {}
    if mode.reward_model:
        votes = [v for e in episodes for step in (e.judgments or []) for v in step]
        if votes:
            metrics["judge_good_vote_fraction"] = float(np.mean([v == 1 for v in votes]))
        accuracy = outcome_accuracy([e.judgments for e in episodes], [e.won for e in episodes])
        if accuracy is not None:
            metrics["rm_outcome_accuracy"] = accuracy
        metrics.update(judge_step_metrics(episodes, label_rule))  # against the family's oracle, where it has one
    if mode.reward_model or mode.advantage == "gigpo":
        # how often the judge (or GiGPO's step-level term) changed the signal of GRPO on the outcome (0 = nothing)
        metrics["policy_advantage_changed_fraction"] = advantage_change_fraction(groups, spec)
    rewards = [step_rewards(e, spec) for e in episodes if e.error is None and e.num_steps]
    if rewards:
        metrics["integrated_reward_mean"] = float(np.mean(np.concatenate(rewards)))
    metrics["outcome_reward_mean"] = float(np.mean([outcome_value(e.won) for e in episodes]))
    metrics.update({
        "success_rate": float(np.mean([bool(e.won) for e in episodes])), "episodes": float(len(episodes)),
        "mean_steps": float(np.mean([e.num_steps for e in episodes])),
        "zero_variance_fraction": float(np.mean([len({e.won for e in g}) == 1 for g in groups])),
        "env_errors": float(sum(e.error is not None for e in episodes)),
    })
    return metrics


def pool_funnel(pool) -> dict[str, int]:
    """The pool's rewrites over the run (triggered -> generated -> valid -> measured -> accepted) and how many of its
    training episodes were played on rewritten tasks."""
    counters = pool.counters
    return {"triggered": int(counters.get("triggered", 0)), "generated": int(counters.get("generated", 0)),
            "valid": int(counters.get("valid", 0)), "measured": int(counters.get("proposed", 0)),
            "accepted": int(counters.get("accepted", 0)), "training_episodes": int(pool.episodes),
            "episodes_on_rewrites": int(pool.rewritten_episodes())}


# ----------------------------------------------------------------------------------------------- state
def _state(parts, step: int, history: dict) -> dict[str, Any]:
    """Everything besides models, pool and RNG that a resumed run needs to continue exactly."""
    feeder = parts.feeder
    return {"step": step, "history": history,
            "policy_trainer": parts.policy_trainer.state_dicts(),
            "rm_trainer": parts.rm_trainer.state_dicts() if parts.rm_trainer is not None else None,
            "engine_turns": parts.engine.turns, "eval_engine_turns": parts.eval_engine.turns,
            "judge": parts.reward_model.state_dict() if hasattr(parts.reward_model, "state_dict") else None,
            "feeder": {"episodes_since_adapt": feeder.episodes_since_adapt,
                       "validation_turns": feeder.measure.stream.turns,
                       "failures": {k: [t.to_dict() for t in v] for k, v in feeder.failures.items()}}}


def _rank_state(parts) -> dict[str, Any]:
    """What differs between data-parallel ranks and a resume must give back to each: its engine's turn counter,
    its judge's random stream and its RNG states."""
    return {"engine_turns": parts.engine.turns, "rng": capture_rng(),
            "judge": parts.reward_model.state_dict() if hasattr(parts.reward_model, "state_dict") else None}


def _save(run_dir: Path, config: TrainConfig, parts, step: int, history: dict, ranks: Ranks = ONE_PROCESS) -> None:
    """Checkpoint ``step`` (called on every rank: rank 0 writes it with every rank's own state, the others wait)."""
    rank_states = ranks.gather(_rank_state(parts)) if ranks.distributed else None
    if ranks.is_main:
        models = {"policy": (parts.policy_model, parts.policy_tokenizer)}
        # the judge whenever it is a model of its own, trained or not: a frozen judge was warm-started in this run
        # (its weights are nowhere else), and a resume would otherwise judge with a freshly initialised one
        if parts.rm_model is not None and parts.rm_model is not parts.policy_model:
            models["reward_model"] = (parts.rm_model, parts.rm_tokenizer)
        states = _state(parts, step, history)
        if rank_states is not None:
            states["ranks"] = rank_states
        save_checkpoint(run_dir, step, models=models, states=states, pool=parts.feeder.pool,
                        meta={"step": step, "before": history.get("before")}, keep_last=config.output.keep_last)
    ranks.barrier()  # no rank runs ahead of a checkpoint it might have to resume from


def _restore(checkpoint: Path, parts, ranks: Ranks = ONE_PROCESS) -> tuple[int, dict]:
    """Load a checkpoint's weights and states into freshly built parts; returns (step, history).

    Every rank reads the same checkpoint; a data-parallel rank then takes back its own engine counter, judge
    stream and RNG states (a checkpoint of another number of ranks continues, but not exactly: a warning says so).
    """
    states = load_states(checkpoint)
    load_saved_weights(parts.policy_model, checkpoint / "policy")  # the adapter alone for a LoRA run
    if (checkpoint / "reward_model").is_dir() and parts.rm_model is not None:
        load_saved_weights(parts.rm_model, checkpoint / "reward_model")
    parts.policy_trainer.load_state_dicts(states["policy_trainer"])
    if parts.rm_trainer is not None and states["rm_trainer"] is not None:
        parts.rm_trainer.load_state_dicts(states["rm_trainer"])
    parts.engine.turns, parts.eval_engine.turns = states["engine_turns"], states["eval_engine_turns"]
    if states.get("judge") is not None:  # a judge with its own random stream (the noisy oracle)
        parts.reward_model.load_state_dict(states["judge"])
    feeder = parts.feeder
    feeder.pool = TaskPool.load(checkpoint / "pool.json")
    feeder.episodes_since_adapt = states["feeder"]["episodes_since_adapt"]
    # a checkpoint from before the validation rollouts had their own stream: they start it (not exactly as then)
    feeder.measure.stream.turns = states["feeder"].get("validation_turns", 0)
    feeder.failures = {k: deque([Trajectory.from_dict(t) for t in v], maxlen=feeder.keep_failures)
                       for k, v in states["feeder"]["failures"].items()}
    restore_rng(checkpoint)
    saved_ranks = states.get("ranks") or [None]
    if len(saved_ranks) != ranks.world_size:
        warnings.warn(f"{checkpoint} was saved by {len(saved_ranks)} rank(s) and resumes on {ranks.world_size}: the "
                      "run continues, but not exactly as it would have", RuntimeWarning, stacklevel=2)
    elif ranks.distributed:
        mine = saved_ranks[ranks.rank]
        parts.engine.turns = mine["engine_turns"]
        if mine["judge"] is not None:
            parts.reward_model.load_state_dict(mine["judge"])
        apply_rng(mine["rng"])
    return int(states["step"]), states["history"]


# ----------------------------------------------------------------------------------------------- run
def _warm_start(config: TrainConfig, parts, run_dir: Path, progress: bool = False) -> dict[str, float]:
    """Supervised warm start on the searching expert's demonstrations (fresh runs only).

    The expert plays the training env's own tasks (``env.options`` + ``env.train_options``: the same task
    types and task set the policy then trains on). TRL's SFT first; then, for a choice policy and
    ``train.warm_start_listwise_steps > 0``, listwise training on the same states (:func:`choice_sft`).
    Both are bounded by steps, never by wall time, so a seed gives the same starting weights on any machine.
    """
    tasks = parts.engine.env.tasks()
    _phase(progress, f"warm start: the expert plays {config.train.warm_start_demos} demonstrations")
    demos = expert_demonstrations("train", n_tasks=config.train.warm_start_demos, seed=config.train.seed,
                                  agent=parts.agent, tasks=tasks, max_steps=max(50, config.env.max_steps))
    history: list = []
    _phase(progress, f"warm start: SFT, {config.train.warm_start_sft_steps} steps on {len(demos)} examples")
    sft_warm_start(parts.policy_model, parts.policy_tokenizer, demos, steps=config.train.warm_start_sft_steps,
                   lr=config.train.warm_start_learning_rate, output_dir=run_dir / "warm-start",
                   seed=config.train.seed, log_history=history, lr_scheduler_type="constant", progress=progress)
    losses = [h["loss"] for h in history if "loss" in h]
    summary = {"warm_start_examples": float(len(demos)), "warm_start_final_loss": float(losses[-1]) if losses else 0.0}
    if config.policy.action_mode == "choice" and config.train.warm_start_listwise_steps > 0:
        listwise: list = []
        _phase(progress, f"warm start: listwise, {config.train.warm_start_listwise_steps} steps")
        choice_sft(parts.policy_model, parts.policy_tokenizer, demos, steps=config.train.warm_start_listwise_steps,
                   lr=config.train.warm_start_learning_rate, seed=config.train.seed, log_history=listwise,
                   progress=progress)
        tail = listwise[-50:]
        summary.update({"warm_start_listwise_steps": float(len(listwise)),
                        "warm_start_listwise_loss": float(sum(h["loss"] for h in tail) / len(tail)) if tail else 0.0,
                        "warm_start_listwise_accuracy": float(sum(h["choice_accuracy"] for h in tail) / len(tail))
                        if tail else 0.0})
    return summary


def _warm_start_reward_model(config: TrainConfig, parts, progress: bool = False) -> dict[str, Any]:
    """Teach the reward model the planner's step labels on the training games' steps (fresh runs only).

    Half of ``reward_model.warm_start_episodes`` are the searching expert's, half the (warm-started) policy's
    own, so both good and bad steps occur; bad steps are all kept and good ones thinned to two per bad one.
    """
    section = config.reward_model
    _phase(progress, f"reward-model warm start: the planner labels the steps of {section.warm_start_episodes} episodes, "
                     f"then {section.warm_start_steps} steps")
    dataset, counts = warm_start_data(parts.engine.env.tasks(), episodes=section.warm_start_episodes,
                                      policy=parts.policy_backend, agent=parts.agent, seed=config.train.seed,
                                      max_steps=config.env.max_steps, style=section.prompt_style,
                                      rule=section.label_rule)
    summary = warm_start_reward_model(parts.reward_model, dataset, steps=section.warm_start_steps,
                                      lr=section.warm_start_learning_rate, schedule=section.warm_start_schedule,
                                      seed=config.train.seed, progress=progress)
    return {**{k: v for k, v in summary.items() if k != "seconds"}, "counts": counts}


def train(config: TrainConfig, *, progress: bool = True, overwrite: bool = False,
          ranks: Ranks | None = None) -> dict[str, Any] | None:
    """Run the whole co-training job the config describes; returns the summary (also in ``summary.json``).

    The run holds its directory (``output.dir``, or ``train.resume_from`` when resuming) for its whole life
    (:func:`rla_train.cotrainer.run_dir.claim_run_dir`). A fresh run needs an empty directory, or ``overwrite`` to clear
    the earlier run's files; a resumed run continues from its newest intact checkpoint.

    Under a data-parallel launch (``ranks``, default :meth:`Ranks.from_environment`; see
    :mod:`rla_train.cotrainer.distributed`) every rank calls this: rank 0 holds the directory, evaluates, logs,
    writes the checkpoints and returns the summary; the other ranks train beside it, show nothing, and return None.

    Raises (before any work):
        ConfigError: a model name that is neither ``tiny``, a model directory nor a hub id; env options the env
            rejects; ``train.steps`` below the step the resumed checkpoint reached.
        RunDirError: the directory is held by another run, holds an earlier run (fresh, without ``overwrite``),
            or has no checkpoint to resume from.
        CorruptCheckpoint: resuming, but none of the run's checkpoints is intact.
    """
    ranks = Ranks.from_environment() if ranks is None else ranks
    resume = config.train.resume_from is not None
    run_dir = Path(config.train.resume_from or config.output.dir)
    _check_inputs(config)
    with ExitStack() as held:
        problem = checkpoint = None
        if ranks.is_main:
            try:
                held.enter_context(claim_run_dir(run_dir, resume=resume, overwrite=overwrite))
                checkpoint = _resume_point(config, run_dir) if resume else None
            except (ConfigError, RunDirError, CorruptCheckpoint) as error:
                problem = error
        problem, checkpoint = ranks.broadcast((problem, checkpoint))  # every rank stops, or starts from the same point
        if problem is not None:
            raise problem
        return _run(config, run_dir, checkpoint, progress and ranks.is_main, ranks)


def _check_inputs(config: TrainConfig) -> None:
    """The checks of :func:`train` that need no run directory: model names and both envs' options."""
    config.check_models()
    for field in ("train_options", "eval_options"):
        spec = env_spec(config, getattr(config.env, field))
        check_env_options(spec.env_id, spec.kwargs, f"env.{field} (with env.options)")


def _resume_point(config: TrainConfig, run_dir: Path) -> Path:
    """The checkpoint a resumed run continues from: the newest intact one, at or below ``train.steps``."""
    checkpoint = latest_checkpoint(run_dir)  # skips corrupt ones with a warning; raises if none is intact
    if checkpoint is None:
        raise RunDirError(f"--resume {run_dir}: the run saved no checkpoint to continue from (it stopped before step "
                          f"0 was saved); start it again with --overwrite")
    done = int(load_meta(checkpoint)["step"])
    if done > config.train.steps:
        raise ConfigError(f"train.steps={config.train.steps}, but the run in {run_dir} has done {done} steps "
                          f"({checkpoint}); set train.steps >= {done} (= {done} re-evaluates it)")
    return checkpoint


def _run(config: TrainConfig, run_dir: Path, checkpoint: Path | None, progress: bool,
         ranks: Ranks = ONE_PROCESS) -> dict[str, Any] | None:
    """The run itself, in a directory :func:`train` holds: from ``checkpoint`` when resuming, else from scratch."""
    import torch
    from transformers import set_seed

    if ranks.is_main:
        config.save(run_dir / CONFIG_FILENAME)
    world = f", {ranks.world_size} data-parallel ranks" if ranks.distributed else ""
    _phase(progress, f"run {run_dir} ({'resuming from ' + checkpoint.name if checkpoint else 'fresh'}, mode "
                     f"{config.train.mode}{world}): building the policy, the reward model and the envs")
    trackers = _open_trackers(config, run_dir, checkpoint) if ranks.is_main else []  # a missing library fails here
    set_seed(config.train.seed)  # the same initial weights on every rank
    try:
        parts = build_components(config, run_dir, progress=progress, rank=ranks.rank)
    except BaseException:
        close_trackers(trackers, failed=True)
        raise
    if ranks.rank:
        set_seed(config.train.seed + ranks.rank)  # each rank samples its own numbers
    played: list = []  # the last step's groups, for the trackers' trajectory table
    try:
        if checkpoint is not None:
            step, history = _restore(checkpoint, parts, ranks)
            if ranks.is_main:  # the policy's probe steps the fresh run played, as many as it recorded
                load_probe_extension(parts.rm_probe, run_dir, expected=history.get("rm_probe_policy_steps", 0))
            parts.policy_trainer.sync_generation_weights()  # a vLLM engine still holds the initial weights
        else:
            step, history = 0, {}
            _warm_starts(config, parts, run_dir, history, progress, ranks)
            if ranks.is_main:
                results = _evaluations(parts, "before co-training", progress)
                _record(history, "before", results)
                _track(trackers, 0, results)
            _save(run_dir, config, parts, 0, history, ranks)
        if step < config.train.steps:  # train.steps=0: warm start and evaluate only
            _phase(progress, f"co-training steps {step + 1}-{config.train.steps}: {config.rollout.tasks_per_step} tasks x "
                             f"{config.rollout.group_size} rollouts per step{' per rank' if ranks.distributed else ''}")
            _loop(config, parts, run_dir, step, history, progress, ranks, trackers, played)
            step = config.train.steps
        if config.train.steps > 0:
            if ranks.is_main:
                results = _evaluations(parts, "after co-training", progress)
                _record(history, "after", results)
                _track(trackers, step, results, played)
            _save(run_dir, config, parts, step, history, ranks)
    except BaseException:
        close_trackers(trackers, failed=True)
        raise
    finally:
        parts.close()
        if ranks.is_main:
            _remove_empty_scratch(run_dir)
    if not ranks.is_main:
        return None
    if step:
        plot_run(run_dir, run_dir / "learning_curves.png", pool=parts.feeder.pool, summary=history)
    # the machine too: a seeded run's figures depend on the CPU beyond the kernels it pins (rla_train.cpu_kernels)
    summary = {"mode": config.train.mode, "steps": step, "run_dir": str(run_dir), **history,
               "threads": torch.get_num_threads(), "machine": cpu_model()}
    if ranks.distributed:
        summary["ranks"] = ranks.world_size
    if MODES[config.train.mode].adapt_env:
        summary["pool"] = pool_funnel(parts.feeder.pool)
    if (judge := judge_summary(history)) is not None:
        summary["judge_vote_balanced_accuracy"] = judge
    summary.update(_paired_tests(history))
    atomic_write_json(run_dir / "summary.json", summary)
    log_summary(trackers, step, summary)
    close_trackers(trackers)
    return summary


def _open_trackers(config: TrainConfig, run_dir: Path, checkpoint: Path | None) -> list:
    """The trackers ``output.report_to`` names, opened for this run (a resumed one continues its tracker run)."""
    start = int(load_meta(checkpoint)["step"]) if checkpoint is not None else 0
    return open_trackers(config.output.trackers(), run_dir, project=config.output.project,
                         run_name=config.output.run_name or run_dir.name, config=config.to_dict(), start_step=start,
                         resuming=checkpoint is not None)


def _track(trackers, step: int, results: dict[str, dict[str, Any]], played: list | None = None) -> None:
    """An evaluation's scalars (``heldout_success_rate``, ``probe_...``, ``rm_probe_...``) at ``step``, and the
    trajectory table of the step's groups (the first episode of each) when there are any."""
    values = {key: value for name, result in results.items() for key, value in _scalars(f"{name}_", result).items()}
    log_evaluation(trackers, step, values, [group[0] for group in (played or []) if group])


def _warm_starts(config: TrainConfig, parts, run_dir: Path, history: dict, progress: bool, ranks: Ranks) -> None:
    """The policy's and the reward model's warm starts, as the config asks (fresh runs only).

    Every rank runs them (TRL's trainers are data-parallel under the launch); rank 0 evaluates, and its weights are
    then copied to every rank.
    """
    if config.train.warm_start_sft_steps:
        if ranks.is_main:
            _phase(progress, f"evaluating the initial model: {len(parts.eval_tasks)} held-out episodes")
            history["initial"] = evaluate(parts.eval_engine, parts.eval_tasks, desc="held-out initial")
        history["warm_start"] = _warm_start(config, parts, run_dir, progress)
        ranks.broadcast_parameters(parts.policy_model)
        parts.policy_trainer.sync_generation_weights()
    if parts.rm_probe is not None and ranks.is_main and config.reward_model.probe_policy_episodes:
        _phase(progress, "reward-model probe: the policy plays the probe's games, the oracle labels its steps")
        history["rm_probe_policy_steps"] = extend_probe(
            parts.rm_probe, run_dir, parts.policy_backend, parts.agent, seed=config.train.seed,
            max_steps=config.env.max_steps, split=config.family_spec.splits[0],
            episodes=config.reward_model.probe_policy_episodes, rule=config.reward_model.label_rule)
    if config.reward_model.warm_start_steps and parts.rm_model is not None:
        if parts.rm_probe is not None and ranks.is_main:
            history["rm_probe_initial"] = parts.rm_probe(parts.reward_model)
        history["rm_warm_start"] = _warm_start_reward_model(config, parts, progress)
        ranks.broadcast_parameters(parts.rm_model)


def _remove_empty_scratch(run_dir: Path) -> None:
    """TRL's trainers need an ``output_dir`` even when they save nothing there: drop those left empty."""
    for name in SCRATCH_DIRS:
        scratch = run_dir / name
        if scratch.is_dir() and not any(scratch.iterdir()):
            scratch.rmdir()


def _loop(config: TrainConfig, parts, run_dir: Path, step: int, history: dict, progress: bool,
          ranks: Ranks = ONE_PROCESS, trackers: Sequence = (), played: list | None = None) -> None:
    """Training steps ``step + 1 .. train.steps``: metrics logged every step (to ``metrics.jsonl`` and the
    ``trackers``), evaluations and checkpoints as due (logs and evaluations by rank 0 alone); ``played`` holds the
    last step's groups."""
    run_log = (RunLog(run_dir, total_steps=config.train.steps, start_step=step, progress=progress,
                      tensorboard=False, trackers=trackers) if ranks.is_main else nullcontext())
    played = [] if played is None else played
    with run_log as log:
        while step < config.train.steps:
            metrics = train_step(config, parts, ranks, played=played)
            step += 1
            record_step(history, metrics)
            if log is not None:
                evaluated = config.train.eval_every and step % config.train.eval_every == 0 and step < config.train.steps
                if evaluated:
                    for name, result in _evaluations(parts, f"step {step}").items():
                        metrics.update(_scalars(f"{name}_", result))
                log.log(step, metrics)
                if evaluated:
                    _track(trackers, step, {}, played)
            if config.output.checkpoint_every and step % config.output.checkpoint_every == 0:
                _save(run_dir, config, parts, step, history, ranks)


def _record(history: dict, when: str, results: dict[str, dict[str, Any]]) -> None:
    """Store one round of evaluations as ``when`` (held-out), ``probe_<when>`` and ``rm_probe_<when>``."""
    for name, result in results.items():
        history[when if name == "heldout" else f"{name}_{when}"] = result
