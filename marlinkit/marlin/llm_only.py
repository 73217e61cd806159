"""Runners for the negotiation notebooks: LLM-only trials per scenario (Fig. 3 boxplots) and Fig. 2.

Every LLM call goes through a transcript cache under ``data/transcripts/``: committed
transcripts replay without the model; a miss is an error unless recording (``MARLINKIT_RECORD=1``),
when it calls the model and is recorded. Results are tidy rows saved with the run store, one run per preset
and backend; the plans' full transcripts are saved next to them as JSON.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from marlinkit import paths
from marlinkit.plots import Provenance
from marlinkit.result import Result
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, get_layout
from marlinkit.llm import config as llm_config
from marlinkit.llm.cache import transcript_context
from marlinkit.marlin.negotiation import Negotiation, NegotiationConfig, greedy_robots
from marlinkit.paper_values import AUTHORS_LLM_ONLY
from marlinkit.runs import ResultStore, run_name
from marlinkit.files import atomic_write_text, read_json

TRANSCRIPT_PURPOSE = "llm_only"
#: The experiment's section name.
EXPERIMENT = "llm_only"


def negotiation_config(values: Mapping[str, Any]) -> NegotiationConfig:
    """The ``NegotiationConfig`` fields among ``values`` (the rest keep the paper's values)."""
    names = {f.name for f in fields(NegotiationConfig)}
    return NegotiationConfig(**{k: v for k, v in values.items() if k in names})


@dataclass(frozen=True)
class NegotiationLimits:
    """The negotiation protocol of a preset (shared by the LLM-only trials and Fig. 6); defaults are the authors'."""

    max_moves: int = 50
    """Moves negotiated per plan at most; afterwards the robots wait (authors: 50, the whole episode)."""
    max_rounds: int = 5
    """Rounds per move, each robot speaking once per round (authors: 5)."""
    max_new_tokens: int = 300
    """Reply length cap in tokens (authors: 300)."""
    stall_limit: int = 0
    """Stop after this many moves in a row that changed no position (0: never, the authors' protocol)."""
    llm: str | None = None
    """LLM setting (``marlinkit.llm.config``); None: ``$MARLINKIT_LLM``, else smollm2."""

    def __post_init__(self):
        negotiation_config(dataclasses.asdict(self))

    def negotiation_config(self) -> NegotiationConfig:
        return negotiation_config(dataclasses.asdict(self))


@dataclass(frozen=True)
class Config(NegotiationLimits):
    """The ``llm_only`` section: negotiated plans from the start positions, per scenario (Fig. 3's LLM-only boxes
    and Algorithm 1's threshold)."""

    scenarios: tuple[str, ...] = tuple(LAYOUT_NAMES)
    """Corridor layouts (those of ``fig3_training``: Algorithm 1 reads their LLM-only values)."""
    trials: int = 50
    """Plans per scenario (paper: 50)."""
    seed: int = 0
    """Base seed of the trials' sampling seeds (``trial_seed``)."""

    def __post_init__(self):
        object.__setattr__(self, "scenarios", tuple(self.scenarios))
        super().__post_init__()
        unknown = sorted(set(self.scenarios) - set(LAYOUT_NAMES))
        if unknown or not self.scenarios:
            raise ValueError(f"scenarios must be a non-empty subset of {list(LAYOUT_NAMES)}, got {list(self.scenarios)}")
        if self.trials < 1:
            raise ValueError(f"trials must be >= 1, got {self.trials}")


def negotiator(limits: NegotiationLimits, llm: str | None = None, purpose: str = TRANSCRIPT_PURPOSE,
               record: bool | None = None) -> Negotiation:
    """The negotiation plan source a preset section describes, behind its transcript cache.

    MARLIN training plugs it in as ``grid.run_grid(..., source=negotiator(config, purpose="marlin_training"))``
    (``fig3_training.run``).
    """
    backend = llm_config.cached_backend(llm or limits.llm, purpose, record=record,
                                        script=greedy_robots, model="greedy-robots")
    return Negotiation(backend, limits.negotiation_config())


def trial_seed(base: int, scenario: str, trial: int) -> int:
    return int(np.random.SeedSequence([base, trial, *scenario.encode()]).generate_state(1)[0] % 2**31)


def _run_name(backend) -> str:
    return run_name("llm_only", llm_config.slug(backend.name), llm_config.slug(backend.model))


def run(config: Config, preset: str, llm: str | None = None, progress: bool = True) -> Result:
    """LLM-only performance: ``trials`` negotiated plans per scenario from the start positions, saved under
    ``preset``'s MARLIN results (``data/results/marlin/<preset>/``). Table ``trials``: one row per scenario and
    trial (performance, the plan, the negotiation's statistics)."""
    source = negotiator(config, llm)
    backend = source.backend
    run_config = {**dataclasses.asdict(config), "llm": llm_config.label(backend)}
    store = ResultStore(paths.results_dir("marlin", preset))
    name = _run_name(backend)

    def compute() -> pd.DataFrame:
        rows, transcripts = [], {}
        for trial in range(config.trials):  # trial-major: an interrupted recording covers every scenario
            for scenario in config.scenarios:
                layout = get_layout(scenario)
                seed = trial_seed(config.seed, scenario, trial)
                with transcript_context(run=f"{name} {scenario} trial {trial}", preset=preset):
                    plan = source.make_plan(layout, np.array(layout.starts), core.EPISODE_STEPS, seed=seed)
                stats = {k: v for k, v in plan.stats.items() if not isinstance(v, dict)}
                rows.append({"scenario": scenario, "trial": trial, "seed": seed, "performance": plan.performance,
                             "plan": " ".join(f"{a}{b}" for a, b in plan.actions.tolist()), **stats})
                transcripts[f"{scenario}/{trial}"] = plan.transcript
                if progress:
                    print(f"{scenario} trial {trial}: performance {plan.performance:.3f}, {stats['llm_calls']} calls, "
                          f"{stats['llm_seconds']:.0f} s of model time as recorded (a replay takes none)", flush=True)
        table = pd.DataFrame(rows)
        atomic_write_text(store.root / f"{name}.transcripts.json", json.dumps(transcripts, indent=1))
        return table

    path = getattr(backend, "path", None)  # None: a script, not a recorded model
    table = store.cached(name, run_config, compute, llm=llm_config.label(backend), transcript_file=path and str(path))
    written = [store.table_path(name), store.sidecar_path(name), store.root / f"{name}.transcripts.json", *([path] if path else [])]
    return Result(EXPERIMENT, preset, config, {"trials": table}, tuple(written),
                  provenance(config, preset, store.load_sidecar(name)["llm"]))


def provenance(config: Config, preset: str, llm: str) -> Provenance:
    """The LLM-only footer: the LLM; the negotiation protocol against the paper's in its details."""
    return Provenance(preset, engine="corridor core (numpy)", source=f"LLM {llm}",
                      details={"protocol": f"{config.trials} trial(s), <= {config.max_moves} moves, {config.max_rounds} round(s)/move, "
                                           f"{config.max_new_tokens} tokens (paper: 50 trials, 50 moves, 5 rounds, 300 tokens, Llama 3.1 8B)"})


def latest_run(config: Config, preset: str, llm: str | None = None) -> tuple[str, dict[str, Any]]:
    """Name and sidecar of the LLM-only run of ``config`` under ``preset`` with that backend (after ``run``)."""
    name = _run_name(llm_config.make_backend(llm or config.llm))
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
    out["format kept (% of replies)"] = 100 * out.pop("format_ok") / out.pop("replies")
    out["fallbacks (% of moves)"] = 100 * out.pop("fallbacks") / out.pop("moves")
    out["paper_llama31_8b"] = out["scenario"].map(AUTHORS_LLM_ONLY)
    return out
