"""Recompute the papers' reported statistics from the raw numbers they print, and compare.

MAESTRO prints per-seed returns (Table 3) and, from them, summary statistics (Tables 2, 4, 7 and
the text). Each check recomputes one reported number with :mod:`marlinkit.stats` and says whether
the two agree *within rounding*: the per-seed inputs are printed to 2 decimals, so each may be off
by up to +-0.005; we evaluate the statistic at every corner of that box plus random points inside
it, and a reported number agrees when its own rounding interval overlaps the recomputed range.

MARLIN's Table I gives means only (no per-run values, and its bold marks are lost in the text),
so its t-tests cannot be recomputed; what can be checked is that each mean is attainable at all:
with both robots starting 7 steps from their goals, one run scores a multiple of 1/14 and the
mean of 50 runs a multiple of 1/700.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from marlinkit import paper_values as pv
from marlinkit import stats
from marlinkit.config_fields import label, required_preset
from marlinkit.plots import Provenance
from marlinkit.result import Result

Inputs = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Config:
    """The ``paper_audit`` section (notebooks/maestro/paper_audit)."""

    bootstrap_resamples: int = 10000
    """Resamples of each bootstrap CI (``maestro_bootstrap``)."""
    bootstrap_seed: int = 0
    """Seed of the bootstrap resampling."""
    rounding_samples: int = 2000
    """Random points inside each input's rounding box, beside its corners (``maestro_checks``, ``maestro_variants``)."""
    preset: str | None = label()
    """The preset named on the outputs' footer (a label)."""

    def __post_init__(self):
        if self.bootstrap_resamples < 100 or self.rounding_samples < 0:
            raise ValueError(f"bootstrap_resamples must be >= 100 and rounding_samples >= 0, got "
                             f"{self.bootstrap_resamples}, {self.rounding_samples}")
INPUT_DECIMALS = 2  # Table 3 and Table 2 print two decimals
MAESTRO_PAIRS = (("A2", "A7"), ("A2", "A8"), ("A7", "A8"))
COLUMNS = ["source", "quantity", "condition", "reported", "recomputed", "recomputed_low", "recomputed_high",
           "agrees", "note"]


def table3_seeds() -> dict[str, np.ndarray]:
    """MAESTRO Table 3's per-seed returns, one array per condition (seed order 200..500)."""
    return {name: np.array(list(values.values())) for name, values in pv.MAESTRO_TABLE3_SEEDS.items()}


def table2_inputs() -> dict[str, np.ndarray]:
    """Table 2's own means and SDs as [mean, sd] per condition, for its internal checks."""
    return {name: np.array([row["mean"], row["sd"]]) for name, row in pv.MAESTRO_TABLE2.items()}


def cohen_label(d: float) -> str:
    """Cohen's (1988) conventional label for |d|: 0.2 small, 0.5 medium, 0.8 large."""
    size = abs(d)
    return "Negligible" if size < 0.2 else "Small" if size < 0.5 else "Medium" if size < 0.8 else "Large"


class _Recorder(dict):
    """A dict that remembers which keys were read."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def values(self):
        self.read.update(self.keys())
        return super().values()


def _read_by(fn: Callable[[Inputs], float], inputs: Inputs) -> list[str]:
    recorder = _Recorder(inputs)
    fn(recorder)
    return [k for k in inputs if k in recorder.read]


def recomputed_range(fn: Callable[[Inputs], float], inputs: Inputs, samples: int,
                     seed: int) -> tuple[float, float, float]:
    """fn at the printed inputs, and its min/max over every input moved within its rounding (+-0.005).

    Corners of the box when the statistic reads at most 12 inputs, plus ``samples`` uniform points inside.
    """
    half = 0.5 * 10.0 ** -INPUT_DECIMALS
    names = _read_by(fn, inputs)  # perturb only the inputs the statistic reads (fewer corners)
    if not names:  # a function of printed constants only
        value = float(fn({}))
        return value, value, value
    flat = np.concatenate([np.asarray(inputs[k], float) for k in names])
    cuts = np.cumsum([len(inputs[k]) for k in names])[:-1]
    shifts = [np.zeros(flat.size)]
    if flat.size <= 12:
        shifts += [np.array(c) for c in itertools.product((-half, half), repeat=flat.size)]
    shifts += list(np.random.default_rng(seed).uniform(-half, half, size=(samples, flat.size)))
    values = []
    for shift in shifts:
        moved = dict(zip(names, np.split(flat + shift, cuts)))
        values.append(float(fn(moved)))
    return values[0], min(values), max(values)


def _agrees(reported: float, decimals: int, low: float, high: float) -> bool:
    half = 0.5 * 10.0 ** -decimals + 1e-9
    return reported - half <= high and reported + half >= low


def _check(source: str, quantity: str, condition: str, reported: float, decimals: int,
           fn: Callable[[Inputs], float], inputs: Inputs, samples: int, seed: int, note: str = "") -> dict:
    value, low, high = recomputed_range(fn, inputs, samples, seed)
    return {"source": source, "quantity": quantity, "condition": condition, "reported": reported,
            "recomputed": value, "recomputed_low": low, "recomputed_high": high,
            "agrees": _agrees(reported, decimals, low, high), "note": note}


def _label_row(source: str, condition: str, reported: str, recomputed: str, note: str = "") -> dict:
    return {"source": source, "quantity": "effect size label", "condition": condition, "reported": reported,
            "recomputed": recomputed, "recomputed_low": None, "recomputed_high": None,
            "agrees": reported == recomputed, "note": note}


def _baseline_mean(x) -> float:
    """A2's mean: the baseline of the paper's Sharpe and Sortino ratios."""
    return float(np.mean(x["A2"]))


def _condition_checks(add, seeds, t2) -> None:
    """Tables 2, 3 and 7: each condition's summary statistics, from its per-seed returns (and Table 2's own)."""
    base = _baseline_mean
    for name in seeds:
        summary, table2, table7 = pv.MAESTRO_TABLE3_SUMMARY[name], pv.MAESTRO_TABLE2[name], pv.MAESTRO_TABLE7[name]
        add("Table 3", "mean", name, summary["mean"], 2, lambda x, n=name: np.mean(x[n]))
        add("Table 3", "SD", name, summary["sd"], 2, lambda x, n=name: np.std(x[n], ddof=1))
        add("Table 3", "range", name, summary["range"], 2, lambda x, n=name: np.ptp(x[n]))
        add("Table 2", "mean", name, table2["mean"], 2, lambda x, n=name: np.mean(x[n]))
        add("Table 2", "SD", name, table2["sd"], 2, lambda x, n=name: np.std(x[n], ddof=1))
        add("Table 2", "CV (%)", name, table2["cv_pct"], 2,
            lambda x, n=name: 100 * stats.coefficient_of_variation(x[n]))
        add("Table 2 (own mean, SD)", "CV (%)", name, table2["cv_pct"], 2, lambda x, n=name: 100 * x[n][1] / x[n][0],
            t2, "internal: Table 2's CV from Table 2's mean and SD")
        add("Table 2", "best", name, table2["best"], 2, lambda x, n=name: np.max(x[n]))
        add("Table 2", "worst", name, table2["worst"], 2, lambda x, n=name: np.min(x[n]))
        add("Table 7", "VaR (5%)", name, table7["var_5"], 2, lambda x, n=name: stats.value_at_risk(x[n]))
        add("Table 7", "max drawdown", name, table7["max_drawdown"], 2, lambda x, n=name: stats.max_drawdown(x[n]),
            note="read as mean - worst seed")
        add("Table 7", "success rate", name, table7["success_rate"], 2,
            lambda x, n=name: stats.success_rate(x[n], 0.95 * pv.MAESTRO_TARGET_RETURN),
            note="read as share of seeds >= 0.95 x 165 = 156.75")
        if name == "A2":
            continue
        add("Table 2", "Sharpe", name, table2["sharpe"], 2, lambda x, n=name: stats.sharpe_ratio(x[n], base(x)))
        add("Table 2 (own mean, SD)", "Sharpe", name, table2["sharpe"], 2,
            lambda x, n=name: (x[n][0] - x["A2"][0]) / x[n][1], t2, "internal: from Table 2's means and SD")
        add("Table 7", "Sharpe", name, table7["sharpe"], 2, lambda x, n=name: stats.sharpe_ratio(x[n], base(x)))
        add("Table 7", "Sortino", name, table7["sortino"], 2,
            lambda x, n=name: stats.sortino_ratio(x[n], base(x)), note="downside deviation around own mean, n - 1")
    for seed_index, (seed_id, reported) in enumerate(pv.MAESTRO_TABLE3_PER_SEED_RANGE.items()):
        add("Table 3", "per-seed range", f"seed {seed_id}", reported, 2,
            lambda x, k=seed_index: np.ptp([v[k] for v in x.values() if len(v) > k]))


def _pair_checks(add, rows: list[dict], seeds) -> None:
    """Table 4 and the power analysis of A.3: each pair's test statistics and effect label."""
    for first, second in MAESTRO_PAIRS:
        paper = pv.MAESTRO_TABLE4[(first, second)]
        pair = f"{first} vs {second}"
        add("Table 4", "Mann-Whitney U", pair, paper["U"], 1,
            lambda x, a=first, b=second: stats.mann_whitney(x[a], x[b]).u_min, note="smaller of U1, U2")
        add("Table 4", "p (exact, two-sided)", pair, paper["p"], 3,
            lambda x, a=first, b=second: stats.mann_whitney(x[a], x[b]).p_value, note="uncorrected")
        add("Table 4", "Cohen's d", pair, paper["cohens_d"], 2,
            lambda x, a=first, b=second: stats.cohens_d(x[b], x[a]), note="df-weighted pooled SD")
        rows.append(_label_row("Table 4", pair, paper["effect"],
                               cohen_label(stats.cohens_d(seeds[second], seeds[first]))))
        n_paper = pv.MAESTRO_POWER_SEEDS[(first, second)]
        add("A.3 text", "seeds for 80% power", pair, n_paper, 0,
            lambda x, d=paper["cohens_d"]: stats.seeds_for_power(d),
            note=f"two-sample t-test at the paper's d = {paper['cohens_d']}")


def _text_checks(add) -> None:
    """The numbers the paper's text states (abstract, Sections 6-7, Appendix A), from Table 3."""
    base = _baseline_mean
    a7_gain = lambda x: 100 * (np.mean(x["A7"]) / np.mean(x["A2"]) - 1)  # noqa: E731
    text_checks = [
        ("abstract: A7 mean return", 2, lambda x: np.mean(x["A7"])),
        ("abstract: A7 improvement over A2 (%)", 1, a7_gain),
        ("abstract/A.3: A7 Sharpe", 2, lambda x: stats.sharpe_ratio(x["A7"], base(x))),
        ("abstract/A.3: A8 Sharpe", 2, lambda x: stats.sharpe_ratio(x["A8"], base(x))),
        ("6.2/7.1: A7 Sharpe", 2, lambda x: stats.sharpe_ratio(x["A7"], base(x))),
        ("6.2: A8 Sharpe", 2, lambda x: stats.sharpe_ratio(x["A8"], base(x))),
        ("Fig. 5: A8 gain over A2", 2, lambda x: np.mean(x["A8"]) - base(x)),
        ("A.1: A8 range", 2, lambda x: np.ptp(x["A8"])),
        ("A.1: A7 range", 2, lambda x: np.ptp(x["A7"])),
        ("A.1: A7 max deviation", 2, lambda x: np.max(np.abs(x["A7"] - np.mean(x["A7"])))),
        ("A.1: A8 max deviation", 2, lambda x: np.max(np.abs(x["A8"] - np.mean(x["A8"])))),
        ("A.1: A2 max deviation", 2, lambda x: np.max(np.abs(x["A2"] - base(x)))),
        ("A.1: A7 worst minus A2 mean", 2, lambda x: np.min(x["A7"]) - base(x)),
        ("A.1: A2 mean minus A8 worst", 2, lambda x: base(x) - np.min(x["A8"])),
    ]
    for claim, decimals, fn in text_checks:
        source, quantity = claim.split(": ", 1)
        add(source, quantity, "", pv.MAESTRO_TEXT_CLAIMS[claim], decimals, fn, note="from Table 3")


def maestro_checks(samples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Every reported MAESTRO statistic that follows from Table 3, recomputed; one row each."""
    seeds, t2 = table3_seeds(), table2_inputs()
    rows: list[dict] = []

    def add(source, quantity, condition, reported, decimals, fn, inputs=seeds, note="", groups=None):
        used = {k: inputs[k] for k in (groups or inputs)}  # perturb only what the check reads
        rows.append(_check(source, quantity, condition, reported, decimals, fn, used, samples, seed, note))

    _condition_checks(add, seeds, t2)
    _pair_checks(add, rows, seeds)
    _text_checks(add)
    return pd.DataFrame(rows, columns=COLUMNS)


def maestro_variants(samples: int = 500, seed: int = 0) -> pd.DataFrame:
    """Other formulas a reader might have used for the numbers that do not agree, and what each gives."""
    seeds = table3_seeds()
    rows: list[dict] = []
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)

    def add(quantity, condition, variant, reported, decimals, fn, groups=("A2", "A7", "A8")):
        used = {k: seeds[k] for k in groups}
        rows.append(_check("variant", quantity, condition, reported, decimals, fn, used, samples, seed, variant))

    for first, second in MAESTRO_PAIRS:
        paper = pv.MAESTRO_TABLE4[(first, second)]
        pair = f"{first} vs {second}"
        avg_sd = lambda x, a=first, b=second: (np.mean(x[b]) - np.mean(x[a])) / math.sqrt(  # noqa: E731
            (np.var(x[a], ddof=1) + np.var(x[b], ddof=1)) / 2)
        add("Cohen's d", pair, "SD = sqrt((s1^2 + s2^2) / 2), unweighted", paper["cohens_d"], 2, avg_sd)
        add("Cohen's d", pair, "SD = control (first) group's SD (Glass's delta)", paper["cohens_d"], 2,
            lambda x, a=first, b=second: (np.mean(x[b]) - np.mean(x[a])) / np.std(x[a], ddof=1))
        for method, continuity in (("asymptotic", True), ("asymptotic", False)):
            add("p", pair, f"scipy {method}, continuity correction {continuity}", paper["p"], 3,
                lambda x, a=first, b=second, m=method, c=continuity: scipy_stats.mannwhitneyu(
                    x[a], x[b], method=m, use_continuity=c).pvalue)
        add("p", pair, "exact, Bonferroni x3", paper["p"], 3,
            lambda x, a=first, b=second: stats.mann_whitney(x[a], x[b], n_tests=3).p_bonferroni)
        add("U", pair, "U of the first sample", paper["U"], 1,
            lambda x, a=first, b=second: stats.mann_whitney(x[a], x[b]).u_first)
        n_paper = pv.MAESTRO_POWER_SEEDS[(first, second)]
        add("seeds for 80% power", pair, "(z_.975 + z_.8)^2 / d^2 at the paper's d (one-sample formula)",
            n_paper, 0, lambda x, d=paper["cohens_d"]: math.ceil(z**2 / d**2))
        add("seeds for 80% power", pair, "2 (z_.975 + z_.8)^2 / d^2 at the paper's d (two-sample, normal)",
            n_paper, 0, lambda x, d=paper["cohens_d"]: math.ceil(2 * z**2 / d**2))
        add("seeds for 80% power", pair, "t-test at our recomputed d", n_paper, 0,
            lambda x, a=first, b=second: stats.seeds_for_power(stats.cohens_d(x[b], x[a])))
    for name in ("A7", "A8"):
        reported = pv.MAESTRO_TABLE7[name]["sortino"]
        add("Sortino", name, "downside deviation around own mean, divide by n", reported, 2,
            lambda x, n=name: stats.sortino_ratio(x[n], np.mean(x["A2"]), ddof=0))
        add("Sortino", name, "downside deviation of below-mean seeds only", reported, 2,
            lambda x, n=name: (np.mean(x[n]) - np.mean(x["A2"])) / math.sqrt(
                np.mean(np.square(x[n][x[n] < np.mean(x[n])] - np.mean(x[n])))))
    for name in pv.MAESTRO_TABLE3_SEEDS:
        add("success rate", name, "share of seeds above the A2 mean", pv.MAESTRO_TABLE7[name]["success_rate"], 2,
            lambda x, n=name: float(np.mean(x[n] > np.mean(x["A2"]))))
        add("VaR (5%)", name, "numpy default (linear) 5th percentile", pv.MAESTRO_TABLE7[name]["var_5"], 2,
            lambda x, n=name: np.quantile(x[n], 0.05))
    return pd.DataFrame(rows, columns=COLUMNS).rename(columns={"note": "variant"})


def maestro_bootstrap(n_resamples: int, seed: int) -> pd.DataFrame:
    """95 % bootstrap CIs of each condition's mean from Table 3 (the paper prints none to compare)."""
    rows = []
    for name, values in table3_seeds().items():
        low, high = stats.bootstrap_ci(values, n_resamples=n_resamples, seed=seed)
        rows.append({"condition": name, "seeds": len(values), "mean": float(np.mean(values)),
                     "ci_low": low, "ci_high": high, "resamples": n_resamples,
                     "degenerate": stats.bootstrap_degenerate(len(values))})  # True: the CI is just [min, max]
    return pd.DataFrame(rows)


def marlin_granularity() -> pd.DataFrame:
    """Is each Table I mean a multiple of 1/(14 x runs), as a mean of 50 runs must be?"""
    grid = 14 * pv.MARLIN_TABLE1_RUNS  # p_i in sevenths (D = 7), averaged over 2 robots and the runs
    rows = []
    for scenario, checkpoints in pv.MARLIN_TABLE1.items():
        for episode, pair in checkpoints.items():
            for system, printed in zip(("MARL", "MARLIN"), pair):
                value = float(printed)
                k = round(value * grid)
                rows.append({"scenario": scenario, "episode": episode, "system": system, "printed": printed,
                             "reported": value,
                             "nearest_k_over_700": k, "nearest_value": k / grid,
                             "attainable": abs(k / grid - value) <= 0.5e-4 + 1e-12})
    return pd.DataFrame(rows)


def run(cfg: Config) -> Result:
    """Every check of the section: tables ``maestro_checks``, ``maestro_disagreements`` (the checks that do not
    agree), ``maestro_variants``, ``maestro_bootstrap`` and ``marlin_granularity``; numbers transcribed from the
    papers, no runs and no files."""
    config, preset = cfg, required_preset(cfg)
    checks = maestro_checks(samples=config.rounding_samples, seed=0)
    tables = {"maestro_checks": checks, "maestro_disagreements": checks[~checks.agrees].drop(columns="agrees"),
              "maestro_variants": maestro_variants(samples=config.rounding_samples, seed=0),
              "maestro_bootstrap": maestro_bootstrap(config.bootstrap_resamples, config.bootstrap_seed),
              "marlin_granularity": marlin_granularity()}
    return Result("paper_audit", preset, config, tables, (),
                  Provenance(preset, source="numbers transcribed from the papers; no runs"))

