"""Our MARL training against the paper's Table I at matched sample counts (notebooks/marlin/fidelity).

The paper's x-axis is episodes per environment copy, but how much a policy has learned depends on
how many episodes fed its one update stream: ours runs ``n_envs`` (15) copies into one policy, so at
episode ``e`` it has seen ``15 e`` episodes. The paper does not print its copies per training
(the authors' raw results show 6 and 9), so ``paper_copies`` is a parameter: the
paper's episode ``E`` is set beside our episode ``E * paper_copies / n_envs``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from marlinkit import paths
from marlinkit.plots import Provenance
from marlinkit.result import Result
from marlinkit.llm import config as llm_config
from marlinkit.marlin import grid
from marlinkit.config_fields import label, required_preset, typed
from marlinkit.paper_values import MARLIN_CHECKPOINTS, MARLIN_TABLE1

#: How the table and figure name our Fig. 3 MARL runs, the baseline every variant changes one setting of.
BASELINE = "ours"


@dataclass(frozen=True)
class Variant:
    """One of our departures from the authors' RLlib set-up undone: the Fig. 3 MARL grid with these settings."""

    name: str
    """How the table, the figure and the variant's result folder name it."""
    n_envs: int | None = None
    """Environment copies per update stream (None: the grid's; the authors pooled trainings of 6 and 9, ours: 15)."""
    init: str | None = None
    """MAPPO's layer initialisation (``MAPPOConfig.init``; None: the grid's). RLlib 2.60's default model keeps
    torch's ("torch"; ours: orthogonal)."""

    def apply(self, base: grid.GridConfig) -> grid.GridConfig:
        """``base`` with this variant's settings."""
        config = base if self.n_envs is None else dataclasses.replace(base, n_envs=self.n_envs)
        if self.init is not None:
            config = dataclasses.replace(config, mappo=dataclasses.replace(config.mappo, init=self.init))
        return config


@dataclass(frozen=True)
class Config:
    """The ``fidelity`` section: MARL trained with one of our departures from the authors' RLlib set-up undone
    at a time, beside our Fig. 3 MARL runs (the ``fig3_training`` section's, which every variant starts from)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds of every variant (and of the baseline, read from the Fig. 3 runs)."""
    variants: tuple[Variant, ...] = (Variant("6 copies", n_envs=6), Variant("9 copies", n_envs=9),
                                     Variant("torch init", init="torch"))
    """The variants, each changing one setting of the Fig. 3 MARL grid (a mapping given here holds a ``Variant``'s
    fields)."""
    training: grid.GridConfig | None = None
    """Fig. 3's grid (the preset's ``fig3_training`` section; ``presets.get`` fills it in): every variant starts from
    it, and its MARL runs are the baseline."""
    preset: str | None = label()
    """The preset whose MARLIN results folder holds the runs (a label: not part of any run's key)."""
    progress: bool = label(True)
    """Print a line per finished run (a label)."""

    def __post_init__(self):
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        object.__setattr__(self, "variants", tuple(typed(Variant, v, "variants") for v in self.variants))
        object.__setattr__(self, "training", typed(grid.GridConfig, self.training, "training"))
        if not self.seeds:
            raise ValueError("fidelity needs at least one seed")
        names = [v.name for v in self.variants]
        if BASELINE in names:
            raise ValueError(f"{BASELINE!r} names the Fig. 3 runs; give the variant another name")
        if len(set(names)) != len(names):
            raise ValueError(f"variant names must differ, got {names}")


def variant_config(training: grid.GridConfig, variant: Variant, seeds: tuple[int, ...]) -> grid.GridConfig:
    """The MARL grid of ``training`` (the ``fig3_training`` section) over ``seeds`` with one variant's settings."""
    return variant.apply(dataclasses.replace(training, systems=("MARL",), seeds=tuple(seeds)))


@dataclass(frozen=True)
class Fidelity(Result):
    """The ``fidelity`` :class:`~marlinkit.result.Result`: tables ``episodes`` and ``evaluations`` of every variant's
    MARL runs (column ``variant``; the baseline is named :data:`BASELINE`), and the runs per variant."""

    runs: Mapping[str, tuple[grid.Results, grid.GridConfig]]
    """Variant name -> its grid's rows and the grid it ran (the figure and table functions read these)."""


def run(cfg: Config) -> Fidelity:
    """Train (or load) every variant's MARL runs; the baseline is the Fig. 3 MARL runs of ``cfg.training`` (the
    ``fig3_training`` section) of the same seeds.

    Each variant keeps its runs in its own folder (``data/results/marlin/<preset>/fidelity/<variant>/``):
    its runs share their names with Fig. 3's, not their settings.
    """
    config, preset, training, progress = cfg, required_preset(cfg), cfg.training, cfg.progress
    if training is None:
        raise ValueError("fidelity: set the config's training (the fig3_training section its variants start from)")
    out = {BASELINE: marl_runs(training, preset, progress, seeds=config.seeds)}
    for variant in config.variants:
        variant_grid = variant_config(training, variant, config.seeds)
        root = paths.results_dir("marlin", preset) / "fidelity" / llm_config.slug(variant.name)
        out[variant.name] = grid.run_grid(variant_grid, preset, root=root, progress=progress), variant_grid
    tables = {name: pd.concat([getattr(results, name).assign(variant=variant) for variant, (results, _) in out.items()],
                              ignore_index=True) for name in ("episodes", "evaluations")}
    provenance = Provenance(preset, engine="corridor core (numpy)", source="no LLM (MARL only)", seeds=config.seeds,
                            details={"variants": "MARL, one setting changed at a time"})
    return Fidelity("fidelity", preset, config, tables,
                    tuple(path for results, _ in out.values() for path in results.files),
                    provenance, out)


def variants_table(runs: Mapping[str, tuple[grid.Results, grid.GridConfig]], window: int = 5) -> pd.DataFrame:
    """Per scenario and paper checkpoint: the paper's MARL value and each variant's MARL training performance at
    that episode (mean over seeds, its spread, and the difference to the paper); NaN where a training is shorter."""
    rows = []
    for scenario in _scenarios(runs):
        curves = {name: _marl_curve(results, scenario, window) for name, (results, _) in runs.items()}
        for episode in MARLIN_CHECKPOINTS:
            paper = float(MARLIN_TABLE1[scenario][episode][0])
            for name, (results, config) in runs.items():
                curve = curves[name]
                values = curve.loc[episode] if episode in curve.index else None
                mean = float(values.mean()) if values is not None else np.nan
                rows.append({"scenario": scenario, "paper_episode": episode, "variant": name, "n_envs": config.n_envs,
                             "init": config.mappo.init, "seeds": 0 if values is None else int(values.notna().sum()),
                             "ours_MARL": mean,
                             "ours_seed_sd": (float(values.std(ddof=1)) if values is not None and len(values) > 1
                                              else np.nan),
                             "paper_MARL": paper, "difference": mean - paper})
    return pd.DataFrame(rows)


def variants_summary(table: pd.DataFrame, tolerance: float = 0.1) -> pd.DataFrame:
    """Per variant: cells compared, cells within ``tolerance`` of the paper, and the mean absolute difference."""
    known = table.dropna(subset=["ours_MARL"])
    grouped = known.groupby("variant", sort=False)
    return pd.DataFrame({"cells": grouped.size(),
                         f"within_{tolerance}": grouped.difference.apply(lambda d: int((d.abs() <= tolerance).sum())),
                         "mean_abs_difference": grouped.difference.apply(lambda d: float(d.abs().mean())),
                         "mean_difference": grouped.difference.mean()}).reset_index()


def variants_figure(runs: Mapping[str, tuple[grid.Results, grid.GridConfig]], window: int = 5):
    """Each variant's MARL training curve (mean over seeds) per scenario against episodes, the paper's Table I
    points."""
    import matplotlib.pyplot as plt

    scenarios = _scenarios(runs)
    fig, axes = plt.subplots(1, len(scenarios), figsize=(3.2 * len(scenarios), 3.2), sharey=True, squeeze=False)
    colors = plt.get_cmap("tab10")
    for ax, scenario in zip(axes[0], scenarios):
        last = 0
        for index, (name, (results, config)) in enumerate(runs.items()):
            curve = _marl_curve(results, scenario, window)
            label = f"{name} ({config.n_envs} copies, {config.mappo.init} init)"
            ax.plot(curve.index, curve.mean(axis=1), color=colors(index), lw=1.1, label=label)
            last = max(last, int(curve.index.max()))
        # the paper's checkpoints our trainings reach (a shorter preset shows only those)
        points = [(e, float(MARLIN_TABLE1[scenario][e][0])) for e in MARLIN_CHECKPOINTS if e <= last]
        if points:
            ax.scatter(*zip(*points), marker="o", color="k", s=20, zorder=3, label="paper Table I (MARL)")
        _label_panel(ax, scenario, "episode per copy")
    return _finish(fig, axes, "MARL training performance")


def _scenarios(runs: Mapping[str, tuple[grid.Results, grid.GridConfig]]) -> list[str]:
    """The scenarios of the baseline's runs, in their order."""
    return list(dict.fromkeys(runs[BASELINE][0].episodes.scenario))


def _marl_curve(results: grid.Results, scenario: str, window: int) -> pd.DataFrame:
    """One scenario's MARL training curve (:func:`training_curve`)."""
    episodes = results.episodes
    return training_curve(episodes[(episodes.system == "MARL") & (episodes.scenario == scenario)], window)


def _label_panel(ax, scenario: str, xlabel: str) -> None:
    ax.set_title(scenario, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3)


def _finish(fig, axes, ylabel: str):
    """Both figures' shared y axis (performance in [0, 1]), and under the panels a readable legend (8 pt) above the
    room for the provenance footer."""
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].set_ylim(-0.02, 1.05)
    handles, labels = axes[0][0].get_legend_handles_labels()
    ncol = min(3, len(labels)) or 1
    footer_in, legend_in = 0.25, 0.2 * -(-len(labels) // ncol) + 0.1  # inches
    height = fig.get_figheight()
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, footer_in / height))
    fig.tight_layout(rect=(0, (footer_in + legend_in) / height, 1, 1))
    return fig


def marl_runs(training: grid.GridConfig, preset: str, progress: bool = False,
              seeds: tuple[int, ...] | None = None) -> tuple[grid.Results, grid.GridConfig]:
    """The MARL trainings of ``training`` (the ``fig3_training`` section; ``seeds``, None: its own), loaded from
    ``preset``'s MARLIN results when Fig. 3 made them."""
    config = dataclasses.replace(training, systems=("MARL",), seeds=training.seeds if seeds is None else tuple(seeds))
    return grid.run_grid(config, preset, progress=progress), config


def training_curve(episodes: pd.DataFrame, window: int = 5) -> pd.DataFrame:
    """Mean performance over copies per episode (rows) and seed (columns), smoothed over ``window`` episodes."""
    curve = episodes.groupby(["episode", "seed"]).performance.mean().unstack("seed")
    return curve.rolling(window, min_periods=1, center=True).mean()


def matched_table(results: grid.Results, n_envs: int, paper_copies: list[int], window: int = 5) -> pd.DataFrame:
    """Per scenario, paper episode and assumed paper copies: our MARL training performance at the same sample count."""
    rows = []
    for scenario, data in results.episodes[results.episodes.system == "MARL"].groupby("scenario", sort=False):
        curve = training_curve(data, window)
        for episode in MARLIN_CHECKPOINTS:
            for copies in paper_copies:
                ours = episode * copies / n_envs
                matched = round(ours)
                values = curve.loc[matched] if 1 <= matched <= curve.index.max() else None
                paper = float(MARLIN_TABLE1[scenario][episode][0])  # stored as the paper prints it
                mean = float(values.mean()) if values is not None else np.nan
                rows.append({"scenario": scenario, "paper_episode": episode, "paper_copies": copies,
                             "copy_episodes": episode * copies, "our_episode": matched,
                             "ours_MARL": mean,
                             "ours_seed_sd": (float(values.std(ddof=1)) if values is not None and len(values) > 1
                                              else np.nan),
                             "paper_MARL": paper, "difference": mean - paper})
    return pd.DataFrame(rows)


def figure(results: grid.Results, n_envs: int, paper_copies: list[int], window: int = 5):
    """Our MARL training curve against copy-episodes (sample count), the paper's Table I MARL values at each assumed
    copies."""
    import matplotlib.pyplot as plt

    from marlinkit.plots import PAPER_COLORS

    episodes = results.episodes[results.episodes.system == "MARL"]
    scenarios = list(dict.fromkeys(episodes.scenario))
    fig, axes = plt.subplots(1, len(scenarios), figsize=(3.2 * len(scenarios), 3.2), sharey=True, squeeze=False)
    markers = "osD^v"
    for ax, scenario in zip(axes[0], scenarios):
        curve = training_curve(episodes[episodes.scenario == scenario], window)
        x = curve.index * n_envs
        ax.plot(x, curve.mean(axis=1), color=PAPER_COLORS["MARL"], lw=1.2, label=f"ours ({n_envs} copies)")
        if curve.shape[1] > 1:
            ax.fill_between(x, curve.min(axis=1), curve.max(axis=1), color=PAPER_COLORS["MARL"], alpha=0.18, lw=0)
        for marker, copies in zip(markers, paper_copies):
            # the paper's values are stored as printed (strings): plotted as strings they become categories
            points = [(e * copies, float(MARLIN_TABLE1[scenario][e][0])) for e in MARLIN_CHECKPOINTS]
            ax.scatter(*zip(*points), marker=marker, color="k", s=18, zorder=3, label=f"paper, {copies} copies assumed")
        ax.set_xscale("log")
        _label_panel(ax, scenario, "copy-episodes into the policy (log)")
    return _finish(fig, axes, "MARL performance")
