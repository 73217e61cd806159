"""Runners for the negotiation notebooks: LLM-only trials per scenario (Fig. 3 boxplots) and Fig. 2.

Every LLM call goes through a transcript cache under ``data/transcripts/``: committed
transcripts replay without the model; a miss is an error unless recording (``MARLINKIT_RECORD=1``),
when it calls the model and is recorded. Results are tidy rows saved with the run store, one run per preset
and backend; the plans' full transcripts are saved next to them as JSON.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import numpy as np
import pandas as pd

from marlinkit import paths, presets
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.llm import config as llm_config
from marlinkit.llm.cache import transcript_context
from marlinkit.marlin.negotiation import Negotiation, NegotiationConfig, greedy_robots
from marlinkit.paper_values import AUTHORS_LLM_ONLY
from marlinkit.runs import ResultStore, run_name
from marlinkit.files import atomic_write_text, read_json

TRANSCRIPT_PURPOSE = "llm_only"


def negotiation_config(settings: dict[str, Any]) -> NegotiationConfig:
    """The ``NegotiationConfig`` fields a preset section sets (the rest keep the paper's values)."""
    names = {f.name for f in fields(NegotiationConfig)}
    return NegotiationConfig(**{k: v for k, v in settings.items() if k in names})


def negotiator(settings: dict[str, Any], llm: str | None = None, purpose: str = TRANSCRIPT_PURPOSE) -> Negotiation:
    """The negotiation plan source a preset section describes, behind its transcript cache.

    MARLIN training plugs it in as ``marlin.run_grid(..., source=negotiator(settings, purpose="marlin"))``.
    """
    backend = llm_config.cached_backend(llm or settings["llm"], purpose, record=settings.get("record"),
                                        script=greedy_robots, model="greedy-robots")
    return Negotiation(backend, negotiation_config(settings))


def trial_seed(base: int, scenario: str, trial: int) -> int:
    return int(np.random.SeedSequence([base, trial, *scenario.encode()]).generate_state(1)[0] % 2**31)


def _run_name(backend) -> str:
    return run_name("llm_only", llm_config.slug(backend.name), llm_config.slug(backend.model))


def run_llm_only(preset: str, llm: str | None = None, progress: bool = True, **overrides: Any) -> pd.DataFrame:
    """LLM-only performance: ``trials`` negotiated plans per scenario from the start positions."""
    settings = presets.get(preset, "llm_only", **overrides)
    source = negotiator(settings, llm)
    backend = source.backend
    run_config = {**settings, "llm": llm_config.label(backend)}
    store = ResultStore(paths.results_dir("marlin", preset))
    name = _run_name(backend)

    def compute() -> pd.DataFrame:
        rows, transcripts = [], {}
        for trial in range(settings["trials"]):  # trial-major: an interrupted recording covers every scenario
            for scenario in settings["scenarios"]:
                layout = get_layout(scenario)
                seed = trial_seed(settings["seed"], scenario, trial)
                with transcript_context(run=f"{name} {scenario} trial {trial}", preset=preset):
                    plan = source.make_plan(layout, np.array(layout.starts), core.EPISODE_STEPS, seed=seed)
                stats = {k: v for k, v in plan.stats.items() if not isinstance(v, dict)}
                rows.append({"scenario": scenario, "trial": trial, "seed": seed, "performance": plan.performance,
                             "plan": " ".join(f"{a}{b}" for a, b in plan.actions.tolist()), **stats})
                transcripts[f"{scenario}/{trial}"] = plan.transcript
                if progress:
                    print(f"{scenario} trial {trial}: performance {plan.performance:.3f}, {stats['llm_calls']} calls, "
                          f"{stats['llm_seconds']:.0f} s of LLM time", flush=True)
        table = pd.DataFrame(rows)
        atomic_write_text(store.root / f"{name}.transcripts.json", json.dumps(transcripts, indent=1))
        return table

    path = getattr(backend, "path", None)  # None: a script, not a recorded model
    return store.cached(name, run_config, compute, llm=llm_config.label(backend), transcript_file=path and str(path))


def latest_run(preset: str, llm: str | None = None) -> tuple[str, dict[str, Any]]:
    """Name and sidecar of the LLM-only run of ``preset`` with that backend (after ``run_llm_only``)."""
    settings = presets.get(preset, "llm_only")
    name = _run_name(llm_config.make_backend(llm or settings["llm"]))
    return name, ResultStore(paths.results_dir("marlin", preset)).load_sidecar(name)


def load_transcripts(preset: str, table_name: str) -> dict[str, list[dict]]:
    return read_json(paths.results_dir("marlin", preset) / f"{table_name}.transcripts.json")


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
        ax.scatter(np.full(len(values), i) + np.linspace(-0.08, 0.08, len(values)), values, s=12, color="#7f7f7f", zorder=3)
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
    out["format_kept"] = out.pop("format_ok") / out.pop("replies")
    out["fallback_rate"] = out.pop("fallbacks") / out.pop("moves")
    out["paper_llama31_8b"] = out["scenario"].map(AUTHORS_LLM_ONLY)
    return out
