"""Fig. 5 in simulation: MARL and MARLIN on the maze-like corridor, checkpoints evaluated under actuation noise.

A MARLIN grid (``grid.run_grid``) in its own result folder ``data/results/marlin/<preset>/fig5_hardware``: MARL and
MARLIN checkpoints every ``checkpoint_every`` episodes from ``checkpoint_start`` (paper: 250 from 100) are evaluated
under ``hardware.ActuationNoise``, and the LLM-only system plays its plans on the same noisy robots, re-planning
after a deviation. Simulated actuation noise, **not physical robots**.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from marlinkit import paths
from marlinkit.config_fields import label, required_preset
from marlinkit.plots import Provenance
from marlinkit.marlin import fig3_training, grid
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.envs.corridor.plans import PlanSource
from marlinkit.marlin.hardware import ActuationNoise, DriveConfig, move_to_commands


ENGINE = "corridor core (numpy)"
FIG5_SCENARIO = "maze_like"  # the paper's physical experiment used the hardest corridor only


# ---------------------------------------------------------------------------------------------
# Fig. 5 in simulation


def fig5_checkpoints(episodes: int, start: int, every: int) -> list[int]:
    """The paper's evaluation episodes: ``start``, ``start + every``, ... up to ``episodes`` (100, 350, ..., 1600)."""
    if not (1 <= start <= episodes and every >= 1):
        raise ValueError(f"need 1 <= checkpoint_start <= episodes and checkpoint_every >= 1, got {start}, "
                         f"{every}, {episodes}")
    return list(range(start, episodes + 1, every))


@dataclass(frozen=True)
class Config(grid.GridConfig):
    """The ``fig5_hardware`` section: a MARLIN grid on the maze-like corridor whose checkpoints are evaluated under
    actuation noise. ``scenarios`` (maze-like) and ``checkpoints`` (from the two fields below) are derived."""

    checkpoint_start: int = 100
    """First evaluated checkpoint (paper: episode 100)."""
    checkpoint_every: int = 250
    """Episodes between evaluated checkpoints (paper: 250, so 100, 350, ..., 1600)."""
    actuation_noise: ActuationNoise | None = field(default_factory=ActuationNoise)
    """The simulated robots' actuation noise (a move fails, or slips sideways; a mapping given here holds its
    fields)."""
    preset: str | None = label()
    """The preset whose MARLIN results folder holds the runs (a label: not part of any run's key)."""
    root: Path | str | None = label()
    """A folder for the runs instead of the preset's (a label; None: ``data/results/marlin/<preset>/fig5_hardware``)."""
    progress: bool = label(True)
    """Print a line per finished run (a label)."""

    DERIVED: ClassVar[tuple[str, ...]] = ("scenarios", "checkpoints")
    """Fields set from the others: ``presets.get`` refuses them as overrides (the corridor is maze-like; set
    checkpoint_start and checkpoint_every instead)."""

    def __post_init__(self):
        object.__setattr__(self, "scenarios", (FIG5_SCENARIO,))
        object.__setattr__(self, "checkpoints",
                           tuple(fig5_checkpoints(self.episodes, self.checkpoint_start, self.checkpoint_every)))
        super().__post_init__()


def run(cfg: Config) -> grid.GridResult:
    """Train (or load) MARL and MARLIN on the maze-like corridor and evaluate their checkpoints under noise; the runs
    are saved in ``cfg.root``, else under ``cfg.preset``'s MARLIN results
    (``data/results/marlin/<preset>/fig5_hardware``).

    The plan source is the config's ``plan_source`` ("surrogate" or "exact").
    """
    preset = required_preset(cfg)
    trained, source = grid.non_llm_plan_source(cfg, None, None)
    root = Path(cfg.root) if cfg.root else paths.results_dir("marlin", preset) / "fig5_hardware"
    results = grid.run_grid(trained, preset, source, root, cfg.progress)
    return grid.GridResult.of("fig5_hardware", results, cfg, preset, provenance(cfg, preset))


def provenance(config: Config, preset: str) -> Provenance:
    """Fig. 5's footer: the simulated actuation noise named as such, the plan source, the seeds."""
    noise = config.actuation_noise
    return Provenance(
        preset, engine="corridor core + SIMULATED actuation noise", source=grid.footer_source(config.plan_source),
        seeds=config.seeds,
        details={"engine": "corridor core (numpy) + SIMULATED actuation noise, not physical robots",
                 "plan source": grid.plan_source_label(config),
                 "protocol": f"p_fail {noise.p_fail}, p_slip {noise.p_slip}; {config.n_envs} copies x "
                             f"{config.episodes} episodes"})


def fig5_table(results: grid.Results) -> pd.DataFrame:
    """Median and quartiles of the noisy checkpoint evaluations per system and episode (all seeds' runs pooled),
    and the spread over seeds: ``seed_sd``, the standard deviation of the per-seed means (NaN with one seed)."""
    evaluations = results.evaluations
    grouped = evaluations.groupby(["system", "checkpoint"]).performance
    table = grouped.agg(median="median", q25=lambda p: p.quantile(0.25), q75=lambda p: p.quantile(0.75), mean="mean",
                        runs="size")
    per_seed = (evaluations.groupby(["system", "checkpoint", "seed"]).performance.mean()
                .groupby(["system", "checkpoint"]))
    table["seeds"] = per_seed.size()
    table["seed_sd"] = per_seed.std(ddof=1)
    return table.reset_index()


def figure5(results: grid.Results, noise: ActuationNoise, source_label: str = "plan source alone"):
    """Median noisy performance vs episode for MARL and MARLIN (quartile bands over evaluation runs), their mean with
    error bars of one SD over seeds (the table's ``seed_sd``); the plan source alone (named by ``source_label``: the
    surrogate or the exact planner, neither an LLM) at the right."""
    import matplotlib.pyplot as plt

    from marlinkit.plots import PAPER_COLORS

    table = fig5_table(results)
    last = int(table.checkpoint.max())
    fig, ax = plt.subplots(figsize=(6.0, 4.1))
    for system in ("MARL", "MARLIN"):
        rows = table[table.system == system]
        ax.plot(rows.checkpoint, rows["median"], "o-", color=PAPER_COLORS[system], label=f"{system}: median", lw=1.4,
                ms=4)
        ax.fill_between(rows.checkpoint, rows.q25, rows.q75, color=PAPER_COLORS[system], alpha=0.15, lw=0,
                        label=f"{system}: quartiles over evaluation runs")
        shift = last * (0.012 if system == "MARLIN" else -0.012)  # the two systems' error bars side by side
        ax.errorbar(rows.checkpoint + shift, rows["mean"], yerr=rows.seed_sd.fillna(0), fmt="D", ms=3.5, mfc="white",
                    color=PAPER_COLORS[system], capsize=3, lw=1.0, zorder=4,
                    label=f"{system}: mean ± SD over {int(rows.seeds.max())} seeds")
    # this figure's plan source: the planner
    alone = results.episodes[results.episodes.system == "LLM-only"].performance
    fig3_training.draw_plan_source_alone(ax, alone, last * 1.12, last * 0.08, source_label)
    ax.set_xlim(0, last * 1.2)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("training episode of the evaluated checkpoint (per environment copy)")
    ax.set_ylabel("median performance")
    ax.set_title(f"Maze-Like corridor, SIMULATED actuation noise (not physical robots)\n"
                 f"move fails p={noise.p_fail}, slips sideways p={noise.p_slip}", fontsize=9)
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
            rows.extend({"robot": robot, "step": step, "move": move, "linear_x_m_s": c.linear_x,
                         "angular_z_rad_s": round(c.angular_z, 4),
                         "duration_s": round(c.duration_s, 3)} for c in commands)
    return pd.DataFrame(rows)
