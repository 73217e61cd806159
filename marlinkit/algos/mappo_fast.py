"""MAPPO's fast gradients: ``ppo_loss``'s gradients without autograd (``MAPPOConfig.gradients="closed_form"``).

The loss MAPPO trains on is :func:`marlinkit.algos.mappo.ppo_loss`, written with the MAPPO paper's names; this
module computes its gradients a faster way, and ``tests/algos/test_mappo.py`` holds the two to the same numbers
(relative error below 1e-5 per parameter tensor on a real corridor batch, and a test that a 1 % perturbation
of any loss term is caught). Three steps replace autograd:

1. the loss's gradients with respect to the logits and values in closed form (:func:`loss_gradients`): a dozen
   plain tensor ops on 128-row tensors instead of ~40 autograd ops;
2. the two tanh MLPs' backward passes written out (:mod:`marlinkit.algos.tanh_mlp`);
3. the actor run once per distinct observation of the batch (``MAPPOConfig.distinct_obs``): an observation is 4
   small integers, so a batch of 8,000 agent-steps holds a few dozen distinct ones; the gradients of a distinct
   observation's logits are the sums of its rows'.

``MAPPOConfig.gradients="autograd"`` trains through ``ppo_loss`` by autograd instead; ``bench mappo`` measures both
(``steps_per_s`` and ``autograd_steps_per_s``). The closed form is the default because it is faster by more than
1.5x like for like; the two give the same numbers to float rounding, not in bits, so runs name the setting when it
is not the default.

This module does not import :mod:`marlinkit.algos.mappo` (that module imports this one): the minibatch and
configuration are read by their fields.
"""

from __future__ import annotations

import torch

from marlinkit.algos.tanh_mlp import tanh_mlp_backward, tanh_mlp_forward
from marlinkit.envs.corridor import core


def loss_gradients(logits: torch.Tensor, values: torch.Tensor, mb: "Minibatch", cfg: "MAPPOConfig",
                   kl_coeff: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``ppo_loss``'s gradients with respect to logits [n, 5] and values [n] in closed form, and its terms.

    A dozen plain tensor ops instead of ~40 autograd ops on 128-row tensors: a sixth of an
    update's time. Returns the gradients and the terms [policy loss, value loss, KL] as one tensor.
    """
    n = len(logits)
    log_probs = torch.log_softmax(logits, -1)
    probs = log_probs.exp()
    ratio = torch.exp((log_probs * mb.action_onehot).sum(-1) - mb.old_logp)
    surrogate = ratio * mb.advantages
    clipped = ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef) * mb.advantages
    minimum = torch.minimum(surrogate, clipped)
    # d/dlog pi(a) of -min(rA, clip(r) A) is -rA where rA is the minimum, else 0 (clip is flat outside its range);
    # d log pi(a) / d logits = onehot(a) - p and d KL(old || new) / d logits = p - p_old.
    grad_logp = surrogate.mul((surrogate <= clipped).float()).mul_(-1.0 / n)
    grad_logits = (mb.action_onehot - probs).mul_(grad_logp[:, None]).add_(probs - mb.old_probs, alpha=kl_coeff / n)
    if cfg.ent_coef:  # d sum(p log p) / d logits = p log p - p sum(p log p)
        p_log_p = probs * log_probs
        grad_logits += (cfg.ent_coef / n) * (p_log_p - probs * p_log_p.sum(-1, keepdim=True))
    error = values - mb.returns
    squared = error.square()
    grad_values = error.mul(2 * cfg.vf_coef / n)
    if cfg.vf_clip is not None:  # the clipped squared error is flat beyond the clip
        grad_values.mul_((squared <= cfg.vf_clip).float())
        squared = squared.clamp_(max=cfg.vf_clip)
    kl = torch.vdot(mb.old_probs.view(-1), (mb.old_log_probs - log_probs).view(-1)) / n  # mean categorical_kl
    terms = torch.stack([minimum.mean().neg_(), squared.mean(), kl])
    return grad_logits, grad_values, terms


@torch.no_grad()
def gradients(actor: list[torch.nn.Linear], critic: list[torch.nn.Linear], mb: "Minibatch", actor_in: torch.Tensor | None,
              cfg: "MAPPOConfig", kl_coeff: float) -> tuple[list[torch.Tensor], torch.Tensor]:
    """``ppo_loss``'s gradients for the actor's then the critic's parameters (``MAPPO.params`` order), by forward,
    closed-form loss gradients and written-out backward; and the loss terms [policy loss, value loss, KL].

    ``actor``, ``critic``: the networks' linear layers. ``actor_in``: the batch's distinct observations (rows
    picked by ``mb.actor_row``), or None to run the actor on the minibatch's own rows.
    """
    actor_activations = tanh_mlp_forward(actor, mb.obs if actor_in is None else actor_in)
    critic_activations = tanh_mlp_forward(critic, mb.critic_in)
    logits, values = actor_activations[-1], critic_activations[-1][:, 0]
    if actor_in is not None:
        logits = logits.index_select(0, mb.actor_row)
    grad_logits, grad_values, terms = loss_gradients(logits, values, mb, cfg, kl_coeff)
    if actor_in is not None:  # the gradient of a distinct observation's logits sums its rows'
        grad_logits = torch.zeros(len(actor_in), core.N_ACTIONS).index_add_(0, mb.actor_row, grad_logits)
    grads = (tanh_mlp_backward(actor, actor_activations, grad_logits)
             + tanh_mlp_backward(critic, critic_activations, grad_values[:, None]))
    return grads, terms
