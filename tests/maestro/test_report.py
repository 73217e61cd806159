"""MAESTRO's tables at their edges: paper values as printed, undefined CV, complete captions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marlinkit import plots, presets
from marlinkit.maestro import figures, report
from marlinkit.maestro.ablation import AblationResults
from marlinkit.maestro import curriculum_env
from marlinkit.maestro.curriculum_env import Calibration

SEEDS = (200, 300, 400, 500)


def _results(means: dict[str, list[float]]) -> AblationResults:
    config = presets.ablation_config("smoke")
    rows = []
    for ablation, per_seed in means.items():
        for seed, mean in zip(SEEDS, per_seed):
            for episode in range(config.final_window):
                rows.append({"ablation": ablation, "seed": seed, "episode": episode,
                             "score": mean + (episode % 2 - 0.5),
                             "env_return": mean, "train_return": mean, "eval_return": mean, "difficulty": 1.0,
                             "fixed_time_return": -50.0, "max_pressure_return": 0.0,
                             **{f"eval_{k}_{policy}": 100.0 + mean
                                for k in (*report._METRICS, "score", "return", "vehicles")
                                for policy in ("stochastic", "greedy")}})
    sidecar = {"engine_version": "test", "llm": "scripted"}
    return AblationResults.of(config, "smoke", pd.DataFrame(rows), pd.DataFrame(), {"run": sidecar},
                           Calibration(1.0, 0.0), {}, Path("."), pd.DataFrame({"controller": []}))


def test_table1_prints_the_papers_own_percentages():
    table = report.table1(_results({"A2": [10.0], "A7": [12.0], "A8": [9.0]}))
    a7 = table.iloc[1]
    assert a7["paper Avg travel time (s)"] == "739 (-6.9%)"  # recomputed from 739/793 it would read -6.8%
    assert table.iloc[2]["paper Throughput (veh/ep)"] == "2155 (+9.2%)"
    columns = list(table.columns)  # between ours and the paper's: a column saying they are not comparable
    assert columns.index(report.VS_PAPER) == columns.index("paper Avg delay (s)") - 1
    assert ((table[report.VS_PAPER].iloc[1:] == report.NOT_COMPARABLE).all()
            and "not comparable" in report.caption("table1", None))
    six = report.table6(_results({"A2": [10.0, 11.0], "A7": [12.0, 13.0]}))
    assert list(six.columns).index(report.VS_PAPER) == list(six.columns).index("paper Avg delay (s) (seed 200)") - 1
    assert (six[report.VS_PAPER] == report.NOT_COMPARABLE).all()


def test_every_caption_is_one_sentence_and_its_definitions_go_to_the_provenance():
    results = _results({"A2": [1.0, 2.0], "A7": [3.0, 5.0]})
    for name in report.CAPTIONS:
        caption = report.caption(name, results)
        assert caption.endswith(".") and caption.count(". ") == 0 and "\n" not in caption, caption
        assert report.provenance(name, results).details["definitions"] == report.CAPTIONS[name][1].format(
            window=results.config.final_window, pairs=1)


def test_table2_cv_of_a_negative_mean_is_undefined_and_the_caption_says_so():
    results = _results({"A2": [-3.0, 1.0, -2.0, -1.5], "A7": [5.0, 6.0]})
    table = report.table2(results)
    assert table.iloc[0]["CV (%)"] == "—" and table.iloc[1]["CV (%)"] != "—"
    caption = report.provenance("table2", results).text()
    assert "score = 165 x" in caption and "undefined" in caption and "Sharpe" in caption
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2)
    figures.cv_comparison(axes, results)
    assert any("undefined" in t.get_text() for t in axes[0].texts)  # Fig. 6 says so too, not a negative bar
    assert all(bar.get_height() >= 0 or not np.isfinite(bar.get_height()) for bar in axes[0].patches)
    assert "paper" in axes[1].get_ylabel() and "paper" not in axes[0].get_ylabel()  # two quantities, two axes
    plt.close(fig)


def test_fig5_draws_ours_and_the_papers_in_separate_labelled_panels():
    import matplotlib.pyplot as plt

    results = _results({"A0": [30.0, 40.0], "A2": [50.0, 60.0], "A7": [55.0, 65.0]})
    fig, axes = plt.subplots(1, 2)
    figures.means_and_sds(axes, results)
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["A0", "A2", "A7"]
    assert [t.get_text() for t in axes[1].get_xticklabels()] == ["A2", "A7"]  # A0 is not in the paper's ablation
    assert [round(b.get_height(), 2) for b in axes[0].patches] == [35.0, 55.0, 60.0]
    assert [b.get_height() for b in axes[1].patches] == [157.04, 158.87]  # the paper's Table 2, on its own axis
    assert "final score" in axes[0].get_ylabel() and "paper's episode return" in axes[1].get_ylabel()
    plt.close(fig)


def test_table4_and_table7_captions_define_their_quantities():
    results = _results({"A2": [1.0, 2.0, 3.0, 4.0], "A7": [3.0, 5.0], "A8": [2.0, 6.0, 7.0, 8.0]})
    table = report.table4(results)
    assert "seeds for 80% power at our d" in table.columns and "paper seeds for power (its d)" in table.columns
    caption4 = report.provenance("table4", results).text()
    for phrase in ("U = min(U_X, U_Y)", "positive when the second-named", "no agreement", "3 pairs", "tie-correct"):
        assert phrase in caption4
    caption7 = report.provenance("table7", results).text()
    for phrase in ("Sortino =", "downside deviation", "VaR (5%) =", "max drawdown =", "success ="):
        assert phrase in caption7


def test_acceptance_counts_rewards_retired_in_training():
    results = _results({"A2": [1.0, 2.0], "A7": [3.0, 5.0]})
    base = {"mode": "llm_reward", "fallback": False, "reason": "accepted", "accepted": True}
    results = results.replace(generations=pd.DataFrame([
        {**base, "kind": "reward"}, {**base, "kind": "reward", "accepted": False, "reason": "syntax: no"},
        {**base, "kind": "retire", "fallback": True, "accepted": False, "reason": "retired during training: budget"},
        {**base, "kind": "context", "mode": "llm_adaptive"}]))
    table = report.acceptance(results).set_index("kind")
    assert table.loc["reward", "calls"] == 2 and table.loc["reward", "retired in training"] == 1
    assert table.loc["context", "retired in training"] == 0 and "retire" not in table.index


def test_statistics_on_a_subset_of_seeds_read_only_those_seeds():
    import dataclasses

    import pytest

    full = _results({"A2": [1.0, 2.0, 3.0, 9.0], "A7": [3.0, 5.0, 4.0, -7.0]})
    full = AblationResults.of(dataclasses.replace(full.config, seeds=SEEDS), full.preset, full.episodes,
                              pd.DataFrame({"seed": list(SEEDS), "kind": "context"}),
                              {f"{a}__seed{s}": {"engine_version": "test", "llm": "scripted"} for a in ("A2", "A7")
                               for s in SEEDS},
                              full.calibration, full.calibration_info, full.root, full.baselines)
    two = full.for_seeds((200, 300))
    assert (two.config.seeds == (200, 300) and set(two.episodes.seed) == {200, 300}
            and set(two.generations.seed) == {200, 300})
    assert sorted(two.sidecars) == ["A2__seed200", "A2__seed300", "A7__seed200", "A7__seed300"]
    assert report.table2(two).iloc[0]["Mean ± SD"] != report.table2(full).iloc[0]["Mean ± SD"]  # seed 500 left out
    assert len(report.final_by_seed(two)) == 4  # 2 conditions x 2 seeds
    with pytest.raises(ValueError, match="not in these results"):
        full.for_seeds((200, 1300))


def test_curriculum_movement_counts_what_the_rule_did_and_where_the_window_stood_against_its_bars():
    results = _results({"A2": [0.0]})
    n = 30
    scores = [170.0] * 6 + [0.0] * (n - 6)  # two windows above the drop bar (156.75), none above the raise bar (173.25)
    results = results.replace(episodes=(frame := pd.DataFrame({
        "ablation": "A2", "seed": 200, "episode": range(n), "score": scores,
        "difficulty": [0.3] * 10 + [0.35] * (n - 10),
        "difficulty_event": ["down"] * 3 + [None] * 6 + ["plateau"] + [None] * (n - 10)})))
    row = report.curriculum_movement(results).iloc[0]
    assert row["raise bar"] == 165 * 1.05 and row["drop bar"] == 165 * 0.95
    assert row["drop decisions"] == 3 and row["raises (plateau)"] == 1 and row["raises (score)"] == 0
    assert row["episodes at d_min (%)"] == pytest.approx(100 * 10 / len(frame)) and row["d_max"] == 0.35
    windows = pd.Series(scores).rolling(5).mean().dropna()
    assert (row["windows above drop bar (%)"] == pytest.approx(100 * (windows >= 156.75).mean())
            and row["windows above drop bar (%)"] > 0)
    assert row["windows above raise bar (%)"] == 0.0


def test_table4_with_one_seed_per_condition_says_so_instead_of_failing():
    """A long run's first finished seed: no rank test or pooled SD is defined; the table says why."""
    one = report.table4(_results({"A2": [1.0], "A7": [3.0], "A8": [2.0]}))
    assert list(one["Comparison"]) == ["A2 vs A7", "A2 vs A8", "A7 vs A8"]
    assert (one["U"] == "—").all() and one["Significant?"].str.contains("fewer than 2 seeds: A2, A7, A8").all()
    two = report.table4(_results({"A2": [1.0, 2.0], "A7": [3.0, 5.0]}))
    assert two.iloc[0]["U"] != "—"  # two seeds each: the test runs


def test_a_curve_equal_to_one_drawn_before_is_dashed_and_named_and_the_footer_names_the_seeds():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = _results({"A2": [1.0, 2.0], "A7": [1.0, 2.0], "A8": [3.0, 4.0]})
    fig, ax = plt.subplots()
    figures.learning_curves(ax, results)
    labels = {line.get_label(): line.get_linestyle() for line in ax.get_lines()}
    assert labels["A7 (full MAESTRO): identical to A2"] == "--" and labels["A2 (LLM curriculum + template)"] == "-"
    assert not any("identical" in label for label in labels if label.startswith("A8"))
    plt.close(fig)
    provenance = results.provenance
    assert f"seeds {list(results.config.seeds)} x {results.config.episodes} episodes" in provenance.details["runs"]
    assert (provenance.footer().endswith(plots.seeds_text(results.config.seeds))
            and "LLM scripted" in provenance.footer())


def test_the_legend_leaves_the_clipped_axis_note_readable():
    """Fig. 3 on committed paper-length runs whose curves fill the lower right (the ue25_openblas ablation, seeds
    200-900): the legend once sat on the note naming the clipped episodes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from marlinkit.maestro import ablation

    config = presets.ablation_config("paper", maddpg_setting="ue25_openblas",
                                     seeds=[200, 300, 400, 500, 600, 700, 800, 900], record=False, progress=False)
    results = ablation.run(config)
    fig, ax = plt.subplots(figsize=(7, 4))
    figures.learning_curves(ax, results)
    fig.tight_layout(rect=(0, 0.09, 1, 1))  # as the notebook lays it out
    fig.canvas.draw()
    notes = [t for t in ax.findobj(Text) if t.get_text().startswith("y-axis clipped")]
    assert len(notes) == 1, "these runs hold ill-conditioned episodes: the note must be drawn"
    renderer = fig.canvas.get_renderer()
    note = notes[0].get_window_extent(renderer)
    assert not ax.get_legend().get_window_extent(renderer).overlaps(note)
    assert note.x1 <= ax.get_window_extent(renderer).x1, "the note runs out of the axes"
    plt.close(fig)


def test_cost_breakdown_counts_the_runs_untimed_rest_so_the_total_is_their_measured_wall_time():
    results = _results({"A2": [1.0, 2.0]})
    timing = {"sim_s": 1.0, "eval_s": 0.5, "baseline_s": 0.5, "train_s": 3.0, "llm_curriculum_s": 2.0,
              "llm_reward_s": 0.0, "reward_eval_s": 0.0}
    episodes = results.episodes.assign(**timing)  # 7 s timed per episode
    timed = 7.0 * len(episodes)
    generations = pd.DataFrame({"kind": ["context"] * 3, "fallback": [False] * 3, "llm_seconds": [2.0] * 3,
                                "cached": [False, True, True]})
    walls = {"A2__seed200": {"wall_s": 200.0}, "A2__seed300": {"wall_s": 180.0}}
    table = (report.cost_breakdown(results.replace(episodes=episodes, generations=generations, sidecars=walls))
             .set_index("Component"))
    assert float(table.loc[report.OVERHEAD, "Total (s, all runs)"]) == 380.0 - timed
    assert float(table.loc["Total", "Total (s, all runs)"]) == 380.0  # the runs' own wall time
    assert table.loc[report.OVERHEAD, "paper total"] == "—"
    curriculum = table.loc["LLM curriculum calls"]  # replayed calls: recorded latency, milliseconds of wall time
    assert (curriculum["Calls (all runs)"], curriculum["of them replayed"],
            curriculum["Model latency per call (s)"]) == (3, 2, "2.00")
    assert "replayed" in report.caption("table5", results)
    untimed = report.cost_breakdown(results.replace(episodes=episodes, generations=generations))
    assert report.OVERHEAD not in set(untimed["Component"])  # sidecars without wall_s: no rest to count


def test_an_ill_conditioned_calibration_is_flagged_and_its_effect_on_the_final_scores_quantified():
    results = _results({"A2": [10.0, 20.0], "A8": [30.0, 40.0]})
    assert (report.ill_conditioned(results).empty
            and "ill-conditioned" not in report.provenance("table2", results).text())
    df = results.episodes
    last = df["episode"].max()
    near_empty = (df["ablation"] == "A8") & (df["seed"] == 300) & (df["episode"] == last)
    df.loc[near_empty, ["max_pressure_return", "fixed_time_return", "score"]] = [-0.74, -0.77, 500.0]
    bad = report.ill_conditioned(results)
    assert bad[["ablation", "seed", "episode"]].values.tolist() == [["A8", 300, last]]
    assert bad["gap"].iloc[0] == pytest.approx(0.03) and bool(bad["in final window"].iloc[0])
    run = df[(df["ablation"] == "A8") & (df["seed"] == 300)]
    with_it, without = run["score"].mean(), run.loc[run["episode"] != last, "score"].mean()
    note = report.provenance("table2", results).text()
    assert (f"A8 seed 300: 1 of its last {results.config.final_window}, final score {with_it:.1f} with them, "
            f"{without:.1f} without" in note)
    assert "ill-conditioned" not in report.provenance("table6", results).text()  # evaluation rows run on the real flow
    assert figures._ranges([30, 180, 181, 182, 184]) == "30, 180-182, 184"


def test_an_episode_without_a_score_is_flagged_and_the_final_scores_average_the_scored_ones():
    results = _results({"A2": [10.0, 20.0], "A8": [30.0, 40.0]})
    df = results.episodes
    last = df["episode"].max()
    unscored = (df["ablation"] == "A8") & (df["seed"] == 300) & (df["episode"] == last)
    # the architect's traffic on which max-pressure did worse than fixed-time: calibrated_score gives NaN
    score = float(curriculum_env.calibrated_score(-80.0, -70.0, -75.0))
    assert np.isnan(score)
    df.loc[unscored, ["max_pressure_return", "fixed_time_return", "score"]] = [-75.0, -70.0, score]
    bad = report.ill_conditioned(results)
    assert bad[["ablation", "seed", "episode"]].values.tolist() == [["A8", 300, last]] and bad["gap"].iloc[0] == -5.0
    final = report.final_by_seed(results).set_index(["ablation", "seed"])["score"]
    scored = df[(df["ablation"] == "A8") & (df["seed"] == 300) & ~unscored]["score"]
    assert final[("A8", 300)] == pytest.approx(scored.mean()) and np.isfinite(final.to_numpy()).all()
    note = report.provenance("table2", results).text()
    assert "1 of them with no score: max-pressure no better than fixed-time" in note
    assert (f"A8 seed 300: 1 of its last {results.config.final_window} (none scored), "
            f"final score {scored.mean():.1f}" in note)
    assert figures._score_range(pd.Series([np.nan, -40.0, 900.0, np.nan])) == "-40 to 900, 2 without a score"
    assert figures._score_range(pd.Series([np.nan])) == "1 without a score"


def test_every_footer_says_which_maddpg_settings_trained_the_runs():
    import dataclasses

    results = _results({"A2": [1.0]})
    paper = results.replace(config=presets.ablation_config("paper", seeds=[200]))
    assert paper.runs_note.endswith("MADDPG: the paper's defaults")  # Lowe et al.'s cadence, pinned by the preset
    assert results.runs_note.endswith("MADDPG overrides {'batch_size': 32, 'learning_starts': 32, 'update_every': 15}")
    ours = results.replace(config=dataclasses.replace(results.config, maddpg={}))
    assert ours.runs_note.endswith("MADDPG: marlinkit's defaults")  # an update every 25 steps: not the paper's


@pytest.mark.parametrize("reason, stage", [
    ("syntax: does not parse: SyntaxError: '(' was never closed (<reward>, line 3)", "syntax"),
    ("cut off before the context was complete (dropped the rest of the object after 2 member(s): Expecting value",
     "cut off before the context was complete"),
    ("route_mix shares must sum to 1, got 6.0000", "route_mix shares must sum to 1"),
    ("load: 412.0 expected vehicles, the difficulty asks for 160 +-20%", "load"),
    ("environment reward after 3 failures", "environment reward after 3 failures")])
def test_a_rejection_is_counted_under_its_check_not_its_particulars(reason, stage):
    """The acceptance table's top stages: replies cut off after 1, 2 or 5 members are one stage, not three."""
    assert report.rejection_stage(reason) == stage


def test_the_paper_rows_whose_learners_end_barely_above_random_say_so_in_every_footer():
    """A paper-preset row under any MADDPG setting but the learning ones carries the label in its footer and details;
    the shared5 row and the other presets' rows do not."""
    from marlinkit.maestro import results as results_module

    smoke = _results({"A2": [10.0]})
    assert results_module.BARELY_ABOVE_RANDOM not in smoke.provenance.footer()
    paper = presets.ablation_config("paper", record=False)
    for setting, labelled in ((None, True), ("ue25_openblas", True), ("shared5", False)):
        config = dataclasses.replace(paper, maddpg_setting=setting)
        made = AblationResults.of(config, "paper", smoke.episodes, pd.DataFrame(), {"run": {"llm": "scripted"}},
                                  Calibration(1.0, 0.0), {}, Path("."), pd.DataFrame({"controller": []}))
        assert (results_module.BARELY_ABOVE_RANDOM in made.provenance.footer()) is labelled, setting
        assert (made.provenance.details.get("learners") == results_module.BARELY_ABOVE_RANDOM) is labelled, setting


def test_table2_and_the_figures_put_the_learners_beside_the_random_switcher():
    import matplotlib.pyplot as plt

    results = _results({"A2": [10.0, 11.0], "A7": [12.0, 13.0]})
    random = np.array([40.0, 60.0])
    table = report.table2(results, random=random).set_index("Condition")
    assert list(table.index[-3:]) == ["Random phase switcher (2 draws)", "Fixed-time 30 s", "Max-pressure"]
    assert table.loc["Random phase switcher (2 draws)", "Eval real, greedy"] == "50.00 ± 14.14"
    assert table.loc["Max-pressure", "Eval real, stochastic"] == "165.00 ± —"
    assert table.loc[ABLATION_LABEL_A2, "Eval real, greedy"] == "110.50 ± 0.71"  # 100 + the seeds' means 10, 11
    assert table.loc["Fixed-time 30 s", "Mean ± SD"] == "—"  # a baseline has no training score
    assert len(report.table2(results)) == 2  # without the draws: the learners only
    for draw in (figures.learning_curves, figures.evaluation_curves, figures.final_boxplot):
        fig, ax = plt.subplots()
        draw(ax, results, random=random)
        labels = [line.get_label() for line in ax.get_lines()]
        assert "random phase switcher, real flow: 50 ± 14 (2 draws)" in labels, (draw.__name__, labels)
        assert ax.get_ylim()[0] <= 50.0 - 14.14 <= ax.get_ylim()[1]  # the band is inside the axes
        plt.close(fig)


ABLATION_LABEL_A2 = "A2 (LLM curriculum + template)"
