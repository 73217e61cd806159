"""The corridor dynamics as pure, batched NumPy functions over an explicit state.

Everything steps ``B`` environments at once; the PettingZoo env and the MAPPO trainer are
thin users of these functions. Rules (the authors' public code):

* Actions: 0 WAIT, 1 FORWARD (y+1), 2 BACKWARD (y-1), 3 LEFT (x-1), 4 RIGHT (x+1).
* Robots move in order, robot 0 first. A move into a wall, off the grid or into the other
  robot's (already updated) cell is blocked: the robot stays and pays ``BLOCK_PENALTY``.
* Progress ``p_i = max(0, 1 - d_i / D_i)`` (Manhattan distance now vs. at the start). The
  paper's formula prints ``d/D``; ``1 - d/D`` is what its text and the authors' code mean.
* Reward per step ``REWARD_WEIGHT * p_i - penalty_i``; robots do not stop at their goal and an
  episode always lasts ``EPISODE_STEPS`` steps. Episode performance = mean of ``p_i`` at the end.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from marlinkit.envs.corridor.layouts import Layout

EPISODE_STEPS = 50
BLOCK_PENALTY = 0.5
REWARD_WEIGHT = 2.0
N_AGENTS = 2
N_ACTIONS = 5
ACTION_NAMES = ("WAIT", "FORWARD", "BACKWARD", "LEFT", "RIGHT")
#: The words the LLM negotiation uses for the same moves.
LLM_ACTION_NAMES = ("@WAIT", "@NORTH", "@SOUTH", "@WEST", "@EAST")
ACTION_DELTAS = np.array([[0, 0], [0, 1], [0, -1], [-1, 0], [1, 0]], dtype=np.int64)


class CorridorState(NamedTuple):
    """State of ``B`` environments."""

    pos: np.ndarray  # int64[B, 2 agents, 2 (x, y)]
    t: np.ndarray  # int64[B], steps taken this episode


class StepResult(NamedTuple):
    state: CorridorState
    reward: np.ndarray  # float64[B, 2]
    blocked: np.ndarray  # bool[B, 2], the move was blocked (penalised)
    done: np.ndarray  # bool[B], the episode reached EPISODE_STEPS


class LayoutArrays(NamedTuple):
    """A layout's arrays in the shapes the batched functions use."""

    valid: np.ndarray  # bool[W, H]
    starts: np.ndarray  # int64[2, 2]
    goals: np.ndarray  # int64[2, 2]
    start_distance: np.ndarray  # float64[2], D_i
    free_padded: np.ndarray  # bool[W + 2, H + 2], ``valid`` inside a ring of walls: one lookup, no bounds checks


def layout_arrays(layout: Layout) -> LayoutArrays:
    starts = np.asarray(layout.starts, dtype=np.int64)
    goals = np.asarray(layout.goals, dtype=np.int64)
    padded = np.zeros((layout.width + 2, layout.height + 2), dtype=bool)
    padded[1:-1, 1:-1] = layout.valid
    distance = np.abs(starts - goals).sum(-1).astype(np.float64)
    return LayoutArrays(layout.valid.copy(), starts, goals, distance, padded)


def reset(arrays: LayoutArrays, batch_size: int) -> CorridorState:
    """``batch_size`` environments with both robots on their start cells."""
    pos = np.broadcast_to(arrays.starts, (batch_size, N_AGENTS, 2)).copy()
    return CorridorState(pos, np.zeros(batch_size, dtype=np.int64))


def observe(arrays: LayoutArrays, state: CorridorState) -> np.ndarray:
    """Per-robot observation ``[x, y, goal_x, goal_y]``: int64[B, 2, 4]."""
    goals = np.broadcast_to(arrays.goals, state.pos.shape)
    return np.concatenate([state.pos, goals], axis=-1)


def progress(arrays: LayoutArrays, pos: np.ndarray) -> np.ndarray:
    """``p_i = max(0, 1 - d_i / D_i)`` for positions int[..., 2, 2]: float64[..., 2]."""
    distance = np.abs(pos - arrays.goals).sum(-1)
    return np.maximum(0.0, 1.0 - distance / arrays.start_distance)


def performance(arrays: LayoutArrays, state: CorridorState) -> np.ndarray:
    """Episode performance (the paper's Algorithm 1, line 20): mean progress, float64[B]."""
    return progress(arrays, state.pos).mean(-1)


def step(arrays: LayoutArrays, state: CorridorState, actions: np.ndarray) -> StepResult:
    """Advance ``B`` environments one step with joint actions int[B, 2]."""
    actions = np.asarray(actions, dtype=np.int64)
    pos = state.pos.copy()
    blocked = np.empty(actions.shape, dtype=bool)
    for agent in range(N_AGENTS):  # the order is part of the rules: robot 0 moves first
        target = pos[:, agent] + ACTION_DELTAS[actions[:, agent]]
        other = pos[:, 1 - agent]  # robot 1 sees robot 0's new cell, robot 0 sees robot 1's old one
        # Moves are at most one cell, so the wall ring of free_padded covers every off-grid target.
        free = arrays.free_padded[target[:, 0] + 1, target[:, 1] + 1]
        ok = free & ((target[:, 0] != other[:, 0]) | (target[:, 1] != other[:, 1]))
        blocked[:, agent] = ~ok & (actions[:, agent] != 0)
        pos[:, agent] = np.where(ok[:, None], target, pos[:, agent])
    reward = REWARD_WEIGHT * progress(arrays, pos) - BLOCK_PENALTY * blocked
    t = state.t + 1
    return StepResult(CorridorState(pos, t), reward, blocked, t >= EPISODE_STEPS)


def rollout(arrays: LayoutArrays, joint_actions: np.ndarray) -> tuple[CorridorState, np.ndarray]:
    """Play a joint plan int[T, 2] from the start in one environment; return the end state and rewards[T, 2]."""
    state = reset(arrays, 1)
    rewards = []
    for actions in np.asarray(joint_actions, dtype=np.int64).reshape(-1, N_AGENTS):
        result = step(arrays, state, actions[None])
        state = result.state
        rewards.append(result.reward[0])
    return state, np.asarray(rewards).reshape(-1, N_AGENTS)
