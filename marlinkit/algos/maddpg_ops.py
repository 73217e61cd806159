"""MADDPG's building blocks as pure functions: seeding, Gumbel noise and the straight-through Gumbel-softmax,
Polyak averaging, the critic's target, each agent's joint action for its actor loss, per-agent gradient clipping."""

from __future__ import annotations

import random

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from marlinkit.algos import portable_math


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy, PyTorch and cuDNN as MAESTRO §5.3 lists them."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def sample_gumbel(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """Standard Gumbel noise g = -log(-log U), drawn from ``generator`` (so updates are reproducible), with
    :func:`~marlinkit.algos.portable_math.log`: the same bits on every processor, unlike ``torch.log``."""
    uniform = torch.rand(shape, generator=generator).clamp_(1e-10, 1.0 - 1e-7)
    return -portable_math.log(-portable_math.log(uniform))


def gumbel_softmax(logits: torch.Tensor, gumbels: torch.Tensor, temperature: float, hard: bool = True) -> torch.Tensor:
    """softmax((logits + g) / T); with ``hard`` the one-hot of its argmax, straight-through:
    the forward value is one-hot, the gradient is that of the soft sample (Jang et al., 2017)."""
    soft = F.softmax((logits + gumbels) / temperature, dim=-1)
    if not hard:
        return soft
    one_hot = F.one_hot(soft.argmax(dim=-1), soft.shape[-1]).to(soft.dtype)
    return one_hot - soft.detach() + soft


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging theta' <- tau * theta + (1 - tau) * theta', in place."""
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters(), strict=True):
            t.lerp_(s, tau)


def critic_target(rewards: torch.Tensor, terminated: torch.Tensor, next_q: torch.Tensor, gamma: float) -> torch.Tensor:
    """y_i = r_i + gamma * (1 - terminated_i) * Q'_i(o', a'). Truncation (a time limit) still bootstraps."""
    return rewards + gamma * (1.0 - terminated) * next_q


def substitute_own_action(buffer_actions: torch.Tensor, policy_actions: torch.Tensor) -> torch.Tensor:
    """Joint actions for each agent's actor loss: the buffer's, with agent i's slot from its policy.

    buffer_actions (B, N, A), policy_actions (N, B, A) -> (N, B, N, A) whose [i, :, i] is
    policy_actions[i] and whose [i, :, j != i] is buffer_actions[:, j]. Leading axes (seeds:
    (S, B, N, A) and (S, N, B, A) -> (S, N, B, N, A)) broadcast, element for element the same.
    """
    n = policy_actions.shape[-3]
    own = torch.eye(n, dtype=policy_actions.dtype)[:, None, :, None]  # (N, 1, N, 1)
    return buffer_actions.unsqueeze(-4) * (1 - own) + policy_actions.unsqueeze(-2) * own


def clip_grad_norm_per_agent(parameters: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale each agent's slice of the gradients to global norm <= max_norm; returns the norms (N,).
    The square root is :func:`~marlinkit.algos.portable_math.sqrt` (correctly rounded; ``torch.sqrt`` is not)."""
    grads = [p.grad for p in parameters]
    norms = portable_math.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads))
    scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norms


class SeededStreams:
    """The random streams of a learner with one Gumbel generator and one replay sampler per stacked seed
    (``self.generators``, ``self.rngs``): the first seed's, by name."""

    generators: list[torch.Generator]
    rngs: list[np.random.Generator]

    @property
    def generator(self) -> torch.Generator:
        """The Gumbel generator of the first (with one seed: the) seed."""
        return self.generators[0]

    @property
    def rng(self) -> np.random.Generator:
        """The replay sampler of the first (with one seed: the) seed."""
        return self.rngs[0]
