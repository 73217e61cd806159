"""Where a learner's matrix products run: the one place that routes them (MADDPG's numerics).

``"torch"`` runs them in torch's MKL on its pinned ``COMPATIBLE`` branch; ``"openblas"`` in NumPy's OpenBLAS,
which :mod:`marlinkit.repro.numerics` pins to its Haswell kernels, whose blocking is fixed: the same bits on every AVX2
processor, Intel or AMD, and about 3x faster on these shapes (``python -m marlinkit bench maddpg`` prints both
peaks). Everything else an update computes (sums, ReLU, softmax) is ATen's own vectorised code, pinned to AVX2.

Two products carry autograd here, each with its forward and backward products routed:

* :func:`baddbmm`, ``b + x @ w`` batched over a leading group axis (the paper's stacked per-agent networks,
  :mod:`marlinkit.algos.stacked_mlp`);
* :class:`Linear`, ``x @ W^T + b`` over any leading axes (the parameter-shared networks,
  :mod:`marlinkit.algos.maddpg_shared`): an ``nn.Linear`` with the same parameters and state dict.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

#: Where products run: ``"torch"`` (MKL, pinned branch) or ``"openblas"`` (NumPy's OpenBLAS, pinned kernels).
Products = Literal["torch", "openblas"]
PRODUCTS = get_args(Products)


def check(products: str) -> str:
    """``products`` if it names a route of :data:`PRODUCTS`, else a ValueError naming them."""
    if products not in PRODUCTS:
        raise ValueError(f"products must be one of {PRODUCTS}, got {products!r}")
    return products


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b (batched) in NumPy's OpenBLAS, on views of the tensors' memory (no autograd)."""
    return torch.from_numpy(np.matmul(a.detach().numpy(), b.detach().numpy()))


def openblas_baddbmm(b: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """b + x @ w with the product in OpenBLAS (no autograd)."""
    out = matmul(x, w)
    out += b
    return out


class _OpenBLASBaddbmm(torch.autograd.Function):
    """``torch.baddbmm(b, x, w)`` with the forward's and the backward's products in OpenBLAS:
    b (G, 1, out) + x (G, B, in) @ w (G, in, out); gradients x: g @ w^T, w: x^T @ g, b: sum over B."""

    @staticmethod
    def forward(ctx, b, x, w):
        ctx.save_for_backward(x, w)
        return openblas_baddbmm(b, x, w)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        grad = grad.contiguous()
        grad_b = grad.sum(1, keepdim=True) if ctx.needs_input_grad[0] else None
        grad_x = matmul(grad, w.transpose(1, 2)) if ctx.needs_input_grad[1] else None
        grad_w = matmul(x.transpose(1, 2), grad) if ctx.needs_input_grad[2] else None
        return grad_b, grad_x, grad_w


def baddbmm(b: torch.Tensor, x: torch.Tensor, w: torch.Tensor, products: str = "torch") -> torch.Tensor:
    """b + x @ w, batched, with the products where :data:`PRODUCTS` says."""
    if products == "openblas":
        return _OpenBLASBaddbmm.apply(b, x, w)
    return torch.baddbmm(b, x, w)


class _OpenBLASLinear(torch.autograd.Function):
    """``F.linear(x, weight, bias)`` over x (R, in) with every product in OpenBLAS: out = x @ W^T + b;
    gradients x: g @ W, W: g^T @ x, b: the sum of g over rows."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        out = matmul(x, weight.t())
        out += bias
        return out

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad = grad.contiguous()
        grad_x = matmul(grad, weight) if ctx.needs_input_grad[0] else None
        grad_w = matmul(grad.t(), x) if ctx.needs_input_grad[1] else None
        grad_b = grad.sum(0) if ctx.needs_input_grad[2] else None
        return grad_x, grad_w, grad_b


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, products: str = "torch") -> torch.Tensor:
    """x @ weight^T + bias over any leading axes of x, with the products where :data:`PRODUCTS` says."""
    if products != "openblas":
        return F.linear(x, weight, bias)
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    return _OpenBLASLinear.apply(rows, weight, bias).reshape(*x.shape[:-1], weight.shape[0])


class Linear(nn.Linear):
    """``nn.Linear`` (same parameters, initialisation and state dict) whose products run where ``products`` says."""

    def __init__(self, in_features: int, out_features: int, products: str = "torch"):
        super().__init__(in_features, out_features)
        self.products = check(products)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, self.products)


def mlp(fan_in: int, hidden: int, fan_out: int, products: str = "torch") -> nn.Sequential:
    """Two ReLU hidden layers of ``hidden`` units, their products where ``products`` says (``nn.Sequential``:
    the state dict of the same network built from ``nn.Linear``)."""
    return nn.Sequential(Linear(fan_in, hidden, products), nn.ReLU(), Linear(hidden, hidden, products), nn.ReLU(),
                         Linear(hidden, fan_out, products))
