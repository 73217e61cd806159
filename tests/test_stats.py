"""marlinkit.stats against hand calculations and independent routes (enumeration, other libraries)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from marlinkit import stats


def _exact_mann_whitney_p(a, b):
    """Two-sided exact p by enumerating every split of the pooled sample (no ties)."""
    pooled = np.concatenate([a, b])
    u_obs = sum(x > y for x in a for y in b)
    centre = len(a) * len(b) / 2
    us = [sum(pooled[i] > y for i in idx for y in np.delete(pooled, idx))
          for idx in map(list, combinations(range(len(pooled)), len(a)))]
    return u_obs, np.mean([abs(u - centre) >= abs(u_obs - centre) for u in us])


def test_bonferroni_multiplies_and_caps():
    np.testing.assert_allclose(stats.bonferroni([0.01, 0.2, 0.5]), [0.03, 0.6, 1.0])
    with pytest.raises(ValueError):
        stats.bonferroni([1.5])


@pytest.mark.parametrize("a, b", [([158.84, 156.75, 159.42, 152.69], [161.18, 158.95, 166.08, 154.72]),
                                  ([1.0, 4.0, 6.0], [2.0, 3.0, 5.0, 8.0, 9.0])])
def test_mann_whitney_matches_enumeration(a, b):
    u_first, p = _exact_mann_whitney_p(np.array(a), np.array(b))
    result = stats.mann_whitney(a, b, n_tests=3)
    assert result.u_first == u_first
    assert result.u_min == min(u_first, len(a) * len(b) - u_first)
    assert result.p_value == pytest.approx(p)
    assert result.p_bonferroni == pytest.approx(min(3 * p, 1.0))


def test_cohens_d_hand_values():
    assert stats.cohens_d([4, 5, 6], [1, 2, 3]) == pytest.approx(3.0)
    # s1^2 = 20/3 (n=4), s2^2 = 2 (n=2): pooled = sqrt((3*20/3 + 1*2) / 4) = sqrt(5.5)
    assert stats.cohens_d([2, 4, 6, 8], [1, 3]) == pytest.approx(3 / math.sqrt(5.5))
    assert stats.cohens_d([1, 3], [2, 4, 6, 8]) == pytest.approx(-3 / math.sqrt(5.5))
    with pytest.raises(ValueError):
        stats.cohens_d([1, 1], [1, 1])


def test_pairwise_rows_use_all_pairs_for_bonferroni():
    rows = stats.pairwise_mann_whitney({"A": [1, 2, 3], "B": [4, 5, 6], "C": [2.5, 3.5, 7]})
    assert [r["comparison"] for r in rows] == ["A vs B", "A vs C", "B vs C"]
    assert rows[0]["U"] == 0 and rows[0]["p"] == pytest.approx(0.1)  # 2 of C(6,3)=20 splits as extreme
    assert rows[0]["p_bonferroni"] == pytest.approx(0.3)
    assert rows[0]["cohens_d"] == pytest.approx(3.0)


def test_bootstrap_ci_seeded_and_close_to_scipy():
    data = np.random.default_rng(1).normal(10.0, 2.0, size=40)
    ours = stats.bootstrap_ci(data, n_resamples=10_000, seed=3)
    assert ours == stats.bootstrap_ci(data, n_resamples=10_000, seed=3)
    assert ours != stats.bootstrap_ci(data, n_resamples=10_000, seed=4)
    theirs = scipy_stats.bootstrap((data,), np.mean, n_resamples=10_000, method="percentile",
                                   rng=np.random.default_rng(9)).confidence_interval
    assert ours[0] == pytest.approx(theirs.low, abs=0.08) and ours[1] == pytest.approx(theirs.high, abs=0.08)
    # the plain normal-theory interval, a third route
    half = 1.96 * data.std(ddof=0) / math.sqrt(data.size)
    assert ours[0] == pytest.approx(data.mean() - half, abs=0.1)
    median_ci = stats.bootstrap_ci(data, statistic=lambda row: float(np.median(row)), n_resamples=500)
    assert median_ci[0] < np.median(data) < median_ci[1]


def test_seeds_for_power_matches_cohens_table():
    # Cohen (1988), Table 2.4.1: n per group for power 0.80, two-sided alpha 0.05
    assert stats.seeds_for_power(0.8) == 26
    assert stats.seeds_for_power(0.5) == 64
    assert stats.seeds_for_power(0.2) == 394  # Cohen prints 393 (normal approximation + correction)
    with pytest.raises(ValueError):
        stats.seeds_for_power(0.0)


def test_risk_metrics_hand_values():
    values = [1.0, 2.0, 3.0, 6.0]  # mean 3, sample SD sqrt(14/3)
    sd = math.sqrt(14 / 3)
    assert stats.coefficient_of_variation(values) == pytest.approx(sd / 3)
    assert stats.sharpe_ratio(values, baseline_mean=2.0) == pytest.approx(1 / sd)
    # below-mean shortfalls -2, -1: sqrt(5 / 3) with ddof=1, sqrt(5 / 4) with ddof=0
    assert stats.downside_deviation(values) == pytest.approx(math.sqrt(5 / 3))
    assert stats.sortino_ratio(values, 2.0, ddof=0) == pytest.approx(1 / math.sqrt(5 / 4))
    assert stats.value_at_risk(values) == 1.0
    assert stats.value_at_risk(np.arange(1, 101)) == 5.0
    assert stats.max_drawdown(values) == pytest.approx(2.0)
    assert stats.success_rate(values, threshold=2.0) == 0.75
    with pytest.raises(ValueError):
        stats.sharpe_ratio([2.0, 2.0], 1.0)
    with pytest.raises(ValueError):
        stats.value_at_risk([1.0, float("nan")])


# ----- edges ---------------------------------------------------------------------------------

def test_paired_ttest_treats_differences_a_float_step_apart_as_equal():
    """Scores in steps of 1/14 (MARLIN performance): equal shifts must never read as significant."""
    rng = np.random.default_rng(0)
    unequal_in_floats = 0
    for _ in range(300):
        a = rng.integers(0, 15, size=int(rng.integers(2, 12))) / 14
        b = a + int(rng.integers(-14, 15)) / 14
        unequal_in_floats += not np.all((b - a) == (b - a)[0])
        test = stats.paired_ttest(a, b)
        assert math.isnan(test.p_value) and math.isnan(test.t)
    assert unequal_in_floats > 50  # the case really occurs: exact float equality would fail here
    # a genuine one-step difference in one pair is still a test
    assert math.isfinite(stats.paired_ttest([1 / 14, 3 / 14, 5 / 14], [2 / 14, 4 / 14, 7 / 14]).p_value)


def _tie_correct_p(a, b):
    """Two-sided permutation p of U with ties counted 1/2, by enumerating every split."""
    pooled = np.concatenate([a, b])

    def u(first, second):
        return sum((x > y) + 0.5 * (x == y) for x in first for y in second)

    centre = len(a) * len(b) / 2
    u_obs = u(a, b)
    us = [u(pooled[list(idx)], np.delete(pooled, list(idx))) for idx in combinations(range(len(pooled)), len(a))]
    return u_obs, np.mean([abs(x - centre) >= abs(u_obs - centre) - 1e-12 for x in us])


@pytest.mark.parametrize("a, b", [([1.0, 2.0, 2.0], [2.0, 3.0, 4.0]), ([5.0, 5.0], [1.0, 5.0, 7.0, 9.0]),
                                  ([1.0, 2.0, 3.0, 3.0], [3.0, 4.0, 5.0, 6.0])])
def test_mann_whitney_with_ties_gives_the_tie_correct_permutation_p(a, b):
    u_obs, p = _tie_correct_p(np.array(a), np.array(b))
    result = stats.mann_whitney(a, b)
    assert result.u_first == u_obs
    assert result.p_value == pytest.approx(p)
    # scipy's exact distribution assumes no ties: it would give another number here
    forced = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue
    assert forced != pytest.approx(p)


def test_coefficient_of_variation_is_scipy_and_undefined_for_negative_means():
    data = [3.0, 5.0, 10.0]
    assert stats.coefficient_of_variation(data) == scipy_stats.variation(data, ddof=1)
    assert math.isnan(stats.coefficient_of_variation([-2.0, 1.0, -5.0]))
    assert math.isnan(stats.coefficient_of_variation([-1.0, 1.0]))


def test_bonferroni_is_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = [0.001, 0.02, 0.3, 0.04]
    np.testing.assert_array_equal(stats.bonferroni(p), multipletests(p, method="bonferroni")[1])


def test_bootstrap_is_scipy_and_degenerate_intervals_are_flagged():
    data = np.array([158.84, 156.75, 159.42, 152.69])
    ours = stats.bootstrap_ci(data, n_resamples=2000, seed=5)
    theirs = scipy_stats.bootstrap((data,), np.mean, n_resamples=2000, method="percentile",
                                   rng=np.random.default_rng(5)).confidence_interval
    assert ours == (theirs.low, theirs.high)
    for values in ([159.61, 157.92], [1.0, 4.0, 9.0]):
        assert stats.bootstrap_ci(values, n_resamples=2000) == (min(values), max(values))
        assert stats.bootstrap_degenerate(len(values))
    assert not stats.bootstrap_degenerate(4) and not stats.bootstrap_degenerate(12)
    assert stats.bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
