"""The move -> wheel-command translator lands robots on the cell centres a plan names; actuation noise."""

import math

import numpy as np
import pytest

from marlinkit.algos import mappo
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor.core import ACTION_DELTAS, LLM_ACTION_NAMES
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.marlin.hardware import (
    ActuationNoise,
    DriveConfig,
    VelocityCommand,
    integrate,
    move_to_commands,
    plan_to_commands,
    play_plans_under_noise,
)


@pytest.mark.parametrize("move_index", range(1, 5))
def test_each_move_ends_one_cell_away_in_the_grid_direction(move_index):
    config = DriveConfig(cell_size_m=0.25)
    for start_heading in (0.0, math.pi / 2, math.pi, -math.pi / 2):
        commands, heading = move_to_commands(LLM_ACTION_NAMES[move_index], start_heading, config)
        x, y, final_heading = integrate(commands, 0.0, 0.0, start_heading)
        dx, dy = ACTION_DELTAS[move_index]
        assert (x, y) == pytest.approx((dx * 0.25, dy * 0.25), abs=1e-9)
        assert final_heading == pytest.approx(heading, abs=1e-9)


def test_turns_take_the_short_way_and_respect_the_speed_limits():
    config = DriveConfig(angular_speed_rad_s=0.5, linear_speed_m_s=0.2, cell_size_m=0.4)
    commands, _ = move_to_commands("@WEST", math.pi / 2, config)  # facing north, turn left 90 degrees
    assert commands == [VelocityCommand(0.0, 0.5, (math.pi / 2) / 0.5), VelocityCommand(0.2, 0.0, 2.0)]
    commands, _ = move_to_commands("@SOUTH", math.pi / 2, config)  # a U-turn is 180 degrees, not 540
    assert commands[0].duration_s == pytest.approx(math.pi / 0.5)


def test_wait_holds_still_and_no_turn_when_already_facing():
    config = DriveConfig(wait_s=2.0)
    assert move_to_commands("@WAIT", 1.0, config) == ([VelocityCommand(0.0, 0.0, 2.0)], 1.0)
    commands, _ = move_to_commands("@NORTH", math.pi / 2, config)
    assert len(commands) == 1 and commands[0].angular_z == 0.0


def test_a_whole_plan_reaches_the_goal_cell_of_the_single_slot_corridor():
    moves = ["@NORTH"] * 3 + ["@WEST", "@WAIT", "@EAST"] + ["@NORTH"] * 4
    x, y, _ = integrate(plan_to_commands(moves), 0.0, 0.0, math.pi / 2)
    assert (x, y) == pytest.approx((0.0, 7 * 0.3), abs=1e-9)


def test_bad_moves_and_settings_are_rejected():
    with pytest.raises(ValueError, match="unknown move"):
        move_to_commands("@UP", 0.0)
    with pytest.raises(ValueError, match="linear_speed_m_s must be positive"):
        DriveConfig(linear_speed_m_s=0.0)


# ---- simulated actuation noise (Fig. 5 in simulation)

def test_noise_fails_and_slips_at_the_given_rates_and_never_moves_a_waiting_robot():
    noise = ActuationNoise(p_fail=0.1, p_slip=0.2)
    u = (np.arange(1000) + 0.5) / 1000  # evenly spread uniforms: exact rates
    uniforms = np.stack([u, np.tile([0.25, 0.75], 500)], -1)
    executed = noise.apply(np.full(1000, 1), uniforms)  # all FORWARD
    assert (executed == 0).sum() == 100
    assert (executed == 3).sum() == 100 and (executed == 4).sum() == 100  # slips split evenly left/right
    assert (executed == 1).sum() == 700
    np.testing.assert_array_equal(noise.apply(np.zeros(1000, np.int64), uniforms), 0)
    np.testing.assert_array_equal(ActuationNoise(0.0, 0.0).apply(np.arange(5), np.zeros((5, 2))), np.arange(5))
    with pytest.raises(ValueError, match="p_fail \\+ p_slip <= 1"):
        ActuationNoise(p_fail=0.7, p_slip=0.5)


@pytest.mark.parametrize("move", range(1, 5))
def test_a_slip_lands_on_a_neighbouring_cell_perpendicular_to_the_move(move):
    executed = ActuationNoise(p_fail=0.0, p_slip=1.0).apply(np.array([move, move]), np.array([[0.5, 0.1], [0.5, 0.9]]))
    deltas = ACTION_DELTAS[executed]
    assert (deltas @ ACTION_DELTAS[move] == 0).all() and (np.abs(deltas).sum(-1) == 1).all()
    assert executed[0] != executed[1]


def test_policy_evaluation_under_noise_is_paired_and_reaches_the_robots():
    layout = get_layout("maze_like")
    agent = mappo.MAPPO(mappo.MAPPOConfig(), [0]).policy(0)
    stuck = mappo.evaluate(agent, layout, 8, (0, 1), ActuationNoise(p_fail=1.0, p_slip=0.0).actuator((0, 1), 8))
    np.testing.assert_array_equal(stuck, 0.0)  # every move fails: nobody leaves the start
    noise = ActuationNoise(0.1, 0.1)
    first = mappo.evaluate(agent, layout, 8, (0, 1), noise.actuator((0, 1), 8))
    np.testing.assert_array_equal(first, mappo.evaluate(agent, layout, 8, (0, 1), noise.actuator((0, 1), 8)))


def test_plans_under_noise_replan_after_a_deviation_and_still_reach_the_goals():
    layout = get_layout("maze_like")
    performance, _, plans = play_plans_under_noise(layout, ExactJointPlanner(), ActuationNoise(0.0, 0.0), 0,
                                                   plan_seed=0)
    assert (performance, plans) == (1.0, 1)
    noise = ActuationNoise(p_fail=0.2, p_slip=0.1)
    outcomes = [play_plans_under_noise(layout, ExactJointPlanner(), noise, seed, plan_seed=0) for seed in range(4)]
    assert all(p == 1.0 for p, _, _ in outcomes)  # 50 steps leave room to recover from failures and slips
    assert all(n > 1 for _, _, n in outcomes)
