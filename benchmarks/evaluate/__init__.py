"""Benchmark harness for checkpoints: ``python -m benchmarks.evaluate --policy PATH ... --env ENV --split SPLIT``.

* :mod:`~benchmarks.evaluate.checkpoints` — what ``--policy`` names (model, checkpoint, run -> latest checkpoint).
* :mod:`~benchmarks.evaluate.agents` — the reference agents ``expert`` and ``random``.
* :mod:`~benchmarks.evaluate.run` — one policy on one split: fixed tasks, greedy, resumable, with metrics.
* :mod:`~benchmarks.evaluate.table` — several results -> RLAnything's Table 1 layout (Markdown, JSON, PNG).
* :mod:`~benchmarks.evaluate.cli` — the command line.
"""
