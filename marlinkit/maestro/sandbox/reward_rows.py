"""Real reward-function inputs for sandbox validation, recorded once from the SUMO Hangzhou env.

Validation must not be told apart from training (a reward that behaved on synthetic rows
and paid for queues on real, integer-valued traffic passed). So the sandbox validates on whole
episodes of *simulated* ``metrics`` rows, in time order, as training would send them (360 s x 16
intersections = 5,760 calls per episode), followed by the synthetic edge cases of
:func:`marlinkit.maestro.sandbox.sample_rollouts`.

The rows are derived numbers (the :class:`marlinkit.maestro.sandbox.limits.RewardInputs` of each intersection and
second), not the Hangzhou data files. ``reward_rows.csv.gz`` beside this module is what
:func:`record` wrote (``python -m marlinkit reward-rows``): SUMO, 360 s each of (1) the real
Hangzhou flow and (2) the hardest curriculum context (d = 1.0, seed 0: the heaviest traffic
training meets), each signal requesting a seeded random phase every 10 s (a policy early in
training: queues build up, to 28 vehicles in episode 1 and 69 in episode 2).
"""

from __future__ import annotations

import io
import gzip
from pathlib import Path

import numpy as np

PATH = Path(__file__).with_name("reward_rows.csv.gz")
SECONDS = 360  # the paper's episode length
DIFFICULTIES = (None, 1.0)  # the episodes: the real flow, then the curriculum context of the hardest d
INDEX = ("episode", "second", "agent")


def record(seconds: int = SECONDS, seed: int = 0, engine: str = "sumo") -> np.ndarray:
    """Run the :data:`DIFFICULTIES` episodes; rows (episode, second, agent, *FIELD_NAMES) in time order."""
    from marlinkit.envs.traffic.context import context_for_difficulty
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv
    from marlinkit.maestro.sandbox.limits import FIELD_NAMES, RewardInputs

    rows = []
    for episode, difficulty in enumerate(DIFFICULTIES):
        context = None if difficulty is None else context_for_difficulty(difficulty, seed)
        env = TrafficSignalEnv(TrafficEnvConfig(engine=engine, episode_seconds=seconds, seed=seed, context=context))
        rng = np.random.default_rng(seed)
        agents = env.possible_agents
        inputs = RewardInputs(len(agents))
        obs, _ = env.reset(seed=seed)
        actions = {a: 0 for a in agents}
        try:
            for t in range(seconds):
                if t % 10 == 0:
                    actions = {a: int(rng.integers(0, 4)) for a in agents}
                obs, _, _, _, infos = env.step(actions)
                metrics = inputs.update(np.stack([obs[a] for a in agents]), infos, agents, env.current_phases)
                for i in range(len(agents)):
                    rows.append([episode, t, i] + [float(metrics[name][i]) for name in FIELD_NAMES])
        finally:
            env.close()
    return np.array(rows)


def save(rows: np.ndarray, path: Path = PATH) -> None:
    """Write ``rows`` as gzip'd CSV (mtime 0: same rows, same bytes)."""
    from marlinkit.maestro.sandbox.limits import FIELD_NAMES

    text = io.StringIO()
    text.write(",".join(INDEX + FIELD_NAMES) + "\n")
    for row in rows:
        # repr: the shortest text that reads back as the same float, so the rows carry every digit
        # training would send (rounded values would tell a reward it is being validated)
        text.write(",".join([str(int(v)) for v in row[:3]] + [repr(float(v)) for v in row[3:]]) + "\n")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(text.getvalue().encode())


def load(path: Path = PATH) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The recorded rows as ``(metrics, index)``: each field an array in time order; index columns :data:`INDEX`."""
    from marlinkit.maestro.sandbox.limits import FIELD_NAMES

    if not path.is_file():
        raise FileNotFoundError(f"recorded reward rows missing: {path} (python -m marlinkit reward-rows)")
    with gzip.open(path, "rt") as handle:
        header = handle.readline().strip().split(",")
        data = np.loadtxt(handle, delimiter=",", ndmin=2)
    if tuple(header) != INDEX + FIELD_NAMES:
        raise ValueError(f"{path}: columns {header} are not {INDEX + FIELD_NAMES}")
    return {name: data[:, len(INDEX) + i] for i, name in enumerate(FIELD_NAMES)}, data[:, :len(INDEX)]
