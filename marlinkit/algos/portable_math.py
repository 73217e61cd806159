"""Elementwise maths whose bits are the same on every x86-64 processor, for MADDPG's noise and gradient clipping.

torch routes ``log`` and ``sqrt`` of CPU tensors to MKL's vector maths (VM), which chooses its code by the
processor's *vendor*: on AMD processors it runs one path whatever ``MKL_CBWR`` says (measured: the same bits under
COMPATIBLE, AUTO, AVX2, AVX512 and SSE4_2), on Intel processors each branch gives other bits (COMPATIBLE, AUTO and
AVX2 three different results). Neither is correctly rounded: on an AMD EPYC, 7.5 % of ``torch.log`` and 17 % of
``torch.sqrt`` results on uniform inputs differ by an ulp from the correctly rounded value. So a MADDPG update, whose
Gumbel noise is ``-log(-log U)`` and whose Adam step and clipping take square roots, had last bits that depend on
who made the processor, and training amplifies them (runs differed from their third episode).

The functions here use only the operations IEEE 754 rounds correctly, which every processor computes to the same
bits: ``+ - * /``, exact scaling by powers of two, and the square root instruction (NumPy's ``sqrt``, which is
the processor's own, never MKL's). :func:`log` is the textbook reduction ``log x = e log 2 + 2 atanh(s)`` with
a fixed number of series terms, in float64 and in a fixed order; rounded to float32 it agrees with the
correctly rounded logarithm except in rare ties, and it is the *same* on every machine, which is what matters
here. ``tests/algos/test_portable_math.py`` holds it to Python's own float arithmetic, operation for operation.

What else MADDPG runs is vendor-independent as pinned by :mod:`marlinkit.repro.numerics`: ATen's vectorised kernels
(softmax, ReLU, sums, Adam's fused kernel) follow ``ATEN_CPU_CAPABILITY``, not the vendor; the matrix products
run in MKL's ``COMPATIBLE`` branch (documented as identical on Intel and AMD) or in OpenBLAS's pinned Haswell
kernels (:mod:`marlinkit.algos.stacked_mlp`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

_LN2_HI = 6.93147180369123816490e-01  # log 2 split in two (fdlibm): e * _LN2_HI is exact for |e| < 2**11
_LN2_LO = 1.90821492927058770002e-10
_SQRT_HALF = math.sqrt(0.5)
#: Odd series terms of 2 atanh(s) = log((1+s)/(1-s)): |s| <= 0.172 after the reduction, so s**25 < 1e-19.
_ATANH_TERMS = 12


def log(x: torch.Tensor) -> torch.Tensor:
    """Natural logarithm of positive, finite ``x`` (any float dtype), the same bits on every processor.

    Computed in float64 and returned in ``x``'s dtype. ``x = m 2**e`` with ``m`` in [sqrt(1/2), sqrt(2)),
    ``s = (m - 1) / (m + 1)``, ``log m = 2 (s + s**3/3 + ... + s**23/23)``.
    """
    if not bool((x > 0).all()) or not bool(torch.isfinite(x).all()):
        raise ValueError("portable_math.log needs positive, finite inputs")
    wide = x.to(torch.float64)
    mantissa, exponent = torch.frexp(wide)  # wide = mantissa * 2**exponent, mantissa in [0.5, 1): exact
    low = mantissa < _SQRT_HALF
    mantissa = torch.where(low, mantissa * 2.0, mantissa)  # exact
    exponent = (exponent - low.to(exponent.dtype)).to(torch.float64)
    s = (mantissa - 1.0) / (mantissa + 1.0)
    s2 = s * s
    series = torch.full_like(s, 1.0 / (2 * _ATANH_TERMS - 1))
    for k in range(_ATANH_TERMS - 2, -1, -1):  # Horner in s2: 1/1 + s2/3 + s2**2/5 + ...
        series = series * s2 + 1.0 / (2 * k + 1)
    log_m = 2.0 * s * series
    return (exponent * _LN2_HI + (log_m + exponent * _LN2_LO)).to(x.dtype)


def sqrt(x: torch.Tensor) -> torch.Tensor:
    """Square root, correctly rounded (NumPy's ``sqrt`` is the processor's IEEE instruction); no autograd."""
    return torch.from_numpy(np.sqrt(x.detach().contiguous().numpy()))


class Adam(torch.optim.Optimizer):
    """Adam (Kingma & Ba, 2015) in the basic operations alone: the same bits on every processor, and for every
    element wherever it lies in its tensor.

    ``torch.optim.Adam``'s default CPU step takes MKL's vendor-dependent square root; its fused kernel rounds the
    elements of a vector block (fused multiply-adds) and of the scalar tail differently, so the same parameters give
    other bits when stacked with others (MADDPG's seeds stacked on one agent axis). Here every operation is one
    IEEE 754 rounds correctly, and the powers ``beta**t`` are running products, not ``pow``:

        m <- beta1 m + (1 - beta1) g;   v <- beta2 v + (1 - beta2) g^2
        theta <- theta - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        if not lr > 0 or not 0 <= betas[0] < 1 or not 0 <= betas[1] < 1 or not eps >= 0:
            raise ValueError(f"Adam needs lr > 0, 0 <= betas < 1 and eps >= 0, got {lr}, {betas}, {eps}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self, closure=None) -> None:
        if closure is not None:
            raise ValueError("this Adam takes no closure")
        for group in self.param_groups:
            (beta1, beta2), lr, eps = group["betas"], group["lr"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state.update(step=0, beta1_t=1.0, beta2_t=1.0, exp_avg=torch.zeros_like(p),
                                 exp_avg_sq=torch.zeros_like(p))
                state["step"] += 1
                state["beta1_t"] *= beta1
                state["beta2_t"] *= beta2
                grad, m, v = p.grad, state["exp_avg"], state["exp_avg_sq"]
                scratch = grad * (1.0 - beta1)  # in place from here: one buffer, no temporaries
                m.mul_(beta1).add_(scratch)
                torch.mul(grad, grad, out=scratch)
                v.mul_(beta2).add_(scratch.mul_(1.0 - beta2))
                denom = torch.from_numpy(np.sqrt(v.numpy(), out=scratch.numpy()))  # in scratch
                denom.div_(math.sqrt(1.0 - state["beta2_t"])).add_(eps)
                p.sub_(torch.div(m, denom, out=scratch).mul_(lr / (1.0 - state["beta1_t"])))
