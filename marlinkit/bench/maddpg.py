"""MADDPG speed: updates per second for 16 agents, stacked-weight batched update vs per-agent loop.

Both paths run the same update on the same weights, batch and noise (``mode="batched"``: one
batched matmul per layer for all agents and one backward; ``mode="loop"``: each agent's slice of
the weights forward and backward in a Python loop; Adam and gradient clipping are shared). Batches
are random transitions of the traffic environment's shape, sampled before the clock starts.

The episode wall-time split (simulation / training / LLM) and the projection of the ``paper``
ablation need the MAESTRO runner; they will be added to this bench with it.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

N_AGENTS = 16
N_PHASES = 4
#: Used when the traffic environment cannot be built here (no libsumo or no Hangzhou data): its
#: default observation, 12 lanes x 4 features x (now + 3 history steps) + phase one-hot (4) +
#: elapsed time + yellow flag (see marlinkit.envs.traffic.env).
FALLBACK_OBS_DIM = 198


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--updates", type=int, default=10, help="timed updates per path (default: 10)")
    parser.add_argument("--batch-size", type=int, default=None, help="transitions per update (default: MADDPGConfig)")
    parser.add_argument("--obs-dim", type=int, default=None, help="observation size (default: the traffic env's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the random batches")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")


def traffic_obs_dim() -> tuple[int, str]:
    """The traffic environment's observation size (default configuration) and where it came from."""
    try:
        from marlinkit.envs.traffic import TrafficSignalEnv

        env = TrafficSignalEnv()
    except (ImportError, FileNotFoundError) as error:
        return FALLBACK_OBS_DIM, f"fallback constant ({type(error).__name__}: {error})"[:200]
    return math.prod(env.observation_space(env.possible_agents[0]).shape), "TrafficSignalEnv()"


def _time_updates(learner, batches, noises, mode: str) -> tuple[float, float]:
    """Updates per wall second, and CPU seconds per update (robust to other load on the machine)."""
    learner.update(batches[0], noises[0], mode)  # warm-up: first-call allocations are not throughput
    wall, cpu = time.perf_counter(), time.process_time()
    for batch, noise in zip(batches, noises):
        learner.update(batch, noise, mode)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return len(batches) / wall, cpu / len(batches)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch

    from marlinkit.algos.maddpg import MADDPG, MADDPGConfig, ReplayBuffer

    if args.updates < 1:
        raise ValueError(f"--updates must be positive, got {args.updates}")
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"--threads must be positive, got {args.threads}")
        torch.set_num_threads(args.threads)
    obs_dim, obs_source = (args.obs_dim, "--obs-dim") if args.obs_dim else traffic_obs_dim()
    config = MADDPGConfig(seed=args.seed)
    batch_size = args.batch_size or config.batch_size
    if batch_size < 1 or obs_dim < 1:
        raise ValueError("--batch-size and --obs-dim must be positive")
    rng = np.random.default_rng(args.seed)
    buffer = ReplayBuffer(2 * batch_size, N_AGENTS, obs_dim)
    for _ in range(buffer.capacity):
        buffer.add(rng.random((N_AGENTS, obs_dim)), rng.integers(N_PHASES, size=N_AGENTS),
                   rng.normal(size=N_AGENTS), rng.random((N_AGENTS, obs_dim)), np.zeros(N_AGENTS))
    result: dict[str, Any] = {"n_agents": N_AGENTS, "obs_dim": obs_dim, "obs_dim_source": obs_source,
                              "n_actions": N_PHASES, "batch_size": batch_size, "updates": args.updates,
                              "torch_threads": torch.get_num_threads()}
    for mode in ("batched", "loop"):
        learner = MADDPG(N_AGENTS, obs_dim, N_PHASES, config)
        batches = [buffer.sample(batch_size, rng) for _ in range(args.updates)]
        noises = [learner.noise(batch_size) for _ in range(args.updates)]
        result[f"{mode}_updates_per_s"], result[f"{mode}_cpu_s_per_update"] = _time_updates(
            learner, batches, noises, mode)
    result["speedup"] = result["batched_updates_per_s"] / result["loop_updates_per_s"]
    return result
