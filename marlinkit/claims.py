"""The claims ledger: every empirical claim of both papers, judged by the pre-registered plan (``docs/claims.toml``).

For each claim the plan names the metric, the protocols, the stand-ins, the test, the Holm family, the margin and
the verdict rule; :mod:`marlinkit.claims_data` reads each row's values from the committed runs and tables, and this
module applies the plan to them. Nothing is decided row by row: one function per test of the plan's vocabulary,
one Holm correction per family, stand-in (MAESTRO: run set) and protocol, and one verdict rule for all rows.

Verdicts (symmetric):

* ``holds``: the one-sided test in the paper's direction is significant after Holm (non-inferiority: the effect is
  significantly above minus the margin) and, where the plan's ``holds_requires`` is ``every-unit``, every unit's
  difference lies in the paper's direction (else ``inconclusive``, with the worst unit's margin);
* ``contradicted``: the one-sided test in the opposite direction is significant after Holm (non-inferiority: the
  effect is significantly below minus the margin; equivalence: significantly outside the margin);
* ``equivalent``: both one-sided tests of TOST reject an effect outside the declared margin, after Holm;
* ``inconclusive``: none of these; the row gives the effect detectable at 80 % power with its n (a t approximation
  for rank tests). A row whose paired or one-sample n is below the plan's ``min_n`` is inconclusive with "n = k of
  min_n";
* ``not testable``: the runs cannot test it; the row says why and names the experiment that would;
* ``mixed`` (rows with several cells): some cells hold and others are contradicted.

Each row carries its effect (natural units: ``x - y``, ``x - null``, Spearman's rho, or the bootstrap statistic; the
relative change ``mean(x) / mean(y) - 1`` where the plan's ``effect_scale`` is ``relative``) with a bootstrap 95 % CI
over its units (seeds or runs; a t interval where a table commits only mean, SD and n).
A claim's rows sit together; each carries the claim's summary verdict: the primary protocol's verdict across
stand-ins, or "depends on the stand-in" with each listed.

MAESTRO rows comparing learners pass the plan's gates first: each compared configuration beats the random phase
switcher on the held-out flows (:func:`gate_beats_random`), and A7 is not A2 to the bit (:func:`gate_a7_distinct`).

``notebooks/claims_ledger.ipynb`` writes :data:`LEDGER_PATH` (with each test in :data:`CELLS_PATH` and the values it
was computed from in :data:`VALUES_PATH`) and renders
the README's claims table between :data:`README_BEGIN` and :data:`README_END`.
"""

from __future__ import annotations

import math
import warnings
import zlib
from dataclasses import dataclass, replace
from typing import NamedTuple
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from marlinkit import claims_data as data
from marlinkit import claims_plan, paths

PAPER_FIGURES = paths.FIGURES_DIR / "paper"
LEDGER_PATH = paths.FIGURES_DIR / "claims.csv"
CELLS_PATH = paths.FIGURES_DIR / "claims_cells.csv"
VALUES_PATH = paths.FIGURES_DIR / "claims_values.csv"
README_BEGIN = "<!-- claims ledger: begin (generated from figures/claims.csv) -->"
README_END = "<!-- claims ledger: end -->"
VERDICTS = ("holds", "contradicted", "equivalent", "inconclusive", "not testable", "mixed")
COLUMNS = ["paper", "claim_id", "claim", "paper_location", "stand_in", "runs", "engine", "curriculum_target",
           "protocol", "metric", "compared", "test", "family", "n", "effect", "ci_low", "ci_high", "effect_scale", "p",
           "p_adjusted",
           "verdict", "detail", "summary", "ours", "evidence"]
CELL_COLUMNS = ["claim_id", "stand_in", "runs", "protocol", "cell", "test", "pairing", "sign", "null", "margin",
                "family", "n", "effect", "ci_low", "ci_high", "effect_scale", "p_holds", "p_contra", "p_equiv",
                "p_holds_adj", "p_contra_adj", "p_equiv_adj", "mde", "worst_unit", "verdict"]
#: The engine of the rows that have no MAESTRO run set (MARLIN's corridors; MAESTRO's fixed-time sweep ran on both).
ENGINES = {"MARLIN": "corridor core (numpy)", "MAESTRO": "CityFlow, SUMO"}
#: Random-switcher margin the held-out gate requires (calibrated points), and the flows it checks.
GATE_MARGIN = 20.0


# ----- one cell's test -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tested:
    """One cell's test: n, the effect with its CI, the one-sided p-values and the effect's standard error."""

    name: str
    n: int
    effect: float
    ci_low: float
    ci_high: float
    p_holds: float
    p_contra: float
    p_equiv: float = math.nan
    se: float = math.nan
    df: float = math.nan
    n_small: bool = False
    worst: float = math.nan
    """The smallest unit's difference in the paper's direction (paired and one-sample tests)."""


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(key.encode()))


def _ci(samples: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2 * 100
    return float(np.nanpercentile(samples, tail)), float(np.nanpercentile(samples, 100 - tail))


def _boot_mean(d: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    return d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)


def _one_sided(test, values, **kwargs) -> tuple[float, float]:
    """(p in the paper's direction, p against it) of a scipy test taking ``alternative``."""
    return (float(test(*values, alternative="greater", **kwargs).pvalue),
            float(test(*values, alternative="less", **kwargs).pvalue))


def _wilcoxon(d: np.ndarray) -> tuple[float, float]:
    if not np.any(d != 0):
        return 1.0, 1.0
    return _one_sided(stats.wilcoxon, (d,))


def _sign(d: np.ndarray) -> tuple[float, float]:
    k, n = int(np.sum(d > 0)), int(np.sum(d != 0))
    if n == 0:
        return 1.0, 1.0
    return (float(stats.binomtest(k, n, 0.5, alternative="greater").pvalue),
            float(stats.binomtest(k, n, 0.5, alternative="less").pvalue))


def _t_summary(mean: float, sd: float, n: int, mu: float, alternative: str) -> float:
    t = (mean - mu) / (sd / math.sqrt(n))
    return float(stats.t.sf(t, n - 1) if alternative == "greater" else stats.t.cdf(t, n - 1))


def _paired_like(test: str, cell: data.Cell, margin: float, key: str, settings) -> Tested:
    """Tests on one sample of differences (paired, or one-sample against ``null``)."""
    d = np.asarray(cell.x, float) - (np.asarray(cell.y, float) if cell.y else cell.null)
    s = cell.sign * d
    boot = _boot_mean(d, settings.bootstrap_resamples, _rng(key))
    low, high = _ci(boot, settings.ci_level)
    se = float(np.std(d, ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.nan
    p_eq = math.nan
    if test in ("paired-t", "one-sample-t"):
        ph, pc = _one_sided(stats.ttest_1samp, (s, 0.0))
    elif test == "wilcoxon-signed-rank":
        ph, pc = _wilcoxon(s)
    elif test in ("sign-test", "mcnemar-exact"):
        ph, pc = _sign(s)
    elif test == "noninferiority-paired-t":
        ph, pc = _one_sided(stats.ttest_1samp, (s + margin, 0.0))
    elif test in ("tost-paired-t", "tost-one-sample-t"):
        ph, pc, p_eq = _tost(d, margin)
    else:
        raise ValueError(f"{test} is not a test of paired or one-sample data")
    worst = float(np.min(s)) if len(s) else math.nan
    return Tested(cell.name, len(d), float(np.mean(d)), low, high, ph, pc, p_eq, se, len(d) - 1, worst=worst)


def _tost(d: np.ndarray, margin: float) -> tuple[float, float, float]:
    above = float(stats.ttest_1samp(d, -margin, alternative="greater").pvalue)
    below = float(stats.ttest_1samp(d, margin, alternative="less").pvalue)
    outside = min(float(stats.ttest_1samp(d, -margin, alternative="less").pvalue),
                  float(stats.ttest_1samp(d, margin, alternative="greater").pvalue))
    return math.nan, min(1.0, 2 * outside), max(above, below)


def _summary_test(test: str, cell: data.Cell, margin: float, settings) -> Tested:
    """A one-sample test from a table's mean, SD and n (t interval for the CI)."""
    mean, sd, n = cell.summary
    effect, se = mean - cell.null, sd / math.sqrt(n)
    half = stats.t.ppf(0.5 + settings.ci_level / 2, n - 1) * se
    if test != "tost-one-sample-t":
        raise ValueError(f"{test} from a summary is not in the plan's vocabulary")
    p_eq = max(_t_summary(mean, sd, n, cell.null - margin, "greater"),
               _t_summary(mean, sd, n, cell.null + margin, "less"))
    outside = min(_t_summary(mean, sd, n, cell.null - margin, "less"),
                  _t_summary(mean, sd, n, cell.null + margin, "greater"))
    return Tested(cell.name, n, effect, effect - half, effect + half, math.nan, min(1.0, 2 * outside), p_eq, se, n - 1)


def _unpaired(test: str, cell: data.Cell, margin: float, key: str, settings) -> Tested:
    x, y = np.asarray(cell.x, float), np.asarray(cell.y, float)
    sx, sy = cell.sign * x, cell.sign * y
    rng = _rng(key)
    boot = (_boot_mean(x, settings.bootstrap_resamples, rng) - _boot_mean(y, settings.bootstrap_resamples, rng))
    low, high = _ci(boot, settings.ci_level)
    se = math.sqrt(np.var(x, ddof=1) / len(x) + np.var(y, ddof=1) / len(y))
    if test == "welch-t":
        ph, pc = _one_sided(stats.ttest_ind, (sx, sy), equal_var=False)
    elif test == "noninferiority-welch-t":
        ph, pc = _one_sided(stats.ttest_ind, (sx + margin, sy), equal_var=False)
    elif test == "mann-whitney":
        ph, pc = _one_sided(stats.mannwhitneyu, (sx, sy))
    else:
        raise ValueError(f"{test} is not a test of unpaired data")
    return Tested(cell.name, min(len(x), len(y)), float(x.mean() - y.mean()), low, high, ph, pc, math.nan, se,
                  len(x) + len(y) - 2)


def _bootstrap_statistic(cell: data.Cell, key: str, settings) -> Tested:
    m = np.asarray(cell.matrix, float)
    rng = _rng(key)
    rows = rng.integers(0, len(m), size=(settings.bootstrap_resamples, len(m)))
    with np.errstate(all="ignore"):
        theta = cell.statistic(m)
        boot = np.array([cell.statistic(m[r]) for r in rows])
    boot = boot[np.isfinite(boot)]
    low, high = _ci(boot, settings.ci_level) if len(boot) else (math.nan, math.nan)
    signed = cell.sign * boot
    ph = (1 + np.sum(signed <= 0)) / (len(boot) + 1)
    pc = (1 + np.sum(signed >= 0)) / (len(boot) + 1)
    return Tested(cell.name, len(m), float(theta), low, high, float(ph), float(pc), math.nan,
                  float(np.std(boot, ddof=1)) if len(boot) > 1 else math.nan, math.inf)


def _spearman(cell: data.Cell, key: str, settings) -> Tested:
    x, y = np.asarray(cell.x, float), np.asarray(cell.y, float)
    rho = float(stats.spearmanr(x, y).statistic)
    rows = _rng(key).integers(0, len(x), size=(settings.bootstrap_resamples, len(x)))
    with np.errstate(all="ignore"):
        boot = np.array([stats.spearmanr(x[r], y[r]).statistic for r in rows[:2000]])
    low, high = _ci(boot[np.isfinite(boot)], settings.ci_level)
    ph, pc = _one_sided(stats.spearmanr, (x, y))
    return Tested(cell.name, len(x), rho, low, high, ph, pc)


def _relative(t: Tested, cell: data.Cell, paired: bool, key: str, settings) -> Tested:
    """``t`` with its effect, CI and standard error as the relative change ``mean(x) / mean(y) - 1`` (the test's
    p-values, on the differences, unchanged); the bootstrap resamples the units jointly where they are paired."""
    x, y = np.asarray(cell.x, float), np.asarray(cell.y, float)
    if not len(y) or np.mean(y) == 0:
        return replace(t, effect=math.nan, ci_low=math.nan, ci_high=math.nan, se=math.nan)
    rng, resamples = _rng(key + "|relative"), settings.bootstrap_resamples
    if paired:
        rows = rng.integers(0, len(x), size=(resamples, len(x)))
        boot = x[rows].mean(axis=1) / y[rows].mean(axis=1) - 1
    else:
        boot = _boot_mean(x, resamples, rng) / _boot_mean(y, resamples, rng) - 1
    with np.errstate(all="ignore"):
        low, high = _ci(boot[np.isfinite(boot)], settings.ci_level)
    return replace(t, effect=float(np.mean(x) / np.mean(y) - 1), ci_low=low, ci_high=high,
                   se=t.se / abs(float(np.mean(y))))


def test_cell(test: str, pairing: str, cell: data.Cell, margin: float, key: str, settings,
              scale: str = "difference") -> Tested:
    """The plan's ``test`` on one cell's values, its effect on the plan's ``scale`` (``effect_scale``)."""
    if test == "spearman":
        return _spearman(cell, key, settings)
    if test == "paired-bootstrap":
        return _bootstrap_statistic(cell, key, settings)
    if cell.summary is not None:
        return _summary_test(test, cell, margin, settings)
    if pairing == "unpaired":
        t = _unpaired(test, cell, margin, key, settings)
    else:
        t = _paired_like(test, cell, margin, key, settings)
    return _relative(t, cell, pairing != "unpaired", key, settings) if scale == "relative" else t


# ----- Holm, verdicts, the detectable effect ----------------------------------------------------------------------

def holm(p: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count)."""
    finite = [(v, i) for i, v in enumerate(p) if not math.isnan(v)]
    out, running = [math.nan] * len(p), 0.0
    for rank, (v, i) in enumerate(sorted(finite)):
        running = max(running, min(1.0, (len(finite) - rank) * v))
        out[i] = running
    return out


def cell_verdict(p_holds: float, p_contra: float, p_equiv: float, alpha: float) -> str:
    if p_holds < alpha:
        return "holds"
    if p_contra < alpha:
        return "contradicted"
    if p_equiv < alpha:
        return "equivalent"
    return "inconclusive"


def tested_verdict(t: Tested, adjusted: tuple[float, float, float], alpha: float, requires: str = "test") -> str:
    """A cell's verdict: inconclusive below the plan's n, not testable where its statistic is undefined (a CV of a
    mean <= 0, a Sharpe of an SD of 0), else by its adjusted p-values; where the plan's ``holds_requires`` is
    "every-unit", a cell holds only if every unit's difference lies in the paper's direction (else inconclusive)."""
    if t.n_small or t.n < 2:
        return "inconclusive"
    if math.isnan(t.effect):
        return "not testable"
    verdict = cell_verdict(*adjusted, alpha)
    if verdict == "holds" and requires == "every-unit" and not t.worst > 0:
        return "inconclusive"
    return verdict


def row_verdict(verdicts: list[str], aggregate: str = "all-cells") -> str:
    """The verdict of a row's cells under the plan's ``aggregate`` (:data:`marlinkit.claims_plan.AGGREGATES`)."""
    kinds, n = set(verdicts), len(verdicts)
    if aggregate == "majority":
        top = max(("holds", "contradicted", "equivalent"), key=verdicts.count)
        return top if verdicts.count(top) > n / 2 else "inconclusive"
    if len(kinds) == 1:
        return verdicts[0]
    both = bool(kinds & {"holds", "equivalent"}) and "contradicted" in kinds
    if aggregate == "any-contradicts" and "contradicted" in kinds:
        return "contradicted"
    if aggregate == "reversal-contradicts" and "contradicted" in kinds and not both:
        return "contradicted"
    return "mixed" if both else "inconclusive"


def detectable(t: Tested, alpha: float, power: float) -> float:
    """The effect detectable at ``power`` (one-sided, level ``alpha``) with the cell's standard error."""
    if not np.isfinite(t.se) or t.se == 0:
        return math.nan
    df = t.df if np.isfinite(t.df) and t.df > 0 else math.inf
    return float((stats.t.ppf(1 - alpha, df) + stats.t.ppf(power, df)) * t.se)


# ----- gates ----------------------------------------------------------------------------------------------------------

GATE_POLICY = {"greedy-heldout": "greedy", "greedy-real": "greedy", "greedy-contexts": "greedy",
               "training-own": "greedy", "stochastic-heldout": "stochastic", "stochastic-real": "stochastic"}


def _random_level_text(ctx: data.Context, configurations: tuple[str, ...]) -> str:
    """The real-flow evaluation of the run set's configurations beside the random switcher's, where comparable."""
    table = ctx.root / "figures/paper/maestro/heldout_evaluation.csv"
    if ctx.run_set.engine != "CityFlow" or not table.exists():
        return ctx.run_set.learner
    h = pd.read_csv(table)
    rand = h[(h.configuration == "random") & (h.traffic == "real")].score.mean()
    own = [f"{c} {np.mean(list(data.scores(ctx, c, 'stochastic-real').values())):.1f}"
           for c in configurations if data.scores(ctx, c, "stochastic-real")]
    return f"{ctx.run_set.learner}: real flow, stochastic, {', '.join(own)} vs random {rand:.1f}"


def gate_beats_random(ctx: data.Context, configurations: tuple[str, ...], alpha: float) -> str | None:
    """None when every compared configuration beats the random switcher on each held-out flow; else the verdict."""
    table = data.heldout_table(ctx)
    absent = [] if table is None else [c for c in configurations if c not in set(table.configuration)]
    if table is None or absent:
        what = "" if table is None else f" for {', '.join(absent)}"
        return f"not testable: held-out evaluation missing{what} ({_random_level_text(ctx, configurations)})"
    policy = GATE_POLICY[ctx.protocol]
    rand = table[(table.configuration == "random")]
    checks = []
    for c in configurations:
        own = table[(table.configuration == c) & (table.protocol == policy)]
        for flow in data.HELDOUT_FLOWS:
            x, y = own[own.traffic == flow].score.to_numpy(), rand[rand.traffic == flow].score.to_numpy()
            p = float(stats.mannwhitneyu(x, y, alternative="greater").pvalue)
            checks.append((c, flow, x.mean(), y.mean(), p, len(x)))
    adjusted = holm([c[4] for c in checks])
    numbers = "; ".join(f"{c} on {f}: {mx:.1f} vs random {my:.1f} (n = {n}, p_adj = {pa:.2g})"
                        for (c, f, mx, my, _, n), pa in zip(checks, adjusted))
    if any(mx - my < GATE_MARGIN for _, _, mx, my, _, _ in checks):
        return f"not testable: learners at the random level ({policy}: {numbers})"
    if any(pa >= alpha for pa in adjusted):
        return f"not testable: gate undecided at n = {min(c[5] for c in checks)} ({policy}: {numbers})"
    return None


def gate_a7_distinct(ctx: data.Context) -> str | None:
    d = data.episodes(ctx.root, ctx.run_set.folder)
    a2 = d[d.ablation == "A2"].sort_values(["seed", "episode"]).train_return.to_numpy()
    a7 = d[d.ablation == "A7"].sort_values(["seed", "episode"]).train_return.to_numpy()
    if len(a7) and len(a2) == len(a7) and np.array_equal(a2, a7):
        return "not testable: A7 is A2 to the bit (no generated reward accepted)"
    return None


def gates(ctx: data.Context, alpha: float) -> str | None:
    configurations = data.CONFIGURATIONS.get(ctx.claim.id, ())
    if "a7-distinct" in ctx.claim.gates:
        why = gate_a7_distinct(ctx)
        if why:
            return why
    if "beats-random-heldout" in ctx.claim.gates and ctx.protocol in GATE_POLICY:
        return gate_beats_random(ctx, configurations, alpha)
    return None


# ----- rows -----------------------------------------------------------------------------------------------------------

@dataclass
class Row:
    """One ledger row before Holm: its context, and its tested cells or the reason it has none."""

    ctx: data.Context
    test: str
    compared: str = ""
    cells: tuple[Tested, ...] = ()
    values: tuple[data.Cell, ...] = ()
    verdict: str = ""
    detail: str = ""
    adjusted: tuple[tuple[float, float, float], ...] = ()


def contexts(plan: claims_plan.Plan, root: Path) -> list[data.Context]:
    """Every (claim, stand-in or run set, protocol) the plan asks for, in the plan's order."""
    sets = data.run_sets(root / "docs" / "claims.toml")
    out = []
    for claim in plan.claims:
        for stand_in in claim.stand_ins:
            own = [rs for rs in sets if rs.stand_in == stand_in] if claim.paper == "MAESTRO" else []
            for run_set in own or [None]:
                out += [data.Context(claim, stand_in, p, run_set, root) for p in claim.protocols]
    return out


def evaluate(ctx: data.Context, plan: claims_plan.Plan) -> Row:
    """One row's cells tested, or its verdict where the plan's rule needs none."""
    c, settings = ctx.claim, plan.settings
    row = Row(ctx, c.test_for(ctx.protocol))
    if c.kind == "not-testable":
        row.verdict, row.detail = "not testable", f"{c.not_testable_reason} (experiment: {c.experiment})"
        return row
    if c.paper == "MAESTRO" and ctx.stand_in != "none" and ctx.run_set is None:
        row.verdict = "not testable: no runs with this stand-in"
        row.detail = f"the plan lists no run set of {ctx.stand_in} (experiment: the ablation with it as the architect)"
        return row
    if ctx.run_set is not None:
        why = gates(ctx, settings.alpha)
        if why:
            row.verdict, row.detail = why.split(" (")[0], why
            return row
    got = data.extract(ctx)
    if isinstance(got, data.Unavailable):
        short = f"not testable: {got.why.split(' (')[0]}" if got.verdict == "not testable" else got.verdict
        row.verdict, row.detail = short, got.why
        return row
    key = f"{c.id}|{ctx.stand_in}|{ctx.run_set.name if ctx.run_set else ''}|{ctx.protocol}"
    pairing = c.pairing_for(ctx.protocol)
    row.compared, row.values = got.compared, got.cells
    row.cells = tuple(_tested(row.test, pairing, cell, c, f"{key}|{cell.name}", settings) for cell in got.cells)
    return row


def _tested(test: str, pairing: str, cell: data.Cell, claim, key: str, settings) -> Tested:
    n = len(cell.matrix) or (cell.summary[2] if cell.summary else
                             min(len(cell.x), len(cell.y)) if pairing == "unpaired" else len(cell.x))
    if n < 2:
        return Tested(cell.name, n, math.nan, math.nan, math.nan, math.nan, math.nan, n_small=True)
    t = test_cell(test, pairing, cell, claim.margin or 0.0, key, settings, claim.effect_scale)
    return replace(t, n_small=pairing != "unpaired" and t.n < claim.min_n)


def _family_key(row: Row) -> tuple:
    rs = row.ctx.run_set.name if row.ctx.run_set else ""
    return row.ctx.claim.family, row.ctx.stand_in, rs, row.ctx.protocol


def adjust(rows: list[Row]) -> None:
    """Holm within each family, stand-in (run set) and protocol, separately for each one-sided test."""
    groups: dict[tuple, list[tuple[Row, int]]] = {}
    for row in rows:
        for i, _ in enumerate(row.cells):
            groups.setdefault(_family_key(row), []).append((row, i))
    adjusted: dict[tuple[int, int], list[float]] = {}
    for members in groups.values():
        for which in ("p_holds", "p_contra", "p_equiv"):
            values = holm([getattr(r.cells[i], which) for r, i in members])
            for (r, i), v in zip(members, values):
                adjusted.setdefault((id(r), i), []).append(v)
    for row in rows:
        row.adjusted = tuple(tuple(adjusted[(id(row), i)]) for i in range(len(row.cells)))


def decide(row: Row, plan: claims_plan.Plan) -> None:
    """A tested row's verdict from its adjusted p-values (the plan's rule, the same for every row)."""
    if row.verdict:
        return
    alpha = plan.settings.alpha
    requires = row.ctx.claim.holds_requires
    verdicts = [tested_verdict(t, adj, alpha, requires) for t, adj in zip(row.cells, row.adjusted)]
    row.verdict = row_verdict(verdicts, row.ctx.claim.aggregate)
    if len(set(verdicts)) > 1:
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts))
        row.verdict += f" (cells: {counts})"
    row.detail = "; ".join(_cell_text(t, adj, v, row, plan) for t, adj, v in zip(row.cells, row.adjusted, verdicts))


def _cell_text(t: Tested, adj: tuple[float, float, float], verdict: str, row: Row, plan: claims_plan.Plan) -> str:
    claim = row.ctx.claim
    text = f"{t.name}: {_effect_ci(t.effect, t.ci_low, t.ci_high, claim.effect_scale)}, n = {t.n}, {verdict}"
    if claim.holds_requires == "every-unit" and np.isfinite(t.worst):
        text += f" (worst unit {t.worst:+.3g} in the paper's direction)"
    if t.n_small:
        return text + f" (n = {t.n} of {row.ctx.claim.min_n})"
    if verdict == "not testable":
        return text + " (the statistic is undefined on these values)"
    if verdict == "inconclusive":
        size = plan.family_size(row.ctx.claim.family)
        mde = detectable(t, plan.settings.alpha / max(1, size), plan.settings.power)
        shown = f"{100 * mde:.3g} %" if claim.effect_scale == "relative" else f"{mde:.3g}"
        text += f" (detectable at 80 % power: {shown})" if np.isfinite(mde) else ""
    return text


def _effect_ci(effect: float, low: float, high: float, scale: str) -> str:
    """An effect with its CI: a difference as is, a relative change in per cent."""
    if scale == "relative":
        return f"{100 * effect:+.3g} % [{100 * low:+.3g} %, {100 * high:+.3g} %]"
    return f"{effect:+.3g} [{low:+.3g}, {high:+.3g}]"


# ----- the ledger ----------------------------------------------------------------------------------------------------

def _deciding(row: Row) -> int:
    """The cell whose numbers the row shows: the weakest in the direction of its verdict."""
    head = row.verdict.split(" (")[0]
    which = {"contradicted": 1, "equivalent": 2}.get(head, 0 if row.ctx.claim.kind != "equivalence" else 2)
    ps = [adj[which] if not math.isnan(adj[which]) else -1.0 for adj in row.adjusted]
    return int(np.argmax(ps)) if ps else -1


def _row_record(row: Row, plan: claims_plan.Plan) -> dict:
    c, ctx = row.ctx.claim, row.ctx
    rs = ctx.run_set
    i = _deciding(row)
    t = row.cells[i] if i >= 0 else None
    which = {"contradicted": 1, "equivalent": 2}.get(row.verdict.split(" (")[0], 2 if c.kind == "equivalence" else 0)
    p = [t.p_holds, t.p_contra, t.p_equiv][which] if t else math.nan
    return {"paper": c.paper, "claim_id": c.id, "claim": " ".join(c.claim.split()), "paper_location": c.location,
            "stand_in": ctx.stand_in, "runs": rs.name if rs else "", "engine": rs.engine if rs else ENGINES[c.paper],
            "curriculum_target": f"{rs.target:g}" if rs else "", "protocol": ctx.protocol,
            "metric": " ".join(c.metric.split()), "compared": row.compared, "test": row.test, "family": c.family,
            "n": t.n if t else None, "effect": t.effect if t else None, "ci_low": t.ci_low if t else None,
            "ci_high": t.ci_high if t else None, "effect_scale": c.effect_scale, "p": p,
            "p_adjusted": row.adjusted[i][which] if t else math.nan,
            "verdict": row.verdict, "detail": row.detail, "summary": "",
            "ours": f"{row.compared}: {row.detail}" if row.compared else row.detail,
            "evidence": "; ".join(s.path for s in c.sources if s.committed) or "docs/claims.toml"}


def _stand_in_label(record: dict) -> str:
    return record["runs"] or record["stand_in"]


def summary_line(primary: list[dict]) -> str:
    """A claim's summary from its primary protocol's rows: the verdict they share (rows that cannot test it aside),
    else "depends on the stand-in" with each listed."""
    tested = [r for r in primary if not r["verdict"].startswith("not testable")]
    heads = {r["verdict"].split(" (")[0] for r in tested}
    if not tested:
        reasons = dict.fromkeys(r["verdict"].partition(": ")[2] or r["detail"] for r in primary)
        return "not testable: " + "; ".join(reasons)
    if len(heads) == 1:
        return heads.pop()
    return "depends on the stand-in: " + "; ".join(f"{_stand_in_label(r)}: {r['verdict']}" for r in primary)


def summaries(records: list[dict], plan: claims_plan.Plan) -> None:
    """Each claim's one-line summary, on each of its rows."""
    for claim in plan.claims:
        own = [r for r in records if r["claim_id"] == claim.id]
        line = summary_line([r for r in own if r["protocol"] == claim.protocols[0]])
        for r in own:
            r["summary"] = line


class Tables(NamedTuple):
    ledger: pd.DataFrame
    """One row per claim, stand-in (MAESTRO: run set) and protocol (:data:`COLUMNS`)."""
    cells: pd.DataFrame
    """One row per test (:data:`CELL_COLUMNS`)."""
    values: pd.DataFrame
    """The values each test was computed from (:data:`VALUE_COLUMNS`)."""


def compute(root: Path = paths.REPO_ROOT, plan: claims_plan.Plan | None = None) -> Tables:
    """The ledger, its per-test cells and their values."""
    plan = plan or claims_plan.load(root / "docs" / "claims.toml")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # identical samples (A7 = A2 to the bit) and empty slices are handled above
        rows = [evaluate(ctx, plan) for ctx in contexts(plan, root)]
    adjust(rows)
    for row in rows:
        decide(row, plan)
    records = [_row_record(row, plan) for row in rows]
    summaries(records, plan)
    return Tables(pd.DataFrame(records, columns=COLUMNS), cells_table(rows, plan), values_table(rows))


def cells_table(rows: list[Row], plan: claims_plan.Plan) -> pd.DataFrame:
    out = []
    for row in rows:
        for t, raw, adj in zip(row.cells, row.values, row.adjusted):
            verdict = tested_verdict(t, adj, plan.settings.alpha, row.ctx.claim.holds_requires)
            out.append({"claim_id": row.ctx.claim.id, "stand_in": row.ctx.stand_in,
                        "runs": row.ctx.run_set.name if row.ctx.run_set else "", "protocol": row.ctx.protocol,
                        "cell": t.name, "test": row.test, "pairing": row.ctx.claim.pairing_for(row.ctx.protocol),
                        "sign": raw.sign, "null": raw.null, "margin": row.ctx.claim.margin,
                        "family": row.ctx.claim.family, "n": t.n, "effect": t.effect, "ci_low": t.ci_low,
                        "ci_high": t.ci_high, "effect_scale": row.ctx.claim.effect_scale, "p_holds": t.p_holds,
                        "p_contra": t.p_contra, "p_equiv": t.p_equiv, "p_holds_adj": adj[0], "p_contra_adj": adj[1],
                        "p_equiv_adj": adj[2],
                        "mde": detectable(t, plan.settings.alpha / max(1, plan.family_size(row.ctx.claim.family)),
                                          plan.settings.power), "worst_unit": t.worst, "verdict": verdict})
    return pd.DataFrame(out, columns=CELL_COLUMNS)


VALUE_COLUMNS = ["claim_id", "stand_in", "runs", "protocol", "cell", "role", "unit", "value"]


def _cell_values(raw: data.Cell) -> list[tuple[str, str, float]]:
    """A cell's values as (role, unit, value): x and y per unit, a summary's mean, sd and n, a matrix's columns."""
    if raw.summary is not None:
        return [(role, "", float(v)) for role, v in zip(("mean", "sd", "n"), raw.summary)]
    if raw.matrix:
        return [(f"m{j}", u, float(v)) for u, line in zip(raw.units, raw.matrix) for j, v in enumerate(line)]
    units = list(raw.units) + [""] * len(raw.x)
    out = [("x", units[i], float(v)) for i, v in enumerate(raw.x)]
    paired = len(raw.y) == len(raw.x) and len(raw.units) == len(raw.x)
    return out + [("y", units[i] if paired else "", float(v)) for i, v in enumerate(raw.y)]


def values_table(rows: list[Row]) -> pd.DataFrame:
    """Every tested cell's values, one per line: what the statistics are computed from."""
    out = []
    for row in rows:
        head = [row.ctx.claim.id, row.ctx.stand_in, row.ctx.run_set.name if row.ctx.run_set else "", row.ctx.protocol]
        for raw in row.values:
            out += [head + [raw.name, role, unit, v] for role, unit, v in _cell_values(raw)]
    return pd.DataFrame(out, columns=VALUE_COLUMNS)


def ledger(root: Path = paths.REPO_ROOT) -> pd.DataFrame:
    """Every claim of both papers as a table with :data:`COLUMNS`."""
    return compute(root).ledger


# ----- rendering -----------------------------------------------------------------------------------------------------

def markdown_cell(text: object) -> str:
    """``text`` as one cell of a Markdown pipe table: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def format_p(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "—"
    return f"{p:.2g}" if p >= 0.001 else "< 0.001"


def effect_text(r) -> str:
    if pd.isna(r.effect):
        return "—"
    return _effect_ci(r.effect, r.ci_low, r.ci_high, getattr(r, "effect_scale", "difference"))


def _first_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Per claim, the rows of its primary protocol (one per stand-in or run set)."""
    first = table.groupby("claim_id", sort=False).protocol.transform("first")
    return table[table.protocol == first]


def readme_table(table: pd.DataFrame) -> str:
    """The README's claims table: one line per claim, its summary verdict and, per stand-in (MAESTRO: run set), the
    primary protocol's verdict with its effect and Holm-adjusted p; every protocol's rows are in the ledger."""
    out = ["| Paper | Claim | Where | Summary verdict | Per stand-in (primary protocol) |", "|---|---|---|---|---|"]
    for claim_id, group in _first_rows(table).groupby("claim_id", sort=False):
        head = group.iloc[0]
        each = "; ".join(f"{_who(r)}: {r.verdict.split(' (')[0]}"
                         + (f", {effect_text(r)}, p {format_p(_num(r.p_adjusted))}" if not pd.isna(r.effect) else "")
                         for r in group.itertuples(index=False))
        out.append(f"| {head.paper} | `{claim_id}` | {markdown_cell(head.paper_location)} | "
                   f"**{markdown_cell(head.summary)}** | {markdown_cell(each)} |")
    return "\n".join(out)


def _who(r) -> str:
    return r.runs if isinstance(r.runs, str) and r.runs else r.stand_in


def _num(v) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def render_into(text: str, table: pd.DataFrame) -> str:
    """``text`` (the README) with the block between the markers replaced by the ledger's table."""
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no claims block: add the lines {README_BEGIN!r} and {README_END!r}")
    return text[:start] + README_BEGIN + "\n" + readme_table(table) + "\n" + text[end:]


def write(table: pd.DataFrame, path: Path = LEDGER_PATH, tables: Tables | None = None) -> Path:
    """The ledger to ``path``; its cells and values beside it (``claims_cells.csv``, ``claims_values.csv``)."""
    from marlinkit.files import atomic_write_text

    atomic_write_text(Path(path), table.to_csv(index=False))
    if tables is not None:
        atomic_write_text(Path(path).with_name("claims_cells.csv"), tables.cells.to_csv(index=False))
        atomic_write_text(Path(path).with_name("claims_values.csv"), tables.values.to_csv(index=False))
    return Path(path)


def write_all(out: Path = LEDGER_PATH, readme: Path | None = None) -> pd.DataFrame:
    """Compute the ledger, write it and its cells to ``out``, and render the claims block into ``readme`` (if given)."""
    tables = compute()
    write(tables.ledger, out, tables)
    if readme:
        readme.write_text(render_into(readme.read_text(encoding="utf-8"), tables.ledger), encoding="utf-8")
    return tables.ledger
