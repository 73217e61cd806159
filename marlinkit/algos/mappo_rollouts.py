"""MAPPO's data on the batched corridor core: rollouts of many copies in lock step, seeded action sampling,
log-probabilities, the centralised critic's inputs and the paired evaluation streams.

The plumbing both trainers share (``mappo.train`` for one run, ``mappo_batched`` for many); the algorithm
itself (losses, networks, update) is ``mappo.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
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

    def logits(self, obs: np.ndarray) -> np.ndarray: ...

    def values(self, critic_in: np.ndarray) -> np.ndarray: ...


#: ``on_episode_end(episode, agent, performance[B], team_return[B])``, called when all copies finish an episode.
EpisodeCallback = Callable[[int, Agent, np.ndarray, np.ndarray], None]


def rollout_buffers(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Zeroed rollout storage of ``shape`` (steps, [runs,] copies, agents): observations, actions, log-probs,
    logits, rewards, dones; shared by the one-run and the batched trainer."""
    return (np.zeros((*shape, OBS_SIZE), np.float32), np.zeros(shape, np.int64), np.zeros(shape, np.float32),
            np.zeros((*shape, core.N_ACTIONS), np.float32), np.zeros(shape, np.float32), np.zeros(shape, np.float32))



def rollouts(agent: Agent, layout: Layout | Callable[[int], Layout], *, n_envs: int, episodes: int, seed: int,
             generator: Generator | None = None, on_episode_end: EpisodeCallback | None = None) -> Iterator[tuple]:
    """Play ``episodes`` episodes on ``n_envs`` copies; yield each update's rollout (see :func:`training_rows`).

    Every ``steps_per_iteration`` steps (all copies together) and at the end: the buffers
    ``(obs, actions, logp, logits, rewards, dones)`` [T, B, 2, ...], V of the next state, and which
    copies' steps the generator chose ([T, B]; all False without a generator or one without ``generated``).
    The next actions are sampled before the yield, so by the policy that collected the rollout.
    """
    config = agent.config
    rng = np.random.default_rng(seed)
    arrays = core.layout_arrays(layout(0) if callable(layout) else layout)
    horizon = max(1, round(config.steps_per_iteration / n_envs))  # steps per copy per update
    shape = (horizon, n_envs, core.N_AGENTS)
    obs_buf, action_buf, logp_buf, logits_buf, reward_buf, done_buf = rollout_buffers(shape)
    generated_buf = np.zeros(shape[:2], bool)

    def choose(state):
        obs = core.observe(arrays, state).astype(np.float32)
        logits = agent.logits(obs)
        sampled = sample_actions(logits, rng.random((n_envs, core.N_AGENTS)))
        actions = sampled if generator is None else np.asarray(generator(state, sampled), dtype=np.int64)
        return obs, logits, actions, generated_steps(generator, n_envs)

    state = core.reset(arrays, n_envs)
    obs, logits, actions, generated = choose(state)
    team_return = np.zeros(n_envs)
    filled, episode = 0, 0
    for _ in range(episodes * core.EPISODE_STEPS):
        obs_buf[filled], logits_buf[filled], action_buf[filled], generated_buf[filled] = obs, logits, actions, generated
        logp_buf[filled] = log_prob(logits, actions)
        result = core.step(arrays, state, actions)
        reward_buf[filled] = result.reward
        done_buf[filled] = result.done[:, None]
        team_return += result.reward.sum(-1)
        filled += 1
        state = result.state
        if result.done.all():  # copies run in lock step and episodes have a fixed length
            episode += 1
            if on_episode_end is not None:
                on_episode_end(episode, agent, core.performance(arrays, state), team_return.copy())
            if callable(layout):  # a changing environment: the next episode's layout
                arrays = core.layout_arrays(layout(episode))
            state, team_return = core.reset(arrays, n_envs), np.zeros(n_envs)
        last_step = episode == episodes
        if not last_step:
            obs, logits, actions, generated = choose(state)  # sampled before the update: the true behaviour policy
        if filled == horizon or last_step:
            next_value = agent.values(critic_inputs(obs, actions)) if not last_step else np.zeros((n_envs, 2), np.float32)
            yield (obs_buf[:filled], action_buf[:filled], logp_buf[:filled], logits_buf[:filled],
                   reward_buf[:filled], done_buf[:filled], next_value, generated_buf[:filled])
            filled = 0


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
