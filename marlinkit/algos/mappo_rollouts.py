"""MAPPO's data on the batched corridor core: rollouts of many copies in lock step, seeded action sampling,
log-probabilities, the centralised critic's inputs and the paired evaluation streams.

The trainer's plumbing, for R runs at once (``mappo.train_runs``; ``mappo.train`` is one run); the algorithm
itself (losses, networks, update) is ``mappo.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout


OBS_SIZE = 4
CRITIC_SIZE = 2 * OBS_SIZE + core.N_ACTIONS  # own obs, other obs, other's one-hot action


def critic_inputs(obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Centralised critic inputs [..., 2, 13] from obs [..., 2, 4] and joint actions [..., 2]."""
    other_obs = obs[..., ::-1, :]
    other_action = np.eye(core.N_ACTIONS, dtype=np.float32)[actions[..., ::-1]]
    return np.concatenate([obs, other_obs, other_action], axis=-1).astype(np.float32)


def sample_actions(logits: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Categorical samples from logits [..., 5] by inverse CDF of given uniforms [...] (seedable, batched)."""
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    cdf = np.cumsum(probs, -1)
    return np.minimum((uniforms[..., None] * cdf[..., -1:] > cdf).sum(-1), core.N_ACTIONS - 1)


def log_prob(logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """log pi(a) for logits [..., 5] and integer actions [...]."""
    shifted = logits - logits.max(-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return np.take_along_axis(logp, actions[..., None], -1)[..., 0]


#: ``generator(state, sampled) -> actions``: joint actions int[B, 2] to take, given the policy's samples.
Generator = Callable[[core.CorridorState, np.ndarray], np.ndarray]


class Agent(Protocol):
    """What the rollouts read of a MAPPO agent (``marlinkit.algos.mappo.MAPPO``; this module sits below it)."""

    config: Any  # its MAPPOConfig (the rollouts read steps_per_iteration)

    def logits(self, obs: np.ndarray) -> np.ndarray: ...  # [R, n, 4] -> [R, n, 5]

    def values(self, critic_in: np.ndarray) -> np.ndarray: ...  # [R, n, 13] -> [R, n]

    def policy(self, run: int) -> Any: ...  # one run's view: what an episode callback receives


#: ``on_episode_end(episode, policy, performance[B], team_return[B])``, called when all copies finish an episode.
EpisodeCallback = Callable[[int, Agent, np.ndarray, np.ndarray], None]


def rollout_buffers(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Zeroed rollout storage of ``shape`` (steps, [runs,] copies, agents): observations, actions, log-probs,
    logits, rewards, dones."""
    return (np.zeros((*shape, OBS_SIZE), np.float32), np.zeros(shape, np.int64), np.zeros(shape, np.float32),
            np.zeros((*shape, core.N_ACTIONS), np.float32), np.zeros(shape, np.float32), np.zeros(shape, np.float32))



@dataclass
class RunSpec:
    """One run of a batch: what the trainer takes besides the shared config, copies and episodes."""

    layout: Layout | Callable[[int], Layout]
    """A layout, or the layout of each 0-based episode (a changing environment)."""
    seed: int
    """The run's seed: initial weights, rollout sampling and minibatch order."""
    generator: Generator | None = None
    """Actions from outside (MARLIN's Algorithm 1 for this run): ``generator(state, sampled) -> actions``."""
    on_episode_end: EpisodeCallback | None = None
    """Called when the run's copies finish an episode, with a per-run view of the policy."""


def _choose(agent: Agent, runs: Sequence[RunSpec], rngs, arrays, states, n_envs: int) -> tuple[np.ndarray, ...]:
    """Every run's observations [R, B, 2, 4], logits, actions (sampled, or its generator's) and generated flags."""
    R = len(runs)
    obs = np.stack([core.observe(a, s) for a, s in zip(arrays, states)]).astype(np.float32)
    logits = agent.logits(obs.reshape(R, -1, OBS_SIZE)).reshape(R, n_envs, core.N_AGENTS, core.N_ACTIONS)
    actions = np.empty((R, n_envs, core.N_AGENTS), np.int64)
    generated = np.zeros((R, n_envs), bool)
    for i, run in enumerate(runs):
        sampled = sample_actions(logits[i], rngs[i].random((n_envs, core.N_AGENTS)))
        actions[i] = sampled if run.generator is None else np.asarray(run.generator(states[i], sampled), dtype=np.int64)
        generated[i] = generated_steps(run.generator, n_envs)
    return obs, logits, actions, generated


def rollouts(agent: Agent, runs: Sequence[RunSpec], *, n_envs: int, episodes: int) -> Iterator[tuple]:
    """Play ``episodes`` episodes on ``n_envs`` copies of every run in lock step; yield each update's rollout.

    Every ``steps_per_iteration`` steps (all copies of a run together) and at the end: the buffers
    ``(obs, actions, logp, logits, rewards, dones)`` [T, R, B, 2, ...], V of the next state [R, B, 2], and which
    copies' steps a generator chose ([T, R, B]). The next actions are sampled before the yield, so by the
    policy that collected the rollout. A run's numbers never depend on the other runs.
    """
    R = len(runs)
    rngs = [np.random.default_rng(r.seed) for r in runs]
    layout_of = [(r.layout if callable(r.layout) else (lambda _e, fixed=r.layout: fixed)) for r in runs]
    arrays = [core.layout_arrays(f(0)) for f in layout_of]
    horizon = max(1, round(agent.config.steps_per_iteration / n_envs))  # steps per copy per update
    shape = (horizon, R, n_envs, core.N_AGENTS)
    obs_buf, action_buf, logp_buf, logits_buf, reward_buf, done_buf = rollout_buffers(shape)
    generated_buf = np.zeros(shape[:3], bool)
    states = [core.reset(a, n_envs) for a in arrays]
    obs, logits, actions, generated = _choose(agent, runs, rngs, arrays, states, n_envs)
    team_return = np.zeros((R, n_envs))
    filled, episode = 0, 0
    for _ in range(episodes * core.EPISODE_STEPS):
        obs_buf[filled], logits_buf[filled], action_buf[filled], generated_buf[filled] = obs, logits, actions, generated
        logp_buf[filled] = [log_prob(logits[i], actions[i]) for i in range(R)]  # per run: see mappo_fast.per_run_exp
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
                    performance = core.performance(arrays[i], states[i])
                    run.on_episode_end(episode, agent.policy(i), performance, team_return[i].copy())
            arrays = [core.layout_arrays(f(episode)) for f in layout_of]
            states, team_return = [core.reset(a, n_envs) for a in arrays], np.zeros((R, n_envs))
        last_step = episode == episodes
        if not last_step:  # sampled before the update: the true behaviour policy
            obs, logits, actions, generated = _choose(agent, runs, rngs, arrays, states, n_envs)
        if filled == horizon or last_step:
            yield (obs_buf[:filled], action_buf[:filled], logp_buf[:filled], logits_buf[:filled], reward_buf[:filled],
                   done_buf[:filled], _next_value(agent, obs, actions, last_step), generated_buf[:filled])
            filled = 0


def _next_value(agent: Agent, obs: np.ndarray, actions: np.ndarray, last_step: bool) -> np.ndarray:
    """V [R, B, 2] of the state after a rollout (0 after the last step: the episode end is terminal)."""
    R, n_envs = obs.shape[:2]
    if last_step:
        return np.zeros((R, n_envs, core.N_AGENTS), np.float32)
    return agent.values(critic_inputs(obs, actions).reshape(R, -1, CRITIC_SIZE)).reshape(R, n_envs, core.N_AGENTS)


def generated_steps(generator, n_envs: int) -> np.ndarray:
    """bool [B]: the copies whose last actions ``generator`` chose (its ``generated``), not the policy's samples."""
    if generator is None or not hasattr(generator, "generated"):
        return np.zeros(n_envs, bool)
    return np.asarray(generator.generated, dtype=bool)


def evaluation_uniforms(seed: int | tuple, runs: int) -> np.ndarray:
    """Uniforms [50, runs, 2] for sampled evaluation; run ``r`` draws from its own stream ``(seed, r)``.

    Two policies evaluated with the same seed share each run's random numbers (paired runs).
    """
    seed = tuple(np.atleast_1d(seed).tolist())
    return np.stack([np.random.default_rng((*seed, r)).random((core.EPISODE_STEPS, core.N_AGENTS))
                     for r in range(runs)], axis=1)
