"""MAPPO for the MARLIN corridors (paper Section III), hand-written in the CleanRL style.

Read top to bottom: the losses (named as in the MAPPO paper, Yu et al. 2022, and in RLlib's PPO,
the authors' stack), the hyperparameters, the networks, then the update: PPO epochs over minibatches,
each minimising ``ppo_loss`` by one Adam step. Then training and evaluation (the rollouts themselves:
:mod:`~marlinkit.algos.mappo_rollouts`). Defaults: the authors' values (their public code; see the documentation's
"Sources and measured facts"), else RLlib's.

The gradients of ``ppo_loss`` come by default from a fast path that gives autograd's numbers to float rounding
(:mod:`~marlinkit.algos.mappo_fast`: closed-form loss gradients, written-out backward passes, the actor run once
per distinct observation); ``MAPPOConfig(gradients="autograd")`` trains by plain autograd through ``ppo_loss``
instead, and ``update_reference`` is one update that way. ``tests/algos/test_mappo.py`` holds the two to the same
gradients on a corridor batch; ``bench mappo`` measures both.

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
from marlinkit.algos import mappo_fast
from marlinkit.algos.gae import compute_gae, separate_generated_steps
from marlinkit.algos.tanh_mlp import FastTanh, tanh_mlp_forward
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout



# ---------------------------------------------------------------------------------------------
# The losses (MAPPO paper names; RLlib's PPO loss terms); their advantages and returns: marlinkit.algos.gae


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
    gradients: str = "closed_form"
    """How each minibatch's gradients of ``ppo_loss`` are computed (``GRADIENTS``): "closed_form", the fast path of
    :mod:`marlinkit.algos.mappo_fast` (closed-form loss gradients, written-out backward passes; the default because
    ``bench mappo`` measures it more than 1.5x faster like for like), or "autograd", plain autograd through
    ``ppo_loss``. The same numbers to float rounding, not in bits: enters a run's cache key only when not
    "closed_form" (``config_key``)."""
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
        if self.gradients not in GRADIENTS:
            raise ValueError(f"gradients must be one of {GRADIENTS}, got {self.gradients!r}")


#: ``MAPPOConfig.init`` values: CleanRL's orthogonal initialisation, or torch's (RLlib 2.60's default).
INITS = ("orthogonal", "torch")
#: ``MAPPOConfig.generated_steps`` values: the paper's (generator-chosen steps are ordinary data) or kept apart.
GENERATED_STEPS = ("learn", "separate")
#: ``MAPPOConfig.gradients`` values: the closed-form fast path (mappo_fast.py) or autograd through ``ppo_loss``.
GRADIENTS = ("closed_form", "autograd")
#: Settings added after runs were cached: they enter ``config_key`` only when they differ from the default.
_KEY_WHEN_SET = ("init", "generated_steps", "gradients")


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
# The rows an update reads


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

    def update(self, obs, critic_in, actions, old_logp, old_logits, advantages, returns,
               method: str | None = None, distinct: bool | None = None) -> dict[str, float]:
        """PPO epochs over one batch of agent-step rows (flat arrays); returns loss statistics.

        Each minibatch's gradients come from :meth:`gradients` by ``method`` (default ``config.gradients``), the
        actor run once per distinct observation when ``distinct`` (default ``config.distinct_obs``).
        """
        cfg = self.config
        method = method or cfg.gradients
        batch, actor_in = training_batch(cfg, obs, critic_in, actions, old_logp, old_logits, advantages, returns,
                                         distinct=cfg.distinct_obs if distinct is None else distinct)
        n = len(obs)
        size = min(cfg.minibatch_size, n)
        terms = []
        for _ in range(cfg.update_epochs):
            order = torch.randperm(n, generator=self.generator)
            # one gather per column and epoch, then views; a last partial minibatch is dropped
            chunks = zip(*(t.index_select(0, order).split(size) for t in batch))
            for mb in map(Minibatch._make, itertools.islice(chunks, n // size)):
                grads, mb_terms = self.gradients(mb, actor_in, method)
                self._adam_step(grads)
                terms.append(mb_terms)
        return self._end_update(terms)

    def gradients(self, mb: Minibatch, actor_in: torch.Tensor | None,
                  method: str | None = None) -> tuple[list[torch.Tensor], torch.Tensor]:
        """``ppo_loss``'s gradients in ``params`` order, and its terms [policy loss, value loss, KL], by
        ``method`` (default ``config.gradients``): "closed_form", :func:`marlinkit.algos.mappo_fast.gradients`
        (``actor_in``: the batch's distinct observations, or None), or "autograd", :func:`reference_gradients`."""
        if (method or self.config.gradients) == "autograd":
            return reference_gradients(self, mb, actor_in)
        return mappo_fast.gradients(self.actor.linears, self.critic.linears, mb, actor_in, self.config, self.kl_coeff)

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


def reference_gradients(agent: MAPPO, mb: Minibatch,
                        actor_in: torch.Tensor | None = None) -> tuple[list[torch.Tensor], torch.Tensor]:
    """``ppo_loss``'s gradients in ``agent.params`` order by autograd, and its terms. ``actor_in``: the batch's
    distinct observations (each row's logits picked by ``mb.actor_row``), or None to run the actor per row."""
    with torch.enable_grad():
        logits = agent.actor(mb.obs) if actor_in is None else agent.actor(actor_in).index_select(0, mb.actor_row)
        loss, terms = ppo_loss(logits, agent.critic(mb.critic_in)[:, 0], mb, agent.config, agent.kl_coeff)
        return list(torch.autograd.grad(loss, agent.params)), terms


def update_reference(agent: MAPPO, obs, critic_in, actions, old_logp, old_logits, advantages, returns) -> dict[str, float]:
    """``agent.update`` with every minibatch's gradients by autograd through ``ppo_loss``, the actor run per row:
    the same minibatches (the agent's generator) and Adam step. The closed form's numbers to float rounding."""
    return agent.update(obs, critic_in, actions, old_logp, old_logits, advantages, returns, method="autograd", distinct=False)


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

