"""Gate C of the learning issue: is the judge right on the policy's own steps after its warm start, and what does it take?

::

    python -m benchmarks.ablation.judge_gate --warm-start runs/gate-b/real/seed-0/warm-start --seed 0 \
        --out benchmarks/results/gate-c

For one seed: the seed's warm-started policy (``--warm-start``: a run directory whose step-0 checkpoint holds it)
plays what a first co-training step plays (``--tasks`` training tasks x 8 rollouts, sampled at T = 1), and the
family's step-label oracle (ALFWorld's planner) labels every step. Then, for each judge variant, a fresh tiny
reward model (the run's: ``tiny`` seeded ``seed + 1``, or a larger one) is warm-started on labelled steps of other
episodes on the training games (half the searching expert's, half the policy's, bad steps all kept and good ones
thinned to two per bad one, :func:`rla_train.reward_model.label_data.warm_start_data`) and judges those rollouts with
``m`` = 3 votes per step: the vote balanced accuracy (each vote against the label) and the verdict balanced
accuracy (the majority of the three) are what ``judge_vote_balanced_accuracy`` and
``judge_verdict_balanced_accuracy`` report at a co-training step. The gate asks >= 0.80 on every seed.

Variants (``--variants``, names ``E-episodes/K-steps``, then ``/large`` for a judge with 128 hidden units and 4
layers instead of 64 and 2, ``/onpolicy`` for warm-start rows from the policy's episodes only, ``/linear`` for a
learning rate that decays linearly to 0 instead of staying constant): the default warm start is ``144/300``. Writes
``OUT/seed-S.json`` (every variant's accuracies and class counts) and prints a table. Everything is seeded: the same seed and variants give the same numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rla_envs.core.labels import LABEL_RULES

__all__ = ["Variant", "parse_variant", "aligned", "view_ceiling", "measure_seed", "format_table", "main"]

DEFAULT_VARIANTS = ("144/300", "144/1000", "432/1000", "432/1000/large")
"""The warm start as the CPU default runs it, more steps, three times the episodes, and a larger judge."""

GATE = 0.80
"""The vote balanced accuracy the gate asks of the judge on the policy's steps, on every seed."""

LARGE_JUDGE = {"hidden_size": 128, "num_layers": 4, "num_heads": 4}
"""The larger tiny judge of the ``large`` variants (the default tiny model: 64 hidden units, 2 layers)."""


class Variant:
    """A judge warm start: ``episodes`` labelled episodes, ``steps`` optimizer steps, and the flags of
    :data:`VARIANT_FLAGS`: the larger judge, on-policy rows only (every episode played by the warm-started policy; by
    default half are the searching expert's), a learning rate decaying linearly (by default constant)."""

    def __init__(self, episodes: int, steps: int, large: bool = False, onpolicy: bool = False, linear: bool = False):
        self.episodes, self.steps, self.large, self.onpolicy = int(episodes), int(steps), bool(large), bool(onpolicy)
        self.linear = bool(linear)

    @property
    def schedule(self) -> str:
        return "linear" if self.linear else "constant"

    @property
    def expert_share(self) -> float:
        return 0.0 if self.onpolicy else 0.5

    @property
    def name(self) -> str:
        return "/".join([str(self.episodes), str(self.steps), *(flag for flag in VARIANT_FLAGS if getattr(self, flag))])


VARIANT_FLAGS = ("large", "onpolicy", "linear")


def parse_variant(text: str) -> Variant:
    """``"E/K"`` followed by any of ``/large``, ``/onpolicy`` and ``/linear`` (in that order) as a :class:`Variant` (a
    clear error otherwise)."""
    parts = text.split("/")
    flags = parts[2:]
    if (len(parts) < 2 or not all(p.isdigit() for p in parts[:2]) or len(set(flags)) != len(flags)
            or not set(flags) <= set(VARIANT_FLAGS) or flags != [f for f in VARIANT_FLAGS if f in flags]):
        raise argparse.ArgumentTypeError(f"a variant is EPISODES/STEPS[/large][/onpolicy][/linear] (e.g. 144/300, "
                                         f"1296/8000/linear), got {text!r}")
    return Variant(int(parts[0]), int(parts[1]), **{flag: flag in flags for flag in VARIANT_FLAGS})


def _balanced(votes: list[list[int]], labels: list[bool | None]) -> dict[str, float | None]:
    from rla_train.signals.metrics import verdict_balanced_accuracy, vote_balanced_accuracy

    return {"vote_balanced_accuracy": vote_balanced_accuracy(votes, labels),
            "verdict_balanced_accuracy": verdict_balanced_accuracy(votes, labels)}


def _accuracy(value: float | None) -> str:
    """A balanced accuracy as printed (n/a when a class was missing)."""
    return "n/a" if value is None else f"{value:.3f}"


def aligned(judged: Sequence, labels: Sequence[Sequence[bool | None]]) -> tuple[list[list[int]], list[bool | None]]:
    """Each judged step's votes beside its label, over the steps an episode has both for.

    >>> from types import SimpleNamespace as Episode
    >>> aligned([Episode(judgments=[[1], [-1], [1]]), Episode(judgments=[[1]])], [[True, False], [None, True]])
    ([[1], [-1], [1]], [True, False, None])
    """
    votes, flat = [], []
    for episode, episode_labels in zip(judged, labels):
        count = min(len(episode.judgments), len(episode_labels))
        votes += [list(step) for step in episode.judgments[:count]]
        flat += list(episode_labels[:count])
    return votes, flat


def view_ceiling(prompts: Sequence[str], labels: Sequence[bool]) -> dict[str, Any]:
    """What the judge's view allows on these steps: the best balanced accuracy any judge that sees only the prompt
    could get on them (each distinct prompt given the verdict that is right for most of its steps' class weight;
    an upper bound, measured on the steps themselves), with how many prompts are distinct and how many carry both
    labels. Near 1.0: the prompt decides the label, and a judge below it is short of learning, not of information.

    >>> view_ceiling(["a", "a", "b", "c"], [True, False, False, False])   # "a" is good once, bad once
    {'steps': 4, 'distinct_prompts': 3, 'ambiguous_prompts': 1, 'ceiling_balanced_accuracy': 0.8333}
    """
    if len(prompts) != len(labels):
        raise ValueError(f"{len(prompts)} prompts for {len(labels)} labels")
    groups: dict[str, list[bool]] = {}
    for prompt, label in zip(prompts, labels):
        groups.setdefault(prompt, []).append(bool(label))
    good = sum(bool(label) for label in labels)
    bad = len(labels) - good
    right_good = right_bad = 0
    for group in groups.values():
        group_good = sum(group)
        group_bad = len(group) - group_good
        if good and (not bad or group_good / good >= group_bad / bad):
            right_good += group_good
        else:
            right_bad += group_bad
    ceiling = None if not good or not bad else round(0.5 * (right_good / good + right_bad / bad), 4)
    return {"steps": len(labels), "distinct_prompts": len(groups),
            "ambiguous_prompts": sum(1 for group in groups.values() if 0 < sum(group) < len(group)),
            "ceiling_balanced_accuracy": ceiling}


def measure_seed(warm_start: Path, seed: int, variants: Sequence[Variant], *, tasks: int = 6,
                 label_rule: str | None = None, log=print) -> dict[str, Any]:
    """Every variant's accuracy on the seed's policy's first-step rollouts (see the module docstring);
    ``label_rule`` None: the co-trainer's default (``reward_model.label_rule``)."""
    import torch

    from rla_train.config.sections import RewardModelConfig

    label_rule = label_rule or RewardModelConfig.label_rule

    from rla_train.config import load_config
    from rla_train.cotrainer.components import build_components
    from rla_train.cotrainer.judge_metrics import oracle_labels
    from rla_train.cotrainer.play_setup import load_model
    from rla_train.reward_model import RewardModel
    from rla_train.reward_model.label_data import warm_start_data
    from rla_train.reward_model.verdicts import VerdictChoiceBackend
    from rla_train.reward_model.warm_start import warm_start_reward_model
    from rla_train.backends.choice import ChoiceBackend
    from rla_train.backends.hf import TransformersBackend

    policy = Path(warm_start) / "checkpoints" / "step-000000" / "policy"
    if not policy.is_dir():
        raise FileNotFoundError(f"{policy} is missing: --warm-start must be a run directory with a step-0 checkpoint")
    config = load_config(None, [f"train.seed={seed}", f"policy.model={policy}", "train.mode=policy+reward",
                                "reward_model.probe_episodes=0", "train.probe_episodes=0", f"rollout.tasks_per_step={tasks}",
                                "train.warm_start_sft_steps=0", "train.warm_start_listwise_steps=0",
                                f"reward_model.label_rule={label_rule}", "output.dir=unused"], check_hardware=False)
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        parts = build_components(config, Path(scratch), progress=False)
        try:
            episodes = parts.engine.run(parts.feeder.draw(tasks), group_size=config.rollout.group_size)
            labels = [oracle_labels(e, label_rule) for e in episodes]
            known = [label for episode_labels in labels if episode_labels for label in episode_labels if label is not None]
            log(f"seed {seed}: {len(episodes)} rollouts, {len(known)} labelled steps ({sum(not k for k in known)} bad), "
                f"success {sum(e.won for e in episodes)}/{len(episodes)}")
            rm = config.reward_model
            from rla_train.reward_model.prompts import judge_chat

            labelled = [(judge_chat(e.task, e, i, style=rm.prompt_style), label) for e, episode_labels in
                        zip(episodes, labels) if episode_labels
                        for i, label in enumerate(episode_labels[:len(e.actions)]) if label is not None]
            view = view_ceiling([json.dumps(chat) for chat, _ in labelled], [label for _, label in labelled])
            log(f"seed {seed}: the judge's view: {view['distinct_prompts']} distinct prompts over {view['steps']} "
                f"steps, {view['ambiguous_prompts']} with both labels, ceiling {_accuracy(view['ceiling_balanced_accuracy'])}")
            results, data = {}, {}
            for variant in variants:
                started = time.perf_counter()
                rows_key = (variant.episodes, variant.expert_share)
                if rows_key not in data:
                    data[rows_key] = warm_start_data(parts.engine.env.tasks(), episodes=variant.episodes,
                                                     expert_share=variant.expert_share,
                                                     policy=parts.policy_backend, agent=parts.agent, seed=seed,
                                                     max_steps=config.env.max_steps, style=rm.prompt_style,
                                                     rule=label_rule)
                dataset, counts = data[rows_key]
                model, tokenizer = load_model("tiny", seed=seed + 1, tiny_options=LARGE_JUDGE if variant.large else None)
                torch.manual_seed(seed)
                judge = RewardModel(VerdictChoiceBackend(ChoiceBackend(TransformersBackend(model, tokenizer))),
                                    judgments_per_step=rm.judgments_per_step, prompt_style=rm.prompt_style)
                # how well it fits its own rows by the end (the last tenth of its steps): beside its accuracy on the
                # policy's steps, it tells a judge too small to fit (both low) from one that fits and does not carry over
                fit = warm_start_reward_model(judge, dataset, steps=variant.steps, lr=rm.warm_start_learning_rate,
                                              schedule=variant.schedule, seed=seed)
                judged = [(e, episode_labels) for e, episode_labels in zip(episodes, labels) if episode_labels]
                judge.judge(None, [e for e, _ in judged])
                votes, flat_labels = aligned([e for e, _ in judged], [episode_labels for _, episode_labels in judged])
                results[variant.name] = {**_balanced(votes, flat_labels), "warm_start_rows": len(dataset),
                                         "warm_start_counts": counts,
                                         "warm_start_fit": {"last_loss": round(fit["last_loss"], 4),
                                                            "last_batch_accuracy": round(fit["last_accuracy"], 4)},
                                         "seconds": round(time.perf_counter() - started, 1)}
                log(f"seed {seed} {variant.name}: vote {_accuracy(results[variant.name]['vote_balanced_accuracy'])}, "
                    f"verdict {_accuracy(results[variant.name]['verdict_balanced_accuracy'])} "
                    f"({results[variant.name]['seconds']} s)")
        finally:
            parts.close()
    return {"seed": seed, "label_rule": label_rule, "warm_start": str(warm_start), "rollouts": len(episodes),
            "labelled_steps": len(known), "bad_steps": sum(not k for k in known), "view": view, "variants": results}


def format_table(per_seed: Sequence[dict[str, Any]]) -> str:
    """A Markdown table: one row per variant, vote / verdict balanced accuracy per seed."""
    names = list(dict.fromkeys(name for result in per_seed for name in result["variants"]))
    seeds = [result["seed"] for result in per_seed]
    lines = ["| judge warm start (episodes/steps) | " + " | ".join(f"seed {s}" for s in seeds) + f" | >= {GATE} on every seed |",
             "|---|" + "---|" * len(seeds) + "---|"]
    for name in names:
        cells, passed = [], True
        for result in per_seed:
            value = result["variants"].get(name)
            if value is None:
                cells.append("n/a")
                passed = False
                continue
            vote, verdict = value["vote_balanced_accuracy"], value["verdict_balanced_accuracy"]
            cells.append(f"{_accuracy(vote)} (majority {_accuracy(verdict)})")
            passed = passed and vote is not None and vote >= GATE
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {'yes' if passed else 'no'} |")
    steps = ", ".join(f"seed {r['seed']}: {r['labelled_steps']} steps ({r['bad_steps']} bad)" for r in per_seed)
    return "\n".join(lines + ["", f"Votes on the policy's first-step rollouts (vote balanced accuracy; the majority of "
                                  f"m = 3 in brackets), {steps}."])


def main(argv: Sequence[str] | None = None) -> int:
    """Measure one seed (or, with ``--report-only``, tabulate the seeds in ``--out``)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation.judge_gate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm-start", type=Path, help="the seed's warm-start run directory (step-0 checkpoint)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", type=parse_variant, default=[parse_variant(v) for v in DEFAULT_VARIANTS])
    parser.add_argument("--tasks", type=int, default=6, help="training tasks played (x 8 rollouts; default 6)")
    parser.add_argument("--label-rule", default=None, choices=LABEL_RULES,
                        help="what a good step is (rla_envs.core.labels.LABEL_RULES; default: the co-trainer's "
                             "reward_model.label_rule)")
    parser.add_argument("--out", type=Path, default=Path("runs/gate-c"))
    parser.add_argument("--report-only", action="store_true", help="print the table of the seeds already in --out")
    args = parser.parse_args(argv)
    if not args.report_only:
        if args.warm_start is None:
            parser.error("--warm-start is required (unless --report-only)")
        from rla_train.cpu_kernels import pin_cpu_kernels

        pin_cpu_kernels()
        from rla_train.cpu_kernels import set_torch_threads

        set_torch_threads()
        result = measure_seed(args.warm_start, args.seed, args.variants, tasks=args.tasks, label_rule=args.label_rule,
                              log=lambda m: print(f"[judge-gate {time.strftime('%H:%M:%S')}] {m}", flush=True))
        from rla_envs.core.files import atomic_write_json

        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(args.out / f"seed-{args.seed}.json", result)
    per_seed = [json.loads(p.read_text()) for p in sorted(args.out.glob("seed-*.json"))]
    if not per_seed:
        print(f"no seed-*.json under {args.out}", file=sys.stderr)
        return 1
    print(format_table(per_seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
