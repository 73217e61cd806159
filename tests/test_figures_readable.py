"""The figures a figure review looked at, drawn from small hand-made results: each defect found there stays fixed."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from marlinkit.maestro import figures, report
from marlinkit.marlin import fig3_training, fig6_scalability, grid
from marlinkit.marlin.fig2_negotiation import draw_dialogue
from marlinkit.paper_values import AUTHORS_LLM_ONLY


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _ablation_results(difficulty: dict[tuple[str, int], list[float]], scores: dict[tuple[str, int], float]):
    rows = []
    for (ablation, seed), ds in difficulty.items():
        for episode, (d, d_next) in enumerate(zip(ds, ds[1:] + ds[-1:])):
            event = "down" if d_next < d or (ablation == "A2" and episode == 1) else None  # a "down" at the floor too
            rows.append({"ablation": ablation, "seed": seed, "episode": episode, "difficulty": d,
                         "difficulty_next": d_next, "difficulty_event": event, "score": scores[(ablation, seed)],
                         "env_return": 0.0, "fixed_time_return": -50.0, "max_pressure_return": 0.0,
                         "train_return": 0.0,
                         **{f"eval_{k}_{policy}": 0.0
                            for k in (*report.TRAFFIC, *report.SECONDARY, "score", "return", "vehicles")
                            for policy in ("stochastic", "greedy")}})
    return SimpleNamespace(episodes=pd.DataFrame(rows),
                           config=SimpleNamespace(final_window=2, eval_policy="stochastic"))


SEEDS = (200, 300, 400, 500)


def test_fig4_draws_each_seed_once_and_labels_apart():
    # A2's seed 200 is an outlier (the box drew it a second time as a flier); 300 and 400 nearly tie (labels collided)
    scores = {("A2", 200): 78.0, ("A2", 300): 31.2, ("A2", 400): 31.1, ("A2", 500): 15.6,
              ("A7", 200): 28.3, ("A7", 300): -37.6, ("A7", 400): 31.1, ("A7", 500): -83.4}
    results = _ablation_results({key: [0.3, 0.3, 0.3] for key in scores}, scores)
    fig, ax = plt.subplots()
    figures.final_boxplot(ax, results)
    points = sum(len(c.get_offsets()) for c in ax.collections)
    drawn_as_fliers = sum(len(line.get_xdata()) for line in ax.lines if line.get_marker() not in (None, "None", ""))
    assert points == len(scores) and drawn_as_fliers == 0
    for ablation in ("A2", "A7"):
        labels = [t for t in ax.texts if t.get_color() == figures.COLORS[ablation]]
        heights = sorted(t.get_position()[1] for t in labels)
        assert len(labels) == len(SEEDS) and np.min(np.diff(heights)) > 1.0, "seed labels overlap"


def test_fig4_keeps_every_seed_label_inside_the_axes_when_the_top_scores_crowd():
    # four seeds within 0.3 of the maximum: their labels are pushed up past the data, and must stay drawn inside
    scores = {("A2", 200): 10.0, ("A2", 300): 99.7, ("A2", 400): 99.8, ("A2", 500): 100.0}
    results = _ablation_results({key: [0.3, 0.3, 0.3] for key in scores}, scores)
    fig, ax = plt.subplots()
    figures.final_boxplot(ax, results)
    low, high = ax.get_ylim()
    heights = [t.get_position()[1] for t in ax.texts]
    assert max(heights) > 100.0 and all(low < h < high for h in heights)


def test_fig4_flags_a_seed_whose_final_window_holds_an_ill_conditioned_score():
    scores = {("A2", s): 50.0 + s / 100 for s in SEEDS}
    results = _ablation_results({key: [0.3, 0.3, 0.3] for key in scores}, scores)
    late = (results.episodes["seed"] == 500) & (results.episodes["episode"] == 2)  # in the final window (last 2)
    results.episodes.loc[late, "max_pressure_return"] = -49.9  # a near-empty context: the two baselines nearly tie
    fig, ax = plt.subplots()
    figures.final_boxplot(ax, results)
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == ["200", "300", "400", "500 *"] and "ill-conditioned" in ax.get_xlabel()


def test_fig7_draws_the_configurations_with_a_curriculum_only():
    difficulty = {("A0", s): [float("nan")] * 3 for s in SEEDS}  # no curriculum: no difficulty
    difficulty.update({("A2", s): [0.3, 0.35, 0.4] for s in SEEDS})
    results = _ablation_results(difficulty, {key: 1.0 for key in difficulty})
    fig, axes = plt.subplots(1, 1, squeeze=False)
    figures.difficulty_trajectories(axes[0], results, seed=200)
    assert "A2" in axes[0][0].get_title() and len(axes[0][0].lines) == len(SEEDS)


def test_fig7_shades_only_real_reductions_inside_the_run():
    difficulty = {("A2", s): [0.3, 0.3, 0.3, 0.3] for s in SEEDS}  # "down" at the floor: nothing falls
    difficulty.update({("A7", s): [0.5, 0.5, 0.4, 0.4] for s in SEEDS})  # one real reduction, after episode 1
    results = _ablation_results(difficulty, {key: 1.0 for key in difficulty})
    fig, axes = plt.subplots(1, 2)
    figures.difficulty_trajectories(axes, results, seed=200)
    spans = [len([p for p in ax.patches]) for ax in axes]
    assert spans == [0, 1]
    assert axes[1].patches[0].get_x() == pytest.approx(1.5) and axes[0].get_xlim()[1] <= 3.5
    # every seed's line is drawn, the others above the bold one
    lines = [line for line in axes[0].lines if line.get_label().startswith("seed")]
    assert len(lines) == len(SEEDS) and all(line.get_zorder() > lines[0].get_zorder() for line in lines[1:])


def _training_results(scenarios, llm_only_scores):
    rows = [{"scenario": sc, "system": system, "seed": seed, "episode": e, "performance": 0.1 * e + 0.05 * seed}
            for sc in scenarios for system in ("MARL", "MARLIN") for seed in (0, 1) for e in range(1, 9)]
    rows += [{"scenario": sc, "system": "LLM-only", "seed": 0, "episode": 1, "performance": p}
             for sc in scenarios for p in llm_only_scores]
    return grid.Results(pd.DataFrame(rows), pd.DataFrame())


def test_fig3_fits_a_paper_page_and_shows_a_constant_plan_source():
    scenarios = ["single_slot", "symmetrical_two_slot", "asymmetrical_two_slot", "two_path", "maze_like"]
    fig = fig3_training.figure3(_training_results(scenarios, [0.0, 0.0, 0.0]), scenarios, source_label="LLM-only")
    assert fig.get_figwidth() <= 7.5
    legend_texts = [t.get_text() for ax in fig.axes for legend in [ax.get_legend()] if legend
                    for t in legend.get_texts()]
    assert any(text.startswith("LLM-only, 3 runs") for text in legend_texts)
    assert "MARL: range over 2 seeds" in legend_texts, "the over-seed band is drawn and named"
    diamonds = [line for ax in fig.axes for line in ax.lines if line.get_marker() == "D"]
    assert len(diamonds) == len(scenarios), "a constant LLM-only score must still be visible"


def test_fig3_says_where_marlins_curve_is_mostly_plans():
    scenarios = ["single_slot", "asymmetrical_two_slot"]
    rows = [{"scenario": sc, "system": system, "seed": seed, "episode": e, "performance": 0.05 * e, "toggled": False,
             # asymmetrical: every MARLIN episode after the forced first 2m = 10 is a plan; single-slot: one in four
             "generator": ("plan" if system == "MARLIN" and e > 10 and (sc == "asymmetrical_two_slot" or e == 11)
                           else "sampling")}
            for sc in scenarios for system in ("MARL", "MARLIN") for seed in (0, 1) for e in range(1, 15)]
    rows += [{"scenario": sc, "system": "LLM-only", "seed": 0, "episode": 1, "performance": 0.5} for sc in scenarios]
    results = grid.Results(pd.DataFrame(rows), pd.DataFrame())
    summary = fig3_training.plan_episodes(results, grid.GridConfig(scenarios=scenarios, seeds=[0, 1], episodes=14,
                                                                   checkpoints=[14]))
    assert list(summary.columns[:3]) == ["plan_share", "toggled_share", "plan_share_after_10"]
    assert summary.loc["asymmetrical_two_slot", "plan_share_after_10"] == 1.0
    assert (summary.loc["single_slot", "plan_share_after_10"] == 0.25
            and summary.loc["single_slot", "plan_share"] == 1 / 14)
    assert (summary.loc["single_slot", "llm_only_mean"] == 0.5
            and summary.loc["single_slot", "llm_only_threshold"] == AUTHORS_LLM_ONLY["single_slot"])
    fig = fig3_training.figure3(results, scenarios, plan_share=summary.plan_share_after_10)
    notes = {ax.get_title(): [t.get_text() for t in ax.texts if "its curve shows" in t.get_text()] for ax in fig.axes}
    assert notes["Asymmetrical Two Slot Corridor"] == ["MARLIN: 100% plan\nepisodes, its curve shows\n"
                                                       "the plans, not its policy"]
    assert notes["Single Slot Corridor"] == [], "a panel under MOSTLY_PLANS carries no note"


def test_fig6_legend_is_outside_the_panels_and_every_panel_has_a_y_label():
    table = pd.DataFrame([{"system": system, "agents": n, "conflicts": 1.0, "negotiations": 1.0, "resolved": 1.0,
                           "llm_calls": 2.0 if system == "llm" else 0.0, "steps": 40.0}
                          for system in fig6_scalability.SYSTEMS for n in (4, 8, 12)])
    fig = fig6_scalability.figure(table, max_steps=150)
    assert all(ax.get_ylabel() for ax in fig.axes)
    assert all(ax.get_legend() is None for ax in fig.axes) and fig.legends
    llm, = [line for line in fig.axes[0].lines if line.get_label() == fig6_scalability.SYSTEM_LABELS["llm"]]
    exact, = [line for line in fig.axes[0].lines if line.get_label() == fig6_scalability.SYSTEM_LABELS["exact"]]
    assert llm.get_zorder() > exact.get_zorder(), "the LLM line is drawn over the planner's"


def test_dialogue_has_a_colour_legend_and_one_column_per_move():
    transcript = [{"move": 0, "speaker": "system", "kind": "system_prompt", "text": "rules\nmore"}]
    for move in range(2):
        transcript += [{"move": move, "speaker": "Alice", "kind": "task", "text": "Task: go north"},
                       {"move": move, "speaker": "Bob", "kind": "proposal", "text": "TLP: wait\nAlice: @NORTH"},
                       {"move": move, "speaker": "Alice", "kind": "agreement", "text": "Agreed"}]
    fig = draw_dialogue(transcript, moves=2)
    labels = {t.get_text() for legend in fig.legends for t in legend.get_texts()}
    assert {"task", "proposal (TLP + moves)", "agreement", "shared system prompt"} <= labels
    assert fig.axes[0].get_xlim() == (0, 2)


def test_fig3_a_plan_source_scoring_zero_sits_above_the_axis_and_neither_curve_hides_the_other():
    scenarios = ["single_slot", "maze_like"]
    fig = fig3_training.figure3(_training_results(scenarios, [0.0, 0.0, 0.0]), scenarios)
    for ax in fig.axes[:2]:
        diamond, = [line for line in ax.lines if line.get_marker() == "D"]
        bottom = ax.get_ylim()[0]
        assert diamond.get_ydata()[0] == 0.0 and bottom <= -0.08, "the diamond clears the x axis"
        marl, marlin = ([line for line in ax.lines if line.get_label() == s][0] for s in ("MARL", "MARLIN"))
        assert marl.get_zorder() > marlin.get_zorder() and marl.get_alpha() < 1 and marlin.get_alpha() < 1


def test_fidelity_legends_are_readable():
    from marlinkit.marlin import fidelity

    rows = [{"scenario": "two_path", "system": "MARL", "seed": s, "episode": e, "env_copy": 0, "performance": e / 100}
            for s in (0, 1) for e in range(1, 101)]
    fig = fidelity.figure(grid.Results(pd.DataFrame(rows), pd.DataFrame()), 15, [6, 9])
    assert fig.legends and all(text.get_fontsize() >= 8 for legend in fig.legends for text in legend.get_texts())
    assert all(ax.get_legend() is None for ax in fig.axes), "the legend sits under the panels, not on the curves"


class _Noise(dict):
    """Actuation noise readable as a mapping and by attribute."""

    __getattr__ = dict.__getitem__


def test_fig5_draws_the_spread_over_seeds_it_tabulates():
    from marlinkit.marlin import fig5_hardware

    evaluations = pd.DataFrame([{"scenario": "maze_like", "system": system, "seed": seed, "checkpoint": c, "run": run,
                                 "performance": 0.1 * seed + 0.01 * run + (0.2 if system == "MARLIN" else 0.0)}
                                for system in ("MARL", "MARLIN") for seed in (0, 1, 2) for c in (10, 20)
                                for run in range(4)])
    episodes = pd.DataFrame([{"scenario": "maze_like", "system": "LLM-only", "seed": 0, "episode": 1,
                              "performance": 0.4}])
    results = grid.Results(episodes, evaluations)
    table = fig5_hardware.fig5_table(results)
    fig = fig5_hardware.figure5(results, _Noise(p_fail=0.05, p_slip=0.05))
    ax = fig.axes[0]
    for system in ("MARL", "MARLIN"):
        bars, = [c for c in ax.containers if c.get_label() == f"{system}: mean ± SD over 3 seeds"]
        rows = table[table.system == system]
        np.testing.assert_allclose(np.asarray(bars.lines[0].get_ydata(), float), rows["mean"].to_numpy(float))
        low = np.asarray(bars.lines[1][0].get_ydata(), float)  # the lower caps: mean - SD over seeds
        np.testing.assert_allclose(np.sort(low), np.sort((rows["mean"] - rows.seed_sd).to_numpy(float)))


def test_dynamic_env_draws_the_range_over_seeds():
    from marlinkit.marlin import dynamic_env

    rows = [{"scenario": "single_slot", "system": system, "seed": seed, "episode": e, "env_copy": 0,
             "layout": "single_slot" if e <= 5 else "maze_like", "generator": "sampling",
             "performance": 0.1 * seed + (0.5 if e <= 5 else 0.1)}
            for system in ("MARL", "MARLIN") for seed in (0, 1, 2) for e in range(1, 11)]
    fig = dynamic_env.dynamic_figure(grid.Results(pd.DataFrame(rows), pd.DataFrame()), 5)
    ax = fig.axes[0]
    bands = {c.get_label(): c for c in ax.collections if "range of the per-seed medians" in c.get_label()}
    assert set(bands) == {f"{s}: range of the per-seed medians (3 seeds)" for s in ("MARL", "MARLIN")}
    path = bands["MARL: range of the per-seed medians (3 seeds)"].get_paths()[0].vertices
    # seed 0 after, seed 2 before
    assert path[:, 1].min() == pytest.approx(0.1) and path[:, 1].max() == pytest.approx(0.7)


def test_maddpg_sweep_gives_every_setting_its_own_colour_and_marker_and_short_axis_labels():
    from marlinkit.maestro import sweep

    names = list(sweep.SETTINGS)[:7]
    df = pd.DataFrame([{"setting": name, "seed": 200, "episode": e, "eval_score_stochastic": float(e),
                        "eval_score_greedy": float(e) - 1, "train_avg_delay_s": 40.0 + i,
                        "fixed_time_avg_delay_s": 54.0, "max_pressure_avg_delay_s": 25.0}
                       for i, name in enumerate(names) for e in range(5)])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    sweep.learning_figure(axes, df)
    lines = [line for line in axes[0].lines if line.get_label() in {f"{n} (seed 200)" for n in names}]
    assert len(lines) == 7
    assert len({line.get_color() for line in lines}) == 7 and len({line.get_marker() for line in lines}) == 7
    assert all(len(line) <= 40 for ax in axes for line in ax.get_ylabel().split("\n"))
