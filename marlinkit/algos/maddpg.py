"""MADDPG (Lowe et al., 2017) for discrete actions, hand-written in the CleanRL spirit: MAESTRO's learner.

Decentralised actors pi_i(o_i) -> logits; centralised critics Q_i(o_1..o_N, a_1..a_N); discrete
actions through the straight-through Gumbel-softmax; Polyak-averaged target networks; one replay
buffer of joint transitions (:mod:`~marlinkit.algos.replay_buffer`); the small operations these are made of
(Gumbel noise, soft updates, targets, per-agent gradient clipping) in :mod:`~marlinkit.algos.maddpg_ops`.

The N agents' networks are *stacked* (:mod:`~marlinkit.algos.stacked_mlp`): every weight has a
leading agent axis and one batched matmul evaluates all N actors (or critics) at once, so one
update covers all agents. Each loss is written twice, side by side: ``critic_loss``/``actor_loss``
for all agents stacked (the path training runs) and ``critic_loss_agent``/``actor_loss_agent`` for
one agent through its slice of the same weights (``mode="loop"``: the reference the parity tests
hold the batched path to, and the "per-agent loop" of ``bench maddpg``).

Works with any PettingZoo ``ParallelEnv`` whose agents all have the same ``Box`` observation
shape and the same ``Discrete`` action space and stay alive for the whole episode (the traffic
environment: 16 intersections, ``Discrete(4)`` phases). Reward shaping (MAESTRO's A7) belongs in
an environment wrapper: this file knows nothing of LLMs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Literal, get_args

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn

from marlinkit.algos import portable_math
from marlinkit.algos.maddpg_ops import (SeededStreams, clip_grad_norm_per_agent, critic_target, gumbel_softmax,
                                        sample_gumbel, seed_everything, soft_update, substitute_own_action)
from marlinkit.algos.replay_buffer import ReplayBuffer
from marlinkit.algos.products import Products
from marlinkit.config_fields import check_choices
from marlinkit.algos.stacked_mlp import Mode, StackedMLP


#: Which networks the agents share (:attr:`MADDPGConfig.sharing`).
Sharing = Literal["none", "shared-local"]
SHARING: tuple[str, ...] = get_args(Sharing)


@dataclass(frozen=True)
class MADDPGConfig:
    """MADDPG hyperparameters. MAESTRO gives none ("standard MADDPG practice", §5.3): defaults are
    Lowe et al. (2017, §5 and their released code) unless the field says "our choice"."""

    seed: int = 200
    """Seeds torch, numpy, Python and the agent's own generators (MAESTRO seeds: 200/300/400/500)."""
    actor_lr: float = 1e-2
    """Adam learning rate of the actors (Lowe et al.: 0.01)."""
    critic_lr: float = 1e-2
    """Adam learning rate of the critics (Lowe et al.: 0.01)."""
    gamma: float = 0.95
    """Discount factor (Lowe et al.: 0.95)."""
    tau: float = 0.01
    """Polyak rate of the target networks (Lowe et al.: 0.01)."""
    hidden: int = 64
    """Units of each of the two ReLU hidden layers, actors and critics (Lowe et al.: 64)."""
    batch_size: int = 1024
    """Joint transitions per update (Lowe et al.: 1024)."""
    buffer_size: int = 1_000_000
    """Replay capacity in joint transitions (Lowe et al.: 1e6; 200 x 360 steps fit 14 times)."""
    learning_starts: int = 1024
    """Steps collected before the first update (our choice: one full batch)."""
    update_every: int = 25
    """Environment steps between updates (our choice, by the measured sweep at the paper's length,
    ``data/maestro_sweep/``: an update every 25 steps learns faster and further on the real Hangzhou
    flow than Lowe et al.'s every 100 samples added; that stays the named setting
    ``paper`` of ``marlinkit/settings/maddpg_settings.toml``, which MAESTRO's ``paper`` preset runs)."""
    gumbel_temperature: float = 1.0
    """Temperature of the Gumbel-softmax (Lowe et al.'s code: 1.0)."""
    max_grad_norm: float = 0.5
    """Per-agent gradient-norm clip (Lowe et al.'s code: 0.5)."""
    logit_reg: float = 1e-3
    """Weight of the squared-logit penalty in the actor loss (Lowe et al.'s code: 1e-3)."""
    eval_every: int = 2
    """Training episodes between deterministic evaluations (MAESTRO §5.3: every 2)."""
    products: Products = "torch"
    """Where the batched update's matrix products run (our choice; :data:`~marlinkit.algos.products.PRODUCTS`):
    "torch" (MKL's pinned branch: every committed run) or "openblas" (NumPy's pinned OpenBLAS: faster, other bits).
    Not part of a run's key while it is "torch" (:meth:`key`)."""
    sharing: Sharing = "none"
    """Which networks the agents share (our named departure; :data:`SHARING`): "none", the paper's, one actor and one
    centralised critic per agent, the critic reading every observation and action; "shared-local", one actor and one
    critic for all agents (:mod:`~marlinkit.algos.maddpg_shared`), the critic reading the agent's own observation,
    its identity and every agent's action. Not part of a run's key while it is "none"."""
    decision_s: int = 1
    """Environment steps each chosen action is held (the paper: a decision every second, 1); a transition spans one
    decision and its reward is the mean over those steps. ``update_every`` still counts environment steps. Not part
    of a run's key while it is 1."""

    def __post_init__(self) -> None:
        for name in ("actor_lr", "critic_lr", "hidden", "batch_size", "buffer_size", "update_every",
                     "gumbel_temperature", "max_grad_norm", "eval_every"):
            if not getattr(self, name) > 0:
                raise ValueError(f"MADDPGConfig.{name} must be > 0, got {getattr(self, name)}")
        if not 0 <= self.gamma <= 1 or not 0 < self.tau <= 1:
            raise ValueError(f"need 0 <= gamma <= 1 and 0 < tau <= 1, got {self.gamma}, {self.tau}")
        if self.batch_size > self.buffer_size or self.learning_starts < 0:
            raise ValueError("need batch_size <= buffer_size and learning_starts >= 0")
        check_choices(self)
        if not (isinstance(self.decision_s, int) and self.decision_s >= 1):
            raise ValueError(f"MADDPGConfig.decision_s must be an int >= 1, got {self.decision_s!r}")


# --- the losses: all agents stacked (batched) and one agent at a time (the reference) ----------
# critic_in (S, B, J): each seed's joint observations and actions, shared by its N critics;
# y (S*N, B): the targets; obs (S*N, B, O) per agent; flat_obs (S, B, N*O); actions (S, B, N, A) one-hot.

def critic_loss(critic: StackedMLP, critic_in: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Sum over agents of L(theta_i) = E[(Q_i(x, a_1..a_N) - y_i)^2]: every critic in one batched pass."""
    q = critic(critic_in, shared=True).squeeze(-1)
    return ((q - y) ** 2).mean(-1).sum()


def critic_loss_agent(critic: StackedMLP, i: int, critic_in: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Agent i's L(theta_i) alone, through its slice of the stacked critic (one seed)."""
    q = critic.forward_agent(i, critic_in[0]).squeeze(-1)
    return ((q - y[i]) ** 2).mean(-1).sum()


def policy_objective(q_pi: torch.Tensor, logits: torch.Tensor, logit_reg: float) -> torch.Tensor:
    """-E[Q_i(x, a_1..mu_i(o_i)..a_N)] + logit_reg * E[logits^2] (Lowe et al.'s code), summed over agents."""
    return (-q_pi.mean(-1) + logit_reg * (logits ** 2).mean((-2, -1))).sum()


def actor_loss(actor: StackedMLP, critic: StackedMLP, obs, flat_obs, actions, gumbels,
               cfg: MADDPGConfig) -> torch.Tensor:
    """Every agent's :func:`policy_objective` at once: agent i's own action a straight-through
    Gumbel-softmax sample of pi_i, the others' from the buffer; the frozen critics differentiated
    in the own action only (:class:`~marlinkit.algos.stacked_mlp._OwnActionLayer`)."""
    seeds, size, n = actions.shape[:3]
    logits = actor(obs)
    policy = gumbel_softmax(logits, gumbels, cfg.gumbel_temperature)  # (S*N, B, A)
    joint = substitute_own_action(actions, policy.detach().view(seeds, n, size, -1)).reshape(seeds * n, size, -1)
    q_in = torch.cat([flat_obs.unsqueeze(1).expand(-1, n, -1, -1).reshape(seeds * n, size, -1), joint], -1)
    q_pi = critic(q_in, own_actions=(policy, flat_obs.shape[-1], n)).squeeze(-1)
    return policy_objective(q_pi, logits, cfg.logit_reg)


def actor_loss_agent(actor: StackedMLP, critic: StackedMLP, i: int, obs, flat_obs, actions, gumbels,
                     cfg: MADDPGConfig) -> torch.Tensor:
    """Agent i's :func:`policy_objective` alone (one seed): its own action spliced into the buffer's joint action."""
    logits = actor.forward_agent(i, obs[i])
    policy = gumbel_softmax(logits, gumbels[i], cfg.gumbel_temperature)
    own = actions[0]
    joint = torch.cat([own[:, :i], policy[:, None], own[:, i + 1:]], 1).reshape(own.shape[0], -1)
    q_pi = critic.forward_agent(i, torch.cat([flat_obs[0], joint], -1)).squeeze(-1)
    return policy_objective(q_pi, logits, cfg.logit_reg)


# --- the learner -------------------------------------------------------------------------------

class MADDPG(SeededStreams):
    """N actors and N centralised critics (plus targets) with stacked weights; Adam on each set.

    ``seeds`` (default: ``(config.seed,)``) stacks S independent learners of one configuration,
    seed-major on the agent axis (S*N rows): each seed has its own initial weights, Gumbel
    generator and replay sampler, made exactly as the learner of that seed alone makes them, and
    agents of different seeds share no weight, input or loss term, so every seed gets the numbers
    it gets alone (tests/algos/test_maddpg_seeds.py). One seed is the same code with S = 1.
    With S > 1, :meth:`act` takes (S, N, obs) and :meth:`update` batches of (S, B, N, ...).
    """

    def __init__(self, n_agents: int, obs_dim: int, n_actions: int, config: MADDPGConfig,
                 seeds: tuple[int, ...] | None = None):
        self.n, self.obs_dim, self.n_actions, self.config = n_agents, obs_dim, n_actions, config
        self.seeds = tuple(seeds) if seeds is not None else (config.seed,)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and non-empty, got {self.seeds}")
        joint = n_agents * (obs_dim + n_actions)
        names = ("actor", "critic", "target_actor", "target_critic")
        nets: dict[str, list[StackedMLP]] = {k: [] for k in names}
        for seed in self.seeds:
            torch.manual_seed(seed)  # initial weights depend on the seed alone
            for k in names:
                nets[k].append(StackedMLP(n_agents, [joint if "critic" in k else obs_dim, config.hidden, config.hidden,
                                                     1 if "critic" in k else n_actions], config.products))
            nets["target_actor"][-1].load_state_dict(nets["actor"][-1].state_dict())
            nets["target_critic"][-1].load_state_dict(nets["critic"][-1].state_dict())
        for k in names:
            setattr(self, k, nets[k][0] if len(self.seeds) == 1 else StackedMLP.concatenate(nets[k]))
        # Adam in the basic operations (torch's own takes MKL's vendor-dependent square root): portable_math.Adam
        self.actor_opt = portable_math.Adam(self.actor.parameters(), lr=config.actor_lr)
        self.critic_opt = portable_math.Adam(self.critic.parameters(), lr=config.critic_lr)
        self.generators = [torch.Generator().manual_seed(seed) for seed in self.seeds]  # Gumbel noise
        self.rngs = [np.random.default_rng(seed) for seed in self.seeds]  # replay sampling

    @torch.inference_mode()
    def act(self, obs: np.ndarray, explore: bool, generator: torch.Generator | None = None) -> np.ndarray:
        """Actions (N,) for observations (N, obs_dim), or (S, N) for (S, N, obs_dim): Gumbel samples
        when exploring, else argmax.

        Sampling draws from ``generator`` (default: each seed's own, as in training; else one, or a
        list of one per seed); a stochastic *evaluation* passes its own so that evaluating never moves
        the training noise stream.
        """
        obs = torch.as_tensor(obs, dtype=torch.float32)
        single = obs.dim() == 2
        logits = self.actor(obs.reshape(-1, 1, self.obs_dim)).view(len(self.seeds), self.n, self.n_actions)
        if explore:
            generators = (self.generators if generator is None
                          else generator if isinstance(generator, list) else [generator])
            logits = logits + torch.stack([sample_gumbel((self.n, self.n_actions), g) for g in generators])
        actions = logits.argmax(-1).numpy()
        return actions[0] if single else actions

    def noise(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Gumbel noise for one update: target actions and policy actions, each (S*N, B, A)."""
        shape = (self.n, batch_size, self.n_actions)
        draws = [(sample_gumbel(shape, g), sample_gumbel(shape, g)) for g in self.generators]
        return torch.cat([d[0] for d in draws]), torch.cat([d[1] for d in draws])

    def sample(self, buffers: list[ReplayBuffer], batch_size: int) -> dict[str, torch.Tensor]:
        """One batch per seed from its own buffer and sampler, stacked: (S, B, N, ...)."""
        batches = [buffer.sample(batch_size, rng) for buffer, rng in zip(buffers, self.rngs, strict=True)]
        return {k: torch.stack([b[k] for b in batches]) for k in batches[0]}

    def update(self, batch: dict[str, torch.Tensor], noise: tuple[torch.Tensor, torch.Tensor],
               mode: Mode = "batched") -> dict[str, float]:
        """One MADDPG step for all agents (of all seeds): critics, then actors, then targets.

        ``batch``: (B, N, ...) tensors, or (S, B, N, ...) with S seeds (:meth:`sample`)."""
        cfg, n, seeds = self.config, self.n, len(self.seeds)
        if batch["obs"].dim() == 3:
            batch = {k: v.unsqueeze(0) for k, v in batch.items()}
        if mode == "loop" and seeds > 1:
            raise ValueError("the per-agent loop path runs one seed")
        size, rows = batch["obs"].shape[1], seeds * n
        # (S, B, N, ...) -> (S*N, B, ...)
        per_agent = lambda x: x.transpose(1, 2).reshape(rows, size, *x.shape[3:])  # noqa: E731
        obs, next_obs = per_agent(batch["obs"]), per_agent(batch["next_obs"])  # (S*N, B, O)
        actions = F.one_hot(batch["actions"], self.n_actions).float()  # (S, B, N, A)
        flat_obs, flat_next = batch["obs"].reshape(seeds, size, -1), batch["next_obs"].reshape(seeds, size, -1)

        with torch.no_grad():
            next_logits = self.target_actor.run(next_obs, mode)
            next_actions = gumbel_softmax(next_logits, noise[0], cfg.gumbel_temperature)  # (S*N, B, A)
            next_actions = next_actions.view(seeds, n, size, -1).transpose(1, 2).reshape(seeds, size, -1)
            next_input = torch.cat([flat_next, next_actions], -1)  # (S, B, J): each seed's critics' input
            next_q = self.target_critic.run(next_input, mode, shared=True).squeeze(-1)  # (S*N, B)
            y = critic_target(per_agent(batch["rewards"]), per_agent(batch["terminated"]), next_q, cfg.gamma)

        critic_in = torch.cat([flat_obs, actions.reshape(seeds, size, -1)], -1)  # (S, B, J), shared per seed
        if mode == "batched":
            critic_losses = [partial(critic_loss, self.critic, critic_in, y)]
            actor_losses = [partial(actor_loss, self.actor, self.critic, obs, flat_obs, actions, noise[1], cfg)]
        else:
            critic_losses = [partial(critic_loss_agent, self.critic, i, critic_in, y) for i in range(n)]
            actor_losses = [partial(actor_loss_agent, self.actor, self.critic, i, obs, flat_obs, actions, noise[1], cfg)
                            for i in range(n)]
        critic_loss_value = self._descend(self.critic_opt, self.critic, critic_losses)
        self.critic.requires_grad_(False)  # the actor loss needs gradients through the critic, not of it
        try:
            actor_loss_value = self._descend(self.actor_opt, self.actor, actor_losses)
        finally:
            self.critic.requires_grad_(True)
        soft_update(self.target_actor, self.actor, cfg.tau)
        soft_update(self.target_critic, self.critic, cfg.tau)
        return {"critic_loss": critic_loss_value, "actor_loss": actor_loss_value}

    def _descend(self, optimizer: torch.optim.Optimizer, net: StackedMLP, losses: list) -> float:
        """One clipped Adam step on ``net``; returns the mean per-agent loss.

        ``losses``: one function, the sum of all agents' losses (one backward; agents share no
        weights, so its gradient is each agent's own), or one per agent (the loop path).
        """
        self.actor_opt.zero_grad(set_to_none=False)
        self.critic_opt.zero_grad(set_to_none=False)
        total = 0.0
        for loss in (loss_fn() for loss_fn in losses):
            loss.backward()
            total += loss.item()
        clip_grad_norm_per_agent(list(net.parameters()), self.config.max_grad_norm)
        optimizer.step()
        return total / (self.n * len(self.seeds))


def make_learner(n_agents: int, obs_dim: int, n_actions: int, config: MADDPGConfig,
                 seeds: tuple[int, ...] | None = None):
    """The learner ``config.sharing`` names: :class:`MADDPG` (the paper's) or the parameter-shared one."""
    if config.sharing == "shared-local":
        from marlinkit.algos.maddpg_shared import SharedMADDPG

        return SharedMADDPG(n_agents, obs_dim, n_actions, config, seeds)
    return MADDPG(n_agents, obs_dim, n_actions, config, seeds)


# --- environment loop --------------------------------------------------------------------------

def env_dims(env) -> tuple[list[str], int, int]:
    """Agents, observation size and action count of a ParallelEnv MADDPG can train on."""
    agents = list(env.possible_agents)
    obs_spaces = [env.observation_space(a) for a in agents]
    act_spaces = [env.action_space(a) for a in agents]
    if not all(isinstance(s, spaces.Box) and s.shape == obs_spaces[0].shape for s in obs_spaces):
        raise ValueError("MADDPG needs Box observations of one shape for all agents")
    if not all(isinstance(s, spaces.Discrete) and s.n == act_spaces[0].n for s in act_spaces):
        raise ValueError("MADDPG needs the same Discrete action space for all agents")
    return agents, int(np.prod(obs_spaces[0].shape)), int(act_spaces[0].n)


def _stack(per_agent: dict, agents: list[str], dtype=np.float32) -> np.ndarray:
    return np.stack([np.asarray(per_agent[a], dtype=dtype).ravel() for a in agents])


def run_episode(env, learner: MADDPG, seed: int, explore: bool, buffer: ReplayBuffer | None = None,
                step_count: int = 0, generator: torch.Generator | None = None) -> dict[str, float]:
    """One episode (:func:`run_episodes` with one seed); with ``buffer``, store transitions and update
    every ``update_every`` steps. ``generator``: the Gumbel noise of exploring actions (default: the
    learner's own). Returns the episode return (sum over steps of the agents' mean reward), steps,
    updates and the wall time spent in the environment vs in MADDPG (acting and updating)."""
    return run_episodes([env], learner, [seed], explore, None if buffer is None else [buffer], step_count, generator)[0]


def run_episodes(envs: list, learner: MADDPG, seeds: list[int], explore: bool,
                 buffers: list[ReplayBuffer] | None = None,
                 step_count: int = 0, generator: torch.Generator | list[torch.Generator] | None = None
                 ) -> list[dict[str, float]]:
    """One episode in each of ``envs`` (one per stacked seed of ``learner``), stepped in lockstep.

    Every env is reset with its seed, all learners act at once, and with ``buffers`` (one per seed)
    every seed stores its transitions and all seeds update together every ``update_every`` steps.
    Envs with ``step_async``/``step_wait`` (:class:`~marlinkit.algos.maddpg_seeds.SubprocessEnv`)
    simulate in parallel. Returns one dict per seed as :func:`run_episode` says (shared wall times).
    """
    if len(envs) != len(learner.seeds) or len(seeds) != len(envs):
        raise ValueError(f"need one env and one reset seed per stacked seed ({len(learner.seeds)}), "
                         f"got {len(envs)} envs and {len(seeds)} seeds")
    agents = list(envs[0].possible_agents)
    cfg = learner.config
    obs = np.stack([_stack(env.reset(seed=seed)[0], agents) for env, seed in zip(envs, seeds)])  # (S, N, O)
    returns, steps, updates, sim_s, train_s = np.zeros(len(envs)), 0, 0, 0.0, 0.0
    while envs[0].agents:
        started = time.perf_counter()
        actions = learner.act(obs, explore, generator)  # (S, N): held for cfg.decision_s steps
        acted = time.perf_counter()
        held, reward = 0, None
        while held < cfg.decision_s and envs[0].agents:
            next_obs, step_reward, terminated = _step_all(envs, agents, actions)
            returns += [float(r.mean()) for r in step_reward]
            reward = step_reward if reward is None else [a + b for a, b in zip(reward, step_reward)]
            held += 1
        if held > 1:
            reward = [r / np.float32(held) for r in reward]
        sim_s += time.perf_counter() - acted
        steps += held
        updating = time.perf_counter()
        if buffers is not None:
            for k, buffer in enumerate(buffers):
                buffer.add(obs[k], actions[k], reward[k], next_obs[k], terminated[k])
            total = step_count + steps
            due = total // cfg.update_every - (total - held) // cfg.update_every  # multiples of update_every passed
            if total >= cfg.learning_starts and due and buffers[0].size >= cfg.batch_size:
                for _ in range(due):
                    learner.update(learner.sample(buffers, cfg.batch_size), learner.noise(cfg.batch_size))
                    updates += 1
        train_s += (acted - started) + (time.perf_counter() - updating)
        obs = np.stack(next_obs)
    return [{"return": float(r), "steps": steps, "updates": updates, "sim_s": sim_s,
             "train_s": train_s} for r in returns]


def _step_all(envs: list, agents: list[str], actions: np.ndarray) -> tuple[list, list, list]:
    """One step of every env with its agents' actions (in parallel where an env steps asynchronously): the next
    observations, rewards and terminations, one array per env."""
    for env, action in zip(envs, actions):
        if hasattr(env, "step_async"):
            env.step_async(dict(zip(agents, action.tolist())))
    results = [env.step_wait() if hasattr(env, "step_async") else env.step(dict(zip(agents, action.tolist())))
               for env, action in zip(envs, actions)]
    next_obs, reward, terminated = [], [], []
    for env, (obs_dict, rewards, terminations, _, _) in zip(envs, results):
        if set(obs_dict) != set(agents) and env.agents:
            raise ValueError("MADDPG needs every agent alive until the episode ends")
        next_obs.append(_stack(obs_dict, agents))
        reward.append(_stack(rewards, agents).ravel())
        terminated.append(_stack(terminations, agents).ravel())
    if any(bool(env.agents) != bool(envs[0].agents) for env in envs):
        raise ValueError("stacked seeds need episodes of one length")
    return next_obs, reward, terminated


#: How an evaluation picks actions: the argmax of the actor's logits ("greedy"), or a sample of the
#: Gumbel-softmax policy the actor loss optimises ("stochastic", temperature 1 as in training).
EVAL_POLICIES = ("stochastic", "greedy")


def evaluate(env, learner: MADDPG, seed: int, episodes: int = 1, policy: str = "greedy") -> float:
    """Mean return of the agents' ``policy`` (see :data:`EVAL_POLICIES`) over ``episodes`` seeded episodes.

    A stochastic evaluation draws its Gumbel noise from a generator seeded with ``seed`` alone: the
    same noise for every evaluation with that seed, and the training noise stream left untouched.
    """
    return float(evaluate_seeds([env], learner, seed, episodes, policy)[0])


def evaluate_seeds(envs: list, learner: MADDPG, seed: int, episodes: int = 1, policy: str = "greedy") -> np.ndarray:
    """:func:`evaluate` for every stacked seed of ``learner`` at once (one env each): (S,) mean returns."""
    if policy not in EVAL_POLICIES:
        raise ValueError(f"unknown evaluation policy {policy!r}; choose from {EVAL_POLICIES}")
    explore = policy == "stochastic"
    generators = [torch.Generator().manual_seed(seed) for _ in envs] if explore else None
    returns = [[r["return"] for r in run_episodes(envs, learner, [seed + k] * len(envs), explore, generator=generators)]
               for k in range(episodes)]
    return np.mean(np.array(returns), axis=0)


def train(env, config: MADDPGConfig, episodes: int, eval_env=None, eval_episodes: int = 1
          ) -> tuple[MADDPG, list[dict[str, float]]]:
    """Train for ``episodes`` episodes; evaluate deterministically every ``config.eval_every``.

    Episode k is reset with seed ``config.seed + k``; evaluations use seeds from
    ``config.seed + 10**6`` so they never reuse a training scenario. Returns the learner and one
    tidy row per episode (``eval_return`` is NaN between evaluations).
    """
    if episodes < 1 or eval_episodes < 1:
        raise ValueError("episodes and eval_episodes must be >= 1")
    seed_everything(config.seed)
    agents, obs_dim, n_actions = env_dims(env)
    learner = make_learner(len(agents), obs_dim, n_actions, config)
    buffer = ReplayBuffer(config.buffer_size, len(agents), obs_dim)
    rows, step_count = [], 0
    for episode in range(episodes):
        row = {"episode": episode, **run_episode(env, learner, config.seed + episode, True, buffer, step_count)}
        step_count += row["steps"]
        evaluate_now = (episode + 1) % config.eval_every == 0
        row["eval_return"] = (evaluate(eval_env or env, learner, config.seed + 10**6 + episode, eval_episodes)
                              if evaluate_now else float("nan"))
        rows.append(row)
    return learner, rows

