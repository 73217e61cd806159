"""Stacked multi-seed MADDPG: every seed gets, byte for byte, the numbers it gets alone (S = 1, same code)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from marlinkit.algos import maddpg
from marlinkit.algos.maddpg import MADDPGConfig
from marlinkit.algos.maddpg_seeds import SubprocessEnv, train_seeds
from tests.algos.test_maddpg import SMALL, SignalMatchEnv, _random_batch

NETS = ("actor", "critic", "target_actor", "target_critic")


def _rows(rows, seed):
    keys = ("episode", "return", "steps", "updates", "eval_return_stochastic", "eval_return_greedy")
    return [tuple(np.nan_to_num(r[k], nan=-1e9) for k in keys) for r in rows if r["seed"] == seed]


def _weights(learner, index, n_agents):
    """Seed ``index``'s rows of every stacked weight, as bytes."""
    rows = slice(index * n_agents, (index + 1) * n_agents)
    return [p.detach()[rows].numpy().tobytes() for net in NETS for p in getattr(learner, net).parameters()]


def test_stacked_seeds_give_the_numbers_each_seed_gives_alone():
    config = MADDPGConfig(**SMALL)
    seeds = (7, 8, 9)
    stacked, rows = train_seeds([SignalMatchEnv() for _ in seeds], config, seeds, episodes=10, eval_every=3)
    assert max(r["updates"] for r in rows) > 0 and len({r["return"] for r in rows}) > 3
    for index, seed in enumerate(seeds):
        alone, alone_rows = train_seeds([SignalMatchEnv()], config, (seed,), episodes=10, eval_every=3)
        assert _rows(rows, seed) == _rows(alone_rows, seed)
        assert _weights(stacked, index, 3) == _weights(alone, 0, 3)
        assert torch.equal(stacked.generators[index].get_state(), alone.generator.get_state())
    assert _rows(rows, 7) != _rows(rows, 8)  # the seeds really differ


def test_one_seed_stacked_is_the_plain_learner():
    """S = 1 through train_seeds is maddpg.train's learner: same initial weights, same training returns."""
    config = MADDPGConfig(seed=11, eval_every=100, **SMALL)
    plain, plain_rows = maddpg.train(SignalMatchEnv(), config, episodes=6)
    stacked, rows = train_seeds([SignalMatchEnv()], config, (11,), episodes=6)
    assert [r["return"] for r in plain_rows] == [r["return"] for r in rows]
    assert _weights(plain, 0, 3) == _weights(stacked, 0, 3)


def test_stacked_learner_validates_its_inputs():
    with pytest.raises(ValueError, match="distinct"):
        maddpg.MADDPG(3, 4, 4, MADDPGConfig(**SMALL), seeds=(1, 1))
    learner = maddpg.MADDPG(3, 4, 4, MADDPGConfig(**SMALL), seeds=(1, 2))
    with pytest.raises(ValueError, match="one env"):
        maddpg.run_episodes([SignalMatchEnv()], learner, [0], True)
    batch = {k: torch.stack([v, v]) for k, v in _random_batch(n_agents=3, obs_dim=4, size=16).items()}
    with pytest.raises(ValueError, match="one seed"):
        learner.update(batch, learner.noise(16), mode="loop")


def _traffic_env(seconds):
    from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv

    return TrafficSignalEnv(TrafficEnvConfig(episode_seconds=seconds))


@pytest.mark.slow
def test_traffic_seeds_in_worker_processes_match_alone():
    """Two seeds on the Hangzhou network (one libsumo simulation per worker) vs the first alone."""
    config = MADDPGConfig(batch_size=32, buffer_size=200, learning_starts=32, update_every=20, hidden=16)
    envs = [SubprocessEnv(_traffic_env, 40) for _ in range(2)]
    try:
        stacked, rows = train_seeds(envs, config, (200, 300), episodes=2, eval_every=2)
        alone, alone_rows = train_seeds(envs[:1], config, (200,), episodes=2, eval_every=2)
    finally:
        for env in envs:
            env.close()
    assert max(r["updates"] for r in rows) > 0
    assert _rows(rows, 200) == _rows(alone_rows, 200) and _rows(rows, 200) != _rows(rows, 300)
    assert _weights(stacked, 0, 16) == _weights(alone, 0, 16)
