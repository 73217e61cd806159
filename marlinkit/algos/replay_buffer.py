"""The replay buffer of MADDPG: a ring of joint transitions (every agent's obs, action, reward at one step)."""

from __future__ import annotations

import numpy as np
import torch


class ReplayBuffer:
    """Ring buffer of joint transitions as NumPy arrays (agent axis second)."""

    def __init__(self, capacity: int, n_agents: int, obs_dim: int):
        self.obs = np.zeros((capacity, n_agents, obs_dim), np.float32)
        self.next_obs = np.zeros_like(self.obs)
        self.actions = np.zeros((capacity, n_agents), np.int64)
        self.rewards = np.zeros((capacity, n_agents), np.float32)
        self.terminated = np.zeros((capacity, n_agents), np.float32)
        self.capacity, self.size, self.pos = capacity, 0, 0

    def add(self, obs, actions, rewards, next_obs, terminated) -> None:
        """Store one joint transition (arrays with the agent axis first), over the oldest when full."""
        i = self.pos
        self.obs[i], self.actions[i], self.rewards[i] = obs, actions, rewards
        self.next_obs[i], self.terminated[i] = next_obs, terminated
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
        """``batch_size`` stored transitions drawn uniformly with replacement by ``rng``: tensors (B, N, ...)."""
        idx = rng.integers(0, self.size, size=batch_size)
        return {k: torch.from_numpy(getattr(self, k)[idx])
                for k in ("obs", "actions", "rewards", "next_obs", "terminated")}
