"""LLM-only trials: negotiated plans from the start positions, per corridor, behind the transcript cache.

The pieces the LLM-only experiment (:mod:`marlinkit.marlin.llm_only`), Fig. 3's training with an LLM plan source
(:mod:`marlinkit.marlin.fig3_training`, Algorithm 1's threshold) and Fig. 6 (the negotiation protocol) share. Every LLM
call goes through a transcript cache under ``data/transcripts/``: committed transcripts replay without the model; a
miss is an error unless recording (``MARLINKIT_RECORD=1``), when it calls the model and is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from marlinkit import paths
from marlinkit.config_fields import key_fields
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, get_layout
from marlinkit.files import atomic_write_text, read_json
from marlinkit.llm import config as llm_config
from marlinkit.llm.cache import transcript_context
from marlinkit.marlin.negotiation import Negotiation, NegotiationConfig, greedy_robots
from marlinkit.runs import ResultStore, run_name

TRANSCRIPT_PURPOSE = "llm_only"


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
    """LLM setting (``marlinkit.llm.config``, checked when the Config is built); None: ``$MARLINKIT_LLM``, else
    smollm2."""

    def __post_init__(self):
        self.negotiation_config()
        if self.llm is not None:
            llm_config.check(self.llm)

    def negotiation_config(self) -> NegotiationConfig:
        return negotiation_config({f.name: getattr(self, f.name) for f in fields(self)})


@dataclass(frozen=True)
class Trials(NegotiationLimits):
    """Negotiated plans from the start positions, per scenario: a negotiation protocol, its corridors and trials."""

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
            raise ValueError(f"scenarios must be a non-empty subset of {list(LAYOUT_NAMES)}, "
                             f"got {list(self.scenarios)}")
        if self.trials < 1:
            raise ValueError(f"trials must be >= 1, got {self.trials}")


def negotiator(limits: NegotiationLimits, llm: str | None = None, purpose: str = TRANSCRIPT_PURPOSE,
               record: bool | None = None) -> Negotiation:
    """The negotiation plan source a preset section describes, behind its transcript cache.

    MARLIN training plugs it in as ``grid.run_grid(..., source=negotiator(config, purpose="marlin_training"))``.
    """
    backend = llm_config.cached_backend(llm or limits.llm, purpose, record=record,
                                        script=greedy_robots, model="greedy-robots")
    return Negotiation(backend, limits.negotiation_config())


def trial_seed(base: int, scenario: str, trial: int) -> int:
    return int(np.random.SeedSequence([base, trial, *scenario.encode()]).generate_state(1)[0] % 2**31)


def trials_run_name(backend) -> str:
    """The run name of the LLM-only trials with ``backend`` (one run per preset and backend)."""
    return run_name("llm_only", llm_config.slug(backend.name), llm_config.slug(backend.model))


@dataclass(frozen=True)
class Played:
    """LLM-only trials as saved: the table, the files behind it and the LLM's label."""

    table: pd.DataFrame
    paths: tuple[Path, ...]
    llm: str


def play(trials: Trials, preset: str, progress: bool = True) -> Played:
    """The trials of ``trials``, computed or loaded from ``preset``'s MARLIN results
    (``data/results/marlin/<preset>/``): one row per scenario and trial (performance, the plan, the negotiation's
    statistics); the plans' full transcripts are saved beside the table as JSON. Label fields of ``trials``
    (``config_fields.LABEL``) are not in the key."""
    source = negotiator(trials)
    backend = source.backend
    run_config = {**key_fields(trials), "llm": llm_config.label(backend)}
    store = ResultStore(paths.results_dir("marlin", preset))
    name = trials_run_name(backend)

    def compute() -> pd.DataFrame:
        rows, transcripts = [], {}
        for trial in range(trials.trials):  # trial-major: an interrupted recording covers every scenario
            for scenario in trials.scenarios:
                rows.append(_trial(source, scenario, trial, trials.seed, f"{name} {scenario} trial {trial}", preset,
                                   transcripts, progress))
        atomic_write_text(store.root / f"{name}.transcripts.json", json.dumps(transcripts, indent=1))
        return pd.DataFrame(rows)

    path = getattr(backend, "path", None)  # None: a script, not a recorded model
    table = store.cached(name, run_config, compute, llm=llm_config.label(backend), transcript_file=path and str(path))
    written = [store.table_path(name), store.sidecar_path(name), store.root / f"{name}.transcripts.json",
               *([path] if path else [])]
    return Played(table, tuple(Path(p) for p in written), store.load_sidecar(name)["llm"])


def _trial(source: Negotiation, scenario: str, trial: int, base_seed: int, run: str, preset: str,
           transcripts: dict, progress: bool) -> dict[str, Any]:
    """One negotiated plan from the start positions: its row (its transcript goes into ``transcripts``)."""
    layout = get_layout(scenario)
    seed = trial_seed(base_seed, scenario, trial)
    with transcript_context(run=run, preset=preset):
        plan = source.make_plan(layout, np.array(layout.starts), core.EPISODE_STEPS, seed=seed)
    stats = {k: v for k, v in plan.stats.items() if not isinstance(v, dict)}
    transcripts[f"{scenario}/{trial}"] = plan.transcript
    if progress:
        print(f"{scenario} trial {trial}: performance {plan.performance:.3f}, {stats['llm_calls']} calls, "
              f"{stats['llm_seconds']:.0f} s of model time as recorded (a replay takes none)", flush=True)
    return {"scenario": scenario, "trial": trial, "seed": seed, "performance": plan.performance,
            "plan": " ".join(f"{a}{b}" for a, b in plan.actions.tolist()), **stats}


def latest_run(trials: Trials, preset: str) -> tuple[str, dict[str, Any]]:
    """Name and sidecar of the LLM-only run of ``trials`` under ``preset`` (after it was played)."""
    name = trials_run_name(llm_config.make_backend(trials.llm))
    return name, ResultStore(paths.results_dir("marlin", preset)).load_sidecar(name)


def load_transcripts(preset: str, table_name: str) -> dict[str, list[dict]]:
    return read_json(paths.results_dir("marlin", preset) / f"{table_name}.transcripts.json")
