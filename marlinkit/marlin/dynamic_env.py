"""The dynamic environment (the authors' extension): training starts on one layout and continues on another.

A MARLIN grid in ``data/results/marlin/<preset>/dynamic_env``: ``scenario`` until ``change_episode``, then
``new_layout`` (paper preset: maze-like after episode 1000). Plans stay cached per layout, so none made for the
old layout is replayed on the new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from marlinkit import paths
from marlinkit.config_fields import label, required_preset
from marlinkit.plots import Provenance
from marlinkit.marlin import algorithm1, grid
from marlinkit.envs.corridor.layouts import get_layout


# ---------------------------------------------------------------------------------------------
# The dynamic environment


@dataclass(frozen=True)
class Config(grid.GridConfig):
    """The ``dynamic_env`` section: MARL and MARLIN trained on ``scenario``, then on ``new_layout`` after
    ``change_episode``. ``scenarios``, ``systems``, ``layout_schedule`` and ``checkpoints`` (the change and
    the end) are derived from these fields."""

    scenario: str = "single_slot"
    """Layout of the first episodes (the paper does not name it)."""
    new_layout: str = "maze_like"
    """Layout after the change (the authors' extension: maze-like)."""
    change_episode: int = 1000
    """Episodes on ``scenario`` before the change (paper: 1000 of 1600)."""
    llm_only_trials: int = 1
    """Unused (no LLM-only runs here); kept at 1."""
    preset: str | None = label()
    """The preset whose MARLIN results folder holds the runs (a label: not part of any run's key)."""
    root: Path | str | None = label()
    """A folder for the runs instead of the preset's (a label; None: ``data/results/marlin/<preset>/dynamic_env``)."""
    progress: bool = label(True)
    """Print a line per finished run (a label)."""

    DERIVED: ClassVar[tuple[str, ...]] = ("scenarios", "systems", "layout_schedule", "checkpoints")
    """Fields set from the others: ``presets.get`` refuses them as overrides (set scenario, new_layout, change_episode
    and episodes instead)."""

    def __post_init__(self):
        object.__setattr__(self, "scenarios", (self.scenario,))
        object.__setattr__(self, "systems", ("MARL", "MARLIN"))
        object.__setattr__(self, "layout_schedule", ((int(self.change_episode), self.new_layout),))
        object.__setattr__(self, "checkpoints", tuple(sorted({int(self.change_episode), int(self.episodes)})))
        super().__post_init__()


def run(cfg: Config) -> grid.GridResult:
    """Train (or load) MARL and MARLIN through the layout change (plan source as Fig. 5's); the runs are saved in
    ``cfg.root``, else under ``cfg.preset``'s MARLIN results (``data/results/marlin/<preset>/dynamic_env``)."""
    preset = required_preset(cfg)
    trained, source = grid.non_llm_plan_source(cfg, None, None)
    root = Path(cfg.root) if cfg.root else paths.results_dir("marlin", preset) / "dynamic_env"
    results = grid.run_grid(trained, preset, source, root, cfg.progress)
    return grid.GridResult.of("dynamic_env", results, cfg, preset, provenance(cfg, preset))


def provenance(config: Config, preset: str) -> Provenance:
    """The dynamic environment's footer: plan source and seeds; the layout change and the protocol in its details."""
    return Provenance(preset, engine="corridor core (numpy)", source=grid.footer_source(config.plan_source),
                      seeds=config.seeds,
                      details={"plan source": grid.plan_source_label(config),
                               "protocol": f"{config.scenario} -> {config.new_layout} after episode "
                                           f"{config.change_episode}; {config.n_envs} copies x "
                                           f"{config.episodes} episodes"})


def dynamic_summary(results: grid.Results, change_episode: int, window: int = 10, level: float = 0.9) -> pd.DataFrame:
    """Per system: median performance just before and after the change and at the end, and episodes to reach ``level``
    again.

    Curves are medians over all copies and seeds; the end evaluation's spread over seeds is its own column.
    """
    rows = []
    for system, data in results.episodes.groupby("system", sort=True):
        curve = data.groupby("episode").performance.median()
        after = curve[curve.index > change_episode]
        reached = after[after >= level]
        system_evaluations = results.evaluations[results.evaluations.system == system]
        evaluations = system_evaluations.groupby("checkpoint").performance.mean()
        end_per_seed = (system_evaluations[system_evaluations.checkpoint == system_evaluations.checkpoint.max()]
                        .groupby("seed").performance.mean())
        rows.append({"system": system,
                     f"before (last {window})": curve[(curve.index > change_episode - window)
                                                      & (curve.index <= change_episode)].mean(),
                     f"after (first {window})": after.iloc[:window].mean(),
                     f"end (last {window})": after.iloc[-window:].mean(),
                     f"episodes after change to median >= {level}":
                         int(reached.index[0] - change_episode) if len(reached) else None,
                     "eval at change (old layout)": evaluations.get(change_episode, np.nan),
                     "eval at end (new layout)": evaluations.iloc[-1],
                     "eval at end: SD over seeds": end_per_seed.std(ddof=1), "seeds": len(end_per_seed),
                     "plan episodes after change (%)":
                         100 * (data[data.episode > change_episode].generator == algorithm1.PLAN).mean()})
    return pd.DataFrame(rows)


def dynamic_figure(results: grid.Results, change_episode: int):
    """Median training performance per episode around the layout change (a band: the range of the per-seed medians),
    and MARLIN's share of plan episodes."""
    import matplotlib.pyplot as plt

    from marlinkit.plots import PAPER_COLORS

    episodes = results.episodes
    fig, (ax, share) = plt.subplots(2, 1, figsize=(6.0, 4.2), sharex=True, height_ratios=(3, 1))
    for system in ("MARL", "MARLIN"):
        rows = episodes[episodes.system == system]
        curve = rows.groupby("episode").performance.median()
        per_seed = rows.groupby(["episode", "seed"]).performance.median().unstack("seed")
        ax.fill_between(per_seed.index, per_seed.min(axis=1), per_seed.max(axis=1), color=PAPER_COLORS[system],
                        alpha=0.15,
                        lw=0, label=f"{system}: range of the per-seed medians ({per_seed.shape[1]} seeds)")
        ax.plot(curve.index, curve.values, color=PAPER_COLORS[system], label=f"{system}: median over seeds and copies",
                lw=1.2)
    marlin_rows = episodes[episodes.system == "MARLIN"]
    plans = marlin_rows.groupby("episode").generator.apply(lambda g: (g == algorithm1.PLAN).mean())
    share.bar(plans.index, plans.values, width=1.0, color=PAPER_COLORS["MARLIN"], alpha=0.6)
    before, after = (get_layout(episodes[episodes.episode == e].layout.iloc[0]).title
                     for e in (1, int(episodes.episode.max())))
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
