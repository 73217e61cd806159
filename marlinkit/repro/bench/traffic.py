"""Traffic environment speed: simulated seconds per second, raw engine vs engine + lane reads vs full env.

Three modes run 360-step episodes of the real flow (reset included) under the fixed-time
controller:

* ``raw``: load + set signals + the engine's own step, nothing read;
* ``reads``: the engine step plus the per-lane reads the environment needs (192 lanes);
* ``env``: the full ParallelEnv step: reads, all 16 observations, rewards and infos.

On CityFlow the reads are marlinkit's compiled ones (``marlinkit_cityflow_reads``, which ``make cityflow``
builds) where built, and the Python reads through CityFlow's API run beside them as their peer, in
the same rounds: ``reads_python`` and ``env_python`` (same bytes, tested).

The modes run side by side: each of ``--episodes`` rounds runs one episode of every mode back to
back in the same process (after one untimed warm-up round), so other jobs on the machine slow
all three alike. The overhead of a round is its env (or reads) time over its raw time, on
process CPU time; the median over rounds is reported with its range, and on wall time as well.
The goal: ``env`` within 25 % of ``raw``.
"""

from __future__ import annotations

import argparse

MODES = ("raw", "reads", "env")
#: The peer modes on CityFlow: the same reads through CityFlow's Python API.
PYTHON_READS = ("reads_python", "env_python")


def modes(engine: str) -> tuple[str, ...]:
    """The modes measured on ``engine``: on CityFlow with compiled reads, their Python peers too."""
    if engine != "cityflow":
        return MODES
    from marlinkit.envs.traffic.cityflow_engine import compiled_reads

    return MODES + PYTHON_READS if compiled_reads() is not None else MODES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=("sumo", "cityflow", "all"), default="all",
                        help="engine(s) to measure (all: every installed one)")
    parser.add_argument("--episodes", type=int, default=5,
                        help="rounds of one episode per mode (the median is reported)")
    parser.add_argument("--seconds", type=int, default=360, help="steps per episode")


def _episode(env, policy, mode: str, seed: int, seconds: int) -> None:
    if mode in PYTHON_READS:
        default, env.engine.reads = env.engine.reads, "python"
        try:
            return _episode(env, policy, mode.removesuffix("_python"), seed, seconds)
        finally:
            env.engine.reads = default
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
    measured = modes(engine)
    cpu: dict[str, list[float]] = {mode: [] for mode in measured}
    wall: dict[str, list[float]] = {mode: [] for mode in measured}
    try:
        for round_ in range(episodes + 1):
            for mode in measured:
                c0, w0 = time.process_time(), time.perf_counter()
                _episode(env, policy, mode, round_, seconds)
                if round_:  # round 0 warms up imports and caches
                    cpu[mode].append(time.process_time() - c0)
                    wall[mode].append(time.perf_counter() - w0)
        version, reads = env.engine.version, getattr(env.engine, "reads", None)
    finally:
        env.close()
    return {"cpu": cpu, "wall": wall, "version": version, "reads": reads}


def command(args: argparse.Namespace) -> dict:
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
        if timings["reads"]:
            result[f"{engine}_reads"] = timings["reads"]
        for clock in ("cpu", "wall"):
            seconds = {mode: np.array(times) for mode, times in timings[clock].items()}
            for mode in seconds:
                result[f"{engine}_{mode}_sim_s_per_{clock}_s"] = args.seconds / float(np.median(seconds[mode]))
            for mode in (m for m in seconds if m != "raw"):
                overhead = 100 * (seconds[mode] / seconds["raw"] - 1)  # per round: same load for both
                result[f"{engine}_{mode}_overhead_{clock}_pct"] = float(np.median(overhead))
                result[f"{engine}_{mode}_overhead_{clock}_pct_range"] = [float(overhead.min()), float(overhead.max())]
            if "env_python" in seconds:  # the compiled reads' speed-up of the full env, per round
                speedup = seconds["env_python"] / seconds["env"]
                result[f"{engine}_env_speedup_vs_python_reads_{clock}"] = float(np.median(speedup))
                result[f"{engine}_env_speedup_vs_python_reads_{clock}_range"] = [float(speedup.min()),
                                                                                 float(speedup.max())]
        result[f"{engine}_within_25pct"] = result[f"{engine}_env_overhead_cpu_pct"] <= 25.0
    return result
