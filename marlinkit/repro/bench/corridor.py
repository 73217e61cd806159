"""Corridor speed: agent-steps per second of the batched core (B = 1, 64, 1024) and the ParallelEnv.

Actions are drawn before timing; the clock (``perf_counter``) covers only stepping and the
resets at episode ends. Single-threaded NumPy, one process. Target: 1e6 agent-steps/s at B = 1024.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

TARGET_B1024 = 1e6
BATCH_SIZES = (1, 64, 1024)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layout", default="maze_like", help="corridor layout to step (default: maze_like)")
    parser.add_argument("--steps", type=int, default=2000, help="timed steps per measurement (default: 2000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random actions")


def _time_batched(arrays, actions) -> float:
    from marlinkit.envs.corridor import core

    steps, batch_size, n_agents = actions.shape
    state = core.reset(arrays, batch_size)
    start = time.perf_counter()
    for t in range(steps):
        result = core.step(arrays, state, actions[t])
        state = core.reset(arrays, batch_size) if result.done[0] else result.state
    return steps * batch_size * n_agents / (time.perf_counter() - start)


def _time_parallel_env(env, actions) -> float:
    agents = env.possible_agents
    joint = [dict(zip(agents, map(int, row))) for row in actions]  # plain ints, built untimed
    env.reset(seed=0)
    start = time.perf_counter()
    for step_actions in joint:
        truncations = env.step(step_actions)[3]
        if truncations[agents[0]]:
            env.reset()
    return len(joint) * len(agents) / (time.perf_counter() - start)


def command(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from marlinkit.envs.corridor import core
    from marlinkit.envs.corridor.env import CorridorParallelEnv
    from marlinkit.envs.corridor.layouts import get_layout

    if args.steps < 1:
        raise ValueError(f"--steps must be positive, got {args.steps}")
    layout = get_layout(args.layout)
    arrays = core.layout_arrays(layout)
    rng = np.random.default_rng(args.seed)
    result: dict[str, Any] = {"layout": layout.name, "steps": args.steps}
    for batch_size in BATCH_SIZES:
        actions = rng.integers(0, core.N_ACTIONS, size=(args.steps, batch_size, core.N_AGENTS))
        _time_batched(arrays, actions[: min(50, args.steps)])  # warm-up: first-call costs are not throughput
        result[f"batched_b{batch_size}_agent_steps_per_s"] = _time_batched(arrays, actions)
    env_actions = rng.integers(0, core.N_ACTIONS, size=(args.steps, core.N_AGENTS))
    result["parallel_env_agent_steps_per_s"] = _time_parallel_env(CorridorParallelEnv(layout), env_actions)
    result["target_b1024_agent_steps_per_s"] = TARGET_B1024
    result["meets_target"] = result["batched_b1024_agent_steps_per_s"] >= TARGET_B1024
    return result
