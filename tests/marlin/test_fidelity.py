"""Fidelity notebook helpers: the paper's Table I MARL values set beside ours at equal copy-episodes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from marlinkit import presets
from marlinkit.marlin import grid
from marlinkit.marlin import fidelity
from marlinkit.paper_values import MARLIN_TABLE1


def test_matched_table_reads_our_curve_at_the_papers_sample_count():
    rows = [{"scenario": "two_path", "system": "MARL", "seed": seed, "episode": e, "env_copy": c,
             "performance": min(1.0, e / 1000) + 0.01 * seed}
            for seed in (0, 1) for e in range(1, 1001) for c in range(3)]
    results = grid.Results(pd.DataFrame(rows), pd.DataFrame())
    table = fidelity.matched_table(results, 15, [6, 9, 15], window=1)
    row = table[(table.paper_episode == 850) & (table.paper_copies == 9)].iloc[0]
    assert row.our_episode == 510 and row.copy_episodes == 7650
    assert (row.ours_MARL == pytest.approx(0.51 + 0.005)
            and row.ours_seed_sd == pytest.approx(np.std([0.51, 0.52], ddof=1)))
    assert (row.paper_MARL == float(MARLIN_TABLE1["two_path"][850][0])
            and row.difference == pytest.approx(row.ours_MARL - row.paper_MARL))
    beyond = table[(table.paper_episode == 1600) & (table.paper_copies == 15)].iloc[0]
    assert beyond.our_episode == 1600 and np.isnan(beyond.ours_MARL)  # our training is shorter: no number made up


def test_the_figure_plots_the_papers_values_as_numbers_on_a_numeric_axis():
    """The paper's values are stored as printed strings; plotted as strings, matplotlib made them categories."""
    import matplotlib

    matplotlib.use("Agg")
    rows = [{"scenario": "two_path", "system": "MARL", "seed": 0, "episode": e, "env_copy": 0, "performance": e / 100}
            for e in range(1, 101)]
    fig = fidelity.figure(grid.Results(pd.DataFrame(rows), pd.DataFrame()), 15, [6, 9])
    ax = fig.axes[0]
    points = np.concatenate([collection.get_offsets() for collection in ax.collections
                             if len(collection.get_offsets()) == 3])
    paper = [float(MARLIN_TABLE1["two_path"][e][0]) for e in (100, 850, 1600)]
    np.testing.assert_allclose(np.sort(points[:, 1]), np.sort(paper * 2))
    assert ax.get_ylim()[1] >= 1.0 and not ax.yaxis.units  # a numeric axis, not categories


def test_a_variant_changes_one_setting_of_the_fig3_grid_and_keeps_the_others():
    training = presets.get("smoke", "fig3_training")
    base = fidelity.variant_config(training, fidelity.Variant("same"), (0,))
    torch_init = fidelity.variant_config(training, fidelity.Variant("torch init", init="torch"), (0,))
    # smoke's kept
    assert torch_init.mappo == dataclasses.replace(base.mappo, init="torch") and base.mappo.steps_per_iteration == 400
    six = fidelity.variant_config(training, fidelity.Variant("6 copies", n_envs=6), (0, 1))
    assert six.n_envs == 6 and six.seeds == (0, 1) and base.systems == ("MARL",)
    assert (fidelity.Config(variants=[{"name": "6 copies", "n_envs": 6}]).variants
            == (fidelity.Variant("6 copies", n_envs=6),))
    with pytest.raises(ValueError, match="names the Fig. 3 runs"):
        fidelity.Config(variants=[{"name": "ours"}])
    with pytest.raises(ValueError, match=r"unknown variants setting\(s\) \['mappo'\]"):
        fidelity.Config(variants=[{"name": "x", "mappo": {"init": "torch"}}])
    with pytest.raises(ValueError, match="init must be one of"):
        fidelity.variant_config(training, fidelity.Variant("bad", init="normc"), (0,))


def test_variants_table_reads_each_variant_at_the_papers_episode_and_counts_cells_within_tolerance():
    def results(offset):
        rows = [{"scenario": "two_path", "system": "MARL", "seed": seed, "episode": e, "env_copy": 0,
                 "performance": float(MARLIN_TABLE1["two_path"][100][0]) + offset + 0.02 * seed}
                for seed in (0, 1) for e in range(1, 121)]
        return grid.Results(pd.DataFrame(rows), pd.DataFrame())
    config = grid.GridConfig(episodes=120, checkpoints=[120], systems=["MARL"])
    runs = {"ours": (results(0.0), config),
            "6 copies": (results(0.3), grid.GridConfig(**{**dataclasses.asdict(config), "n_envs": 6}))}
    table = fidelity.variants_table(runs, window=1)
    at_100 = table[table.paper_episode == 100].set_index("variant")
    assert (at_100.loc["ours", "difference"] == pytest.approx(0.01)
            and at_100.loc["6 copies", "difference"] == pytest.approx(0.31))
    assert at_100.loc["6 copies", "n_envs"] == 6 and at_100.loc["ours", "seeds"] == 2
    assert table[table.paper_episode == 850].ours_MARL.isna().all()  # the training is shorter: no number made up
    summary = fidelity.variants_summary(table).set_index("variant")
    assert (summary.loc["ours", "within_0.1"] == 1 and summary.loc["6 copies", "within_0.1"] == 0
            and summary.loc["ours", "cells"] == 1)
