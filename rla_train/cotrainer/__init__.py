"""The co-trainer: builds a run from its config, then loops rollout -> judge -> signals -> updates -> pool.

:mod:`~rla_train.cotrainer.play_setup` (what a run plays with, shared with ``benchmarks.evaluate``),
:mod:`~rla_train.cotrainer.components` (everything a run is made of), :mod:`~rla_train.cotrainer.loop` (the
loop itself), :mod:`~rla_train.cotrainer.policy_update` (updates through TRL), :mod:`~rla_train.cotrainer.checkpoint`,
:mod:`~rla_train.cotrainer.run_dir` and the run's log.
"""
