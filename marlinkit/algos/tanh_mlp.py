"""Tanh MLPs with a written-out backward pass: the network half of MAPPO's fast path (no autograd).

``tanh_mlp_forward`` keeps every layer's input, ``tanh_mlp_backward`` turns the gradient of the
output into the gradients of every weight and bias from them; ``tests/algos/test_mappo.py`` holds it to
autograd. tanh is computed as ``2 sigmoid(2x) - 1`` (``fast_tanh``): torch's CPU tanh takes half as
long as the actor's 256 x 256 matrix product, the sigmoid form half that, within 2e-7 of tanh.
"""

from __future__ import annotations

import torch
from torch import nn


def fast_tanh(x: torch.Tensor) -> torch.Tensor:
    """tanh as ``2 sigmoid(2x) - 1``: twice as fast as ``torch.tanh`` on CPU, within 2e-7 of it."""
    return (torch.sigmoid(x * 2.0) - 0.5).mul_(2.0)  # in place only on what no backward needs


class FastTanh(nn.Module):
    """:func:`fast_tanh` as a module (the networks' ``nn.Sequential`` layout)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fast_tanh(x)


def tanh_mlp_forward(layers: list[nn.Linear], x: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's input and the output of a tanh MLP (tanh between layers, none after the last)."""
    activations = [x]
    for k, layer in enumerate(layers):
        z = nn.functional.linear(activations[-1], layer.weight, layer.bias)
        activations.append(fast_tanh(z) if k < len(layers) - 1 else z)
    return activations


def tanh_mlp_backward(layers: list[nn.Linear], activations: list[torch.Tensor], grad_out: torch.Tensor) -> list[torch.Tensor]:
    """Gradients [weight, bias] per layer, in ``parameters()`` order, of ``sum(grad_out * output)``.

    ``activations`` is :func:`tanh_mlp_forward`'s list: each hidden layer's tanh output is what
    its derivative ``1 - h^2`` needs (``aten.tanh_backward``).
    """
    grads: list[torch.Tensor] = []
    grad = grad_out
    for k in reversed(range(len(layers))):
        grads[:0] = [grad.t() @ activations[k], grad.sum(0)]
        if k:
            grad = torch.ops.aten.tanh_backward(grad @ layers[k].weight, activations[k])
    return grads
