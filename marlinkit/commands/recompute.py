"""How today's experiments recompute each kind of committed paper run: the functions
:mod:`marlinkit.commands.verify` hands the reproducibility layer (:class:`marlinkit.repro.hooks.ExperimentHooks`).

A committed run's prefix (each in a process of its own, so these are module-level functions), the configuration
of a MAESTRO ablation folder with its calibration recomputed, a committed MAESTRO run recomputed whole
(``verify --maestro-run``), and the runner modules whose sources made a run (its numerics path).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from marlinkit.repro.verify_paper.runs import PRESET, CommittedRun, folder_suffix, repo_relative

# ----- recomputing one run (each in a process of its own) --------------------------------------------------

def _sensitivity_rates() -> list[tuple[int, dict[str, float]]]:
    """The committed zero-share sensitivity checks of the preset: (rows, calibrated rates) per results folder."""
    from marlinkit.marlin import authors_protocol
    from marlinkit.marlin.surrogate_planner import load_rates

    found = []
    for rates in sorted(authors_protocol.sensitivity_root(PRESET, 0).parent.glob(
            f"*__zero_share_rows*/{authors_protocol.SENSITIVITY_RATES}")):
        found.append((int(rates.parent.name.rsplit("rows", 1)[1]), load_rates(rates)))
    return found


def plan_source(plan_source: str | None, record: bool = False):
    """The plan source a MARLIN sidecar names (``plan_source``), rebuilt: the exact planner, the calibrated surrogate,
    or an LLM negotiation by one of the presets' ``llm_only`` protocols (strict replay)."""
    from marlinkit import presets
    from marlinkit.algos.joint_planner import ExactJointPlanner
    from marlinkit.marlin import llm_trials
    from marlinkit.marlin.surrogate_planner import (LLAMA_EARLIER, CalibratedSurrogatePlanner, LlamaSurrogatePlanner,
                                                    llama_shares)

    if plan_source in (None, ExactJointPlanner.name):
        return ExactJointPlanner()
    if plan_source == CalibratedSurrogatePlanner().name:
        return CalibratedSurrogatePlanner()
    if plan_source == LlamaSurrogatePlanner().name:
        return LlamaSurrogatePlanner()
    for earlier in LLAMA_EARLIER:  # an earlier calibration whose plans are today's in the run's corridor
        if plan_source == LlamaSurrogatePlanner(earlier["rates"], earlier["shares"]).name:
            return LlamaSurrogatePlanner(earlier["rates"], earlier["shares"])
    for rows, rates in _sensitivity_rates():  # the zero-share sensitivity check's plan sources
        if plan_source == LlamaSurrogatePlanner(rates, llama_shares(rows)).name:
            return LlamaSurrogatePlanner(rates, llama_shares(rows))
    if plan_source.startswith("negotiation:"):
        llm = plan_source.split(":")[1]
        for preset in presets.PRESET_NAMES:
            source = llm_trials.negotiator(presets.get(preset, "llm_only"), llm, purpose="marlin_training",
                                           record=record)
            if source.name == plan_source:
                return source
    raise ValueError(f"no plan source of today's code is named {plan_source!r}")


def marlin_config(run_config: dict[str, Any]):
    """A MARLIN run's ``GridConfig``, rebuilt from its sidecar's configuration (every key that is a field of it)."""
    from marlinkit.marlin.grid import GridConfig

    fields = {f.name for f in dataclasses.fields(GridConfig)}
    values = {k: v for k, v in run_config.items()
              if k in fields and k not in ("seed", "system", "scenario", "plan_source")}
    scenario = run_config["scenario"]
    if "switch" in run_config:
        values["switch_rule"] = run_config["switch"]["rule"]
    if "llm_only_performance" in run_config:
        values["llm_only_performance"] = {scenario: run_config["llm_only_performance"],
                                          **run_config.get("llm_only_performance_after", {})}
    if "trials" in run_config:
        values["llm_only_trials"] = run_config["trials"]
    return GridConfig(scenarios=(scenario,), seeds=(run_config["seed"],), systems=(run_config["system"],), **values)


def _recompute_marlin(run: CommittedRun, episodes: int) -> dict[str, Any]:
    from marlinkit.llm.cache import transcript_context
    from marlinkit.marlin import batched, grid, systems
    from marlinkit.repro.keys import config_hash

    config_in = run.sidecar["config"]
    source = plan_source(config_in.get("plan_source"))
    config = marlin_config(config_in)
    scenario, system, seed = config_in["scenario"], config_in["system"], config_in["seed"]
    rebuilt = config_hash(grid.job_config(scenario, system, seed, config, source.name))
    if rebuilt != run.sidecar["config_hash"]:
        return {"error": f"today's code rebuilds its configuration with hash {rebuilt}, not the committed "
                         f"{run.sidecar['config_hash']}: the run's settings or their key changed"}
    with transcript_context(run=f"MARLIN {run.name}"):
        if system == "LLM-only":
            table = systems.plan_source_alone(scenario, seed, config.llm_only_trials, source, config.actuation_noise)
        elif config.trainer == "batched":
            table = batched.train_systems([(scenario, system, seed)], config, source, stop_after=episodes)[0][0]
        else:
            table = systems.train_system(scenario, system, seed, config, source, stop_after=episodes)[0]
    return {"table": table.to_csv(index=False)}


def maestro_config(run: CommittedRun, preset: str = PRESET):
    """The ablation ``Config`` a committed MAESTRO run's folder names: the preset's section under the curriculum rule
    and MADDPG setting whose folder (``ablation.results_root``) is the run's; None when no setting names it."""
    from marlinkit import presets
    from marlinkit.maestro import ablation, curriculum, sweep

    # they name folders too
    named = {k: run.sidecar["config"][k] for k in ("llm", "engine") if k in run.sidecar["config"]}
    for rule in curriculum.SETTINGS:
        for setting in (None, *sweep.SETTINGS):
            try:
                cfg = presets.ablation_config(preset, record=False, curriculum=rule, maddpg_setting=setting, **named)
            except ValueError:
                continue
            if ablation.setting_suffix(cfg) == folder_suffix(run, preset):
                return cfg
    return None


def prepare(run: CommittedRun, scratch: Path, problems: list[str]):
    """A MAESTRO ablation folder's ``Config`` and its calibration recomputed in ``scratch``, compared whole with the
    committed ``ablation_calibration`` (a difference goes to ``problems``); ``(None, None)`` when no Config of today's
    names the folder."""
    from marlinkit.maestro.curriculum_env import calibrate
    from marlinkit.repro.comparisons import compare_table
    from marlinkit.runs import ResultStore

    cfg = maestro_config(run)
    if cfg is None:
        return None, None
    cfg = dataclasses.replace(cfg, executor="local")
    calibration, _ = calibrate(cfg, ResultStore(scratch, code=("marlinkit.maestro.ablation",)))
    committed = run.folder / "ablation_calibration.csv"
    if committed.exists():
        status, details = compare_table(committed, scratch / "ablation_calibration.csv")
        if status != "same":
            problems.append(f"{repo_relative(committed)} (recomputed whole): " + "; ".join(details))
        else:
            print(f"  ok       {repo_relative(committed)} (recomputed whole, byte for byte)", flush=True)
    return cfg, calibration


def _recompute_maestro(run: CommittedRun, episodes: int, cfg, calibration, scratch: str) -> dict[str, Any]:
    from marlinkit.llm.cache import transcript_context
    from marlinkit.maestro import ablation
    from marlinkit.repro.keys import config_hash

    config_in = run.sidecar["config"]
    name, seed = config_in["ablation"], config_in["seed"]
    rebuilt = config_hash(ablation.run_config(cfg, name, seed, calibration))
    if rebuilt != run.sidecar["config_hash"]:
        return {"error": f"today's code rebuilds its configuration with hash {rebuilt}, not the committed "
                         f"{run.sidecar['config_hash']}: the run's settings, its calibration or their key changed"}
    with transcript_context(run=f"MAESTRO {run.label}"):
        out = ablation.dual_loop(cfg, name, seed, calibration, scratch, stop_after=episodes)
    return {"table": out["table"].to_csv(index=False), "generations": out["generations"]}


def _recompute_sweep(run: CommittedRun, episodes: int, scratch: str) -> dict[str, Any]:
    from marlinkit.maestro import sweep
    from marlinkit.repro.keys import maddpg_key

    side = run.sidecar
    setting, seed = side["setting"], side["maddpg"]["seed"]
    key = maddpg_key(sweep.maddpg_config(setting, seed, side["episodes"], side["episode_seconds"],
                                         side["maddpg"]["eval_every"]))
    if key != side["maddpg"]:
        changed = sorted(k for k in set(key) | set(side["maddpg"]) if key.get(k) != side["maddpg"].get(k))
        return {"error": f"today's setting {setting!r} gives other MADDPG settings than the committed run's: {changed}"}
    path = sweep.sweep_run(setting, seed, side["episodes"], side["episode_seconds"], side["maddpg"]["eval_every"],
                           side["eval_seed"], scratch, stop_after=episodes)
    return {"table": Path(path).read_text(encoding="utf-8")}


def recompute(run: CommittedRun, episodes: int, scratch: str, cfg=None, calibration=None) -> dict[str, Any]:
    """One run's prefix (a fresh process's job): ``table`` (CSV text) and, for MAESTRO, ``generations``; or ``error``
    (a transcript miss, a configuration today's code does not rebuild), never an exception."""
    started, cpu_started = time.perf_counter(), time.process_time()
    Path(scratch).mkdir(parents=True, exist_ok=True)
    try:
        if run.kind in ("marlin-training", "plan-source-alone"):
            out = _recompute_marlin(run, episodes)
        elif run.kind == "maestro-ablation":
            out = _recompute_maestro(run, episodes, cfg, calibration, scratch)
        else:
            out = _recompute_sweep(run, episodes, scratch)
    except Exception as error:  # noqa: BLE001 (reported by name, with the run; the other runs go on)
        out = {"error": f"{type(error).__name__}: {error}"}
    return {**out, "seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu_started}


# ----- code age ---------------------------------------------------------------------------------------------

def numerics_entries(run: CommittedRun) -> tuple[str, ...]:
    """The runner modules whose imports make a committed run's numerics path (as its runner records them)."""
    if run.kind in ("marlin-training", "plan-source-alone"):
        from marlinkit.marlin import grid

        try:
            return grid.numerics_entries(plan_source(run.sidecar["config"].get("plan_source")))
        except ValueError:
            return (grid.__name__,)
    return ("marlinkit.maestro.sweep",) if run.kind == "maestro-sweep" else ("marlinkit.maestro.ablation",)


# ----- one committed MAESTRO run recomputed whole (verify --maestro-run) ----------------------------------------

def recompute_maestro_run(preset: str, run: str, scratch: Path) -> tuple[Path, str, tuple[str, ...]]:
    """One committed MAESTRO run of ``preset`` (``run`` = ``"A2:200"``) recomputed in ``scratch``: its committed
    folder, its file stem and its table's measured wall-time columns."""
    import shutil

    from marlinkit import presets
    from marlinkit.maestro import ablation

    name, _, seed = run.partition(":")
    if name not in ablation.ABLATIONS or not seed.isdigit():
        raise ValueError(f"--maestro-run takes ABLATION:SEED such as A2:200 (ablations {sorted(ablation.ABLATIONS)}), "
                         f"got {run!r}")
    cfg = presets.ablation_config(preset, record=False)
    reference = ablation.results_root(preset, cfg)
    stem = ablation.run_name(name, f"seed{seed}")
    if not (reference / f"{stem}.json").exists():
        raise FileNotFoundError(f"no committed run {stem} in {reference} to verify against")
    shutil.rmtree(scratch, ignore_errors=True)
    ablation.run(presets.ablation_config(preset, record=False, seeds=[int(seed)], ablations=[name], workers=1,
                                         root=scratch))
    return reference, stem, tuple(ablation.TIMING_COLUMNS)
