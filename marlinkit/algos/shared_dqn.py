"""A parameter-shared double DQN for traffic-signal control: the independent peer learner of MAESTRO's tables.

LibSignal's DQN baseline, in the CleanRL style: one Q-network ``Q(o_i, .)`` shared by the 16 intersections, each
agent's transition a sample of its own (16 per joint transition), epsilon-greedy exploration decaying linearly, a
target network copied every ``target_every`` updates, double-DQN targets ``y = r + gamma Q'(o', argmax_a Q(o', a))``
and the Huber loss. A decision holds for ``decision_s`` seconds (LibSignal: 10 s with a 5-s yellow; here 5 s, the
environment's minimum green). It answers one question beside MADDPG: does this environment let a standard learner
beat a random phase switcher on traffic it never trained on?

It plugs into :func:`marlinkit.algos.maddpg.run_episodes` as a MADDPG learner does (``act``, ``sample``, ``noise``,
``update``, ``config`` with the loop's fields), so both learners see the same episodes, buffer and cadence.
Adam is :class:`marlinkit.algos.portable_math.Adam` (the same bits on every processor).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from marlinkit.algos import portable_math
from marlinkit.algos.replay_buffer import ReplayBuffer


@dataclass(frozen=True)
class DQNConfig:
    """Hyperparameters of the shared DQN (LibSignal's DQN where it gives one, else ours, said so)."""

    seed: int = 0
    """Seeds the weights, the exploration and the replay sampling."""
    lr: float = 1e-3
    """Adam learning rate (LibSignal: 1e-3)."""
    gamma: float = 0.9
    """Discount per decision (our choice: a 5-s decision, so about a 50-s horizon)."""
    hidden: int = 128
    """Units of each of the two ReLU hidden layers (our choice)."""
    batch_size: int = 256
    """Joint transitions per update (each gives 16 agent samples)."""
    buffer_size: int = 20_000
    """Replay capacity in joint transitions (decisions)."""
    learning_starts: int = 640
    """Environment steps before the first update (our choice: 128 decisions)."""
    update_every: int = 5
    """Environment steps between updates (one per decision)."""
    decision_s: int = 5
    """Environment steps each chosen action is held."""
    target_every: int = 200
    """Updates between copies of the Q-network into its target."""
    epsilon_start: float = 1.0
    """Exploration at the first episode."""
    epsilon_end: float = 0.05
    """Exploration from ``epsilon_decay_episodes`` on (also the ``stochastic`` evaluation's)."""
    epsilon_decay_episodes: int = 24
    """Episodes over which epsilon falls linearly."""

class SharedDQN:
    """One Q-network (and its target) shared by all agents; the MADDPG learner interface for the episode loop."""

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config: DQNConfig):
        self.n, self.obs_dim, self.n_actions, self.config = n_agents, obs_dim, n_actions, config
        self.seeds = (config.seed,)
        torch.manual_seed(config.seed)
        self.q = nn.Sequential(nn.Linear(obs_dim, config.hidden), nn.ReLU(), nn.Linear(config.hidden, config.hidden),
                               nn.ReLU(), nn.Linear(config.hidden, n_actions))
        self.target = copy.deepcopy(self.q)
        self.optimizer = portable_math.Adam(self.q.parameters(), lr=config.lr)
        self.rng = np.random.default_rng(config.seed)
        self.epsilon, self.updates = config.epsilon_start, 0

    @property
    def actor(self) -> nn.Module:
        """The Q-network: its argmax is the greedy policy."""
        return self.q

    def set_episode(self, episode: int) -> None:
        """Epsilon for training episode ``episode`` (linear decay)."""
        c = self.config
        self.epsilon = max(c.epsilon_end, c.epsilon_start - (c.epsilon_start - c.epsilon_end)
                           * episode / max(1, c.epsilon_decay_episodes))

    @torch.inference_mode()
    def act(self, obs: np.ndarray, explore: bool, generator: torch.Generator | None = None) -> np.ndarray:
        """Actions (N,) or (1, N): the argmax of Q, each replaced by a uniform action with probability epsilon when
        exploring (training: ``self.epsilon``, drawn from the learner's own generator; an evaluation passes its own
        ``generator`` and gets ``epsilon_end``)."""
        obs = torch.as_tensor(obs, dtype=torch.float32)
        greedy = self.q(obs.reshape(-1, self.n, self.obs_dim)).argmax(-1)
        if explore:
            rng = self.rng if generator is None else np.random.default_rng(int(torch.randint(
                2**31, (1,), generator=generator[0] if isinstance(generator, list) else generator)))
            epsilon = self.epsilon if generator is None else self.config.epsilon_end
            flip = torch.from_numpy(rng.random(greedy.shape) < epsilon)
            greedy = torch.where(flip, torch.from_numpy(rng.integers(self.n_actions, size=greedy.shape)), greedy)
        actions = greedy.numpy()
        return actions[0] if obs.dim() == 2 else actions

    def noise(self, batch_size: int) -> None:
        return None

    def sample(self, buffers: list[ReplayBuffer], batch_size: int) -> dict[str, torch.Tensor]:
        return buffers[0].sample(batch_size, self.rng)

    def update(self, batch: dict[str, torch.Tensor], noise=None) -> dict[str, float]:
        """One double-DQN step on every agent sample of ``batch`` (B, N, ...)."""
        c = self.config
        obs, next_obs = batch["obs"].reshape(-1, self.obs_dim), batch["next_obs"].reshape(-1, self.obs_dim)
        actions, rewards = batch["actions"].reshape(-1), batch["rewards"].reshape(-1)
        with torch.no_grad():
            best = self.q(next_obs).argmax(-1, keepdim=True)
            next_q = self.target(next_obs).gather(1, best)[:, 0]
            y = rewards + c.gamma * (1.0 - batch["terminated"].reshape(-1)) * next_q
        loss = F.smooth_l1_loss(self.q(obs).gather(1, actions[:, None])[:, 0], y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.updates += 1
        if self.updates % c.target_every == 0:
            self.target.load_state_dict(self.q.state_dict())
        return {"loss": loss.item()}
