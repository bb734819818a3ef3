"""The RLAnything ablation (issue 14): every arm trained from one shared warm start per seed, Table 1 with
intervals over seeds, paired tests between arms, a trend test, and the minimum detectable difference.

Modules: :mod:`~benchmarks.ablation.arms` (which arms, in which order), :mod:`~benchmarks.ablation.stats` (pure
statistics), :mod:`~benchmarks.ablation.synthetic` (a fast family on the project's own reward maths, pool and
acceptance code), :mod:`~benchmarks.ablation.real` (ALFWorld + tiny models + TRL through ``rla_train.cotrainer.loop``),
:mod:`~benchmarks.ablation.aggregate` (Table 1 as data), :mod:`~benchmarks.ablation.report` (md / json / PNG),
:mod:`~benchmarks.ablation.cli` (``python -m benchmarks.ablation``).
"""
