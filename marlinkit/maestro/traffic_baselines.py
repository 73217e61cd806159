"""The traffic-baselines experiment behind ``notebooks/maestro/traffic_baselines.ipynb``.

Runs fixed-time and max-pressure on the real flow and the fixed-time difficulty sweep on every
engine of the preset (SUMO and CityFlow side by side), caches both tables under
``data/results/maestro/<preset>/`` (resumed when the configuration is unchanged), and draws the
difficulty figure with one line per engine. Every preset but ``smoke`` requires all its engines
(``make figures`` builds CityFlow), so the committed outputs never depend on what happens to be
installed; ``smoke`` (``make test`` on a machine without CityFlow) runs the installed ones and its
footer names the missing ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from marlinkit import executors, paths
from marlinkit.config_fields import key_fields, label, required_preset
from marlinkit.plots import Provenance
from marlinkit.result import Result
from marlinkit.envs.traffic.cli import REFERENCE
from marlinkit.envs.traffic.controllers import difficulty_jobs, run_episode
from marlinkit.envs.traffic.engines import available_engines
from marlinkit.runs import ResultStore

ENGINE_LABEL = {"sumo": "SUMO {v} via libsumo", "cityflow": "{v}"}
ENGINE_COLOR = {"sumo": "#1f77b4", "cityflow": "#d62728"}
#: The preset that may run without an engine of its list (make test on a machine without CityFlow).
ENGINES_OPTIONAL_PRESET = "smoke"


@dataclass(frozen=True)
class Config:
    """The ``traffic_baselines`` section: fixed-time and max-pressure on the real Hangzhou flow, and their
    difficulty sweep on synthetic contexts, on each engine."""

    engines: tuple[str, ...] = ("sumo", "cityflow")
    """Traffic engines compared side by side (``marlinkit.envs.traffic.engines``)."""
    episode_lengths: tuple[int, ...] = (360, 3600)
    """Seconds of the real flow per baseline episode (360: MAESTRO's episode; 3600: the whole hour)."""
    difficulties: tuple[float, ...] = (0.3, 0.65, 1.0)
    """Curriculum difficulties of the synthetic contexts swept."""
    difficulty_seeds: tuple[int, ...] = (0,)
    """Context seeds per difficulty."""
    difficulty_seconds: int = 360
    """Seconds per difficulty-sweep episode."""
    max_pressure_min_green_s: int = 10
    """Max-pressure's minimum green."""
    workers: int = 2
    """Episodes at once (local processes)."""
    preset: str | None = label()
    """The preset whose MAESTRO results folder holds the runs (a label: not part of any run's key)."""

    def __post_init__(self):
        for name in ("engines", "episode_lengths", "difficulties", "difficulty_seeds"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        unknown = sorted(set(self.engines) - set(available_engines()))
        if unknown or not self.engines:
            raise ValueError(f"engines must be a non-empty subset of {sorted(available_engines())}, got "
                             f"{list(self.engines)}")
        if not self.episode_lengths or min(self.episode_lengths) < 1 or self.difficulty_seconds < 1:
            raise ValueError("episode_lengths and difficulty_seconds must be >= 1 s, got "
                             f"{list(self.episode_lengths)}, {self.difficulty_seconds}")
        if not all(0.0 <= d <= 1.0 for d in self.difficulties):
            raise ValueError(f"difficulties must lie in [0, 1], got {list(self.difficulties)}")
        executors.check_executor("local", self.workers)


def episode(job: dict) -> dict:
    """One baseline episode (:func:`~marlinkit.envs.traffic.controllers.run_episode` of the job's keywords).

    ``run_episode`` closes its own simulation, so one process can run many of them one after
    another: ``workers`` 1 runs them all here, more run in that many spawned processes
    (:func:`marlinkit.executors.run_jobs`).
    """
    return run_episode(**job)


def baseline_jobs(config: Config, engines: list[str]) -> list[dict]:
    """Both controllers x engines x episode lengths on the real flow (fixed-time 30 s cycling of the 4 phases, no
    yellow)."""
    return [dict(controller=controller, seconds=seconds, engine=engine,
                 min_green_s=config.max_pressure_min_green_s if controller == "max-pressure" else 0)
            for engine in engines for seconds in config.episode_lengths
            for controller in ("fixed-time", "max-pressure")]


def run(cfg: Config) -> Result:
    """The baselines of ``config``, computed or loaded from ``preset``'s MAESTRO results
    (``data/results/maestro/<preset>/``). Tables ``baselines`` (one row per engine, controller and episode length
    on the real flow) and ``difficulty`` (fixed-time per engine, difficulty and seed); the provenance names the
    engines run and those not installed."""
    config, preset = cfg, required_preset(cfg)
    engines = [e for e in config.engines if available_engines()[e]]
    skipped = [e for e in config.engines if e not in engines]
    if skipped and preset != ENGINES_OPTIONAL_PRESET:
        raise ValueError(f"preset {preset!r} compares the engines {list(config.engines)} but {skipped} is not "
                         "installed here: run `make cityflow` (see the README, 'Adding CityFlow')")
    store = ResultStore(paths.results_dir("maestro", preset))
    # the sweep once ran on SUMO only: its engines are in the key
    run_config = {**key_fields(config), "engines": engines, "difficulty_engines": engines}
    tables = {}
    for name, make_jobs in (("traffic_baselines", lambda: baseline_jobs(config, engines)),
                            ("traffic_difficulty",
                             lambda: [job for engine in engines for seed in config.difficulty_seeds
                                      for job in difficulty_jobs(list(config.difficulties), engine=engine,
                                                                 seconds=config.difficulty_seconds, seed=seed)])):
        def compute() -> pd.DataFrame:  # called at once, in this iteration
            return pd.DataFrame(executors.run_jobs(episode, [(job,) for job in make_jobs()], "local", config.workers,
                                                   progress=False))

        tables[name] = store.cached(name, run_config, compute, preset=preset, engines=engines)
    versions = dict(zip(tables["traffic_baselines"]["engine"], tables["traffic_baselines"]["engine_version"]))
    engine_text = ", ".join(ENGINE_LABEL[e].format(v=versions.get(e, "").replace("SUMO ", "")) for e in engines)
    missing = f" | not installed: {', '.join(skipped)}" if skipped else ""
    provenance = Provenance(preset, engine=engine_text + missing, source="no LLM (fixed controllers)",
                            details={"engines": "the paper used CityFlow; numbers never carry across engines"})
    written = [path for name in tables for path in (store.table_path(name), store.sidecar_path(name))]
    return Result("traffic_baselines", preset, config,
                  {"baselines": tables["traffic_baselines"], "difficulty": tables["traffic_difficulty"]},
                  tuple(written), provenance)


def baseline_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The notebook's table: metrics per engine/controller/length, with the measured fixed-time reference where it
    applies."""
    table = rows[["engine", "controller", "seconds", "throughput", "vehicles", "avg_travel_time_s", "avg_delay_s",
                  "avg_wait_s", "avg_queue", "wall_s"]].copy()
    ref = [REFERENCE[e]["avg_travel_time_s"] if (c == "fixed-time" and s == 3600) else None
           for e, c, s in zip(rows["engine"], rows["controller"], rows["seconds"])]
    table["reference_travel_time_s"] = ref
    table["travel_time_vs_reference_pct"] = [100 * (t / r - 1) if r else None
                                             for t, r in zip(table["avg_travel_time_s"], ref)]
    table["reference_throughput"] = [REFERENCE[e]["throughput"] if r else None for e, r in zip(rows["engine"], ref)]
    return table.round(2)


def plot_difficulty(rows: pd.DataFrame):
    """Queue, total delay and delay per vehicle against difficulty (fixed-time; mean and SD over seeds),
    one line per engine."""
    import matplotlib.pyplot as plt

    panels = (("avg_queue", "mean queue (halted veh, 192 lanes)"), ("total_delay_h", "total delay (veh-h)"),
              ("avg_delay_s", "delay per vehicle (s)"))
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    for engine, engine_rows in rows.groupby("engine", sort=False):
        stats = engine_rows.groupby("difficulty")[[key for key, _ in panels]].agg(["mean", "std"]).fillna(0.0)
        label = ENGINE_LABEL[engine].format(v=engine_rows["engine_version"].iloc[0].replace("SUMO ", ""))
        for ax, (key, _) in zip(axes, panels):
            mean, sd = stats[(key, "mean")], stats[(key, "std")]
            ax.plot(stats.index, mean, marker="o", color=ENGINE_COLOR[engine], label=label)
            ax.fill_between(stats.index, mean - sd, mean + sd, alpha=0.2, color=ENGINE_COLOR[engine])
    for ax, (_, ylabel) in zip(axes, panels):
        ax.set_xlabel("difficulty d")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    n_seeds = rows["seed"].nunique()
    fig.suptitle(f"Fixed-time (30 s phases) under the difficulty -> context map, {int(rows['seconds'].iloc[0])} s "
                 f"episodes, {n_seeds} seed(s) per engine", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def monotonicity(rows: pd.DataFrame) -> dict[str, dict[str, bool]]:
    """Per engine: whether each metric's mean over seeds never falls as d rises (the paper's pilot check)."""
    out = {}
    for engine, engine_rows in rows.groupby("engine", sort=False):
        means = engine_rows.groupby("difficulty")[["avg_queue", "total_delay_h", "avg_delay_s"]].mean()
        out[engine] = {key: bool(means[key].is_monotonic_increasing) for key in means}
    return out
