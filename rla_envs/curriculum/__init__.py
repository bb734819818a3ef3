"""Adaptive curriculum: a pool of tasks that measures, samples and rewrites them (RLAnything's environment loop).

- :class:`TaskPool` (``pool``): slots, statistics, sampling, rewrite bookkeeping, save/load; :class:`PoolConfig`
  (``pool_config``) its settings; :class:`Slot` / :class:`HistoryEntry` (``slots``) one task's place and history.
- ``stats``, ``sampling``, ``acceptance``: the pure maths (Beta posteriors, sampling weights, rewrite rules).
- ``adapt`` (one adaptation round), ``rewriters`` (mutator / LLM), ``diagnosers`` (failure summaries).
- :class:`AdaptiveTaskPool` (``wrapper``): the gymnasium Wrapper; :class:`TaskFeeder` for rollout engines.
- ``plots``: metrics and ``plot(pool, path)`` (matplotlib, imported when used).

Only numpy is imported here; keep it that way (heavy or optional modules are imported where used).
"""

from rla_envs.curriculum.acceptance import (
    AcceptanceDecision,
    accept_rewrite,
    rewrite_direction,
    rlanything_accepts,
    rlanything_direction,
)
from rla_envs.curriculum.pool import TaskPool
from rla_envs.curriculum.pool_config import PoolConfig
from rla_envs.curriculum.slots import HistoryEntry, Slot
from rla_envs.curriculum.stats import TaskStats

# adaptation loop, rewriters, diagnosers and the AdaptiveTaskPool wrapper (numpy/gymnasium only at import)
from rla_envs.curriculum.adapt import AdaptReport, EnvMeasure, adapt
from rla_envs.curriculum.diagnosers import RuleDiagnoser
from rla_envs.curriculum.plots import metrics, plot
from rla_envs.curriculum.rewriters import LLMRewriter, MutatorRewriter, Proposal
from rla_envs.curriculum.wrapper import AdaptiveTaskPool, TaskFeeder

__all__ = [
    "TaskPool", "PoolConfig", "Slot", "HistoryEntry", "TaskStats",
    "AcceptanceDecision", "accept_rewrite", "rewrite_direction", "rlanything_direction", "rlanything_accepts",
    "adapt", "AdaptReport", "EnvMeasure", "RuleDiagnoser", "metrics", "plot",
    "LLMRewriter", "MutatorRewriter", "Proposal", "AdaptiveTaskPool", "TaskFeeder",
]
