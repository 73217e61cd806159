"""Baseline signal controllers and the function that runs one controlled episode.

* :class:`FixedTime`: cycles the 4 phases, ``green_s`` seconds each (the measured reference run's
  configuration is 30 s with no yellow).
* :class:`MaxPressure`: every second, requests the phase whose served lanes have the largest
  pressure (vehicles waiting to be served minus vehicles per lane on the roads they feed; Varaiya
  2013, as in LibSignal's MaxPressure). The environment's minimum green applies.

``run_episode`` runs one episode of a controller in *this* process; libsumo allows one
simulation per process, so runs that must not share one (a sweep in a notebook, two controllers
side by side) go through :func:`run_in_subprocess`.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing

import numpy as np

from marlinkit.envs.traffic.context import TrafficContext, context_for_difficulty

CONTROLLERS = ("fixed-time", "max-pressure")


class FixedTime:
    """Phase ``(t // green_s) % 4`` at second t."""

    def __init__(self, green_s: int = 30):
        if green_s < 1:
            raise ValueError(f"green_s must be >= 1, got {green_s}")
        self.green_s = green_s

    def __call__(self, env) -> dict:
        phase = (env.time // self.green_s) % 4
        return {agent: phase for agent in env.possible_agents}


class MaxPressure:
    """The phase with the largest pressure at each intersection (ties: lowest phase index)."""

    def __call__(self, env) -> dict:
        best = np.argmax(env.phase_pressures(), axis=1)
        return dict(zip(env.possible_agents, best.tolist()))


def make_controller(name: str, green_s: int = 30):
    if name not in CONTROLLERS:
        raise ValueError(f"unknown controller {name!r}; choose one of {CONTROLLERS}")
    return FixedTime(green_s) if name == "fixed-time" else MaxPressure()


def play_episode(env, policy, seed: int, options: dict | None = None) -> float:
    """One episode of ``policy(env) -> actions`` on an open ``env``: its return, the sum over seconds of the agents'
    mean reward (as MADDPG's returns are summed)."""
    total = 0.0
    env.reset(seed=seed, options=options)
    while env.agents:
        _, rewards, *_ = env.step(policy(env))
        total += float(np.mean(list(rewards.values())))
    return total


def controller_episode(env, controller: str, seed: int, options: dict | None = None, green_s: int = 30
                       ) -> tuple[float, dict]:
    """One episode of a baseline ``controller`` on an open ``env``: its return (:func:`play_episode`) and the
    episode's metrics."""
    total = play_episode(env, make_controller(controller, green_s), seed, options)
    return total, dict(env.last_metrics)


def run_episode(controller: str = "fixed-time", seconds: int = 360, engine: str = "sumo", flow: str = "real",
                context: dict | None = None, difficulty: float | None = None, yellow_s: int = 0, min_green_s: int = 0,
                green_s: int = 30,
                seed: int = 0, data_dir: str | None = None) -> dict:
    """Metrics of one episode of a baseline controller, plus its settings and wall time.

    ``context`` (a :class:`TrafficContext` as a dict), or ``difficulty`` (mapped by
    :func:`context_for_difficulty` with this seed and length), replaces the data-set ``flow``. The defaults
    are the measured reference run's configuration (documentation: Sources and measured facts): no yellow, no
    minimum green, 30 s fixed-time phases.
    """
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv

    policy = make_controller(controller, green_s)
    ctx = TrafficContext.from_dict(context) if context is not None else None
    if difficulty is not None:
        ctx = context_for_difficulty(difficulty, seed=seed, duration_s=seconds)
    env = TrafficSignalEnv(TrafficEnvConfig(engine=engine, data_dir=data_dir, flow=flow, context=ctx,
                                            episode_seconds=seconds, yellow_s=yellow_s, min_green_s=min_green_s,
                                            seed=seed))
    try:
        start = time.perf_counter()
        env.reset(seed=seed)
        while env.agents:
            env.step(policy(env))
        wall = time.perf_counter() - start
        return {**env.last_metrics, "controller": controller, "engine": engine, "engine_version": env.engine.version,
                "flow": "context" if ctx else flow, "context": ctx.describe() if ctx else None, "yellow_s": yellow_s,
                "min_green_s": min_green_s, "difficulty": difficulty,
                "green_s": green_s if controller == "fixed-time" else None, "seed": seed,
                "wall_s": wall}
    finally:
        env.close()


def run_in_subprocess(jobs: list[dict], workers: int = 1) -> list[dict]:
    """Run :func:`run_episode` for each keyword dict in spawned worker processes (results in order).

    Each worker holds at most one simulation at a time: run_episode closes its own."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(_run_job, jobs))


def _run_job(kwargs: dict) -> dict:
    return run_episode(**kwargs)


def difficulty_jobs(difficulties, controller: str = "fixed-time", seconds: int = 360, seed: int = 0,
                    engine: str = "sumo") -> list[dict]:
    """Jobs of a difficulty sweep: one episode per difficulty, each with that difficulty's context."""
    return [dict(controller=controller, seconds=seconds, engine=engine, seed=seed, difficulty=float(d))
            for d in difficulties]
