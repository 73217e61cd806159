"""Statistics the two papers report, in one place (scipy/statsmodels wherever they provide the test).

MAESTRO (Section 5.3, Appendix A.3/A.7) works on seed-level summaries: one number per
(configuration, seed), the mean return over episodes 180-199. Its risk metrics borrow finance
names for seed-level quantities; where the paper does not define one, the docstring says which
reading we use and why (the paper audit notebook shows what each reading gives).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import stats as _scipy_stats


def _sample(values: Sequence[float], minimum: int = 1, name: str = "values") -> np.ndarray:
    """Validated 1-D float array of finite values with at least ``minimum`` entries."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size < minimum:
        raise ValueError(f"{name} needs at least {minimum} value(s), got {array.size}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return array


@dataclass(frozen=True)
class MannWhitney:
    """One Mann-Whitney U comparison: U of the first sample, the smaller U, raw and corrected p."""

    u_first: float
    u_min: float
    p_value: float
    p_bonferroni: float


def bonferroni(p_values: Sequence[float]) -> np.ndarray:
    """Bonferroni-adjusted p-values (each times the number of tests, capped at 1): statsmodels' ``multipletests``."""
    from statsmodels.stats.multitest import multipletests

    p = _sample(p_values, name="p_values")
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return multipletests(p, method="bonferroni")[1]


#: Largest number of splits the tie-correct permutation p of :func:`mann_whitney` enumerates.
MAX_PERMUTATION_SPLITS = 200_000


def mann_whitney(a: Sequence[float], b: Sequence[float], n_tests: int = 1, method: str = "auto") -> MannWhitney:
    """Two-sided Mann-Whitney U test of ``a`` vs ``b``; ``n_tests`` comparisons for Bonferroni.

    U convention (scipy's): ``u_first`` counts pairs (x in a, y in b) with x > y, ties counted 1/2;
    ``u_min`` = min(U_a, U_b), the number tables print.

    ``method="auto"`` (the default): without ties, scipy's exact null distribution (right for the
    paper's 2-4 seeds per group); with ties, where scipy's exact distribution does not hold (its
    documentation: the exact method assumes no ties), the tie-correct exact permutation p of the
    same statistic, by enumerating every split with scipy's ``PermutationMethod`` (up to
    :data:`MAX_PERMUTATION_SPLITS` splits; beyond, scipy's tie-corrected normal approximation).
    ``"exact"``, ``"asymptotic"`` or ``"permutation"`` force one route.
    """
    a, b = _sample(a, name="a"), _sample(b, name="b")
    if n_tests < 1:
        raise ValueError(f"n_tests must be >= 1, got {n_tests}")
    if method not in ("auto", "exact", "asymptotic", "permutation"):
        raise ValueError(f"method must be auto, exact, asymptotic or permutation, got {method!r}")
    if method == "auto":
        ties = np.unique(np.concatenate([a, b])).size < a.size + b.size
        method = ("permutation" if math.comb(a.size + b.size, a.size) <= MAX_PERMUTATION_SPLITS else "asymptotic"
                  ) if ties else "exact"
    route = _scipy_stats.PermutationMethod(n_resamples=np.inf) if method == "permutation" else method
    result = _scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method=route)
    u_first = float(result.statistic)
    return MannWhitney(u_first, min(u_first, a.size * b.size - u_first), float(result.pvalue),
                       min(float(result.pvalue) * n_tests, 1.0))


def pooled_sd(a: Sequence[float], b: Sequence[float]) -> float:
    """Pooled standard deviation weighted by degrees of freedom, sqrt(((n1-1)s1^2+(n2-1)s2^2)/(n1+n2-2))."""
    a, b = _sample(a, 2, "a"), _sample(b, 2, "b")
    return math.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))


def cohens_d(treatment: Sequence[float], control: Sequence[float]) -> float:
    """Cohen's d = (mean treatment - mean control) / pooled SD (the df-weighted pooled SD above)."""
    sd = pooled_sd(treatment, control)
    if sd == 0:
        raise ValueError("Cohen's d is undefined when both samples are constant")
    return (float(np.mean(treatment)) - float(np.mean(control))) / sd


def pairwise_mann_whitney(groups: Mapping[str, Sequence[float]]) -> list[dict[str, float | str]]:
    """Every pair of groups: U, raw p, Bonferroni p over all pairs, Cohen's d (second vs first)."""
    if len(groups) < 2:
        raise ValueError("need at least two groups to compare")
    pairs = list(combinations(groups, 2))
    rows = []
    for first, second in pairs:
        test = mann_whitney(groups[first], groups[second], n_tests=len(pairs))
        rows.append({"comparison": f"{first} vs {second}", "U": test.u_min, "U_first": test.u_first,
                     "p": test.p_value, "p_bonferroni": test.p_bonferroni,
                     "cohens_d": cohens_d(groups[second], groups[first])})
    return rows


def bootstrap_ci(values: Sequence[float], statistic: Callable[[np.ndarray], float] = np.mean,
                 n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of ``statistic`` from ``n_resamples`` seeded resamples (MAESTRO §5.3).

    scipy's ``stats.bootstrap`` (percentile method). Same seed -> same interval. ``statistic``
    is vectorised along ``axis`` when it accepts one; plain callables are applied resample by
    resample. Constant data give the point interval (value, value). With very few values the
    interval is just [min, max]: see :func:`bootstrap_degenerate`.
    """
    data = _sample(values, 2)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if np.all(data == data[0]):  # scipy returns nan (with a warning) for a degenerate distribution
        value = float(statistic(data))
        return value, value
    try:
        statistic(data[None, :], axis=-1)
        vectorized = True
    except TypeError:
        vectorized = False
    result = _scipy_stats.bootstrap((data,), statistic, n_resamples=n_resamples, confidence_level=confidence,
                                    method="percentile", vectorized=vectorized, rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def bootstrap_degenerate(n: int, confidence: float = 0.95) -> bool:
    """True when a percentile bootstrap CI of a mean from ``n`` values is (almost surely) just [min, max].

    A resample repeats the minimum n times with probability n^-n; while that is at least the
    lower tail (1 - confidence) / 2 the lower bound is the minimum itself (likewise the upper):
    n = 2 (1/4) and n = 3 (1/27) at 95 %. Such an interval says nothing beyond the data's range,
    and tables flag it.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return n == 1 or float(n) ** -n >= (1 - confidence) / 2


def seeds_for_power(effect_size: float, power: float = 0.8, alpha: float = 0.05) -> int:
    """Seeds per condition for a two-sided two-sample t-test to reach ``power`` at Cohen's d = ``effect_size``.

    statsmodels' exact noncentral-t solution, rounded up. (The t-test is the standard planning
    model; the Mann-Whitney test needs ~5 % more for normal data, by its 0.955 efficiency.)
    """
    from statsmodels.stats.power import TTestIndPower

    if effect_size == 0 or not math.isfinite(effect_size):
        raise ValueError(f"effect_size must be finite and non-zero, got {effect_size}")
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise ValueError("power and alpha must lie in (0, 1)")
    n = TTestIndPower().solve_power(effect_size=abs(effect_size), power=power, alpha=alpha,
                                     alternative="two-sided")
    return int(math.ceil(n - 1e-9))


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample SD (ddof=1) over the mean, as a fraction (MAESTRO Table 2 prints it in %): scipy's ``variation``.

    Only meaningful for a positive quantity: for a mean <= 0 it is undefined and returned as NaN
    (tables print "—"; a negative CV such as -358 % would read as "less variable than zero").
    """
    data = _sample(values, 2)
    if not data.mean() > 0:
        return math.nan
    return float(_scipy_stats.variation(data, ddof=1))


def sharpe_ratio(values: Sequence[float], baseline_mean: float) -> float:
    """MAESTRO's Sharpe ratio (Table 2/7): (mean - baseline mean) / sample SD of ``values``."""
    data = _sample(values, 2)
    sd = data.std(ddof=1)
    if sd == 0:
        raise ValueError("Sharpe ratio is undefined for constant values")
    return float((data.mean() - baseline_mean) / sd)


def downside_deviation(values: Sequence[float], ddof: int = 1) -> float:
    """sqrt(sum(min(0, x - mean)^2) / (n - ddof)): spread of the values below their own mean.

    The paper only says "downside deviation". Around the baseline mean (the finance-style
    target) A7's would be zero and its Sortino infinite, yet the paper prints 2.16, so the target
    must be the configuration's own mean. ddof=1 matches the SD used for Sharpe; the audit
    notebook shows that neither ddof reproduces both of the paper's values.
    """
    data = _sample(values, 2)
    if not 0 <= ddof < data.size:
        raise ValueError(f"ddof must lie in [0, {data.size - 1}], got {ddof}")
    shortfall = np.minimum(data - data.mean(), 0.0)
    return float(math.sqrt(np.sum(shortfall**2) / (data.size - ddof)))


def sortino_ratio(values: Sequence[float], baseline_mean: float, ddof: int = 1) -> float:
    """(mean - baseline mean) / downside deviation (see :func:`downside_deviation`)."""
    deviation = downside_deviation(values, ddof)
    if deviation == 0:
        raise ValueError("Sortino ratio is undefined when no value lies below the mean")
    return float((np.mean(values) - baseline_mean) / deviation)


def value_at_risk(values: Sequence[float], level: float = 0.05) -> float:
    """Empirical ``level`` quantile (inverted-CDF: an observed value, the minimum when n < 1/level).

    Table 7's VaR (5 %) equals each configuration's worst seed, which this definition gives for
    2-4 seeds; numpy's default interpolation would not.
    """
    data = _sample(values)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return float(np.quantile(data, level, method="inverted_cdf"))


def max_drawdown(values: Sequence[float]) -> float:
    """MAESTRO's "max drawdown" (Table 7): mean - worst value, the largest shortfall below the mean.

    Not the finance peak-to-trough of a time series: across seeds there is no order, and the
    paper's 4.24 / 0.85 / 5.51 are exactly each configuration's mean minus its worst seed
    (Table 3); its text also calls the number the "maximum deviation".
    """
    data = _sample(values)
    return float(data.mean() - data.min())


def success_rate(values: Sequence[float], threshold: float) -> float:
    """Fraction of values at or above ``threshold``.

    The paper does not define its threshold; 0.95 x 165.0 = 156.75 (the curriculum's lower bound,
    Section 4.2), inclusive, is the one reading that gives all of Table 7's 3/4, 2/2, 3/4.
    """
    data = _sample(values)
    return float(np.mean(data >= threshold))


@dataclass(frozen=True)
class PairedT:
    """A paired t-test: mean difference (second - first), t statistic, two-sided p, number of pairs."""

    mean_difference: float
    t: float
    p_value: float
    n: int


#: Relative spread below which paired differences count as all equal (a few hundred float steps).
EQUAL_DIFFERENCES_RTOL = 1e-12


def paired_ttest(first: Sequence[float], second: Sequence[float]) -> PairedT:
    """Two-sided paired t-test (MARLIN Table I: MARL vs MARLIN runs sharing a seed), via scipy.

    When every pair has the same difference the test is undefined: t and p are NaN then
    (never "significant"), e.g. when both systems score 1.0 in every run. "The same" allows for
    rounding: differences equal in exact arithmetic may land a float step apart (scores in steps
    of 1/14: 3/14 - 1/14 != 5/14 - 3/14 in binary), which would give t ~ 1e15. So the spread of the
    differences is compared with :data:`EQUAL_DIFFERENCES_RTOL` x the largest magnitude involved.
    """
    a, b = _sample(first, 2, "first"), _sample(second, 2, "second")
    if a.size != b.size:
        raise ValueError(f"paired samples need equal lengths, got {a.size} and {b.size}")
    difference = b - a
    scale = max(float(np.abs(a).max()), float(np.abs(b).max()), float(np.abs(difference).max()))
    if np.ptp(difference) <= EQUAL_DIFFERENCES_RTOL * scale:
        return PairedT(float(difference.mean()), math.nan, math.nan, int(a.size))
    result = _scipy_stats.ttest_rel(b, a)
    return PairedT(float(difference.mean()), float(result.statistic), float(result.pvalue), int(a.size))
