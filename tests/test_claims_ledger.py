"""marlinkit.claims' pieces: Holm, the symmetric verdict rule, the paired bootstrap, and a complete MAESTRO run set
(every configuration on every seed, a held-out table well above the random switcher) judged on every claim."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marlinkit import claims, claims_data, claims_plan, paths

PLAN = claims_plan.load()
OLD_RUNS = "data/results/maestro/paper/reference_architect_cityflow_plain_maddpg_curriculum_ue25_openblas_maddpg"


def test_holm_matches_its_step_down_definition():
    assert claims.holm([0.01, 0.04, 0.03, math.nan]) == pytest.approx([0.03, 0.06, 0.06, math.nan], nan_ok=True)
    assert claims.holm([0.5, 0.9]) == [1.0, 1.0]


@pytest.mark.parametrize("p, verdict", [((0.01, 0.9, math.nan), "holds"), ((0.9, 0.01, math.nan), "contradicted"),
                                        ((math.nan, 0.9, 0.01), "equivalent"), ((0.2, 0.8, math.nan), "inconclusive")])
def test_the_verdict_rule_is_symmetric(p, verdict):
    assert claims.cell_verdict(*p, 0.05) == verdict


def test_mixed_needs_cells_both_ways():
    assert claims.row_verdict(["holds", "contradicted"]) == "mixed"
    assert claims.row_verdict(["holds", "inconclusive"]) == "inconclusive"
    assert claims.row_verdict(["contradicted"] * 3) == "contradicted"


@pytest.mark.parametrize("aggregate, verdicts, expected", [
    ("any-contradicts", ["holds", "contradicted"], "contradicted"),
    ("any-contradicts", ["holds", "inconclusive"], "inconclusive"),
    ("reversal-contradicts", ["holds", "contradicted"], "mixed"),
    ("reversal-contradicts", ["inconclusive", "contradicted"], "contradicted"),
    ("majority", ["holds", "holds", "holds", "inconclusive", "contradicted"], "holds"),
    ("majority", ["holds", "holds", "inconclusive", "inconclusive", "contradicted"], "inconclusive")])
def test_the_plans_aggregates(aggregate, verdicts, expected):
    assert claims.row_verdict(verdicts, aggregate) == expected


def test_the_paired_bootstrap_finds_a_clear_difference_and_its_reverse():
    rng = np.random.default_rng(0)
    low_cv = 100 + rng.normal(0, 1, 12)
    high_cv = 100 + rng.normal(0, 10, 12)
    matrix = tuple(zip(high_cv, low_cv, high_cv + 3))
    cell = claims_data.Cell("log CV(A2) / CV(A7)", matrix=matrix,
                            statistic=claims_data.STATISTICS["log CV(A2) / CV(A7)"], units=tuple(map(str, range(12))))
    t = claims.test_cell("paired-bootstrap", "paired", cell, 0.0, "k", PLAN.settings)
    assert t.effect > 1 and t.ci_low > 0 and t.p_holds < 0.01 and t.p_contra > 0.99
    reverse = dataclasses.replace(cell, matrix=tuple(zip(low_cv, high_cv, low_cv)))
    t = claims.test_cell("paired-bootstrap", "paired", reverse, 0.0, "k", PLAN.settings)
    assert t.effect < -1 and t.p_contra < 0.01


@pytest.mark.parametrize("worst, requires, expected", [
    (1.0, "every-unit", "holds"), (-1.0, "every-unit", "inconclusive"), (0.0, "every-unit", "inconclusive"),
    (-1.0, "test", "holds")])
def test_holds_needs_every_unit_only_where_the_plan_says_so(worst, requires, expected):
    t = claims.Tested("cell", 12, 5.0, 1.0, 9.0, 0.001, 0.99, worst=worst)
    assert claims.tested_verdict(t, (0.001, 0.99, math.nan), 0.05, requires) == expected
    against = dataclasses.replace(t, effect=-5.0, p_holds=0.99, p_contra=0.001)
    assert claims.tested_verdict(against, (0.99, 0.001, math.nan), 0.05, requires) == "contradicted"


def test_a_relative_effect_is_the_change_of_the_means_and_keeps_the_tests():
    x, y = (80.0, 90.0, 70.0, 85.0, 75.0), (100.0, 110.0, 90.0, 105.0, 95.0)
    cell = claims_data.Cell("delay", x, y, -1, units=tuple("abcde"))
    plain = claims.test_cell("wilcoxon-signed-rank", "paired", cell, 0.0, "k", PLAN.settings)
    relative = claims.test_cell("wilcoxon-signed-rank", "paired", cell, 0.0, "k", PLAN.settings, "relative")
    assert plain.effect == pytest.approx(-20.0) and relative.effect == pytest.approx(80 / 100 - 1)
    assert relative.ci_low < relative.effect < relative.ci_high < 0 and relative.ci_low > -0.3
    assert (relative.p_holds, relative.p_contra) == (plain.p_holds, plain.p_contra)
    assert relative.se == pytest.approx(plain.se / 100)


@pytest.fixture(scope="module")
def complete_run_set(tmp_path_factory) -> Path:
    """A repository view whose only MAESTRO run set is the earlier ablation's runs (all four configurations, 12 seeds)
    with a held-out table where every configuration sits far above the random switcher."""
    root = tmp_path_factory.mktemp("root")
    for name in ("data", "figures"):
        (root / name).symlink_to(paths.REPO_ROOT / name)
    (root / "docs").mkdir()
    text = (paths.REPO_ROOT / "docs" / "claims.toml").read_text(encoding="utf-8")
    head, _, rest = text.partition("[[run_set]]")
    tail = rest[rest.index("[defaults.MARLIN]"):]
    heldout = root / "heldout.csv"
    run_set = (f'[[run_set]]\nname = "complete"\nstand_in = "reference-architect"\nfolder = "{OLD_RUNS}"\n'
               f'engine = "CityFlow"\ntarget = 165.0\nlearner = "test"\nheldout = "{heldout}"\n\n')
    (root / "docs" / "claims.toml").write_text(head + run_set + tail, encoding="utf-8")
    real = pd.read_csv(paths.FIGURES_DIR / "paper" / "maestro" / "heldout_evaluation.csv")
    rng = np.random.default_rng(1)
    rows = [(c, s, t, p, level + rng.normal(0, 5)) for c, level in (("A0", 150), ("A2", 180), ("A7", 190), ("A8", 178))
            for s in range(200, 1400, 100) for t in real.traffic.unique() for p in ("greedy", "stochastic")]
    baselines = real[real.configuration.isin(["random", "fixed-time", "max-pressure"])]
    pd.concat([baselines, pd.DataFrame(rows, columns=real.columns)]).to_csv(heldout, index=False)
    return root


def test_a_complete_run_set_gets_a_verdict_on_every_maestro_claim(complete_run_set):
    plan = claims_plan.load(complete_run_set / "docs" / "claims.toml")
    fast = dataclasses.replace(plan.settings, bootstrap_resamples=1000)
    maestro = dataclasses.replace(plan, settings=fast, claims=tuple(c for c in plan.claims if c.paper == "MAESTRO"))
    ledger = claims.compute(complete_run_set, maestro).ledger
    mine = ledger[ledger.runs == "complete"]
    assert not mine.verdict.str.startswith("not testable: held-out").any()
    untested = mine[mine.effect.isna() & ~mine.detail.str.contains("undefined")]
    assert (set(untested.claim_id)
            <= {"maestro-curriculum-raises-difficulty-target-67"}), untested[["claim_id", "verdict"]]
    primary = mine[mine.protocol == "greedy-heldout"].set_index("claim_id").verdict
    assert primary["maestro-a7-above-a0"] == "holds" and primary["maestro-curriculum-alone-improves"] == "holds"
    real_flow = mine[(mine.claim_id == "maestro-curriculum-alone-improves") & (mine.protocol == "greedy-real")]
    assert "A0 evaluated on its own training traffic" in real_flow.compared.iloc[0]
