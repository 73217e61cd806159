"""The MARLIN grid runner: every scenario x system x seed of a preset section, cached per run and resumable.

``run_training`` is what Fig. 3 and Table I read; ``run_grid`` is shared by Fig. 5 and the dynamic environment.
Missing runs go to an executor (local processes or Ray); each run is saved as soon as it finishes.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from marlinkit import executors, paths, presets, runs
from marlinkit.marlin import hardware
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES
from marlinkit.envs.corridor.plans import PlanSource
from marlinkit.llm import config as llm_config
from marlinkit.llm.cache import transcript_context
from marlinkit.marlin.algorithm1 import PLAN, SYSTEMS
from marlinkit.marlin.systems import llm_only_threshold, plan_source_alone, settings_parts, train_system




#: "one-at-a-time": each run in its own job (``mappo.train``); "batched": a worker's runs as one stacked computation
#: (``marlinkit.marlin.batched``; a run's numbers do not depend on its batch partners, but differ from mappo.train's in the last bits).
TRAINERS = ("one-at-a-time", "batched")


class Results(NamedTuple):
    episodes: pd.DataFrame  # one row per episode and copy (all systems)
    evaluations: pd.DataFrame  # one row per checkpoint evaluation run (MARL, MARLIN)


def validate_settings(settings: dict[str, Any]) -> None:
    """Fail before any compute on settings that cannot run."""
    unknown = sorted(set(settings["scenarios"]) - set(LAYOUT_NAMES))
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; choose from {list(LAYOUT_NAMES)}")
    bad = sorted(set(settings.get("systems", SYSTEMS)) - set(SYSTEMS))
    if bad:
        raise ValueError(f"unknown system(s) {bad}; choose from {list(SYSTEMS)}")
    if not all(1 <= c <= settings["episodes"] for c in settings["checkpoints"]):
        raise ValueError(f"checkpoints {settings['checkpoints']} must lie in 1..episodes={settings['episodes']}")
    for key in ("episodes", "n_envs", "eval_runs", "llm_only_trials", "workers"):
        if int(settings[key]) < 1:
            raise ValueError(f"{key} must be >= 1, got {settings[key]}")
    if settings.get("trainer", "one-at-a-time") not in TRAINERS:
        raise ValueError(f"trainer must be one of {TRAINERS}, got {settings['trainer']!r}")
    if settings.get("batch_runs") is not None and int(settings["batch_runs"]) < 1:
        raise ValueError(f"batch_runs must be None (one batch per worker) or >= 1, got {settings['batch_runs']}")
    if settings.get("plan_budget") is not None and int(settings["plan_budget"]) < 1:
        raise ValueError(f"plan_budget must be None (unlimited) or >= 1, got {settings['plan_budget']}")
    settings_parts(settings)
    executors.check_executor(settings.get("executor", "local"), settings["workers"])
    changes = settings.get("layout_schedule") or []
    unknown = sorted({name for _, name in changes} - set(LAYOUT_NAMES))
    if unknown or not all(1 <= int(k) < settings["episodes"] for k, _ in changes):
        raise ValueError(f"layout_schedule {changes} needs [episode, layout] pairs with 1 <= episode < episodes "
                         f"and layouts from {list(LAYOUT_NAMES)}")
    if settings.get("actuation_noise"):
        hardware.ActuationNoise(**settings["actuation_noise"])
    for name in {*settings["scenarios"], *(name for _, name in changes)}:
        llm_only_threshold(settings, name)


def job_config(scenario: str, system: str, seed: int, settings: dict[str, Any], source_name: str) -> dict[str, Any]:
    """Everything that shapes one run's numbers (its cache key)."""
    config, switch = settings_parts(settings)
    base = {"scenario": scenario, "system": system, "seed": seed}
    # Optional settings enter the key only when set, so runs made before they existed stay valid.
    if settings.get("actuation_noise"):
        base["actuation_noise"] = dict(settings["actuation_noise"])
    if system == "LLM-only":
        return {**base, "trials": settings["llm_only_trials"], "plan_source": source_name}
    base.update(episodes=settings["episodes"], n_envs=settings["n_envs"], checkpoints=sorted(settings["checkpoints"]),
                eval_runs=settings["eval_runs"], mappo=dataclasses.asdict(config))
    if settings.get("trainer", "one-at-a-time") != "one-at-a-time":  # its numbers differ from mappo.train's in the last bits
        base["trainer"] = settings["trainer"]
    if settings.get("layout_schedule"):
        base["layout_schedule"] = [[int(k), name] for k, name in settings["layout_schedule"]]
    if system == "MARLIN":
        base.update(switch=dataclasses.asdict(switch), llm_only_performance=llm_only_threshold(settings, scenario),
                    plan_source=source_name)
        if settings.get("plan_budget") is not None:
            base["plan_budget"] = int(settings["plan_budget"])
        if settings.get("layout_schedule"):
            base["llm_only_performance_after"] = {name: llm_only_threshold(settings, name) for _, name in settings["layout_schedule"]}
    return base


def system_tag(system: str, source_name: str) -> str:
    """The system part of a run name; runs using another plan source than the exact planner name it,
    so that switching sources keeps both sets of results instead of overwriting one with the other."""
    tag = system.replace("-", "_").lower()
    if system == "MARL" or source_name == ExactJointPlanner.name:
        return tag
    return f"{tag}-{llm_config.slug(source_name.split('[')[0])}"


def _run_batch(batch: list[tuple[str, dict[str, Any]]], settings: dict[str, Any],
               source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """Several MARL/MARLIN runs trained together by the batched trainer (one torch thread); their tables to save."""
    import torch

    from marlinkit.marlin import batched as marlin_batched

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        results = marlin_batched.train_systems([(c["scenario"], c["system"], c["seed"]) for _, c in batch], settings, source)
        share = len(batch)  # each run's share of the batch's time
        provenance = {"wall_time_s": (time.perf_counter() - started) / share, "cpu_time_s": (time.process_time() - cpu_started) / share,
                      "engine": "corridor core (numpy)", "trainer": f"batched ({len(batch)} runs)"}
    finally:
        torch.set_num_threads(threads)
    tables = []
    for (name, config), (episodes, evaluations) in zip(batch, results):
        tables += [(name + "__eval", evaluations, {}), (name, episodes, {**provenance, "plan_source": config.get("plan_source")})]
    return tables


def _run_job(name: str, config: dict[str, Any], settings: dict[str, Any],
             source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """One run on any executor (one torch thread): train or plan; return its tables and provenance to save.

    The caller writes the files, so executors on other machines need no shared filesystem.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with transcript_context(run=f"MARLIN {name}"):  # a transcript miss or damaged transcript names the run
            return _run_tables(name, config, settings, source)
    finally:
        torch.set_num_threads(threads)


def _run_tables(name: str, config: dict[str, Any], settings: dict[str, Any],
                source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """Train or plan one run: its tables (the episode table last) and provenance."""
    started, cpu_started = time.perf_counter(), time.process_time()
    tables = []
    if config["system"] == "LLM-only":
        episodes = plan_source_alone(config["scenario"], config["seed"], config["trials"], source, settings.get("actuation_noise"))
    else:
        episodes, evaluations = train_system(config["scenario"], config["system"], config["seed"], settings, source)
        tables.append((name + "__eval", evaluations, {}))
    tables.append((name, episodes, {"wall_time_s": time.perf_counter() - started, "cpu_time_s": time.process_time() - cpu_started,
                                    "engine": "corridor core (numpy)", "plan_source": config.get("plan_source")}))
    return tables


def training_batches(trained: list[tuple[str, dict[str, Any]]], workers: int, batch_runs: int) -> list[list]:
    """Cut the trainings of a grid into batches for the batched trainer: at least one per worker, at most
    ``batch_runs`` runs each, seed by seed (a batch's runs are saved when it finishes, so a long grid whose
    batches hold one seed each resumes seed by seed). A run's numbers do not depend on its batch."""
    ordered = sorted(trained, key=lambda job: job[1]["seed"])  # stable: scenario and system order kept within a seed
    if not ordered:
        return []
    count = min(len(ordered), max(workers, -(-len(ordered) // max(int(batch_runs), 1))))
    size, extra = divmod(len(ordered), count)
    batches, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        batches.append(ordered[start:end])
        start = end
    return batches


def run_grid(settings: dict[str, Any], preset: str, source: PlanSource | None = None, root: Path | None = None,
             progress: bool = True) -> Results:
    """Run (or load) every scenario x system x seed of ``settings``; finished runs are never redone.

    Missing runs go to ``settings["executor"]`` ("local" processes or "ray", see ``marlinkit.executors``)
    with ``workers`` at a time; each run's files are written here as soon as it finishes.
    """
    validate_settings(settings)
    source_name = (source or ExactJointPlanner()).name
    root = Path(root) if root else paths.results_dir("marlin", preset)
    store = runs.ResultStore(root)
    jobs = [(runs.run_name(sc, system_tag(sy, source_name), f"seed{se}"), job_config(sc, sy, se, settings, source_name))
            for sc in settings["scenarios"] for sy in settings.get("systems", SYSTEMS) for se in settings["seeds"]]
    todo = [(name, config) for name, config in jobs
            if not (store.is_complete(name, config)
                    and (config["system"] == "LLM-only" or store.is_complete(name + "__eval", config)))]

    configs = dict(todo)

    def save(tables: list) -> None:
        for table_name, table, provenance in tables:  # the episode table last: its sidecar marks the run complete
            store.save(table_name, table, configs[table_name.removesuffix("__eval")], **provenance)

    executor, workers = settings.get("executor", "local"), settings["workers"]
    batched = settings.get("trainer", "one-at-a-time") == "batched"
    single = [(name, config) for name, config in todo if not batched or config["system"] == "LLM-only"]
    with transcript_context(preset=preset):  # a transcript miss's recording hint names the preset
        executors.run_jobs(_run_job, [(name, config, settings, source) for name, config in single], executor, workers,
                           settings.get("ray_address"), progress, "MARLIN runs", on_result=lambda _, tables: save(tables))
        if batched:  # the trainings as one stacked computation per worker (marlinkit.marlin.batched)
            trained = [(name, config) for name, config in todo if config["system"] != "LLM-only"]
            batches = training_batches(trained, workers, settings.get("batch_runs") or len(trained))
            executors.run_jobs(_run_batch, [(batch, settings, source) for batch in batches], executor, workers,
                               settings.get("ray_address"), progress, "MARLIN batches", on_result=lambda _, tables: save(tables))
    episodes = pd.concat([store.load(name) for name, _ in jobs], ignore_index=True)
    evaluations = [store.load(name + "__eval") for name, config in jobs if config["system"] != "LLM-only"]
    return Results(episodes, pd.concat(evaluations, ignore_index=True) if evaluations else pd.DataFrame())


#: MARLIN's plan sources: the calibrated surrogate planner (not an LLM; the quick and paper presets'
#: default), the configured LLM's negotiation, and the exact joint planner (a perfect plan source).
PLAN_SOURCES = ("surrogate", "llm", "exact")
SURROGATE_LABEL = "calibrated surrogate planner (exact plans corrupted to the authors' Llama 3.1 8B LLM-only performance; NOT an LLM)"
#: File-name suffix of each plan source's Fig. 3 and Table I outputs.
PLAN_SOURCE_SUFFIX = {"surrogate": "", "llm": "__llm", "exact": "__exact_planner"}


class Training(NamedTuple):
    results: Results
    settings: dict[str, Any]  # the marlin_training settings the runs used (thresholds filled in)
    plan_source: str  # how figures name the plan source


def plan_source_settings(preset: str, section: str, plan_source: str | None = None,
                         **overrides: Any) -> tuple[str, dict[str, Any], PlanSource | None, str]:
    """The plan source of a MARLIN grid (``plan_source`` or the section's ``plan_source``), its settings and figure label.

    A non-LLM source costs no LLM time, so its runs re-plan without limit (``plan_budget`` None, the paper's
    rule); ``plan_budget`` limits the LLM source only.
    """
    settings = presets.get(preset, section, **overrides)
    plan_source = plan_source or settings.get("plan_source") or "exact"
    if plan_source not in PLAN_SOURCES:
        raise ValueError(f"plan_source must be one of {PLAN_SOURCES}, got {plan_source!r}")
    settings["plan_source"] = plan_source
    if plan_source == "llm":
        return plan_source, settings, None, "llm"
    settings = {**settings, "plan_budget": None}
    if plan_source == "exact":
        return plan_source, settings, None, f"{ExactJointPlanner.name} (a perfect plan source, not an LLM)"
    from marlinkit.marlin.surrogate_planner import CalibratedSurrogatePlanner

    source = CalibratedSurrogatePlanner()
    return plan_source, settings, source, SURROGATE_LABEL


def section_settings_and_source(preset: str, section: str, plan_source: str | None, source: PlanSource | None,
                                overrides: dict[str, Any]) -> tuple[dict[str, Any], PlanSource | None]:
    """A section's settings and plan source: ``source`` if given, else ``plan_source`` or the section's (not "llm")."""
    if source is not None:
        return presets.get(preset, section, **overrides), source
    name, settings, source, _ = plan_source_settings(preset, section, plan_source, **overrides)
    if name == "llm":
        raise ValueError(f"{section}: the LLM plan source is not wired here; use plan_source 'surrogate' or 'exact'")
    return settings, source


def plan_source_label(preset: str, section: str, plan_source: str | None = None) -> str:
    """How figures name the plan source a section's MARLIN runs use."""
    return plan_source_settings(preset, section, plan_source)[3]


def run_training(preset: str, plan_source: str | None = None, llm: str | None = None, progress: bool = True,
                 **overrides: Any) -> Training:
    """The runs behind Fig. 3 and Table I: MARL and MARLIN per scenario and seed, and the LLM-only system.

    ``plan_source`` (default: the preset's ``marlin_training.plan_source``):
    ``"surrogate"``: the calibrated surrogate planner (``marlinkit.marlin.surrogate_planner``, not an LLM) with
    the authors' Llama 3.1 8B thresholds, which its LLM-only performance is calibrated to.
    ``"llm"``: MARLIN negotiates with the configured LLM (``llm``, else ``$MARLINKIT_LLM``, else
    smollm2) by the ``llm_only`` preset section's protocol, behind its transcript cache; Algorithm 1's
    threshold and the LLM-only box are that LLM's own LLM-only trials (``marlinkit.marlin.llm_only``, the
    runs of notebooks/marlin/llm_only). ``"exact"``: the exact joint planner, a perfect plan source and not
    an LLM, with the authors' Llama 3.1 8B thresholds.
    """
    plan_source, settings, source, label = plan_source_settings(preset, "marlin_training", plan_source, **overrides)
    if plan_source != "llm":
        return Training(run_grid(settings, preset, source=source, progress=progress), settings, label)
    from marlinkit.marlin import llm_only

    protocol = presets.get(preset, "llm_only")
    missing = sorted(set(settings["scenarios"]) - set(protocol["scenarios"]))
    if missing:
        raise ValueError(f"preset {preset!r}: the llm_only section has no trials for {missing}; "
                         "Algorithm 1 needs that LLM's LLM-only performance for every trained scenario")
    source = llm_only.negotiator(protocol, llm, purpose="marlin_training")
    validate_settings(settings)
    trials = llm_only.run_llm_only(preset, llm, progress=progress)
    measured = trials.groupby("scenario").performance.mean().to_dict()
    settings = {**settings, "systems": ["MARL", "MARLIN"],
                "llm_only_performance": settings["llm_only_performance"] or {s: measured[s] for s in settings["scenarios"]}}
    results = run_grid(settings, preset, source=source, progress=progress)
    llm_only_rows = pd.DataFrame({
        "scenario": trials.scenario, "system": "LLM-only", "seed": trials.seed, "episode": trials.trial + 1, "env_copy": 0,
        "layout": trials.scenario, "generator": PLAN, "toggled": False, "plan_cache_hit": False,
        "performance": trials.performance, "steps": core.EPISODE_STEPS, "wall_time_s": trials.seconds})
    llm_only_rows = llm_only_rows[llm_only_rows.scenario.isin(settings["scenarios"])]
    episodes = pd.concat([results.episodes, llm_only_rows], ignore_index=True)
    return Training(Results(episodes, results.evaluations), settings,
                    f"LLM negotiation, {llm_config.label(source.backend)}")
