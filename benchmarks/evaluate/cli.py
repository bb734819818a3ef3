"""Evaluate checkpoints and reference agents on fixed task lists, and write the comparison table.

::

    python -m benchmarks.evaluate --policy runs/a --policy runs/b --policy expert --policy random \\
        --env rla/AlfWorld-v0 --split valid_seen --split valid_unseen --episodes 64 --out runs/eval

``--policy`` takes a model directory, a checkpoint (``RUN/checkpoints/step-NNNNNN``), a run directory (its latest
checkpoint) or ``expert`` / ``random``. A policy from a run is evaluated as the run evaluated it: with no other
option, ``--policy RUN`` plays the run's held-out tasks (env, split, env options, episodes, seed) with its agent,
action mode, temperature and batch, and reproduces the run's final held-out success (``summary.json["after"]``;
a checkpoint ``step-N``: the evaluation at step N). Options given on the command line win. OUT gets
``tasks-SPLIT.json`` (the task list), one ``episodes-POLICY-SPLIT.jsonl`` per evaluation (greedy ones appended
per engine batch: rerunning the command resumes), ``results.json`` and ``table.{md,json,png}``. The same seed
gives the same tasks and the same numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.evaluate.settings import DEFAULT_SPLIT
from rla_envs.core.labels import LABEL_RULES
from rla_envs.core.registry import family_spec

__all__ = ["build_parser", "main", "default_splits"]

FROM_RUN = "default: the run's {}, else {}"
"""Help text of an option whose default comes from the run of a ``--policy`` run or checkpoint."""


def default_splits(env_id: str) -> list[str]:
    """The splits evaluated when ``--split`` is not given: the family's evaluation splits (``FamilySpec.splits``)."""
    return list(family_spec(env_id).splits) or [DEFAULT_SPLIT]


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds ``(default: X)`` to an option's help only where the help does not already say its default."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, []):
            return text
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.evaluate``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.evaluate", description=__doc__.split("\n\n")[0],
                                     epilog="Defaults marked 'the run's' come from the config.yaml of a --policy run "
                                            "or checkpoint, so --policy RUN alone evaluates as the run did.",
                                     formatter_class=_HelpFormatter)
    parser.add_argument("--policy", action="append", required=True, metavar="PATH",
                        help="model dir, checkpoint dir, run dir (latest checkpoint), 'expert' or 'random'; repeatable")
    parser.add_argument("--reward-model", default=None, metavar="PATH",
                        help="judge every step m times and report RM process / outcome accuracy: a model, checkpoint "
                             "or run dir, or 'own' (each checkpoint's own reward model)")
    parser.add_argument("--env", default=None, help="env id (" + FROM_RUN.format("env.id", "rla/AlfWorld-v0") + ")")
    parser.add_argument("--split", action="append", default=None,
                        help="split (ALFWorld: train / valid_seen / valid_unseen; Code: the task source, e.g. bundled "
                             "or humaneval); repeatable (" + FROM_RUN.format("held-out split (env.eval_options)",
                                                                              "valid_seen + valid_unseen for ALFWorld")
                             + ")")
    parser.add_argument("--episodes", type=int, default=None,
                        help="tasks per split, one episode each (" + FROM_RUN.format("train.eval_episodes", 32) + ")")
    parser.add_argument("--backend", default="transformers", choices=["transformers", "vllm", "openai"])
    parser.add_argument("--base-url", default=None, help="server URL for --backend openai")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the task list, resets and sampling (" + FROM_RUN.format("train.seed", 0) + ")")
    parser.add_argument("--out", type=Path, default=Path("runs/eval"), help="output directory")
    parser.add_argument("--agent-option", action="append", default=[], metavar="KEY=VALUE",
                        help="agent option (repeatable; values read as YAML, as rla_train.run's --set reads them), "
                             "e.g. history_window=5 or prompt_style=compact; over the run's agent settings")
    parser.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE",
                        help="env option (repeatable; values read as YAML), e.g. max_steps=30 or "
                             "'task_types=[pick_and_place_simple]'; over the run's env.options + env.eval_options")
    parser.add_argument("--action-mode", choices=["text", "index", "choice"], default=None,
                        help="how the policy acts (" + FROM_RUN.format("policy.action_mode", "text") + ")")
    parser.add_argument("--temperature", type=float, default=None,
                        help="sampling temperature of the episodes, seeded (0 = greedy; "
                             + FROM_RUN.format("train.eval_temperature", 0) + ")")
    parser.add_argument("--num-envs", type=int, default=None,
                        help="episodes in flight, the generate batch; sampled episodes depend on it ("
                             + FROM_RUN.format("env.num_envs", 16) + ")")
    parser.add_argument("--workers", type=int, default=0, help="env worker processes (0 = in this process)")
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="policy tokens per turn (" + FROM_RUN.format("policy.max_completion_length", 64) + ")")
    parser.add_argument("--judge-mode", choices=["text", "choice"], default=None,
                        help="how the reward model answers (default: the run's reward_model.verdict_mode, else text)")
    parser.add_argument("--judgments", type=int, default=3, help="judgments per step (m)")
    parser.add_argument("--label-rule", choices=LABEL_RULES, default=None,
                        help="the step labels the judge's votes are scored against (default: the run's "
                             "reward_model.label_rule, else progress)")
    parser.add_argument("--judge-max-new-tokens", type=int, default=128, help="reward-model tokens per judgment")
    parser.add_argument("--samples", type=int, default=0,
                        help="code: sampled programs per task for pass@k (k = this; 0 = greedy pass@1 only)")
    parser.add_argument("--samples-temperature", type=float, default=1.0, help="temperature of those samples")
    parser.add_argument("--tests-per-answer", type=int, default=4,
                        help="code with --reward-model: unit tests asked for in each of the reward model's answers")
    parser.add_argument("--test-samples", type=int, default=2, help="code with --reward-model: answers per task")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def _given(value, from_run, default):
    """A command-line value if given, else the run's, else the built-in default."""
    return value if value is not None else from_run if from_run is not None else default


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from rla_train import missing_train_extra

    if problem := missing_train_extra("python -m benchmarks.evaluate"):
        print(problem, file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    from rla_train.cpu_kernels import pin_cpu_kernels

    pin_cpu_kernels()  # the kernels the run was trained with (python -m rla_train.run pins the same); before torch

    from benchmarks.evaluate.agents import ReferenceAgent
    from benchmarks.evaluate.checkpoints import resolve_policy, resolve_reward_model
    from benchmarks.evaluate.episodes import ForeignEpisodes
    from benchmarks.evaluate.run import evaluate_policy
    from benchmarks.evaluate.settings import OWN_REWARD_MODEL, EvalSettings, run_defaults
    from benchmarks.evaluate.table import comparison_table, format_markdown, write_table
    from benchmarks.evaluate.tasks import task_list
    from rla_envs.core.errors import RlaError
    from rla_envs.core.files import atomic_write_json
    from rla_train.config import parse_options
    from rla_train.config.preflight import check_env_options

    from rla_train.cpu_kernels import set_torch_threads

    set_torch_threads()  # on small CPUs more threads make small models slower
    try:  # everything the command line names is checked here, before a task list or a model is loaded
        if args.out.exists() and not args.out.is_dir():
            raise FileExistsError(f"--out {args.out} is a file; pass a directory (new, or an earlier evaluation's)")
        sources = [resolve_policy(p) for p in args.policy]
        from_runs = run_defaults(sources)
        env_id = args.env or from_runs.get("env_id", "rla/AlfWorld-v0")
        if args.env is not None and args.env != from_runs.get("env_id", args.env):
            from_runs = {}  # another env than the runs': none of their env settings apply
        splits = args.split or ([from_runs["split"]] if "split" in from_runs else default_splits(env_id))
        settings = EvalSettings(env_id=env_id, episodes=_given(args.episodes, from_runs.get("episodes"), 32),
                                seed=_given(args.seed, from_runs.get("seed"), 0), backend=args.backend,
                                base_url=args.base_url, action_mode=args.action_mode,
                                agent_options=parse_options(args.agent_option, "--agent-option"),
                                env_options={**from_runs.get("env_options", {}),
                                             **parse_options(args.env_option, "--env-option")},
                                num_envs=args.num_envs, workers=args.workers, max_new_tokens=args.max_new_tokens,
                                temperature=args.temperature, reward_model=args.reward_model,
                                judge_mode=args.judge_mode, judgments=args.judgments, label_rule=args.label_rule,
                                judge_max_new_tokens=args.judge_max_new_tokens, samples=args.samples,
                                samples_temperature=args.samples_temperature, tests_per_answer=args.tests_per_answer,
                                test_samples=args.test_samples, progress=not args.no_progress)
        check_env_options(env_id, settings.env_options, "--env-option")
        for source in sources:  # a reference agent that cannot play this env fails now, not mid-evaluation
            if source.kind != "model":
                ReferenceAgent(source.kind, family_spec(env_id).name)
        if args.reward_model not in (None, OWN_REWARD_MODEL):
            resolve_reward_model(args.reward_model)
    except (ValueError, OSError, RlaError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        print(f"error: two --policy values resolve to the same name {names}; rename one directory", file=sys.stderr)
        return 2
    tasks = {}
    for split in splits:
        try:
            tasks[split] = task_list(env_id, split, episodes=settings.episodes, seed=settings.seed, out=args.out,
                                     env_options=settings.env_options)
        except (ValueError, RlaError) as error:  # another evaluation's task list in --out, a split the env lacks
            print(f"error: --split {split}: {error}", file=sys.stderr)
            return 2
    try:
        results = [evaluate_policy(source, tasks[split], settings, split=split, out=args.out)
                   for source in sources for split in splits]  # each model loads once for all splits
    except ForeignEpisodes as error:  # --out holds episodes another policy or other settings played
        print(f"error: {error}", file=sys.stderr)
        return 2
    atomic_write_json(args.out / "results.json", results)
    table = comparison_table(results)
    paths = write_table(table, args.out)
    print(format_markdown(table))
    print(json.dumps({"results": str(args.out / "results.json"), **{k: str(v) for k, v in paths.items()}}),
          file=sys.stderr)
    return 0
