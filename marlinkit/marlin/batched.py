"""MARLIN grids on the batched multi-run trainer: many MARL/MARLIN trainings in one stacked computation.

``train_systems`` trains a list of (scenario, system, seed) runs of one ``TrainingConfig`` together with
``marlinkit.algos.mappo.train_runs``; each run keeps its own Algorithm 1 switch (per run and per copy),
its own records and checkpoint evaluations, built by the same ``systems.system_run`` as a training
alone. A run's numbers do not depend on which runs share its batch (tested), so a grid may be cut
into batches in any way, e.g. one batch per worker process.
"""

from __future__ import annotations

import time
import pandas as pd

from marlinkit.marlin import systems
from marlinkit.algos import mappo
from marlinkit.envs.corridor.plans import PlanSource
from marlinkit.marlin.systems import TrainingConfig


def train_systems(jobs: list[tuple[str, str, int]], config: TrainingConfig, source: PlanSource | None = None,
                  stop_after: int | None = None) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """Train every (scenario, system, seed) of ``jobs`` (MARL or MARLIN) in one batch; tables per job, in order.
    ``stop_after``: only the schedule's first episodes (``systems.episodes_to_train``)."""
    if any(system not in ("MARL", "MARLIN") for _, system, _ in jobs):
        raise ValueError(f"the batched trainer trains MARL and MARLIN runs only, got {sorted({j[1] for j in jobs})}")
    runs = [systems.system_run(scenario, system, seed, config, source) for scenario, system, seed in jobs]
    specs = [mappo.RunSpec(run.layout_at, seed, run.generator, run.on_episode_end)
             for run, (_, _, seed) in zip(runs, jobs)]
    mappo.train_runs(config.mappo, specs, n_envs=config.n_envs,
                     episodes=systems.episodes_to_train(config.episodes, stop_after))
    return [run.tables() for run in runs]


def timed(jobs: list[tuple[str, str, int]], config: TrainingConfig, source: PlanSource | None = None,
          batched: bool = True) -> tuple[float, float]:
    """Wall and CPU seconds to train ``jobs`` in one batch, or one after the other (``batched=False``)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    if batched:
        train_systems(jobs, config, source)
    else:
        for scenario, system, seed in jobs:
            systems.train_system(scenario, system, seed, config, source)
    return time.perf_counter() - started, time.process_time() - cpu_started
