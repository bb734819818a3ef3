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

import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rla_envs.core.labels import has_step_labels, step_labels
from rla_envs.core.registry import family_spec
from rla_envs.core.task import Task
from rla_train.rollout.records import append_records, read_records
from rla_train.signals.metrics import outcome_accuracy, process_accuracy, success_summary

__all__ = ["EvalSettings", "DEFAULT_SPLIT", "OWN_REWARD_MODEL", "split_options", "task_list", "evaluate_policy",
           "heldout_plan_for", "run_defaults", "pass_at_k", "task_type"]

DEFAULT_SPLIT = "default"
"""The split name of envs without splits (TextWorld): their default task set."""


@dataclass
class EvalSettings:
    """How to evaluate (shared by every policy and split of one command)."""

    env_id: str = "rla/AlfWorld-v0"
    episodes: int = 32
    seed: int = 0
    backend: str = "transformers"
    base_url: str | None = None
    action_mode: str | None = None             # None: the run's config, else "text"
    agent_options: dict[str, Any] = field(default_factory=dict)
    env_options: dict[str, Any] = field(default_factory=dict)
    num_envs: int | None = None                # None: the run's env.num_envs, else 16
    workers: int = 0
    max_new_tokens: int | None = None          # None: the run's policy.max_completion_length, else 64
    temperature: float | None = None           # held-out episodes; None: the run's train.eval_temperature, else 0
    reward_model: str | None = None
    judge_mode: str | None = None              # "choice" | "text"; None: the run's verdict_mode, else text
    judgments: int = 3
    judge_temperature: float = 1.0
    judge_max_new_tokens: int = 128
    samples: int = 0                           # code: sampled programs per task for pass@k (0 = off)
    samples_temperature: float = 1.0           # sampling temperature of those samples
    tests_per_answer: int = 4                  # code + reward model: unit tests asked for per answer
    test_samples: int = 2                      # ... answers per task
    progress: bool = True

    def __post_init__(self):
        if type(self.episodes) is not int or self.episodes < 1:
            raise ValueError(f"episodes must be an int >= 1, got {self.episodes!r}")
        if self.action_mode not in (None, "text", "index", "choice"):
            raise ValueError(f"action_mode must be text, index or choice, got {self.action_mode!r}")
        if self.judge_mode not in (None, "text", "choice"):
            raise ValueError(f"judge_mode must be text or choice, got {self.judge_mode!r}")
        if self.samples < 0 or self.judgments < 1 or (self.num_envs is not None and self.num_envs < 1):
            raise ValueError("samples must be >= 0, judgments >= 1 and num_envs >= 1")
        if self.temperature is not None and not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature!r}")


# ------------------------------------------------------------------------------------------- tasks
def split_options(env_id: str, split: str) -> dict[str, Any]:
    """The env options that select ``split``: the family's ``FamilySpec.split_option`` set to it (ALFWorld's
    ``split``; Code's task ``source``: bundled, humaneval, a JSONL)."""
    option = family_spec(env_id).split_option
    if option is None:
        if split != DEFAULT_SPLIT:
            raise ValueError(f"{env_id} has no splits; use --split {DEFAULT_SPLIT} (its default task set) or pass "
                             "the tasks with --env-option")
        return {}
    return {option: split}


def run_defaults(sources: Sequence[Any]) -> dict[str, Any]:
    """What the runs among ``sources`` set for the whole command: ``env_id``, ``split``, ``episodes``, ``seed`` and
    ``env_options`` of their held-out evaluation ({} without a run), so every policy plays the run's tasks.

    Raises:
        ValueError: two runs evaluated differently (names the flag that makes them play alike).
    """
    from rla_train.cotrainer.play_setup import heldout_plan

    found: dict[str, tuple[Any, str]] = {}
    flags = {"env_id": "--env", "split": "--split", "episodes": "--episodes", "seed": "--seed",
             "env_options": "--env-option"}
    for source in sources:
        config = getattr(source, "run_config", None)
        if config is None:
            continue
        plan = heldout_plan(config)
        options = dict(plan.env.kwargs)
        key = family_spec(config.env.id).split_option
        split = options.pop(key, _default_split(config.env.id)) if key else DEFAULT_SPLIT
        values = {"env_id": config.env.id, "split": split, "episodes": plan.episodes, "seed": plan.task_seed,
                  "env_options": options}
        for name, value in values.items():
            earlier, who = found.setdefault(name, (value, source.name))
            if earlier != value:
                raise ValueError(f"--policy {who} and {source.name} come from runs evaluated with different "
                                 f"{flags[name]} ({earlier!r} vs {value!r}); pass {flags[name]} to evaluate both alike")
    return {name: value for name, (value, _) in found.items()}


def _default_split(env_id: str) -> str:
    """The split (task source) an env plays when its options name none: its constructor's default."""
    import inspect

    import gymnasium as gym

    creator = gym.envs.registration.load_env_creator(gym.spec(env_id).entry_point)
    return inspect.signature(creator).parameters[family_spec(env_id).split_option].default


def task_type(task: Task) -> str:
    """The row a task counts in: ALFWorld's task type, a code problem's level, else the family."""
    for value in (task.spec.get("task_type"), task.meta.get("task_type"), task.meta.get("level_name"),
                  task.meta.get("level")):
        if value not in (None, ""):
            return str(value)
    return task.family


def task_list(env_id: str, split: str, *, episodes: int, seed: int, out: Path,
              env_options: Mapping[str, Any] | None = None) -> list[Task]:
    """The ``episodes`` tasks of ``split`` drawn with ``seed``; written to (or read back from) ``out/tasks-SPLIT.json``.

    Raises:
        ValueError: ``out`` already holds a task list made with other settings (use another ``--out``).
    """
    from benchmarks.evaluate.agents import echo_backend
    from rla_envs.core.files import atomic_write_json
    from rla_train.rollout.engine import RolloutEngine
    from rla_train.rollout.envs import EnvSpec

    options = {**dict(env_options or {}), **split_options(env_id, split)}
    header = {"env_id": env_id, "split": split, "episodes": episodes, "seed": seed, "env_options": options}
    path = Path(out) / f"tasks-{_file_part(split)}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        differs = {k: (saved.get(k), v) for k, v in header.items() if saved.get(k) != json.loads(json.dumps(v))}
        if differs:
            raise ValueError(f"{path} holds the tasks of another evaluation ({differs}: saved vs now); use a new "
                             "--out, or the settings it was made with")
        return [Task.from_dict(t) for t in saved["tasks"]]
    spec = EnvSpec(env_id, **options)
    with RolloutEngine(spec, _NoAgent(), echo_backend(), num_envs=1, progress=False) as engine:
        tasks = engine.sample_tasks(episodes, seed=seed)
    Path(out).mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {**header, "task_ids": [t.id for t in tasks], "tasks": [t.to_dict() for t in tasks]})
    return tasks


class _NoAgent:
    """Placeholder agent for an engine used only to draw tasks."""


def _file_part(text: str) -> str:
    from benchmarks.evaluate.checkpoints import safe_name

    return safe_name(os.path.basename(os.fspath(text)) if os.sep in text else text)


# ------------------------------------------------------------------------------------------- episodes files
def _record(episode, index: int, labels: list | None) -> dict[str, Any]:
    """An episode as one JSON line: its transcript and outcome (prompts left out: they are rebuilt from it)."""
    data = episode.to_dict()
    for step in data.get("steps", []):
        step.pop("prompt", None)
        step.pop("prompt_ids", None)
    data.pop("task", None)
    data.update({"index": index, "task_type": task_type(episode.task), "num_steps": episode.num_steps,
                 "step_labels": labels})
    return data


def _play(engine, tasks: Sequence[Task], path: Path, *, group_size: int = 1, judge=None, desc: str = "",
          one_pass: bool = False) -> list[dict]:
    """Play ``group_size`` episodes of every task not yet in ``path``, one engine batch at a time; all records.

    ``one_pass``: one episode of every task in one engine pass (:func:`rla_train.cotrainer.play_setup.play_heldout`, the
    trainer's evaluation), written when it ends: a file holding only some of them is refused.
    """
    from tqdm.auto import tqdm

    records = read_records(path)
    if len(records) % group_size:
        raise ValueError(f"{path} holds {len(records)} episodes, not whole groups of {group_size}; "
                         "remove it to restart")
    for index, record in enumerate(records):
        expected = tasks[index // group_size].id if index // group_size < len(tasks) else None
        if record.get("task_id") != expected:
            raise ValueError(f"{path} line {index + 1} is task {record.get('task_id')!r}, but the task list has "
                             f"{expected!r} there; it belongs to another evaluation: remove it or use a new --out")
    done = len(records) // group_size
    if one_pass:
        if done not in (0, len(tasks)):
            raise ValueError(f"{path} holds {done} of {len(tasks)} episodes, but a sampled evaluation plays all in one "
                             "pass; remove it to restart")
        return records or _play_all(engine, tasks, path, judge=judge, desc=desc)
    chunk = max(1, engine.num_envs // group_size)
    sampling = engine.sampling
    with tqdm(total=len(tasks), initial=done, desc=desc, unit="task", disable=not engine.progress) as bar:
        for first in range(done, len(tasks), chunk):
            batch = list(tasks[first:first + chunk])
            if not sampling.greedy:  # seeded by the batch, so a resumed evaluation samples the same
                engine.sampling = dataclasses.replace(sampling, seed=(engine.seed * 1_000_003 + first) % 2**31)
            episodes = engine.run(batch, group_size=group_size, seed=engine.seed + first * group_size, desc=desc)
            labels = [None] * len(episodes)
            if judge is not None:
                judge.judge(None, episodes)
                labels = [_labels(e) for e in episodes]
            new = [_record(e, first * group_size + k, labels[k]) for k, e in enumerate(episodes)]
            append_records(path, new)
            records.extend(new)
            bar.update(len(batch))
    engine.sampling = sampling
    return records


def _play_all(engine, tasks: Sequence[Task], path: Path, *, judge=None, desc: str = "") -> list[dict]:
    """One episode of every task in one pass, as the trainer evaluates; their records, appended to ``path``."""
    from rla_train.cotrainer.play_setup import play_heldout

    episodes = play_heldout(engine, tasks, desc=desc)
    labels = [None] * len(episodes)
    if judge is not None:
        judge.judge(None, episodes)
        labels = [_labels(e) for e in episodes]
    records = [_record(e, k, labels[k]) for k, e in enumerate(episodes)]
    append_records(path, records)
    return records


def _labels(episode) -> list | None:
    """Expert step labels of an episode (None for families without them, or an episode that failed)."""
    if episode.error is not None or episode.task is None or not has_step_labels(episode.task.family):
        return None
    return step_labels(episode.task, [str(a) for a in episode.actions])


# ------------------------------------------------------------------------------------------- metrics
def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``c`` correct out of ``n`` samples: 1 - C(n-c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Overall and per-task-type success, env errors, and the reward model's accuracies when judged."""
    result: dict[str, Any] = success_summary([r["won"] for r in records], [r["num_steps"] for r in records])
    result["env_errors"] = sum(r.get("error") is not None for r in records)
    types = sorted({r["task_type"] for r in records})
    result["by_task_type"] = {t: success_summary([r["won"] for r in records if r["task_type"] == t],
                                                 [r["num_steps"] for r in records if r["task_type"] == t])
                              for t in types}
    judged = [r for r in records if r.get("judgments") is not None and r.get("error") is None]
    if judged:
        votes, labels = [], []
        for r in judged:
            if r.get("step_labels") is not None:
                votes += r["judgments"]
                labels += r["step_labels"]
        result["rm_process_accuracy"] = process_accuracy(votes, labels) if labels else None
        result["rm_labelled_steps"] = sum(label is not None for label in labels)
        result["rm_outcome_accuracy"] = outcome_accuracy([r["judgments"] for r in judged], [r["won"] for r in judged])
        result["rm_judged_episodes"] = len(judged)
    return result


# ------------------------------------------------------------------------------------------- backends
def _policy(source, settings: EvalSettings):
    """(agent, backend, action mode) for a resolved policy (a run's as :mod:`rla_train.cotrainer.play_setup` builds them)."""
    from benchmarks.evaluate.agents import ReferenceAgent, echo_backend
    from rla_train.agents import make_agent
    from rla_train.cotrainer.play_setup import policy_backend, policy_dtype

    if source.kind != "model":
        return ReferenceAgent(source.kind, family_spec(settings.env_id).name), echo_backend(), source.kind
    mode = settings.action_mode or source.action_mode or "text"
    options = {**source.agent_options, **settings.agent_options}
    if mode == "index":
        options["action_format"] = "index"
    elif options.get("action_format") == "index":
        options.pop("action_format")
    agent = make_agent(settings.env_id, **options)
    if mode == "choice" and settings.backend != "transformers":
        raise ValueError(f"--action-mode choice scores candidates with the model itself: it needs --backend "
                         f"transformers, not {settings.backend!r}")
    dtype = None if source.run_config is None else policy_dtype(source.run_config)
    return agent, policy_backend(_loaded_backend(source.model, settings, dtype=dtype), mode), mode


def heldout_plan_for(source, settings: EvalSettings, split: str):
    """How ``source`` plays ``split``: its run's held-out evaluation, with the command's settings over it.

    A :class:`rla_train.cotrainer.play_setup.HeldOutPlan`: the env (the run's env options, then ``--env-option``, then the
    split), ``settings.episodes`` tasks drawn with ``settings.seed``, the engine seeded as the trainer seeds its
    held-out engine, and the sampling and ``num_envs`` of the run (``--temperature``, ``--max-new-tokens`` and
    ``--num-envs`` win; without a run: greedy, 64 tokens, 16 envs). Reference agents play greedily.
    """
    from benchmarks.evaluate.agents import env_spec
    from rla_train.backends.base import SamplingParams
    from rla_train.cotrainer.play_setup import HeldOutPlan, heldout_engine_seed, heldout_plan

    config = source.run_config if source.kind == "model" else None
    run = heldout_plan(config) if config is not None else None
    sampling = run.sampling if run is not None else SamplingParams(max_new_tokens=64, temperature=0.0)
    if source.kind != "model":  # a reference agent's command comes back whole through the echo backend
        sampling = SamplingParams(max_new_tokens=10**9, temperature=0.0)
    else:
        changes = {k: v for k, v in (("temperature", settings.temperature), ("max_new_tokens", settings.max_new_tokens))
                   if v is not None}
        sampling = dataclasses.replace(sampling, **changes)
    options = {**source.env_options, **settings.env_options, **split_options(settings.env_id, split)}
    num_envs = settings.num_envs or (run.num_envs if run is not None else 16)
    return HeldOutPlan(env=env_spec(settings.env_id, source.kind, **options), episodes=settings.episodes,
                       task_seed=settings.seed, engine_seed=heldout_engine_seed(settings.seed), sampling=sampling,
                       num_envs=num_envs, env_workers={"workers": settings.workers})


_LOADED: dict[tuple, Any] = {}
"""The two most recently loaded backends (the policy's and the reward model's), reused across splits."""


def _loaded_backend(model: str, settings: EvalSettings, *, dtype: str | None = None):
    """A backend on ``model``; the last two are kept, so a policy and its judge load once for all splits."""
    from rla_train.backends import make_backend

    key = (model, settings.backend, settings.base_url, dtype)
    if key not in _LOADED:
        while len(_LOADED) >= 2:
            _LOADED.pop(next(iter(_LOADED))).close()
        if settings.backend == "transformers":
            from rla_train.backends.hf import TransformersBackend

            _LOADED[key] = TransformersBackend(model, dtype=dtype)
        else:
            _LOADED[key] = make_backend(settings.backend, model=model,
                                        **({"base_url": settings.base_url} if settings.base_url else {}))
    return _LOADED[key]


def _text_backend(model: str, settings: EvalSettings, *, choice: bool = False):
    """The reward model's backend on ``model``; ``choice``: it picks the likelier verdict (greedy)."""
    if choice and settings.backend != "transformers":
        raise ValueError(f"--judge-mode choice scores the verdicts with the model itself: it needs --backend "
                         f"transformers, not {settings.backend!r}")
    backend = _loaded_backend(model, settings)
    if choice:
        from rla_train.backends.choice import ChoiceBackend

        return ChoiceBackend(backend, temperature=0.0)
    return backend


OWN_REWARD_MODEL = "own"
"""``--reward-model own``: each checkpoint is judged by its own run's reward model (reference rows: none)."""


def _reward_model_spec(settings: EvalSettings, source) -> tuple[str, str] | None:
    """``(model, verdict mode)`` of the reward model judging ``source`` (None without one)."""
    from benchmarks.evaluate.checkpoints import resolve_reward_model

    if settings.reward_model is None:
        return None
    if settings.reward_model == OWN_REWARD_MODEL:
        if source.checkpoint is None:
            return None
        model, mode = resolve_reward_model(source.checkpoint)
    else:
        model, mode = resolve_reward_model(settings.reward_model)
    return model, settings.judge_mode or mode or source.verdict_mode or "text"


def _judge(settings: EvalSettings, spec: tuple[str, str] | None):
    """The step judge on the reward model ``spec`` (None without one)."""
    if spec is None:
        return None
    from rla_train.backends.base import SamplingParams
    from rla_train.reward_model import RewardModel

    model, mode = spec
    backend = _text_backend(model, settings, choice=mode == "choice")
    if mode == "choice":
        from rla_train.reward_model.verdicts import VerdictChoiceBackend

        backend = VerdictChoiceBackend(backend)
    sampling = SamplingParams(max_new_tokens=settings.judge_max_new_tokens, temperature=settings.judge_temperature,
                              seed=settings.seed)
    return RewardModel(backend, judgments_per_step=settings.judgments, sampling=sampling)


def _test_writer(settings: EvalSettings, spec: tuple[str, str]):
    """The reward model as a unit-test writer (code): free text, seeded sampling."""
    from rla_train.backends.base import SamplingParams
    from rla_train.reward_model import UnitTestWriter

    sampling = SamplingParams(max_new_tokens=max(256, settings.judge_max_new_tokens), temperature=1.0,
                              seed=settings.seed)
    return UnitTestWriter(_text_backend(spec[0], settings), tests_per_answer=settings.tests_per_answer,
                          samples=settings.test_samples, sampling=sampling)


# ------------------------------------------------------------------------------------------- evaluate
def evaluate_policy(source, tasks: Sequence[Task], settings: EvalSettings, *, split: str, out: Path) -> dict[str, Any]:
    """Evaluate one policy on one split's tasks (resuming from ``out``); returns the result dict."""
    from rla_train.backends.base import SamplingParams
    from rla_train.cotrainer.play_setup import heldout_engine

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    agent, backend, mode = _policy(source, settings)
    plan = heldout_plan_for(source, settings, split)
    rm_spec = _reward_model_spec(settings, source)
    code = family_spec(settings.env_id).agent == "code"
    judge = None if code else _judge(settings, rm_spec)  # code: the reward model writes unit tests instead
    stem = f"{source.name}-{_file_part(split)}"
    with heldout_engine(plan, agent, backend, progress=settings.progress) as engine:
        records = _play(engine, tasks, out / f"episodes-{stem}.jsonl", judge=judge, desc=f"{source.name} {split}",
                        one_pass=not plan.sampling.greedy)
        result = _summarize(records)
        if settings.samples and source.kind == "model":
            engine.sampling = SamplingParams(max_new_tokens=plan.sampling.max_new_tokens,
                                             temperature=settings.samples_temperature)
            sampled = _play(engine, tasks, out / f"samples-{stem}.jsonl", group_size=settings.samples,
                            desc=f"{source.name} {split} samples")
            result.update(_pass_at(records, sampled, settings.samples))
            if code and rm_spec is not None:
                from benchmarks.evaluate.unit_tests import unit_test_metrics

                result.update(unit_test_metrics(_test_writer(settings, rm_spec), tasks, sampled, settings.samples))
    result.update({"policy": source.name, "split": split, "env_id": settings.env_id, "action_mode": mode,
                   "seed": settings.seed, "temperature": plan.sampling.temperature, "num_envs": plan.num_envs,
                   "outcomes": [int(bool(r["won"])) for r in records], "source": source.describe(),
                   "reward_model": settings.reward_model})
    return result


def _pass_at(greedy: Sequence[Mapping[str, Any]], sampled: Sequence[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """pass@1 (greedy, its Wilson interval) and pass@k (unbiased, from ``k`` samples per task)."""
    per_task = [sampled[i:i + k] for i in range(0, len(sampled), k)]
    scores = [pass_at_k(len(group), sum(bool(r["won"]) for r in group), k) for group in per_task]
    greedy_summary = success_summary([r["won"] for r in greedy], [r["num_steps"] for r in greedy])
    return {"pass@1": greedy_summary["success_rate"],
            "pass@1_ci": [greedy_summary["ci_low"], greedy_summary["ci_high"]],
            f"pass@{k}": float(np.mean(scores)) if scores else 0.0, "samples_per_task": k}
