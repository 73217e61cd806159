"""The reference-architect ablation at the paper's length: its settings, its run queue and the engine timing.

The ablation A0/A2/A7/A8 with the reference architect (a surrogate, not an LLM:
:mod:`marlinkit.maestro.reference_architect`), 12 seeds x 200 episodes of 360 s, MADDPG setting
``ue25_openblas``, the curriculum target ``plain_maddpg`` (:data:`marlinkit.maestro.curriculum.SETTINGS`) and
CityFlow, the paper's engine (:data:`SETTINGS`). Runs go to
``data/results/maestro/paper/reference_architect_cityflow_plain_maddpg_curriculum_ue25_openblas_maddpg/``.

``python -m marlinkit.maestro.reference_queue run`` works through the runs one at a time (one process,
one thread), the paper's 4 seeds (200-500) of every configuration first, seed by seed in the order
:data:`ORDER` (A7 last: it follows A2 until its first generated reward is accepted). It is resumable: a
finished run is skipped, an interrupted one continues from its last checkpoint (every 10 episodes), and
the architect's replies are recorded in ``data/transcripts/`` as an LLM's are. ``status`` lists what is
finished; ``timing`` measures an episode of the loop on SUMO and on CityFlow (A0, the real flow: the same
traffic on both), each in a fresh process, and prints both.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

import pandas as pd

from marlinkit.maestro import ablation

PRESET = "paper"
#: What the reference-architect ablation sets on top of the paper preset's ``ablation`` section.
SETTINGS: dict[str, Any] = {"llm": ablation.REFERENCE_LLM, "engine": "cityflow", "curriculum": "plain_maddpg",
                            "maddpg_setting": "ue25_openblas"}
#: Order of the configurations within a seed: A2 first (the curriculum's check), A7 last (it follows A2).
ORDER = ("A2", "A0", "A8", "A7")
#: The paper's seeds, run first.
PAPER_SEEDS = (200, 300, 400, 500)


def overrides(architect: str | None = None, maddpg: str | None = None) -> dict[str, Any]:
    """The notebooks' ablation settings: the preset's LLM under MADDPG setting ``maddpg`` (``architect`` None), or this
    ablation's (``architect="reference"``), its configurations in the tables' order."""
    if architect is None:
        return {"maddpg_setting": maddpg}
    if architect != ablation.REFERENCE_LLM:
        raise ValueError(f"architect must be None (the preset's LLM) or {ablation.REFERENCE_LLM!r}, got {architect!r}")
    return {**SETTINGS, "ablations": tuple(a for a in ablation.ABLATIONS if a in ORDER)}


def config(**overrides: Any) -> ablation.Config:
    return ablation.load_config(PRESET, record=True, **{**SETTINGS, "ablations": ORDER, **overrides})


def queue(seeds: tuple[int, ...] | None = None) -> list[tuple[str, int]]:
    """Every (configuration, seed) in the order they run: the paper's seeds first, then the others, each seed's
    configurations in :data:`ORDER`."""
    seeds = tuple(seeds or config().seeds)
    ordered = [s for s in PAPER_SEEDS if s in seeds] + [s for s in seeds if s not in PAPER_SEEDS]
    return [(a, s) for s in ordered for a in ORDER]


def finished(cfg: ablation.Config | None = None) -> list[str]:
    """Names of the finished runs in the results folder (complete sidecars of this configuration)."""
    from marlinkit.maestro.curriculum_env import calibrate
    from marlinkit.runs import ResultStore, run_name

    cfg = cfg or config()
    store = ResultStore(ablation.results_root(PRESET, cfg))
    if not (store.root / "ablation_calibration.json").exists():
        return []
    calibration, _ = calibrate(cfg, store)
    return [run_name(a, f"seed{s}") for a, s in queue(cfg.seeds)
            if store.is_complete(run_name(a, f"seed{s}"), ablation.run_config(cfg, a, s, calibration))]


def in_progress(cfg: ablation.Config | None = None) -> dict[str, dict[str, Any]]:
    """What the checkpoints of unfinished runs hold (read-only): episodes done, mean difficulty so far and over
    episodes 100-199 (NaN before them), the last window's mean score, and d's changes by rule."""
    import torch

    cfg = cfg or config()
    out = {}
    for path in sorted(ablation.results_root(PRESET, cfg).glob("A*__seed*.checkpoint.pt")):
        rows = torch.load(path, weights_only=False, mmap=True)["loop"].rows
        table = pd.DataFrame(rows)
        late = table.loc[table["episode"].between(100, 199), "difficulty"]
        out[path.name.removesuffix(".checkpoint.pt")] = {
            "episodes": len(table), "mean_d": round(float(table["difficulty"].mean()), 3),
            "mean_d_100_199": round(float(late.mean()), 3) if len(late) else float("nan"),
            "max_d": float(table["difficulty"].max()), "last_5_mean_score": round(float(table["score"].tail(5).mean()), 2),
            "events": table["difficulty_event"].value_counts().to_dict() if "difficulty_event" in table else {}}
    return out


def run(seeds: tuple[int, ...] | None = None, **overrides: Any) -> None:
    """Run the queue, one seed's configurations at a time (each run in a fresh process, saved as it finishes)."""
    cfg = config(**overrides)
    for seed in dict.fromkeys(s for _, s in queue(seeds or cfg.seeds)):
        started = time.perf_counter()
        print(f"reference-architect ablation: seed {seed} ({', '.join(ORDER)})", flush=True)
        ablation.run(config(**{**overrides, "seeds": (seed,), "workers": 1}), PRESET)
        print(f"reference-architect ablation: seed {seed} done in {time.perf_counter() - started:.0f} s", flush=True)


def timing(episodes: int = 4, engines: tuple[str, ...] = ("sumo", "cityflow"), seed: int = 200) -> dict[str, dict[str, float]]:
    """Seconds per episode of the loop (A0: the real flow, MADDPG ``ue25_openblas``, 360 s episodes) on each engine,
    from ``episodes`` episodes of one run in a scratch folder: the wall time per episode and its split
    (:data:`marlinkit.maestro.ablation.TIMING_COLUMNS`). Updates start once 1024 steps are stored (episode 3)."""
    out = {}
    for engine in engines:
        with tempfile.TemporaryDirectory() as root:
            started = time.perf_counter()
            cfg = ablation.load_config(PRESET, seeds=(seed,), ablations=("A0",), episodes=episodes, final_window=2,
                                       workers=1, **{**SETTINGS, "engine": engine})
            results = ablation.run(cfg, PRESET, root=root, progress=False)
            wall = time.perf_counter() - started
            table = results.episodes
            late = table[table["episode"] >= 3] if episodes > 3 else table
            out[engine] = {"wall_s_per_episode_incl_start_and_calibration": round(wall / episodes, 2),
                           "loop_s_per_episode": round(float(table[list(ablation.TIMING_COLUMNS)].sum(axis=1).mean()), 3),
                           "loop_s_per_episode_with_updates": round(float(late[list(ablation.TIMING_COLUMNS)].sum(axis=1).mean()), 3),
                           **{f"{c}_per_episode": round(float(table[c].mean()), 3) for c in ablation.TIMING_COLUMNS}}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m marlinkit.maestro.reference_queue", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="run the queue (resumable)")
    run_parser.add_argument("--seeds", nargs="+", type=int, default=None, help="seeds (default: the preset's 12)")
    sub.add_parser("status", help="list the finished runs")
    timing_parser = sub.add_parser("timing", help="seconds per episode on SUMO and on CityFlow")
    timing_parser.add_argument("--episodes", type=int, default=4)
    args = parser.parse_args(argv)
    if args.command == "run":
        run(tuple(args.seeds) if args.seeds else None)
    elif args.command == "status":
        done = finished()
        print(f"{len(done)} of {len(queue())} runs finished: {', '.join(done) or 'none'}")
        for name, state in in_progress().items():
            print(f"in progress {name}: {json.dumps(state)}")
    else:
        print(json.dumps(timing(args.episodes), indent=1))


if __name__ == "__main__":
    main()
