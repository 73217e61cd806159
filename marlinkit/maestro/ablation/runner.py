"""The ablation's runs: :func:`run` runs (or loads) every (configuration, seed) of a ``Config``, each in a fresh
process (:func:`dual_loop`), and writes each run's files as it finishes."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pandas as pd

from marlinkit import executors
from marlinkit.config_fields import required_preset
from marlinkit.files import atomic_write_bytes, atomic_write_text, read_jsonl
from marlinkit.maestro import checkpoint
from marlinkit.maestro.ablation.config import Config, leader_of, results_root, run_config
from marlinkit.maestro.ablation.inner import Leader, LeaderLeft
from marlinkit.maestro.ablation.loop import dual_loop
from marlinkit.maestro.curriculum_env import Calibration, calibrate, calibration_config
from marlinkit.maestro.results import AblationResults
from marlinkit.runs import ResultStore, run_name

#: The runner module a run's sidecar names as the start of its numerics path (:mod:`marlinkit.repro.provenance`).
NUMERICS_PATH = ("marlinkit.maestro.ablation",)


def run(cfg: Config) -> AblationResults:
    """Run (or load) every (configuration, seed) of ``cfg``; missing runs go to ``executor``, ``workers`` at a
    time, and each run's files are written here as soon as it finishes. ``cfg.preset`` names the results folder
    (``data/results/maestro/<preset>/``, :func:`~marlinkit.maestro.ablation.config.results_root`; ``cfg.root``
    replaces it) and the outputs' provenance."""
    from marlinkit.llm.cache import transcript_context

    preset, progress = required_preset(cfg), cfg.progress
    store = ResultStore(Path(cfg.root) if cfg.root else results_root(preset, cfg), code=NUMERICS_PATH)
    runs = [(a, s) for a in cfg.ablations for s in cfg.seeds]
    calibrated = store.is_complete("ablation_calibration", calibration_config(cfg))
    # an uncalibrated ablation has runs to do too: one Ray start for both (none when all is cached)
    with contextlib.nullcontext() if calibrated else executors.session(cfg.executor, cfg.workers, cfg.ray_address):
        calibration, calibration_info = calibrate(cfg, store)
        todo = [(a, s) for a, s in runs
                if not store.is_complete(run_name(a, f"seed{s}"), run_config(cfg, a, s, calibration))]
        # A7 follows A2 (see the package's docstring): after its leader's runs of this call (a leader finished
        # before is found by find_leader in the first batch already)
        following = [(a, s) for a, s in todo if leader_of(a) in cfg.ablations]
        with transcript_context(preset=preset):
            for batch in ([job for job in todo if job not in following], following):
                jobs = [(cfg, a, s, calibration, str(store.root), find_leader(store, cfg, a, s, calibration))
                        for a, s in batch]
                executors.run_jobs(run_job, jobs, cfg.executor, min(cfg.workers, max(len(jobs), 1)), cfg.ray_address,
                                   progress, "MAESTRO runs", fresh_process=True,
                                   on_result=lambda _, out: save_run(store, out))
    names = [run_name(a, f"seed{s}") for a, s in runs]
    episodes = pd.concat([store.load(n) for n in names], ignore_index=True)
    generations = load_all_generations(store.root, names)
    return AblationResults.of(cfg, preset, episodes, generations, {n: store.load_sidecar(n) for n in names},
                           calibration, calibration_info, store.root, store.load("ablation_calibration"))


def run_job(cfg: Config, ablation: str, seed: int, calibration: Calibration, root: str,
            leader: Leader | None = None) -> dict[str, Any]:
    """One run (see :func:`dual_loop`), following ``leader``'s finished table while it can (see the package's
    docstring), else trained in full; a transcript miss or damaged transcript names the run."""
    from marlinkit.llm.cache import transcript_context

    with transcript_context(run=f"MAESTRO {run_name(ablation, f'seed{seed}')}"):
        if leader is not None:
            try:
                return dual_loop(cfg, ablation, seed, calibration, root, leader=leader)
            except LeaderLeft as left:
                print(f"MAESTRO {run_name(ablation, f'seed{seed}')}: {left}, so it trains in full", flush=True)
        return dual_loop(cfg, ablation, seed, calibration, root)


def save_run(store: ResultStore, out: dict[str, Any]) -> str:
    """Write one finished run's files (the sidecar last: it marks the run complete) and drop its checkpoint."""
    name = out["name"]
    atomic_write_text(store.root / f"{name}.generations.jsonl", out["generations"])
    if out.get("actor") is not None:  # the trained actor, for evaluations on other traffic without retraining
        atomic_write_bytes(store.root / f"{name}.actor.pt", out["actor"])
    store.save(name, out["table"], out["config"], **out["provenance"])
    checkpoint.remove(store.root / f"{name}.checkpoint.pt")
    return name


def find_leader(store: ResultStore, cfg: Config, ablation: str, seed: int, calibration: Calibration) -> Leader | None:
    """The finished run ``ablation`` follows for ``seed`` (pandas reads every float back exactly), None when there is
    none."""
    leader = leader_of(ablation)
    if leader is None or not store.is_complete(name := run_name(leader, f"seed{seed}"),
                                               run_config(cfg, leader, seed, calibration)):
        return None
    return Leader(name, store.load(name), store.load_sidecar(name)["engine_version"])


def load_generations(path: Path, name: str) -> pd.DataFrame:
    """A run's generation log (``<name>.generations.jsonl``) as a table, with its configuration and seed."""
    ablation, seed = name.split("__")
    frame = pd.DataFrame(read_jsonl(path))
    return frame.assign(ablation=ablation, seed=int(seed.removeprefix("seed")))


def load_all_generations(root: Path, names: list[str]) -> pd.DataFrame:
    """The generation logs of runs ``names`` in ``root``, one table. A run with no architect (A0) logs nothing; its
    empty table is left out of the concatenation, which would otherwise turn the logs' boolean columns to objects
    (``~accepted`` then reads -1 and -2)."""
    frames = [load_generations(Path(root) / f"{n}.generations.jsonl", n) for n in names]
    return pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)
