"""benchmarks.ablation.stats: hand-worked numbers, and scipy (dev only) as a second opinion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.ablation.stats import (cochran_armitage, mcnemar_exact, mean_interval, minimum_detectable_difference,
                                       normal_quantile, paired_difference, paired_minimum_detectable_difference,
                                       t_quantile_975)


def test_mean_interval_by_hand():
    # values 0.2, 0.4, 0.6: mean 0.4, sample sd = sqrt(((-.2)^2 + 0 + .2^2)/2) = 0.2,
    # half-width = t(0.975, 2) * 0.2 / sqrt(3) = 4.3027 * 0.11547 = 0.49683
    cell = mean_interval([0.2, 0.4, 0.6])
    assert cell["mean"] == pytest.approx(0.4)
    assert cell["ci_low"] == pytest.approx(0.4 - 0.49683, abs=1e-5)
    assert cell["ci_high"] == pytest.approx(0.4 + 0.49683, abs=1e-5)
    assert cell["n"] == 3


def test_mean_interval_of_one_seed_has_zero_width_and_bad_input_says_why():
    assert mean_interval([0.3]) == {"mean": 0.3, "ci_low": 0.3, "ci_high": 0.3, "n": 1}
    with pytest.raises(ValueError, match="at least one value"):
        mean_interval([])
    with pytest.raises(ValueError, match="non-finite"):
        mean_interval([0.1, float("nan")])


def test_t_and_normal_quantiles_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 5, 10, 29, 30, 31, 45, 100, 1000):
        assert t_quantile_975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-4)
    for q in (0.5, 0.8, 0.975, 0.001):
        assert normal_quantile(q) == pytest.approx(stats.norm.ppf(q), abs=1e-9)


def test_mcnemar_exact_by_hand():
    # 10 episodes: A-only wins at 0,1 (2 pairs), B-only at 2..7 (6 pairs), both won 8, both lost 9.
    a = [1, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [0, 0, 1, 1, 1, 1, 1, 1, 1, 0]
    # X ~ Bin(8, 1/2): P(X <= 2) = (1 + 8 + 28)/256 = 37/256; two-sided p = 74/256 = 0.2890625
    result = mcnemar_exact(a, b)
    assert (result.a_only, result.b_only, result.episodes) == (2, 6, 10)
    assert result.p_value == pytest.approx(74 / 256)
    assert mcnemar_exact(b, a).p_value == pytest.approx(74 / 256)          # symmetric


def test_mcnemar_without_discordant_pairs_is_one_and_extreme_case():
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]).p_value == 1.0
    # 0 vs 7 discordant: 2 * (1/2)^7 = 0.015625
    assert mcnemar_exact([0] * 7, [1] * 7).p_value == pytest.approx(2 / 128)


def test_mcnemar_matches_scipy_binomtest():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.integers(0, 2, 60), rng.integers(0, 2, 60)
        result = mcnemar_exact(a, b)
        n = result.a_only + result.b_only
        expected = stats.binomtest(result.a_only, n, 0.5).pvalue if n else 1.0
        assert result.p_value == pytest.approx(expected, rel=1e-9)


def test_paired_outcomes_must_match_in_length_and_be_binary():
    with pytest.raises(ValueError, match="same episode list"):
        mcnemar_exact([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="0/1"):
        paired_difference([1, 2], [1, 0])


def test_paired_difference_by_hand():
    # the 10 episodes above: difference = (6 - 2)/10 = 0.4;
    # variance numerator = a_only + b_only - n d^2 = 8 - 10 * 0.16 = 6.4; se = sqrt(6.4)/10 = 0.25298
    # half-width = 1.959964 * 0.25298 = 0.49584
    a = [1, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [0, 0, 1, 1, 1, 1, 1, 1, 1, 0]
    result = paired_difference(a, b)
    assert result["difference"] == pytest.approx(0.4)
    assert result["ci_low"] == pytest.approx(0.4 - 0.49584, abs=1e-5)
    assert result["ci_high"] == pytest.approx(0.4 + 0.49584, abs=1e-5)


def test_cochran_armitage_by_hand():
    # 10/50, 15/50, 20/50: p_bar = 45/150 = 0.3; T = 0*(10-15) + 1*(15-15) + 2*(20-15) = 10
    # Var T = 0.3*0.7*(50*(0+1+4) - (50*(0+1+2))^2/150) = 0.21*(250 - 150) = 21; z = 10/sqrt(21) = 2.18218
    # p = 2*(1 - Phi(2.18218)) = 0.029096
    result = cochran_armitage([10, 15, 20], [50, 50, 50])
    assert result.z == pytest.approx(10 / math.sqrt(21))
    assert result.p_value == pytest.approx(0.029096, abs=1e-6)
    assert cochran_armitage([20, 15, 10], [50, 50, 50]).z == pytest.approx(-10 / math.sqrt(21))
    flat = cochran_armitage([0, 0, 0], [10, 10, 10])
    assert (flat.z, flat.p_value) == (0.0, 1.0)


def test_cochran_armitage_rejects_impossible_counts():
    with pytest.raises(ValueError, match="successes <= episodes"):
        cochran_armitage([5, 11], [10, 10])
    with pytest.raises(ValueError, match=">= 2 ordered arms"):
        cochran_armitage([5], [10])


def test_minimum_detectable_difference_matches_the_design_facts():
    # DESIGN.md: detecting 10 points at p ~ 0.3-0.5 needs ~350-400 episodes per arm (alpha 0.05, power 0.8).
    # By hand at p1 = 0.35, d = 0.10: p_bar = 0.40, (1.95996*sqrt(2*.4*.6) + 0.84162*sqrt(.35*.65 + .45*.55))^2/.01
    # = (1.95996*0.69282 + 0.84162*0.69101)^2 / 0.01 = (1.35789 + 0.58157)^2/0.01 = 376.1 episodes.
    assert minimum_detectable_difference(376, 0.35) == pytest.approx(0.10, abs=0.001)
    # 64 episodes resolve only ~24.5 points: at d = 0.245, p2 = 0.595, p_bar = 0.4725:
    # (1.95996*sqrt(2*.4725*.5275) + 0.84162*sqrt(.2275 + .595*.405))^2 / .245^2
    # = (1.95996*0.70604 + 0.84162*0.68445)^2 / 0.060025 = 3.84105 / 0.060025 = 63.99 episodes
    assert minimum_detectable_difference(64, 0.35) == pytest.approx(0.245, abs=0.001)
    assert minimum_detectable_difference(64, 0.35) > minimum_detectable_difference(376, 0.35)


def test_paired_mdd_by_hand_and_smaller_than_unpaired_when_arms_agree():
    # psi = 0.1, n = 400: n d^2 = (1.95996*sqrt(.1) + 0.84162*sqrt(.1 - d^2))^2; at d = 0.0442:
    # (0.61979 + 0.84162*0.30312)^2 = (0.61979 + 0.25511)^2 = 0.76545; 400 * 0.0442^2 = 0.78146 (close: d ~ 0.0438)
    d = paired_minimum_detectable_difference(400, 0.1)
    assert 0.043 < d < 0.045
    assert d < minimum_detectable_difference(400, 0.35)
    with pytest.raises(ValueError, match="no discordant pairs"):
        paired_minimum_detectable_difference(400, 0.0)
