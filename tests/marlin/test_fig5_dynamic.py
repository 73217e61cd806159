"""Fig. 5 in simulation (noisy checkpoint evaluations, wheel commands) and the layout change during training."""

from __future__ import annotations

import dataclasses

import math

import numpy as np
import pytest

from marlinkit import presets
from marlinkit.marlin import algorithm1, systems
from marlinkit.marlin import fig5_hardware
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.marlin.hardware import VelocityCommand, integrate


def test_fig5_checkpoints_follow_the_paper_schedule():
    assert fig5_hardware.fig5_checkpoints(1600, 100, 250) == [100, 350, 600, 850, 1100, 1350, 1600]
    config = presets.get("paper", "fig5_hardware")
    assert config.scenarios == ("maze_like",) and config.checkpoints[-1] == config.episodes == 1600
    assert config.checkpoints == (100, 350, 600, 850, 1100, 1350, 1600)
    with pytest.raises(ValueError, match="checkpoint_start"):
        fig5_hardware.fig5_checkpoints(50, 100, 250)


def test_fig5_noise_reaches_policy_checkpoints_and_llm_only_plans(tmp_path):
    noise = {"p_fail": 1.0, "p_slip": 0.0}  # robots that never move: every score must be 0
    config = presets.get("smoke", "fig5_hardware", actuation_noise=noise, llm_only_trials=2, root=tmp_path,
                         progress=False)
    results = fig5_hardware.run(config)
    assert results.experiment == "fig5_hardware" and "SIMULATED actuation noise" in results.provenance.footer()
    assert results.paths and all(path.parent == tmp_path and path.is_file() for path in results.paths)
    evaluations = results.evaluations
    assert sorted(evaluations.checkpoint.unique()) == [1, 3, 5] and set(evaluations.system) == {"MARL", "MARLIN"}
    assert (evaluations.performance == 0.0).all() and (evaluations.layout == "maze_like").all()
    llm = results.episodes[results.episodes.system == "LLM-only"]
    assert len(llm) == 2 and (llm.performance == 0.0).all()
    clean = systems.plan_source_alone("maze_like", 0, 2)  # the same plans without noise reach the goals
    assert (clean.performance == 1.0).all()


def test_velocity_commands_drive_each_robot_of_the_maze_plan_to_its_goal():
    table = fig5_hardware.velocity_commands_table()
    layout = get_layout("maze_like")
    for robot, rows in table.groupby("robot"):
        start, goal = np.asarray(layout.starts[robot]), np.asarray(layout.goals[robot])
        heading = math.pi / 2 if goal[1] > start[1] else -math.pi / 2
        commands = [VelocityCommand(r.linear_x_m_s, r.angular_z_rad_s, r.duration_s) for r in rows.itertuples()]
        x, y, _ = integrate(commands, *(start * 0.3), heading)
        assert (x, y) == pytest.approx(tuple(goal * 0.3), abs=2e-3)  # durations are rounded to 1 ms in the table


class RecordingPlanner:
    """The exact planner, noting which layout and positions each plan was asked for."""

    name = "recording"

    def __init__(self):
        self.asked: list[tuple[str, tuple]] = []

    def make_plan(self, layout, positions, steps_left, seed=None):
        self.asked.append((layout.name, tuple(np.asarray(positions).ravel())))
        return ExactJointPlanner().make_plan(layout, positions, steps_left, seed)


def test_after_the_layout_change_training_runs_on_the_new_layout_with_its_own_plans():
    settings = dataclasses.replace(presets.get("smoke", "fig3_training", episodes=10, n_envs=2, checkpoints=[7, 10],
                                               layout_schedule=[[7, "maze_like"]]),
                                   plan_budget=None)  # the paper's unlimited re-planning
    source = RecordingPlanner()
    episodes, evaluations = systems.train_system("single_slot", "MARLIN", 0, settings, source)
    assert (episodes[episodes.episode <= 7].layout == "single_slot").all()
    assert (episodes[episodes.episode > 7].layout == "maze_like").all()
    assert evaluations.groupby("checkpoint").layout.first().to_dict() == {7: "single_slot", 10: "maze_like"}
    starts = tuple(np.asarray(get_layout("single_slot").starts).ravel())
    # same start key: only the layout tells them apart
    assert get_layout("maze_like").starts == get_layout("single_slot").starts
    # Episodes 6-10 are Algorithm 1's plan episodes (m = 5): a plan from the start for each layout, though one was
    # cached.
    assert ("single_slot", starts) in source.asked and ("maze_like", starts) in source.asked
    plan_runs = episodes[(episodes.generator == algorithm1.PLAN) & ~episodes.toggled]
    assert set(plan_runs.episode) >= {6, 7, 8, 9, 10}
    # A single-slot plan replayed in the maze walks into walls; the maze's own plan reaches the goals.
    assert (plan_runs.performance == 1.0).all()


def test_dynamic_settings_and_bad_schedules(tmp_path):
    config = presets.get("paper", "dynamic_env")
    assert config.layout_schedule == ((1000, "maze_like"),) and config.checkpoints == (1000, 1600)
    assert config.scenarios == ("single_slot",) and config.systems == ("MARL", "MARLIN")
    for change, layout in ((12, "maze_like"), (3, "maze9")):
        with pytest.raises(ValueError, match="layout_schedule"):
            presets.get("smoke", "dynamic_env", change_episode=change, new_layout=layout)
    assert not any(tmp_path.iterdir())
