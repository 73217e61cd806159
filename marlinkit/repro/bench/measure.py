"""The measurements ``bench maddpg`` makes that need no experiment: a MADDPG update's time on random batches of the
traffic network's shape, its matrix products counted from the weight shapes, and the GEMM peaks they read against."""

from __future__ import annotations

import math
import time

N_AGENTS = 16
N_PHASES = 4
#: Used when the traffic environment cannot be built here (no libsumo or no Hangzhou data): its
#: default observation, 12 lanes x 4 features x (now + 3 history steps) + phase one-hot (4) +
#: elapsed time + yellow flag (see marlinkit.envs.traffic.env).
FALLBACK_OBS_DIM = 198
#: ``obs_dim_source`` when the size came from the traffic environment itself (the paper's update).
ENV_SOURCE = "TrafficSignalEnv()"


def traffic_obs_dim() -> tuple[int, str]:
    """The traffic environment's observation size (default configuration) and where it came from."""
    try:
        from marlinkit.envs.traffic import TrafficSignalEnv

        env = TrafficSignalEnv()
    except (ImportError, FileNotFoundError) as error:
        return FALLBACK_OBS_DIM, f"fallback constant ({type(error).__name__}: {error})"[:200]
    return math.prod(env.observation_space(env.possible_agents[0]).shape), ENV_SOURCE


def time_updates(learner, batches, noises, mode: str) -> tuple[float, float]:
    """Updates per wall second, and CPU seconds per update (robust to other load on the machine)."""
    learner.update(batches[0], noises[0], mode)  # warm-up: first-call allocations are not throughput
    wall, cpu = time.perf_counter(), time.process_time()
    for batch, noise in zip(batches, noises):
        learner.update(batch, noise, mode)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return len(batches) / wall, cpu / len(batches)


def update_gflop(learner, batch_size: int) -> float:
    """GFLOP (2 per multiply-add) of the matrix products of one MADDPG update, counted from the weight shapes.

    Per network, a forward pass over the batch costs ``B * sum(agents * fan_in * fan_out)``. An
    update runs: the target actors and target critics forward (the TD target); the critics
    forward, their weight gradients (as many products again) and the input gradients of all but
    the first layer (the critics' inputs need none); the actors forward, their weight and inner
    input gradients; the updated critics forward again on the policy's actions and back to the
    own action through all but the first layer (the own action's share of the first is negligible).
    Bias adds, activations, Gumbel noise and Adam are left out: this is the part no batching removes.
    """
    def forward(net) -> tuple[int, int]:  # multiply-adds per row: all layers, and all but the first
        layers = [w.shape[0] * w.shape[1] * w.shape[2] for w in net.weights]
        return sum(layers), sum(layers[1:])
    (critic, critic_inner), (actor, actor_inner) = forward(learner.critic), forward(learner.actor)
    per_row = (critic + 2 * critic + critic_inner + critic + critic_inner  # target, train (fwd + grads), actor loss
               + actor + 2 * actor + actor_inner)  # target actor, actor (fwd + grads)
    return 2 * per_row * batch_size / 1e9


def shared_update_gflop(learner, batch_size: int) -> float:
    """GFLOP (2 per multiply-add) of the matrix products of one parameter-shared MADDPG update, counted from the
    weight shapes; the rows are ``batch_size`` x agents (every agent's row goes through the one network).

    Per row the update runs the target actor and target critic forward; the critic forward, its weight gradients
    and its inner input gradients; the actor forward; the critic forward again on the policy's actions and back
    to its input through every layer (autograd computes the first layer's whole input gradient); the actor's
    weight and inner input gradients.
    """
    def forward(net) -> tuple[int, int]:  # multiply-adds per row: all layers, and all but the first
        layers = [m.in_features * m.out_features for m in net if hasattr(m, "in_features")]
        return sum(layers), sum(layers[1:])
    (critic, critic_inner), (actor, actor_inner) = forward(learner.critic), forward(learner.actor)
    per_row = (critic + critic + critic + critic_inner + critic + critic  # target, train (fwd + grads), actor loss
               + actor + actor + actor + actor_inner)  # target actor, actor (fwd + grads)
    return 2 * per_row * batch_size * learner.n / 1e9


def gemm_gflops(size: int, repeats: int) -> dict[str, float]:
    """Single-thread float32 GFLOP per CPU second of a square ``size`` product in NumPy's OpenBLAS and in torch, here
    (CPU time, as the updates are timed: robust to other load on the machine)."""
    import numpy as np
    import torch

    a, b = np.random.default_rng(0).random((2, size, size), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    out = {}
    for name, product in (("openblas", lambda: a @ b), ("torch", lambda: ta @ tb)):
        product()
        started = time.process_time()
        for _ in range(repeats):
            product()
        out[name] = 2 * size ** 3 * repeats / (time.process_time() - started) / 1e9
    return out


def gemm_peaks(size: int = 1024, repeats: int = 10) -> dict[str, float]:
    """GEMM peaks measured now: the pinned OpenBLAS and torch routes in this process, and the best of both unpinned
    in a child process (``MARLINKIT_NUMERICS=native``: the library's fastest kernels for this processor)."""
    import json
    import os
    import subprocess
    import sys

    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        pinned = gemm_gflops(size, repeats)
    finally:
        torch.set_num_threads(threads)
    code = ("import json, torch; torch.set_num_threads(1); from marlinkit.repro.bench.measure import gemm_gflops; "
            f"print(json.dumps(gemm_gflops({size}, {repeats})))")
    from marlinkit.repro.numerics import PINNED_ENVIRONMENT

    env = {k: v for k, v in os.environ.items() if k not in PINNED_ENVIRONMENT}
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300,
                           env={**env, "MARLINKIT_NUMERICS": "native", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    native = json.loads(child.stdout.strip().splitlines()[-1])
    return {"gemm_size": size, "gemm_openblas_pinned_gflop_per_cpu_s": pinned["openblas"],
            "gemm_torch_pinned_gflop_per_cpu_s": pinned["torch"],
            "gemm_best_native_gflop_per_cpu_s": max(native.values())}


def random_buffer(capacity: int, obs_dim: int, rng):
    """A replay buffer of ``capacity`` random transitions of the traffic network's shape (the timed batches)."""
    import numpy as np

    from marlinkit.algos.replay_buffer import ReplayBuffer

    buffer = ReplayBuffer(capacity, N_AGENTS, obs_dim)
    for _ in range(capacity):
        buffer.add(rng.random((N_AGENTS, obs_dim)), rng.integers(N_PHASES, size=N_AGENTS),
                   rng.normal(size=N_AGENTS), rng.random((N_AGENTS, obs_dim)), np.zeros(N_AGENTS))
    return buffer
