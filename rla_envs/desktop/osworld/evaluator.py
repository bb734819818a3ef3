"""Scoring an OSWorld task at the end of an episode, as OSWorld's ``DesktopEnv.evaluate`` does.

1. ``infeasible`` tasks score 1 when the agent's last action was ``FAIL``, else 0; any other task whose last
   action was ``FAIL`` scores 0.
2. The processes the agent's code left running that own no window are stopped (the action worker ends), so
   none can race the steps below (``ControllerClient.stop_agent_processes``); then the evaluator's
   ``postconfig`` steps run (save the document, export CSV...), with ``python -c`` run isolated (``-I``).
3. Each metric's getters fetch the result (from the session) and the expected value (rule, file cache), and the
   metric scores them with its options. With a list of metrics, ``conj`` ``"and"`` stops at the first 0 and
   averages the scores, ``"or"`` stops at the first 1 and takes the best.

A task this env cannot score raises :class:`NotRunnable` before anything runs (check tasks up front with
:func:`~rla_envs.desktop.osworld.runnable.not_runnable_reasons`); a failure while scoring raises
:class:`SetupFailed` or :class:`EvaluationError`. No score is ever made up.

Example::

    score = evaluate(client, task.spec["osworld"], cache=FileCache("/data/osworld-cache"), last_action="DONE")
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rla_envs.core.task import Task
from rla_envs.desktop.client import ControllerClient
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.errors import EvaluationError, NotRunnable
from rla_envs.desktop.osworld.getters import EvalContext, run_getter
from rla_envs.desktop.osworld.metrics import get_metric
from rla_envs.desktop.osworld.runnable import evaluator_reasons
from rla_envs.desktop.osworld.setup import DEFAULT_PASSWORD, run_steps
from rla_envs.desktop.osworld.tasks import osworld_json

__all__ = ["evaluate", "is_fail_action", "combine_scores"]


def is_fail_action(action: Any) -> bool:
    """Whether ``action`` is OSWorld's ``FAIL`` (the string, or a dict with ``action_type`` ``FAIL``)."""
    if isinstance(action, str):
        return action.strip() == "FAIL"
    return isinstance(action, Mapping) and action.get("action_type") == "FAIL"


def combine_scores(scores: list[float], conj: str) -> float:
    """OSWorld's combination of several metrics' scores: the mean for ``"and"``, the best for ``"or"``."""
    if not scores:
        raise EvaluationError("no metric scores to combine")
    return sum(scores) / len(scores) if conj == "and" else max(scores)


def _score(name: str, metric: Callable[..., float], result: Any, expected_config: Any, expected: Any,
           options: Any) -> float:
    options = dict(options or {})
    try:
        value = metric(result, expected, **options) if expected_config else metric(result, **options)
    except EvaluationError:
        raise
    except Exception as exc:  # a metric's own bug or a malformed option: not the agent's fault
        raise EvaluationError(f"metric {name!r} failed: {type(exc).__name__}: {exc}") from exc
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise EvaluationError(f"metric {name!r} returned {value!r}, not a number") from None
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise EvaluationError(f"metric {name!r} returned {score}, outside [0, 1]")
    return score


def evaluate(client: ControllerClient, task_json: Task | Mapping[str, Any], *, cache: FileCache | None = None,
             last_action: Any = None, workdir: str | Path | None = None, password: str = DEFAULT_PASSWORD,
             sleep: Callable[[float], None] = time.sleep) -> float:
    """The task's score in [0, 1] for the session behind ``client`` at the end of an episode.

    Args:
        client: the session's controller client.
        task_json: the OSWorld task dict (or a Task holding it in ``spec["osworld"]``).
        cache: where ``cloud_file`` references and postconfig downloads are found.
        last_action: the agent's last action (``"FAIL"`` decides ``infeasible`` tasks).
        workdir: where fetched files go (default: a temporary directory, removed afterwards).
        password: what ``{CLIENT_PASSWORD}`` in postconfig commands becomes.
        sleep: the sleep function for postconfig ``sleep`` steps (tests pass a fake one).

    Raises:
        NotRunnable: the evaluator uses a getter, metric, rule or file this env lacks.
        SetupFailed: a postconfig step failed.
        EvaluationError: a getter or metric could not produce a score.
    """
    raw = osworld_json(task_json)
    task_id = raw.get("id")
    evaluator = raw.get("evaluator")
    cache = cache or FileCache(None)
    reasons = evaluator_reasons(evaluator, cache=cache, task_id=task_id, has_app=lambda _name: True)
    if reasons:
        raise NotRunnable(str(task_id), reasons)
    funcs = evaluator["func"]
    failed = is_fail_action(last_action)
    if funcs == "infeasible":
        return 1.0 if failed else 0.0
    if failed:
        return 0.0
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        return _run(client, evaluator, cache, task_id, Path(workdir), password, sleep)
    with tempfile.TemporaryDirectory(prefix="rla-osworld-eval-") as tmp:
        return _run(client, evaluator, cache, task_id, Path(tmp), password, sleep)


def _run(client: ControllerClient, evaluator: Mapping[str, Any], cache: FileCache, task_id: str | None,
         workdir: Path, password: str, sleep: Callable[[float], None]) -> float:
    client.stop_agent_processes()  # first: nothing the agent left running may race the steps below
    run_steps(client, evaluator.get("postconfig"), cache=cache, task_id=task_id, workdir=workdir,
              phase="postconfig", password=password, sleep=sleep)
    ctx = EvalContext(client=client, cache=cache, task_id=task_id, workdir=workdir)
    funcs = evaluator["func"]
    if isinstance(funcs, list):
        count = len(funcs)
        results = evaluator.get("result") or [None] * count
        expected = evaluator.get("expected") or [None] * count
        options = evaluator.get("options")
        options = options if isinstance(options, list) else [options or {}] * count
    else:  # one metric scores as a list of one
        funcs, results, expected, options = ([funcs], [evaluator.get("result")], [evaluator.get("expected")],
                                             [evaluator.get("options")])
    conj = evaluator.get("conj", "and")
    scores: list[float] = []
    for name, result_config, expected_config, option in zip(funcs, results, expected, options):
        score = _score(name, get_metric(name), run_getter(ctx, result_config), expected_config,
                       run_getter(ctx, expected_config), option)
        if conj == "and" and score == 0.0:
            return 0.0
        if conj == "or" and score == 1.0:
            return 1.0
        scores.append(score)
    return combine_scores(scores, conj)
