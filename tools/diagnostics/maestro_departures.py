"""Which of shared5's two departures from the paper's MADDPG carries its gain: A0 on the real flow per MADDPG setting.

    python tools/diagnostics/maestro_departures.py shared5 shared1 separate5 ue25_openblas

Each setting (``marlinkit/settings/maddpg_settings.toml``) trains A0 (no curriculum: the real Hangzhou flow every
episode) for ``EPISODES`` episodes (default 30) with seed ``SEED`` (default 200) through the ablation's own loop on
CityFlow, the reference architect's settings and the paper's curriculum target, into ``OUT/<setting>`` (default
/tmp/maestro_departures), and prints one JSON line: wall and MADDPG seconds, the greedy and stochastic evaluation
scores on the real flow (every 2 episodes) and the last 5 training episodes' mean score. A diagnosis of one seed, not
a result: its runs are never committed. About 3-5 CPU-min per shared setting, 15-30 for the paper's networks.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time

from marlinkit import presets
from marlinkit.maestro import ablation, reference_queue


def diagnose(setting: str, episodes: int, seed: int, out: str) -> dict:
    """Train A0 under MADDPG ``setting`` and summarise its evaluations."""
    cfg = presets.ablation_config("paper", record=False, **{**reference_queue.overrides("reference", setting, "paper"),
                                  "seeds": (seed,), "ablations": ("A0",), "episodes": episodes, "final_window": 2,
                                  "workers": 1})
    started = time.perf_counter()
    table = ablation.run(dataclasses.replace(cfg, root=os.path.join(out, setting), progress=False)).episodes
    evaluated = table.dropna(subset=["eval_score_greedy"])
    return {"setting": setting, "wall_s": round(time.perf_counter() - started),
            "train_s": round(float(table.train_s.sum())),
            "greedy": [round(float(x), 1) for x in evaluated.eval_score_greedy],
            "stochastic": [round(float(x), 1) for x in evaluated.eval_score_stochastic],
            "train_score_last5": round(float(table.score.tail(5).mean()), 1)}


if __name__ == "__main__":
    for name in sys.argv[1:] or ["shared5", "shared1", "separate5", "ue25_openblas"]:
        print(json.dumps(diagnose(name, int(os.environ.get("EPISODES", 30)), int(os.environ.get("SEED", 200)),
                                  os.environ.get("OUT", "/tmp/maestro_departures"))), flush=True)
