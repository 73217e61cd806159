"""Cost of pinned numerics: the same MAPPO training and MADDPG updates, pinned vs native, in CPU seconds.

Each measurement runs in a fresh interpreter (the pins act before torch loads), pinned and native
interleaved ``--pairs`` times so that load from other jobs falls on both alike; CPU time
(``process_time``), one torch thread in both, the minimum over pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

_PROBE = r"""
import json, sys, time
import marlinkit
import numpy as np
from marlinkit.algos import maddpg
from marlinkit.algos.replay_buffer import ReplayBuffer
from marlinkit.algos.mappo import MAPPOConfig, train
from marlinkit.envs.corridor.layouts import get_layout
episodes, updates = int(sys.argv[1]), int(sys.argv[2])
start = time.process_time()
train(MAPPOConfig(), get_layout("single_slot"), n_envs=15, episodes=episodes, seed=0)
mappo = time.process_time() - start
rng = np.random.default_rng(0)
learner = maddpg.MADDPG(16, 9, 4, maddpg.MADDPGConfig(hidden=64, batch_size=1024, buffer_size=4096))
buffer = ReplayBuffer(4096, 16, 9)
for _ in range(4096):
    buffer.add(rng.normal(size=(16, 9)), rng.integers(4, size=16), rng.normal(size=16), rng.normal(size=(16, 9)),
               rng.random(16) < 0.05)
batches = [buffer.sample(1024, rng) for _ in range(updates)]
start = time.process_time()
for batch in batches:
    learner.update(batch, learner.noise(1024), "batched")
print(json.dumps({"mappo_cpu_s": mappo, "maddpg_cpu_s": time.process_time() - start}))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pinned/native pairs (default: 3)")
    parser.add_argument("--episodes", type=int, default=12, help="MAPPO episodes per copy (15 copies; default: 12)")
    parser.add_argument("--updates", type=int, default=20, help="MADDPG updates, 16 agents, batch 1024 (default: 20)")


def _measure(mode: str, episodes: int, updates: int) -> dict[str, float]:
    env = {**os.environ, "MARLINKIT_NUMERICS": mode, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", _PROBE, str(episodes), str(updates)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def command(args: argparse.Namespace) -> dict[str, Any]:
    if min(args.pairs, args.episodes, args.updates) < 1:
        raise ValueError("--pairs, --episodes and --updates must be positive")
    runs: dict[str, list[dict[str, float]]] = {"pinned": [], "native": []}
    for _ in range(args.pairs):
        for mode in runs:
            runs[mode].append(_measure(mode, args.episodes, args.updates))
    best = {mode: {key: min(r[key] for r in rows) for key in rows[0]} for mode, rows in runs.items()}
    from marlinkit.repro import numerics

    return {
        "cpu": numerics.state()["cpu"],
        "pairs": args.pairs,
        # to the microsecond: the costs below follow from the printed seconds even for a one-update smoke run
        "mappo_cpu_s": {mode: round(b["mappo_cpu_s"], 6) for mode, b in best.items()},
        "maddpg_cpu_s": {mode: round(b["maddpg_cpu_s"], 6) for mode, b in best.items()},
        "mappo_cost": round(best["pinned"]["mappo_cpu_s"] / best["native"]["mappo_cpu_s"] - 1, 3),
        "maddpg_update_cost": round(best["pinned"]["maddpg_cpu_s"] / best["native"]["maddpg_cpu_s"] - 1, 3),
    }
