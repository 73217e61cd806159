"""Generalised advantage estimation (Schulman et al. 2016) for MAPPO's rollouts, and its variant that keeps
generator-chosen steps apart (``MAPPOConfig.generated_steps="separate"``)."""

from __future__ import annotations

import numpy as np


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
    # [T, B, 1]: the next step is generated
    following = np.concatenate([generated[1:], np.zeros_like(generated[:1])])[..., None]
    advantages, returns = compute_gae(rewards, values, dones, next_value, gamma, lam, cut=following)
    rows = np.broadcast_to(generated[..., None], values.shape)
    returns[rows] = values[rows]
    if rows.any() and not rows.all():
        advantages[rows] = advantages[~rows].mean()
    return advantages, returns
