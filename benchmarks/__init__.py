"""benchmarks: checkpoint evaluation and performance benchmarks (``python -m benchmarks.perf``)."""
