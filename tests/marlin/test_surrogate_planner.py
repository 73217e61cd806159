"""The calibrated surrogate planner (not an LLM): determinism, calibration to the authors' LLM-only values,
switching."""

from __future__ import annotations

import dataclasses

import json

import numpy as np
import pytest

from marlinkit import presets
from marlinkit.marlin import algorithm1, grid, systems
from marlinkit.marlin import surrogate_planner
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.marlin.surrogate_planner import CALIBRATION_TOLERANCE, CalibratedSurrogatePlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, get_layout
from marlinkit.paper_values import AUTHORS_LLM_ONLY

HELD_OUT_SEED, HELD_OUT_TRIALS = 7, 200  # the rates were calibrated on seed 0 (400 trials)


def test_calibrated_llm_only_performance_matches_the_authors_llama_values_on_a_held_out_seed():
    record = json.loads(surrogate_planner.RATES_FILE.read_text())
    assert record["command"].startswith("python -m marlinkit.marlin.surrogate_planner")
    source = CalibratedSurrogatePlanner()
    for scenario in LAYOUT_NAMES:
        measured = systems.plan_source_alone(scenario, HELD_OUT_SEED, HELD_OUT_TRIALS, source).performance
        assert abs(measured.mean() - AUTHORS_LLM_ONLY[scenario]) <= CALIBRATION_TOLERANCE, (scenario, measured.mean())
        assert 0.0 < source.rates[scenario] < 1.0
        assert measured.std() > 0  # an imperfect planner: plans differ in quality
        calibration = record["scenarios"][scenario]
        assert abs(calibration["llm_only"] - AUTHORS_LLM_ONLY[scenario]) <= 0.02, scenario  # the search's own result


def test_corruption_is_deterministic_per_seed_and_grows_with_the_rate():
    layout = get_layout("maze_like")
    starts = np.asarray(layout.starts)
    exact = ExactJointPlanner().make_plan(layout, starts, core.EPISODE_STEPS)
    clean = CalibratedSurrogatePlanner({"maze_like": 0.0}).make_plan(layout, starts, core.EPISODE_STEPS, seed=3)
    assert np.array_equal(clean.actions, exact.actions) and clean.performance == 1.0
    source = CalibratedSurrogatePlanner({"maze_like": 0.3})
    first, again = (source.make_plan(layout, starts, core.EPISODE_STEPS, seed=11) for _ in range(2))
    assert np.array_equal(first.actions, again.actions) and first.performance == again.performance
    other = source.make_plan(layout, starts, core.EPISODE_STEPS, seed=12)
    assert not np.array_equal(first.actions, other.actions)
    changed = first.actions != exact.actions
    heavier = surrogate_planner.corrupt(exact.actions, 0.6, 11) != exact.actions
    assert changed.any() and np.all(heavier[changed]), "a larger rate corrupts a superset of the same draws"
    everything = surrogate_planner.corrupt(exact.actions, 1.0, 11)
    assert np.all(everything != exact.actions) and everything.min() >= 0 and everything.max() < core.N_ACTIONS
    # The plan's performance is what its actions do on the environment.
    padded = np.zeros((core.EPISODE_STEPS, core.N_AGENTS), np.int64)
    padded[:len(first.actions)] = first.actions
    end, _ = core.rollout(core.layout_arrays(layout), padded)
    assert first.performance == pytest.approx(float(core.performance(core.layout_arrays(layout), end)[0]))


def test_the_rates_enter_the_run_name_and_a_damaged_rates_file_is_named(tmp_path):
    a, b = CalibratedSurrogatePlanner({"maze_like": 0.2}), CalibratedSurrogatePlanner({"maze_like": 0.3})
    assert a.name != b.name and a.name.startswith(surrogate_planner.NAME)
    assert grid.system_tag("MARLIN", a.name) == "marlin-calibrated-surrogate-planner"
    broken = tmp_path / "rates.json"
    broken.write_text('{"scenarios": {"maze_like": {"rate": 0.2}')
    with pytest.raises(ValueError, match="rates.json"):
        surrogate_planner.load_rates(broken)
    broken.write_text('{"scenarios": {"maze_like": {"rate": 1.5}}}')
    with pytest.raises(ValueError, match="rates.json"):
        surrogate_planner.load_rates(broken)
    with pytest.raises(ValueError, match="no calibrated corruption rate"):
        a.make_plan(get_layout("single_slot"), np.asarray(get_layout("single_slot").starts))


def test_marlin_with_the_surrogate_switches_generators_without_any_llm(tmp_path):
    settings, source, label = grid.with_plan_source(presets.get("quick", "fig3_training"), "surrogate")
    assert settings.plan_source == "surrogate" and settings.plan_budget is None and "NOT an LLM" in label
    settings = dataclasses.replace(settings, scenarios=["maze_like"], seeds=[0], episodes=25, n_envs=4,
                                   checkpoints=[25], eval_runs=4, llm_only_trials=5, workers=1,
                                   mappo={"update_epochs": 2, "steps_per_iteration": 200})
    results = grid.run_grid(settings, "test", source=source, root=tmp_path, progress=False)
    runs = results.episodes[(results.episodes.system == "MARLIN") & (results.episodes.episode > 10)]
    share = (runs.generator == algorithm1.PLAN).mean()
    assert 0.0 < share < 1.0, f"Algorithm 1 should switch with an imperfect planner, plan share {share}"
    assert (tmp_path / "maze_like__marlin-calibrated-surrogate-planner__seed0.csv").exists()
