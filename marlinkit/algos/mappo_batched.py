"""Many independent MAPPO runs trained in one process as one stacked computation.

The runs (seeds x scenarios x systems of one MARLIN grid) share the hyperparameters, the number
of copies and of episodes; each has its own seed, layout, action generator (MARLIN's Algorithm 1,
per run and per copy) and episode callback. Their weights are stacked along a leading run axis
(``[R, out, in]``), every layer is one ``bmm`` over the runs, and one fused Adam call steps every
run's parameters. This is what JaxMARL does with ``vmap`` over seeds, written out for torch on a
CPU: one 128-row minibatch per run is too small to keep a core busy, R of them side by side are not.

Runs never mix. Each keeps its own random streams (rollout ``numpy`` generator and minibatch
``torch`` generator, both from its seed, as in ``mappo.train``), its own advantage normalisation,
its own adaptive KL weight, and its own Adam moments; a run's rows only ever meet its own weights.
``bmm`` computes each run's matrix product on its own, so a run's numbers do not depend on which
other runs share the batch: ``tests/algos/test_mappo_batched.py`` checks byte equality of 2 runs
batched against each run trained alone by this code (R = 1). Against ``mappo.train`` the numbers
agree to float rounding, not in bits (``bmm`` and ``mm`` sum in different orders).

The algorithm is ``mappo.py``'s (see there: closed-form loss gradients, written-out backward,
fused Adam). The one difference is the distinct-observation actor pass: every run's distinct
observations are padded with zero rows to a fixed ``DISTINCT_CAPACITY`` rows, so that a run's
shapes (and hence its sums) do not depend on its batch partners (32 rows: a corridor has at most
16 free cells x 2 goals). An update in which some run has more distinct observations than that
(a batch spanning a layout change) runs every run's actor per row instead; only then may a run's
numbers differ in the last bits from its numbers alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.optim.adam import adam as functional_adam
from torch import nn

from marlinkit.algos import mappo, mappo_rollouts, tanh_mlp
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout

FLAT_ALIGN = 64  # elements: a run's parameter row starts at a multiple of every vector width torch uses
DISTINCT_CAPACITY = 32  # rows of the padded distinct-observation actor input: a corridor has <= 16 free cells x 2 goals = 32 observations


@dataclass
class RunSpec:
    """One run of a batch: what ``mappo.train`` takes besides the shared config, copies and episodes."""

    layout: Layout | Callable[[int], Layout]
    """A layout, or the layout of each 0-based episode (a changing environment)."""
    seed: int
    """The run's seed: initial weights, rollout sampling and minibatch order."""
    generator: mappo_rollouts.Generator | None = None
    """Actions from outside (MARLIN's Algorithm 1 for this run), as in ``mappo.train``."""
    on_episode_end: mappo_rollouts.EpisodeCallback | None = None
    """Called as in ``mappo.train``, with a per-run view of the policy (``RunPolicy``)."""


def _stack(modules: Sequence[nn.Module]) -> list[torch.Tensor]:
    """Weights [R, out, in] and biases [R, 1, out] of the linear layers, stacked over runs."""
    layers = zip(*(m.linears for m in modules))
    out = []
    for per_run in layers:
        out += [torch.stack([l.weight.detach() for l in per_run]).contiguous(),
                torch.stack([l.bias.detach()[None] for l in per_run]).contiguous()]
    return out


def stacked_forward(params: list[torch.Tensor], x: torch.Tensor) -> list[torch.Tensor]:
    """``tanh_mlp.tanh_mlp_forward`` for R runs at once: x [R, n, in] -> every layer's input and the output."""
    activations = [x]
    depth = len(params) // 2
    for k in range(depth):
        weight, bias = params[2 * k], params[2 * k + 1]
        if weight.shape[1] == 1:  # bmm to one output column takes a path whose sums depend on the batch size
            z = (activations[-1] * weight).sum(-1, keepdim=True) + bias
        else:
            z = torch.baddbmm(bias, activations[-1], weight.transpose(1, 2))
        activations.append(tanh_mlp.fast_tanh(z) if k < depth - 1 else z)
    return activations


def stacked_backward(params: list[torch.Tensor], activations: list[torch.Tensor], grad_out: torch.Tensor) -> list[torch.Tensor]:
    """``tanh_mlp.tanh_mlp_backward`` for R runs at once: gradients [weight, bias] per layer, each [R, ...]."""
    grads: list[torch.Tensor] = []
    grad = grad_out
    for k in reversed(range(len(params) // 2)):
        grads[:0] = [torch.bmm(grad.transpose(1, 2), activations[k]), grad.sum(1, keepdim=True)]
        if k:
            grad = torch.ops.aten.tanh_backward(torch.bmm(grad, params[2 * k]), activations[k])
    return grads


def per_run_exp(x: torch.Tensor) -> torch.Tensor:
    """``x.exp()`` with each run's numbers independent of the other runs.

    torch's vectorised loops compute a tensor's last few elements (beyond a multiple of 16) by a
    scalar exp that may differ in the last bit; a run's elements must not move between the two
    paths with the batch size, so runs whose element count is not a multiple of 16 go one by one.
    """
    if x[0].numel() % 16 == 0:
        return x.exp()
    return torch.stack([run.exp() for run in x])


def stacked_loss_gradients(logits, values, mb: mappo.Minibatch, cfg: mappo.MAPPOConfig, kl_coeff: torch.Tensor):
    """``mappo_fast.loss_gradients`` per run, for tensors [R, n, ...] and a per-run KL weight [R]; terms [R, 3]."""
    n = logits.shape[1]
    log_probs = torch.log_softmax(logits, -1)
    probs = per_run_exp(log_probs)
    ratio = per_run_exp((log_probs * mb.action_onehot).sum(-1) - mb.old_logp)
    surrogate = ratio * mb.advantages
    clipped = ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef) * mb.advantages
    minimum = torch.minimum(surrogate, clipped)
    grad_logp = surrogate.mul((surrogate <= clipped).float()).mul_(-1.0 / n)
    grad_logits = (mb.action_onehot - probs).mul_(grad_logp[..., None]).add_((probs - mb.old_probs) * (kl_coeff / n)[:, None, None])
    if cfg.ent_coef:
        p_log_p = probs * log_probs
        grad_logits += (cfg.ent_coef / n) * (p_log_p - probs * p_log_p.sum(-1, keepdim=True))
    error = values - mb.returns
    squared = error.square()
    grad_values = error.mul(2 * cfg.vf_coef / n)
    if cfg.vf_clip is not None:
        grad_values.mul_((squared <= cfg.vf_clip).float())
        squared = squared.clamp_(max=cfg.vf_clip)
    kl = (mb.old_probs * (mb.old_log_probs - log_probs)).sum((1, 2)) / n
    terms = torch.stack([minimum.mean(1).neg_(), squared.mean(1), kl], dim=1)
    return grad_logits, grad_values, terms


class BatchedMAPPO:
    """R MAPPO agents (actor, critic, Adam state) with stacked parameters; ``update`` steps all of them."""

    def __init__(self, config: mappo.MAPPOConfig, seeds: Sequence[int]):
        self.config, self.seeds = config, list(seeds)
        agents = [mappo.MAPPO(config, seed) for seed in self.seeds]  # the same initial weights as mappo.train
        stacked = _stack([a.actor for a in agents]) + _stack([a.critic for a in agents])
        # Every run's parameters live in one row of ``flat``, padded to a multiple of FLAT_ALIGN elements, so that
        # the fused Adam kernel's vector/scalar split (which rounds differently) falls at the same place in every
        # run whatever the number of runs; ``params`` are views into it.
        self.sizes = [p[0].numel() for p in stacked]
        width = -(-sum(self.sizes) // FLAT_ALIGN) * FLAT_ALIGN
        self.flat = torch.zeros(len(self.seeds), width)
        self.params, offset = [], 0
        for p, size in zip(stacked, self.sizes):
            view = self.flat[:, offset:offset + size].view(p.shape)
            view.copy_(p)
            self.params.append(view)
            offset += size
        self.actor, self.critic = self.params[:6], self.params[6:]
        self.adam_moments = torch.zeros_like(self.flat), torch.zeros_like(self.flat)
        self.adam_steps = [torch.zeros(())]  # Adam's step count (one flat parameter tensor)
        self.kl_coeff = torch.full((len(self.seeds),), config.kl_coeff, dtype=torch.float64)
        self.generators = [torch.Generator().manual_seed(seed) for seed in self.seeds]
        self.distinct_fallbacks = 0  # updates whose actor ran per row (some run above DISTINCT_CAPACITY)

    @torch.no_grad()
    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Logits [R, n, 5] for observations [R, n, 4]."""
        return stacked_forward(self.actor, torch.as_tensor(obs, dtype=torch.float32))[-1].numpy()

    @torch.no_grad()
    def values(self, critic_in: np.ndarray) -> np.ndarray:
        return stacked_forward(self.critic, torch.as_tensor(critic_in, dtype=torch.float32))[-1][..., 0].numpy()

    def policy(self, run: int) -> "RunPolicy":
        return RunPolicy(self, run)

    @torch.no_grad()
    def update(self, obs, critic_in, actions, old_logp, old_logits, advantages, returns) -> dict[str, np.ndarray]:
        """PPO epochs over one batch per run: arrays [R, n, ...]; returns per-run loss statistics."""
        cfg = self.config
        runs, n = obs.shape[:2]
        old_log_probs = torch.log_softmax(torch.as_tensor(old_logits, dtype=torch.float32), -1)
        advantages = torch.as_tensor(advantages, dtype=torch.float32)
        if cfg.norm_adv:
            advantages = (advantages - advantages.mean(1, keepdim=True)) / (advantages.std(1, keepdim=True) + 1e-8)
        batch = mappo.Minibatch(torch.as_tensor(obs, dtype=torch.float32), torch.as_tensor(critic_in, dtype=torch.float32),
                                nn.functional.one_hot(torch.as_tensor(actions, dtype=torch.int64), core.N_ACTIONS).float(),
                                torch.as_tensor(old_logp, dtype=torch.float32), old_log_probs, per_run_exp(old_log_probs), advantages,
                                torch.as_tensor(returns, dtype=torch.float32))
        size = min(cfg.minibatch_size, n)
        uniques = [np.unique(obs[r], axis=0, return_inverse=True) for r in range(runs)]
        if cfg.distinct_obs and all(len(d) <= DISTINCT_CAPACITY for d, _ in uniques):
            actor_in = torch.zeros(runs, DISTINCT_CAPACITY, mappo_rollouts.OBS_SIZE)
            for r, (distinct, _) in enumerate(uniques):
                actor_in[r, :len(distinct)] = torch.as_tensor(distinct, dtype=torch.float32)
            batch = batch._replace(actor_row=torch.as_tensor(np.stack([inv.reshape(-1) for _, inv in uniques]), dtype=torch.int64))
        else:
            self.distinct_fallbacks += int(cfg.distinct_obs)
            actor_in, batch = None, batch._replace(actor_row=torch.arange(n).expand(runs, n))
        rows = torch.arange(runs)[:, None]
        terms = []
        for _ in range(cfg.update_epochs):
            order = torch.stack([torch.randperm(n, generator=g) for g in self.generators])
            chunks = zip(*(t[rows, order].split(size, dim=1) for t in batch))
            for mb in map(mappo.Minibatch._make, itertools.islice(chunks, n // size)):
                terms.append(self._minibatch_step(mb, actor_in))
        policy_loss, v_loss, mean_kl = torch.stack(terms).mean(0).double().unbind(1)
        if cfg.kl_coeff:
            self.kl_coeff = torch.tensor([mappo.adapt_kl_coeff(float(c), float(k), cfg.kl_target)
                                          for c, k in zip(self.kl_coeff, mean_kl)], dtype=torch.float64)
        return {"kl": mean_kl.numpy(), "policy_loss": policy_loss.numpy(), "value_loss": v_loss.numpy(),
                "kl_coeff": self.kl_coeff.numpy().copy()}

    def _minibatch_step(self, mb: mappo.Minibatch, actor_in: torch.Tensor | None) -> torch.Tensor:
        actor_activations = stacked_forward(self.actor, mb.obs if actor_in is None else actor_in)
        critic_activations = stacked_forward(self.critic, mb.critic_in)
        logits, values = actor_activations[-1], critic_activations[-1][..., 0]
        if actor_in is not None:
            logits = torch.gather(logits, 1, mb.actor_row[..., None].expand(-1, -1, core.N_ACTIONS))
        grad_logits, grad_values, terms = stacked_loss_gradients(logits, values, mb, self.config, self.kl_coeff.float())
        if actor_in is not None:
            grad_logits = torch.zeros(actor_in.shape[0], actor_in.shape[1], core.N_ACTIONS).scatter_add_(
                1, mb.actor_row[..., None].expand(-1, -1, core.N_ACTIONS), grad_logits)
        self._adam_step(stacked_backward(self.actor, actor_activations, grad_logits)
                        + stacked_backward(self.critic, critic_activations, grad_values[..., None]))
        return terms

    def _adam_step(self, grads: list[torch.Tensor]) -> None:
        """One fused Adam call (torch's public functional ``torch.optim.adam.adam``, ``fused=True``) for every run's
        parameters (elementwise on ``flat``: runs do not mix)."""
        flat_grad = torch.zeros_like(self.flat)
        offset = 0
        for grad, size in zip(grads, self.sizes):
            flat_grad[:, offset:offset + size] = grad.reshape(len(grad), -1)
            offset += size
        if self.config.max_grad_norm is not None:  # per run: the global norm of that run's gradients
            scale = (self.config.max_grad_norm / (flat_grad.square().sum(1).sqrt() + 1e-6)).clamp(max=1.0)
            flat_grad.mul_(scale[:, None])
        functional_adam([self.flat], [flat_grad], [self.adam_moments[0]], [self.adam_moments[1]], [],
                              self.adam_steps, fused=True, amsgrad=False, beta1=0.9, beta2=0.999, lr=self.config.lr,
                              weight_decay=0.0, eps=1e-8, maximize=False)


class RunPolicy:
    """One run's policy inside a ``BatchedMAPPO``: what ``mappo.evaluate`` and episode callbacks read."""

    def __init__(self, batch: BatchedMAPPO, run: int):
        self.batch, self.run, self.config = batch, run, batch.config

    @torch.no_grad()
    def logits(self, obs: np.ndarray) -> np.ndarray:
        x = torch.as_tensor(obs, dtype=torch.float32)
        flat = x.reshape(1, -1, x.shape[-1])
        params = [p[self.run:self.run + 1] for p in self.batch.actor]
        return stacked_forward(params, flat)[-1].reshape(*x.shape[:-1], core.N_ACTIONS).numpy()

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The run's actor and critic weights (``Actor``/``Critic`` parameter names)."""
        names = ["actor.0.weight", "actor.0.bias", "actor.2.weight", "actor.2.bias", "actor.4.weight", "actor.4.bias",
                 "critic.0.weight", "critic.0.bias", "critic.2.weight", "critic.2.bias"]
        return {name: p[self.run].reshape(p.shape[1:]) if "weight" in name else p[self.run, 0]
                for name, p in zip(names, self.batch.params)}


def train(config: mappo.MAPPOConfig, runs: Sequence[RunSpec], *, n_envs: int, episodes: int) -> BatchedMAPPO:
    """``mappo.train`` for every run of ``runs`` at once (same config, copies and episodes; own seed, layout, generator)."""
    if n_envs < 1 or episodes < 1 or not runs:
        raise ValueError(f"need n_envs >= 1, episodes >= 1 and at least one run, got {n_envs}, {episodes}, {len(runs)}")
    R = len(runs)
    agent = BatchedMAPPO(config, [r.seed for r in runs])
    policies = [agent.policy(i) for i in range(R)]
    rngs = [np.random.default_rng(r.seed) for r in runs]
    layout_of = [(r.layout if callable(r.layout) else (lambda _e, fixed=r.layout: fixed)) for r in runs]
    arrays = [core.layout_arrays(f(0)) for f in layout_of]
    horizon = max(1, round(config.steps_per_iteration / n_envs))
    shape = (horizon, R, n_envs, core.N_AGENTS)
    obs_buf, action_buf, logp_buf, logits_buf, reward_buf, done_buf = mappo_rollouts.rollout_buffers(shape)
    generated_buf = np.zeros(shape[:3], bool)  # [T, R, B]

    def choose(states):
        obs = np.stack([core.observe(a, s) for a, s in zip(arrays, states)]).astype(np.float32)  # [R, B, 2, 4]
        logits = agent.logits(obs.reshape(R, -1, mappo_rollouts.OBS_SIZE)).reshape(R, n_envs, core.N_AGENTS, core.N_ACTIONS)
        actions = np.empty((R, n_envs, core.N_AGENTS), np.int64)
        generated = np.zeros((R, n_envs), bool)
        for i, run in enumerate(runs):
            sampled = mappo_rollouts.sample_actions(logits[i], rngs[i].random((n_envs, core.N_AGENTS)))
            actions[i] = sampled if run.generator is None else np.asarray(run.generator(states[i], sampled), dtype=np.int64)
            generated[i] = mappo_rollouts.generated_steps(run.generator, n_envs)
        return obs, logits, actions, generated

    states = [core.reset(a, n_envs) for a in arrays]
    obs, logits, actions, generated = choose(states)
    team_return = np.zeros((R, n_envs))
    filled, episode = 0, 0
    for _ in range(episodes * core.EPISODE_STEPS):
        obs_buf[filled], logits_buf[filled], action_buf[filled], generated_buf[filled] = obs, logits, actions, generated
        logp_buf[filled] = [mappo_rollouts.log_prob(logits[i], actions[i]) for i in range(R)]  # per run: see per_run_exp
        results = [core.step(a, s, actions[i]) for i, (a, s) in enumerate(zip(arrays, states))]
        for i, result in enumerate(results):
            reward_buf[filled, i] = result.reward
            done_buf[filled, i] = result.done[:, None]
            team_return[i] += result.reward.sum(-1)
        filled += 1
        states = [result.state for result in results]
        if all(result.done.all() for result in results):  # lock step, fixed episode length
            episode += 1
            for i, run in enumerate(runs):
                if run.on_episode_end is not None:
                    run.on_episode_end(episode, policies[i], core.performance(arrays[i], states[i]), team_return[i].copy())
            arrays = [core.layout_arrays(f(episode)) for f in layout_of]
            states, team_return = [core.reset(a, n_envs) for a in arrays], np.zeros((R, n_envs))
        last_step = episode == episodes
        if not last_step:
            obs, logits, actions, generated = choose(states)
        if filled == horizon or last_step:
            if last_step:
                next_value = np.zeros((R, n_envs, core.N_AGENTS), np.float32)
            else:
                next_value = agent.values(mappo_rollouts.critic_inputs(obs, actions).reshape(R, -1, mappo_rollouts.CRITIC_SIZE)).reshape(R, n_envs, core.N_AGENTS)
            _update(agent, obs_buf[:filled], action_buf[:filled], logp_buf[:filled], logits_buf[:filled],
                    reward_buf[:filled], done_buf[:filled], next_value, generated_buf[:filled])
            filled = 0
    return agent


def _update(agent: BatchedMAPPO, obs, actions, logp, logits, rewards, dones, next_value, generated) -> dict[str, np.ndarray]:
    """``mappo.training_rows`` and ``MAPPO.update`` per run: buffers [T, R, B, 2, ...] -> per-run rows [R, T*B*2, ...]."""
    cfg = agent.config
    T, R = obs.shape[:2]
    critic_in = mappo_rollouts.critic_inputs(obs, actions)
    values = agent.values(critic_in.transpose(1, 0, 2, 3, 4).reshape(R, -1, mappo_rollouts.CRITIC_SIZE))
    values = values.reshape(R, T, *obs.shape[2:4]).transpose(1, 0, 2, 3)
    if cfg.generated_steps == "learn":
        advantages, returns = mappo.compute_gae(rewards, values, dones, next_value, cfg.gamma, cfg.gae_lambda)
    else:  # per run: each run's advantages are standardised on their own
        advantages, returns = (np.stack(parts, axis=1) for parts in zip(*(
            mappo.gae_for(cfg, rewards[:, i], values[:, i], dones[:, i], next_value[i], generated[:, i])
            for i in range(R))))
    per_run = lambda a: np.ascontiguousarray(np.moveaxis(a, 1, 0)).reshape(R, -1, *a.shape[4:])  # noqa: E731
    return agent.update(per_run(obs), per_run(critic_in), per_run(actions), per_run(logp), per_run(logits),
                        per_run(advantages), per_run(returns))
