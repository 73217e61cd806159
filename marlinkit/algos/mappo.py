"""MAPPO for the MARLIN corridors (paper Section III), hand-written in the CleanRL style.

Read top to bottom: the losses (named as in the MAPPO paper, Yu et al. 2022, and in RLlib's PPO,
the authors' stack), the hyperparameters, the networks, then the update twice: ``MAPPO.update``,
the fast path training runs, and ``update_reference``, the same update by plain autograd through
the named losses (``tests/algos/test_mappo.py`` holds them to the same gradients on a corridor batch).
Then training and evaluation (the rollouts themselves: :mod:`~marlinkit.algos.mappo_rollouts`). Defaults: the authors' values (FACTS §4), else RLlib's.

The fast path (2.2x the autograd version's throughput on one CPU thread): the loss's gradients
with respect to logits and values in closed form (``loss_gradients``), the MLPs' backward passes
written out (:mod:`~marlinkit.algos.tanh_mlp`), torch's fused Adam kernel called directly, and the
actor run once per distinct observation of a batch (``MAPPOConfig.distinct_obs``).

Actions from outside. ``train`` takes a ``generator(state, sampled) -> actions`` that may replace
the policy's samples for any copy and step; MARLIN's negotiated plans enter this way. Every taken
action is trained on alike: its behaviour log-probability (and the behaviour logits of the KL
term) is the *current* policy's, computed at collection time. For outside actions that makes the
importance ratio start at 1, so PPO treats them as on-policy and its clip bounds how far one
iteration moves towards them. The 50-step episode end is terminal (fixed horizon): no bootstrap.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
import torch
from torch.optim.adam import adam as functional_adam
from torch import nn

from marlinkit.algos.mappo_rollouts import (CRITIC_SIZE, OBS_SIZE, EpisodeCallback, Generator, critic_inputs, evaluation_uniforms,
                                            rollouts, sample_actions)
from marlinkit.algos.tanh_mlp import FastTanh, tanh_mlp_backward, tanh_mlp_forward
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout



# ---------------------------------------------------------------------------------------------
# The losses (MAPPO paper names; RLlib's PPO loss terms)


def compute_gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, next_value: np.ndarray,
                gamma: float, lam: float, cut: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Advantages A and returns (the value targets A + V) by GAE(gamma, lambda) over arrays [T, ...].

    ``dones[t]`` marks that the episode ended with step ``t``; ``next_value`` is V of the state
    after the last step (used only where the last step did not end an episode). ``cut[t]`` (optional,
    broadcastable to ``values[t]``): the trace does not carry step ``t + 1``'s advantage into step ``t``,
    which keeps only its one-step TD error (``generated_steps="separate"``: a generated segment starts at ``t + 1``).
    """
    advantages = np.zeros_like(values)
    last = np.zeros_like(next_value)
    for t in reversed(range(len(rewards))):
        following = next_value if t == len(rewards) - 1 else values[t + 1]
        live = 1.0 - dones[t]
        delta = rewards[t] + gamma * following * live - values[t]
        last = delta + gamma * lam * live * (last if cut is None else np.where(cut[t], 0.0, last))
        advantages[t] = last
    return advantages, advantages + values


def separate_generated_steps(rewards, values, dones, next_value, gamma: float, lam: float,
                             generated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GAE for ``generated_steps="separate"``, one run's arrays [T, B, 2]: ``generated`` [T, B] marks the copies
    whose step a generator chose.

    The trace stops before every generated step; a generated step's value target is its own value (no
    value-loss gradient) and its advantage the mean of the others' (exactly 0 after the batch's standardisation).
    The window's last step bootstraps from V whatever comes next, so the step after the window needs no flag.
    """
    following = np.concatenate([generated[1:], np.zeros_like(generated[:1])])[..., None]  # [T, B, 1]: the next step is generated
    advantages, returns = compute_gae(rewards, values, dones, next_value, gamma, lam, cut=following)
    rows = np.broadcast_to(generated[..., None], values.shape)
    returns[rows] = values[rows]
    if rows.any() and not rows.all():
        advantages[rows] = advantages[~rows].mean()
    return advantages, returns


def clipped_policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, clip: float) -> torch.Tensor:
    """PPO's clipped surrogate, negated for minimisation: ``-E[min(r A, clip(r, 1-eps, 1+eps) A)]``."""
    ratio = torch.exp(logp - old_logp)
    return -torch.min(ratio * advantages, ratio.clamp(1 - clip, 1 + clip) * advantages).mean()


def value_loss(values: torch.Tensor, returns: torch.Tensor, clip: float | None) -> torch.Tensor:
    """Mean squared value error, each term clipped at ``clip`` (RLlib's vf_clip_param)."""
    error = (values - returns) ** 2
    return (error if clip is None else error.clamp(max=clip)).mean()


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


@dataclass(frozen=True)
class MAPPOConfig:
    """MAPPO hyperparameters; defaults are the authors' RLlib settings (FACTS §4)."""

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
    init: str = "orthogonal"
    """Weight initialisation (``INITS``): "orthogonal", CleanRL's (gain sqrt 2 in the hidden layers, 0.01 in the
    policy head, 1 in the value head, zero biases); "torch", ``nn.Linear``'s own (Kaiming-uniform weights and
    biases), which RLlib 2.60's default model keeps when no ``fcnet_kernel_initializer`` is set. The paper does
    not name its RLlib version or initialiser. Enters a run's cache key only when not "orthogonal"
    (``config_key``), so the runs made before it existed keep their keys."""
    generated_steps: str = "learn"
    """Steps whose joint action a generator chose instead of the policy (MARLIN's plan steps, Algorithm 1).
    "learn", the paper's: they are ordinary rows of the batch (actor and critic learn from them, and their
    rewards flow back into the returns of the policy's own steps before them). "separate": no policy gradient
    and no value-loss gradient from them (their advantage is set to the batch's mean, 0 after standardisation;
    their value target is their own value), and the GAE trace of the policy's own steps stops where such a
    segment starts (the last step before it bootstraps from V there). Enters a run's cache key only when
    not "learn" (``config_key``)."""
    distinct_obs: bool = True
    """Run the actor once per distinct observation of a batch, not once per row (speed only).

    An observation is 4 small integers, so a batch of 8000 agent-steps holds a few dozen distinct
    ones (18-32 measured). Each minibatch runs the actor on those, reads its rows' logits from
    them, and sums its rows' logit gradients per distinct observation before the backward pass:
    the same gradients with sums in another order (float rounding only). Batches with more
    distinct observations than 3/4 of a minibatch use the per-row pass."""


    def __post_init__(self):
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.generated_steps not in GENERATED_STEPS:
            raise ValueError(f"generated_steps must be one of {GENERATED_STEPS}, got {self.generated_steps!r}")


#: ``MAPPOConfig.init`` values: CleanRL's orthogonal initialisation, or torch's (RLlib 2.60's default).
INITS = ("orthogonal", "torch")
#: ``MAPPOConfig.generated_steps`` values: the paper's (generator-chosen steps are ordinary data) or kept apart.
GENERATED_STEPS = ("learn", "separate")
#: Settings added after runs were cached: they enter ``config_key`` only when they differ from the default.
_KEY_WHEN_SET = ("init", "generated_steps")


def config_key(config: MAPPOConfig) -> dict[str, Any]:
    """The settings a run's cache key holds: every field, less those of ``_KEY_WHEN_SET`` left at their default."""
    defaults = MAPPOConfig()
    return {k: v for k, v in dataclasses.asdict(config).items() if k not in _KEY_WHEN_SET or v != getattr(defaults, k)}


class Minibatch(NamedTuple):
    """Agent-step rows the PPO loss reads besides the networks' outputs (a whole batch or a minibatch)."""

    obs: torch.Tensor  # [n, 4]
    critic_in: torch.Tensor  # [n, 13]
    action_onehot: torch.Tensor  # [n, 5], the taken action
    old_logp: torch.Tensor  # [n], its behaviour log-probability
    old_log_probs: torch.Tensor  # [n, 5], behaviour log-probabilities of all actions (KL term)
    old_probs: torch.Tensor  # [n, 5]
    advantages: torch.Tensor  # [n]
    returns: torch.Tensor  # [n]
    actor_row: torch.Tensor | None = None  # [n] int64, the row's distinct observation (MAPPOConfig.distinct_obs)


def ppo_loss(logits: torch.Tensor, values: torch.Tensor, mb: Minibatch, cfg: MAPPOConfig,
             kl_coeff: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss one minibatch step minimises, and its terms [policy loss, value loss, KL] (detached):

    ``clipped_policy_loss + vf_coef * value_loss + kl_coeff * mean categorical_kl - ent_coef * mean entropy``.
    """
    logp = (torch.log_softmax(logits, -1) * mb.action_onehot).sum(-1)
    policy = clipped_policy_loss(logp, mb.old_logp, mb.advantages, cfg.clip_coef)
    value = value_loss(values, mb.returns, cfg.vf_clip)
    kl = categorical_kl(mb.old_log_probs, logits).mean()
    loss = policy + cfg.vf_coef * value + kl_coeff * kl - cfg.ent_coef * entropy(logits).mean()
    return loss, torch.stack([policy, value, kl]).detach()


# ---------------------------------------------------------------------------------------------
# Networks (their forward and written-out backward passes: marlinkit.algos.tanh_mlp)


def _layer(n_in: int, n_out: int, std: float, init: str = "orthogonal") -> nn.Linear:
    layer = nn.Linear(n_in, n_out)  # "torch": keeps nn.Linear's own initialisation
    if init == "torch":
        return layer
    nn.init.orthogonal_(layer.weight, std)
    nn.init.zeros_(layer.bias)
    return layer


class Actor(nn.Sequential):
    """Decentralised policy shared by both robots: ``[x, y, goal_x, goal_y]`` -> 256 tanh -> 256 tanh -> 5 logits."""

    def __init__(self, hidden: int = 256, init: str = "orthogonal"):
        super().__init__(_layer(OBS_SIZE, hidden, 2**0.5, init), FastTanh(), _layer(hidden, hidden, 2**0.5, init), FastTanh(),
                         _layer(hidden, core.N_ACTIONS, 0.01, init))

    @property
    def linears(self) -> list[nn.Linear]:
        return [self[0], self[2], self[4]]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The Sequential's ops without a module call per layer (a few % of an update)."""
        return tanh_mlp_forward(self.linears, x)[-1]


class Critic(nn.Sequential):
    """Centralised value: own obs, other robot's obs and its one-hot action (13 inputs) -> 16 tanh -> V."""

    def __init__(self, hidden: int = 16, init: str = "orthogonal"):
        super().__init__(_layer(CRITIC_SIZE, hidden, 2**0.5, init), FastTanh(), _layer(hidden, 1, 1.0, init))

    @property
    def linears(self) -> list[nn.Linear]:
        return [self[0], self[2]]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return tanh_mlp_forward(self.linears, x)[-1]


# ---------------------------------------------------------------------------------------------
# The fast path's loss gradients, and the rows an update reads


def loss_gradients(logits: torch.Tensor, values: torch.Tensor, mb: Minibatch, cfg: MAPPOConfig,
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


def training_batch(cfg: MAPPOConfig, obs, critic_in, actions, old_logp, old_logits, advantages, returns, *,
                   distinct: bool) -> tuple[Minibatch, torch.Tensor | None]:
    """One update's rows (flat arrays) as tensors, advantages standardised when ``cfg.norm_adv``.

    With ``distinct`` and few enough distinct observations (``MAPPOConfig.distinct_obs``) also those
    observations, each row's index into them in ``actor_row``; else None and ``actor_row`` = row.
    """
    old_log_probs = torch.log_softmax(torch.as_tensor(old_logits, dtype=torch.float32), -1)
    advantages = torch.as_tensor(advantages, dtype=torch.float32)
    if cfg.norm_adv:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    batch = Minibatch(torch.as_tensor(obs, dtype=torch.float32), torch.as_tensor(critic_in, dtype=torch.float32),
                      nn.functional.one_hot(torch.as_tensor(actions, dtype=torch.int64), core.N_ACTIONS).float(),
                      torch.as_tensor(old_logp, dtype=torch.float32), old_log_probs, old_log_probs.exp(), advantages,
                      torch.as_tensor(returns, dtype=torch.float32))
    if distinct:
        distinct_obs, actor_row = np.unique(obs, axis=0, return_inverse=True)
        if len(distinct_obs) <= min(cfg.minibatch_size, len(obs)) * 3 // 4:
            return (batch._replace(actor_row=torch.as_tensor(actor_row.reshape(-1), dtype=torch.int64)),
                    torch.as_tensor(distinct_obs, dtype=torch.float32))
    return batch._replace(actor_row=torch.arange(len(obs))), None


# ---------------------------------------------------------------------------------------------
# Agent: the fast update


class MAPPO:
    """Actor, critic and their optimiser; ``update`` runs PPO epochs over one batch."""

    def __init__(self, config: MAPPOConfig, seed: int):
        torch.manual_seed(seed)
        self.config = config
        self.actor = Actor(config.actor_hidden, config.init)
        self.critic = Critic(config.critic_hidden, config.init)
        self.params = [*self.actor.parameters(), *self.critic.parameters()]
        self.adam_moments = [torch.zeros_like(p) for p in self.params], [torch.zeros_like(p) for p in self.params]
        self.adam_steps = [torch.zeros(()) for _ in self.params]  # Adam's step count, one per parameter tensor
        self.kl_coeff = config.kl_coeff
        self.generator = torch.Generator().manual_seed(seed)

    @torch.no_grad()
    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Policy logits for observations [..., 4]."""
        return self.actor(torch.as_tensor(obs, dtype=torch.float32)).numpy()

    @torch.no_grad()
    def values(self, critic_in: np.ndarray) -> np.ndarray:
        return self.critic(torch.as_tensor(critic_in)).squeeze(-1).numpy()

    def update(self, obs, critic_in, actions, old_logp, old_logits, advantages, returns) -> dict[str, float]:
        """PPO epochs over one batch of agent-step rows (flat arrays); returns loss statistics.

        No autograd: each minibatch's gradients come from :meth:`gradients`. ``update_reference`` is
        the same update by autograd.
        """
        cfg = self.config
        batch, actor_in = training_batch(cfg, obs, critic_in, actions, old_logp, old_logits, advantages, returns,
                                         distinct=cfg.distinct_obs)
        n = len(obs)
        size = min(cfg.minibatch_size, n)
        terms = []
        for _ in range(cfg.update_epochs):
            order = torch.randperm(n, generator=self.generator)
            # one gather per column and epoch, then views; a last partial minibatch is dropped
            chunks = zip(*(t.index_select(0, order).split(size) for t in batch))
            for mb in map(Minibatch._make, itertools.islice(chunks, n // size)):
                grads, mb_terms = self.gradients(mb, actor_in)
                self._adam_step(grads)
                terms.append(mb_terms)
        return self._end_update(terms)

    @torch.no_grad()
    def gradients(self, mb: Minibatch, actor_in: torch.Tensor | None) -> tuple[list[torch.Tensor], torch.Tensor]:
        """``ppo_loss``'s gradients in ``params`` order, by forward, closed-form loss gradients and
        written-out backward; and the loss terms.

        ``actor_in``: the batch's distinct observations (rows picked by ``mb.actor_row``), or None
        to run the actor on the minibatch's own rows.
        """
        actor, critic = self.actor.linears, self.critic.linears
        actor_activations = tanh_mlp_forward(actor, mb.obs if actor_in is None else actor_in)
        critic_activations = tanh_mlp_forward(critic, mb.critic_in)
        logits, values = actor_activations[-1], critic_activations[-1][:, 0]
        if actor_in is not None:
            logits = logits.index_select(0, mb.actor_row)
        grad_logits, grad_values, terms = loss_gradients(logits, values, mb, self.config, self.kl_coeff)
        if actor_in is not None:  # the gradient of a distinct observation's logits sums its rows'
            grad_logits = torch.zeros(len(actor_in), core.N_ACTIONS).index_add_(0, mb.actor_row, grad_logits)
        grads = (tanh_mlp_backward(actor, actor_activations, grad_logits)
                 + tanh_mlp_backward(critic, critic_activations, grad_values[:, None]))
        return grads, terms

    @torch.no_grad()
    def _adam_step(self, grads: list[torch.Tensor]) -> None:
        """One Adam step by torch's public functional Adam with its fused CPU kernel (``torch.optim.adam.adam``,
        ``fused=True``): ``torch.optim.Adam(fused=True)``'s numbers without the optimizer object's per-step
        bookkeeping (zero_grad, state lookups, hooks)."""
        if self.config.max_grad_norm is not None:  # nn.utils.clip_grad_norm_ on the gradients themselves
            scale = (self.config.max_grad_norm / (nn.utils.get_total_norm(grads) + 1e-6)).clamp(max=1.0)
            for grad in grads:
                grad.mul_(scale)
        functional_adam(self.params, grads, *self.adam_moments, [], self.adam_steps, fused=True,
                              amsgrad=False, beta1=0.9, beta2=0.999, lr=self.config.lr, weight_decay=0.0, eps=1e-8,
                              maximize=False)

    def _end_update(self, terms: list[torch.Tensor]) -> dict[str, float]:
        """Adapt the KL weight to the update's mean KL; the update's mean loss terms."""
        policy_loss, v_loss, mean_kl = torch.stack(terms).mean(0).tolist()
        if self.config.kl_coeff:
            self.kl_coeff = adapt_kl_coeff(self.kl_coeff, mean_kl, self.config.kl_target)
        return {"kl": mean_kl, "policy_loss": policy_loss, "value_loss": v_loss, "kl_coeff": self.kl_coeff}


# ---------------------------------------------------------------------------------------------
# The reference update: plain autograd through the named losses


def reference_gradients(agent: MAPPO, mb: Minibatch) -> tuple[list[torch.Tensor], torch.Tensor]:
    """``ppo_loss``'s gradients in ``agent.params`` order by autograd (actor run per row), and its terms."""
    with torch.enable_grad():
        logits, values = agent.actor(mb.obs), agent.critic(mb.critic_in)[:, 0]
        loss, terms = ppo_loss(logits, values, mb, agent.config, agent.kl_coeff)
        return list(torch.autograd.grad(loss, agent.params)), terms


def update_reference(agent: MAPPO, obs, critic_in, actions, old_logp, old_logits, advantages, returns) -> dict[str, float]:
    """``agent.update`` in plain autograd: the same minibatches (the agent's generator) and Adam step,
    gradients from :func:`reference_gradients`. The same numbers to float rounding, not in bits."""
    cfg = agent.config
    batch, _ = training_batch(cfg, obs, critic_in, actions, old_logp, old_logits, advantages, returns, distinct=False)
    n = len(obs)
    size = min(cfg.minibatch_size, n)
    terms = []
    for _ in range(cfg.update_epochs):
        order = torch.randperm(n, generator=agent.generator)
        for start in range(0, n - size + 1, size):  # a last partial minibatch is dropped
            grads, mb_terms = reference_gradients(agent, Minibatch(*(t[order[start:start + size]] for t in batch)))
            agent._adam_step(grads)
            terms.append(mb_terms)
    return agent._end_update(terms)


# ---------------------------------------------------------------------------------------------
# Training and evaluation on the batched corridor core (the rollouts: mappo_rollouts.py)


def training_rows(agent: MAPPO, obs, actions, logp, logits, rewards, dones, next_value,
                  generated=None) -> tuple[np.ndarray, ...]:
    """A rollout as the flat rows ``MAPPO.update`` takes: obs, critic inputs, actions, log-probs, logits,
    GAE advantages and returns ([T, B, 2, ...] -> [T*B*2, ...]). ``generated`` [T, B]: which copies' steps a
    generator chose (read only under ``generated_steps="separate"``)."""
    cfg = agent.config
    critic_in = critic_inputs(obs, actions)
    values = agent.values(critic_in)
    advantages, returns = gae_for(cfg, rewards, values, dones, next_value, generated)
    flat = lambda a: a.reshape(-1, *a.shape[3:])  # noqa: E731  [T, B, 2, ...] -> [T*B*2, ...]
    return flat(obs), flat(critic_in), flat(actions), flat(logp), flat(logits), flat(advantages), flat(returns)


def gae_for(cfg: MAPPOConfig, rewards, values, dones, next_value, generated):
    """The advantages and returns ``cfg`` trains on: plain GAE, or :func:`separate_generated_steps`."""
    if cfg.generated_steps == "learn":
        return compute_gae(rewards, values, dones, next_value, cfg.gamma, cfg.gae_lambda)
    if generated is None:
        raise ValueError('generated_steps="separate" needs the rollout\'s generated-step flags')
    return separate_generated_steps(rewards, values, dones, next_value, cfg.gamma, cfg.gae_lambda, generated)


def train(config: MAPPOConfig, layout: Layout | Callable[[int], Layout], *, n_envs: int, episodes: int, seed: int,
          generator: Generator | None = None, on_episode_end: EpisodeCallback | None = None) -> MAPPO:
    """Train one shared policy on ``n_envs`` copies for ``episodes`` episodes per copy.

    ``layout`` is a layout or, for an environment that changes, the layout of each 0-based episode.
    ``episode`` passed to the callback counts per copy, starting at 1 (the paper's x-axis).
    """
    if n_envs < 1 or episodes < 1:
        raise ValueError(f"n_envs and episodes must be >= 1, got {n_envs} and {episodes}")
    agent = MAPPO(config, seed)
    for rollout in rollouts(agent, layout, n_envs=n_envs, episodes=episodes, seed=seed, generator=generator,
                            on_episode_end=on_episode_end):
        agent.update(*training_rows(agent, *rollout))
    return agent


def evaluate(agent: MAPPO, layout: Layout, runs: int, seed: int | tuple,
             actuate: Callable[[int, np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Performance of ``runs`` episodes with actions sampled from the policy (not greedy).

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

