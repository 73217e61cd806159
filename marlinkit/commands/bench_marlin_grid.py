"""Hours per seed of the paper's MARLIN grid on 2 cores: batched multi-run trainer vs one run at a time.

The paper grid of one seed is 10 trainings (5 scenarios x MARL/MARLIN), each 15 copies x 1600
episodes with the authors' MAPPO settings (4000 steps per update, 30 epochs of 128 rows). This
measures a slice of it in this process on one torch thread: ``--episodes`` episodes of every
training of ``--seeds`` seeds, (a) as one batch (``marlinkit.algos.mappo.train_runs``) and (b) one
training after the other (``mappo.train``, the grid runner's "one-at-a-time" trainer), then projects each
to 1600 episodes and to 2 cores (two such processes side by side: the single-core time halved).
Wall-clock figures are the ones asked for; ``*_from_cpu_time`` use the process's CPU time, which a
loaded machine disturbs less.
MARLIN's plans come from the calibrated surrogate planner (the presets' plan source). Checkpoint
evaluations (3 x 50 sampled runs per training) are left out of both: a few seconds per training.
The projection is linear in episodes; the first episodes make more new plans than later ones,
so MARLIN's share is, if anything, over-estimated.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

PAPER_EPISODES = 1600
CORES = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=12,
                        help="episodes per training in the measured slice (default 12)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds of the grid batched together (default 1: 10 runs)")
    parser.add_argument("--no-alone", action="store_true", help="skip the one-at-a-time measurement")


def command(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from marlinkit import presets
    from marlinkit.marlin import batched as marlin_batched
    from marlinkit.marlin.surrogate_planner import CalibratedSurrogatePlanner

    if args.episodes < 1 or args.seeds < 1:
        raise ValueError(f"--episodes and --seeds must be >= 1, got {args.episodes} and {args.seeds}")
    torch.set_num_threads(1)
    config = presets.get("paper", "fig3_training", episodes=args.episodes, checkpoints=[],
                         seeds=list(range(args.seeds)))
    config = dataclasses.replace(config, plan_budget=None)
    jobs = [(scenario, system, seed) for seed in range(args.seeds) for scenario in config.scenarios
            for system in ("MARL", "MARLIN")]
    scale = PAPER_EPISODES / args.episodes / args.seeds / CORES / 3600
    batched_s, batched_cpu_s = marlin_batched.timed(jobs, config, CalibratedSurrogatePlanner(), batched=True)
    result: dict[str, Any] = {
        "runs_batched": len(jobs), "slice_episodes": args.episodes, "n_envs": config.n_envs,
        "batched_slice_s": batched_s, "paper_grid_hours_per_seed": batched_s * scale,
        "paper_grid_hours_per_seed_from_cpu_time": batched_cpu_s * scale,
        "torch_threads": 1, "cores_projected": CORES, "load_average_1min": os.getloadavg()[0],
    }
    if not args.no_alone:
        alone_s, alone_cpu_s = marlin_batched.timed(jobs, config, CalibratedSurrogatePlanner(), batched=False)
        result.update(alone_slice_s=alone_s, paper_grid_hours_per_seed_one_at_a_time=alone_s * scale,
                      paper_grid_hours_per_seed_one_at_a_time_from_cpu_time=alone_cpu_s * scale,
                      speedup_batched_vs_one_at_a_time=alone_s / batched_s,
                      speedup_from_cpu_time=alone_cpu_s / batched_cpu_s)
    return result
