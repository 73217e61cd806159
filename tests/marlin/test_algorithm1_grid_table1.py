"""MARLIN: Algorithm 1's switch and plan cache, the exact joint planner, the runner, Table I."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from marlinkit import paths, presets, stats
from marlinkit.marlin import algorithm1, fig3_training, grid
from marlinkit.algos.joint_planner import NAME, ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, LAYOUTS, get_layout, shortest_path_length
from marlinkit.envs.corridor.plans import Plan, plan_key

PAPER = algorithm1.SwitchConfig()
CODE = algorithm1.SwitchConfig(rule="code")

# Shortest joint plans, derived by hand. Single/two-slot: robot 0 walks 3 up, steps into the slot
# at (0,3), waits one step while robot 1 passes (1,3), steps back: 7 + 2 moves + 1 wait = 10.
# Two path: the robots take opposite sides, no interference: the single-robot distance 9.
# Maze: one robot must back into the dead-end pocket (0,2)-(0,4) off (1,2): 9 + 4 moves + 1 wait = 14.
OPTIMAL_LENGTH = {"single_slot": 10, "symmetrical_two_slot": 10, "asymmetrical_two_slot": 10, "two_path": 9,
                  "maze_like": 14}


def test_switch_follows_algorithm_1_on_a_scripted_performance_sequence():
    llm = 0.5
    history: list[float] = []
    chosen = []
    for episode, performance in enumerate([0.1] * 10 + [0.2, 0.9, 0.9, 0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.1]):
        chosen.append(algorithm1.choose_generator(episode, history, None, llm, PAPER))
        history.append(performance)
    s, p = algorithm1.SAMPLING, algorithm1.PLAN
    assert chosen[:10] == [s] * 5 + [p] * 5  # m = 5 episodes each
    # mean of the last 5 vs 0.5: .1 .12 .28 .44 -> plan; .6 .76 .9 .74 .58 -> sampling; .42 -> plan again
    assert chosen[10:] == [p, p, p, p, s, s, s, s, s, p]
    assert algorithm1.choose_generator(30, [1.0] * 5, 1.0, llm, PAPER) == p, "a perfect cached plan is always used"
    assert algorithm1.choose_generator(30, [1.0] * 5, 0.9, llm, PAPER) == s


def test_code_variant_uses_the_median_and_a_plateau():
    # median 0.9
    assert algorithm1.choose_generator(20, [0.0, 0.0, 0.9, 0.9, 0.9], None, 0.5, CODE) == algorithm1.SAMPLING
    # median 0 (mean 0.36 too)
    assert algorithm1.choose_generator(20, [0.0, 0.0, 0.0, 0.9, 0.9], None, 0.5, CODE) == algorithm1.PLAN
    flat = [0.7, 0.8, 0.6, 0.7, 0.7] * 2  # median 0.7 twice in a row: a plateau below 1
    assert algorithm1.choose_generator(20, flat, None, 0.5, CODE) == algorithm1.PLAN
    assert algorithm1.choose_generator(20, flat, 1.0, 0.5, CODE) == algorithm1.PLAN
    rising = [0.6] * 5 + [0.8] * 5
    assert algorithm1.choose_generator(20, rising, None, 0.5, CODE) == algorithm1.SAMPLING
    assert algorithm1.choose_generator(20, [1.0] * 10, None, 0.5, CODE) == algorithm1.SAMPLING, "perfect is no plateau"
    with pytest.raises(ValueError, match="switch rule"):
        algorithm1.SwitchConfig(rule="mean")


def _plan(performance: float, tag: int) -> Plan:
    return Plan(np.full((3, 2), tag), performance, "test")


def test_plan_cache_keeps_the_better_plan():
    cache, key = algorithm1.PlanCache(), ("single_slot", (1, 0, 1, 7), (1, 7, 1, 0))
    assert cache.get(key) is None
    assert cache.offer(key, _plan(0.5, 1)).performance == 0.5
    assert cache.offer(key, _plan(0.3, 2)).actions[0, 0] == 1, "a worse plan never replaces the cached one"
    assert cache.offer(key, _plan(0.5, 3)).actions[0, 0] == 1, "ties keep the cached plan"
    assert cache.offer(key, _plan(0.9, 4)).actions[0, 0] == 4


class ImprovingSource:
    """A PlanSource whose first plan only waits (performance 0) and later plans are exact: a weak negotiator that
    improves."""

    name = "improving"

    def __init__(self):
        self.calls = 0

    def make_plan(self, layout, positions, steps_left, seed=None):
        self.calls += 1
        if self.calls == 1:
            return Plan(np.zeros((steps_left, 2), np.int64), 0.0, self.name)
        return ExactJointPlanner().make_plan(layout, positions, steps_left, seed)


def test_algorithm1_replans_when_the_cached_plan_is_worse_than_recent_performance():
    layout = get_layout("single_slot")
    source = ImprovingSource()
    switch = algorithm1.SwitchConfig(m=1, toggle_probability=0.0)
    controller = algorithm1.Algorithm1(layout, source, n_envs=1, llm_only=0.5, config=switch, seed=0)
    arrays = core.layout_arrays(layout)
    sampled = np.zeros((1, 2), np.int64)

    def episode():
        state = core.reset(arrays, 1)
        for _ in range(core.EPISODE_STEPS):
            state = core.step(arrays, state, controller(state, sampled)).state
        return controller.end_episode(core.performance(arrays, state))[0], float(core.performance(arrays, state)[0])

    info, perf = episode()  # episode 0 < m: sampling (here: always WAIT)
    assert info["generator"] == algorithm1.SAMPLING and source.calls == 0
    info, perf = episode()  # m <= episode < 2m: plan; none cached -> the weak plan
    assert info == {"generator": algorithm1.PLAN, "toggled": False, "plan_cache_hit": False} and perf == 0.0
    info, perf = episode()  # p-bar 0 < 0.5 -> plan; cached plan (0.0) is not worse than p-bar -> cache hit
    assert info["plan_cache_hit"] and source.calls == 1
    controller.history[0].extend([0.4] * 5)  # recent performance now above the cached plan's
    info, perf = episode()
    assert source.calls == 2 and not info["plan_cache_hit"] and perf == 1.0
    assert controller.cache.get(plan_key(layout, np.asarray(layout.starts))).performance == 1.0


def test_toggle_switches_generator_halfway_and_plans_from_there():
    layout = get_layout("two_path")
    switch = algorithm1.SwitchConfig(m=2, toggle_probability=1.0)
    controller = algorithm1.Algorithm1(layout, ExactJointPlanner(), n_envs=2, llm_only=0.5, config=switch, seed=0)
    arrays = core.layout_arrays(layout)
    state = core.reset(arrays, 2)
    for _ in range(core.EPISODE_STEPS):  # episode 0: sampling (policy stand-in: WAIT) for 25 steps, then a plan
        state = core.step(arrays, state, controller(state, np.zeros((2, 2), np.int64))).state
    info = controller.end_episode(core.performance(arrays, state))
    assert all(i["generator"] == algorithm1.SAMPLING and i["toggled"] for i in info)
    np.testing.assert_array_equal(core.performance(arrays, state), 1.0)  # 25 steps of plan suffice from the start cells


def test_plan_budget_is_spent_on_episode_starts_then_reuses_cached_plans_or_keeps_sampling():
    layout = get_layout("two_path")
    source = ImprovingSource()
    switch = algorithm1.SwitchConfig(m=1, toggle_probability=1.0)
    controller = algorithm1.Algorithm1(layout, source, n_envs=1, llm_only=1.1, config=switch, seed=0, plan_budget=1)
    arrays = core.layout_arrays(layout)
    sampled = np.array([[1, 0]])  # the policy stand-in: robot 0 walks north, so step 25 is not the start state

    def episode():
        state = core.reset(arrays, 1)
        for _ in range(core.EPISODE_STEPS):
            state = core.step(arrays, state, controller(state, sampled)).state
        return controller.end_episode(core.performance(arrays, state))[0]

    first = episode()  # sampling; its toggle at step 25 finds no cached plan there and may not spend the budget
    assert first["generator"] == algorithm1.SAMPLING and not first["toggled"] and source.calls == 0
    second = episode()  # the forced plan episode (m <= episode < 2m): the one budgeted plan, of the start cells
    assert second["generator"] == algorithm1.PLAN and source.calls == 1 and not second["plan_cache_hit"]
    # p-bar now above the cached plan's 0.0: it would re-plan, but the budget is spent
    controller.history[0].append(0.4)
    third = episode()  # -> the cached plan, as it is
    assert third["generator"] == algorithm1.PLAN and third["plan_cache_hit"] and source.calls == 1
    assert controller.plans_made == 1
    unlimited = algorithm1.Algorithm1(layout, ImprovingSource(), n_envs=1, llm_only=1.1, config=switch, seed=0)
    controller = unlimited
    episode()  # without a budget (the paper) the toggle at step 25 plans from its mid-episode state
    assert unlimited.plans_made == 1
    assert episode()["generator"] == algorithm1.PLAN and unlimited.plans_made == 2
    with pytest.raises(ValueError, match="plan_budget"):
        grid.GridConfig(**TINY, plan_budget=0)


def test_training_with_an_llm_plan_source_uses_its_own_llm_only_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(paths, "TRANSCRIPTS_DIR", tmp_path / "transcripts")
    monkeypatch.setenv("MARLINKIT_RECORD", "1")  # recording is an explicit choice (else a miss is an error)
    overrides = dict(scenarios=["single_slot"], episodes=8, n_envs=2, checkpoints=[4, 8], eval_runs=3, workers=1,
                     plan_budget=50)
    scripted = presets.get("quick", "llm_only", llm="scripted")
    training = fig3_training.run(presets.get("quick", "fig3_training", plan_source="llm", **overrides,
                                             llm_only=scripted, progress=False))
    episodes = training.results.episodes
    llm_only = episodes[episodes.system == "LLM-only"]
    assert set(episodes.system) == set(algorithm1.SYSTEMS) and len(llm_only) == presets.get("quick", "llm_only").trials
    assert training.config.llm_only_performance == (("single_slot", llm_only.performance.mean()),)
    names = {f.name for f in (tmp_path / "results" / "marlin" / "quick").glob("*marlin*seed0.json")}
    assert "single_slot__marlin-negotiation-scripted-greedy-robots__seed0.json" in names, names
    plans = episodes[(episodes.system == "MARLIN") & (episodes.generator == algorithm1.PLAN)]
    assert len(plans) > 0 and "scripted" in training.plan_source
    assert not list((tmp_path / "transcripts").glob("*scripted*"))  # a script is its own record: nothing to replay
    with pytest.raises(ValueError, match="plan_source"):
        presets.get("smoke", "fig3_training", plan_source="gpt")
    with pytest.raises(ValueError, match="no trials for"):
        fig3_training.run(presets.get("smoke", "fig3_training", plan_source="llm", scenarios=["maze_like"],
                                      llm_only=presets.get("smoke", "llm_only", llm="scripted"), progress=False))
    with pytest.raises(ValueError, match="set the config's llm_only"):
        fig3_training.run(dataclasses.replace(presets.get("smoke", "fig3_training", plan_source="llm"), llm_only=None))


def test_another_presets_negotiation_gives_the_plans_and_the_threshold_under_names_of_their_own(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(paths, "TRANSCRIPTS_DIR", tmp_path / "transcripts")
    overrides = dict(scenarios=["single_slot"], episodes=8, n_envs=2, checkpoints=[4, 8], eval_runs=3, workers=1,
                     plan_budget=2)
    section = lambda **given: presets.get("smoke", "fig3_training", **overrides, **given)  # noqa: E731
    training = fig3_training.run(section(plan_source="llm", negotiation="quick",
                                         llm_only=presets.get("quick", "llm_only", llm="scripted"), progress=False))
    episodes, quick = training.results.episodes, presets.get("quick", "llm_only")
    llm_only = episodes[episodes.system == "LLM-only"]
    assert len(llm_only) == quick.trials != presets.get("smoke", "llm_only").trials  # the quick preset's trials
    assert (tmp_path / "results" / "marlin" / "quick" / "llm_only__scripted__greedy-robots.json").exists()
    assert training.config.llm_only_performance == (("single_slot", llm_only.performance.mean()),)
    marlin = (tmp_path / "results" / "marlin" / "smoke"
              / "single_slot__marlin-negotiation-scripted-greedy-robots-quick-negotiation__seed0.json")
    # the quick protocol negotiated
    assert f"max_moves={quick.max_moves}" in json.loads(marlin.read_text())["config"]["plan_source"]
    assert grid.output_suffix(training.config) == "__llm__quick_negotiation"
    assert ("the quick preset's negotiation (<= 8 moves, 1 round(s), 80 tokens, 2 LLM-only trials"
            in fig3_training.variant_note(training))
    same = fig3_training.run(section(plan_source="llm", negotiation="smoke",
                                     llm_only=presets.get("smoke", "llm_only", llm="scripted"), progress=False))
    # its own preset's: no variant
    assert same.config.negotiation is None and grid.output_suffix(same.config) == "__llm"
    with pytest.raises(ValueError, match="needs plan_source 'llm'"):
        section(plan_source="exact", negotiation="quick")
    with pytest.raises(ValueError, match="pass its llm_only section"):
        grid.variant_note(training.config)


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_joint_planner_is_legal_and_optimal(name):
    layout = LAYOUTS[name]
    plan = ExactJointPlanner().make_plan(layout, np.asarray(layout.starts))
    assert plan.source == NAME == "exact-joint-planner"
    arrays = core.layout_arrays(layout)
    end, _ = core.rollout(arrays, plan.actions)
    state = core.reset(arrays, 1)
    for actions in plan.actions:  # legal: no move is blocked by a wall or the other robot
        result = core.step(arrays, state, actions[None])
        assert not result.blocked.any()
        state = result.state
    np.testing.assert_array_equal(end.pos[0], layout.goals)
    assert plan.performance == 1.0 == float(core.performance(arrays, end)[0])
    lower_bound = max(shortest_path_length(layout, layout.starts[i], layout.goals[i]) for i in range(2))
    assert len(plan.actions) >= lower_bound
    assert len(plan.actions) == OPTIMAL_LENGTH[name]


def test_joint_planner_returns_the_best_reachable_end_when_steps_run_out():
    layout = get_layout("single_slot")
    plan = ExactJointPlanner().make_plan(layout, np.asarray(layout.starts), steps_left=3)
    assert len(plan.actions) <= 3
    arrays = core.layout_arrays(layout)
    end, _ = core.rollout(arrays, plan.actions)
    assert plan.performance == pytest.approx(float(core.performance(arrays, end)[0])) == pytest.approx(3 / 7)


def test_paired_ttest_matches_the_formula_and_flags_degenerate_pairs():
    a, b = np.array([0.2, 0.4, 0.6, 0.8]), np.array([0.3, 0.6, 0.6, 1.0])
    d = b - a
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    result = stats.paired_ttest(a, b)
    assert result.t == pytest.approx(t) and result.n == 4 and result.mean_difference == pytest.approx(d.mean())
    assert 0 < result.p_value < 1
    same = stats.paired_ttest([1.0, 1.0], [1.0, 1.0])
    assert np.isnan(same.p_value) and same.mean_difference == 0.0
    with pytest.raises(ValueError, match="equal lengths"):
        stats.paired_ttest([1.0, 2.0], [1.0, 2.0, 3.0])


def test_table1_pairs_runs_by_seed_and_bolds_significant_cells(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for seed in (0, 1):
        for run in range(30):
            base = rng.random()
            rows.append({"scenario": "maze_like", "system": "MARL", "seed": seed, "checkpoint": 10, "run": run,
                         "performance": base * 0.5})
            rows.append({"scenario": "maze_like", "system": "MARLIN", "seed": seed, "checkpoint": 10, "run": run,
                         "performance": base * 0.5 + 0.3 + 0.01 * rng.standard_normal()})
    table = fig3_training.table1(pd.DataFrame(rows), [10])
    row = table.iloc[0]
    assert row.runs == 60 and row.significant and row.MARLIN - row.MARL == pytest.approx(0.3, abs=0.01)
    assert (row.paper_episode, row.paper_MARL, row.paper_MARLIN) == (100, "0.4300", "0.4271")
    shown, latex = fig3_training.table1_markup(table)
    assert shown.MARLIN.iloc[0].startswith("**") and not shown.MARL.iloc[0].startswith("**")
    assert "\\textbf{" in latex and "maze\\_like" in latex
    assert shown.paper_MARL.iloc[0] == "0.4300" and " 0.4300 " in latex  # the paper's trailing zeros kept
    csv = table.to_csv(index=False)
    assert ",0.4300,0.4271" in csv  # the CSV too (a float column would write 0.43)
    from marlinkit import plots

    written = plots.save_table(shown, tmp_path, "table1", "caption", plots.Provenance("smoke"), latex_table=latex,
                               markdown_floatfmt=fig3_training.TABLE1_MARKDOWN_FLOATFMT)
    markdown = written[1].read_text()
    assert " 0.4300 |" in markdown  # not 0.43: tabulate reads the string as a number
    assert " 0.43 |" not in markdown


def test_table1_reports_spread_and_a_paired_test_over_seeds_beside_the_per_run_test():
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(1)
    rows, seed_effect = [], {0: 0.02, 1: 0.10, 2: -0.01}  # MARLIN's gain differs between trainings
    for seed, gain in seed_effect.items():
        for run in range(40):
            base = 0.4 + 0.05 * seed + 0.1 * rng.random()
            rows.append({"scenario": "two_path", "system": "MARL", "seed": seed, "checkpoint": 5, "run": run,
                         "performance": base})
            rows.append({"scenario": "two_path", "system": "MARLIN", "seed": seed, "checkpoint": 5, "run": run,
                         "performance": base + gain + 0.01 * rng.standard_normal()})
    frame = pd.DataFrame(rows)
    row = fig3_training.table1(frame, [5]).iloc[0]
    per_seed = frame.groupby(["seed", "system"]).performance.mean().unstack()
    assert row.seeds == 3 and row.runs == 120
    assert row.MARL_seed_sd == pytest.approx(per_seed.MARL.std(ddof=1))
    assert row.MARLIN_seed_sd == pytest.approx(per_seed.MARLIN.std(ddof=1))
    assert row.p_value_seeds == pytest.approx(scipy_stats.ttest_rel(per_seed.MARLIN, per_seed.MARL).pvalue)
    difference = per_seed.MARLIN - per_seed.MARL
    assert row.diff_ci_low < difference.mean() < row.diff_ci_high and row.diff_ci_low < 0 < row.diff_ci_high
    # Thousands of evaluation runs make the per-run test "significant"; three trainings do not.
    assert row.significant and not row.significant_seeds
    shown, latex = fig3_training.table1_markup(fig3_training.table1(frame, [5]))
    assert "±" in shown.MARL.iloc[0] and r"$\pm$" in latex and "p\\_value\\_seeds" in latex
    one_seed = fig3_training.table1(frame[frame.seed == 0], [5]).iloc[0]
    assert one_seed.seeds == 1 and np.isnan(one_seed.p_value_seeds) and np.isnan(one_seed.MARL_seed_sd)
    config = grid.GridConfig(episodes=5, checkpoints=[5], seeds=[0, 1, 2])
    details = " ".join(fig3_training.table1_details(fig3_training.table1(frame, [5]), config).values())
    assert "evaluation noise" in details and "the seed is the unit" in details
    assert fig3_training.table1_caption(config).count(". ") == 0  # one sentence; the tests' units are in the details


TINY = {"scenarios": ["single_slot"], "seeds": [0], "episodes": 4, "n_envs": 3, "checkpoints": [2, 4], "eval_runs": 6,
        "llm_only_trials": 3, "workers": 1, "switch_rule": "paper", "llm_only_performance": None,
        "mappo": {"update_epochs": 2, "steps_per_iteration": 150}}


def test_runner_writes_tidy_records_resumes_and_repeats_exactly(tmp_path):
    first = grid.run_grid(grid.GridConfig(**TINY), "test", root=tmp_path / "a", progress=False)
    episodes = first.episodes
    assert set(episodes.system) == set(algorithm1.SYSTEMS)
    trained = episodes[episodes.system != "LLM-only"]
    assert len(trained) == 2 * 4 * 3 and set(trained.episode) == {1, 2, 3, 4} and set(trained.env_copy) == {0, 1, 2}
    for column in ("scenario", "seed", "generator", "toggled", "performance", "return", "steps", "plan_cache_hit",
                   "wall_time_s"):
        assert column in episodes
    marlin_rows = episodes[episodes.system == "MARLIN"]
    # episodes 0..m-1 (m=5) sample
    assert (marlin_rows[marlin_rows.episode <= 4].generator == algorithm1.SAMPLING).all()
    np.testing.assert_array_equal(episodes[episodes.system == "LLM-only"].performance, 1.0)
    evaluations = first.evaluations
    assert len(evaluations) == 2 * 2 * 6 and set(evaluations.checkpoint) == {2, 4}
    files = sorted((tmp_path / "a").iterdir())
    stamps = {f: f.stat().st_mtime_ns for f in files}
    # resume: nothing to redo
    again = grid.run_grid(grid.GridConfig(**TINY), "test", root=tmp_path / "a", progress=False)
    assert {f: f.stat().st_mtime_ns for f in sorted((tmp_path / "a").iterdir())} == stamps
    pd.testing.assert_frame_equal(again.episodes, episodes)
    repeat = grid.run_grid(grid.GridConfig(**TINY), "test", root=tmp_path / "b", progress=False)
    deterministic = [c for c in episodes.columns if c != "wall_time_s"]
    pd.testing.assert_frame_equal(repeat.episodes[deterministic], episodes[deterministic])
    pd.testing.assert_frame_equal(repeat.evaluations, evaluations)


def test_the_code_switch_keeps_its_own_marlin_runs_beside_the_paper_rules_and_shares_marl(tmp_path):
    tiny = {**TINY, "systems": ["MARL", "MARLIN"]}
    paper = grid.run_grid(grid.GridConfig(**tiny), "test", root=tmp_path, progress=False)
    names = {f.name for f in tmp_path.iterdir()}
    code = grid.run_grid(grid.GridConfig(**{**tiny, "switch_rule": "code"}), "test", root=tmp_path, progress=False)
    added = {f.name for f in tmp_path.iterdir()} - names
    assert added and all("marlin-code-switch" in name for name in added)  # MARL reused, nothing overwritten
    assert grid.system_tag("MARLIN", grid.ExactJointPlanner.name, "code") == "marlin-code-switch"
    assert grid.system_tag("MARL", grid.ExactJointPlanner.name, "code") == "marl"
    again = grid.run_grid(grid.GridConfig(**tiny), "test", root=tmp_path, progress=False)
    pd.testing.assert_frame_equal(again.episodes, paper.episodes)  # the paper rule's runs are still there, unchanged
    assert grid.output_suffix(grid.GridConfig(**{**tiny, "switch_rule": "code"})) == "__code_switch"
    assert grid.output_suffix(grid.GridConfig(**tiny)) == "" and grid.variant_note(grid.GridConfig(**tiny)) == ""
    marl = code.episodes[code.episodes.system == "MARL"].reset_index(drop=True)
    pd.testing.assert_frame_equal(marl, paper.episodes[paper.episodes.system == "MARL"].reset_index(drop=True))


def test_separated_plan_steps_keep_their_own_marlin_runs_and_share_marl(tmp_path):
    tiny = {**TINY, "systems": ["MARL", "MARLIN"]}
    paper = grid.run_grid(grid.GridConfig(**tiny), "test", root=tmp_path, progress=False)
    names = {f.name for f in tmp_path.iterdir()}
    separate = grid.GridConfig(**{**tiny, "mappo": {**tiny["mappo"], "generated_steps": "separate"}})
    apart = grid.run_grid(separate, "test", root=tmp_path, progress=False)
    added = {f.name for f in tmp_path.iterdir()} - names
    assert added and all("marlin-separate-plan-steps" in name for name in added)  # MARL reused, nothing overwritten
    assert (grid.output_suffix(separate) == "__separate_plan_steps"
            and "generated_steps='separate'" in grid.variant_note(separate))
    again = grid.run_grid(grid.GridConfig(**tiny), "test", root=tmp_path, progress=False)
    pd.testing.assert_frame_equal(again.episodes, paper.episodes)  # the paper's runs are still there, unchanged
    marlin = lambda r: (r.episodes[r.episodes.system == "MARLIN"]  # noqa: E731
                        .drop(columns="wall_time_s").reset_index(drop=True))
    assert not marlin(apart).equals(marlin(paper))


def test_runner_rejects_bad_settings_before_compute(tmp_path):
    with pytest.raises(ValueError, match="unknown scenario"):
        grid.GridConfig(**{**TINY, "scenarios": ["corridor9"]})
    with pytest.raises(ValueError, match="checkpoints"):
        grid.GridConfig(**{**TINY, "checkpoints": [5]})
    with pytest.raises(ValueError, match="switch rule"):
        grid.GridConfig(**{**TINY, "switch_rule": "median"})
    with pytest.raises(ValueError, match="unknown mappo setting"):
        grid.GridConfig(**{**TINY, "mappo": {"learning_rate": 1.0}})
    assert not any(tmp_path.iterdir())


def test_training_batches_cut_a_grid_seed_by_seed_and_keep_every_run_once():
    runs = [(f"{sc}__{sy}__seed{se}", {"scenario": sc, "system": sy, "seed": se})
            for sc in ("a", "b", "c", "d", "e") for sy in ("MARL", "MARLIN") for se in range(5)]
    per_seed = grid.training_batches(runs, workers=2, batch_runs=10)
    assert [sorted({c["seed"] for _, c in batch}) for batch in per_seed] == [[0], [1], [2], [3], [4]]
    assert sorted(name for batch in per_seed for name, _ in batch) == sorted(name for name, _ in runs)
    assert [len(b) for b in grid.training_batches(runs[:30], workers=2, batch_runs=30)] == [15, 15]  # one per worker
    assert [len(b) for b in grid.training_batches(runs[:3], workers=4, batch_runs=10)] == [1, 1, 1]
    assert grid.training_batches([], workers=2, batch_runs=10) == []  # a finished grid has nothing to train
    with pytest.raises(ValueError, match="batch_runs"):
        presets.get("smoke", "fig3_training", batch_runs=0)


def test_fig3_plan_steps_is_checked_before_compute():
    from marlinkit.marlin import fig3_training

    with pytest.raises(ValueError, match="generated_steps must be one of"):
        fig3_training.settings(presets.get("smoke", "fig3_training"), plan_steps="mask")
