"""The move -> wheel-command translator lands robots on the cell centres a plan names."""

import math

import pytest

from marlinkit.envs.corridor.core import ACTION_DELTAS, LLM_ACTION_NAMES
from marlinkit.hardware import DriveConfig, VelocityCommand, integrate, move_to_commands, plan_to_commands


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
