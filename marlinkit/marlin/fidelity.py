"""Our MARL training against the paper's Table I at matched sample counts (notebooks/marlin/fidelity).

The paper's x-axis is episodes per environment copy, but how much a policy has learned depends on
how many episodes fed its one update stream: ours runs ``n_envs`` (15) copies into one policy, so at
episode ``e`` it has seen ``15 e`` episodes. The paper does not print its copies per training
(issue 14 reports 6 and 9 in the authors' raw results), so ``paper_copies`` is a parameter: the
paper's episode ``E`` is set beside our episode ``E * paper_copies / n_envs``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marlinkit import presets
from marlinkit.marlin import grid
from marlinkit.paper_values import MARLIN_CHECKPOINTS, MARLIN_TABLE1


def marl_runs(preset: str, progress: bool = False) -> tuple[grid.Results, grid.GridConfig]:
    """The MARL trainings of the preset's ``marlin_training`` grid (loaded when Fig. 3 made them)."""
    config = presets.get(preset, "marlin_training", systems=["MARL"])
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
                             "ours_MARL": mean, "ours_seed_sd": float(values.std(ddof=1)) if values is not None and len(values) > 1 else np.nan,
                             "paper_MARL": paper, "difference": mean - paper})
    return pd.DataFrame(rows)


def figure(results: grid.Results, n_envs: int, paper_copies: list[int], window: int = 5):
    """Our MARL training curve against copy-episodes (sample count), the paper's Table I MARL values at each assumed copies."""
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
        ax.set_title(scenario, fontsize=9)
        ax.set_xlabel("copy-episodes into the policy (log)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("MARL performance")
    axes[0][0].set_ylim(-0.02, 1.05)
    axes[0][0].legend(fontsize=6, loc="lower right")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
