"""Fig. 3 under the authors' protocol (``authors_protocol``): the figure per plan source and its smoothing
(``notebooks/marlin/executed_vs_policy.ipynb``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from marlinkit.marlin import grid
from marlinkit.marlin.algorithm1 import AuthorsSwitchConfig
from marlinkit.marlin.authors_protocol import PAPER_MARL, Config, Pooled, executed_curve, system_label

#: The figure's smoothing: each episode's value is the mean over episodes within this fraction of it (a window that
#: widens along the log episode axis: none for the first ten episodes, +-10 at episode 100, +-160 at 1600).
SMOOTHING = 0.1


def log_smooth(series: pd.Series, fraction: float = SMOOTHING) -> pd.Series:
    """``series`` (indexed by episode 1..n, every episode present) with each value replaced by its mean over the
    episodes within ``fraction`` of its own episode number, ``e - round(fraction e) .. e + round(fraction e)``."""
    values = series.to_numpy(float)
    sums = np.concatenate([[0.0], np.cumsum(values)])
    index = np.arange(len(values))
    half = np.rint(fraction * series.index.to_numpy(float)).astype(int)
    low, high = np.maximum(index - half, 0), np.minimum(index + half, len(values) - 1)
    return pd.Series((sums[high + 1] - sums[low]) / (high - low + 1), index=series.index)


def _draw_system(top, bottom, system: str, data: pd.DataFrame, pooled: Pooled, source: str, scenario: str,
                 handles: dict) -> None:
    """One system's executed curve (thin raw, thick smoothed), its checkpoint evaluations and, for MARLIN, its plan
    shares, in one corridor's column; the legend handles go to ``handles``."""
    from marlinkit.plots import PAPER_COLORS

    color, style = PAPER_COLORS["MARL" if system == PAPER_MARL else system], "--" if system == PAPER_MARL else "-"
    x = data.episode.to_numpy()
    if system != PAPER_MARL:
        top.plot(x, data.performance, color=color, lw=0.4, alpha=0.35)
    smooth = log_smooth(data.set_index("episode").performance)
    n_runs = pooled.episodes[(pooled.episodes.plan_source == source) & (pooled.episodes.scenario == scenario)
                             & (pooled.episodes.system == system)].seed.nunique()
    what = ("executed training episodes (plans included), median over pooled rows, mean within ±10 % of the episode"
            if system != PAPER_MARL else "15 copies per training (Fig. 3's grid), executed, smoothed alike")
    handles[f"{system} executed"], = top.plot(x, smooth, color=color, lw=1.3 if system != PAPER_MARL else 0.9, ls=style,
                                              label=f"{system}: {what}")
    evaluations = pooled.evaluations
    if not evaluations.empty:
        ev = evaluations[(evaluations.plan_source == source) & (evaluations.scenario == scenario)
                         & (evaluations.system == system)]
        per_run = ev.groupby(["checkpoint", "seed"]).performance.mean().groupby("checkpoint")
        mean, sd = per_run.mean(), per_run.std(ddof=1).fillna(0)
        handles[f"{system} policy"] = top.errorbar(
            mean.index, mean, yerr=sd, fmt={"MARLIN": "s", "MARL": "o"}.get(system, "^"), ms=4, color=color,
            mec="black", mew=0.5, capsize=2, lw=0.8, zorder=5,
            label=f"{system}: policy alone, checkpoint evaluation (mean ± SD over runs)")
    if system == "MARLIN":
        bottom.plot(x, log_smooth(data.set_index("episode").plan_start), color=color, lw=1.0,
                    label="MARLIN: share of episodes started on a plan (smoothed alike)")
        bottom.plot(x, log_smooth(data.set_index("episode").plan_step_share), color=color, lw=0.8, ls="--",
                    label="MARLIN: share of steps from plans (smoothed alike)")
    row = {PAPER_MARL: 0, "MARL": 1, "MARLIN": 2}[system]
    top.text(0.03, 0.03 + 0.08 * row, f"{system}: {n_runs} run{'s' * (n_runs != 1)}", transform=top.transAxes,
             fontsize=5.5, color=color)


def _format_column(top, bottom, column: int, scenario: str, episodes: int, handles: dict) -> None:
    """One corridor's axes: log episode axis, the authors' last switch, limits, title and labels."""
    from marlinkit.envs.corridor.layouts import get_layout

    last_switch = AuthorsSwitchConfig().last_switch_episode
    for ax in (top, bottom):
        ax.set_xscale("log")
        ax.set_xlim(1, episodes)
        ax.grid(alpha=0.3, which="both", lw=0.4)
        ax.tick_params(labelsize=7)
        if episodes > last_switch:
            handles["tail"] = ax.axvline(last_switch, color="black", lw=0.7, ls=":",
                                         label=f"after episode {last_switch}: the policy alone acts (the "
                                               "authors' switch)")
    top.set_ylim(-0.02, 1.05)
    bottom.set_ylim(-0.02, 1.02)
    top.set_title(get_layout(scenario).title.removesuffix(" Corridor"), fontsize=8)
    bottom.set_xlabel("episode (log scale)", fontsize=7)
    if column == 0:
        top.set_ylabel("performance", fontsize=8)
        bottom.set_ylabel("MARLIN plan share", fontsize=8)
    else:
        top.tick_params(labelleft=False)
        bottom.tick_params(labelleft=False)


def figure(pooled: Pooled, config: Config, plan_source: str, source_label: str):
    """Fig. 3 under the authors' protocol for one plan source: per corridor, the executed curve (the paper's view: the
    pooled median per episode, thin, and smoothed by ``log_smooth``, thick) with the policy's own checkpoint
    evaluations (mean and SD over runs), on a log episode axis so the first hundred episodes are readable; underneath,
    the share of MARLIN's episodes that started on a plan and of its steps that came from plans."""
    import matplotlib.pyplot as plt

    from marlinkit.plots import PAPER_COLORS

    scenarios = list(config.scenarios)
    fig, axes = plt.subplots(2, len(scenarios), figsize=(1.55 * len(scenarios) + 0.6, 4.2), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [2.2, 1]})
    curve = executed_curve(pooled.episodes) if not pooled.episodes.empty else pd.DataFrame(columns=["plan_source"])
    handles = {}
    for column, scenario in enumerate(scenarios):
        top, bottom = axes[0][column], axes[1][column]
        for system in (PAPER_MARL, "MARL", "MARLIN"):
            source = plan_source if system == "MARLIN" else config.plan_sources[0]
            data = curve[(curve.plan_source == source) & (curve.scenario == scenario) & (curve.system == system)]
            if not data.empty:
                _draw_system(top, bottom, system, data, pooled, source, scenario, handles)
        _format_column(top, bottom, column, scenario, config.episodes, handles)
    lines = list(handles.values()) + [line for line in axes[1][0].get_lines() if line.get_label().startswith("MARLIN:")]
    if not any(label.startswith("MARLIN") for label in handles):
        fig.text(0.5, 0.36, f"no MARLIN run with plan source {plan_source} finished yet", ha="center", fontsize=9,
                 color=PAPER_COLORS["MARLIN"], bbox={"facecolor": "white", "lw": 0})
    fig.suptitle(f"MARLIN under the authors' switch and copies (MARLIN 1 copy, MARL 6); {source_label}", fontsize=8)
    fig.legend(handles=lines, loc="lower center", ncol=2, fontsize=6, frameon=False, bbox_to_anchor=(0.5, 0.07))
    fig.tight_layout(rect=(0, 0.22, 1, 1))
    return fig
