"""Exact joint planner: the shortest joint plan for both robots, by breadth-first search.

NOT an LLM. It searches the joint state space (both robots' cells) with the corridor core's own
``step``, so move order, blocking and penalties are exactly the environment's. Among the
shortest plans it picks one with the fewest blocked moves. Behind MARLIN's plan-source seam it
is the upper bound of what any negotiation can deliver, and what the tests use.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout
from marlinkit.envs.corridor.plans import Plan

NAME = "exact-joint-planner"
JOINT_ACTIONS = np.array(list(product(range(core.N_ACTIONS), repeat=core.N_AGENTS)), dtype=np.int64)  # [25, 2]


def _code(pos: np.ndarray, height: int) -> np.ndarray:
    """Integer id of joint positions int[..., 2, 2] (any layout up to ``height`` rows)."""
    cells = pos[..., 0] * height + pos[..., 1]
    return cells[..., 0] * 10_000 + cells[..., 1]


class ExactJointPlanner:
    """``PlanSource`` returning a shortest joint plan (or, if the goals are out of reach, the best reachable end)."""

    name = NAME

    def make_plan(self, layout: Layout, positions: np.ndarray, steps_left: int = core.EPISODE_STEPS,
                  seed: int | None = None) -> Plan:
        arrays = core.layout_arrays(layout)
        start = np.asarray(positions, dtype=np.int64).reshape(core.N_AGENTS, 2)
        goal_code = int(_code(arrays.goals, layout.height))
        # parent[code] = (parent code, joint action, blocked moves so far); BFS layers are finalised
        # before the next one, so the fewest-blocks choice within a layer is exact.
        parent: dict[int, tuple[int, tuple[int, int], int]] = {int(_code(start, layout.height)): (-1, (0, 0), 0)}
        frontier = start[None]
        best_code, best_perf = int(_code(start, layout.height)), float(core.progress(arrays, start).mean())
        for _ in range(steps_left):
            if best_perf == 1.0 or len(frontier) == 0:
                break
            n = len(frontier)
            pos = np.repeat(frontier, len(JOINT_ACTIONS), axis=0)
            actions = np.tile(JOINT_ACTIONS, (n, 1))
            result = core.step(arrays, core.CorridorState(pos, np.zeros(len(pos), np.int64)), actions)
            src = np.repeat(_code(frontier, layout.height), len(JOINT_ACTIONS))
            dst = _code(result.state.pos, layout.height)
            blocks = result.blocked.sum(-1)
            new: dict[int, int] = {}
            for i in np.lexsort((blocks + np.array([parent[int(s)][2] for s in src]), dst)):
                d = int(dst[i])
                if d in parent:
                    continue  # reached earlier, or already with fewer blocks in this layer
                parent[d] = (int(src[i]), tuple(int(a) for a in actions[i]), parent[int(src[i])][2] + int(blocks[i]))
                new[d] = i
            frontier = result.state.pos[list(new.values())] if new else frontier[:0]
            if new:
                perf = core.progress(arrays, frontier).mean(-1)
                if goal_code in new:
                    best_code, best_perf = goal_code, 1.0
                elif perf.max() > best_perf:
                    best_code, best_perf = list(new)[int(perf.argmax())], float(perf.max())
        steps = []
        code = best_code
        while parent[code][0] != -1:
            code, action, _ = parent[code]
            steps.append(action)
        plan = np.array(steps[::-1], dtype=np.int64).reshape(-1, core.N_AGENTS)
        return Plan(plan, best_perf, NAME, stats={"plan_steps": len(plan), "states_expanded": len(parent)})
