"""MARLIN as its authors' code runs it, and the two ways to read its curve.

The runs: MARLIN under the authors' switch (``switch_rule="authors"``, ``algorithm1.AuthorsSwitch``) on one
environment copy per training, MARL on six (``protocol="authors"``, ``systems.AUTHORS_COPIES``), both to
``episodes`` (1700: after episode 1625 the authors' switch lets the policy act alone), several seeds per corridor
so that each episode pools several rows, for each plan source (``surrogate_llama``, a surrogate calibrated to the
Llama plans' LLM-only mean and perfect-plan share, not an LLM; and the exact planner). The runs are saved under the
preset's MARLIN results in ``grid.AUTHORS_PROTOCOL_DIR``.

The two metrics:

* ``executed``: the performance of each executed training episode, plans included (what the authors' logs record
  and their Fig. 3 draws: per episode the median over the pooled rows of all runs and copies);
* ``policy``: our evaluation of the policy alone at the checkpoints (``eval_runs`` sampled runs each).

``queue`` trains the runs one at a time, in an order that keeps finished results balanced over corridors and seeds
(``job_order``), and resumes from the saved ones; ``python -m marlinkit.marlin.authors_protocol --preset paper``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from marlinkit import runs
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES
from marlinkit.marlin import grid
from marlinkit.marlin.algorithm1 import PLAN, AuthorsSwitchConfig
from marlinkit.marlin.grid import GridConfig

#: The executed-metric window around a checkpoint ``e``: the mean over episodes ``e - 24 .. e + 25``.
WINDOW_BEFORE, WINDOW_AFTER = 24, 25
#: The level of "episodes to 0.95".
LEVEL = 0.95


@dataclass(frozen=True)
class Config:
    """The ``marlin_authors`` section: MARLIN and MARL as the authors' code runs them."""

    scenarios: tuple[str, ...] = tuple(LAYOUT_NAMES)
    """Corridor layouts."""
    marlin_seeds: tuple[int, ...] = tuple(range(10))
    """MARLIN training seeds per corridor and plan source (one copy each: the authors pooled 2-12 rows per episode)."""
    marl_seeds: tuple[int, ...] = (0, 1, 2)
    """MARL training seeds per corridor (six copies each: 18 rows per episode, the authors pooled 15-18)."""
    plan_sources: tuple[str, ...] = ("surrogate_llama", "exact")
    """MARLIN's plan sources (``grid.PLAN_SOURCES``), in the order the queue trains them."""
    episodes: int = 1700
    """Training episodes per copy: the paper's 1600 and the authors' policy-only tail after episode 1625."""
    checkpoints: tuple[int, ...] = (100, 850, 1600, 1700)
    """Episodes after which the policy alone is evaluated (the paper's three and the end of the tail)."""
    eval_runs: int = 50
    """Sampled evaluation runs per checkpoint."""
    llm_only_trials: int = 50
    """Plans the plan source alone plays per corridor and seed (seeds: the MARL seeds)."""
    mappo: dict[str, Any] = dataclasses.field(default_factory=dict)
    """``MAPPOConfig`` overrides (empty: the authors' RLlib settings)."""

    def __post_init__(self):
        for name in ("scenarios", "marlin_seeds", "marl_seeds", "plan_sources", "checkpoints"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "mappo", dict(self.mappo or {}))
        bad = sorted(set(self.plan_sources) - {"surrogate_llama", "exact", "surrogate"})
        if bad:
            raise ValueError(f"plan_sources must be non-LLM sources ('surrogate_llama', 'exact', 'surrogate'), got {bad}")
        if not self.marlin_seeds or not self.marl_seeds:
            raise ValueError("marlin_seeds and marl_seeds must not be empty")
        self.grid("MARLIN", self.marlin_seeds[0], self.plan_sources[0])  # the grid's own checks, before compute

    def grid(self, system: str, seed: int, plan_source: str, scenarios: tuple[str, ...] | None = None) -> GridConfig:
        """The grid of ``system`` (MARL, MARLIN or LLM-only) and ``seed`` over ``scenarios`` (default: all) under the
        authors' protocol: its trainings stacked in one batch (``grid.TRAINERS``)."""
        scenarios = scenarios or self.scenarios
        return GridConfig(scenarios=scenarios, seeds=(seed,), systems=(system,), episodes=self.episodes,
                          checkpoints=self.checkpoints, eval_runs=self.eval_runs, llm_only_trials=self.llm_only_trials,
                          mappo=self.mappo, switch_rule="authors", protocol="authors", plan_source=plan_source,
                          trainer="batched", batch_runs=len(scenarios), workers=1, plan_budget=None)


def job_order(config: Config) -> list[tuple[str, str, int]]:
    """(plan source, system, seed) units (each: every corridor, one batch) in training order. Per plan source: the
    source alone (seconds), then MARLIN seed by seed; MARL's seeds (shared by the plan sources) with the first
    source, the k-th after MARLIN's 2k-th, so that a queue cut short holds both systems in every corridor."""
    order = []
    for i, source in enumerate(config.plan_sources):
        order += [(source, "LLM-only", seed) for seed in config.marl_seeds]
        marl = list(config.marl_seeds) if i == 0 else []
        for k, seed in enumerate(config.marlin_seeds):
            order.append((source, "MARLIN", seed))
            if marl and k % 2 == 0:
                order.append((source, "MARL", marl.pop(0)))
        order += [(source, "MARL", seed) for seed in marl]
    return order


def _run(config: Config, preset: str, source: str, system: str, seed: int, scenario: str):
    """One run's name, cache key and store."""
    grid_config, plan_source, _ = grid.with_plan_source(config.grid(system, seed, source, (scenario,)))
    source_name = (plan_source or grid.ExactJointPlanner()).name
    name = runs.run_name(scenario, grid.system_tag(system, source_name, "authors"), f"seed{seed}")
    store = runs.ResultStore(grid.results_root(grid_config, preset))
    return name, grid.job_config(scenario, system, seed, grid_config, source_name), store


def is_finished(config: Config, preset: str, source: str, system: str, seed: int, scenario: str) -> bool:
    name, job, store = _run(config, preset, source, system, seed, scenario)
    return store.is_complete(name, job) and (system == "LLM-only" or store.is_complete(name + "__eval", job))


def queue(preset: str, limit_s: float | None = None, log=print, **overrides: Any) -> int:
    """Train the missing units of ``job_order`` one after another (each unit's corridors stacked in one batch, its
    runs saved when it ends); return how many units were trained. ``limit_s``: start no new unit after this many
    seconds. Finished runs are skipped, so a stopped queue resumes where it stopped (losing the unit in progress)."""
    from marlinkit import presets

    config = presets.get(preset, "marlin_authors", **overrides)
    started, trained = time.perf_counter(), 0
    order = job_order(config)
    for index, (source, system, seed) in enumerate(order, 1):
        if all(is_finished(config, preset, source, system, seed, sc) for sc in config.scenarios):
            continue
        if limit_s is not None and time.perf_counter() - started > limit_s:
            log(f"{time.strftime('%H:%M:%S')} time limit reached before unit {index}/{len(order)}")
            break
        unit_started, cpu_started = time.perf_counter(), time.process_time()
        log(f"{time.strftime('%H:%M:%S')} unit {index}/{len(order)}: {source} {system} seed {seed} ({len(config.scenarios)} corridors)")
        grid_config, plan_source, _ = grid.with_plan_source(config.grid(system, seed, source))
        grid.run_grid(grid_config, preset, source=plan_source, progress=False)
        trained += 1
        log(f"{time.strftime('%H:%M:%S')} unit {index}/{len(order)} done: {time.perf_counter() - unit_started:.0f} s wall, "
            f"{time.process_time() - cpu_started:.0f} CPU-s")
    return trained


class Pooled(NamedTuple):
    episodes: pd.DataFrame  # one row per executed episode and copy: plan_source, scenario, system, seed, episode, performance, ...
    evaluations: pd.DataFrame  # one row per checkpoint evaluation run of the policy alone
    runs: pd.DataFrame  # finished runs per plan source, scenario and system


def load(preset: str, config: Config | None = None) -> Pooled:
    """Every finished run of the section (runs not yet trained are left out, and counted in ``runs``)."""
    from marlinkit import presets

    config = config or presets.get(preset, "marlin_authors")
    episodes, evaluations, counts = [], [], []
    for source, system, seed in job_order(config):
        for scenario in config.scenarios:
            finished = is_finished(config, preset, source, system, seed, scenario)
            sources = [source] if system != "MARL" else list(config.plan_sources)  # MARL: one set, beside every source
            counts += [{"plan_source": shown, "scenario": scenario, "system": system, "seed": seed, "finished": finished}
                       for shown in sources]
            if not finished:
                continue
            name, _, store = _run(config, preset, source, system, seed, scenario)
            for shown in sources:
                episodes.append(store.load(name).assign(plan_source=shown))
                if system != "LLM-only":
                    evaluations.append(store.load(name + "__eval").assign(plan_source=shown))
    counts = pd.DataFrame(counts)
    table = counts.groupby(["plan_source", "scenario", "system"], sort=False).finished.agg(["sum", "count"]).reset_index()
    table = table.rename(columns={"sum": "finished", "count": "planned"})
    return Pooled(pd.concat(episodes, ignore_index=True) if episodes else pd.DataFrame(),
                  pd.concat(evaluations, ignore_index=True) if evaluations else pd.DataFrame(), table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="train the authors'-protocol MARLIN and MARL runs (resumes; one run at a time)")
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--limit-hours", type=float, default=None, help="start no new run after this many hours")
    args = parser.parse_args(argv)
    trained = queue(args.preset, None if args.limit_hours is None else args.limit_hours * 3600,
                    log=lambda line: print(line, flush=True))
    print(f"{time.strftime('%H:%M:%S')} queue done: {trained} runs trained", flush=True)


if __name__ == "__main__":
    main()
