"""One evaluation: a policy (checkpoint or reference agent) on one split's fixed task list, resumably.

::

    tasks = task_list("rla/AlfWorld-v0", "valid_unseen", episodes=64, seed=0, out=out)   # written to out/tasks-*.json
    result = evaluate_policy(resolve_policy("runs/x"), tasks, settings, split="valid_unseen", out=out)
    result["success_rate"], result["ci_low"], result["by_task_type"], result["rm_process_accuracy"]

The task list comes from the seed alone (the engine's ``sample_tasks``) and is written beside the results, so
every policy of a comparison plays the same tasks. Each task is played once through the rollout engine as a
run's held-out evaluation plays it (:mod:`rla_train.cotrainer.play_setup`): episode ``k`` resets with the seed + 7919 + ``k``;
a policy from a run acts with the run's agent, action mode and ``train.eval_temperature`` (others greedily; a
``choice`` policy then takes the argmax command), so ``--policy RUN`` reproduces the run's own final held-out
numbers. With a reward model every step is judged ``m`` times and compared with the expert step labels
(:mod:`rla_envs.core.labels`). Greedy episodes are appended to ``out/episodes-<policy>-<split>.jsonl`` after
every engine batch, and a rerun plays only the rest; sampled ones play in one engine pass, as the trainer's
evaluation does (its sampling stream runs across the whole pass), and are written when it ends. For code tasks
``samples=k`` adds ``k`` sampled programs per task for pass@k, and a reward model writes
unit tests scored against them (UT accuracy, Detect rate: :mod:`benchmarks.evaluate.unit_tests`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.evaluate.checkpoints import model_fingerprint
from benchmarks.evaluate.episodes import play_episodes
from benchmarks.evaluate.models import build_judge, build_policy, build_test_writer, heldout_plan_for, reward_model_spec
from benchmarks.evaluate.scores import pass_at_summary, summarize
from benchmarks.evaluate.settings import EvalSettings
from benchmarks.evaluate.tasks import file_part
from benchmarks.evaluate.unit_tests import unit_test_metrics
from rla_envs.core.registry import family_spec
from rla_envs.core.task import Task
from rla_train.backends.base import SamplingParams
from rla_train.config.sections import RewardModelConfig
from rla_train.cotrainer.play_setup import heldout_engine

__all__ = ["evaluate_policy"]


def evaluate_policy(source, tasks: Sequence[Task], settings: EvalSettings, *, split: str, out: Path) -> dict[str, Any]:
    """Evaluate one policy on one split's tasks (resuming from ``out``); returns the result dict."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    agent, backend, mode = build_policy(source, settings)
    plan = heldout_plan_for(source, settings, split)
    rm_spec = reward_model_spec(settings, source)
    code = family_spec(settings.env_id).agent == "code"
    judge = None if code else build_judge(settings, rm_spec)  # code: the reward model writes unit tests instead
    stem = f"{source.name}-{file_part(split)}"
    label_rule = settings.label_rule or source.label_rule or RewardModelConfig.label_rule
    # what the episodes depend on besides the task list: a file written otherwise is refused, not resumed
    identity = {"policy": source.fingerprint(), "seed": settings.seed, "temperature": plan.sampling.temperature,
                "max_new_tokens": plan.sampling.max_new_tokens, "env_options": source.env_options | settings.env_options,
                "judge": None if rm_spec is None else [model_fingerprint(rm_spec[0]), rm_spec[1], settings.judgments,
                                                       settings.judge_temperature, label_rule]}
    with heldout_engine(plan, agent, backend, progress=settings.progress) as engine:
        records = play_episodes(engine, tasks, out / f"episodes-{stem}.jsonl", judge=judge, desc=f"{source.name} {split}",
                        one_pass=not plan.sampling.greedy, label_rule=label_rule, identity=identity)
        result = summarize(records)
        if settings.samples and source.kind == "model":
            engine.sampling = SamplingParams(max_new_tokens=plan.sampling.max_new_tokens,
                                             temperature=settings.samples_temperature)
            sampled = play_episodes(engine, tasks, out / f"samples-{stem}.jsonl", group_size=settings.samples,
                            desc=f"{source.name} {split} samples",
                            identity={**identity, "samples": settings.samples,
                                      "samples_temperature": settings.samples_temperature})
            result.update(pass_at_summary(records, sampled, settings.samples))
            if code and rm_spec is not None:
                result.update(unit_test_metrics(build_test_writer(settings, rm_spec), tasks, sampled, settings.samples))
    result.update({"policy": source.name, "split": split, "env_id": settings.env_id, "action_mode": mode,
                   "seed": settings.seed, "temperature": plan.sampling.temperature, "num_envs": plan.num_envs,
                   "outcomes": [int(bool(r["won"])) for r in records], "source": source.describe(),
                   "reward_model": settings.reward_model})
    return result
