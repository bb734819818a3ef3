"""Evaluation metrics of the reward model and of success rates (pure numpy).

- :func:`majority_vote` — the verdict of m judgments on one step.
- :func:`process_accuracy` — how often that verdict matches the expert's step label
  (``rla_envs.core.labels``).
- :func:`balanced_accuracy` — the mean of the recalls on good and on bad steps (plain accuracy on steps
  that are ~90% good rewards a judge that always says "good"; this one gives it 0.5).
- :func:`vote_balanced_accuracy` / :func:`verdict_balanced_accuracy` — the same for the m votes a step got
  (each vote a prediction) and for their majority verdict: how right the judgments the policy trains on are;
  :func:`vote_class_rates` — where the votes err: recall on good steps, and the "good" votes on bad steps.
- :func:`roc_auc` — how well a judge's score (e.g. P(good)) ranks good steps above bad ones.
- :func:`outcome_accuracy` — how often the mean judgment over an episode predicts its outcome.
- :func:`ut_accuracy` / :func:`detect_rate` — the coding variant: share of generated unit tests that are
  correct, and share of wrong programs they catch.
- :func:`wilson_interval` — a confidence interval for a success rate; :func:`balanced_accuracy_interval`
  and :func:`auc_interval` — approximate ones for the two step-judge metrics.

Votes are +1 (good), −1 (bad) or 0 (unparseable). Metrics that have nothing to measure return None
(never NaN), so a caller can print "n/a" and cannot silently average a NaN into a table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["majority_vote", "process_accuracy", "balanced_accuracy", "vote_balanced_accuracy", "vote_class_rates",
           "verdict_balanced_accuracy", "roc_auc", "outcome_accuracy", "ut_accuracy",
           "detect_rate", "wilson_interval", "balanced_accuracy_interval", "auc_interval", "paired_improvement"]


def majority_vote(votes: Sequence[int]) -> int:
    """The majority of a step's votes: +1 or -1, and 0 on a tie or when no vote parsed.

    Unparseable votes (0) abstain: ``[1, 0, -1]`` is a tie (0), ``[1, 0, 0]`` is +1.
    """
    array = np.asarray(list(votes), dtype=float)
    if array.size and not np.all(np.isin(array, (-1.0, 0.0, 1.0))):
        raise ValueError(f"votes must be +1, -1 or 0 (unparseable), got {list(votes)}")
    return int(np.sign(array.sum())) if array.size else 0


def process_accuracy(step_votes: Sequence[Sequence[int]], step_labels: Sequence[bool | None]) -> float | None:
    """Share of labelled steps whose majority vote agrees with the label (True = good = +1).

    Steps labelled None (undetermined) are skipped; a tied or empty vote counts as wrong. Returns None
    when no step is labelled (nothing to measure). Pool several episodes by concatenating their steps.
    """
    if len(step_votes) != len(step_labels):
        raise ValueError(f"one label per judged step expected: got {len(step_votes)} vote lists and "
                         f"{len(step_labels)} labels (labels come from rla_envs.core.labels.step_labels, one per action)")
    right = total = 0
    for votes, label in zip(step_votes, step_labels):
        if label is None:
            continue
        total += 1
        right += majority_vote(votes) == (1 if label else -1)
    return right / total if total else None


def _labelled(values: Sequence, labels: Sequence[bool | None], what: str) -> tuple[list, list[bool]]:
    """The (value, label) pairs whose label is not None, after checking that they align."""
    values, labels = list(values), list(labels)
    if len(values) != len(labels):
        raise ValueError(f"one label per {what} expected: got {len(values)} {what}s and {len(labels)} labels "
                         "(labels: True good, False bad, None undetermined, e.g. from rla_envs.core.labels.step_labels)")
    kept = [(value, bool(label)) for value, label in zip(values, labels) if label is not None]
    return [v for v, _ in kept], [lab for _, lab in kept]


def balanced_accuracy(predicted: Sequence[bool], labels: Sequence[bool | None]) -> float | None:
    """Mean of the recall on good steps and the recall on bad steps (True = good).

    Steps labelled None are skipped. None when the labelled steps lack one of the two classes: a recall
    over no step is undefined, and the mean of one recall would pass for a balanced score. A judge that
    answers "good" everywhere scores exactly 0.5, whatever the share of good steps.
    """
    predicted, labels = _labelled(predicted, labels, "prediction")
    good = [bool(p) for p, lab in zip(predicted, labels) if lab]
    bad = [not bool(p) for p, lab in zip(predicted, labels) if not lab]
    if not good or not bad:
        return None
    return (sum(good) / len(good) + sum(bad) / len(bad)) / 2


def _vote_tally(step_votes: Sequence[Sequence[int]], labels: Sequence[bool | None]) -> dict[bool, dict[int, int]]:
    """Per label (True good, False bad): how many of its steps' votes were +1, -1 and in all (``0`` counts the
    votes); steps labelled None are skipped."""
    votes, labels = _labelled(step_votes, labels, "vote list")
    tally = {True: {1: 0, -1: 0, 0: 0}, False: {1: 0, -1: 0, 0: 0}}
    for step, label in zip(votes, labels):
        step = list(step)
        tally[label][1] += sum(v == 1 for v in step)
        tally[label][-1] += sum(v == -1 for v in step)
        tally[label][0] += len(step)
    return tally


def vote_class_rates(step_votes: Sequence[Sequence[int]], labels: Sequence[bool | None]) -> dict[str, float | None]:
    """Where the votes err: ``good_recall``, the share of +1 votes among the votes on good steps, and
    ``false_good_rate``, the share of +1 votes among the votes on bad steps (what pays the policy for a bad step).

    A vote of 0 (unparseable) is not +1: it lowers the recall and not the false-good rate. Steps labelled None are
    skipped; a class with no vote gives None. By hand: labels ``[True, False, True]``, votes ``[[1, 1], [-1, 0],
    [1, -1]]``: good steps 3 of 4 votes +1 (0.75), the bad step 0 of 2 (0.0).
    """
    tally = _vote_tally(step_votes, labels)
    return {"good_recall": tally[True][1] / tally[True][0] if tally[True][0] else None,
            "false_good_rate": tally[False][1] / tally[False][0] if tally[False][0] else None}


def vote_balanced_accuracy(step_votes: Sequence[Sequence[int]], labels: Sequence[bool | None]) -> float | None:
    """Balanced accuracy of every single vote: the mean of the share of +1 votes among the votes on good steps
    and the share of -1 votes among the votes on bad steps.

    A vote of 0 (unparseable) is wrong on either class: it gives the policy no signal where the label would.
    Steps labelled None (undetermined) are skipped. None when the labelled steps lack a class, or a class has no
    vote. By hand: labels ``[True, False, True]``, votes ``[[1, 1], [-1, 0], [1, -1]]``: good steps 3 of 4 votes
    +1, the bad step 1 of 2 votes -1, ``(0.75 + 0.5) / 2 = 0.625``.
    """
    tally = _vote_tally(step_votes, labels)
    if not tally[True][0] or not tally[False][0]:
        return None
    return (tally[True][1] / tally[True][0] + tally[False][-1] / tally[False][0]) / 2


def verdict_balanced_accuracy(step_votes: Sequence[Sequence[int]], labels: Sequence[bool | None]) -> float | None:
    """Balanced accuracy of each step's majority verdict (:func:`majority_vote` of its m votes).

    A tie, or a step with no parseable vote (majority 0), is wrong on either class: the verdict is neither
    "good" nor "bad". Steps labelled None are skipped; None when a class is missing. By hand: labels
    ``[True, True, False, False]``, votes ``[[1, 1, -1], [1, -1, 0], [-1, -1, 1], [1, 1, 1]]``: majorities
    ``+1, 0 (tie), -1, +1``: good 1 of 2, bad 1 of 2 right, ``(0.5 + 0.5) / 2 = 0.5``.
    """
    votes, labels = _labelled(step_votes, labels, "vote list")
    verdicts = [majority_vote(step) for step in votes]
    good = [v == 1 for v, label in zip(verdicts, labels) if label]
    bad = [v == -1 for v, label in zip(verdicts, labels) if not label]
    if not good or not bad:
        return None
    return (sum(good) / len(good) + sum(bad) / len(bad)) / 2


def roc_auc(scores: Sequence[float], labels: Sequence[bool | None]) -> float | None:
    """The probability that a random good step scores above a random bad one (ties count half).

    ``scores``: higher = judged better (e.g. P(good)); labels True good, False bad, None skipped. Computed
    from ranks (Mann-Whitney U with mid-ranks for ties). None when a class is missing. 0.5 = no information,
    1.0 = every good step above every bad one, 0.0 = the ranking reversed.
    """
    scores, labels = _labelled(scores, labels, "score")
    values = np.asarray(scores, dtype=float)
    if values.size and not np.all(np.isfinite(values)):
        raise ValueError(f"scores must be finite numbers, got {[s for s in scores if not math.isfinite(s)][:3]}")
    positive = np.asarray(labels, dtype=bool)
    n_good, n_bad = int(positive.sum()), int((~positive).sum())
    if not n_good or not n_bad:
        return None
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size)
    sorted_values = values[order]
    start = 0
    while start < values.size:  # mid-ranks (1-based) for each run of equal scores
        end = start
        while end + 1 < values.size and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2 + 1
        start = end + 1
    u = ranks[positive].sum() - n_good * (n_good + 1) / 2
    return float(u / (n_good * n_bad))


def _episode_mean(votes: Sequence[Sequence[int]]) -> float:
    """Mean vote over every step and judgment of one episode (0.0 when there is none)."""
    flat = [v for step in votes for v in step]
    return float(np.mean(flat)) if flat else 0.0


def outcome_accuracy(episode_votes: Sequence[Sequence[Sequence[int]]], won: Sequence[bool]) -> float | None:
    """Share of episodes whose mean judgment predicts the outcome: mean > 0 ↔ won.

    ``episode_votes[e][i]`` lists the votes on step i of episode e; the mean runs over all steps and
    votes (unparseable votes count as 0). A mean of exactly 0 predicts "not won". None when there are
    no episodes.
    """
    if len(episode_votes) != len(won):
        raise ValueError(f"one outcome per episode expected: got {len(episode_votes)} episodes and {len(won)} outcomes")
    if not len(won):
        return None
    right = sum((_episode_mean(votes) > 0) == bool(w) for votes, w in zip(episode_votes, won))
    return right / len(won)


def ut_accuracy(test_correct: Sequence[bool | None]) -> float | None:
    """Share of generated unit tests that are correct; undetermined (None) tests are left out.

    ``test_correct`` is what :func:`rla_train.signals.rewards.unit_test_correctness` returns. None when no test
    is determined.
    """
    known = [bool(c) for c in test_correct if c is not None]
    return sum(known) / len(known) if known else None


def detect_rate(passes, program_correct, test_correct) -> float | None:
    """Share of wrong programs that fail at least one correct generated test (None: no wrong program).

    Args:
        passes: (programs × tests) booleans, program p passes generated test t.
        program_correct: per program, whether it passes the ground-truth tests.
        test_correct: per test, True / False / None (see ``unit_test_correctness``); only True counts.
    """
    matrix = np.asarray(passes, dtype=bool)
    correct = np.asarray(program_correct, dtype=bool).reshape(-1)
    if matrix.ndim != 2 or matrix.shape[0] != correct.shape[0] or matrix.shape[1] != len(test_correct):
        raise ValueError(f"passes must be (programs x tests) = ({correct.shape[0]} x {len(test_correct)}) to match "
                         f"program_correct and test_correct, got shape {matrix.shape}")
    wrong = matrix[~correct]
    if not wrong.shape[0]:
        return None
    good_tests = np.array([c is True or c is np.True_ for c in test_correct], dtype=bool)
    caught = (~wrong[:, good_tests]).any(axis=1)
    return float(caught.mean())


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval (low, high) for a success rate of ``successes`` out of ``n`` (95% at z=1.96).

    Unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or n successes.
    With n = 0 nothing is known and the interval is (0.0, 1.0).
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if z <= 0:
        raise ValueError(f"z must be positive (1.96 for 95%), got {z}")
    if n == 0:
        return 0.0, 1.0
    rate = successes / n
    denominator = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denominator
    # the bounds at 0 and n successes are exactly 0 and 1 (floating point lands a hair inside)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def balanced_accuracy_interval(good_right: int, good: int, bad_right: int, bad: int,
                               z: float = 1.96) -> tuple[float, float]:
    """An approximate 95% interval (at z=1.96) for a balanced accuracy from its two recalls' counts.

    Each recall's variance is read off its Wilson interval (half-width / z, squared), and the mean of
    the two recalls gets ``(v_good + v_bad) / 4``; the interval is the balanced accuracy ± z of that
    standard error, clipped to [0, 1]. Normal approximation: treat it as indicative below ~20 steps a class.
    """
    if good < 1 or bad < 1:
        raise ValueError(f"need at least one step of each class, got good={good}, bad={bad}")
    variances = []
    for right, n in ((good_right, good), (bad_right, bad)):
        low, high = wilson_interval(right, n, z)
        variances.append(((high - low) / (2 * z)) ** 2)
    centre = (good_right / good + bad_right / bad) / 2
    half = z * math.sqrt(sum(variances) / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def auc_interval(auc: float, good: int, bad: int, z: float = 1.96) -> tuple[float, float]:
    """An approximate 95% interval (at z=1.96) for an AUC from ``good`` and ``bad`` steps (Hanley & McNeil, 1982).

    SE² = (A(1−A) + (n_good−1)(Q1−A²) + (n_bad−1)(Q2−A²)) / (n_good·n_bad), Q1 = A/(2−A), Q2 = 2A²/(1+A);
    the interval is A ± z·SE clipped to [0, 1].
    """
    if good < 1 or bad < 1:
        raise ValueError(f"need at least one step of each class, got good={good}, bad={bad}")
    if not 0.0 <= auc <= 1.0:
        raise ValueError(f"auc must be in [0, 1], got {auc}")
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    variance = (auc * (1 - auc) + (good - 1) * (q1 - auc * auc) + (bad - 1) * (q2 - auc * auc)) / (good * bad)
    half = z * math.sqrt(max(0.0, variance))
    return max(0.0, auc - half), min(1.0, auc + half)


def success_summary(won: Sequence[bool], steps: Sequence[int]) -> dict[str, float]:
    """Success rate with its 95% Wilson interval, counts and mean steps, for a list of episodes."""
    wins, n = int(sum(bool(w) for w in won)), len(won)
    low, high = wilson_interval(wins, n)
    return {"success_rate": wins / n if n else 0.0, "won": float(wins), "episodes": float(n), "ci_low": low,
            "ci_high": high, "mean_steps": float(np.mean(steps)) if n else 0.0}


def paired_improvement(before: Sequence[int], after: Sequence[int]) -> dict[str, float]:
    """Whether ``after`` wins more of the same seeded episodes than ``before``: exact one-sided McNemar.

    Episode i of both lists is the same task with the same random numbers (0/1 outcomes). Under H0 (no change) each
    discordant episode is an improvement or a worsening with probability 1/2, so the one-sided p-value is
    P(X >= improved) with X ~ Binomial(improved + worsened, 1/2); no discordant episode gives 1. Returns
    ``episodes``, ``improved`` (lost before, won after), ``worsened`` and ``p_one_sided``.
    """
    if len(before) != len(after):
        raise ValueError(f"paired outcomes need the same episodes: {len(before)} before, {len(after)} after")
    improved = sum(1 for b, a in zip(before, after) if not b and a)
    worsened = sum(1 for b, a in zip(before, after) if b and not a)
    discordant = improved + worsened
    tail = sum(math.comb(discordant, k) for k in range(improved, discordant + 1)) / 2.0**discordant
    return {"episodes": len(before), "improved": improved, "worsened": worsened, "p_one_sided": min(1.0, tail)}
