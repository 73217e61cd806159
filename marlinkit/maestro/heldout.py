"""Held-out evaluation of MAESTRO's policies: traffic no run trained on, both protocols, beside the baselines.

Every policy is scored on the calibrated scale of the traffic it plays (0 = fixed-time, 165 = max-pressure on that
same traffic, :func:`~marlinkit.maestro.curriculum_env.calibrated_score`):

* **traffic** (:data:`TRAFFIC`): ``real`` (the flow the ablation evaluates on, and A0 trains on), the data set's
  other two flows ``real_5816`` and ``real_5734`` at the project's episode length, and five curriculum contexts
  ``context:<seed>@<d>`` from seeds no run trains on (runs use seeds below 1,600), at difficulties spanning the
  paper's range 0.3-0.9;
* **protocol**: ``greedy`` (the paper's deterministic evaluation, the argmax of the actor) and ``stochastic``
  (the Gumbel-softmax policy it trains, noise from a generator seeded per episode);
* **baselines**: ``random`` (a uniform phase request every second, :data:`RANDOM_DRAWS` seeded draws; the protocol
  column reads ``stochastic``), ``fixed-time`` and ``max-pressure`` (0 and 165 by construction, listed so every
  table and figure can draw them).

A trained run is evaluated from its saved actor (``<run>.actor.pt``: the actor's weights and the MADDPG settings that
rebuild it), so a new evaluation needs no retraining.
"""

from __future__ import annotations

import argparse
import functools
import io
from pathlib import Path
from typing import Any

import numpy as np

from marlinkit.envs.traffic.context import context_for_difficulty
from marlinkit.repro import keys

#: The held-out curriculum contexts: (seed, difficulty).
CONTEXTS: tuple[tuple[int, float], ...] = ((90001, 0.3), (90002, 0.45), (90003, 0.6), (90004, 0.75), (90005, 0.9))
TRAFFIC: tuple[str, ...] = ("real", "real_5816", "real_5734", *(f"context:{s}@{d}" for s, d in CONTEXTS))
PROTOCOLS = ("greedy", "stochastic")
RANDOM_DRAWS = 10
#: The columns of ``heldout_evaluation.csv``.
COLUMNS = ("configuration", "seed", "traffic", "protocol", "score")
EVAL_SEED = 1_000_000


def make_env(traffic: str, engine: str = "cityflow", seconds: int = 360):
    """The traffic environment playing ``traffic`` (a name of :data:`TRAFFIC`, or any ``context:<seed>@<d>``)."""
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv

    if traffic.startswith("context:"):
        seed, difficulty = traffic[len("context:"):].split("@")
        context = context_for_difficulty(float(difficulty), int(seed), seconds)
        return TrafficSignalEnv(TrafficEnvConfig(engine=engine, context=context, episode_seconds=seconds))
    return TrafficSignalEnv(TrafficEnvConfig(engine=engine, flow=traffic, episode_seconds=seconds))


@functools.cache
def calibration(traffic: str, engine: str = "cityflow", seconds: int = 360) -> tuple[float, float]:
    """Fixed-time's and max-pressure's returns on ``traffic``: the score's 0 and 165."""
    from marlinkit.envs.traffic.controllers import controller_episode

    env = make_env(traffic, engine, seconds)
    try:
        return tuple(controller_episode(env, name, EVAL_SEED)[0] for name in ("fixed-time", "max-pressure"))
    finally:
        env.close()


def score(traffic: str, episode_return: float, engine: str = "cityflow", seconds: int = 360) -> float:
    from marlinkit.maestro.curriculum_env import calibrated_score

    return float(calibrated_score(episode_return, *calibration(traffic, engine, seconds)))


def random_scores(traffic: str = "real", engine: str = "cityflow", seconds: int = 360,
                  draws: int = RANDOM_DRAWS) -> np.ndarray:
    """The random switcher's calibrated scores on ``traffic``: draw k requests a uniform phase every second from a
    generator seeded with k, for k < ``draws``."""
    from marlinkit.envs.traffic.controllers import play_episode

    env = make_env(traffic, engine, seconds)
    try:
        returns = []
        for draw in range(draws):
            rng = np.random.default_rng(draw)
            returns.append(play_episode(env, lambda e, rng=rng: {a: int(rng.integers(4)) for a in e.possible_agents},
                                        EVAL_SEED))
    finally:
        env.close()
    return np.array([score(traffic, ret, engine, seconds) for ret in returns])


def random_rows(engine: str = "cityflow", seconds: int = 360, draws: int = RANDOM_DRAWS) -> list[dict[str, Any]]:
    """The random switcher (:func:`random_scores`) on every traffic of :data:`TRAFFIC`, and both baselines."""
    rows = []
    for traffic in TRAFFIC:
        rows += [{"configuration": "random", "seed": draw, "traffic": traffic, "protocol": "stochastic",
                  "score": float(value)} for draw, value in enumerate(random_scores(traffic, engine, seconds, draws))]
        for name, value in (("fixed-time", 0.0), ("max-pressure", 165.0)):
            rows += [{"configuration": name, "seed": 0, "traffic": traffic, "protocol": p, "score": value}
                     for p in PROTOCOLS]
    return rows


def actor_bytes(learner) -> bytes:
    """A trained learner's actor (a DQN's Q-network) and the settings that rebuild it: the bytes of
    ``<run>.actor.pt``."""
    from dataclasses import asdict

    import torch

    from marlinkit.algos.shared_dqn import SharedDQN

    buffer = io.BytesIO()
    kind = "dqn" if isinstance(learner, SharedDQN) else "maddpg"
    fields = asdict(learner.config) if kind == "dqn" else keys.maddpg_key(learner.config)
    settings = {**fields, "seed": learner.config.seed}
    torch.save({"learner": kind, "config": settings, "n_agents": learner.n,
                "obs_dim": learner.obs_dim, "n_actions": learner.n_actions,
                "actor": learner.actor.state_dict()}, buffer)
    return buffer.getvalue()


def load_actor(path: Path):
    """The learner a ``.actor.pt`` file saved (its actor trained, the rest fresh)."""
    import torch

    from marlinkit.algos.maddpg import MADDPGConfig, make_learner
    from marlinkit.algos.shared_dqn import DQNConfig, SharedDQN

    saved = torch.load(path, weights_only=True)
    shape = (saved["n_agents"], saved["obs_dim"], saved["n_actions"])
    if saved["learner"] == "dqn":
        learner = SharedDQN(*shape, DQNConfig(**saved["config"]))
    else:
        learner = make_learner(*shape, MADDPGConfig(**saved["config"]))
    learner.actor.load_state_dict(saved["actor"])
    return learner


def learner_rows(configuration: str, seed: int, learner, engine: str = "cityflow",
                 seconds: int = 360) -> list[dict[str, Any]]:
    """A trained learner on every held-out traffic under both protocols."""
    from marlinkit.algos.maddpg import evaluate

    rows = []
    for traffic in TRAFFIC:
        env = make_env(traffic, engine, seconds)
        try:
            for protocol in PROTOCOLS:
                ret = evaluate(env, learner, EVAL_SEED, policy=protocol)
                rows.append({"configuration": configuration, "seed": seed, "traffic": traffic, "protocol": protocol,
                             "score": score(traffic, ret, engine, seconds)})
        finally:
            env.close()
    return rows


def train_peer(seed: int, episodes: int, engine: str = "cityflow", seconds: int = 360, progress=None):
    """The parameter-shared DQN (:mod:`marlinkit.algos.shared_dqn`) trained on the real flow, as A0 trains: its
    learner and one row per training episode (return and calibrated score)."""
    from marlinkit.algos.maddpg import env_dims, run_episode
    from marlinkit.algos.replay_buffer import ReplayBuffer
    from marlinkit.algos.shared_dqn import DQNConfig, SharedDQN

    config = DQNConfig(seed=seed)
    env = make_env("real", engine, seconds)
    try:
        agents, obs_dim, n_actions = env_dims(env)
        learner = SharedDQN(len(agents), obs_dim, n_actions, config)
        buffer = ReplayBuffer(config.buffer_size, len(agents), obs_dim)
        rows, steps = [], 0
        for episode in range(episodes):
            learner.set_episode(episode)
            out = run_episode(env, learner, seed + episode, True, buffer, steps)
            steps += out["steps"]
            rows.append({"episode": episode, "return": out["return"], "score": score("real", out["return"], engine,
                                                                                      seconds)})
            if progress is not None:
                progress(episode, rows[-1])
    finally:
        env.close()
    return learner, rows


def table(run_folders: list[Path], engine: str = "cityflow", seconds: int = 360, draws: int = RANDOM_DRAWS):
    """``heldout_evaluation.csv``'s rows: the baselines, then every run with a saved actor in ``run_folders``
    (configuration and seed from its file name ``<configuration>__seed<seed>.actor.pt``), sorted."""
    import pandas as pd

    rows = random_rows(engine, seconds, draws)
    for folder in run_folders:
        for path in sorted(Path(folder).glob("*__seed*.actor.pt")):
            configuration, seed = path.name[: -len(".actor.pt")].split("__seed")
            rows += learner_rows(configuration, int(seed), load_actor(path), engine, seconds)
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    return out.sort_values(["configuration", "seed", "traffic", "protocol"], kind="stable").reset_index(drop=True)


#: Where the peer learner's trained networks go (one ``dqn__seed<seed>.actor.pt`` per seed).
PEER_FOLDER = Path("data/results/maestro/paper/peer_dqn")
OUTPUT = Path("figures/paper/maestro/heldout_evaluation.csv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train-peer", nargs="+", type=int, metavar="SEED", default=[],
                        help="train the shared DQN on the real flow for these seeds first (saved under "
                             f"{PEER_FOLDER}/, a seed already there is kept)")
    parser.add_argument("--episodes", type=int, default=30, help="the peer's training episodes (default 30)")
    parser.add_argument("--runs", nargs="*", type=Path, default=[], help="folders of runs with saved actors")
    parser.add_argument("--out", type=Path, default=OUTPUT, help=f"the table (default {OUTPUT})")


def command(args: argparse.Namespace) -> dict[str, Any]:
    """Train the peer learner where asked, then score every saved actor and the baselines on the held-out traffic."""
    from marlinkit import paths
    from marlinkit.files import atomic_write_bytes, atomic_write_text

    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    folders = [Path(f) for f in args.runs]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        raise FileNotFoundError(f"no such run folder: {', '.join(missing)}")
    peers = paths.REPO_ROOT / PEER_FOLDER
    for seed in args.train_peer:
        target = peers / f"dqn__seed{seed}.actor.pt"
        if not target.exists():
            learner, rows = train_peer(seed, args.episodes)
            atomic_write_bytes(target, actor_bytes(learner))
            print(f"peer DQN seed {seed}: final training score {rows[-1]['score']:.1f}", flush=True)
    if peers.is_dir():
        folders.append(peers)
    out = table(folders)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, out.to_csv(index=False))
    return {"rows": len(out), "configurations": sorted(out.configuration.unique()), "out": str(args.out)}
