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
(``job_order``), and resumes from the saved ones; ``python -m marlinkit authors-queue --preset paper``
(the ``authors_protocol`` section of that preset).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from marlinkit import runs
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES
from marlinkit.marlin import grid
from marlinkit.marlin.algorithm1 import PLAN, AuthorsSwitchConfig
from marlinkit.algos.mappo import MAPPOConfig
from marlinkit.marlin.grid import GridConfig
from marlinkit.config_fields import label, required_preset, typed
from marlinkit.plots import Provenance

#: The executed-metric window around a checkpoint ``e``: the mean over episodes ``e - 24 .. e + 25``.
WINDOW_BEFORE, WINDOW_AFTER = 24, 25
#: The level of "episodes to 0.95".
LEVEL = 0.95
#: The experiment's section name.
EXPERIMENT = "authors_protocol"


@dataclass(frozen=True)
class Config:
    """The ``authors_protocol`` section: MARLIN and MARL as the authors' code runs them."""

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
    mappo: MAPPOConfig = dataclasses.field(default_factory=MAPPOConfig)
    """MAPPO's settings (the default: the authors' RLlib settings; a mapping given here holds those that differ)."""
    training: GridConfig | None = None
    """Fig. 3's grid (the preset's ``fig3_training`` section; ``presets.get`` fills it in), whose finished MARL runs
    stand beside these as the paper's protocol (None: none are shown)."""
    preset: str | None = label()
    """The preset whose MARLIN results folder holds the runs (a label: not part of any run's key)."""
    train_s: float | None = label(0.0)
    """Seconds :func:`run` may train the missing runs before it pools the finished ones (a label; 0: train nothing,
    None: train them all)."""
    progress: bool = label(True)
    """Print a line per unit trained (a label)."""

    def __post_init__(self):
        for name in ("scenarios", "marlin_seeds", "marl_seeds", "plan_sources", "checkpoints"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "mappo", typed(MAPPOConfig, self.mappo, "mappo"))
        object.__setattr__(self, "training", typed(GridConfig, self.training, "training"))
        bad = sorted(set(self.plan_sources) - {"surrogate_llama", "exact", "surrogate"})
        if bad:
            raise ValueError("plan_sources must be non-LLM sources ('surrogate_llama', 'exact', "
                             f"'surrogate'), got {bad}")
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
    source, the k-th after MARLIN's (2k+1)-th (a MARL unit costs about five MARLIN ones), so that a queue cut short
    holds both systems in every corridor."""
    order = []
    for i, source in enumerate(config.plan_sources):
        order += [(source, "LLM-only", seed) for seed in config.marl_seeds]
        marl = list(config.marl_seeds) if i == 0 else []
        for k, seed in enumerate(config.marlin_seeds):
            order.append((source, "MARLIN", seed))
            if marl and k % 2 == 1:
                order.append((source, "MARL", marl.pop(0)))
        order += [(source, "MARL", seed) for seed in marl]
    return order


def _run(config: Config, preset: str, source: str, system: str, seed: int, scenario: str):
    """One run's name, cache key, store and plan source."""
    grid_config, plan_source, _ = grid.with_plan_source(config.grid(system, seed, source, (scenario,)))
    source_name = (plan_source or grid.ExactJointPlanner()).name
    name = runs.run_name(scenario, grid.system_tag(system, source_name, "authors"), f"seed{seed}")
    store = runs.ResultStore(grid.results_root(grid_config, preset))
    return name, grid.job_config(scenario, system, seed, grid_config, source_name), store, plan_source


def is_finished(config: Config, preset: str, source: str, system: str, seed: int, scenario: str) -> bool:
    name, job, store, plan_source = _run(config, preset, source, system, seed, scenario)
    return grid.is_finished(store, name, job, plan_source)


def queue(config: Config, preset: str, limit_s: float | None = None, log=print) -> int:
    """Train the missing units of ``job_order`` one after another (each unit's corridors stacked in one batch, its
    runs saved under ``preset``'s MARLIN results when it ends); return how many units were trained. ``limit_s``: start
    no new unit after this many seconds. Finished runs are skipped, so a stopped queue resumes where it stopped
    (losing the unit in progress)."""
    started, trained = time.perf_counter(), 0
    order = job_order(config)
    for index, (source, system, seed) in enumerate(order, 1):
        if all(is_finished(config, preset, source, system, seed, sc) for sc in config.scenarios):
            continue
        if limit_s is not None and time.perf_counter() - started > limit_s:
            log(f"{time.strftime('%H:%M:%S')} time limit reached before unit {index}/{len(order)}")
            break
        unit_started, cpu_started = time.perf_counter(), time.process_time()
        log(f"{time.strftime('%H:%M:%S')} unit {index}/{len(order)}: {source} {system} seed {seed} "
            f"({len(config.scenarios)} corridors)")
        grid_config, plan_source, _ = grid.with_plan_source(config.grid(system, seed, source))
        grid.run_grid(grid_config, preset, source=plan_source, progress=False)
        trained += 1
        log(f"{time.strftime('%H:%M:%S')} unit {index}/{len(order)} done: {time.perf_counter() - unit_started:.0f} s "
            f"wall, {time.process_time() - cpu_started:.0f} CPU-s")
    return trained


@dataclass(frozen=True)
class Pooled(grid.GridResult):
    """The ``authors_protocol`` :class:`~marlinkit.result.Result`: tables ``episodes`` (one row per executed episode
    and copy: plan_source, scenario, system, seed, episode, performance, ...), ``evaluations`` (one row per checkpoint
    evaluation run of the policy alone) and ``runs`` (finished and planned runs per plan source, scenario and
    system)."""

    @property
    def runs(self) -> pd.DataFrame:
        return self.tables["runs"]

    def source_provenance(self, plan_source: str) -> Provenance:
        """The provenance of one plan source's figures and tables (its name and seeds on the footer line)."""
        return provenance(self.config, self.episodes, self.runs, self.preset, plan_source)


def run(cfg: Config) -> Pooled:
    """Every finished run of the section under ``cfg.preset``'s MARLIN results, after training the missing units for up
    to ``cfg.train_s`` seconds (:func:`queue`; 0: train nothing, None: train them all). Runs not yet trained are left
    out, and counted in table ``runs``; beside them the finished MARL runs of ``cfg.training`` (the ``fig3_training``
    section)."""
    config, preset = cfg, required_preset(cfg)
    if cfg.train_s != 0:
        queue(config, preset, cfg.train_s, print if cfg.progress else lambda line: None)
    episodes, evaluations, counts, written = [], [], [], []
    for source, system, seed in job_order(config):
        for scenario in config.scenarios:
            finished = is_finished(config, preset, source, system, seed, scenario)
            sources = [source] if system != "MARL" else list(config.plan_sources)  # MARL: one set, beside every source
            counts += [{"plan_source": shown, "scenario": scenario, "system": system, "seed": seed,
                        "finished": finished}
                       for shown in sources]
            if not finished:
                continue
            name, _, store, _ = _run(config, preset, source, system, seed, scenario)
            names = [name] if system == "LLM-only" else [name, name + "__eval"]
            written += [path for table in names for path in (store.table_path(table), store.sidecar_path(table))]
            for shown in sources:
                episodes.append(store.load(name).assign(plan_source=shown))
                if system != "LLM-only":
                    evaluations.append(store.load(name + "__eval").assign(plan_source=shown))
    marl_paper, marl_paper_evaluations, marl_paper_files = paper_protocol_marl(config, preset, cfg.training)
    if not marl_paper.empty:
        episodes.append(marl_paper)
        evaluations.append(marl_paper_evaluations)
        written += marl_paper_files
    counts = pd.DataFrame(counts)
    table = (counts.groupby(["plan_source", "scenario", "system"], sort=False).finished.agg(["sum", "count"])
             .reset_index())
    table = table.rename(columns={"sum": "finished", "count": "planned"})
    episodes = pd.concat(episodes, ignore_index=True) if episodes else pd.DataFrame()
    tables = {"episodes": episodes,
              "evaluations": pd.concat(evaluations, ignore_index=True) if evaluations else pd.DataFrame(),
              "runs": table}
    return Pooled(EXPERIMENT, preset, config, tables, tuple(written), provenance(config, episodes, table, preset))


def provenance(config: Config, episodes: pd.DataFrame, runs_table: pd.DataFrame, preset: str,
               plan_source: str | None = None) -> Provenance:
    """The provenance of the figures and tables: preset, engine, the plan source (``plan_source``'s, else all the
    section's) and the seeds of the finished runs on the footer line; the protocol and the finished runs in its
    details."""
    summary = ", ".join(f"{system_label(r.system, r.plan_source)} {r.finished}/{r.planned}"
                        for r in finished_runs(runs_table, config).itertuples())
    paper_marl = episodes[episodes.system == PAPER_MARL] if not episodes.empty else pd.DataFrame()
    if len(paper_marl):
        summary += f"; beside them {PAPER_MARL}: {len(paper_marl.groupby(['scenario', 'seed']))} runs of Fig. 3's grid"
    sources = [plan_source] if plan_source else list(config.plan_sources)
    source = (grid.footer_source(sources[0]) if len(sources) == 1
              else "plans: " + ", ".join(sources) + " (surrogate and exact planner), not an LLM")
    seeds = sorted(episodes.seed.unique()) if not episodes.empty else ()
    details = {"plan sources": ", ".join(config.plan_sources) + " (a surrogate and the exact planner; no LLM)",
               "protocol": f"authors' switch and copies (MARLIN 1 copy, MARL 6), {config.episodes} episodes",
               "runs finished": summary}
    if plan_source:
        details["plan source"] = grid.plan_source_label(grid.GridConfig(plan_source=plan_source), plan_source)
    return Provenance(preset, engine="corridor core (numpy)", source=source, seeds=seeds, details=details)


# The two metrics


def system_label(system: str, plan_source: str) -> str:
    """A system's name in the tables: MARL, or MARLIN with its plan source."""
    return system if system != "MARLIN" else f"MARLIN {plan_source}"


def per_run_episodes(episodes: pd.DataFrame) -> pd.DataFrame:
    """Per run and episode: the median performance over the run's copies, and the shares of its rows that started
    on a plan and of its steps that came from plans."""
    data = episodes[episodes.system != "LLM-only"].copy()
    data["plan_start"] = data.generator == PLAN
    data["plan_step_share"] = data.get("plan_steps", pd.Series(0, index=data.index)).fillna(0) / 50
    keys = ["plan_source", "scenario", "system", "seed", "episode"]
    return data.groupby(keys, sort=False).agg(performance=("performance", "median"), plan_start=("plan_start", "mean"),
                                              plan_step_share=("plan_step_share", "mean")).reset_index()


def executed_curve(episodes: pd.DataFrame) -> pd.DataFrame:
    """The paper's Fig. 3 curve: per plan source, corridor, system and episode, the median performance over the pooled
    rows of every run and copy (``rows``), with the shares of those rows that started on a plan and of their steps
    that came from plans."""
    data = episodes[episodes.system != "LLM-only"].copy()
    data["plan_start"] = data.generator == PLAN
    data["plan_step_share"] = data.get("plan_steps", pd.Series(0, index=data.index)).fillna(0) / 50
    return data.groupby(["plan_source", "scenario", "system", "episode"], sort=False).agg(
        performance=("performance", "median"), rows=("performance", "size"), plan_start=("plan_start", "mean"),
        plan_step_share=("plan_step_share", "mean")).reset_index()


def window_mean(series: pd.Series, episode: int) -> float:
    """Mean of a per-episode series (indexed by episode) over ``episode - 24 .. episode + 25``."""
    return float(series.loc[episode - WINDOW_BEFORE:episode + WINDOW_AFTER].mean())


def executed_vs_policy(pooled: Pooled, config: Config) -> pd.DataFrame:
    """The table ``scenario, episode, system, metric, mean, sd, runs`` at the paper's checkpoints (100, 850, 1600 when
    trained that far, else the section's first three):

    * ``executed``: the mean over episodes e-24..e+25 of the per-episode median over pooled rows (the paper's Fig. 3
      curve); ``sd`` over runs of each run's own window mean (its median over copies per episode);
    * ``policy``: the checkpoint evaluation of the policy alone, mean over runs of each run's mean, ``sd`` over runs;
    * ``policy_alone_after_1625`` (runs trained past the authors' last switching episode): the executed metric over
      episodes 1626..end, where the authors' switch lets MARLIN's policy act alone (MARL's beside it).
    """
    if pooled.episodes.empty:
        return pd.DataFrame(columns=["scenario", "episode", "system", "metric", "mean", "sd", "runs"])
    curve = executed_curve(pooled.episodes).set_index(["plan_source", "scenario", "system", "episode"]).performance
    runs_ = per_run_episodes(pooled.episodes)
    evaluations = pooled.evaluations.groupby(["plan_source", "scenario", "system", "seed",
                                              "checkpoint"]).performance.mean()
    last_switch = AuthorsSwitchConfig().last_switch_episode
    checkpoints = ([c for c in config.checkpoints if c < config.episodes][:3] if config.episodes > 1600
                   else list(config.checkpoints)[:3])
    rows = []
    for (source, scenario, system), series in curve.groupby(level=[0, 1, 2], sort=False):
        if system != "MARLIN" and source != config.plan_sources[0]:
            continue  # one MARL set, shown once
        series = series.droplevel([0, 1, 2])
        own = runs_[(runs_.plan_source == source) & (runs_.scenario == scenario) & (runs_.system == system)]
        per_run = own.pivot(index="episode", columns="seed", values="performance")
        label = system_label(system, source)
        for e in checkpoints:
            run_means = per_run.loc[e - WINDOW_BEFORE:e + WINDOW_AFTER].mean()
            rows.append({"scenario": scenario, "episode": e, "system": label, "metric": "executed",
                         "mean": window_mean(series, e),
                         "sd": float(run_means.std(ddof=1)) if len(run_means) > 1 else np.nan,
                         "runs": int(per_run.shape[1])})
            at = (evaluations.loc[(source, scenario, system)]
                  if (source, scenario, system) in evaluations.index.droplevel([3, 4]) else None)
            at = (at.xs(e, level="checkpoint")
                  if at is not None and e in at.index.get_level_values("checkpoint") else None)
            if at is not None:
                rows.append({"scenario": scenario, "episode": e, "system": label, "metric": "policy",
                             "mean": float(at.mean()),
                             "sd": float(at.std(ddof=1)) if len(at) > 1 else np.nan, "runs": int(len(at))})
        if series.index.max() > last_switch:
            tail = per_run.loc[last_switch + 1:].mean()
            rows.append({"scenario": scenario, "episode": config.episodes, "system": label,
                         "metric": "policy_alone_after_1625",
                         "mean": float(series.loc[last_switch + 1:].mean()),
                         "sd": float(tail.std(ddof=1)) if len(tail) > 1 else np.nan,
                         "runs": int(per_run.shape[1])})
    order = {s: i for i, s in enumerate(config.scenarios)}
    table = pd.DataFrame(rows)
    return table.sort_values(["scenario", "episode", "metric", "system"],
                             key=lambda c: c.map(order) if c.name == "scenario" else c,
                             kind="stable").reset_index(drop=True)


def episodes_to_level(pooled: Pooled, config: Config, level: float = LEVEL) -> pd.DataFrame:
    """Per corridor and system, the first episode at which each metric reaches ``level``: ``executed``, the first
    episode e whose window mean (e-24..e+25) of the pooled median reaches it; ``policy``, the first checkpoint whose
    evaluation mean reaches it. NaN: not reached in the episodes trained (or not evaluated)."""
    if pooled.episodes.empty:
        return pd.DataFrame(columns=["scenario", "system", "runs", "executed", "policy"])
    curve = executed_curve(pooled.episodes)
    evaluations = pooled.evaluations.groupby(["plan_source", "scenario", "system", "checkpoint"]).performance.mean()
    rows = []
    for (source, scenario, system), group in curve.groupby(["plan_source", "scenario", "system"], sort=False):
        if system != "MARLIN" and source != config.plan_sources[0]:
            continue
        series = group.set_index("episode").performance
        smooth = series.rolling(WINDOW_BEFORE + WINDOW_AFTER + 1, min_periods=WINDOW_BEFORE + WINDOW_AFTER + 1).mean()
        # the window's mean belongs to e, WINDOW_AFTER episodes before its end
        smooth.index = smooth.index - WINDOW_AFTER
        reached = smooth[smooth >= level]
        points = (evaluations.loc[(source, scenario, system)]
                  if (source, scenario, system) in evaluations.index.droplevel(3) else pd.Series(dtype=float))
        policy = points[points >= level]
        n_runs = pooled.episodes[(pooled.episodes.plan_source == source) & (pooled.episodes.scenario == scenario)
                                 & (pooled.episodes.system == system)].seed.nunique()
        rows.append({"scenario": scenario, "system": system_label(system, source), "runs": n_runs,
                     "executed": float(reached.index[0]) if len(reached) else np.nan,
                     "policy": float(policy.index[0]) if len(policy) else np.nan})
    order = {s: i for i, s in enumerate(config.scenarios)}
    return pd.DataFrame(rows).sort_values("scenario", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)


def claims(table: pd.DataFrame, config: Config, reach: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per corridor and plan source, the paper's two MARLIN claims on each metric, with the numbers (MARLIN vs MARL):
    "learns faster" (MARLIN above MARL at the first checkpoint; and, with ``reach`` from ``episodes_to_level``,
    MARLIN reaching 0.95 at an earlier episode) and "ends at or above MARL" (at the last of the three checkpoints).
    MARL is the authors' protocol's (6 copies) where its runs are finished, else ``PAPER_MARL`` (named in the row)."""
    rows = []
    episodes = sorted(table.episode[table.metric == "executed"].unique())
    if not episodes:
        return pd.DataFrame(columns=["scenario", "plan_source", "claim", "MARL", "executed", "policy"])
    for scenario in config.scenarios:
        here = table[table.scenario == scenario]
        reference = "MARL" if "MARL" in set(here.system) else PAPER_MARL
        for source in config.plan_sources:
            marlin = system_label("MARLIN", source)
            for claim, episode, holds in (("learns faster", episodes[0], lambda a, b: a > b),
                                          ("ends at or above MARL", episodes[-1], lambda a, b: a >= b)):
                row = {"scenario": scenario, "plan_source": source, "claim": f"{claim} (episode {episode})",
                       "MARL": reference}
                for metric in ("executed", "policy"):
                    at = here[(here.episode == episode) & (here.metric == metric)].set_index("system")["mean"]
                    if marlin in at and reference in at:
                        row[metric] = (f"{'holds' if holds(at[marlin], at[reference]) else 'does not hold'} "
                                       f"({at[marlin]:.3f} vs {at[reference]:.3f})")
                    else:
                        row[metric] = "no finished runs"
                rows.append(row)
            if reach is not None:
                row = {"scenario": scenario, "plan_source": source,
                       "claim": f"learns faster (first episode at {LEVEL})", "MARL": reference}
                at = reach[reach.scenario == scenario].set_index("system")
                for metric in ("executed", "policy"):
                    if marlin in at.index and reference in at.index:
                        a, b = at.loc[marlin, metric], at.loc[reference, metric]
                        earlier = (not np.isnan(a)) and (np.isnan(b) or a < b)
                        shown = lambda v: "not reached" if np.isnan(v) else f"{v:.0f}"  # noqa: E731
                        row[metric] = f"{'holds' if earlier else 'does not hold'} ({shown(a)} vs {shown(b)})"
                    else:
                        row[metric] = "no finished runs"
                rows.append(row)
    return pd.DataFrame(rows)


def finished_runs(runs_table: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Finished and planned runs per system (MARLIN per plan source, MARL once), over all corridors (``runs_table``:
    a :class:`Pooled` result's table ``runs``)."""
    runs_ = runs_table[(runs_table.system == "MARLIN")
                       | ((runs_table.system == "MARL") & (runs_table.plan_source == config.plan_sources[0]))]
    return runs_.groupby(["system", "plan_source"], sort=False)[["finished", "planned"]].sum().reset_index()


#: MARL of the paper-protocol grid (15 copies per training, ``fig3_training``), shown beside the authors' protocol.
PAPER_MARL = "MARL (15 copies)"


def paper_protocol_marl(config: Config, preset: str,
                       grid_config: GridConfig | None) -> tuple[pd.DataFrame, pd.DataFrame, list]:
    """The preset's finished MARL runs of Fig. 3's grid ``grid_config`` (15 copies per training, the paper's protocol
    as we read it), as system ``PAPER_MARL`` (nothing is trained; empty where none is finished or ``grid_config`` is
    None): episodes, evaluations and the files read."""
    from marlinkit import paths

    if grid_config is None:
        return pd.DataFrame(), pd.DataFrame(), []

    store = runs.ResultStore(paths.results_dir("marlin", preset))
    episodes, evaluations, read = [], [], []
    for scenario in config.scenarios:
        for seed in grid_config.seeds:
            name = runs.run_name(scenario, grid.system_tag("MARL", grid.ExactJointPlanner.name), f"seed{seed}")
            job = grid.job_config(scenario, "MARL", seed, grid_config, grid.ExactJointPlanner.name)
            if store.is_complete(name, job) and store.is_complete(name + "__eval", job):
                episodes.append(store.load(name).assign(system=PAPER_MARL, plan_source=config.plan_sources[0]))
                evaluations.append(store.load(name + "__eval").assign(system=PAPER_MARL,
                                                                      plan_source=config.plan_sources[0]))
                read += [path for table in (name, name + "__eval")
                         for path in (store.table_path(table), store.sidecar_path(table))]
    if not episodes:
        return pd.DataFrame(), pd.DataFrame(), []
    return pd.concat(episodes, ignore_index=True), pd.concat(evaluations, ignore_index=True), read


#: The file of the sensitivity check's calibrated rates, in its results folder (``sensitivity_root``).
SENSITIVITY_RATES = "surrogate_llama_rates.json"


def sensitivity_root(preset: str, rows: int) -> Path:
    """The results folder of the zero-share sensitivity check at ``rows`` (beside the section's own runs)."""
    from marlinkit import paths

    return paths.results_dir("marlin", preset) / f"{grid.AUTHORS_PROTOCOL_DIR}__zero_share_rows{rows}"


def zero_share_sensitivity(config: Config, preset: str, rows: int, log=print) -> pd.DataFrame:
    """MARLIN of ``config`` (its corridors and seeds) with ``surrogate_llama`` whose shares of 0 assume ``rows`` rows
    behind them (``surrogate_planner.llama_shares``) instead of the default, trained where missing under
    ``sensitivity_root`` with the rates calibrated for those shares in ``SENSITIVITY_RATES`` there (``python -m
    marlinkit.marlin.surrogate_planner --kind llama --rows ROWS --scenarios ... --out``): their ``executed_vs_policy``
    table (MARLIN only; MARL is the section's). Outside the figures and the claims."""
    from marlinkit.marlin.surrogate_planner import LlamaSurrogatePlanner, llama_shares, load_rates

    root = sensitivity_root(preset, rows)
    source = LlamaSurrogatePlanner(load_rates(root / SENSITIVITY_RATES), llama_shares(rows))
    label = config.plan_sources[0]
    episodes, evaluations = [], []
    for seed in config.marlin_seeds:
        log(f"{time.strftime('%H:%M:%S')} {source.name} MARLIN seed {seed} ({len(config.scenarios)} corridors)")
        results = grid.run_grid(config.grid("MARLIN", seed, label), preset, source=source, root=root, progress=False)
        episodes.append(results.episodes.assign(plan_source=label))
        evaluations.append(results.evaluations.assign(plan_source=label))
    episodes = pd.concat(episodes, ignore_index=True)
    n = len(config.marlin_seeds)
    counts = pd.DataFrame([{"plan_source": label, "scenario": sc, "system": "MARLIN", "finished": n, "planned": n}
                           for sc in config.scenarios])
    tables = {"episodes": episodes, "evaluations": pd.concat(evaluations, ignore_index=True), "runs": counts}
    pooled = Pooled(EXPERIMENT, preset, config, tables, (), provenance(config, episodes, counts, preset, label))
    return executed_vs_policy(pooled, config)
