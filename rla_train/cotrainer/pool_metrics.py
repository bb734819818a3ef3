"""The task pool's state as ``pool_...`` scalars for the run log (funnel counts, learning signal, difficulty)."""

from __future__ import annotations

from rla_envs.curriculum import plots

__all__ = ["pool_metrics"]


def pool_metrics(pool) -> dict[str, float | int | None]:
    """Scalars describing a TaskPool now, named ``pool_...``, ready for :meth:`~rla_train.cotrainer.run_log.RunLog.log`.

    Funnel counts (generated, valid, proposed, accepted), the zero-variance fraction and effective sample
    ratio over all recorded groups, the active tasks' mean difficulty (1 - posterior mean success), the
    pool's episode count and validation rollouts. Does not change the pool.
    """
    difficulty = [1.0 - pool.stats(task.id).mean for task in pool.active_tasks()]
    values: dict[str, float | int | None] = {f"pool_{stage}": count for stage, count in plots.rewrite_funnel(pool).items()}
    values.update({"pool_zero_variance_fraction": plots.zero_variance_fraction(pool)["total"],
                   "pool_effective_sample_ratio": plots.effective_sample_ratio(pool),
                   "pool_mean_difficulty": sum(difficulty) / len(difficulty),
                   "pool_episodes": int(pool.episodes), "pool_validation_rollouts": int(pool.validation_rollouts)})
    return values
