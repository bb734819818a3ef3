"""Several evaluations -> one comparison table in the layout of RLAnything's Table 1 (Markdown, JSON, PNG).

Rows are the policies in the order given, the reference agents (``expert``, ``random``) last; columns are the
success rate on each split with its 95% Wilson interval (``valid_seen`` is the in-domain column, ``valid_unseen``
the out-of-domain one), then pass@k for code evaluated with samples, UT accuracy and Detect rate when a reward
model wrote unit tests, and the reward model's process and outcome accuracy on each split when it judged::

    table = comparison_table(results)                    # results: evaluate_policy dicts
    write_table(table, out)                              # out/table.md, out/table.json, out/table.png
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.evaluate.checkpoints import REFERENCE_POLICIES

__all__ = ["SPLIT_LABELS", "comparison_table", "format_markdown", "write_table", "plot_table"]

SPLIT_LABELS = {"train": "in-domain (train)", "valid_seen": "in-domain", "valid_unseen": "OOD"}
"""How the table names a split's column (others keep their name)."""


def _label(split: str) -> str:
    label = SPLIT_LABELS.get(split)
    return f"{label} ({split})" if label else split


def comparison_table(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rows (policies, references last), columns (success per split, then RM accuracies) and cells."""
    policies = list(dict.fromkeys(r["policy"] for r in results))
    policies = [p for p in policies if p not in REFERENCE_POLICIES] + [p for p in policies if p in REFERENCE_POLICIES]
    splits = list(dict.fromkeys(r["split"] for r in results))
    by_key = {(r["policy"], r["split"]): r for r in results}
    judged = [s for s in splits if any("rm_outcome_accuracy" in r for r in results if r["split"] == s)]
    sampled = {(r["split"], r["samples_per_task"]) for r in results if r.get("samples_per_task")}
    columns = ([{"key": f"success/{s}", "title": f"{_label(s)} success", "split": s, "metric": "success"}
                for s in splits]
               + [{"key": f"pass@{k}/{s}", "title": f"pass@{k} ({s})", "split": s, "metric": f"pass@{k}"}
                  for s, k in sorted(sampled)]
               + [{"key": f"{metric}/{s}", "title": f"{title} ({s})", "split": s, "metric": metric}
                  for metric, title in (("ut_accuracy", "UT accuracy"), ("detect_rate", "Detect rate"))
                  for s in splits if any(metric in r for r in results if r["split"] == s)]
               + [{"key": f"rm_process/{s}", "title": f"RM process ({s})", "split": s, "metric": "rm_process_accuracy"}
                  for s in judged]
               + [{"key": f"rm_outcome/{s}", "title": f"RM outcome ({s})", "split": s, "metric": "rm_outcome_accuracy"}
                  for s in judged])
    rows = []
    for policy in policies:
        cells: dict[str, Any] = {}
        for column in columns:
            result = by_key.get((policy, column["split"]))
            if result is None:
                cells[column["key"]] = None
            elif column["metric"] == "success":
                cells[column["key"]] = {k: result[k] for k in ("success_rate", "ci_low", "ci_high", "won", "episodes",
                                                               "mean_steps")}
            else:
                cells[column["key"]] = result.get(column["metric"])
        rows.append({"policy": policy, "reference": policy in REFERENCE_POLICIES, "cells": cells})
    return {"columns": columns, "rows": rows, "results": list(results)}


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, Mapping):
        return (f"{value['success_rate']:.1%} [{value['ci_low']:.1%}, {value['ci_high']:.1%}] "
                f"({int(value['won'])}/{int(value['episodes'])})")
    return f"{value:.1%}"


def format_markdown(table: Mapping[str, Any]) -> str:
    """The table as Markdown: one row per policy, success cells as ``rate [95% CI] (won/episodes)``."""
    columns = table["columns"]
    lines = ["| policy | " + " | ".join(c["title"] for c in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for row in table["rows"]:
        name = f"{row['policy']} (reference)" if row["reference"] else row["policy"]
        lines.append(f"| {name} | " + " | ".join(_cell(row["cells"][c["key"]]) for c in columns) + " |")
    return "\n".join(lines)


def plot_table(table: Mapping[str, Any], path: str | Path) -> Path:
    """A grouped bar chart of success per split (one group per policy) with 95% Wilson error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    success = [c for c in table["columns"] if c["metric"] == "success"]
    rows = table["rows"]
    width = 0.8 / max(1, len(success))
    x = np.arange(len(rows))
    figure, axes = plt.subplots(figsize=(max(4.0, 1.6 * len(rows) + 1) + 2.6, 4.2))  # + room for the legend
    for k, column in enumerate(success):
        cells = [row["cells"][column["key"]] for row in rows]
        rate = np.array([c["success_rate"] if c else np.nan for c in cells])
        # Wilson bounds can sit a rounding error inside the rate at 0 or n successes: clip at 0
        low = np.array([max(0.0, c["success_rate"] - c["ci_low"]) if c else 0.0 for c in cells])
        high = np.array([max(0.0, c["ci_high"] - c["success_rate"]) if c else 0.0 for c in cells])
        axes.bar(x + (k - (len(success) - 1) / 2) * width, rate, width, yerr=[low, high], capsize=3,
                 label=column["title"])
    axes.set_xticks(x, [row["policy"] for row in rows], rotation=20, ha="right")
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("success rate (95% Wilson CI)")
    episodes = sorted({int(c["episodes"]) for row in rows for column in success
                       if (c := row["cells"][column["key"]]) and "episodes" in c})
    axes.set_title("Success per policy and split" + (f" ({'/'.join(map(str, episodes))} episodes each)"
                                                     if episodes else ""))
    # the legend sits outside the axes, so it covers no bar
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def write_table(table: Mapping[str, Any], out: str | Path, *, stem: str = "table") -> dict[str, Path]:
    """Write ``out/{stem}.md``, ``.json`` and ``.png``; returns their paths."""
    from rla_envs.core.files import atomic_write_json, atomic_write_text

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / f"{stem}.md", "json": out / f"{stem}.json", "png": out / f"{stem}.png"}
    atomic_write_text(paths["markdown"], format_markdown(table) + "\n")
    atomic_write_json(paths["json"], json.loads(json.dumps(table, default=str)))
    plot_table(table, paths["png"])
    return paths
