"""From the negotiated high-level moves to wheel commands of a differential-drive robot.

MARLIN's LLMs plan with ``@NORTH``/``@SOUTH``/``@EAST``/``@WEST``/``@WAIT``; on the TurtleBot3
robots of the paper's Fig. 4-5 a lower layer turns these into linear and angular velocities
(Section III-B). This module is that layer, free of ROS: each move becomes "turn on the spot to
the move's heading, then drive one cell", as ``cmd_vel``-style commands with durations that a
ROS 2 node publishes in order. ``integrate`` dead-reckons commands so tests (and users) can check
that a plan ends on the intended cell centres.

The second half simulates what the robots add to the grid world: ``ActuationNoise`` (a move fails
or slips sideways) on top of the corridor rules, for the simulated stand-in of the paper's
hardware experiment (Fig. 5). It is a noise model, not a physics simulation of TurtleBots.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout
from marlinkit.envs.corridor.plans import PlanSource

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


def move_to_commands(move: str, heading: float,
                     config: DriveConfig = DriveConfig()) -> tuple[list[VelocityCommand], float]:
    """Commands for one high-level move from ``heading``; returns them and the new heading."""
    if move == WAIT:
        return [VelocityCommand(0.0, 0.0, config.wait_s)], heading
    if move not in MOVE_HEADINGS:
        raise ValueError(f"unknown move {move!r}; expected one of {sorted(MOVE_HEADINGS) + [WAIT]}")
    target = MOVE_HEADINGS[move]
    turn = _wrap(target - heading)
    commands = []
    if not math.isclose(turn, 0.0, abs_tol=1e-9):
        commands.append(VelocityCommand(0.0, math.copysign(config.angular_speed_rad_s, turn),
                                        abs(turn) / config.angular_speed_rad_s))
    commands.append(VelocityCommand(config.linear_speed_m_s, 0.0, config.cell_size_m / config.linear_speed_m_s))
    return commands, target


def plan_to_commands(moves: list[str], heading: float = math.pi / 2,
                     config: DriveConfig = DriveConfig()) -> list[VelocityCommand]:
    """Commands for a robot's whole move sequence, starting at ``heading`` (default facing north)."""
    commands: list[VelocityCommand] = []
    for move in moves:
        step_commands, heading = move_to_commands(move, heading, config)
        commands.extend(step_commands)
    return commands


def integrate(commands: list[VelocityCommand], x: float = 0.0, y: float = 0.0,
              heading: float = math.pi / 2) -> tuple[float, float, float]:
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


# ---------------------------------------------------------------------------------------------
# Simulated actuation noise (Fig. 5 in simulation, not on robots)

#: The two directions a move can slip to: 90 degrees either side (FORWARD/BACKWARD <-> LEFT/RIGHT); WAIT never slips.
SLIP_TARGETS = np.array([[0, 0], [3, 4], [3, 4], [1, 2], [1, 2]], dtype=np.int64)


@dataclass(frozen=True)
class ActuationNoise:
    """What can go wrong when a robot executes a move; applied on top of the corridor rules."""

    p_fail: float = 0.05
    """Chance that a move is not executed at all (the robot stays, as if it waited)."""
    p_slip: float = 0.05
    """Chance that a move ends in a neighbouring direction (90 degrees left or right, equally likely)."""

    def __post_init__(self):
        if not (0 <= self.p_fail <= 1 and 0 <= self.p_slip <= 1 and self.p_fail + self.p_slip <= 1):
            raise ValueError(f"ActuationNoise needs probabilities with p_fail + p_slip <= 1, got {self}")

    def apply(self, actions: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        """Executed actions for intended ``actions`` int[...]; ``uniforms`` [..., 2] drive fail/slip and slip side."""
        actions = np.asarray(actions, dtype=np.int64)
        u, side = uniforms[..., 0], uniforms[..., 1]
        slipped = SLIP_TARGETS[actions, (side >= 0.5).astype(np.int64)]
        executed = np.where(u < self.p_fail + self.p_slip, slipped, actions)
        return np.where(u < self.p_fail, 0, executed)

    def actuator(self, seed: int | tuple, runs: int) -> Callable[[int, np.ndarray], np.ndarray]:
        """``actuate(t, actions[runs, 2])`` for ``mappo.evaluate``; run ``r`` draws from stream ``(*seed, r, 1)``.

        Policies evaluated with the same seed meet the same failures and slips (paired runs).
        """
        uniforms = noise_uniforms(seed, runs)
        return lambda t, actions: self.apply(actions, uniforms[t])


def noise_uniforms(seed: int | tuple, runs: int) -> np.ndarray:
    """Uniforms [50, runs, 2 robots, 2] for ``ActuationNoise.apply``; one stream per run."""
    seed = tuple(np.atleast_1d(seed).tolist())
    return np.stack([np.random.default_rng((*seed, r, 1)).random((core.EPISODE_STEPS, core.N_AGENTS, 2))
                     for r in range(runs)], axis=1)


def play_plans_under_noise(layout: Layout, source: PlanSource, noise: ActuationNoise, seed: int | tuple,
                           plan_seed: int) -> tuple[float, float, int]:
    """One LLM-only episode on noisy robots: execute the plan, re-plan from where the robots are after a deviation.

    This is how the negotiation runs on robots (agree moves, execute, report positions); replaying a
    plan blindly after a slip would penalise the LLM for noise the policy gets to react to. Returns
    performance, team return and the number of plans made.
    """
    arrays = core.layout_arrays(layout)
    uniforms = noise_uniforms(seed, 1)[:, 0]
    state = core.reset(arrays, 1)
    plan, offset, plans, total, expected = None, 0, 0, 0.0, state.pos
    for t in range(core.EPISODE_STEPS):
        if plan is None or not np.array_equal(state.pos, expected):
            plan = source.make_plan(layout, state.pos[0].copy(), core.EPISODE_STEPS - t, seed=plan_seed + plans)
            offset, plans = t, plans + 1
        intended = plan.actions[t - offset] if t - offset < len(plan.actions) else np.zeros(core.N_AGENTS, np.int64)
        expected = core.step(arrays, state, intended[None]).state.pos
        result = core.step(arrays, state, noise.apply(intended, uniforms[t])[None])
        state, total = result.state, total + float(result.reward.sum())
    return float(core.performance(arrays, state)[0]), total, plans
