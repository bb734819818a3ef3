"""PoolConfig: the settings of a :class:`~rla_envs.curriculum.pool.TaskPool`, checked when it is built.

Sampling strategy, rewrite rule and thresholds, the Beta prior and its decay, validation budget and seed; every
field carries a ``help`` in its metadata (``rla_train``'s config section copies them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rla_envs.core.errors import did_you_mean
from rla_envs.curriculum.sampling import STRATEGIES

__all__ = ["PoolConfig", "REWRITE_RULES"]

REWRITE_RULES = ("ours", "rlanything", "none")


def _help(text: str, default: Any) -> Any:
    return field(default=default, metadata={"help": text})


@dataclass
class PoolConfig:
    """Settings of a :class:`TaskPool`. Every field has a ``help`` in its metadata; checks run on creation."""

    strategy: str = _help("sampling strategy: 'uniform' (as the paper), 'learnability' (E[p(1-p)] prioritised: the "
                          "project's own option), or 'rlanything' (the released method: uniform over active versions)",
                          "uniform")
    rewrite_rule: str | None = _help("when to rewrite: 'ours' (confident posterior / zero-variance streaks), "
                                     "'rlanything' (last group's rate), 'none'; None = 'rlanything' for "
                                     "strategy 'rlanything', else 'ours'", None)
    alpha_low: float = _help("success rate at or below which a task is too hard (rewrite easier)", 0.2)
    alpha_high: float = _help("success rate at or above which a task is too easy (rewrite harder)", 0.8)
    prior: tuple[float, float] = _help("Beta prior (alpha, beta) of every task's success probability", (1.0, 1.0))
    decay: float = _help("per outcome of a task, its old evidence is multiplied by this (1 = never forget; "
                         "0.98 keeps ~50 outcomes' worth, half-life ~34). Lower forgets faster but caps the "
                         "evidence: at 0.95 (~20 outcomes) a task that succeeds 7% of the time only just reaches "
                         "P(p < 0.2) = 0.9, so too-hard tasks would rarely trigger a rewrite", 0.98)
    min_observations: int = _help("outcomes of a task (since its last rejected rewrite) before the posterior "
                                  "may trigger a rewrite", 8)
    confidence: float = _help("trigger when P(p < alpha_low) or P(p > alpha_high) reaches this", 0.9)
    zero_variance_repeats: int = _help("also trigger after this many all-fail / all-pass groups in a row (0 = off); "
                                       "1 lets one such group trigger, since in a short run over many tasks a task is "
                                       "rarely drawn twice", 1)
    group_size: int = _help("rollouts per task per step (the released rule reads the rate of the last "
                            "group_size outcomes)", 8)
    measure_rollouts: int = _help("fresh rollouts each for parent and child when validating a rewrite (each rewrite "
                                  "then costs up to measure_rollouts x (1 + candidates) rollouts)", 8)
    margin: float = _help("smallest move of the success rate, in the intended direction, to accept", 0.15)
    accept_confidence: float = _help("posterior probability that the child really moved the intended way, "
                                     "needed to accept (0.9: <= 0.11 false accepts at 16+16 rollouts)", 0.9)
    temperature: float = _help("rank temperature of learnability sampling (lower = focus on the top tasks)", 0.3)
    staleness_weight: float = _help("share of the sampling mass given by staleness (episodes since last seen)", 0.1)
    fresh_share: float = _help("share of the sampling mass reserved for tasks never played", 0.1)
    max_root_share: float = _help("most sampling mass any one root may hold (raised to 1/n_roots if lower)", 0.2)
    snapshot_every: int = _help("append a difficulty snapshot to history_log every this many episodes (0 = off)", 100)
    seed: int = _help("seed of the pool's own random generator (sampling)", 0)

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            hint = did_you_mean(self.strategy, STRATEGIES)
            raise ValueError(f"PoolConfig.strategy must be one of {STRATEGIES}, got {self.strategy!r}.{hint}")
        if self.rewrite_rule is None:
            self.rewrite_rule = "rlanything" if self.strategy == "rlanything" else "ours"
        if self.rewrite_rule not in REWRITE_RULES:
            raise ValueError(f"PoolConfig.rewrite_rule must be one of {REWRITE_RULES} or None, got {self.rewrite_rule!r}")
        if not 0.0 <= self.alpha_low < self.alpha_high <= 1.0:
            raise ValueError(f"need 0 <= alpha_low < alpha_high <= 1, got alpha_low={self.alpha_low}, "
                             f"alpha_high={self.alpha_high}; the defaults are 0.2 and 0.8")
        self.prior = tuple(float(v) for v in self.prior)
        if len(self.prior) != 2 or min(self.prior) <= 0:
            raise ValueError(f"PoolConfig.prior must be two positive numbers (alpha, beta), got {self.prior}; "
                             "use (1.0, 1.0) for a uniform prior")
        if not 0.0 < self.decay <= 1.0:
            raise ValueError(f"PoolConfig.decay must be in (0, 1], got {self.decay}; 1 keeps all evidence, 0.95 forgets")
        for name in ("confidence", "accept_confidence"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"PoolConfig.{name} must be in [0, 1), got {getattr(self, name)}; e.g. 0.9")
        for name in ("min_observations", "group_size", "measure_rollouts"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"PoolConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("zero_variance_repeats", "snapshot_every"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"PoolConfig.{name} must be >= 0 (0 turns it off), got {getattr(self, name)}")
        for name in ("margin", "staleness_weight", "fresh_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"PoolConfig.{name} must be in [0, 1], got {getattr(self, name)}")
        if self.temperature <= 0:
            raise ValueError(f"PoolConfig.temperature must be > 0, got {self.temperature}; 0.3 focuses, 10 is ~uniform")
        if not 0.0 < self.max_root_share <= 1.0:
            raise ValueError(f"PoolConfig.max_root_share must be in (0, 1], got {self.max_root_share}; 1 disables the cap")
