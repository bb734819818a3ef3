"""Curriculum metrics read from a TaskPool, and ``plot(pool, path)``: one PNG that shows how the pool adapted.

Metrics (plain numbers, JSON-ready, no plotting library needed):

* :func:`zero_variance_fraction` - share of recorded groups whose rollouts all failed / all passed (no
  learning signal for group-normalised advantages);
* :func:`effective_sample_ratio` - share of groups that do carry signal (1 - the above);
* :func:`rewrite_funnel` - generated -> valid -> proposed (measured) -> accepted;
* :func:`accepted_over_time` - cumulative accepted rewrites by pool episode;
* :func:`difficulty_histogram` - histogram of the active tasks' difficulty (1 - posterior mean success);
* :func:`lineage` - for each slot, the chain of versions from the root to the active task.

matplotlib is imported only by :func:`plot` (Agg backend, no display needed).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["zero_variance_fraction", "effective_sample_ratio", "rewrite_funnel", "accepted_over_time",
           "difficulty_histogram", "difficulty_over_time", "lineage", "metrics", "plot",
           "draw_difficulty_over_time"]

FUNNEL_STAGES = ("generated", "valid", "proposed", "accepted")


def zero_variance_fraction(pool) -> dict[str, float | None]:
    """``{"all_fail", "all_pass", "total"}``: shares of recorded groups (of 2+ rollouts) with no variance."""
    counters = pool.counters
    groups = counters.get("groups", 0)
    if not groups:
        return {"all_fail": None, "all_pass": None, "total": None}
    fail, passed = counters.get("zero_variance_all_fail", 0), counters.get("zero_variance_all_pass", 0)
    return {"all_fail": fail / groups, "all_pass": passed / groups, "total": (fail + passed) / groups}


def effective_sample_ratio(pool) -> float | None:
    """Share of recorded groups whose outcomes differ (they give a non-zero advantage); None before any group."""
    total = zero_variance_fraction(pool)["total"]
    return None if total is None else 1.0 - total


def rewrite_funnel(pool) -> dict[str, int]:
    """Counts of rewrite candidates at each stage: generated -> valid -> proposed (measured) -> accepted."""
    return {stage: int(pool.counters.get(stage, 0)) for stage in FUNNEL_STAGES}


def accepted_over_time(pool) -> list[tuple[int, int]]:
    """``(episode, accepted so far)`` at every accepted rewrite, in episode order."""
    episodes = sorted(h.episode for slot in pool.slots.values() for h in slot.history if h.event == "accepted")
    return [(episode, index + 1) for index, episode in enumerate(episodes)]


def difficulty_histogram(pool, bins: int = 10) -> tuple[list[int], list[float]]:
    """``(counts, edges)`` of the active tasks' difficulty, 1 - posterior mean success, over [0, 1]."""
    difficulty = [1.0 - pool.stats(task.id).mean for task in pool.active_tasks()]
    counts, edges = np.histogram(difficulty, bins=bins, range=(0.0, 1.0))
    return counts.tolist(), edges.tolist()


def difficulty_over_time(pool) -> tuple[list[int], list[float]]:
    """``(episodes, mean difficulty)`` from the pool's snapshots (``history_log``)."""
    log = [entry for entry in pool.history_log if "mean_difficulty" in entry]
    return [int(e["episode"]) for e in log], [float(e["mean_difficulty"]) for e in log]


def lineage(pool) -> list[list[dict[str, Any]]]:
    """For each slot, its versions from the root to the active task, plus refused candidates.

    Each version: ``{"task_id", "episode" (when it became active; 0 for the root), "direction",
    "measured_rate" (its fresh success rate when accepted), "event": "root" | "accepted" | "rejected",
    "reason"}``.
    """
    chains = []
    for root_id, slot in pool.slots.items():
        chain = [{"task_id": root_id, "episode": 0, "direction": None, "measured_rate": None, "event": "root",
                  "reason": None}]
        for entry in slot.history:
            chain.append({"task_id": entry.replaced_by if entry.event == "accepted" else entry.task_id,
                          "episode": entry.episode, "direction": entry.direction,
                          "measured_rate": entry.evidence.get("child_rate"), "event": entry.event,
                          "reason": entry.reason})
        chains.append(chain)
    return chains


def metrics(pool) -> dict[str, Any]:
    """Every metric above in one JSON-ready dict."""
    episodes, difficulty = difficulty_over_time(pool)
    counts, edges = difficulty_histogram(pool)
    return {"zero_variance_fraction": zero_variance_fraction(pool),
            "effective_sample_ratio": effective_sample_ratio(pool), "rewrite_funnel": rewrite_funnel(pool),
            "accepted_over_time": accepted_over_time(pool),
            "difficulty_over_time": {"episodes": episodes, "mean_difficulty": difficulty},
            "difficulty_histogram": {"counts": counts, "edges": edges},
            "validation_rollouts": int(pool.counters.get("validation_rollouts", 0)), "episodes": int(pool.episodes)}


# ------------------------------------------------------------------------------------------ picture

_COLORS = {"harder": "#c0392b", "easier": "#27ae60", None: "#7f8c8d"}


def plot(pool, path: str | os.PathLike, *, title: str | None = None) -> Path:
    """Write a PNG: difficulty over time, the lineage of rewritten tasks, the difficulty histogram, the funnel."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:
        from rla_envs.core.errors import MissingDependency

        raise MissingDependency("'matplotlib' is not installed; install it with: pip install matplotlib") from exc
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(2, 2, figsize=(13, 8.5), gridspec_kw={"height_ratios": [1, 1.1]})
    draw_difficulty_over_time(axes[0, 0], pool)
    _plot_lineage(axes[1, 0], pool)
    _plot_histogram(axes[0, 1], pool)
    _plot_funnel(axes[1, 1], pool)
    figure.suptitle(title or f"Task pool: {len(pool)} slots, {pool.episodes} episodes, "
                              f"{pool.counters.get('validation_rollouts', 0)} validation rollouts", fontsize=13)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def draw_difficulty_over_time(ax, pool) -> None:
    """Draw the pool's mean difficulty by episode on matplotlib axes ``ax`` (also used by rla_train.cotrainer.plots)."""
    episodes, difficulty = difficulty_over_time(pool)
    if episodes:
        ax.plot(episodes, difficulty, marker="o", markersize=3, color="#2c3e50", label="mean difficulty (1 - success)")
    for episode, _ in accepted_over_time(pool):
        ax.axvline(episode, color="#95a5a6", linestyle=":", linewidth=1)
    ax.axhspan(1 - pool.config.alpha_high, 1 - pool.config.alpha_low, color="#f1c40f", alpha=0.15,
               label="learnable band")
    ax.set(xlabel="pool episode", ylabel="difficulty", ylim=(0, 1), title="Difficulty over time (dotted: accepted rewrites)")
    ax.legend(loc="best", fontsize=8)


def _plot_lineage(ax, pool) -> None:
    chains = lineage(pool)
    for row, chain in enumerate(chains):
        kept = [v for v in chain if v["event"] != "rejected"]
        xs = [v["episode"] for v in kept] + [pool.episodes]
        ax.hlines(row, xs[0], xs[-1], color="#bdc3c7", linewidth=2, zorder=1)
        for version in kept:
            color = _COLORS[version["direction"]]
            ax.scatter(version["episode"], row, s=70, color=color, zorder=3, edgecolor="black", linewidth=0.5)
            if version["measured_rate"] is not None:
                ax.annotate(f"{version['measured_rate']:.2f}", (version["episode"], row), textcoords="offset points",
                            xytext=(0, 7), ha="center", fontsize=7)
        refused: dict[tuple[int, str | None], int] = {}
        for version in chain:
            if version["event"] == "rejected":
                key = (version["episode"], version["direction"])
                refused[key] = refused.get(key, 0) + 1
        for (episode, direction), count in refused.items():
            ax.scatter(episode, row - 0.25, marker="x", s=22, color=_COLORS[direction], zorder=2)
            if count > 1:
                ax.annotate(f"x{count}", (episode, row - 0.25), textcoords="offset points", xytext=(5, -3),
                            fontsize=7, color=_COLORS[direction])
    ax.set_yticks(range(len(chains)))
    ax.set_yticklabels([_slot_label(pool, chain[0]["task_id"]) for chain in chains], fontsize=7)
    ax.set_ylim(-0.8, len(chains) - 0.4)
    ax.set(xlabel="pool episode", title="Lineage per slot: o version (red harder, green easier; measured success), "
                                        "x rejected")
    ax.title.set_fontsize(9)


def _plot_histogram(ax, pool) -> None:
    counts, edges = difficulty_histogram(pool)
    centers = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
    ax.axvspan(1 - pool.config.alpha_high, 1 - pool.config.alpha_low, color="#f1c40f", alpha=0.15, zorder=0,
               label="learnable band")
    ax.bar(centers, counts, width=edges[1] - edges[0], color="#3498db", edgecolor="white", zorder=2)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(loc="upper right", fontsize=8)
    ax.set(xlabel="difficulty (1 - posterior mean success)", ylabel="active tasks", xlim=(0, 1),
           title="Pool difficulty now")


def _plot_funnel(ax, pool) -> None:
    funnel = rewrite_funnel(pool)
    ax.barh(list(funnel)[::-1], list(funnel.values())[::-1], color="#8e44ad")
    for index, value in enumerate(list(funnel.values())[::-1]):
        ax.annotate(str(value), (value, index), xytext=(3, 0), textcoords="offset points", va="center", fontsize=9)
    zero = zero_variance_fraction(pool)
    ratio = effective_sample_ratio(pool)
    text = ("no groups recorded" if ratio is None else
            f"zero-variance groups: {zero['all_fail']:.0%} all-fail, {zero['all_pass']:.0%} all-pass\n"
            f"effective sample ratio: {ratio:.0%}")
    ax.text(0.98, 0.04, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=8,
            bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "#bdc3c7"})
    ax.set(xlabel="candidates", title="Rewrite funnel")


def _slot_label(pool, root_id: str) -> str:
    """``<6 hex digits of the id>`` plus the root's task type when its meta has one."""
    digest = root_id.partition(":")[2][:6] or root_id[:12]
    kind = pool.slot(root_id).root.meta.get("task_type")
    return f"{digest}\n{str(kind)[:22]}" if kind else digest
