"""MADDPG speed: updates per second for 16 agents (batched vs per-agent loop), and a MAESTRO episode's time split.

Part 1: both update paths run the same update on the same weights, batch and noise
(``mode="batched"``: one batched matmul per layer for all agents and one backward; ``mode="loop"``:
each agent's slice of the weights forward and backward in a Python loop; Adam and gradient
clipping are shared). Batches are random transitions of the traffic environment's shape, sampled
before the clock starts (:mod:`marlinkit.repro.bench.measure` times them). ``update_gflop`` counts the
update's matrix products from the weight shapes; at the paper's shapes, ``ablation_12_seeds_updates_floor_h`` is the
time the 3 x 12-seed ablation spends in updates alone at the measured CPU time per update, all
cores busy: a floor that stacking seeds cannot lower (it batches the same products); the ``*_following_h``
keys count the 24 runs that train when A7 follows A2 (no generated reward accepted). The
``openblas_*`` keys time the same batched update with ``MADDPGConfig(products="openblas")`` (its
products in NumPy's pinned OpenBLAS, not MKL's pinned branch) on the same batches and noise. The ``shared5_*``
keys time the parameter-shared learner the ``shared5`` setting trains (:mod:`marlinkit.algos.maddpg_shared`) on
its own batch, on both product routes. Every GFLOP/s stands beside the GEMM peaks measured in the same run
(``gemm_peaks``): a square single-thread float32 product on each pinned route, and the machine's best unpinned
(a child process with ``MARLINKIT_NUMERICS=native``), so an update's speed reads as a share of what the library
it runs on can do.

Part 2 (``--episodes`` > 0): one real MAESTRO run (A7, the full system: LLM curriculum and LLM
reward) of ``--episodes`` episodes under ``--preset``'s settings, through ``ablation.ablation.run``
into a temporary folder; its per-episode timing columns are split into simulation / MADDPG
training / LLM curriculum calls / LLM reward calls by ``report.cost_breakdown`` (Table 5's
grouping: evaluation episodes count as simulation, running the generated reward as LLM reward).
The ``paper`` ablation's time is projected from it: simulation, evaluation and LLM time per
episode as measured (LLM reward time in the A7 runs only), MADDPG time as acting per episode plus the measured time per
update times the updates a full run makes, for all runs on ``workers`` cores. A non-scripted LLM only replays
committed transcripts (the bench never records); its measured time is then the replay's, and
the recorded model latency per call is reported beside it.

Part 3 (``--batch-seeds`` S > 0): stacked seeds (:mod:`marlinkit.algos.maddpg_seeds`) against the
same code alone, measured in this one run: ``--batch-episodes`` episodes of ``--batch-seconds``
on the real Hangzhou flow with the ``paper`` preset's MADDPG settings, S seeds stacked (one libsumo
worker each, simulating in parallel) and then the first seed alone (S = 1, one worker). The
batched-vs-alone ratio is seed-episodes per wall second, stacked over alone. The 3 x 12-seed
ablation is projected both ways from part 2's per-episode LLM time (replayed) and these episode
times: alone as ``paper`` runs it (36 runs, ``workers`` at a time), stacked as 3 x ceil(12/S)
processes one after another (each already uses every core through its workers).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from typing import Any

from marlinkit import presets
from marlinkit.repro.bench.measure import (ENV_SOURCE, N_AGENTS, N_PHASES, gemm_peaks, random_buffer,
                                           shared_update_gflop, time_updates, traffic_obs_dim, update_gflop)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--updates", type=int, default=10, help="timed updates per path (default: 10)")
    parser.add_argument("--batch-size", type=int, default=None, help="transitions per update (default: MADDPGConfig)")
    parser.add_argument("--obs-dim", type=int, default=None, help="observation size (default: the traffic env's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the random batches")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")
    parser.add_argument("--episodes", type=int, default=4,
                        help="MAESTRO episodes timed for the split (default: 4, the first with updates at paper "
                             "settings is the 3rd; 0: skip)")
    parser.add_argument("--preset", default="paper",
                        help="preset whose maestro settings the episodes use (default: paper)")
    parser.add_argument("--llm", default="scripted", help="LLM setting of the timed run (default: scripted, no model)")
    parser.add_argument("--batch-seeds", type=int, default=4, help="seeds stacked in part 3 (default: 4; 0: skip)")
    parser.add_argument("--batch-episodes", type=int, default=4,
                        help="episodes timed per path in part 3 (default: 4: paper settings first update at step 1100)")
    parser.add_argument("--batch-seconds", type=int, default=360, help="episode length in part 3 (default: 360)")


def shared5_timing(obs_dim: int, updates: int, seed: int) -> dict[str, Any]:
    """The ``shared5`` learner's update on both product routes: CPU s per update, its GFLOP and GFLOP/s."""
    import numpy as np

    from marlinkit.algos.maddpg import MADDPGConfig, make_learner
    from marlinkit.maestro.sweep import SETTINGS

    config = dataclasses.replace(MADDPGConfig(seed=seed), **SETTINGS["shared5"].maddpg.given())
    buffer = random_buffer(2 * config.batch_size, obs_dim, np.random.default_rng(seed))
    out: dict[str, Any] = {"shared5_batch_size": config.batch_size}
    for products in ("torch", "openblas"):
        learner = make_learner(N_AGENTS, obs_dim, N_PHASES, dataclasses.replace(config, products=products))
        batches = [learner.sample([buffer], config.batch_size) for _ in range(updates)]
        noises = [learner.noise(config.batch_size) for _ in range(updates)]
        _, out[f"shared5_{products}_cpu_s_per_update"] = time_updates(learner, batches, noises, "batched")
    out["shared5_update_gflop"] = gflop = shared_update_gflop(learner, config.batch_size)
    for products in ("torch", "openblas"):
        out[f"shared5_{products}_gflop_per_cpu_s"] = gflop / out[f"shared5_{products}_cpu_s_per_update"]
    return out


def paper_updates_per_run() -> int:
    """MADDPG updates in one run of the ``paper`` preset (steps 1100, 1200, ..., 72000 at its defaults)."""
    from marlinkit.maestro import ablation

    paper = presets.ablation_config("paper")
    mcfg = ablation.maddpg_config(paper, paper.seeds[0])
    # run_episode's condition, at the first multiple of update_every
    first = max(mcfg.learning_starts, mcfg.batch_size, 1)
    return len(range(-(-first // mcfg.update_every) * mcfg.update_every, paper.episodes * paper.episode_seconds + 1,
                     mcfg.update_every))


def episode_split(preset: str, episodes: int, llm: str, seed: int = 200) -> dict[str, Any]:
    """Time one A7 run of ``episodes`` episodes; per-episode components and the ``paper`` projection."""
    import tempfile

    from marlinkit.maestro import ablation
    from marlinkit.maestro import report

    settings = {"ablations": ["A7"], "seeds": [seed], "episodes": episodes, "llm": llm,
                "record": False, "workers": 1, "checkpoint_every": 0}
    cfg = presets.ablation_config(preset, **settings, final_window=presets.ablation_config(preset).eval_every)
    with tempfile.TemporaryDirectory(prefix="bench_maddpg_") as root:
        results = ablation.run(dataclasses.replace(cfg, root=root, progress=False))
    df = results.episodes
    table = report.cost_breakdown(results).set_index("Component")
    split = {name: float(table.loc[name, "Total (s, all runs)"]) / episodes for name in table.index
             if name not in ("Total", report.OVERHEAD)}  # per episode: the run's start and load are not
    latency = table.loc[["LLM curriculum calls", "LLM reward calls"], "Model latency per call (s)"]
    # MADDPG time = acting + updates: the time per update from episodes with and without updates.
    updating = df["updates"] > 0
    if updating.any() and (~updating).any():
        acting = float(df.loc[~updating, "train_s"].mean())
        per_update = float((df.loc[updating, "train_s"] - acting).sum() / df.loc[updating, "updates"].sum())
    else:  # every timed episode updated (or none did): the two are not separable
        acting = per_update = None
    paper = presets.ablation_config("paper")
    updates = paper_updates_per_run()
    same_shape = cfg.episode_seconds == paper.episode_seconds and cfg.maddpg == paper.maddpg
    runs = len(paper.ablations) * len(paper.seeds)
    shaped = sum(ablation.ABLATIONS[a].llm_reward for a in paper.ablations) / len(paper.ablations)  # A7's share
    other = split["simulation"] + split["LLM curriculum calls"] + shaped * split["LLM reward calls"]
    run_s = None if per_update is None else paper.episodes * (other + acting) + updates * per_update
    return {"episode_preset": preset, "episode_llm": results.llm, "episode_seconds": cfg.episode_seconds,
            "episodes_timed": episodes, "episode_updates": df["updates"].tolist(),
            "episode_split_s": split, "episode_total_s": sum(split.values()),
            "episode_columns_mean_s": {c: float(df[c].mean()) for c in ablation.TIMING_COLUMNS},
            "llm_model_latency_per_call_s": {k: (None if v == "—" else float(v)) for k, v in latency.items()},
            "maddpg_acting_s_per_episode": acting, "maddpg_s_per_update": per_update,
            "paper_updates_per_run": updates,
            "paper_projection_h": run_s * runs / paper.workers / 3600 if same_shape and run_s is not None else None,
            "paper_projection_note": (f"{runs} runs x {paper.episodes} episodes, {paper.workers} at a time; LLM time "
                                      f"per episode as in these {episodes} episodes" if same_shape else
                                      "needs --preset paper (its episode length and MADDPG settings)")}


def _traffic_env(seconds: int):
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv

    return TrafficSignalEnv(TrafficEnvConfig(episode_seconds=seconds))


def batched_vs_alone(seeds: int, episodes: int, seconds: int) -> dict[str, Any]:
    """Wall time of ``episodes`` training episodes of ``seeds`` stacked seeds and of the first seed alone."""
    from marlinkit.maestro import ablation
    from marlinkit.algos.maddpg_seeds import SubprocessEnv, train_seeds

    paper = presets.ablation_config("paper")
    stack = tuple(paper.seeds[k] if k < len(paper.seeds) else 1000 + k for k in range(seeds))
    config = ablation.maddpg_config(paper, stack[0])
    out: dict[str, Any] = {"batch_seeds": list(stack), "batch_episodes": episodes, "batch_episode_seconds": seconds}
    for name, group in (("batched", stack), ("alone", stack[:1])):
        envs = [SubprocessEnv(_traffic_env, seconds) for _ in group]
        try:
            started = time.perf_counter()
            _, rows = train_seeds(envs, config, group, episodes)
            wall = time.perf_counter() - started
        finally:
            for env in envs:
                env.close()
        out[f"{name}_wall_s"] = wall
        out[f"{name}_s_per_seed_episode"] = wall / (len(group) * episodes)
        out[f"{name}_updates"] = sum(r["updates"] for r in rows if r["seed"] == group[0])
    out["batched_vs_alone_ratio"] = out["alone_s_per_seed_episode"] / out["batched_s_per_seed_episode"]
    return out


def trained_configs(following: bool) -> int:
    """Configurations of the paper ablation that train MADDPG: all, or (``following``) those that follow no other
    (A7 follows A2 while no generated reward is accepted, :func:`marlinkit.maestro.ablation.leader_of`)."""
    from marlinkit.maestro import ablation

    ablations = presets.ablation_config("paper").ablations
    return sum(not (following and ablation.leader_of(a) in ablations) for a in ablations)


def _floor_terms(seeds_per_config: int, following: bool = False) -> tuple[int, int, int]:
    """Training runs, updates per run and cores of the 3 x ``seeds_per_config`` paper ablation."""
    paper = presets.ablation_config("paper")
    return trained_configs(following) * seeds_per_config, paper_updates_per_run(), paper.workers


def updates_floor_h(cpu_s_per_update: float, seeds_per_config: int = 12, following: bool = False) -> float:
    """Hours the 3 x ``seeds_per_config`` paper ablation spends in MADDPG updates alone, at part 1's
    CPU time per update, every core busy: no stacking of seeds lowers it (the products stay).
    ``following``: A7 follows A2 and trains nothing (no generated reward accepted)."""
    runs, updates, cores = _floor_terms(seeds_per_config, following)
    return runs * updates * cpu_s_per_update / cores / 3600


def updates_floor_note(seeds_per_config: int = 12) -> str:
    """What :func:`updates_floor_h` multiplies, in words."""
    runs, updates, cores = _floor_terms(seeds_per_config)
    following = trained_configs(following=True) * seeds_per_config
    return (f"{runs} runs x {updates} updates x the batched update's CPU time (or the OpenBLAS one's), {cores} cores; "
            f"updates only (no simulation, LLM or acting); *_following_h: {following} runs, A7 following A2 while no "
            "generated reward is accepted")


def ablation_12_seeds(split: dict[str, Any], batch: dict[str, Any], seeds_per_config: int = 12) -> dict[str, Any]:
    """Hours of the 3 x ``seeds_per_config`` ablation at paper length, alone and stacked, LLM time as replayed."""
    from marlinkit.maestro import ablation

    paper = presets.ablation_config("paper")
    configs, episodes, stacked = len(paper.ablations), paper.episodes, len(batch["batch_seeds"])
    shaped = sum(ablation.ABLATIONS[a].llm_reward for a in paper.ablations) / configs
    llm = split["LLM curriculum calls"] + shaped * split["LLM reward calls"]  # per seed-episode, replayed
    alone = configs * seeds_per_config * episodes * (batch["alone_s_per_seed_episode"] + llm) / paper.workers
    processes = configs * math.ceil(seeds_per_config / stacked)
    batched = processes * episodes * (batch["batched_s_per_seed_episode"] * stacked + stacked * llm)
    # A7 following A2: its simulation and training are A2's, its LLM time its own
    following = alone - ((configs - trained_configs(True)) * seeds_per_config * episodes
                         * batch["alone_s_per_seed_episode"] / paper.workers)
    return {"ablation_12_seeds_alone_h": alone / 3600, "ablation_12_seeds_batched_h": batched / 3600,
            "ablation_12_seeds_alone_following_h": following / 3600,
            "ablation_12_seeds_note": (f"{configs} configs x {seeds_per_config} seeds x {episodes} episodes of "
                                       f"{batch['batch_episode_seconds']} s; alone {paper.workers} runs at a time, "
                                       f"stacked {processes} processes of {stacked} seeds one after another; "
                                       "MADDPG+simulation per seed-episode from part 3 (its first "
                                       f"{batch['batch_episodes']} episodes, so fewer updates per episode than a "
                                       "200-episode run's 3.55), LLM per episode as replayed in part 2; measured on a "
                                       "loaded shared machine")}


def _check_arguments(args: argparse.Namespace) -> None:
    """Fail on a bad count, preset, LLM or episode count before any compute."""
    if args.updates < 1:
        raise ValueError(f"--updates must be positive, got {args.updates}")
    if args.episodes < 0:
        raise ValueError(f"--episodes must be >= 0, got {args.episodes}")
    if args.batch_seeds < 0 or args.batch_episodes < 1 or args.batch_seconds < 1:
        raise ValueError("--batch-seeds must be >= 0, --batch-episodes and --batch-seconds >= 1")
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads must be positive, got {args.threads}")
    if args.episodes:
        eval_every = presets.ablation_config(args.preset).eval_every
        presets.ablation_config(args.preset, episodes=args.episodes, final_window=eval_every, llm=args.llm,
                                record=False)


def command(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch

    from marlinkit.algos.maddpg import MADDPG, MADDPGConfig

    _check_arguments(args)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    obs_dim, obs_source = (args.obs_dim, "--obs-dim") if args.obs_dim else traffic_obs_dim()
    config = MADDPGConfig(seed=args.seed)
    batch_size = args.batch_size or config.batch_size
    if batch_size < 1 or obs_dim < 1:
        raise ValueError("--batch-size and --obs-dim must be positive")
    rng = np.random.default_rng(args.seed)
    buffer = random_buffer(2 * batch_size, obs_dim, rng)
    result: dict[str, Any] = {"n_agents": N_AGENTS, "obs_dim": obs_dim, "obs_dim_source": obs_source,
                              "n_actions": N_PHASES, "batch_size": batch_size, "updates": args.updates,
                              "torch_threads": torch.get_num_threads()}
    for mode in ("batched", "loop"):
        learner = MADDPG(N_AGENTS, obs_dim, N_PHASES, config)
        batches = [buffer.sample(batch_size, rng) for _ in range(args.updates)]
        noises = [learner.noise(batch_size) for _ in range(args.updates)]
        result[f"{mode}_updates_per_s"], result[f"{mode}_cpu_s_per_update"] = time_updates(
            learner, batches, noises, mode)
    result["speedup"] = result["batched_updates_per_s"] / result["loop_updates_per_s"]
    # the same batched update with its products in NumPy's pinned OpenBLAS (MADDPGConfig.products), same batches
    learner = MADDPG(N_AGENTS, obs_dim, N_PHASES, dataclasses.replace(config, products="openblas"))
    result["openblas_updates_per_s"], result["openblas_cpu_s_per_update"] = time_updates(learner, batches, noises,
                                                                                         "batched")
    result["openblas_speedup"] = result["batched_cpu_s_per_update"] / result["openblas_cpu_s_per_update"]
    gflop = update_gflop(learner, batch_size)
    result["update_gflop"] = gflop
    result["batched_gflop_per_cpu_s"] = gflop / result["batched_cpu_s_per_update"]
    result["openblas_gflop_per_cpu_s"] = gflop / result["openblas_cpu_s_per_update"]
    result.update(shared5_timing(obs_dim, args.updates, args.seed))
    result.update(gemm_peaks())
    if args.batch_size is None and obs_source == ENV_SOURCE:  # the paper's update: its floor at 12 seeds
        result["ablation_12_seeds_updates_floor_h"] = updates_floor_h(result["batched_cpu_s_per_update"])
        result["ablation_12_seeds_updates_floor_openblas_h"] = updates_floor_h(result["openblas_cpu_s_per_update"])
        result["ablation_12_seeds_updates_floor_following_h"] = updates_floor_h(result["batched_cpu_s_per_update"],
                                                                                following=True)
        result["ablation_12_seeds_updates_floor_openblas_following_h"] = updates_floor_h(
            result["openblas_cpu_s_per_update"], following=True)
        result["ablation_12_seeds_updates_floor_note"] = updates_floor_note()
    if args.episodes:
        result.update(episode_split(args.preset, args.episodes, args.llm))
    if args.batch_seeds:
        result.update(batched_vs_alone(args.batch_seeds, args.batch_episodes, args.batch_seconds))
        if args.episodes:
            result.update(ablation_12_seeds(result["episode_split_s"], result))
    return result
