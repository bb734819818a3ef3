"""Writing Table 1: ``table.md`` / ``table.json`` and a PNG of the per-arm training curves.

The markdown has the rows (arms) with in-domain success, out-of-domain success and the reward model's balanced
process accuracy — each the mean over seeds with its 95% t-interval — then the paired tests between arms, the
trend test, the minimum detectable difference for the episodes used, and the command, machine and versions.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from rla_train.cpu_kernels import cpu_model

__all__ = ["machine_facts", "format_markdown", "write_report", "plot_curves"]

_LABELS = {"in_domain": "in-domain", "ood": "OOD"}


def machine_facts(argv: list[str] | None = None) -> dict[str, str]:
    """The exact command, the machine and the versions that produced the numbers."""
    argv = sys.argv[1:] if argv is None else argv
    facts = {"command": " ".join(["python", "-m", "benchmarks.ablation", *argv]), "python": sys.version.split()[0],
             "platform": platform.platform(), "cpu": cpu_model(),
             "cores": str(os.cpu_count())}
    for package in ("numpy", "torch", "transformers", "trl", "alfworld"):
        try:
            facts[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            facts[package] = "not installed"
    return facts


def _percent(cell: Mapping | None) -> str:
    if not cell:
        return "n/a"
    if cell.get("n") == 1:
        return f"{cell['mean']:.1%} [1 seed: no interval]"
    return f"{cell['mean']:.1%} [{cell['ci_low']:.1%}, {cell['ci_high']:.1%}]"


def _signed(value: float) -> str:
    return f"{value * 100:+.1f}"


def format_markdown(table: Mapping[str, Any], *, title: str, facts: Mapping[str, str] | None = None,
                    notes: list[str] | None = None) -> str:
    """Table 1 and its tests as markdown (see the module docstring for the layout)."""
    lines = [f"## {title}", "", "Mean over seeds [95% t-interval over seeds]; held-out episodes per seed in brackets.",
             "", "| arm | in-domain success | OOD success | RM balanced process accuracy | seeds |",
             "|---|---|---|---|---|"]
    for name in table["arms"]:
        row = table["rows"][name]
        cells = [f"{_percent(row.get(s))} ({row[s]['episodes_per_seed']} ep)" if row.get(s) else "n/a"
                 for s in ("in_domain", "ood")]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {_percent(row.get('rm_balanced_accuracy'))} | "
                     f"{len(row['seeds'])} |")
    if table["paired"]:
        lines += ["", "Paired differences B − A in points, the seed as the unit: the mean over seeds with its 95% "
                  "t-interval, and per seed (same episodes for both arms) the difference, the episodes won by A only / "
                  "B only and that seed's exact McNemar p. Episodes of different seeds are never pooled.", "",
                  "| A → B | split | B − A over seeds [95% t-CI] | seeds | per seed: B − A (A only / B only, p) |",
                  "|---|---|---|---|---|"]
        for test in table["paired"]:
            s = test["difference_over_seeds"]
            over_seeds = (f"{_signed(s['mean'])} [1 seed: no interval]" if s["n"] == 1 else
                          f"{_signed(s['mean'])} [{_signed(s['ci_low'])}, {_signed(s['ci_high'])}]")
            seeds = "; ".join(f"{p['seed']}: {_signed(p['difference'])} ({p['mcnemar']['a_only']} / "
                              f"{p['mcnemar']['b_only']}, p = {p['mcnemar']['p_value']:.2g})" for p in test["per_seed"])
            lines.append(f"| {test['a']} → {test['b']} | {_LABELS[test['split']]} | {over_seeds} | {s['n']} | "
                         f"{seeds} |")
    curves = {name: table["rows"][name]["heldout_curve"] for name in table["arms"]
              if table["rows"][name].get("heldout_curve")}
    if curves:
        lines += ["", "In-domain held-out success by training step (step 0 = the warm start; mean over seeds [95% "
                  "t-interval]):", ""]
        for name, curve in curves.items():
            lines.append(f"- {name}: " + "; ".join(f"step {step}: {_percent(cell)}"
                                                    for step, cell in sorted(curve.items(), key=lambda kv: int(kv[0]))))
    for split, trend in table["trend"].items():
        lines += ["", f"Trend test ({_LABELS[split]}, Cochran–Armitage over {' < '.join(trend['arms'])}, pooled "
                      f"episodes; conservative for paired arms): z = {trend['z']:+.2f}, p = {trend['p_value']:.3g}."]
    for split, mdd in table["mdd"].items():
        paired = (f"; paired (McNemar, discordance {mdd['discordant_rate']:.1%}): {mdd['paired'] * 100:.1f} points"
                  if mdd.get("paired") else "; paired: n/a (fewer than 10 discordant pairs expected per comparison: "
                  "the normal approximation does not hold)")
        lines += ["", f"Minimum detectable difference ({_LABELS[split]}, {mdd['episodes_per_arm']} episodes per arm, "
                      f"baseline {mdd['baseline_success']:.0%}, two-sided alpha 0.05, power 0.8): unpaired "
                      f"{mdd['unpaired'] * 100:.1f} points{paired}."]
    for note in notes or []:
        lines += ["", note]
    if facts:
        lines += ["", "| | |", "|---|---|"] + [f"| {k} | `{v}` |" if k == "command" else f"| {k} | {v} |"
                                             for k, v in facts.items()]
    return "\n".join(lines) + "\n"


def plot_curves(table: Mapping[str, Any], path: str | Path, *, title: str,
                ylabel: str = "training success (%), mean over seeds") -> Path:
    """A PNG of each arm's training success per step (mean over seeds), legend outside the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    markers, styles = "osD^vPX", ("-", "--", "-.", ":")
    for index, name in enumerate(table["arms"]):
        curve = table["rows"][name].get("curve")
        if curve:        # markers shrink arm by arm and line styles vary, so arms that coincide stay visible
            ax.plot(range(1, len(curve) + 1), [100 * v for v in curve], linestyle=styles[index % len(styles)],
                    marker=markers[index % len(markers)] if len(curve) < 12 else None,
                    markersize=max(3.0, 10.0 - 1.2 * index), label=name)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, title="arm")
    else:
        ax.text(0.5, 0.5, "no training curves recorded", transform=ax.transAxes, ha="center", va="center",
                color="#7f8c8d")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(table: Mapping[str, Any], out: str | Path, *, title: str, stem: str = "table",
                 facts: Mapping[str, str] | None = None, notes: list[str] | None = None,
                 extra: Mapping[str, Any] | None = None,
                 ylabel: str = "training success (%), mean over seeds") -> dict[str, Path]:
    """``<stem>.md``, ``<stem>.json`` (table + facts + extra) and ``<stem>-curves.png`` under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"md": out / f"{stem}.md", "json": out / f"{stem}.json", "png": out / f"{stem}-curves.png"}
    paths["md"].write_text(format_markdown(table, title=title, facts=facts, notes=notes))
    paths["json"].write_text(json.dumps({"title": title, **table, "facts": dict(facts or {}), "notes": notes or [],
                                         **dict(extra or {})}, indent=1))
    plot_curves(table, paths["png"], title=title, ylabel=ylabel)
    return paths
