"""The LLM-only experiment: negotiated plans per scenario from the start positions (Fig. 3's LLM-only boxes, Fig. 2).

``run(cfg)`` plays ``cfg.trials`` plans per scenario through :mod:`marlinkit.marlin.llm_trials` (the transcript cache,
one run per preset and backend, the plans' full transcripts saved beside the table as JSON).
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np
import pandas as pd

from marlinkit.config_fields import label, required_preset
from marlinkit.marlin import llm_trials
from marlinkit.paper_values import AUTHORS_LLM_ONLY
from marlinkit.plots import Provenance
from marlinkit.result import Result

#: The experiment's section name.
EXPERIMENT = "llm_only"


@dataclass(frozen=True)
class Config(llm_trials.Trials):
    """The ``llm_only`` section: negotiated plans from the start positions, per scenario (Fig. 3's LLM-only boxes
    and Algorithm 1's threshold)."""

    preset: str | None = label()
    """The preset whose MARLIN results folder holds the run (a label: not part of the run's key)."""
    progress: bool = label(True)
    """Print a line per trial as it is played (a label)."""


def run(cfg: Config) -> Result:
    """LLM-only performance: ``trials`` negotiated plans per scenario from the start positions, saved under
    ``cfg.preset``'s MARLIN results (``data/results/marlin/<preset>/``). Table ``trials``: one row per scenario and
    trial (performance, the plan, the negotiation's statistics)."""
    preset = required_preset(cfg)
    played = llm_trials.play(cfg, preset, cfg.progress)
    return Result(EXPERIMENT, preset, cfg, {"trials": played.table}, played.paths, provenance(cfg, preset, played.llm))


def provenance(config: Config, preset: str, llm: str) -> Provenance:
    """The LLM-only footer: the LLM; the negotiation protocol against the paper's in its details."""
    return Provenance(preset, engine="corridor core (numpy)", source=f"LLM {llm}",
                      details={"protocol": f"{config.trials} trial(s), <= {config.max_moves} moves, "
                                           f"{config.max_rounds} round(s)/move, {config.max_new_tokens} tokens (paper: "
                                           "50 trials, 50 moves, 5 rounds, 300 tokens, Llama 3.1 8B)"})


def plan_statistics(row: pd.Series) -> pd.DataFrame:
    """One negotiation's counts as a two-column table (the statistics beside Fig. 2)."""
    keys = ["performance", "moves", "llm_calls", "replies", "format_ok", "corrections", "parse_failures",
            "forced_queries", "fallbacks", "agreements", "invalid_moves", "prompt_tokens", "completion_tokens",
            "llm_seconds", "cached_calls"]
    return pd.DataFrame({"statistic": keys, "value": [row[k] for k in keys]})


def plot_llm_only(table: pd.DataFrame, summary_table: pd.DataFrame):
    """Boxplots of LLM-only performance per scenario, with the paper's Llama 3.1 8B values marked."""
    import matplotlib.pyplot as plt

    order = list(summary_table["scenario"])
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    data = [table.loc[table.scenario == s, "performance"].to_numpy() for s in order]
    ax.boxplot(data, tick_labels=[s.replace("_", "\n") for s in order], widths=0.5)
    for i, values in enumerate(data, 1):
        ax.scatter(np.full(len(values), i) + np.linspace(-0.08, 0.08, len(values)), values, s=12, color="#7f7f7f",
                   zorder=3)
    ax.scatter(range(1, len(order) + 1), [AUTHORS_LLM_ONLY.get(s, np.nan) for s in order], marker="x", color="#d62728",
               zorder=4, label="paper, Llama 3.1 8B (authors' code)")
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("LLM-only performance")
    ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    return fig


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per-scenario LLM-only performance (what Algorithm 1's threshold reads) and negotiation costs."""
    grouped = table.groupby("scenario", sort=False)
    out = grouped.agg(trials=("performance", "size"), llm_only_performance=("performance", "mean"),
                      median=("performance", "median"), llm_calls=("llm_calls", "mean"),
                      completion_tokens=("completion_tokens", "mean"), llm_seconds=("llm_seconds", "mean"),
                      format_ok=("format_ok", "sum"), replies=("replies", "sum"),
                      fallbacks=("fallbacks", "sum"), moves=("moves", "sum")).reset_index()
    out["format kept (% of replies)"] = 100 * out.pop("format_ok") / out.pop("replies")
    out["fallbacks (% of moves)"] = 100 * out.pop("fallbacks") / out.pop("moves")
    out["paper_llama31_8b"] = out["scenario"].map(AUTHORS_LLM_ONLY)
    return out
