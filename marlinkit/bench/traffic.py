"""Traffic environment speed: simulated seconds per second, raw engine vs engine + lane reads vs full env.

Each mode runs ``--episodes`` 360-step episodes of the real flow (reset included) under the
fixed-time controller, one engine per process as libsumo requires:

* ``raw``: load + set signals + the engine's own step, nothing read;
* ``reads``: the engine step plus the per-lane reads the environment needs (192 lanes);
* ``env``: the full ParallelEnv step: reads, all 16 observations, rewards and infos.

The overhead is measured on process CPU time (robust to other jobs sharing the machine) and
reported on wall time as well. Goal of the issue: ``env`` within 25 % of ``raw``.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=("sumo", "cityflow", "all"), default="all",
                        help="engine(s) to measure (all: every installed one)")
    parser.add_argument("--episodes", type=int, default=3, help="episodes per mode (the median is reported)")
    parser.add_argument("--seconds", type=int, default=360, help="steps per episode")


def _measure(engine: str, mode: str, episodes: int, seconds: int) -> dict:
    """Runs in a fresh process: times ``episodes`` episodes of one mode."""
    import time

    import numpy as np

    from marlinkit.envs.traffic.controllers import FixedTime
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv

    env = TrafficSignalEnv(TrafficEnvConfig(engine=engine, episode_seconds=seconds, yellow_s=0, min_green_s=0))
    policy = FixedTime(30)
    cpu, wall = [], []
    try:
        for episode in range(episodes):
            c0, w0 = time.process_time(), time.perf_counter()
            if mode == "env":
                env.reset(seed=episode)
                while env.agents:
                    env.step(policy(env))
            else:
                env.engine.load(env.flow, episode)
                for t in range(seconds):
                    env.engine.set_signals([(t // 30) % 4] * 16)
                    env.engine.advance() if mode == "raw" else env.engine.step()
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        version = env.engine.version
    finally:
        env.close()
    return {"cpu_s": float(np.median(cpu)), "wall_s": float(np.median(wall)), "version": version}


def run(args: argparse.Namespace) -> dict:
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    from marlinkit.envs.traffic.engines import available_engines

    if args.episodes < 1 or args.seconds < 1:
        raise ValueError("--episodes and --seconds must be >= 1")
    found = available_engines()
    engines = [e for e, ok in found.items() if ok] if args.engine == "all" else [args.engine]
    if not engines or not all(found[e] for e in engines):
        raise ValueError(f"engine(s) not installed: {[e for e in engines if not found[e]] or 'none'}")
    result: dict = {"episode_seconds": args.seconds, "episodes": args.episodes, "engines": engines}
    spawn = multiprocessing.get_context("spawn")
    for engine in engines:
        timings = {}
        for mode in ("raw", "reads", "env"):
            with ProcessPoolExecutor(1, mp_context=spawn) as pool:
                timings[mode] = pool.submit(_measure, engine, mode, args.episodes, args.seconds).result()
        for mode, t in timings.items():
            result[f"{engine}_{mode}_sim_s_per_cpu_s"] = args.seconds / t["cpu_s"]
            result[f"{engine}_{mode}_sim_s_per_wall_s"] = args.seconds / t["wall_s"]
        raw, env = timings["raw"], timings["env"]
        result[f"{engine}_version"] = raw["version"]
        result[f"{engine}_reads_overhead_cpu_pct"] = 100 * (timings["reads"]["cpu_s"] / raw["cpu_s"] - 1)
        result[f"{engine}_env_overhead_cpu_pct"] = 100 * (env["cpu_s"] / raw["cpu_s"] - 1)
        result[f"{engine}_env_overhead_wall_pct"] = 100 * (env["wall_s"] / raw["wall_s"] - 1)
        result[f"{engine}_within_25pct"] = result[f"{engine}_env_overhead_cpu_pct"] <= 25.0
    return result
