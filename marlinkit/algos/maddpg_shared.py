"""MADDPG with parameter sharing over homogeneous agents: one actor and one critic for all 16 intersections.

A named departure from the paper's MADDPG (:mod:`marlinkit.algos.maddpg`, ``MADDPGConfig.sharing = "none"``), chosen
because that one, trained as the paper describes, ends barely above a random phase switcher on the Hangzhou network.
It keeps what makes MADDPG MADDPG, a deterministic-through-Gumbel actor trained through a critic that sees every
agent's action, and changes what the traffic-signal-control literature changes for 16 interchangeable intersections
(LibSignal, MPLight, CoLight share one network among them):

* **one actor** ``pi(o_i)`` for every agent (16x the samples per weight);
* **one critic** ``Q(o_i, e_i, a_1..a_N)``: the agent's own observation, its one-hot identity ``e_i`` and every
  agent's action (``sharing = "shared-local"``); the paper's critic reads all 16 observations (3,232 inputs per
  agent), this one 278, so an update costs about a tenth of the products.

The losses are the paper's, written once for all agents in batched form and trained through autograd: the critic's
``L = E[(Q_i(o_i, e_i, a) - y_i)^2]`` with ``y_i = r_i + gamma Q'_i(o'_i, e_i, a')``, ``a'`` the target actor's
straight-through Gumbel-softmax samples; the actor's ``-E[Q_i(o_i, e_i, a_1..mu(o_i)..a_N)] + logit_reg E[logits^2]``
with agent i's own action from the policy and the others' from the buffer. The interface is
:class:`~marlinkit.algos.maddpg.MADDPG`'s (``act``, ``noise``, ``sample``, ``update``, the four networks and two
optimizers a checkpoint saves), for one seed.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from marlinkit.algos import portable_math
from marlinkit.algos.products import mlp
from marlinkit.algos.maddpg_ops import SeededStreams, gumbel_softmax, sample_gumbel, soft_update
from marlinkit.algos.replay_buffer import ReplayBuffer


def critic_input(obs: torch.Tensor, identity: torch.Tensor, joint: torch.Tensor) -> torch.Tensor:
    """Each agent's critic input: obs (B, N, O), identity (N, N), joint actions (B, N, N*A) -> (B, N, O + N + N*A)."""
    return torch.cat([obs, identity.expand(obs.shape[0], -1, -1), joint], -1)


def own_action_joint(buffer_actions: torch.Tensor, policy: torch.Tensor) -> torch.Tensor:
    """Agent i's joint action for its actor loss: the buffer's (B, N, A) with slot i from ``policy`` (B, N, A);
    returns (B, N, N*A), row i for agent i."""
    n = policy.shape[1]
    own = torch.eye(n, dtype=policy.dtype)[None, :, :, None]  # (1, N, N, 1)
    joint = buffer_actions[:, None] * (1 - own) + policy[:, :, None] * own  # (B, N(i), N(j), A)
    return joint.reshape(policy.shape[0], n, -1)


class SharedMADDPG(SeededStreams):
    """One actor and one critic (plus targets) shared by all ``n_agents``; Adam on each (one seed)."""

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config, seeds: tuple[int, ...] | None = None):
        self.n, self.obs_dim, self.n_actions, self.config = n_agents, obs_dim, n_actions, config
        self.seeds = tuple(seeds) if seeds is not None else (config.seed,)
        if len(self.seeds) != 1:
            raise ValueError("parameter-shared MADDPG trains one seed per learner")
        torch.manual_seed(self.seeds[0])  # initial weights depend on the seed alone
        critic_in = obs_dim + n_agents + n_agents * n_actions  # own observation, identity, every agent's action
        self.actor = mlp(obs_dim, config.hidden, n_actions, config.products)
        self.critic = mlp(critic_in, config.hidden, 1, config.products)
        self.target_actor = mlp(obs_dim, config.hidden, n_actions, config.products)
        self.target_critic = mlp(critic_in, config.hidden, 1, config.products)
        self.target_actor.load_state_dict(self.actor.state_dict())
        self.target_critic.load_state_dict(self.critic.state_dict())
        self.actor_opt = portable_math.Adam(self.actor.parameters(), lr=config.actor_lr)
        self.critic_opt = portable_math.Adam(self.critic.parameters(), lr=config.critic_lr)
        self.identity = torch.eye(n_agents)
        self.generators = [torch.Generator().manual_seed(self.seeds[0])]  # Gumbel noise
        self.rngs = [np.random.default_rng(self.seeds[0])]  # replay sampling

    @torch.inference_mode()
    def act(self, obs: np.ndarray, explore: bool, generator: torch.Generator | None = None) -> np.ndarray:
        """Actions (N,) for observations (N, obs_dim), or (1, N) for (1, N, obs_dim): Gumbel samples when exploring,
        else the argmax (``generator``: as :meth:`marlinkit.algos.maddpg.MADDPG.act` says)."""
        obs = torch.as_tensor(obs, dtype=torch.float32)
        logits = self.actor(obs.reshape(-1, self.n, self.obs_dim))
        if explore:
            if generator is None:
                generator = self.generator
            elif isinstance(generator, list):
                generator = generator[0]
            logits = logits + sample_gumbel((self.n, self.n_actions), generator)
        actions = logits.argmax(-1).numpy()
        return actions[0] if obs.dim() == 2 else actions

    def noise(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Gumbel noise for one update: target actions and policy actions, each (B, N, A)."""
        shape = (batch_size, self.n, self.n_actions)
        return sample_gumbel(shape, self.generator), sample_gumbel(shape, self.generator)

    def sample(self, buffers: list[ReplayBuffer], batch_size: int) -> dict[str, torch.Tensor]:
        """One batch (B, N, ...) from the seed's buffer and sampler."""
        return buffers[0].sample(batch_size, self.rng)

    def update(self, batch: dict[str, torch.Tensor], noise: tuple[torch.Tensor, torch.Tensor],
               mode: str = "batched") -> dict[str, float]:
        """One MADDPG step for all agents at once: the critic, then the actor, then the targets."""
        cfg = self.config
        if mode != "batched":
            raise ValueError("parameter-shared MADDPG has one path: batched")
        obs, next_obs = batch["obs"], batch["next_obs"]
        actions = F.one_hot(batch["actions"], self.n_actions).float()  # (B, N, A)
        size = obs.shape[0]
        with torch.no_grad():
            next_actions = gumbel_softmax(self.target_actor(next_obs), noise[0], cfg.gumbel_temperature)
            joint_next = next_actions.reshape(size, 1, -1).expand(-1, self.n, -1)
            next_q = self.target_critic(critic_input(next_obs, self.identity, joint_next)).squeeze(-1)
            y = batch["rewards"] + cfg.gamma * (1.0 - batch["terminated"]) * next_q
        joint = actions.reshape(size, 1, -1).expand(-1, self.n, -1)
        critic_loss = ((self.critic(critic_input(obs, self.identity, joint)).squeeze(-1) - y) ** 2).mean()
        self._descend(self.critic_opt, self.critic, critic_loss)

        logits = self.actor(obs)
        policy = gumbel_softmax(logits, noise[1], cfg.gumbel_temperature)
        self.critic.requires_grad_(False)  # the actor loss needs gradients through the critic, not of it
        try:
            q_pi = self.critic(critic_input(obs, self.identity, own_action_joint(actions, policy))).squeeze(-1)
            actor_loss = -q_pi.mean() + cfg.logit_reg * (logits ** 2).mean()
            self._descend(self.actor_opt, self.actor, actor_loss)
        finally:
            self.critic.requires_grad_(True)
        soft_update(self.target_actor, self.actor, cfg.tau)
        soft_update(self.target_critic, self.critic, cfg.tau)
        return {"critic_loss": critic_loss.item(), "actor_loss": actor_loss.item()}

    def _descend(self, optimizer: torch.optim.Optimizer, net: nn.Module, loss: torch.Tensor) -> None:
        """One Adam step on ``net`` with its gradient's global norm clipped to ``max_grad_norm``."""
        optimizer.zero_grad(set_to_none=False)
        loss.backward()
        grads = [p.grad for p in net.parameters()]
        norm = float(portable_math.sqrt(sum((g * g).sum() for g in grads).reshape(1))[0])
        scale = min(1.0, self.config.max_grad_norm / (norm + 1e-6))
        for g in grads:
            g.mul_(scale)
        optimizer.step()
