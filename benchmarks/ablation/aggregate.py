"""From per-(seed, arm) results to Table 1: means over seeds, paired tests, the trend test and the MDD.

A result (what :mod:`benchmarks.ablation.synthetic` and :mod:`benchmarks.ablation.real` return, one per seed and
arm) is a dict::

    {"arm": "policy", "seed": 0,
     "splits": {"in_domain": [1, 0, ...], "ood": [0, 0, ...]},   # held-out outcomes, the seed's episode order
     "rm_balanced_accuracy": 0.62 | None,                         # the judge on the fixed probe, after training
     "curve": [0.25, 0.31, ...]}                                  # training success per step

Every arm of a seed is evaluated on the same episode list, so outcome i of arm A and outcome i of arm B form a
pair within that seed. The seed is the unit of replication: each seed is its own training run, so episodes of
different seeds are never pooled into one test. Each comparison gives, per seed, the paired difference and an exact
McNemar test on that seed's episodes, and over seeds the mean difference with its 95% t-interval (the result to read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchmarks.ablation.arms import table1_order
from benchmarks.ablation.stats import (cochran_armitage, mcnemar_exact, mean_interval, minimum_detectable_difference,
                                       paired_difference, paired_minimum_detectable_difference)

__all__ = ["SPLITS", "WARM_START", "comparisons", "build_table"]

SPLITS = ("in_domain", "ood")
"""In-domain (ALFWorld valid_seen) and out-of-domain (valid_unseen) held-out splits."""

WARM_START = "warm_start"
"""The row of the real stack's per-seed warm start (no training): every arm against it is that arm's gain over its
own start, paired per seed on the same episodes (gate A: RL moves the policy)."""


def comparisons(arm_names: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs (A, B) to test: every arm against the warm start (when it is a row), neighbours along Table 1's order
    (:func:`~benchmarks.ablation.arms.table1_order`), then every arm not yet tested against ``outcome_only`` against
    it (the control arm among them)."""
    ordered = table1_order(arm_names)
    pairs = [(WARM_START, name) for name in arm_names if name != WARM_START] if WARM_START in arm_names else []
    pairs += list(zip(ordered, ordered[1:]))
    if "outcome_only" in arm_names:
        pairs += [("outcome_only", name) for name in arm_names if name not in ("outcome_only", WARM_START)
                  and ("outcome_only", name) not in pairs]
    return pairs


def _by_arm_seed(results: Sequence[Mapping]) -> dict[str, dict[int, Mapping]]:
    table: dict[str, dict[int, Mapping]] = {}
    for result in results:
        seeds = table.setdefault(result["arm"], {})
        if result["seed"] in seeds:
            raise ValueError(f"two results for arm {result['arm']!r} and seed {result['seed']}; pass each once")
        seeds[result["seed"]] = result
    return table


def _arm_row(per_seed: Mapping[int, Mapping]) -> dict[str, Any]:
    row: dict[str, Any] = {"seeds": sorted(per_seed)}
    for split in SPLITS:
        outcomes = [per_seed[s]["splits"][split] for s in sorted(per_seed) if split in per_seed[s]["splits"]]
        if outcomes:
            row[split] = {**mean_interval([float(np.mean(o)) for o in outcomes]),
                          "episodes_per_seed": int(np.mean([len(o) for o in outcomes])),
                          "won": int(sum(map(sum, outcomes))), "episodes": int(sum(map(len, outcomes)))}
    accuracies = [per_seed[s]["rm_balanced_accuracy"] for s in sorted(per_seed)
                  if per_seed[s].get("rm_balanced_accuracy") is not None]
    row["rm_balanced_accuracy"] = mean_interval(accuracies) if accuracies else None
    heldout = [{int(k): v for k, v in per_seed[s]["heldout_curve"].items()} for s in sorted(per_seed)
               if per_seed[s].get("heldout_curve")]
    common = sorted(set.intersection(*(set(c) for c in heldout))) if heldout else []
    if len(common) > 1:  # in-domain held-out success at the steps every seed evaluated, with its interval over seeds
        row["heldout_curve"] = {step: mean_interval([c[step] for c in heldout]) for step in common}
    curves = [per_seed[s]["curve"] for s in sorted(per_seed) if per_seed[s].get("curve")]
    if curves:
        length = min(len(c) for c in curves)
        row["curve"] = [float(np.mean([c[t] for c in curves])) for t in range(length)]
    return row


def _paired(a: Mapping[int, Mapping], b: Mapping[int, Mapping], split: str) -> dict[str, Any] | None:
    seeds = [s for s in sorted(set(a) & set(b)) if split in a[s]["splits"] and split in b[s]["splits"]]
    if not seeds:
        return None
    for s in seeds:
        if len(a[s]["splits"][split]) != len(b[s]["splits"][split]):
            raise ValueError(f"seed {s}, split {split}: the arms were evaluated on different episode lists "
                             f"({len(a[s]['splits'][split])} vs {len(b[s]['splits'][split])} episodes)")
    per_seed = []
    for s in seeds:
        outcomes_a, outcomes_b = a[s]["splits"][split], b[s]["splits"][split]
        per_seed.append({"seed": s, **paired_difference(outcomes_a, outcomes_b),
                         "mcnemar": mcnemar_exact(outcomes_a, outcomes_b).to_dict(),
                         "discordant_rate": float(np.mean(np.asarray(outcomes_a) != np.asarray(outcomes_b)))})
    return {"per_seed": per_seed, "difference_over_seeds": mean_interval([p["difference"] for p in per_seed]),
            "discordant_rate": float(np.mean([p["discordant_rate"] for p in per_seed]))}


def build_table(results: Sequence[Mapping], arm_names: Sequence[str]) -> dict[str, Any]:
    """Table 1 as data: ``rows`` per arm, ``paired`` tests, ``trend`` per split and the ``mdd`` per split."""
    by_arm = _by_arm_seed(results)
    missing = [name for name in arm_names if name not in by_arm]
    if missing:
        raise ValueError(f"no results for arms {missing}; run them first (results have {sorted(by_arm)})")
    rows = {name: _arm_row(by_arm[name]) for name in arm_names}
    paired = []
    for a, b in comparisons(arm_names):
        for split in SPLITS:
            test = _paired(by_arm[a], by_arm[b], split)
            if test is not None:
                paired.append({"a": a, "b": b, "split": split, **test})
    trend, mdd = {}, {}
    ordered = table1_order(arm_names)
    for split in SPLITS:
        present = [name for name in ordered if split in rows[name]]
        if len(present) >= 2:
            trend[split] = {"arms": present, **cochran_armitage([rows[n][split]["won"] for n in present],
                                                                [rows[n][split]["episodes"] for n in present]).to_dict()}
        base = rows.get("outcome_only", rows[arm_names[0]]).get(split)
        if base:
            baseline = base["won"] / base["episodes"]
            discordance = [p["discordant_rate"] for p in paired if p["split"] == split]
            psi = float(np.mean(discordance)) if discordance else 0.0
            mdd[split] = {"episodes_per_arm": base["episodes"], "baseline_success": baseline,
                          "unpaired": minimum_detectable_difference(base["episodes"], min(baseline, 0.999)),
                          "paired": paired_minimum_detectable_difference(base["episodes"], psi)
                          if base["episodes"] * psi >= 10 else None,     # the normal form needs ~10 discordant pairs
                          "discordant_rate": psi, "alpha": 0.05, "power": 0.8}
    return {"arms": list(arm_names), "rows": rows, "paired": paired, "trend": trend, "mdd": mdd}
