"""MAESTRO's claims table over the committed runs: what the SmolLM2 ablation shows, and nothing made up where the
reference architect's runs are missing."""

from __future__ import annotations

import pandas as pd
import pytest

from marlinkit import presets
from marlinkit.claims import ALPHA, TESTED_VERDICTS, verdict_for
from marlinkit.maestro import claims

#: The two rows' configs, as the command line resolves them.
CONFIGS = {name: presets.ablation_config("paper", record=False, **overrides) for name, overrides in claims.ROWS.items()}


@pytest.fixture(scope="module")
def smollm2():
    results = claims.committed(CONFIGS["smollm2"])
    if results is None or len(results.sidecars) < 36:
        pytest.skip("the committed ue25_openblas ablation (36 runs)")
    return results


@pytest.fixture(scope="module")
def swapped(smollm2):
    """The committed runs with A8 relabelled A7, so that A7 differs from A2 and the A7/A2 claims can decide."""
    episodes = smollm2.episodes[smollm2.episodes["ablation"] != "A7"].copy()
    episodes.loc[episodes["ablation"] == "A8", "ablation"] = "A7"
    return smollm2.replace(episodes=episodes)


def test_the_smollm2_row_reads_the_committed_runs_and_missing_runs_are_not_testable(smollm2, tmp_path):
    table = claims.claims_table(None, smollm2).set_index("claim")
    assert list(table.columns) == list(claims.COLUMNS)[1:] and len(table) == len(claims.CLAIMS)
    assert (table["reference_architect"] == claims.MISSING).all() and (table["verdict"] == claims.MISSING).all()
    assert (table["p"] == "—").all()
    row = table["smollm2"]
    assert row["A7 more stable than A2 (CV, Sharpe)"].startswith("A7 = A2 to the bit")  # no reward reply accepted
    assert row["the curriculum raises difficulty"].startswith("A2 mean d over episodes 100-199: 0.303")
    assert row["the curriculum raises difficulty"].endswith("(contradicted)")
    assert row["A8 the highest mean"].endswith("(contradicted)")  # A8 55.42 below A2 75.17
    assert row["curriculum + shaping better than no curriculum (A0)"] == "no A0 run (the ablation has none)"


def test_a_claim_decides_by_direction_and_test(swapped):
    """On the committed runs with A8 relabelled A7 (so A7 differs from A2): the stability and traffic claims compute a
    direction and a p rather than 'A7 is A2'."""
    text, verdict, p = claims.stability(swapped)
    assert text.startswith("CV") and 0 < p <= 1
    assert verdict in TESTED_VERDICTS
    final = claims.final_by_seed(swapped).groupby("ablation")["score"].std()
    assert verdict.startswith("contradicted") == (final["A7"] >= final["A2"])
    assert verdict.endswith("not significant") == (p >= ALPHA)
    text, verdict, p = claims.traffic(swapped)
    assert text.startswith("delay") and 0 < p <= 1


def test_the_table_is_a_function_of_the_committed_runs(smollm2, tmp_path):
    one = claims.claims_table(None, smollm2)
    two = claims.claims_table(None, claims.committed(CONFIGS["smollm2"]))
    pd.testing.assert_frame_equal(one, two)
    written = claims.write(CONFIGS, tmp_path)
    assert [p.name for p in written] == ["claims.csv", "claims.md", "claims.tex", "claims.table.json"]
    expected = claims.claims_table(claims.committed(CONFIGS["reference_architect"]), smollm2)
    pd.testing.assert_frame_equal(pd.read_csv(written[0], dtype=str, keep_default_na=False), expected.astype(str))


def test_a_claim_short_of_seeds_reports_its_numbers_and_no_verdict(smollm2):
    """With one seed of a configuration a claim gives its numbers and the seeds it has, and no verdict or p; with none
    of it, the runs are missing."""
    episodes = smollm2.episodes[smollm2.episodes["ablation"] != "A7"].copy()
    episodes.loc[(episodes["ablation"] == "A8") & (episodes["seed"] == 200), "ablation"] = "A7"
    one_seed = smollm2.replace(episodes=episodes)
    text, verdict, p = claims.stability(one_seed)
    assert text.startswith("CV — % vs ") and text.endswith("; seeds A7 1, A2 12") and p is None
    assert verdict == "not testable (seeds A2 12, A7 1 committed; a test needs 2 each)"
    text, verdict, p = claims.a8_highest(one_seed)
    assert "seeds A2 12, A7 1, A8 11" in text and verdict.startswith("not testable (seeds A2 12, A7 1, A8 11") and p is None
    none = smollm2.replace(episodes=episodes[episodes["ablation"] != "A7"])
    assert claims.traffic(none) == (claims.MISSING, claims.MISSING, None)


def test_a_verdict_is_significant_only_with_its_test():
    """The direction names the verdict and the test qualifies it, both ways: a few seeds that fail to support a claim
    do not refute it."""
    assert verdict_for(True, 0.01) == "holds" and verdict_for(True, 0.2) == "holds, not significant"
    assert verdict_for(False, 0.01) == "contradicted" and verdict_for(False, 1.0) == "contradicted, not significant"
    assert verdict_for(True, None) == "holds, not significant" and verdict_for(True, ALPHA) == "holds, not significant"
    assert {verdict_for(d, p) for d in (True, False) for p in (0.01, 0.5)} == set(TESTED_VERDICTS)


def test_target_reached_is_not_testable_when_every_run_starts_above_the_target(swapped):
    """A target every run's first window already reaches cannot separate A7 from A2 (CityFlow's untrained policies
    score above 67.46 on the floor traffic); a run that reaches it later makes the claim testable again."""
    episodes = swapped.episodes.copy()
    episodes["score"] = 200.0  # above the target 165 from the first episode in every run
    text, verdict, p = claims.target_sooner(swapped.replace(episodes=episodes))
    assert text.startswith("target 165: median episode A7 4, A2 4 (never reached: A7 0, A2 0 seeds)")
    assert verdict == "not testable (every run's first 5-episode window already reaches the target 165)" and p is None
    late = (episodes["ablation"] == "A2") & (episodes["episode"] < 50)
    episodes.loc[late, "score"] = 0.0  # A2 reaches the target at episode 54: A7 is sooner in every seed
    text, verdict, p = claims.target_sooner(swapped.replace(episodes=episodes))
    assert "median episode A7 4, A2 54" in text and verdict == "holds" and p < 1e-4
