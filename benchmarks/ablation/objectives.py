"""The judge's co-training objectives side by side (issue 24 item 5): which one makes the judge more right?

::

    python -m benchmarks.ablation.objectives --warm-starts runs/gate-b/real --seeds 0 1 2 --out runs/objectives
    python -m benchmarks.ablation.objectives --out runs/objectives --arms paper labelled --seeds 1   # one process each
    python -m benchmarks.ablation.objectives --out benchmarks/results/objectives --report-only

Per seed, every arm starts from that seed's warm-started policy (``--warm-starts DIR``: ``DIR/seed-S/warm-start``'s
step-0 checkpoint, as gate B's warm starts are laid out) and warm-starts the same judge (the run's own 144-episode,
300-step warm start under the ``progress`` label rule: the same seed gives every arm the same judge), then co-trains
for the same number of steps at gate B's policy settings. The arms differ only in what trains the judge:

* ``frozen``: ``train.mode=policy``, the judge votes and is never trained (the control: how the judge's accuracy moves
  when only the policy's steps change under it);
* ``paper``: RLAnything's consistency reward (``reward_model.objective=paper``), ``balanced`` (the same with won and
  lost episodes weighted alike), ``labelled`` (agreement with the planner's label of each of the policy's steps:
  privileged), ``labelled_balanced`` (the same with the batch's good and bad steps weighted alike), each at the reward-model learning rate ``--rm-learning-rate`` (1e-3: at the default 1e-4 no objective
  moves the judge measurably in 12 steps, docs/ablation.md).

Measured per run (its ``summary.json`` and ``metrics.jsonl``): the judge's vote balanced accuracy on fixed data before
and after co-training, on the steps the warm-started policy played on the probe's games (``rm_probe_*.policy``) and on
the labelled probe (expert and random-action steps), with the probe's AUC; and on each step's own rollouts (the mean
of the first and of the last three steps; each arm's policy plays its own, so arms differ in the steps judged too).
``--rejudge`` adds the measure that has neither drift: the run's **final** policy plays the probe's games (the same
seeded episodes for every judge), the planner labels its steps, and the warm-started judge (step 0's checkpoint) and
the co-trained one (the last checkpoint) both vote on them (``FINAL_POLICY_FILE`` in the run directory): the judge
before and after co-training on the steps the policy plays now. Per arm and seed the change after - before, per arm against ``frozen`` the
difference of those changes per seed, and over seeds the mean with its 95% t-interval: the seed is the unit.
``--report-only`` tabulates what finished (an unfinished run has no ``summary.json``); the runner skips finished runs,
so an interrupted comparison resumes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.ablation.stats import mean_interval, seed_differences

__all__ = ["ARMS", "MEASURES", "FINAL_POLICY_FILE", "overrides", "replay_config", "rejudge_config", "rejudge", "read_run", "objective_table",
           "format_objectives", "main"]

FINAL_POLICY_FILE = "judged-final-policy-steps.json"
"""What ``--rejudge`` writes in a run directory: both judges' measures on the final policy's probe steps."""

ARMS: dict[str, tuple[str, ...]] = {
    "frozen": ("train.mode=policy",),
    "paper": ("train.mode=policy+reward", "reward_model.objective=paper"),
    "balanced": ("train.mode=policy+reward", "reward_model.objective=balanced"),
    "labelled": ("train.mode=policy+reward", "reward_model.objective=labelled"),
    "labelled_balanced": ("train.mode=policy+reward", "reward_model.objective=labelled_balanced"),
}
"""Each arm's own settings; ``frozen`` is the control every other arm is read against."""

SETTINGS = ("train.warm_start_sft_steps=0", "train.warm_start_listwise_steps=0", "policy.learning_rate=0.001",
            "rollout.tasks_per_step=4", "policy.num_iterations=1", "policy.mini_batches=2",
            "train.eval_episodes=16", "train.probe_episodes=0", "reward_model.label_rule=progress",
            "reward_model.probe_policy_episodes=48", "output.checkpoint_every=0")
"""What every arm shares: gate B's policy settings from a warm-started policy, the judge's probes (48 probe episodes
played by the warm-started policy: ~1,200 of its steps), a short held-out evaluation (the judge is what is measured)."""

MEASURES = {
    "policy_probe": "the warm-started policy's probe steps",
    "labelled_probe": "the labelled probe (expert and random steps)",
    "rollouts": "each step's own rollouts (first 3 -> last 3 steps)",
    "final_policy": "the final policy's probe steps (--rejudge)",
}
"""What each change is measured on (the keys of :func:`read_run`'s ``before`` / ``after``)."""


def overrides(arm: str, seed: int, warm_start: Path, out: Path, *, steps: int,
              rm_learning_rate: float) -> list[str]:
    """The ``--set`` overrides of one arm-seed's ``python -m rla_train.run``."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; the arms are {', '.join(ARMS)}")
    policy = Path(warm_start) / f"seed-{seed}" / "warm-start" / "checkpoints" / "step-000000" / "policy"
    return [f"train.seed={seed}", *ARMS[arm], *SETTINGS, f"train.steps={steps}",
            f"reward_model.learning_rate={rm_learning_rate}", f"policy.model={policy}",
            f"output.dir={Path(out) / f'seed-{seed}' / arm}"]


def _mean_of_steps(values: Sequence[float], first: bool, count: int = 3) -> float:
    chosen = list(values[:count] if first else values[-count:])
    if not chosen:
        raise ValueError("no co-training step recorded judge_vote_balanced_accuracy")
    return sum(chosen) / len(chosen)


def read_run(run_dir: str | Path) -> dict[str, Any] | None:
    """One finished run's measures before and after co-training (None while it has no ``summary.json``)."""
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        return None
    summary = json.loads(summary_path.read_text())
    steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    votes = [float(step["judge_vote_balanced_accuracy"]) for step in steps
             if step.get("judge_vote_balanced_accuracy") is not None]

    def probe(which: str) -> Mapping[str, Any]:
        found = summary.get(f"rm_probe_{which}")
        if not isinstance(found, Mapping) or not isinstance(found.get("policy"), Mapping):
            raise ValueError(f"{summary_path}: no rm_probe_{which} with the policy's steps; the runs need "
                             "reward_model.probe_episodes > 0 and reward_model.probe_policy_episodes > 0")
        return found

    before, after = probe("before"), probe("after")
    measured = {
        "before": {"policy_probe": before["policy"]["vote_balanced_accuracy"],
                   "labelled_probe": before["vote_balanced_accuracy"], "rollouts": _mean_of_steps(votes, True)},
        "after": {"policy_probe": after["policy"]["vote_balanced_accuracy"],
                  "labelled_probe": after["vote_balanced_accuracy"], "rollouts": _mean_of_steps(votes, False)},
        "auc": {"before": before.get("auc"), "after": after.get("auc")},
        "steps": len(steps),
        "policy_probe_steps": {"good": before["policy"].get("good"), "bad": before["policy"].get("bad")},
    }
    if (run_dir / FINAL_POLICY_FILE).is_file():
        judged = json.loads((run_dir / FINAL_POLICY_FILE).read_text())
        for when in ("before", "after"):
            measured[when]["final_policy"] = float(judged[when]["vote_balanced_accuracy"])
        measured["final_policy_steps"] = {"good": judged["after"].get("good"), "bad": judged["after"].get("bad")}
    return measured


def read_runs(out: str | Path) -> dict[str, dict[int, dict[str, Any]]]:
    """``{arm: {seed: read_run(...)}}`` for every finished run under ``out`` (``seed-S/ARM/``)."""
    runs: dict[str, dict[int, dict[str, Any]]] = {}
    for run_dir in sorted(Path(out).glob("seed-*/*")):
        seed_name, arm = run_dir.parent.name, run_dir.name
        if arm not in ARMS or not run_dir.is_dir():
            continue
        measured = read_run(run_dir)
        if measured is not None:
            runs.setdefault(arm, {})[int(seed_name.removeprefix("seed-"))] = measured
    return runs


def objective_table(runs: Mapping[str, Mapping[int, Mapping[str, Any]]]) -> dict[str, Any]:
    """Per arm and measure: each seed's before, after and change, the change over seeds; per arm against ``frozen``:
    the difference of the changes per shared seed and over seeds (95% t-interval, the seed as the unit).

    >>> run = lambda b, a: {"before": {m: b for m in MEASURES}, "after": {m: a for m in MEASURES}}
    >>> table = objective_table({"frozen": {0: run(.7, .6), 1: run(.7, .62)}, "labelled": {0: run(.7, .65),
    ...                          1: run(.7, .69)}})
    >>> [round(v, 2) for v in table["arms"]["labelled"]["policy_probe"]["per_seed"][1].values()]
    [0.7, 0.69, -0.01]
    >>> {s: round(v, 2) for s, v in table["against_frozen"]["labelled"]["policy_probe"]["per_seed"].items()}
    {0: 0.05, 1: 0.07}
    """
    table: dict[str, Any] = {"arms": {}, "against_frozen": {}}
    for arm in [name for name in ARMS if name in runs]:
        table["arms"][arm] = {}
        for measure in MEASURES:
            per_seed = {seed: {"before": run["before"][measure], "after": run["after"][measure],
                               "change": run["after"][measure] - run["before"][measure]}
                        for seed, run in sorted(runs[arm].items()) if measure in run["after"]}
            if not per_seed:
                continue
            table["arms"][arm][measure] = {"per_seed": per_seed,
                                           **mean_interval([cell["change"] for cell in per_seed.values()])}
    control = table["arms"].get("frozen")
    for arm, measures in table["arms"].items():
        if arm == "frozen" or control is None:
            continue
        table["against_frozen"][arm] = {}
        for measure, row in measures.items():
            changes = {seed: cell["change"] for seed, cell in row["per_seed"].items()}
            frozen = {seed: cell["change"] for seed, cell in control.get(measure, {}).get("per_seed", {}).items()}
            difference = seed_differences(frozen, changes)
            if difference["per_seed"]:
                table["against_frozen"][arm][measure] = difference
    return table


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def format_objectives(table: Mapping[str, Any]) -> str:
    """Markdown: before -> after per arm, measure and seed; then each arm's change against the frozen judge's."""
    lines = ["| arm | measured on | per seed: before -> after | change over seeds [95% t-interval] |",
             "|---|---|---|---|"]
    for arm, measures in table["arms"].items():
        for measure, row in measures.items():
            cells = "; ".join(f"{seed}: {cell['before']:.3f} -> {cell['after']:.3f}"
                              for seed, cell in row["per_seed"].items())
            lines.append(f"| {arm} | {MEASURES[measure]} | {cells} | {_signed(row['mean'])} "
                         f"[{_signed(row['ci_low'])}, {_signed(row['ci_high'])}] ({row['n']} seeds) |")
    if table["against_frozen"]:
        lines += ["", "| change - frozen judge's change | measured on | per seed | over seeds [95% t-interval] |",
                  "|---|---|---|---|"]
        for arm, measures in table["against_frozen"].items():
            for measure, row in measures.items():
                per_seed = ", ".join(f"{seed}: {_signed(value)}" for seed, value in row["per_seed"].items())
                lines.append(f"| {arm} | {MEASURES[measure]} | {per_seed} | {_signed(row['mean'])} "
                             f"[{_signed(row['ci_low'])}, {_signed(row['ci_high'])}] ({row['n']} seeds) |")
    return "\n".join(lines)


def _checkpoint(run_dir: Path, step: int, role: str) -> Path:
    path = run_dir / "checkpoints" / f"step-{step:06d}" / role
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is missing: --rejudge needs the run's step-0 and last checkpoints")
    return path


def replay_config(config_path: str | Path, policy: Path, judge: Path, *extra: str):
    """A run's recorded config (``config_path``) with other policy and judge weights, its warm starts and its resume
    off, plus ``extra`` overrides: the same run's settings, to measure those weights with."""
    from rla_train.config import load_config

    overrides = [f"policy.model={policy}", f"reward_model.model={judge}", "train.warm_start_sft_steps=0",
                 "train.warm_start_listwise_steps=0", "reward_model.warm_start_steps=0", "train.resume_from=null", *extra]
    return load_config(config_path, overrides, check_hardware=False)


def rejudge_config(run_dir: str | Path, judge_step: int, *, probe: bool = True):
    """The run's recorded config with its final policy and the judge of checkpoint ``judge_step``, warm starts off
    (``probe``: with the labelled probe, whose games the final policy plays)."""
    from rla_train.config import load_config

    run_dir = Path(run_dir)
    recorded = load_config(run_dir / "config.yaml", check_hardware=False)
    return replay_config(run_dir / "config.yaml", _checkpoint(run_dir, recorded.train.steps, "policy"),
                         _checkpoint(run_dir, judge_step, "reward_model"),
                         *([] if probe else ["reward_model.probe_episodes=0"]))


def rejudge(run_dir: str | Path, *, episodes: int | None = None) -> dict[str, Any]:
    """The warm-started and the co-trained judge on the final policy's probe steps; written to ``FINAL_POLICY_FILE``.

    The run's final policy plays one seeded episode on each of the probe's first ``episodes`` games (default: the run's
    ``reward_model.probe_policy_episodes``), the family's oracle labels the steps (balanced as the probe is), and each
    judge votes on the same steps. Returns ``{"before", "after"}``, each :func:`probe_reward_model`'s measures.
    """
    import tempfile

    from rla_envs.core.files import atomic_write_json
    from rla_train.cotrainer.components import build_components
    from rla_train.cpu_kernels import set_torch_threads
    from rla_train.reward_model.probe import Probe, policy_probe_steps, probe_reward_model

    set_torch_threads()
    run_dir = Path(run_dir)
    judged: dict[str, Any] = {}
    steps = None
    before = rejudge_config(run_dir, 0)
    after = rejudge_config(run_dir, before.train.steps, probe=False)  # no probe: "before" plays the steps
    for when, config in (("before", before), ("after", after)):
        with tempfile.TemporaryDirectory() as scratch:
            parts = build_components(config, Path(scratch), progress=False)
            try:
                if steps is None:
                    count = config.reward_model.probe_policy_episodes if episodes is None else episodes
                    steps = policy_probe_steps(parts.rm_probe.probe.tasks()[:count], parts.policy_backend,
                                               parts.agent, seed=config.train.seed, max_steps=config.env.max_steps,
                                               split=config.family_spec.splits[0], rule=config.reward_model.label_rule)
                judged[when] = probe_reward_model(parts.reward_model, Probe([]).extended(steps))["policy"]
            finally:
                parts.close()
    atomic_write_json(run_dir / FINAL_POLICY_FILE, judged)  # a run with the file is never judged again
    return judged


def _run_missing(args: argparse.Namespace) -> None:
    """Train every requested arm-seed that has no summary yet, one after another, in child processes."""
    for seed in args.seeds:
        for arm in args.arms:
            run_dir = Path(args.out) / f"seed-{seed}" / arm
            if (run_dir / "summary.json").is_file():
                print(f"[objectives] seed {seed} {arm}: finished before, kept", flush=True)
                continue
            command = [sys.executable, "-m", "rla_train.run"]
            for override in overrides(arm, seed, Path(args.warm_starts), Path(args.out), steps=args.steps,
                                      rm_learning_rate=args.rm_learning_rate):
                command += ["--set", override]
            print(f"[objectives] seed {seed} {arm}: {' '.join(command)}", flush=True)
            subprocess.run([*command, "--overwrite"] if run_dir.exists() else command, check=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation.objectives",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where the runs are (seed-S/ARM/)")
    parser.add_argument("--warm-starts", help="gate B's layout: DIR/seed-S/warm-start/checkpoints/step-000000")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--steps", type=int, default=12, help="co-training steps per run (default 12)")
    parser.add_argument("--rm-learning-rate", type=float, default=1e-3, help="the judge's learning rate (1e-3)")
    parser.add_argument("--report-only", action="store_true", help="tabulate the finished runs, train nothing")
    parser.add_argument("--rejudge", action="store_true",
                        help="judge each finished run's final policy's probe steps with its step-0 and last judge "
                             "(those without the file yet; needs the checkpoints), then tabulate")
    parser.add_argument("--json", metavar="FILE", help="also write the table as JSON")
    args = parser.parse_args(argv)
    if not args.report_only and not args.rejudge:
        if not args.warm_starts:
            parser.error("--warm-starts is needed to train (or pass --report-only)")
        _run_missing(args)
    if args.rejudge:
        for run_dir in sorted(Path(args.out).glob("seed-*/*")):
            if run_dir.name not in ARMS or not (run_dir / "summary.json").is_file() or (run_dir / FINAL_POLICY_FILE).is_file():
                continue
            if not (run_dir / "checkpoints" / "step-000000" / "reward_model").is_dir():
                print(f"[objectives] {run_dir}: no judge in its checkpoints (a frozen judge was not saved before "
                      "the co-trainer kept it), skipped", flush=True)
                continue
            print(f"[objectives] judging the final policy's steps of {run_dir}", flush=True)
            rejudge(run_dir)
    table = objective_table(read_runs(args.out))
    if not table["arms"]:
        print(f"no finished run under {args.out} (seed-S/ARM/summary.json)", file=sys.stderr)
        return 1
    print(format_objectives(table))
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
