"""Benchmark harness for checkpoints: ``python -m benchmarks.evaluate --policy PATH ... --env ENV --split SPLIT``.

* :mod:`~benchmarks.evaluate.checkpoints` — what ``--policy`` names (model, checkpoint, run -> latest checkpoint).
* :mod:`~benchmarks.evaluate.agents` — the reference agents ``expert`` and ``random``.
* :mod:`~benchmarks.evaluate.settings` — :class:`EvalSettings`, split names, the settings a run gives.
* :mod:`~benchmarks.evaluate.tasks` — one split's fixed task list, drawn from the seed and written beside the results.
* :mod:`~benchmarks.evaluate.episodes` — playing the tasks through the rollout engine, one JSON line per episode, resumably.
* :mod:`~benchmarks.evaluate.scores` — success per task type, the reward model's accuracies, pass@k (pure).
* :mod:`~benchmarks.evaluate.models` — the policy's agent and backend, its held-out plan, the judge, the test writer.
* :mod:`~benchmarks.evaluate.run` — one policy on one split: the evaluation itself.
* :mod:`~benchmarks.evaluate.unit_tests` — code: UT accuracy and Detect rate of the reward model's tests.
* :mod:`~benchmarks.evaluate.table` — several results -> RLAnything's Table 1 layout (Markdown, JSON, PNG).
* :mod:`~benchmarks.evaluate.cli` — the command line.
"""
