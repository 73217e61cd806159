"""MAPPO training throughput (environment steps/s) beside RLlib's PPO doing the same work.

Identical work on both sides: one corridor scenario, 15 environment copies, 4000 environment
steps per iteration, 30 epochs of 128-row minibatches, a 4 -> 256 -> 256 -> 5 tanh policy. Ours
runs on one torch thread. RLlib 2.60 (new API stack, the authors' stack; optional ``bench``
extra) runs its PPO with the same batch settings; its value function shares the policy's trunk
(``vf_share_layers``) so its network work matches ours (our 13 -> 16 -> 1 critic is negligible
next to the 256 x 256 layer). ``floor_steps_per_s`` is the rate the network work alone allows
in the textbook loop: one iteration's rollout forward passes and 30 x rows / 128 steps of
``zero_grad``, ``backward`` through a trivial loss and ``torch.optim.Adam(fused=True).step`` on the
same networks. Ours exceeds it (``fraction_of_floor`` > 1): the fused Adam kernel without the
optimizer object's bookkeeping, the loss's and the networks' gradients written out, and (by
default) the actor run once per distinct observation of a batch (``MAPPOConfig.distinct_obs``:
the same gradients, a few dozen actor rows per minibatch instead of 128). ``*_per_row`` keys
measure ours with that off, every row through the actor as RLlib does: the like-for-like
ratio. ``autograd_steps_per_s`` is ours training by ``loss.backward()`` through ``ppo_loss``
(``MAPPOConfig(gradients="autograd")``); ``closed_form_vs_autograd`` is the closed form's speed-up over it like
for like (both run the actor once per distinct observation; ``_per_row``: both once per row).
Larger minibatches or fewer epochs are a separate option (``--epochs``/``--minibatch``) and then the RLlib side
is skipped: they are never part of the ratio.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

RLLIB_ITERATIONS = 3  # time-box: one warm-up iteration, then this many timed ones


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="single_slot", help="corridor layout (default single_slot)")
    parser.add_argument("--iterations", type=int, default=3, help="timed training iterations of ours (default 3)")
    parser.add_argument("--epochs", type=int, default=30,
                        help="epochs per iteration (30 = the authors'; other values skip RLlib)")
    parser.add_argument("--minibatch", type=int, default=128,
                        help="minibatch rows (128 = the authors'; other values skip RLlib)")
    parser.add_argument("--no-rllib", action="store_true", help="skip the RLlib side")


def _ours(config, layout, iterations: int) -> tuple[float, int]:
    from marlinkit.algos import mappo

    n_envs = 15
    episodes = max(1, math.ceil(iterations * config.steps_per_iteration / (n_envs * 50)))
    started = time.perf_counter()
    mappo.train(config, layout, n_envs=n_envs, episodes=episodes, seed=0)
    return time.perf_counter() - started, episodes * n_envs * 50


def _floor_seconds(config) -> float:
    """Textbook loop: the rollout's policy forward passes, then epochs x rows / minibatch torch.optim.Adam steps."""
    import torch

    from marlinkit.algos import mappo, mappo_rollouts

    n_envs = 15
    horizon = round(config.steps_per_iteration / n_envs)
    rows = horizon * n_envs * 2
    layers = mappo.initial_layers(config, seed=0)
    actor = torch.nn.Sequential(layers[0], torch.nn.Tanh(), layers[1], torch.nn.Tanh(), layers[2])
    critic = torch.nn.Sequential(layers[3], torch.nn.Tanh(), layers[4])
    optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=config.lr, fused=True)
    obs = torch.randint(0, 8, (rows, mappo_rollouts.OBS_SIZE)).float()
    critic_in = torch.rand(rows, mappo_rollouts.CRITIC_SIZE)
    actions = torch.randint(0, 5, (rows, 1))
    started = time.perf_counter()
    with torch.no_grad():
        for t in range(horizon):
            actor(obs[t * n_envs * 2:(t + 1) * n_envs * 2])
    for _ in range(config.update_epochs):
        order = torch.randperm(rows)
        for start in range(0, rows - config.minibatch_size + 1, config.minibatch_size):
            idx = order[start:start + config.minibatch_size]
            loss = (torch.log_softmax(actor(obs[idx]), -1).gather(1, actions[idx]).mean()
                    + critic(critic_in[idx]).square().mean())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return time.perf_counter() - started


def _rllib(layout_name: str) -> dict[str, Any]:
    """RLlib PPO on the same corridor; seconds per iteration after one warm-up iteration."""
    import gymnasium as gym
    import numpy as np
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    from marlinkit.envs.corridor import core
    from marlinkit.envs.corridor.layouts import get_layout

    class Corridor(MultiAgentEnv):
        def __init__(self, config=None):
            super().__init__()
            self.arrays = core.layout_arrays(get_layout(layout_name))
            self.agents = self.possible_agents = ["robot_0", "robot_1"]
            space = gym.spaces.Box(0, 8, (4,), np.float32)
            self.observation_spaces = {a: space for a in self.agents}
            self.action_spaces = {a: gym.spaces.Discrete(5) for a in self.agents}

        def _obs(self):
            obs = core.observe(self.arrays, self.state)[0].astype(np.float32)
            return {a: obs[i] for i, a in enumerate(self.agents)}

        def reset(self, *, seed=None, options=None):
            self.state = core.reset(self.arrays, 1)
            return self._obs(), {}

        def step(self, action_dict):
            result = core.step(self.arrays, self.state, np.array([[action_dict[a] for a in self.agents]]))
            self.state = result.state
            done = bool(result.done[0])
            return (self._obs(), {a: float(result.reward[0, i]) for i, a in enumerate(self.agents)},
                    {"__all__": done}, {"__all__": False}, {})

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        config = (PPOConfig().environment(Corridor)
                  .env_runners(num_env_runners=1, num_envs_per_env_runner=15)
                  .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *a, **k: "shared")
                  .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[256, 256], fcnet_activation="tanh",
                                                             vf_share_layers=True))
                  .training(lr=1e-5, clip_param=0.2, kl_coeff=0.01, vf_loss_coeff=0.005,
                            train_batch_size_per_learner=4000,
                            minibatch_size=128, num_epochs=30))
        algo = config.build_algo()
        algo.train()  # warm-up: actor start, first sampling
        started = time.perf_counter()
        steps = 0
        for _ in range(RLLIB_ITERATIONS):
            result = algo.train()
            steps += int(result["env_runners"]["num_env_steps_sampled"])
        seconds = time.perf_counter() - started
        algo.stop()
    finally:
        ray.shutdown()
    return {"rllib_steps_per_s": steps / seconds, "rllib_seconds_per_iteration": seconds / RLLIB_ITERATIONS}


def command(args: argparse.Namespace) -> dict[str, Any]:
    import dataclasses
    import importlib.util
    import os

    import torch

    from marlinkit.algos import mappo
    from marlinkit.envs.corridor.layouts import get_layout

    if args.iterations < 1:
        raise ValueError(f"--iterations must be >= 1, got {args.iterations}")
    torch.set_num_threads(1)
    config = mappo.MAPPOConfig(update_epochs=args.epochs, minibatch_size=args.minibatch)
    layout = get_layout(args.scenario)
    per_row = dataclasses.replace(config, distinct_obs=False)
    _ours(config, layout, 1)  # warm-up
    seconds, steps = _ours(config, layout, args.iterations)
    per_row_seconds, _ = _ours(per_row, layout, args.iterations)
    autograd_seconds, _ = _ours(dataclasses.replace(config, gradients="autograd"), layout, args.iterations)
    autograd_per_row_seconds, _ = _ours(dataclasses.replace(per_row, gradients="autograd"), layout, args.iterations)
    floor = _floor_seconds(config)
    result: dict[str, Any] = {
        "scenario": args.scenario, "env_steps": steps, "seconds": seconds, "steps_per_s": steps / seconds,
        "steps_per_s_per_row": steps / per_row_seconds, "autograd_steps_per_s": steps / autograd_seconds,
        "closed_form_vs_autograd": autograd_seconds / seconds,
        "autograd_steps_per_s_per_row": steps / autograd_per_row_seconds,
        "closed_form_vs_autograd_per_row": autograd_per_row_seconds / per_row_seconds,
        "floor_steps_per_s": config.steps_per_iteration / floor, "epochs": args.epochs, "minibatch": args.minibatch,
        "torch_threads": 1, "load_average_1min": os.getloadavg()[0],
    }
    result["fraction_of_floor"] = result["steps_per_s"] / result["floor_steps_per_s"]
    result["fraction_of_floor_per_row"] = result["steps_per_s_per_row"] / result["floor_steps_per_s"]
    identical = args.epochs == 30 and args.minibatch == 128
    if args.no_rllib or not identical or importlib.util.find_spec("ray") is None:
        reason = ("--no-rllib" if args.no_rllib else "settings differ from the authors'" if not identical
                  else "ray[rllib] not installed (pip install '.[bench]')")
        result.update(rllib_steps_per_s=None, ratio_vs_rllib=None, ratio_vs_rllib_per_row=None, rllib_skipped=reason)
    else:
        try:
            result.update(_rllib(args.scenario))
            result["ratio_vs_rllib"] = result["steps_per_s"] / result["rllib_steps_per_s"]
            result["ratio_vs_rllib_per_row"] = result["steps_per_s_per_row"] / result["rllib_steps_per_s"]
        except Exception as error:  # Ray failing to start (e.g. an overloaded machine) must not hide our numbers
            result.update(rllib_steps_per_s=None, ratio_vs_rllib=None, ratio_vs_rllib_per_row=None,
                          rllib_skipped=f"RLlib failed: {type(error).__name__}: {error}"[:300])
    return result
