"""MARLIN beyond Fig. 3: the hardware experiment in simulation (Fig. 5) and a changing environment.

Both are MARLIN grids (``marlin.run_grid``) with one extra setting each, in result folders of
their own under ``data/results/marlin/<preset>/``:

* ``fig5_hardware``: the Maze-Like corridor trained as in Fig. 3; MARL and MARLIN checkpoints every
  ``checkpoint_every`` episodes from ``checkpoint_start`` (paper: 250 from 100) are evaluated under
  ``hardware.ActuationNoise``, and the LLM-only system plays its plans on the same noisy robots,
  re-planning after a deviation. Simulated actuation noise, **not physical robots**.
* ``dynamic_env`` (the authors' extension): training starts on ``scenario`` and continues on
  ``new_layout`` after ``change_episode`` episodes (paper preset: maze-like after episode 1000).
  Plans stay cached per layout, so none made for the old layout is replayed on the new one.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from marlinkit import paths, presets
from marlinkit.marlin import algorithm1 as marlin
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.envs.corridor.plans import PlanSource
from marlinkit.marlin.hardware import DriveConfig, move_to_commands

ENGINE = "corridor core (numpy)"
FIG5_SCENARIO = "maze_like"  # the paper's physical experiment used the hardest corridor only


# ---------------------------------------------------------------------------------------------
# Fig. 5 in simulation


def fig5_checkpoints(episodes: int, start: int, every: int) -> list[int]:
    """The paper's evaluation episodes: ``start``, ``start + every``, ... up to ``episodes`` (100, 350, ..., 1600)."""
    if not (1 <= start <= episodes and every >= 1):
        raise ValueError(f"need 1 <= checkpoint_start <= episodes and checkpoint_every >= 1, got {start}, {every}, {episodes}")
    return list(range(start, episodes + 1, every))


def fig5_settings(section: dict[str, Any]) -> dict[str, Any]:
    """``run_grid`` settings of the ``fig5_hardware`` preset section."""
    settings = {k: v for k, v in section.items() if k not in ("checkpoint_start", "checkpoint_every")}
    settings.update(scenarios=[FIG5_SCENARIO],
                    checkpoints=fig5_checkpoints(section["episodes"], section["checkpoint_start"], section["checkpoint_every"]))
    return settings


def _grid_source(preset: str, section: str, plan_source: str | None, source: PlanSource | None,
                 overrides: dict[str, Any]) -> tuple[dict[str, Any], PlanSource | None]:
    """A section's settings and plan source: ``source`` if given, else ``plan_source`` or the section's (not "llm")."""
    if source is not None:
        return presets.get(preset, section, **overrides), source
    name, settings, source, _ = marlin.plan_source_settings(preset, section, plan_source, **overrides)
    if name == "llm":
        raise ValueError(f"{section}: the LLM plan source is not wired here; use plan_source 'surrogate' or 'exact'")
    return settings, source


def plan_source_label(preset: str, section: str, plan_source: str | None = None) -> str:
    """How figures name the plan source a section's MARLIN runs use."""
    return marlin.plan_source_settings(preset, section, plan_source)[3]


def run_fig5(preset: str, root: Path | None = None, progress: bool = True, source: PlanSource | None = None,
             plan_source: str | None = None, **overrides: Any) -> marlin.Results:
    """Train (or load) MARL and MARLIN on the maze-like corridor and evaluate their checkpoints under noise.

    The plan source is ``source``, else ``plan_source`` ("surrogate" or "exact"), else the section's ``plan_source``.
    """
    settings, source = _grid_source(preset, "fig5_hardware", plan_source, source, overrides)
    return marlin.run_grid(fig5_settings(settings), preset, source,
                           Path(root) if root else paths.results_dir("marlin", preset) / "fig5_hardware", progress)


def fig5_table(results: marlin.Results) -> pd.DataFrame:
    """Median and quartiles of the noisy checkpoint evaluations per system and episode (all seeds' runs pooled),
    and the spread over seeds: ``seed_sd``, the standard deviation of the per-seed means (NaN with one seed)."""
    evaluations = results.evaluations
    grouped = evaluations.groupby(["system", "checkpoint"]).performance
    table = grouped.agg(median="median", q25=lambda p: p.quantile(0.25), q75=lambda p: p.quantile(0.75), mean="mean", runs="size")
    per_seed = evaluations.groupby(["system", "checkpoint", "seed"]).performance.mean().groupby(["system", "checkpoint"])
    table["seeds"] = per_seed.size()
    table["seed_sd"] = per_seed.std(ddof=1)
    return table.reset_index()


def figure5(results: marlin.Results, noise: dict[str, float], source_label: str = "exact planner alone"):
    """Median noisy performance vs episode for MARL and MARLIN (quartile bands); the plan source alone (here
    the exact joint planner, not an LLM) at the right."""
    import matplotlib.pyplot as plt

    from marlinkit.plots import PAPER_COLORS

    table = fig5_table(results)
    last = int(table.checkpoint.max())
    fig, ax = plt.subplots(figsize=(6.0, 4.1))
    for system in ("MARL", "MARLIN"):
        rows = table[table.system == system]
        ax.plot(rows.checkpoint, rows["median"], "o-", color=PAPER_COLORS[system], label=f"{system}: median", lw=1.4, ms=4)
        ax.fill_between(rows.checkpoint, rows.q25, rows.q75, color=PAPER_COLORS[system], alpha=0.15, lw=0,
                        label=f"{system}: quartiles over evaluation runs")
    alone = results.episodes[results.episodes.system == "LLM-only"].performance  # this figure's plan source: the planner
    marlin.draw_plan_source_alone(ax, alone, last * 1.12, last * 0.08, source_label)
    ax.set_xlim(0, last * 1.2)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("training episode of the evaluated checkpoint (per environment copy)")
    ax.set_ylabel("median performance")
    ax.set_title(f"Maze-Like corridor, SIMULATED actuation noise (not physical robots)\n"
                 f"move fails p={noise['p_fail']}, slips sideways p={noise['p_slip']}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def velocity_commands_table(scenario: str = FIG5_SCENARIO, config: DriveConfig | None = None,
                            source: PlanSource | None = None) -> pd.DataFrame:
    """The wheel commands a plan from the start becomes, one row per ``cmd_vel`` command and robot.

    Each robot starts facing along the corridor towards its goal (north if its goal lies north).
    """
    layout, config = get_layout(scenario), config or DriveConfig()
    plan = (source or ExactJointPlanner()).make_plan(layout, np.asarray(layout.starts), core.EPISODE_STEPS)
    rows = []
    for robot, (start, goal) in enumerate(zip(layout.starts, layout.goals, strict=True)):
        heading = math.pi / 2 if goal[1] > start[1] else -math.pi / 2
        for step, action in enumerate(plan.actions[:, robot], start=1):
            move = core.LLM_ACTION_NAMES[action]
            commands, heading = move_to_commands(move, heading, config)
            rows.extend({"robot": robot, "step": step, "move": move, "linear_x_m_s": c.linear_x, "angular_z_rad_s": round(c.angular_z, 4),
                         "duration_s": round(c.duration_s, 3)} for c in commands)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# The dynamic environment


def dynamic_settings(section: dict[str, Any]) -> dict[str, Any]:
    """``run_grid`` settings of the ``dynamic_env`` preset section (MARL and MARLIN; checkpoints at the change and the end)."""
    settings = {k: v for k, v in section.items() if k not in ("scenario", "new_layout", "change_episode")}
    settings.update(scenarios=[section["scenario"]], systems=["MARL", "MARLIN"],
                    layout_schedule=[[section["change_episode"], section["new_layout"]]],
                    checkpoints=sorted({section["change_episode"], section["episodes"]}),
                    llm_only_trials=1)  # required by run_grid; there are no LLM-only runs here
    return settings


def run_dynamic(preset: str, root: Path | None = None, progress: bool = True, source: PlanSource | None = None,
                plan_source: str | None = None, **overrides: Any) -> marlin.Results:
    """Train (or load) MARL and MARLIN through the layout change of the ``dynamic_env`` preset section (plan source as ``run_fig5``)."""
    settings, source = _grid_source(preset, "dynamic_env", plan_source, source, overrides)
    return marlin.run_grid(dynamic_settings(settings), preset, source,
                           Path(root) if root else paths.results_dir("marlin", preset) / "dynamic_env", progress)


def dynamic_summary(results: marlin.Results, change_episode: int, window: int = 10, level: float = 0.9) -> pd.DataFrame:
    """Per system: median performance just before and after the change and at the end, and episodes to reach ``level`` again.

    Curves are medians over all copies and seeds; the end evaluation's spread over seeds is its own column.
    """
    rows = []
    for system, data in results.episodes.groupby("system", sort=True):
        curve = data.groupby("episode").performance.median()
        after = curve[curve.index > change_episode]
        reached = after[after >= level]
        system_evaluations = results.evaluations[results.evaluations.system == system]
        evaluations = system_evaluations.groupby("checkpoint").performance.mean()
        end_per_seed = system_evaluations[system_evaluations.checkpoint == system_evaluations.checkpoint.max()].groupby("seed").performance.mean()
        rows.append({"system": system,
                     f"before (last {window})": curve[(curve.index > change_episode - window) & (curve.index <= change_episode)].mean(),
                     f"after (first {window})": after.iloc[:window].mean(), f"end (last {window})": after.iloc[-window:].mean(),
                     f"episodes after change to median >= {level}": int(reached.index[0] - change_episode) if len(reached) else None,
                     "eval at change (old layout)": evaluations.get(change_episode, np.nan),
                     "eval at end (new layout)": evaluations.iloc[-1],
                     "eval at end: SD over seeds": end_per_seed.std(ddof=1), "seeds": len(end_per_seed),
                     "plan share after change": (data[data.episode > change_episode].generator == marlin.PLAN).mean()})
    return pd.DataFrame(rows)


def dynamic_figure(results: marlin.Results, change_episode: int):
    """Median training performance per episode around the layout change, and MARLIN's share of plan episodes."""
    import matplotlib.pyplot as plt

    from marlinkit.plots import PAPER_COLORS

    episodes = results.episodes
    fig, (ax, share) = plt.subplots(2, 1, figsize=(6.0, 4.2), sharex=True, height_ratios=(3, 1))
    for system in ("MARL", "MARLIN"):
        curve = episodes[episodes.system == system].groupby("episode").performance.median()
        ax.plot(curve.index, curve.values, color=PAPER_COLORS[system], label=system, lw=1.2)
    marlin_rows = episodes[episodes.system == "MARLIN"]
    plans = marlin_rows.groupby("episode").generator.apply(lambda g: (g == marlin.PLAN).mean())
    share.bar(plans.index, plans.values, width=1.0, color=PAPER_COLORS["MARLIN"], alpha=0.6)
    before, after = (get_layout(episodes[episodes.episode == e].layout.iloc[0]).title for e in (1, int(episodes.episode.max())))
    for axis in (ax, share):
        axis.axvline(change_episode + 0.5, color="k", ls="--", lw=1)
        axis.grid(alpha=0.3)
    ax.text(change_episode * 0.98, 1.02, f"{before}  |", ha="right", va="bottom", fontsize=8)
    ax.text(change_episode * 1.02, 1.02, f"  {after}", ha="left", va="bottom", fontsize=8)
    ax.set_ylim(-0.02, 1.12)
    ax.set_ylabel("median performance")
    ax.legend(loc="lower left", fontsize=8)
    share.set_ylabel("MARLIN\nplan share", fontsize=8)
    share.set_ylim(0, 1)
    share.set_xlabel(f"episode (per environment copy); layout changes after episode {change_episode}")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
