"""The reference-architect ablation at the paper's length: its settings, its run queue and the engine timing.

The ablation A0/A2/A7/A8 with the reference architect (a surrogate, not an LLM:
:mod:`marlinkit.maestro.reference_architect`), 12 seeds x 200 episodes of 360 s, MADDPG setting
``ue25_openblas``, the curriculum target ``plain_maddpg`` (:data:`marlinkit.maestro.curriculum.SETTINGS`) and
CityFlow, the paper's engine (:data:`SETTINGS`: the row ``reference_architect`` of
``marlinkit/settings/ablation_rows.toml``, whose ``[queue]`` also sets :data:`ORDER` and :data:`PAPER_SEEDS`).
Runs go to ``data/results/maestro/paper/reference_architect_cityflow_plain_maddpg_curriculum_ue25_openblas_maddpg/``.

``python -m marlinkit reference-queue run`` works through the runs one at a time (one process,
one thread), the paper's 4 seeds (200-500) of every configuration first, seed by seed in the order
:data:`ORDER` (A7 last: it follows A2 until its first generated reward is accepted). It is resumable: a
finished run is skipped, an interrupted one continues from its last checkpoint (every 10 episodes), and
the architect's replies are recorded in ``data/transcripts/`` as an LLM's are.
``run --seeds 1100 --ablations A0 A8`` runs some configurations of a seed, so a queue on a second core can
take the others (A7 only after its seed's A2, or behind it in one queue). ``status`` lists what is
finished; ``timing`` measures an episode of the loop on SUMO and on CityFlow (A0, the real flow: the same
traffic on both), each in a fresh process, and prints both.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from typing import Any

import pandas as pd

from marlinkit import settings
from marlinkit.maestro import ablation

#: The queue as ``marlinkit/settings/ablation_rows.toml`` sets it (its ``[queue]``).
_QUEUE = settings.queue()
#: The preset whose ``ablation`` section the queue runs under.
PRESET = _QUEUE.preset
#: What the reference-architect ablation sets on top of the paper preset's ``ablation`` section: the queue's row.
SETTINGS: dict[str, Any] = settings.ablation_rows()[_QUEUE.row].overrides()
#: Order of the configurations within a seed: A2 first (the curriculum's check), A7 last (it follows A2).
ORDER = _QUEUE.order
#: The paper's seeds, run first.
PAPER_SEEDS = _QUEUE.paper_seeds


def overrides(architect: str | None = None, maddpg: str | None = None, curriculum: str | None = None) -> dict[str, Any]:
    """The notebooks' ablation settings: the preset's LLM under MADDPG setting ``maddpg`` (``architect`` None), or this
    ablation's (``architect="reference"``), its configurations in the tables' order, with MADDPG setting ``maddpg``
    and curriculum target ``curriculum`` where given (None: :data:`SETTINGS`')."""
    if architect is None:
        if curriculum is not None:
            raise ValueError("a curriculum target is chosen with the reference architect only (architect='reference')")
        return {"maddpg_setting": maddpg}
    if architect != ablation.REFERENCE_LLM:
        raise ValueError(f"architect must be None (the preset's LLM) or {ablation.REFERENCE_LLM!r}, got {architect!r}")
    chosen = {k: v for k, v in (("maddpg_setting", maddpg), ("curriculum", curriculum)) if v is not None}
    return {**SETTINGS, **chosen, "ablations": tuple(a for a in ablation.ABLATIONS if a in ORDER)}


def settings(**overrides: Any) -> dict[str, Any]:
    """The queue's overrides of :data:`PRESET`'s ``ablation`` section (:data:`SETTINGS`, the configurations in
    :data:`ORDER`), then ``overrides``: what the command line hands :func:`marlinkit.presets.ablation_config`."""
    return {**SETTINGS, "ablations": ORDER, **overrides}


def queue(seeds: tuple[int, ...]) -> list[tuple[str, int]]:
    """Every (configuration, seed) in the order they run: the paper's seeds first, then the others, each seed's
    configurations in :data:`ORDER`."""
    seeds = tuple(seeds)
    ordered = [s for s in PAPER_SEEDS if s in seeds] + [s for s in seeds if s not in PAPER_SEEDS]
    return [(a, s) for s in ordered for a in ORDER]


def finished(cfg: ablation.Config) -> list[str]:
    """Names of the finished runs in the results folder (complete sidecars of the queue's configuration ``cfg``)."""
    from marlinkit.maestro.curriculum_env import calibrate
    from marlinkit.runs import ResultStore, run_name

    store = ResultStore(ablation.results_root(PRESET, cfg))
    if not (store.root / "ablation_calibration.json").exists():
        return []
    calibration, _ = calibrate(cfg, store)
    return [run_name(a, f"seed{s}") for a, s in queue(cfg.seeds)
            if store.is_complete(run_name(a, f"seed{s}"), ablation.run_config(cfg, a, s, calibration))]


def in_progress(cfg: ablation.Config) -> dict[str, dict[str, Any]]:
    """What the checkpoints of ``cfg``'s unfinished runs hold (read-only): episodes done, mean difficulty so far and
    over episodes 100-199 (NaN before them), the last window's mean score, and d's changes by rule."""
    import torch

    out = {}
    for path in sorted(ablation.results_root(PRESET, cfg).glob("A*__seed*.checkpoint.pt")):
        rows = torch.load(path, weights_only=False, mmap=True)["loop"].rows
        table = pd.DataFrame(rows)
        late = table.loc[table["episode"].between(100, 199), "difficulty"]
        out[path.name.removesuffix(".checkpoint.pt")] = {
            "episodes": len(table), "mean_d": round(float(table["difficulty"].mean()), 3),
            "mean_d_100_199": round(float(late.mean()), 3) if len(late) else float("nan"),
            "max_d": float(table["difficulty"].max()),
            "last_5_mean_score": round(float(table["score"].tail(5).mean()), 2),
            "events": table["difficulty_event"].value_counts().to_dict() if "difficulty_event" in table else {}}
    return out


def pick(ablations: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The configurations a queue runs, in :data:`ORDER`: all of them (``ablations`` None), else those named."""
    unknown = sorted(set(ablations or ()) - set(ORDER))
    if unknown:
        raise ValueError(f"unknown configuration(s) {', '.join(unknown)}: the queue runs {', '.join(ORDER)}")
    return tuple(a for a in ORDER if a in (ablations or ORDER))


def a7_waiting(seeds: tuple[int, ...], chosen: tuple[str, ...], done: list[str]) -> list[int]:
    """The seeds whose A7 a queue of configurations ``chosen`` must not start: A7 follows its seed's A2
    (:func:`marlinkit.maestro.ablation.leader_of`) and copies its replies
    (:func:`marlinkit.maestro.ablation.shared_transcripts`), so it runs after that A2 (in ``done``, the finished runs)
    or behind it in the same queue, never beside it in another."""
    from marlinkit.runs import run_name

    leaders = {ablation.leader_of(a) for a in chosen} - {None, *chosen}
    return [s for s in seeds if any(run_name(lead, f"seed{s}") not in done for lead in leaders)]


def work_through(cfg: ablation.Config, seeds: tuple[int, ...] | None = None,
                 ablations: tuple[str, ...] | None = None) -> None:
    """Run the queue of ``cfg`` (the queue's configuration, recording), one seed's configurations at a time (each run
    in a fresh process, saved as it finishes). ``ablations`` runs some of the configurations (:func:`pick`), so that
    two queues, one per core, can share a seed; an A7 whose A2 is unfinished elsewhere is refused before any run."""
    chosen, seeds = pick(ablations), tuple(dict.fromkeys(s for _, s in queue(seeds or cfg.seeds)))
    waiting = a7_waiting(seeds, chosen, finished(cfg))
    if waiting:
        raise ValueError(f"A7 of seed(s) {', '.join(map(str, waiting))} copies its seed's A2 replies: finish that A2 "
                         "first, or run A2 and A7 in one queue (--ablations A2 A7)")
    for seed in seeds:
        started = time.perf_counter()
        print(f"reference-architect ablation: seed {seed} ({', '.join(chosen)})", flush=True)
        ablation.run(dataclasses.replace(cfg, seeds=(seed,), ablations=chosen, workers=1))
        print(f"reference-architect ablation: seed {seed} done in {time.perf_counter() - started:.0f} s", flush=True)


def timing(configs: dict[str, ablation.Config]) -> dict[str, dict[str, float]]:
    """Seconds per episode of the loop on each engine, from one run per engine (``configs``: engine -> its
    :func:`timing_settings` config) in a scratch folder: the wall time per episode and its split
    (:data:`marlinkit.maestro.ablation.TIMING_COLUMNS`). Updates start once 1024 steps are stored (episode 3)."""
    out = {}
    for engine, cfg in configs.items():
        episodes = cfg.episodes
        with tempfile.TemporaryDirectory() as root:
            started = time.perf_counter()
            results = ablation.run(dataclasses.replace(cfg, root=root, progress=False))
            wall = time.perf_counter() - started
            table = results.episodes
            late = table[table["episode"] >= 3] if episodes > 3 else table
            out[engine] = {"wall_s_per_episode_incl_start_and_calibration": round(wall / episodes, 2),
                           "loop_s_per_episode": round(float(table[list(ablation.TIMING_COLUMNS)].sum(axis=1).mean()),
                                                       3),
                           "loop_s_per_episode_with_updates":
                               round(float(late[list(ablation.TIMING_COLUMNS)].sum(axis=1).mean()), 3),
                           **{f"{c}_per_episode": round(float(table[c].mean()), 3) for c in ablation.TIMING_COLUMNS}}
    return out


def timing_settings(engine: str, episodes: int = 4, seed: int = 200) -> dict[str, Any]:
    """The overrides of :data:`PRESET`'s ``ablation`` section that :func:`timing` runs on ``engine``: A0 (the real
    flow), MADDPG ``ue25_openblas``, 360-s episodes, ``episodes`` of them."""
    return {"seeds": (seed,), "ablations": ("A0",), "episodes": episodes, "final_window": 2, "workers": 1,
            **{**SETTINGS, "engine": engine}}
