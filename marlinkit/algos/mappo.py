"""MAPPO for the MARLIN corridors (paper Section III), written as CleanRL writes PPO, for R runs at once.

Read top to bottom: the losses (named as in the MAPPO paper, Yu et al. 2022, and in RLlib's PPO, the authors'
stack), the hyperparameters, the networks, the agent and its update (PPO epochs over minibatches, each
minimising ``ppo_loss`` by one Adam step), then training and evaluation (the rollouts themselves:
:mod:`~marlinkit.algos.mappo_rollouts`). Defaults: the authors' values (their public code; see the documentation's
"Sources and measured facts"), else RLlib's.

Runs and seeds. One trainer trains R independent runs (seeds x scenarios x systems of a grid) side by side:
their weights are stacked along a leading run axis (``[R, out, in]``), every layer is one batched matrix product
and one fused Adam call steps every run. ``train`` is one run (R = 1). Runs never mix: each keeps its own random
streams (rollout ``numpy`` generator and minibatch ``torch`` generator, both from its seed), its own advantage
standardisation, adaptive KL weight and Adam moments, and its numbers do not depend on which runs share its batch.

Gradients. ``MAPPOConfig(gradients="autograd")`` trains by ``loss.backward()`` through ``ppo_loss``. The default,
"closed_form", computes the same gradients a faster way (:mod:`~marlinkit.algos.mappo_fast`: closed-form loss
gradients and written-out backward passes); the committed runs were made by it. The two give the same gradients
to float rounding, and in float64 (``MAPPOConfig.precision``) the same weights after a 30-episode training prefix
at the paper's settings (``tests/algos/test_mappo.py``).

Actions from outside. A run's ``generator(state, sampled) -> actions`` may replace the policy's samples for any
copy and step; MARLIN's negotiated plans enter this way. Every taken action is trained on alike: its behaviour
log-probability (and the behaviour logits of the KL term) is the *current* policy's, computed at collection time.
For outside actions that makes the importance ratio start at 1, so PPO treats them as on-policy and its clip
bounds how far one iteration moves towards them. The 50-step episode end is terminal (fixed horizon): no bootstrap.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, get_args

import numpy as np
import torch
from torch import nn
from torch.optim.adam import adam as functional_adam

from marlinkit.algos import mappo_fast
from marlinkit.algos.gae import compute_gae, separate_generated_steps
from marlinkit.algos.mappo_rollouts import (CRITIC_SIZE, OBS_SIZE, EpisodeCallback, Generator, RunSpec, critic_inputs,
                                            evaluation_uniforms, rollouts, sample_actions)
from marlinkit.config_fields import check_choices
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout

# ---------------------------------------------------------------------------------------------
# The losses (MAPPO paper names; RLlib's PPO loss terms), each a mean over the last (row) axis: one per run.
# Their advantages and returns: marlinkit.algos.gae


def clipped_policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor,
                        clip: float) -> torch.Tensor:
    """PPO's clipped surrogate, negated for minimisation: ``-E[min(r A, clip(r, 1-eps, 1+eps) A)]``.

    A tie of the two terms goes to the unclipped one, gradient included (``torch.min`` would give each half of
    it): a ratio just outside the clip range can round to a tie, and PPO piles ratios up at its edges.
    """
    ratio = torch.exp(logp - old_logp)
    surrogate, clipped = ratio * advantages, ratio.clamp(1 - clip, 1 + clip) * advantages
    return -torch.where(surrogate <= clipped, surrogate, clipped).mean(-1)


def value_loss(values: torch.Tensor, returns: torch.Tensor, clip: float | None) -> torch.Tensor:
    """Mean squared value error, each term clipped at ``clip`` (RLlib's vf_clip_param)."""
    error = (values - returns) ** 2
    return (error if clip is None else error.clamp(max=clip)).mean(-1)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Policy entropy S = -sum_a pi(a) log pi(a) per row of logits."""
    log_probs = torch.log_softmax(logits, -1)
    return -(log_probs.exp() * log_probs).sum(-1)


def categorical_kl(old_logits: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """KL(old || new) per row of two categorical distributions given as logits."""
    old_logp = torch.log_softmax(old_logits, -1)
    return (old_logp.exp() * (old_logp - torch.log_softmax(logits, -1))).sum(-1)


def adapt_kl_coeff(coeff: float, kl: float, target: float) -> float:
    """RLlib's adaptive KL weight: x1.5 when the KL exceeds twice the target, x0.5 below half."""
    if kl > 2.0 * target:
        return coeff * 1.5
    if kl < 0.5 * target:
        return coeff * 0.5
    return coeff


#: ``MAPPOConfig.init``: CleanRL's orthogonal initialisation, or torch's (RLlib 2.60's default).
Init = Literal["orthogonal", "torch"]
#: ``MAPPOConfig.generated_steps``: the paper's (generator-chosen steps are ordinary data) or kept apart.
GeneratedSteps = Literal["learn", "separate"]
#: ``MAPPOConfig.gradients``: the closed-form fast path (mappo_fast.py) or ``loss.backward()``.
Gradients = Literal["closed_form", "autograd"]
#: ``MAPPOConfig.precision``.
Precision = Literal["float32", "float64"]
INITS, GENERATED_STEPS = get_args(Init), get_args(GeneratedSteps)
GRADIENTS, PRECISIONS = get_args(Gradients), get_args(Precision)


@dataclass(frozen=True)
class MAPPOConfig:
    """MAPPO hyperparameters; defaults are the authors' RLlib settings."""

    lr: float = 1e-5
    """Adam learning rate of actor and critic (authors: 1e-5)."""
    gamma: float = 0.99
    """Discount factor (RLlib default)."""
    gae_lambda: float = 1.0
    """GAE lambda (RLlib PPO default)."""
    clip_coef: float = 0.2
    """PPO surrogate clip epsilon (authors: 0.2)."""
    kl_coeff: float = 0.01
    """Initial KL penalty weight (authors: 0.01); 0 disables the KL term."""
    kl_target: float = 0.01
    """KL the penalty weight adapts towards after each iteration, as in RLlib (x1.5 above 2x, x0.5 below 0.5x)."""
    vf_coef: float = 0.005
    """Weight of the value loss (authors' vf_loss_coeff: 0.005)."""
    vf_clip: float | None = 10.0
    """Clip of the squared value error, RLlib's vf_clip_param; None for no clip."""
    ent_coef: float = 0.0
    """Entropy bonus weight (RLlib default 0)."""
    max_grad_norm: float | None = None
    """Global gradient-norm clip; None as in RLlib's PPO default."""
    norm_adv: bool = True
    """Standardise advantages over each training batch (RLlib does)."""
    steps_per_iteration: int = 4000
    """Environment steps (all copies together) collected per policy update (RLlib train_batch_size)."""
    update_epochs: int = 30
    """Passes over each batch (RLlib num_epochs)."""
    minibatch_size: int = 128
    """Agent-step rows per gradient step (RLlib minibatch_size)."""
    actor_hidden: int = 256
    """Units in each of the actor's two tanh layers (paper: 256)."""
    critic_hidden: int = 16
    """Units in the critic's tanh layer (paper: 16)."""
    init: Init = "orthogonal"
    """Weight initialisation (``INITS``): "orthogonal", CleanRL's (gain sqrt 2 in the hidden layers, 0.01 in the
    policy head, 1 in the value head, zero biases); "torch", ``nn.Linear``'s own (Kaiming-uniform weights and
    biases), which RLlib 2.60's default model keeps when no ``fcnet_kernel_initializer`` is set. The paper does
    not name its RLlib version or initialiser."""
    generated_steps: GeneratedSteps = "learn"
    """Steps whose joint action a generator chose instead of the policy (MARLIN's plan steps, Algorithm 1).
    "learn", the paper's: they are ordinary rows of the batch (actor and critic learn from them, and their
    rewards flow back into the returns of the policy's own steps before them). "separate": no policy gradient
    and no value-loss gradient from them (their advantage is set to the batch's mean, 0 after standardisation;
    their value target is their own value), and the GAE trace of the policy's own steps stops where such a
    segment starts (the last step before it bootstraps from V there)."""
    gradients: Gradients = "closed_form"
    """How each minibatch's gradients of ``ppo_loss`` are computed (``GRADIENTS``): "autograd", ``loss.backward()``;
    or "closed_form", the fast path of :mod:`marlinkit.algos.mappo_fast` (closed-form loss gradients, written-out
    backward passes; the default: ``bench mappo`` measures it more than 1.5x faster like for like, and the committed
    runs were made by it). The same numbers to float rounding, not in bits."""
    precision: Precision = "float32"
    """Floating-point type of the networks, the optimiser and the update's rows (``PRECISIONS``): "float32", every
    run's; "float64" for checks that need rounding far below float32's (the closed form against autograd over a
    training prefix)."""
    distinct_obs: bool = True
    """Run the actor once per distinct observation of a batch, not once per row (speed only).

    An observation is 4 small integers, so a batch of 8000 agent-steps holds a few dozen distinct
    ones (18-32 measured). Each minibatch runs the actor on those, reads its rows' logits from
    them, and sums its rows' logit gradients per distinct observation before the backward pass:
    the same gradients with sums in another order (float rounding only). An update in which some run has more
    than ``DISTINCT_CAPACITY`` distinct observations (a batch spanning a layout change) uses the per-row pass."""

    def __post_init__(self):
        check_choices(self)

    @property
    def dtype(self) -> torch.dtype:
        """``precision`` as a torch dtype."""
        return getattr(torch, self.precision)




class Minibatch(NamedTuple):
    """Agent-step rows the PPO loss reads besides the networks' outputs, per run (a whole batch or a minibatch)."""

    obs: torch.Tensor  # [R, n, 4]
    critic_in: torch.Tensor  # [R, n, 13]
    action_onehot: torch.Tensor  # [R, n, 5], the taken action
    old_logp: torch.Tensor  # [R, n], its behaviour log-probability
    old_log_probs: torch.Tensor  # [R, n, 5], behaviour log-probabilities of all actions (KL term)
    old_probs: torch.Tensor  # [R, n, 5]
    advantages: torch.Tensor  # [R, n]
    returns: torch.Tensor  # [R, n]
    actor_row: torch.Tensor | None = None  # [R, n] int64, the row's distinct observation (MAPPOConfig.distinct_obs)


def ppo_loss(logits: torch.Tensor, values: torch.Tensor, mb: Minibatch, cfg: MAPPOConfig,
             kl_coeff: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss one minibatch step minimises, summed over runs, and its terms [R, 3] (policy loss, value loss, KL;
    detached). Per run:

    ``clipped_policy_loss + vf_coef * value_loss + kl_coeff * mean categorical_kl - ent_coef * mean entropy``.

    Runs share no weights, so a run's gradients of the sum are those of its own loss.
    """
    logp = (torch.log_softmax(logits, -1) * mb.action_onehot).sum(-1)
    policy = clipped_policy_loss(logp, mb.old_logp, mb.advantages, cfg.clip_coef)
    value = value_loss(values, mb.returns, cfg.vf_clip)
    kl = categorical_kl(mb.old_log_probs, logits).mean(-1)
    loss = policy + cfg.vf_coef * value + kl_coeff * kl - cfg.ent_coef * entropy(logits).mean(-1)
    return loss.sum(), torch.stack([policy, value, kl], -1).detach()


# ---------------------------------------------------------------------------------------------
# Networks: weights [R, out, in] and biases [R, 1, out], one tanh MLP per run

#: The parameters' names, in ``MAPPO.params`` order: a decentralised actor shared by both robots,
#: ``[x, y, goal_x, goal_y]`` -> 256 tanh -> 256 tanh -> 5 logits; a centralised critic, own obs, other robot's
#: obs and its one-hot action (13 inputs) -> 16 tanh -> V.
PARAM_NAMES = ("actor.0.weight", "actor.0.bias", "actor.2.weight", "actor.2.bias", "actor.4.weight", "actor.4.bias",
               "critic.0.weight", "critic.0.bias", "critic.2.weight", "critic.2.bias")
ACTOR_PARAMS = 6  # the actor's share of PARAM_NAMES
FLAT_ALIGN = 64  # elements: a run's parameter row starts at a multiple of every vector width torch uses
DISTINCT_CAPACITY = 32  # rows of the padded distinct-observation actor input: <= 16 free cells x 2 goals


def _layer(n_in: int, n_out: int, std: float, init: str = "orthogonal") -> nn.Linear:
    layer = nn.Linear(n_in, n_out)  # "torch": keeps nn.Linear's own initialisation
    if init == "torch":
        return layer
    nn.init.orthogonal_(layer.weight, std)
    nn.init.zeros_(layer.bias)
    return layer


def initial_layers(config: MAPPOConfig, seed: int) -> list[nn.Linear]:
    """One run's initial actor then critic layers, CleanRL's initialisation (``MAPPOConfig.init``), drawn in
    layer order from torch's global generator seeded with ``seed``."""
    torch.manual_seed(seed)
    hidden, critic_hidden, init = config.actor_hidden, config.critic_hidden, config.init
    return [_layer(OBS_SIZE, hidden, 2**0.5, init), _layer(hidden, hidden, 2**0.5, init),
            _layer(hidden, core.N_ACTIONS, 0.01, init),
            _layer(CRITIC_SIZE, critic_hidden, 2**0.5, init), _layer(critic_hidden, 1, 1.0, init)]


def fast_tanh(x: torch.Tensor) -> torch.Tensor:
    """tanh as ``2 sigmoid(2x) - 1``: twice as fast as ``torch.tanh`` on CPU, within 3e-7 of it."""
    return (torch.sigmoid(x * 2.0) - 0.5).mul_(2.0)  # in place only on what no backward needs


def mlp_forward(params: list[torch.Tensor], x: torch.Tensor) -> list[torch.Tensor]:
    """R tanh MLPs at once (tanh between layers, none after the last): x [R, n, in] -> every layer's input and
    the output (what the closed form's backward pass reads; the output alone is ``[-1]``)."""
    activations = [x]
    depth = len(params) // 2
    for k in range(depth):
        weight, bias = params[2 * k], params[2 * k + 1]
        if weight.shape[1] == 1:  # bmm to one output column takes a path whose sums depend on the batch size
            z = (activations[-1] * weight).sum(-1, keepdim=True) + bias
        else:
            z = torch.baddbmm(bias, activations[-1], weight.transpose(1, 2))
        activations.append(fast_tanh(z) if k < depth - 1 else z)
    return activations


# ---------------------------------------------------------------------------------------------
# The agent: R runs' actors, critics and Adam states; the update


class MAPPO:
    """R MAPPO agents (actor, critic, Adam state) with stacked parameters; ``update`` steps all of them."""

    def __init__(self, config: MAPPOConfig, seeds: Sequence[int]):
        self.config, self.seeds = config, [int(s) for s in seeds]
        per_run = [[t.detach() for layer in initial_layers(config, s) for t in (layer.weight, layer.bias[None])]
                   for s in self.seeds]
        # Every run's parameters live in one row of ``flat``, padded to a multiple of FLAT_ALIGN elements, so that the
        # fused Adam kernel's vector/scalar split (which rounds differently) falls at the same place in every run
        # whatever the number of runs; ``params`` are views into it.
        self.shapes = [p.shape for p in per_run[0]]
        self.sizes = [p.numel() for p in per_run[0]]
        self.flat = torch.zeros(len(self.seeds), -(-sum(self.sizes) // FLAT_ALIGN) * FLAT_ALIGN, dtype=config.dtype)
        self.params = self.views(self.flat)
        for view, tensors in zip(self.params, zip(*per_run)):
            view.copy_(torch.stack(tensors))
        self.adam_moments = torch.zeros_like(self.flat), torch.zeros_like(self.flat)
        self.adam_steps = [torch.zeros(())]  # Adam's step count (one flat parameter tensor)
        self.kl_coeff = torch.full((len(self.seeds),), config.kl_coeff, dtype=torch.float64)
        self.generators = [torch.Generator().manual_seed(seed) for seed in self.seeds]
        self.distinct_fallbacks = 0  # updates whose actor ran per row (some run above DISTINCT_CAPACITY)

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """The parameters [R, ...] (``PARAM_NAMES`` order) as views into ``flat`` [R, width]."""
        offsets = itertools.accumulate(self.sizes, initial=0)
        return [flat[:, o:o + size].view(len(flat), *shape) for o, size, shape in zip(offsets, self.sizes, self.shapes)]

    @property
    def actor(self) -> list[torch.Tensor]:
        return self.params[:ACTOR_PARAMS]

    @property
    def critic(self) -> list[torch.Tensor]:
        return self.params[ACTOR_PARAMS:]

    @torch.no_grad()
    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Logits [R, n, 5] for observations [R, n, 4]."""
        return mlp_forward(self.actor, torch.as_tensor(obs, dtype=self.config.dtype))[-1].numpy()

    @torch.no_grad()
    def values(self, critic_in: np.ndarray) -> np.ndarray:
        """V [R, n] for critic inputs [R, n, 13]."""
        return mlp_forward(self.critic, torch.as_tensor(critic_in, dtype=self.config.dtype))[-1][..., 0].numpy()

    def policy(self, run: int) -> "RunPolicy":
        return RunPolicy(self, run)

    def update(self, obs, critic_in, actions, old_logp, old_logits, advantages, returns) -> dict[str, np.ndarray]:
        """PPO epochs over one batch per run (arrays [R, n, ...]); returns per-run loss statistics."""
        cfg = self.config
        batch, actor_in = training_batch(cfg, obs, critic_in, actions, old_logp, old_logits, advantages, returns)
        self.distinct_fallbacks += int(cfg.distinct_obs and actor_in is None)
        runs, n = batch.advantages.shape
        size = min(cfg.minibatch_size, n)
        rows = torch.arange(runs)[:, None]
        terms = []
        for _ in range(cfg.update_epochs):
            order = torch.stack([torch.randperm(n, generator=g) for g in self.generators])
            # one gather per column and epoch, then views; a last partial minibatch is dropped
            chunks = zip(*(t[rows, order].split(size, dim=1) for t in batch))
            for mb in map(Minibatch._make, itertools.islice(chunks, n // size)):
                if cfg.gradients == "autograd":
                    grad, mb_terms = self.autograd_gradients(mb, actor_in)
                else:
                    grad, mb_terms = self.closed_form_gradients(mb, actor_in)
                self._adam_step(grad)
                terms.append(mb_terms)
        return self._end_update(terms)

    def autograd_gradients(self, mb: Minibatch, actor_in: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``ppo_loss``'s gradients as CleanRL computes them, by ``loss.backward()``: the gradient of ``flat``
        [R, width], and the loss terms [R, 3]. ``actor_in``: every run's distinct observations (each row's logits
        picked from them by ``mb.actor_row``), or None to run the actor per row."""
        flat = self.flat.detach().requires_grad_()
        params = self.views(flat)
        logits = mlp_forward(params[:ACTOR_PARAMS], mb.obs if actor_in is None else actor_in)[-1]
        if actor_in is not None:
            logits = torch.gather(logits, 1, mb.actor_row[..., None].expand(-1, -1, core.N_ACTIONS))
        values = mlp_forward(params[ACTOR_PARAMS:], mb.critic_in)[-1][..., 0]
        loss, terms = ppo_loss(logits, values, mb, self.config, self.kl_coeff.to(self.config.dtype))
        loss.backward()
        return flat.grad, terms

    @torch.no_grad()
    def closed_form_gradients(self, mb: Minibatch, actor_in: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The same by :func:`marlinkit.algos.mappo_fast.gradients` (``actor_in``: every run's distinct
        observations, or None to run the actor per row)."""
        actor_activations = mlp_forward(self.actor, mb.obs if actor_in is None else actor_in)
        critic_activations = mlp_forward(self.critic, mb.critic_in)
        grads, terms = mappo_fast.gradients(self.actor, self.critic, actor_activations, critic_activations, mb,
                                            self.config, self.kl_coeff.to(self.config.dtype), actor_in is not None)
        flat_grad = torch.zeros_like(self.flat)
        for view, grad in zip(self.views(flat_grad), grads):
            view.copy_(grad)
        return flat_grad, terms

    @torch.no_grad()
    def _adam_step(self, flat_grad: torch.Tensor) -> None:
        """One fused Adam call (torch's public functional ``torch.optim.adam.adam``, ``fused=True``:
        ``torch.optim.Adam(fused=True)``'s numbers without the optimizer object's bookkeeping) for every run's
        parameters (elementwise on ``flat``: runs do not mix)."""
        if self.config.max_grad_norm is not None:  # per run: the global norm of that run's gradients
            scale = (self.config.max_grad_norm / (flat_grad.square().sum(1).sqrt() + 1e-6)).clamp(max=1.0)
            flat_grad.mul_(scale[:, None])
        functional_adam([self.flat], [flat_grad], [self.adam_moments[0]], [self.adam_moments[1]], [],
                        self.adam_steps, fused=True, amsgrad=False, beta1=0.9, beta2=0.999, lr=self.config.lr,
                        weight_decay=0.0, eps=1e-8, maximize=False)

    def _end_update(self, terms: list[torch.Tensor]) -> dict[str, np.ndarray]:
        """Adapt each run's KL weight to its update's mean KL; the update's mean loss terms per run."""
        policy_loss, v_loss, mean_kl = torch.stack(terms).mean(0).double().unbind(1)
        if self.config.kl_coeff:
            self.kl_coeff = torch.tensor([adapt_kl_coeff(float(c), float(k), self.config.kl_target)
                                          for c, k in zip(self.kl_coeff, mean_kl)], dtype=torch.float64)
        return {"kl": mean_kl.numpy(), "policy_loss": policy_loss.numpy(), "value_loss": v_loss.numpy(),
                "kl_coeff": self.kl_coeff.numpy().copy()}


@torch.no_grad()
def actor_logits(params: list[torch.Tensor], obs: np.ndarray, dtype: torch.dtype = torch.float32) -> np.ndarray:
    """One actor's logits [..., 5] for observations [..., 4]; ``params`` its layers in ``PARAM_NAMES`` order, each
    with a leading run axis of 1."""
    x = torch.as_tensor(obs, dtype=dtype)
    return mlp_forward(params, x.reshape(1, -1, x.shape[-1]))[-1].reshape(*x.shape[:-1], core.N_ACTIONS).numpy()


class RunPolicy:
    """One run's policy inside a ``MAPPO``: what ``evaluate`` and episode callbacks read."""

    def __init__(self, agent: MAPPO, run: int):
        self.agent, self.run, self.config = agent, run, agent.config

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Logits [..., 5] for observations [..., 4]."""
        return actor_logits([p[self.run:self.run + 1] for p in self.agent.actor], obs, self.config.dtype)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The run's actor and critic weights by ``PARAM_NAMES`` (an ``nn.Linear``'s shapes)."""
        return {name: p[self.run] if name.endswith("weight") else p[self.run, 0]
                for name, p in zip(PARAM_NAMES, self.agent.params)}


# ---------------------------------------------------------------------------------------------
# The rows an update reads


def training_batch(cfg: MAPPOConfig, obs, critic_in, actions, old_logp, old_logits, advantages,
                   returns) -> tuple[Minibatch, torch.Tensor | None]:
    """One update's rows per run (arrays [R, n, ...]) as tensors, advantages standardised per run when
    ``cfg.norm_adv``; and every run's distinct observations padded to ``DISTINCT_CAPACITY`` rows, each row's index
    into them in ``actor_row`` (``MAPPOConfig.distinct_obs``), or None and ``actor_row`` = row."""
    dtype = cfg.dtype
    old_log_probs = torch.log_softmax(torch.as_tensor(old_logits, dtype=dtype), -1)
    advantages = torch.as_tensor(advantages, dtype=dtype)
    if cfg.norm_adv:
        advantages = (advantages - advantages.mean(1, keepdim=True)) / (advantages.std(1, keepdim=True) + 1e-8)
    batch = Minibatch(torch.as_tensor(obs, dtype=dtype), torch.as_tensor(critic_in, dtype=dtype),
                      nn.functional.one_hot(torch.as_tensor(actions, dtype=torch.int64), core.N_ACTIONS).to(dtype),
                      torch.as_tensor(old_logp, dtype=dtype), old_log_probs,
                      mappo_fast.per_run_exp(old_log_probs), advantages, torch.as_tensor(returns, dtype=dtype))
    runs, n = advantages.shape
    uniques = [np.unique(obs[r], axis=0, return_inverse=True) for r in range(runs)]
    if not cfg.distinct_obs or any(len(d) > DISTINCT_CAPACITY for d, _ in uniques):
        return batch._replace(actor_row=torch.arange(n).expand(runs, n)), None
    actor_in = torch.zeros(runs, DISTINCT_CAPACITY, OBS_SIZE, dtype=dtype)
    for r, (distinct, _) in enumerate(uniques):
        actor_in[r, :len(distinct)] = torch.as_tensor(distinct, dtype=dtype)
    actor_row = np.stack([inverse.reshape(-1) for _, inverse in uniques])
    return batch._replace(actor_row=torch.as_tensor(actor_row, dtype=torch.int64)), actor_in


def gae_for(cfg: MAPPOConfig, rewards, values, dones, next_value, generated):
    """The advantages and returns ``cfg`` trains on: plain GAE, or :func:`separate_generated_steps`."""
    if cfg.generated_steps == "learn":
        return compute_gae(rewards, values, dones, next_value, cfg.gamma, cfg.gae_lambda)
    if generated is None:
        raise ValueError('generated_steps="separate" needs the rollout\'s generated-step flags')
    return separate_generated_steps(rewards, values, dones, next_value, cfg.gamma, cfg.gae_lambda, generated)


def training_rows(agent: MAPPO, obs, actions, logp, logits, rewards, dones, next_value,
                  generated=None) -> tuple[np.ndarray, ...]:
    """A rollout as the per-run rows ``MAPPO.update`` takes: obs, critic inputs, actions, log-probs, logits, GAE
    advantages and returns ([T, R, B, 2, ...] -> [R, T*B*2, ...]). ``generated`` [T, R, B]: which copies' steps
    a generator chose (read only under ``generated_steps="separate"``, per run)."""
    cfg = agent.config
    T, R = obs.shape[:2]
    critic_in = critic_inputs(obs, actions)
    values = agent.values(critic_in.transpose(1, 0, 2, 3, 4).reshape(R, -1, CRITIC_SIZE))
    values = values.reshape(R, T, *obs.shape[2:4]).transpose(1, 0, 2, 3)
    if cfg.generated_steps == "learn":
        advantages, returns = gae_for(cfg, rewards, values, dones, next_value, generated)
    else:  # per run: a run's plan steps cut only its own traces
        advantages, returns = (np.stack(parts, axis=1) for parts in zip(*(
            gae_for(cfg, rewards[:, i], values[:, i], dones[:, i], next_value[i],
                    None if generated is None else generated[:, i]) for i in range(R))))
    per_run = lambda a: np.ascontiguousarray(np.moveaxis(a, 1, 0)).reshape(R, -1, *a.shape[4:])  # noqa: E731
    return (per_run(obs), per_run(critic_in), per_run(actions), per_run(logp), per_run(logits), per_run(advantages),
            per_run(returns))


# ---------------------------------------------------------------------------------------------
# Training and evaluation on the batched corridor core (the rollouts: mappo_rollouts.py)


def train_runs(config: MAPPOConfig, runs: Sequence[RunSpec], *, n_envs: int, episodes: int) -> MAPPO:
    """Train every run of ``runs`` (own seed, layout, generator, callback) on ``n_envs`` copies for ``episodes``
    episodes per copy, side by side. ``episode`` passed to a callback counts per copy from 1 (the paper's x-axis)."""
    if n_envs < 1 or episodes < 1 or not runs:
        raise ValueError(f"need n_envs >= 1, episodes >= 1 and at least one run, got {n_envs}, {episodes}, {len(runs)}")
    agent = MAPPO(config, [run.seed for run in runs])
    for rollout in rollouts(agent, runs, n_envs=n_envs, episodes=episodes):
        agent.update(*training_rows(agent, *rollout))
    return agent


def train(config: MAPPOConfig, layout: Layout | Callable[[int], Layout], *, n_envs: int, episodes: int, seed: int,
          generator: Generator | None = None, on_episode_end: EpisodeCallback | None = None) -> RunPolicy:
    """Train one shared policy: :func:`train_runs` with one run. ``layout`` is a layout or, for an environment that
    changes, the layout of each 0-based episode."""
    return train_runs(config, [RunSpec(layout, seed, generator, on_episode_end)], n_envs=n_envs,
                      episodes=episodes).policy(0)


def evaluate(agent: RunPolicy, layout: Layout, runs: int, seed: int | tuple,
             actuate: Callable[[int, np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Performance of ``runs`` episodes with actions sampled from one run's policy (not greedy).

    Start and dynamics are deterministic, so a greedy policy would give one number ``runs`` times;
    sampling is what makes repeated evaluation runs (and the paper's paired t-test) meaningful.
    ``actuate(t, actions)`` turns the chosen actions into the executed ones (e.g. actuation noise).
    """
    arrays = core.layout_arrays(layout)
    uniforms = evaluation_uniforms(seed, runs)
    state = core.reset(arrays, runs)
    for t in range(core.EPISODE_STEPS):
        actions = sample_actions(agent.logits(core.observe(arrays, state)), uniforms[t])
        if actuate is not None:
            actions = actuate(t, actions)
        state = core.step(arrays, state, actions).state
    return core.performance(arrays, state)
