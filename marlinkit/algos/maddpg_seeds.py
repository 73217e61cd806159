"""Several seeds of one MADDPG configuration trained in one process, as stacked networks.

:class:`~marlinkit.algos.maddpg.MADDPG` with ``seeds=(s1, ..., sS)`` stacks S independent
learners on its agent axis (S*N rows); :func:`train_seeds` steps one environment per seed in
lockstep (:func:`~marlinkit.algos.maddpg.run_episodes`): all seeds act in one forward pass and
update in one batched step. Each seed's numbers are those it gets alone: the alone run is the same
code with S = 1 (``tests/algos/test_maddpg_seeds.py`` checks training rows, evaluations and final
weights byte for byte).

libsumo holds one simulation per process, so the traffic environments of a stacked run live in
worker processes (:class:`SubprocessEnv`, one simulation each, stepped in parallel); the learner
stays in the calling process.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any, Callable

import numpy as np

from marlinkit.algos.maddpg import MADDPG, MADDPGConfig, env_dims, evaluate_seeds, run_episodes, seed_everything
from marlinkit.algos.replay_buffer import ReplayBuffer


def _serve(pipe, make_env: Callable, args: tuple) -> None:
    """Worker loop: build the env, then answer (command, payload) messages until "close"."""
    env = make_env(*args)
    try:
        pipe.send({"agents": list(env.possible_agents),
                   "spaces": [(env.observation_space(a), env.action_space(a)) for a in env.possible_agents]})
        while True:
            command, payload = pipe.recv()
            if command == "reset":
                out = env.reset(**payload)
            elif command == "step":
                out = env.step(payload)
            elif command == "close":
                break
            else:
                raise ValueError(f"unknown command {command!r}")
            pipe.send((out, list(env.agents), getattr(env, "last_metrics", None)))
    finally:
        env.close()
        pipe.close()


class SubprocessEnv:
    """A ParallelEnv in a spawned process of its own (e.g. one libsumo simulation per seed).

    ``make_env(*args)`` builds it there (a picklable module-level function). ``reset`` and ``step``
    behave as the env's; ``step_async`` + ``step_wait`` let several workers simulate at once;
    ``last_metrics`` mirrors the env's attribute after every call.
    """

    def __init__(self, make_env: Callable, *args: Any):
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, make_env, args), daemon=True)
        self._process.start()
        child.close()
        hello = self._pipe.recv()
        self.possible_agents = hello["agents"]
        self._spaces = dict(zip(self.possible_agents, hello["spaces"]))
        self.agents: list[str] = []
        self.last_metrics = None

    def observation_space(self, agent):
        return self._spaces[agent][0]

    def action_space(self, agent):
        return self._spaces[agent][1]

    def _receive(self):
        out, self.agents, self.last_metrics = self._pipe.recv()
        return out

    def reset(self, seed=None, options=None):
        self._pipe.send(("reset", {"seed": seed, "options": options}))
        return self._receive()

    def step_async(self, actions) -> None:
        self._pipe.send(("step", actions))

    def step_wait(self):
        return self._receive()

    def step(self, actions):
        self.step_async(actions)
        return self.step_wait()

    def close(self) -> None:
        if self._process.is_alive():
            self._pipe.send(("close", None))
            self._process.join(timeout=30)
        self._pipe.close()


def train_seeds(envs: list, config: MADDPGConfig, seeds: tuple[int, ...], episodes: int, eval_every: int = 0,
                eval_seed: int = 1_000_000, policies: tuple[str, ...] = ("stochastic", "greedy")
                ) -> tuple[MADDPG, list[dict[str, Any]]]:
    """Train ``seeds`` of one configuration stacked, one env each (``envs[k]`` for ``seeds[k]``).

    Training episode k of seed s is reset with ``s + k`` (as :func:`~marlinkit.algos.maddpg.train`);
    every ``eval_every``-th episode (0: never) each seed's ``policies`` are evaluated on SUMO seed
    ``eval_seed``. Returns the stacked learner and one row per (seed, episode) with
    ``eval_return_<policy>`` (NaN between evaluations).
    """
    if episodes < 1 or eval_every < 0:
        raise ValueError("episodes must be >= 1 and eval_every >= 0")
    seed_everything(seeds[0])
    agents, obs_dim, n_actions = env_dims(envs[0])
    learner = MADDPG(len(agents), obs_dim, n_actions, config, seeds=tuple(seeds))
    buffers = [ReplayBuffer(config.buffer_size, len(agents), obs_dim) for _ in seeds]
    rows, step_count = [], 0
    for episode in range(episodes):
        started = time.perf_counter()
        results = run_episodes(envs, learner, [s + episode for s in seeds], True, buffers, step_count)
        step_count += results[0]["steps"]
        evaluations = {}
        if eval_every and (episode + 1) % eval_every == 0:
            evaluations = {p: evaluate_seeds(envs, learner, eval_seed, policy=p) for p in policies}
        wall = time.perf_counter() - started
        for k, (seed, result) in enumerate(zip(seeds, results)):
            rows.append({"seed": seed, "episode": episode, **result, "wall_s": wall,
                         **{f"eval_return_{p}": float(evaluations[p][k]) if evaluations else np.nan for p in policies}})
    return learner, rows
