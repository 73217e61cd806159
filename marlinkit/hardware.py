"""From the negotiated high-level moves to wheel commands of a differential-drive robot.

MARLIN's LLMs plan with ``@NORTH``/``@SOUTH``/``@EAST``/``@WEST``/``@WAIT``; on the TurtleBot3
robots of the paper's Fig. 4-5 a lower layer turns these into linear and angular velocities
(Section III-B). This module is that layer, free of ROS: each move becomes "turn on the spot to
the move's heading, then drive one cell", as ``cmd_vel``-style commands with durations that a
ROS 2 node publishes in order. ``integrate`` dead-reckons commands so tests (and users) can check
that a plan ends on the intended cell centres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Heading (radians, counter-clockwise from +x) each move faces; y grows north as in the corridor grid.
MOVE_HEADINGS = {"@EAST": 0.0, "@NORTH": math.pi / 2, "@WEST": math.pi, "@SOUTH": -math.pi / 2}
WAIT = "@WAIT"


@dataclass(frozen=True)
class DriveConfig:
    """Robot and arena geometry; defaults stay inside a TurtleBot3 Burger's limits."""

    cell_size_m: float = 0.3
    """Side of one grid cell on the floor."""
    linear_speed_m_s: float = 0.15
    """Forward speed while driving (Burger max 0.22 m/s)."""
    angular_speed_rad_s: float = 1.0
    """Turn rate while rotating on the spot (Burger max 2.84 rad/s)."""
    wait_s: float = 1.0
    """How long ``@WAIT`` holds still, so both robots stay in step."""

    def __post_init__(self):
        for name in ("cell_size_m", "linear_speed_m_s", "angular_speed_rad_s", "wait_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"DriveConfig.{name} must be positive, got {getattr(self, name)}")


@dataclass(frozen=True)
class VelocityCommand:
    """One ``geometry_msgs/Twist`` to publish for ``duration_s`` seconds."""

    linear_x: float
    angular_z: float
    duration_s: float


def _wrap(angle: float) -> float:
    """Angle in (-pi, pi]."""
    wrapped = math.atan2(math.sin(angle), math.cos(angle))
    return math.pi if math.isclose(wrapped, -math.pi) else wrapped


def move_to_commands(move: str, heading: float, config: DriveConfig = DriveConfig()) -> tuple[list[VelocityCommand], float]:
    """Commands for one high-level move from ``heading``; returns them and the new heading."""
    if move == WAIT:
        return [VelocityCommand(0.0, 0.0, config.wait_s)], heading
    if move not in MOVE_HEADINGS:
        raise ValueError(f"unknown move {move!r}; expected one of {sorted(MOVE_HEADINGS) + [WAIT]}")
    target = MOVE_HEADINGS[move]
    turn = _wrap(target - heading)
    commands = []
    if not math.isclose(turn, 0.0, abs_tol=1e-9):
        commands.append(VelocityCommand(0.0, math.copysign(config.angular_speed_rad_s, turn), abs(turn) / config.angular_speed_rad_s))
    commands.append(VelocityCommand(config.linear_speed_m_s, 0.0, config.cell_size_m / config.linear_speed_m_s))
    return commands, target


def plan_to_commands(moves: list[str], heading: float = math.pi / 2, config: DriveConfig = DriveConfig()) -> list[VelocityCommand]:
    """Commands for a robot's whole move sequence, starting at ``heading`` (default facing north)."""
    commands: list[VelocityCommand] = []
    for move in moves:
        step_commands, heading = move_to_commands(move, heading, config)
        commands.extend(step_commands)
    return commands


def integrate(commands: list[VelocityCommand], x: float = 0.0, y: float = 0.0, heading: float = math.pi / 2) -> tuple[float, float, float]:
    """Dead-reckon a unicycle through ``commands`` (exact for the piecewise-constant twists used here)."""
    for command in commands:
        v, w, t = command.linear_x, command.angular_z, command.duration_s
        if abs(w) < 1e-12:
            x, y = x + v * t * math.cos(heading), y + v * t * math.sin(heading)
        else:
            new_heading = heading + w * t
            x += v / w * (math.sin(new_heading) - math.sin(heading))
            y -= v / w * (math.cos(new_heading) - math.cos(heading))
            heading = new_heading
    return x, y, _wrap(heading)
