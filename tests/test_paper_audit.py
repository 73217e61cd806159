"""The paper audit: rounding-aware agreement, and the verdicts that hand arithmetic confirms."""

from __future__ import annotations

import numpy as np
import pytest

from marlinkit import paper_audit as pa


@pytest.fixture(scope="module")
def checks():
    return pa.maestro_checks(samples=0).set_index(["source", "quantity", "condition"]).sort_index()


def test_recomputed_range_covers_rounding_of_inputs():
    value, low, high = pa.recomputed_range(lambda x: np.mean(x["a"]), {"a": np.array([1.0, 2.0]), "b": np.ones(3)},
                                           0, 0)
    assert (value, low, high) == pytest.approx((1.5, 1.495, 1.505))


def test_table3_summaries_follow_from_its_seeds(checks):
    table3 = checks.loc["Table 3"]
    assert table3["agrees"].all()
    # A2: (158.84 + 156.75 + 159.42 + 152.69) / 4 = 156.925, printed 156.93
    assert table3.loc[("mean", "A2"), "recomputed"] == pytest.approx(156.925)


def test_table2_does_not_follow_from_table3_but_is_self_consistent(checks):
    assert not checks.loc[("Table 2", "mean", "A2"), "agrees"]  # 157.04 vs 156.925
    assert not checks.loc[("Table 2", "Sharpe", "A7"), "agrees"]  # 1.76 vs 1.54
    assert checks.loc["Table 2 (own mean, SD)", "agrees"].all()  # 2.66 / 157.04 = 1.69 %, ...


def test_table4_mann_whitney_by_hand(checks):
    # A2 beats A7 in 2 of the 4 x 2 pairs (158.84 and 159.42 > 157.92): U = min(2, 6) = 2, not 1.0
    row = checks.loc[("Table 4", "Mann-Whitney U", "A2 vs A7")]
    assert row["recomputed"] == 2 and not row["agrees"]
    # no ties anywhere in Table 3, so the paper's U = 0.5 cannot occur
    assert not checks.loc[("Table 4", "Mann-Whitney U", "A7 vs A8"), "agrees"]
    # A2 vs A8: U = 4 and exact p = 0.343 (24 of 70 splits as extreme): the p matches, the U does not
    assert checks.loc[("Table 4", "p (exact, two-sided)", "A2 vs A8"), "agrees"]


def test_table7_readings_reproduce_the_risk_table(checks):
    table7 = checks.loc["Table 7"].reset_index()
    ours = table7[table7.quantity.isin(["VaR (5%)", "max drawdown", "success rate", "Sharpe"])]
    assert ours["agrees"].all()
    assert not checks.loc[("Table 7", "Sortino", "A8"), "agrees"]  # 1.12: no reading we tried gives it


def test_marlin_table1_granularity_flags_two_cells():
    table = pa.marlin_granularity()
    assert len(table) == 30
    bad = table[~table.attainable]
    assert sorted(zip(bad.scenario, bad.episode, bad.system)) == [
        ("symmetrical_two_slot", 1600, "MARLIN"), ("two_path", 1600, "MARLIN")]
    assert table.loc[table.reported == 0.8543, "nearest_k_over_700"].item() == 598  # 598 / 700 = 0.85429


def test_maestro_bootstrap_flags_the_two_seed_interval_as_degenerate():
    table = pa.maestro_bootstrap(n_resamples=500, seed=0).set_index("condition")
    assert table.loc["A7", "degenerate"] and table.loc["A7", "seeds"] == 2
    assert (table.loc["A7", "ci_low"], table.loc["A7", "ci_high"]) == (157.92, 159.61)  # just [min, max]
    assert not table.loc["A2", "degenerate"] and not table.loc["A8", "degenerate"]
