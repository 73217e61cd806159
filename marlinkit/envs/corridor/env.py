"""MARLIN corridor: two robots swap ends of a narrow corridor (PettingZoo ``ParallelEnv``).

A thin wrapper over one environment of the batched core (:mod:`marlinkit.envs.corridor.core`),
so both step identically for the same actions.

=====================  =============================================================
Agents                 ``robot_0`` (starts at (1, 0)), ``robot_1`` (starts at (1, 7))
Layouts                ``single_slot``, ``symmetrical_two_slot``, ``asymmetrical_two_slot``,
                       ``two_path``, ``maze_like`` (paper Fig. 1), or any ``Layout``
                       (e.g. from :func:`layout_from_ascii`)
Action space           ``Discrete(5)``: 0 WAIT, 1 FORWARD (y+1), 2 BACKWARD (y-1),
                       3 LEFT (x-1), 4 RIGHT (x+1); the LLM says @WAIT/@NORTH/@SOUTH/@WEST/@EAST
Observation space      ``Box(int64, shape=(4,))``: ``[x, y, goal_x, goal_y]``, 0 <= x < width,
                       0 <= y < height
Reward                 ``2 * p_i - 0.5 * blocked_i`` per step, ``p_i = max(0, 1 - d_i / D_i)``
                       (Manhattan distance to the goal now / at the start)
Termination            never; every episode is truncated after 50 steps
Infos                  ``blocked`` (the move was refused and penalised), ``progress`` (p_i);
                       on the last step also ``performance`` (mean p_i over both robots)
Render modes           ``ansi`` (the ASCII map the LLM prompts use), ``rgb_array`` (matplotlib)
=====================  =============================================================

Rules: robot 0 moves first, then robot 1 against robot 0's new cell. A move into a wall, off
the grid or into the other robot's cell is blocked (the robot stays, pays 0.5); WAIT is never
penalised. So robot 1 may step into the cell robot 0 just left, but robot 0 cannot step into
robot 1's cell even if robot 1 leaves it in the same step. Robots do not stop at their goal.

Deviations from the paper's text (we follow the authors' public code):

* The paper's performance formula prints ``d/D``; ``p = 1 - d/D`` (clipped at 0) is what its
  text and the code mean, so a robot on its goal scores 1.
* The penalty for a blocked move (0.5) and the reward weight (2) are not in the paper's text.
* Observations are integer grid coordinates; the paper's robots are TurtleBots in ROS 2.

Version history: v0, first release.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout, get_layout, to_ascii

AGENTS = ("robot_0", "robot_1")


class CorridorParallelEnv(ParallelEnv):
    """One MARLIN corridor; ``layout`` is a paper layout name or a :class:`Layout`."""

    metadata = {"name": "marlin_corridor_v0", "render_modes": ["ansi", "rgb_array"], "is_parallelizable": True}

    def __init__(self, layout: str | Layout = "single_slot", render_mode: str | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} not supported; use one of "
                             f"{self.metadata['render_modes']} or None")
        self.layout = get_layout(layout)
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self._arrays = core.layout_arrays(self.layout)
        high = np.array([self.layout.width, self.layout.height] * 2, dtype=np.int64) - 1
        self._observation_space = spaces.Box(low=0, high=high, shape=(4,), dtype=np.int64)
        self._action_space = spaces.Discrete(core.N_ACTIONS)
        self._state: core.CorridorState | None = None
        self._trajectory: list[np.ndarray] = []  # positions int[2, 2] from the start, for rendering

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space  # one cached object, so seeding it sticks

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_space

    @property
    def positions(self) -> np.ndarray:
        """Both robots' cells, int64[2, 2] as (x, y)."""
        return self._state.pos[0].copy()

    def _observations(self) -> dict[str, np.ndarray]:
        obs = core.observe(self._arrays, self._state)[0]
        return {agent: obs[i] for i, agent in enumerate(self.possible_agents)}

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Both robots on their starts. The dynamics are deterministic, so ``seed`` changes nothing."""
        self.agents = list(self.possible_agents)
        self._state = core.reset(self._arrays, 1)
        self._trajectory = [self.positions]
        p = core.progress(self._arrays, self._state.pos)[0]
        infos = {agent: {"blocked": False, "progress": float(p[i])} for i, agent in enumerate(self.agents)}
        return self._observations(), infos

    def step(self, actions: dict[str, int]):
        if not self.agents:
            raise RuntimeError("the episode is over: call reset() before step()")
        if set(actions) != set(self.agents):
            raise ValueError(f"step() needs one action for each of {self.agents}, got {sorted(actions)}")
        joint = np.array([[actions[agent] for agent in self.possible_agents]], dtype=np.int64)
        if joint.min() < 0 or joint.max() >= core.N_ACTIONS:
            raise ValueError(f"actions must be integers in 0..{core.N_ACTIONS - 1}, got {actions}")
        result = core.step(self._arrays, self._state, joint)
        self._state = result.state
        self._trajectory.append(self.positions)
        p = core.progress(self._arrays, self._state.pos)[0]
        done = bool(result.done[0])
        rewards, infos = {}, {}
        for i, agent in enumerate(self.possible_agents):
            rewards[agent] = float(result.reward[0, i])
            infos[agent] = {"blocked": bool(result.blocked[0, i]), "progress": float(p[i])}
            if done:
                infos[agent]["performance"] = float(p.mean())
        observations = self._observations()
        terminations = dict.fromkeys(self.possible_agents, False)
        truncations = dict.fromkeys(self.possible_agents, done)
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None or self._state is None:
            return None
        if self.render_mode == "ansi":
            return to_ascii(self.layout, self.positions)
        from marlinkit.envs.corridor.render import rgb_array

        return rgb_array(self.layout, np.stack(self._trajectory))

    def close(self) -> None:
        self._trajectory = []
