"""Collect trajectories with step judgments: ``python -m rla_train.collect --env ENV --policy MODEL --episodes N --out DIR``.

The policy plays N episodes through the batched rollout engine; the reward model (the policy's own model
unless ``--reward-model`` says otherwise, or none with ``--reward-model none``) judges every step m times.
Each finished chunk of episodes is appended to ``DIR/trajectories.jsonl`` (one episode per line: task,
observations, actions, per-step prompts, completion token ids, logprobs, parse errors, judgments and the
judge's answers), so a crash loses at most the chunk in flight; running the same command again resumes
after the episodes already written. ``DIR/summary.json`` holds the counts at the end.

``--policy tiny`` builds a tiny random-init model locally (no download): good for checking the plumbing,
not for winning games.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "collect", "parse_options", "load_backend"]

TINY = "tiny"


def parse_options(pairs: Sequence[str], what: str) -> dict[str, Any]:
    """``["split=valid_seen", "task_types=[clean]"]`` -> a dict, values read as YAML as the trainer's ``--set`` reads them.

    A bad pair ends the command with its one-line message (see :func:`rla_train.config.parse_options`).
    """
    from rla_train.config import ConfigError
    from rla_train.config import parse_options as parse_yaml_options

    try:
        return parse_yaml_options(pairs, what)
    except ConfigError as error:
        raise SystemExit(str(error)) from None


def load_backend(name: str, model: str, *, base_url: str | None = None, **options: Any):
    """A generation backend for ``model`` (``"tiny"`` builds the tiny local model first)."""
    from rla_train.backends import make_backend

    if model == TINY:
        from rla_train.backends.tiny import tiny_model_path

        model = str(tiny_model_path())
    if name == "openai":
        if not base_url:
            raise SystemExit("--backend openai needs --base-url (e.g. http://localhost:8000/v1)")
        return make_backend(name, base_url=base_url, model=model, **options)
    return make_backend(name, model=model, **options)


def collect(engine, reward_model, tasks, out: Path, *, group_size: int = 1, chunk_groups: int | None = None) -> dict:
    """Play ``group_size`` episodes of each task, judge them, append them to ``out/trajectories.jsonl``.

    Resumes after the episodes the file already holds (the task list must be the same: same seed).
    Returns the summary written to ``out/summary.json`` (counts over the episodes played in this call).
    """
    from tqdm.auto import tqdm

    from rla_envs.core.files import atomic_write_json
    from rla_train.rollout.records import append_records, read_records

    out.mkdir(parents=True, exist_ok=True)
    path = out / "trajectories.jsonl"
    written = len(read_records(path))
    done_groups = written // group_size
    if done_groups * group_size != written:
        raise SystemExit(f"{path} holds a partial group ({written} episodes, groups of {group_size}); "
                         "remove it or use a new --out")
    chunk_groups = chunk_groups or max(1, engine.num_envs // group_size)
    totals = {"episodes": 0, "won": 0, "steps": 0, "parse_errors": 0, "invalid_actions": 0,
              "env_errors": 0, "judgments": 0, "unparseable_judgments": 0}
    started = time.perf_counter()
    with tqdm(total=len(tasks), initial=done_groups, desc="collect", unit="task") as bar:
        for first in range(done_groups, len(tasks), chunk_groups):
            chunk = tasks[first:first + chunk_groups]
            episodes = engine.run(chunk, group_size=group_size, seed=engine.seed + first * group_size)
            for episode in episodes:
                episode.group += first
            if reward_model is not None:
                report = reward_model.judge([e.task for e in episodes], episodes)
                totals["judgments"] += report.judgments
                totals["unparseable_judgments"] += report.unparseable
            append_records(path, (episode.to_dict() for episode in episodes))
            _tally(totals, episodes)
            bar.update(len(chunk))
    summary = {**totals, "success_rate": totals["won"] / max(1, totals["episodes"]),
               "seconds": round(time.perf_counter() - started, 2), "resumed_after_episodes": written,
               "trajectories": str(path)}
    atomic_write_json(out / "summary.json", summary)
    return summary


def _tally(totals: dict, episodes) -> None:
    for episode in episodes:
        totals["episodes"] += 1
        totals["won"] += int(episode.won)
        totals["steps"] += episode.num_steps
        totals["parse_errors"] += sum(1 for s in episode.steps if s.parse_error)
        totals["invalid_actions"] += sum(1 for i in episode.infos[1:] if i.get("invalid_action"))
        totals["env_errors"] += int(episode.error is not None)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m rla_train.collect``."""
    parser = argparse.ArgumentParser(prog="python -m rla_train.collect", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--env", required=True, help="env id, e.g. rla/AlfWorld-v0 or rla/Code-v0")
    parser.add_argument("--policy", required=True, help="model path or hub id for the policy, or 'tiny'")
    parser.add_argument("--episodes", type=int, required=True, help="episodes in all (tasks x group size)")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--reward-model", default=None,
                        help="model for the step judge (default: the policy's model; 'none' = no judging)")
    parser.add_argument("--judgments", type=int, default=3, help="judgments per step (m)")
    parser.add_argument("--backend", default="transformers", choices=["transformers", "vllm", "openai"])
    parser.add_argument("--base-url", default=None, help="server URL for --backend openai")
    parser.add_argument("--group-size", type=int, default=1, help="rollouts per task (a GRPO group)")
    parser.add_argument("--num-envs", type=int, default=16, help="episodes in flight (the generate batch)")
    parser.add_argument("--workers", type=int, default=0, help="env worker processes (0 = in this process)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="policy tokens per turn")
    parser.add_argument("--judge-max-new-tokens", type=int, default=128, help="reward-model tokens per judgment")
    parser.add_argument("--temperature", type=float, default=1.0, help="policy sampling temperature (0 = greedy)")
    parser.add_argument("--seed", type=int, default=0, help="seed for task order, resets and sampling")
    parser.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE",
                        help="env constructor option (repeatable), e.g. split=valid_seen or max_steps=20")
    parser.add_argument("--agent-option", action="append", default=[], metavar="KEY=VALUE",
                        help="agent option (repeatable), e.g. action_format=index or history_window=5")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from rla_train import missing_train_extra

    if problem := missing_train_extra("python -m rla_train.collect"):
        print(problem, file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    if args.episodes < 1 or args.group_size < 1 or args.episodes % args.group_size:
        raise SystemExit(f"--episodes ({args.episodes}) must be a positive multiple of --group-size ({args.group_size})")
    if args.judgments < 1:
        raise SystemExit(f"--judgments must be >= 1, got {args.judgments}")
    from rla_train.agents import make_agent
    from rla_train.backends.base import SamplingParams
    from rla_train.reward_model import RewardModel
    from rla_train.rollout.engine import RolloutEngine
    from rla_train.rollout.envs import EnvSpec

    agent_options = parse_options(args.agent_option, "--agent-option")
    env = EnvSpec(args.env, **parse_options(args.env_option, "--env-option"))
    agent = make_agent(args.env, **agent_options)
    policy = load_backend(args.backend, args.policy, base_url=args.base_url)
    judge = None
    if (args.reward_model or "").lower() != "none":
        same = args.reward_model in (None, args.policy)
        judge_backend = policy if same else load_backend(args.backend, args.reward_model, base_url=args.base_url)
        judge = RewardModel(judge_backend, judgments_per_step=args.judgments,
                            sampling=SamplingParams(max_new_tokens=args.judge_max_new_tokens, temperature=1.0))
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature)
    with RolloutEngine(env, agent, policy, num_envs=args.num_envs, workers=args.workers, sampling=sampling,
                       seed=args.seed, progress=not args.no_progress) as engine:
        tasks = engine.sample_tasks(args.episodes // args.group_size)
        summary = collect(engine, judge, tasks, args.out, group_size=args.group_size)
    print(json.dumps(summary, indent=2))
    print(f"wrote {args.out / 'trajectories.jsonl'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
