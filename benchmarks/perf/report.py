"""Performance results: one row per metric, compared with a baseline measured in the same run."""

from __future__ import annotations

import platform
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

__all__ = ["Metric", "machine_facts", "format_table", "write_json"]


@dataclass(frozen=True)
class Metric:
    """One benchmark result.

    Attributes:
        name: the key written to the JSON report, e.g. ``alfworld_speedup_vs_stock``.
        value: what rla measured (in ``unit``).
        baseline: the same quantity for the baseline, measured in the same run.
        unit: unit of ``value`` and ``baseline`` (``steps/s``, ``s``, ...).
        higher_is_better: whether a larger ``value`` is better.
        goal: the ratio the project aims for (``ratio >= goal``), or None.
        note: what was compared (games, actions, settings).
    """

    name: str
    value: float
    baseline: float
    unit: str
    higher_is_better: bool = True
    goal: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float:
        """value / baseline when higher is better, baseline / value otherwise (so > 1 means rla is better)."""
        if self.higher_is_better:
            return self.value / self.baseline if self.baseline else float("inf")
        return self.baseline / self.value if self.value else float("inf")

    @property
    def meets_goal(self) -> bool | None:
        return None if self.goal is None else self.ratio >= self.goal


def machine_facts() -> dict[str, str]:
    """Hardware and versions to print beside the numbers."""
    import os

    facts = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cores": str(os.cpu_count()),
        "command": " ".join([Path(sys.executable).name, "-m", "benchmarks.perf", *sys.argv[1:]]),
    }
    for package in ("rla", "gymnasium", "textworld", "alfworld", "fast_downward_textworld", "numpy"):
        try:
            facts[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            facts[package] = "not installed"
    if facts["rla"] == "not installed":  # run from a source checkout
        import rla_envs

        facts["rla"] = f"{rla_envs.__version__} (source)"
    return facts


def format_table(metrics: list[Metric], facts: dict[str, str]) -> str:
    """A Markdown table of the metrics, preceded by the machine facts."""
    lines = [f"- {key}: {value}" for key, value in facts.items()]
    lines += ["", "| metric | value | baseline | unit | ratio | goal | ok | note |", "|---|---|---|---|---|---|---|---|"]
    for m in metrics:
        goal = "" if m.goal is None else f">= {m.goal:g}"
        ok = {None: "", True: "yes", False: "NO"}[m.meets_goal]
        lines.append(f"| {m.name} | {m.value:.4g} | {m.baseline:.4g} | {m.unit} | {m.ratio:.3f} | {goal} | {ok} | {m.note} |")
    return "\n".join(lines)


def write_json(path: str | Path, metrics: list[Metric], facts: dict[str, str]) -> None:
    """Write ``{metric name: ratio, ..., "details": [...], "machine": {...}}`` to ``path`` atomically."""
    from rla_envs.core.files import atomic_write_json

    data: dict = {m.name: m.ratio for m in metrics}
    data["details"] = [dict(asdict(m), ratio=m.ratio, meets_goal=m.meets_goal) for m in metrics]
    data["machine"] = facts
    atomic_write_json(path, data)
