"""MAPPO's fast path: ``ppo_loss``'s gradients without autograd (``MAPPOConfig.gradients="closed_form"``).

The loss MAPPO trains on is :func:`marlinkit.algos.mappo.ppo_loss`, written with the MAPPO paper's names, and
``MAPPOConfig(gradients="autograd")`` trains on it by ``loss.backward()``. This module computes the same gradients
a faster way, for R runs at once (tensors ``[R, n, ...]``, weights ``[R, out, in]``):

1. the loss's gradients with respect to the logits and values in closed form (:func:`loss_gradients`): a dozen
   plain tensor ops instead of ~40 autograd ops on 128-row tensors;
2. the two tanh MLPs' backward passes written out (:func:`mlp_backward`), from the layer inputs that
   :func:`marlinkit.algos.mappo.mlp_forward` keeps;
3. the actor run once per distinct observation of the batch (``MAPPOConfig.distinct_obs``): an observation is 4
   small integers, so a batch of 8,000 agent-steps holds a few dozen distinct ones; the gradient of a distinct
   observation's logits is the sum of its rows'.

It is the default because ``bench mappo`` measures it more than 1.5x faster like for like, and the committed runs
were made by it. The two paths give the same numbers to float rounding, not in bits, so a run names the setting
when it is not the default; ``tests/algos/test_mappo.py`` holds them to the same gradients, and to the same
weights after a 30-episode training prefix at the paper's settings (in float64: in float32 any two computations
of PPO drift apart over many updates, see there).

Every op here keeps a run's numbers independent of the other runs of the batch (see :func:`per_run_exp`). This
module does not import :mod:`marlinkit.algos.mappo` (that module imports this one): the minibatch and the
configuration are read by their fields.
"""

from __future__ import annotations

import torch

from marlinkit.envs.corridor import core


def per_run_exp(x: torch.Tensor) -> torch.Tensor:
    """``x.exp()`` with each run's numbers independent of the other runs.

    torch's vectorised loops compute a tensor's last few elements (beyond a multiple of 16) by a
    scalar exp that may differ in the last bit; a run's elements must not move between the two
    paths with the batch size, so runs whose element count is not a multiple of 16 go one by one.
    """
    if x[0].numel() % 16 == 0:
        return x.exp()
    return torch.stack([run.exp() for run in x])


def tanh_derivative(y: torch.Tensor) -> torch.Tensor:
    """``1 - y * y``, tanh's derivative from its output ``y``, rounded once (a fused multiply-add, as torch's own
    tanh backward computes it: ``1 - y * y`` in two roundings differs from it in the last bit)."""
    return torch.addcmul(torch.ones_like(y), y, y, value=-1.0)


def mlp_backward(params: list[torch.Tensor], activations: list[torch.Tensor],
                 grad_out: torch.Tensor) -> list[torch.Tensor]:
    """Gradients [weight, bias] per layer, each ``[R, ...]``, of ``sum(grad_out * output)`` for a tanh MLP.

    ``params``: weights ``[R, out, in]`` and biases ``[R, 1, out]``; ``activations``: every layer's input and
    the output, as :func:`marlinkit.algos.mappo.mlp_forward` returns them (a hidden layer's input is the
    previous layer's tanh output ``y``, whose derivative is ``1 - y^2``).
    """
    grads: list[torch.Tensor] = []
    grad = grad_out
    for k in reversed(range(len(params) // 2)):
        grads[:0] = [torch.bmm(grad.transpose(1, 2), activations[k]), grad.sum(1, keepdim=True)]
        if k:
            grad = torch.bmm(grad, params[2 * k]) * tanh_derivative(activations[k])
    return grads


def loss_gradients(logits: torch.Tensor, values: torch.Tensor, mb, cfg,
                   kl_coeff: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``ppo_loss``'s gradients with respect to logits [R, n, 5] and values [R, n] in closed form, for a
    per-run KL weight [R]; and the loss terms [R, 3] (policy loss, value loss, KL)."""
    n = logits.shape[1]
    log_probs = torch.log_softmax(logits, -1)
    probs = per_run_exp(log_probs)
    ratio = per_run_exp((log_probs * mb.action_onehot).sum(-1) - mb.old_logp)
    surrogate = ratio * mb.advantages
    clipped = ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef) * mb.advantages
    minimum = torch.minimum(surrogate, clipped)
    # d/dlog pi(a) of -min(rA, clip(r) A) is -rA where rA is the minimum, else 0 (clip is flat outside its range);
    # d log pi(a) / d logits = onehot(a) - p and d KL(old || new) / d logits = p - p_old.
    grad_logp = surrogate.mul((surrogate <= clipped).to(surrogate.dtype)).mul_(-1.0 / n)
    grad_logits = (mb.action_onehot - probs).mul_(grad_logp[..., None]).add_(
        (probs - mb.old_probs) * (kl_coeff / n)[:, None, None])
    if cfg.ent_coef:  # d sum(p log p) / d logits = p log p - p sum(p log p)
        p_log_p = probs * log_probs
        grad_logits += (cfg.ent_coef / n) * (p_log_p - probs * p_log_p.sum(-1, keepdim=True))
    error = values - mb.returns
    squared = error.square()
    grad_values = error.mul(2 * cfg.vf_coef / n)
    if cfg.vf_clip is not None:  # the clipped squared error is flat beyond the clip
        grad_values.mul_((squared <= cfg.vf_clip).to(squared.dtype))
        squared = squared.clamp_(max=cfg.vf_clip)
    kl = (mb.old_probs * (mb.old_log_probs - log_probs)).sum((1, 2)) / n  # mean categorical_kl
    terms = torch.stack([minimum.mean(1).neg_(), squared.mean(1), kl], dim=1)
    return grad_logits, grad_values, terms


@torch.no_grad()
def gradients(actor: list[torch.Tensor], critic: list[torch.Tensor], actor_activations: list[torch.Tensor],
              critic_activations: list[torch.Tensor], mb, cfg, kl_coeff: torch.Tensor,
              distinct: bool) -> tuple[list[torch.Tensor], torch.Tensor]:
    """``ppo_loss``'s gradients for the actor's then the critic's parameters, each ``[R, ...]``, and the loss
    terms [R, 3]. The activations are ``mlp_forward``'s on the minibatch, the actor's on the batch's distinct
    observations when ``distinct`` (each row's logits picked by ``mb.actor_row``)."""
    logits, values = actor_activations[-1], critic_activations[-1][..., 0]
    if distinct:
        logits = torch.gather(logits, 1, mb.actor_row[..., None].expand(-1, -1, core.N_ACTIONS))
    grad_logits, grad_values, terms = loss_gradients(logits, values, mb, cfg, kl_coeff)
    if distinct:  # the gradient of a distinct observation's logits sums its rows'
        grad_logits = torch.zeros_like(actor_activations[-1]).scatter_add_(
            1, mb.actor_row[..., None].expand(-1, -1, core.N_ACTIONS), grad_logits)
    grads = (mlp_backward(actor, actor_activations, grad_logits)
             + mlp_backward(critic, critic_activations, grad_values[..., None]))
    return grads, terms
