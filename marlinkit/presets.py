"""The three run presets, defined once and read by the Makefile, the CLI and every notebook.

* ``smoke``: seconds per notebook; what nbval runs in ``make test``.
* ``quick``: the default of ``make figures``; the whole collection fits in ~30 min on 2 CPU cores.
* ``paper``: the papers' full protocol (hours; GPU and a Llama 3.1 endpoint where the paper had them).

Every LLM call replays strictly from ``data/transcripts/`` (a miss is an error); recording is the
explicit ``MARLINKIT_RECORD=1`` (``RECORD=1 make figures``), never a preset default. Only the
workshop's teaching session (``workshop.negotiation.record``) records, because talking to the model
live is its point.

Each preset has one section per experiment. A notebook asks for its section and may override
single values from its papermill parameters: ``presets.get(PRESET, "fig3_training", seeds=[0])`` gives that
experiment's frozen ``Config`` dataclass (``config_class``: fields documented there, bad values refused by field).
Section names are the experiments' module names. The presets sit above the experiments: the command line, the
notebooks and the Makefile resolve a preset here and hand the ``Config`` to the experiment's ``run``; no experiment
imports this module. A nested setting is written here as a mapping of its dataclass's fields, which the ``Config``
builds (e.g. ``mappo``: the ``MAPPOConfig`` settings that differ from the authors').

``workers`` means the same in every section: how many jobs run at once, through
:func:`marlinkit.executors.run_jobs` (at least 1). With 1, jobs run one after another in this
process, except where the experiment gives each job a fresh process (the MAESTRO runs: libsumo
holds one simulation per process).
"""

from __future__ import annotations

import copy
import dataclasses
import os
from types import ModuleType
from typing import Any

from marlinkit.algos.maddpg_overrides import PAPER_MADDPG  # the MAESTRO paper preset's MADDPG
from marlinkit.errors import ParameterError

PRESET_NAMES = ("smoke", "quick", "paper")
#: Environment variables that override the executor settings of every section that has them
#: (results are identical on either executor, so they stay out of the run configurations).
EXECUTOR_VARIABLES = {"executor": "MARLINKIT_EXECUTOR", "ray_address": "MARLINKIT_RAY_ADDRESS"}
DEFAULT_PRESET = "quick"

_SCENARIOS = ["single_slot", "symmetrical_two_slot", "asymmetrical_two_slot", "two_path", "maze_like"]

#: Negotiation limits per preset, shared by the LLM-only runs and Fig. 6 (one protocol for both).
_SMOKE_NEGOTIATION = {"max_moves": 2, "max_rounds": 1, "max_new_tokens": 80, "stall_limit": 3, "llm": "smollm2"}
_QUICK_NEGOTIATION = {"max_moves": 8, "max_rounds": 1, "max_new_tokens": 80, "stall_limit": 3, "llm": None}
#: The authors' protocol: 50 moves, 5 rounds, 300 tokens, no stall limit.
_PAPER_NEGOTIATION = {"max_moves": 50, "max_rounds": 5, "max_new_tokens": 300, "stall_limit": 0, "llm": None}

#: The workshop notebooks' default preset, for a class on 2-core laptops: each notebook shows what its text describes
#: (a learning curve above the random floor, MARLIN with the exact planner apart from MARL) in the minutes the workshop
#: README measured. smollm2's replies to the default cells and to the exercises' suggested changes replay from the
#: committed ``data/transcripts/workshop_workshop__*.jsonl``; any other call (a changed prompt) goes to the model live
#: and is recorded to the git-ignored ``workshop_workshop_local__*.jsonl``. Only the ``workshop`` section has it.
WORKSHOP_PRESET = "workshop"
#: The presets a workshop notebook accepts (its ``PRESET`` parameter).
WORKSHOP_PRESETS = (WORKSHOP_PRESET, *PRESET_NAMES)

#: The workshop notebooks at the session's longer sizes: minutes each, smollm2 called live (``get`` hands out copies).
_WORKSHOP_SESSION = {
    "scenario": "single_slot",
    "seed": 0,
    "training": {"episodes": 160, "n_envs": 15, "checkpoints": [20, 80, 160], "eval_runs": 50, "mappo": {}},
    # record: True: the session talks to smollm2 live and records the calls (the one section that records by itself)
    "negotiation": {"max_moves": 3, "max_rounds": 1, "max_new_tokens": 80, "stall_limit": 2, "llm": None,
                    "record": True},
    "marlin": {"episodes": 100, "n_envs": 4, "checkpoints": [20, 50, 100], "eval_runs": 50, "llm_only_trials": 3,
               "plan_budget": 8, "mappo": {}},
}
#: The ``workshop`` preset's one section: the session's sizes with a shorter MAPPO training (half of it: the curve has
#: risen well above the random floor by episode 80) and fewer negotiations in notebook 04 (2 LLM-only trials, 2 new
#: plans per training: with 4 copies that start alike, one plan serves every copy's forced plan episodes).
_WORKSHOP_CLASS = {**_WORKSHOP_SESSION,
                   "training": {"episodes": 80, "n_envs": 15, "checkpoints": [20, 40, 80], "eval_runs": 50, "mappo": {}},
                   "marlin": {**_WORKSHOP_SESSION["marlin"], "llm_only_trials": 2, "plan_budget": 2}}

def _marlin_grid(trainer: str, workers: int, mappo: dict[str, Any]) -> dict[str, Any]:
    """The settings every MARLIN grid section shares (Fig. 3 / Table I, Fig. 5, the dynamic environment)."""
    return {
        "trainer": trainer,  # grid.TRAINERS: "one-at-a-time" (one mappo.train per run) or "batched" (stacked runs, marlin.batched)
        "plan_source": "surrogate",  # MARLIN's plans: grid.PLAN_SOURCES (surrogate: the calibrated surrogate planner, not an LLM)
        "workers": workers,
        "executor": "local",  # "ray": the same runs as Ray tasks (optional extra), see marlinkit.executors
        "ray_address": None,  # None: start a local Ray instance; "auto" or "ray://host:10001": a cluster
        "switch_rule": "paper",  # Algorithm 1 as printed; "code": the authors' code variant (algorithm1.SwitchConfig)
        "llm_only_performance": None,  # None: the authors' Llama 3.1 8B LLM-only values (paper_values.AUTHORS_LLM_ONLY)
        "mappo": mappo,  # MAPPOConfig overrides (marlinkit.algos.mappo)
    }


#: Seconds per notebook: one run at a time, one worker, short MAPPO updates.
_SMOKE_GRID = _marlin_grid("one-at-a-time", 1, {"update_epochs": 2, "steps_per_iteration": 100})
#: The quick and paper presets: each worker's runs as one stacked computation, the paper's MAPPO.
_GRID = _marlin_grid("batched", 2, {})

#: The fidelity notebook's variants: one of our departures from the authors' RLlib set-up undone at a time
#: (settings of the fig3_training grid; see marlinkit.marlin.fidelity.Variant).
_FIDELITY_VARIANTS = [{"name": "6 copies", "n_envs": 6}, {"name": "9 copies", "n_envs": 9}, {"name": "torch init", "init": "torch"}]

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "smoke": {
        "fig5_hardware": {  # seconds: a few episodes, checkpoints 1, 3, 5
            "seeds": [0],
            **_SMOKE_GRID,
            "episodes": 6,
            "n_envs": 2,
            "checkpoint_start": 1,
            "checkpoint_every": 2,
            "eval_runs": 5,
            "llm_only_trials": 5,
            "actuation_noise": {"p_fail": 0.05, "p_slip": 0.05},
        },
        "dynamic_env": {  # seconds: the layout changes after episode 6 of 12
            "seeds": [0],
            **_SMOKE_GRID,
            "scenario": "single_slot",
            "new_layout": "maze_like",
            "change_episode": 6,
            "episodes": 12,
            "n_envs": 2,
            "eval_runs": 5,
        },
        "paper_audit": {"bootstrap_resamples": 1000, "bootstrap_seed": 0, "rounding_samples": 20},
        "fidelity": {"seeds": [0], "variants": _FIDELITY_VARIANTS},  # seconds: the smoke grid's MARL runs
        "fig1_scenarios": {"scenarios": _SCENARIOS},
        "llm_only": {
            "scenarios": ["single_slot", "two_path"],  # the fig3_training scenarios: Algorithm 1 reads their LLM-only values
            "trials": 1,
            "seed": 0,
            **_SMOKE_NEGOTIATION,
        },
        "fig6_scalability": {  # seconds: one episode, one 2-move negotiation replayed from the committed transcript
            "systems": ["llm", "exact"],
            "agents": [4],
            "trials": 1,
            "seed": 0,
            "max_steps": 150,
            "exit_bias": 0.25,
            "cooldown": 5,
            "max_negotiations": 1,
            **_SMOKE_NEGOTIATION,
        },
        "authors_protocol": {  # seconds: the authors' switch and copies on two corridors, a few episodes
            "scenarios": ["single_slot", "two_path"], "marlin_seeds": [0, 1], "marl_seeds": [0], "episodes": 12,
            "checkpoints": [6, 12], "eval_runs": 5, "llm_only_trials": 5, "mappo": {"update_epochs": 2, "steps_per_iteration": 100},
        },
        "fig3_training": {
            "scenarios": ["single_slot", "two_path"],
            "seeds": [0],
            **_SMOKE_GRID,
            "batch_runs": None,  # most runs per batch of the batched trainer (None: one batch per worker)
            "plan_source": "llm",  # MARLIN's plans: grid.PLAN_SOURCES (llm: the llm_only section's negotiation, replayed)
            "episodes": 8,
            "n_envs": 4,
            "checkpoints": [2, 4, 8],
            "eval_runs": 10,
            "llm_only_trials": 5,
            "plan_budget": 1,  # new LLM negotiations per training, plan_source "llm" only (None: the paper's unlimited re-planning)
            "mappo": {"update_epochs": 4, "steps_per_iteration": 400},
        },
        "traffic_baselines": {  # seconds: short episodes in this process
            "engines": ["sumo", "cityflow"],
            "episode_lengths": [120],
            "difficulties": [0.3, 0.65, 1.0],
            "difficulty_seeds": [0],
            "difficulty_seconds": 120,
            "max_pressure_min_green_s": 10,
            "workers": 1,
        },
        "ablation": {  # ~2-3 minutes, not seconds (SUMO starts once per run): scripted architect, tiny episodes
            "seeds": [200, 300],
            "ablations": ["A2", "A7", "A8"],
            "episodes": 4,
            "episode_seconds": 120,
            "eval_every": 2,
            "final_window": 2,
            "workers": 2,
            "executor": "local",  # "ray": the same runs as Ray tasks (optional extra), see marlinkit.executors
            "ray_address": None,  # None: start a local Ray instance; "auto" or "ray://host:10001": a cluster
            "checkpoint_every": 0,  # resume per finished run only
            "llm": "scripted",
            "maddpg": {"batch_size": 32, "learning_starts": 32, "update_every": 15},
        },
        "workshop": {  # notebooks/workshop at nbval size: seconds each, smollm2 replayed from data/transcripts/workshop_smoke__*
            "scenario": "single_slot",
            "seed": 0,
            "training": {"episodes": 12, "n_envs": 2, "checkpoints": [6, 12], "eval_runs": 10,
                         "mappo": {"update_epochs": 2, "steps_per_iteration": 100}},
            "negotiation": {"max_moves": 2, "max_rounds": 1, "max_new_tokens": 80, "stall_limit": 2, "llm": "smollm2",
                            "record": None},  # None: replay strictly unless $MARLINKIT_RECORD
            "marlin": {"episodes": 12, "n_envs": 2, "checkpoints": [6, 12], "eval_runs": 10, "llm_only_trials": 1,
                       "plan_budget": 3, "mappo": {"update_epochs": 2, "steps_per_iteration": 100}},
        },
    },
    "quick": {
        "fig5_hardware": {  # ~3.5 min on 2 idle cores (190 CPU-s per training): the paper's schedule scaled by 1/10 (checkpoints 10, 35, ..., 160)
            "seeds": [0, 1, 2],
            **_GRID,
            "episodes": 160,
            "n_envs": 15,
            "checkpoint_start": 10,
            "checkpoint_every": 25,
            "eval_runs": 50,
            "llm_only_trials": 50,
            "actuation_noise": {"p_fail": 0.05, "p_slip": 0.05},
        },
        "dynamic_env": {  # ~3 min on 2 idle cores (150 CPU-s per training): the change after episode 60 of 120
            "seeds": [0, 1, 2],
            **_GRID,
            "scenario": "single_slot",
            "new_layout": "maze_like",
            "change_episode": 60,
            "episodes": 120,
            "n_envs": 15,
            "eval_runs": 50,
        },
        "paper_audit": {"bootstrap_resamples": 10000, "bootstrap_seed": 0, "rounding_samples": 200},
        "fidelity": {"seeds": [0], "variants": _FIDELITY_VARIANTS},  # ~7 CPU-min: 15 short MARL trainings, one seed
        "fig1_scenarios": {"scenarios": _SCENARIOS},
        "llm_only": {
            "scenarios": _SCENARIOS,
            "trials": 2,
            "seed": 0,
            **_QUICK_NEGOTIATION,
        },
        "fig6_scalability": {  # random walk biased to the exit; <= 1 negotiation of <= 8 moves per episode: 69 smollm2 calls to record (26 min on the loaded 2-core machine)
            "systems": ["llm", "exact"],
            "agents": [2, 4, 6, 8],
            "trials": 2,
            "seed": 0,
            "max_steps": 400,
            "exit_bias": 0.2,
            "cooldown": 5,
            "max_negotiations": 1,
            **_QUICK_NEGOTIATION,
        },
        "authors_protocol": {  # minutes: the authors' switch and copies, 120 episodes (no policy-only tail)
            "scenarios": _SCENARIOS, "marlin_seeds": [0, 1, 2], "marl_seeds": [0], "episodes": 120,
            "checkpoints": [20, 60, 120], "eval_runs": 50, "llm_only_trials": 20, "mappo": {},
        },
        "fig3_training": {
            "scenarios": _SCENARIOS,
            "seeds": [0, 1, 2],
            **_GRID,
            "batch_runs": None,  # most runs per batch of the batched trainer (None: one batch per worker)
            "episodes": 120,
            "n_envs": 15,
            "checkpoints": [20, 60, 120],
            "eval_runs": 50,
            "llm_only_trials": 20,
            "plan_budget": 2,  # plan_source "llm" only: smollm2 on CPU takes ~45 s per negotiated plan; the paper re-plans without limit
        },
        "traffic_baselines": {  # the full hour on each engine for both baselines; ~2-3 min on 2 cores
            "engines": ["sumo", "cityflow"],
            "episode_lengths": [360, 3600],
            "difficulties": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
            "difficulty_seeds": [0, 1, 2],
            "difficulty_seconds": 360,
            "max_pressure_min_green_s": 10,
            "workers": 2,
        },
        "ablation": {  # all 12 runs, short: fits the MAESTRO notebooks in ~10 min on 2 cores (LLM replayed)
            "seeds": [200, 300, 400, 500],
            "ablations": ["A2", "A7", "A8"],
            "episodes": 16,
            "episode_seconds": 180,
            "eval_every": 2,
            "final_window": 6,
            "workers": 2,
            "executor": "local",  # "ray": the same runs as Ray tasks (optional extra), see marlinkit.executors
            "ray_address": None,  # None: start a local Ray instance; "auto" or "ray://host:10001": a cluster
            "checkpoint_every": 0,  # resume per finished run only
            "llm": "smollm2",
            "maddpg": {"batch_size": 128, "learning_starts": 360, "update_every": 60},
        },
        "workshop": _WORKSHOP_SESSION,  # the teaching session's sizes (notebooks/workshop/README.md)
    },
    "paper": {
        "fig5_hardware": {  # paper: maze-like, 1600 episodes, checkpoints every 250 from 100 (simulated noise, not robots)
            "seeds": [0, 1, 2, 3, 4],
            **_GRID,
            "episodes": 1600,
            "n_envs": 15,
            "checkpoint_start": 100,
            "checkpoint_every": 250,
            "eval_runs": 50,
            "llm_only_trials": 50,
            "actuation_noise": {"p_fail": 0.05, "p_slip": 0.05},
        },
        "dynamic_env": {  # the authors' extension: maze-like from episode 1001 on
            "seeds": [0, 1, 2, 3, 4],
            **_GRID,
            "scenario": "single_slot",
            "new_layout": "maze_like",
            "change_episode": 1000,
            "episodes": 1600,
            "n_envs": 15,
            "eval_runs": 50,
        },
        "paper_audit": {"bootstrap_resamples": 10000, "bootstrap_seed": 0, "rounding_samples": 2000},
        "fidelity": {"seeds": [0, 1, 2], "variants": _FIDELITY_VARIANTS},  # ~0.8 CPU-h per seed (45 MARL trainings in all)
        "fig1_scenarios": {"scenarios": _SCENARIOS},
        "llm_only": {
            "scenarios": _SCENARIOS,
            "trials": 50,
            "seed": 0,
            **_PAPER_NEGOTIATION,
        },
        "fig6_scalability": {  # the paper's pure random walk, every conflict negotiated with the authors' protocol settings
            "systems": ["llm", "exact"],
            "agents": [2, 4, 6, 8, 10, 12],
            "trials": 10,
            "seed": 0,
            "max_steps": 2000,
            "exit_bias": 0.0,
            "cooldown": 5,
            "max_negotiations": 0,
            **_PAPER_NEGOTIATION,
        },
        "authors_protocol": {  # the authors' switch and copies (MARLIN 1, MARL 6) to 1700 episodes, enough seeds to pool rows as they did
            "scenarios": _SCENARIOS, "marlin_seeds": list(range(10)), "marl_seeds": [0, 1, 2], "episodes": 1700,
            "checkpoints": [100, 850, 1600, 1700], "eval_runs": 50, "llm_only_trials": 50, "mappo": {},
        },
        "fig3_training": {
            "scenarios": _SCENARIOS,
            "seeds": [0, 1, 2, 3, 4],
            **_GRID,
            "batch_runs": 2,  # MARL and MARLIN of one scenario and seed per batch (~0.5 CPU-h): the grid is saved, and resumes, in small pieces
            "episodes": 1600,
            "n_envs": 15,
            "checkpoints": [100, 850, 1600],
            "eval_runs": 50,
            "llm_only_trials": 50,
            "plan_budget": None,
        },
        "traffic_baselines": {
            "engines": ["sumo", "cityflow"],
            "episode_lengths": [360, 3600],
            "difficulties": [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0],
            "difficulty_seeds": [0, 1, 2, 3, 4],
            "difficulty_seconds": 360,
            "max_pressure_min_green_s": 10,
            "workers": 2,
        },
        "ablation": {  # paper Section 5.3: 3 configs x 200 episodes x 360 s, paper MADDPG defaults; the paper's 4 seeds
            # (200-500) + 8 more, the 12 its own power analysis asks for (its Table 4); statistics on 4 and on 12
            "seeds": [200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200, 1300],
            "ablations": ["A2", "A7", "A8"],
            "episodes": 200,
            "episode_seconds": 360,
            "eval_every": 2,
            "final_window": 20,
            "workers": 2,
            "executor": "local",  # "ray": the same runs as Ray tasks (optional extra), see marlinkit.executors
            "ray_address": None,  # None: start a local Ray instance; "auto" or "ray://host:10001": a cluster
            "llm": "smollm2",
            "maddpg": PAPER_MADDPG,  # Lowe et al.'s update cadence, as the paper ran MADDPG
            "checkpoint_every": 10,
        },
        "workshop": _WORKSHOP_SESSION,  # a teaching session has no paper-scale run: the quick sizes
    },
}


def check_preset(preset: str) -> str:
    """Return ``preset`` if it is known, else raise a :class:`~marlinkit.errors.ParameterError` naming the valid ones."""
    if preset not in PRESETS:
        raise ParameterError("PRESET", preset, f"unknown preset; choose one of {', '.join(PRESET_NAMES)}")
    return preset


def experiments() -> dict[str, ModuleType]:
    """Each section's experiment module (a section is named as its module; its ``Config`` is the section's class)."""
    from marlinkit import paper_audit
    from marlinkit.maestro import ablation, traffic_baselines
    from marlinkit.marlin import (authors_protocol, dynamic_env, fidelity, fig1_scenarios, fig3_training, fig5_hardware,
                                  fig6_scalability, llm_only, workshop)

    modules = (fig3_training, fig5_hardware, dynamic_env, llm_only, fig6_scalability, fig1_scenarios, workshop, paper_audit,
               ablation, traffic_baselines, fidelity, authors_protocol)
    return {module.__name__.rsplit(".", 1)[1]: module for module in modules}


def config_class(section: str) -> type:
    """The frozen ``Config`` dataclass of one experiment section (its fields and their docstrings are the reference)."""
    modules = experiments()
    if section not in modules:
        raise ValueError(f"no section {section!r}; known: {sorted(modules)}")
    return modules[section].Config


def get(preset: str, section: str, **overrides: Any):
    """One experiment's ``Config`` under ``preset``, with ``overrides`` applied (None keeps the preset's value).

    A field the experiment does not have raises before any compute, naming it and the known fields, so a
    typo in a notebook parameter is never silently ignored; bad values fail in the dataclass, by field.
    """
    if preset == WORKSHOP_PRESET and section == "workshop":
        sections = {"workshop": _WORKSHOP_CLASS}
    elif section == "workshop" and preset not in PRESETS:
        raise ParameterError("PRESET", preset, f"unknown preset; choose one of {', '.join(WORKSHOP_PRESETS)}")
    else:
        sections = PRESETS[check_preset(preset)]
    if section not in sections:
        raise ValueError(f"preset {preset!r} has no section {section!r}; known: {sorted(sections)}")
    cls = config_class(section)
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ValueError(f"unknown {section} setting(s) {unknown}; known: {sorted(known)}")
    derived = sorted(k for k, v in overrides.items() if v is not None and k in getattr(cls, "DERIVED", ()))
    if derived:
        raise ValueError(f"{section} setting(s) {derived} are derived from the section's other fields, not set: "
                         f"{cls.__name__}.DERIVED in {cls.__module__}")
    values = copy.deepcopy(sections[section])
    for key, variable in EXECUTOR_VARIABLES.items():  # one setting moves every grid to Ray: $MARLINKIT_EXECUTOR=ray
        if key in known and os.environ.get(variable):
            values[key] = os.environ[variable]
    given = {k: v for k, v in overrides.items() if v is not None}
    values.update(given)
    if "preset" in known:  # a label: names the results folder, never a run's key
        values.setdefault("preset", preset)
    named = values.get("negotiation") if "negotiation" in known else None  # a grid negotiating by another preset's protocol
    if isinstance(named, str) and named not in PRESET_NAMES:
        raise ParameterError("NEGOTIATION", named, f"negotiation names a preset: one of {', '.join(PRESET_NAMES)}")
    if "llm_only" in known and values.get("llm_only") is None:  # the grid's negotiation protocol, by preset
        values["llm_only"] = get(named if isinstance(named, str) else preset, "llm_only")
    if "training" in known and values.get("training") is None:  # the Fig. 3 grid a section stands beside
        values["training"] = get(preset, "fig3_training")
    try:
        return cls(**values)
    except ParameterError:
        raise
    except (ValueError, TypeError) as error:  # a notebook parameter PLAN_SOURCE overrides the field plan_source
        named = [k for k in given if k in str(error)]
        if len(named) != 1:
            raise
        raise ParameterError(named[0].upper(), given[named[0]], str(error)) from None


def ablation_config(preset: str, record: bool | None = None, **overrides: Any):
    """The MAESTRO ablation's ``Config``: ``preset``'s ``ablation`` section with ``overrides``; ``record`` None follows
    ``$MARLINKIT_RECORD`` (strict replay). A named ``maddpg_setting`` replaces every MADDPG override, so it is not given
    with ``maddpg``; the preset's own MADDPG named as a setting (paper: "paper") is the preset's runs, not a copy."""
    from marlinkit.llm import config as llm_config

    if overrides.get("maddpg_setting") is not None and "maddpg" in overrides:
        raise ValueError(f"give maddpg_setting={overrides['maddpg_setting']!r} or maddpg={overrides['maddpg']!r}, "
                         "not both: a named setting replaces every MADDPG override")
    cfg = dataclasses.replace(get(preset, "ablation", **overrides), record=llm_config.recording(record))
    if cfg.maddpg_setting is not None and cfg.maddpg == get(preset, "ablation").maddpg:
        cfg = dataclasses.replace(cfg, maddpg_setting=None)
    return cfg
