"""Traffic environment speed: simulated seconds per second, raw engine vs engine + lane reads vs full env.

Three modes run 360-step episodes of the real flow (reset included) under the fixed-time
controller:

* ``raw``: load + set signals + the engine's own step, nothing read;
* ``reads``: the engine step plus the per-lane reads the environment needs (192 lanes);
* ``env``: the full ParallelEnv step: reads, all 16 observations, rewards and infos.

The modes run side by side: each of ``--episodes`` rounds runs one episode of every mode back to
back in the same process (after one untimed warm-up round), so other jobs on the machine slow
all three alike. The overhead of a round is its env (or reads) time over its raw time, on
process CPU time; the median over rounds is reported with its range, and on wall time as well.
Goal of the issue: ``env`` within 25 % of ``raw``.
"""

from __future__ import annotations

import argparse

MODES = ("raw", "reads", "env")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=("sumo", "cityflow", "all"), default="all",
                        help="engine(s) to measure (all: every installed one)")
    parser.add_argument("--episodes", type=int, default=5, help="rounds of one episode per mode (the median is reported)")
    parser.add_argument("--seconds", type=int, default=360, help="steps per episode")


def _episode(env, policy, mode: str, seed: int, seconds: int) -> None:
    if mode == "env":
        env.reset(seed=seed)
        while env.agents:
            env.step(policy(env))
        return
    env.engine.load(env.flow, seed)
    for t in range(seconds):
        env.engine.set_signals([(t // 30) % 4] * 16)
        env.engine.advance() if mode == "raw" else env.engine.step()


def _measure(engine: str, episodes: int, seconds: int) -> dict:
    """Runs in a fresh process (one engine per process, as libsumo requires): CPU and wall seconds
    of every episode, per mode, in rounds."""
    import time

    from marlinkit.envs.traffic.controllers import FixedTime
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv

    env = TrafficSignalEnv(TrafficEnvConfig(engine=engine, episode_seconds=seconds, yellow_s=0, min_green_s=0))
    policy = FixedTime(30)
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    try:
        for round_ in range(episodes + 1):
            for mode in MODES:
                c0, w0 = time.process_time(), time.perf_counter()
                _episode(env, policy, mode, round_, seconds)
                if round_:  # round 0 warms up imports and caches
                    cpu[mode].append(time.process_time() - c0)
                    wall[mode].append(time.perf_counter() - w0)
        version = env.engine.version
    finally:
        env.close()
    return {"cpu": cpu, "wall": wall, "version": version}


def run(args: argparse.Namespace) -> dict:
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    import numpy as np

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
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            timings = pool.submit(_measure, engine, args.episodes, args.seconds).result()
        result[f"{engine}_version"] = timings["version"]
        for clock in ("cpu", "wall"):
            seconds = {mode: np.array(timings[clock][mode]) for mode in MODES}
            for mode in MODES:
                result[f"{engine}_{mode}_sim_s_per_{clock}_s"] = args.seconds / float(np.median(seconds[mode]))
            for mode in ("reads", "env"):
                overhead = 100 * (seconds[mode] / seconds["raw"] - 1)  # per round: same load for both
                result[f"{engine}_{mode}_overhead_{clock}_pct"] = float(np.median(overhead))
                result[f"{engine}_{mode}_overhead_{clock}_pct_range"] = [float(overhead.min()), float(overhead.max())]
        result[f"{engine}_within_25pct"] = result[f"{engine}_env_overhead_cpu_pct"] <= 25.0
    return result
