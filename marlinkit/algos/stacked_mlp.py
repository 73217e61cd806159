"""Stacked MLPs: N independent networks (one per agent, or per agent of each stacked seed) as one module.

Every weight carries a leading agent axis and one batched matmul (``baddbmm``) evaluates all N
networks at once; ``forward_agent`` runs one agent through its slice, the per-agent reference
path MADDPG's batched update is tested against (``tests/algos/test_maddpg.py``).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from marlinkit.algos import products as products_route

#: How a stacked network is evaluated: all agents in one batched matmul, or one agent at a time.
Mode = Literal["batched", "loop"]
#: Where the batched path's matrix products run (:mod:`marlinkit.algos.products`, the one place that routes them):
#: ``"torch"`` (MKL on its pinned ``COMPATIBLE`` branch) or ``"openblas"`` (NumPy's OpenBLAS on its pinned kernels).
#: The per-agent reference path (``forward_agent``) always uses torch.
PRODUCTS = products_route.PRODUCTS


class _OwnActionLayer(torch.autograd.Function):
    """First layer of N frozen critics, x (N, B, in) @ w + b, differentiable in each agent's own action only.

    With S seeds stacked the rows are S*N (seed-major) and each seed's joint action block holds its
    own N agents: row r = s*N + i is agent i of seed s. Agent i's input x[r] holds ``policy[r]``
    (detached) in columns ``start + i*A .. start + (i+1)*A``;
    the backward pass computes the gradient of the N*A joint-action columns only, not of all ``in``
    of them as autograd would (the actor update's largest matmul: 3232 columns for the traffic
    network, 64 of them actions). Each entry is the same dot product over the hidden units as in
    the full product: the same bits with MKL here (a slice narrower than 16 columns was not).
    """

    @staticmethod
    def forward(ctx, x, policy, w, b, start, n_agents, products="torch"):
        ctx.save_for_backward(w)
        ctx.start, ctx.n_actions, ctx.n_agents, ctx.products = start, policy.shape[-1], n_agents, products
        if products == "openblas":
            return products_route.openblas_baddbmm(b.unsqueeze(1), x, w)
        return torch.baddbmm(b.unsqueeze(1), x, w)

    @staticmethod
    def backward(ctx, grad):
        if any(ctx.needs_input_grad[k] for k in (0, 2, 3)):
            raise RuntimeError("_OwnActionLayer differentiates the own actions only: freeze the critic")
        (w,) = ctx.saved_tensors
        a, n, rows = ctx.n_actions, ctx.n_agents, w.shape[0]
        own = w[:, ctx.start: ctx.start + n * a].transpose(1, 2)
        grad = grad.contiguous()
        # (rows, B, N*A)
        joint = products_route.matmul(grad, own) if ctx.products == "openblas" else torch.bmm(grad, own)
        index = torch.arange(rows)
        return None, joint.view(rows, -1, n, a)[index, :, index % n], None, None, None, None, None


class StackedMLP(nn.Module):
    """N independent MLPs (ReLU hidden layers) whose weights carry a leading agent axis
    (with S seeds stacked: S*N rows, seed-major)."""

    def __init__(self, n_agents: int, sizes: list[int], products: str = "torch"):
        super().__init__()
        self.products = products_route.check(products)
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = fan_in ** -0.5  # nn.Linear's default range, per agent
            self.weights.append(nn.Parameter(torch.empty(n_agents, fan_in, fan_out).uniform_(-bound, bound)))
            self.biases.append(nn.Parameter(torch.empty(n_agents, fan_out).uniform_(-bound, bound)))

    @classmethod
    def concatenate(cls, parts: list["StackedMLP"]) -> "StackedMLP":
        """One stack holding ``parts``' rows one after the other (their weights copied)."""
        out = cls.__new__(cls)
        nn.Module.__init__(out)
        out.products = parts[0].products
        out.weights = nn.ParameterList([nn.Parameter(torch.cat([p.weights[k].detach() for p in parts]))
                                        for k in range(len(parts[0].weights))])
        out.biases = nn.ParameterList([nn.Parameter(torch.cat([p.biases[k].detach() for p in parts]))
                                       for k in range(len(parts[0].biases))])
        return out

    def forward(self, x: torch.Tensor, own_actions: tuple[torch.Tensor, int, int] | None = None,
                shared: bool = False) -> torch.Tensor:
        """All agents at once: x (N, B, in) -> (N, B, out), one batched matmul per layer.

        ``shared``: x (G, B, in) is one input per group of rows/G consecutive agents (a centralised
        critic's: G = the stacked seeds, each seed's agents share its joint input); the first layer
        is one batched matmul of each group's input against its agents' concatenated weights, which
        skips the cost of an expanded input (1.8x at B=1024, 16 critics). A 2-D x is one group.
        ``own_actions=(policy, start, n_agents)``: see :class:`_OwnActionLayer` (frozen critics only).
        """
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            if k == 0 and own_actions is not None:
                x = _OwnActionLayer.apply(x, own_actions[0], w, b, own_actions[1], own_actions[2], self.products)
            elif k == 0 and (shared or x.dim() == 2):
                x = x if x.dim() == 3 else x.unsqueeze(0)
                groups, size = x.shape[:2]
                rows, fan_in, fan_out = w.shape
                per = rows // groups
                joined = w.view(groups, per, fan_in, fan_out).permute(0, 2, 1, 3).reshape(groups, fan_in, per * fan_out)
                x = products_route.baddbmm(b.view(groups, 1, per * fan_out), x, joined, self.products)
                x = x.view(groups, size, per, fan_out).transpose(1, 2).reshape(rows, size, fan_out)
            else:
                x = products_route.baddbmm(b.unsqueeze(1), x, w, self.products)
            x = F.relu(x) if k < last else x
        return x

    def forward_agent(self, i: int, x: torch.Tensor) -> torch.Tensor:
        """Agent i alone: x (B, in) -> (B, out), through its slice of the stacked weights."""
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            x = torch.addmm(b[i], x, w[i])
            x = F.relu(x) if k < last else x
        return x

    def run(self, x: torch.Tensor, mode: Mode, shared: bool = False) -> torch.Tensor:
        """Either path, same result: (N, B, in) or ``shared`` (G, B, in) -> (N, B, out) (loop: one group)."""
        if mode == "batched":
            return self(x, shared=shared)
        n = self.weights[0].shape[0]
        return torch.stack([self.forward_agent(i, x if x.dim() == 2 else x[0] if shared else x[i]) for i in range(n)])
