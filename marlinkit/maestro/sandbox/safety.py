"""Stage 3, the safety checks on the values a reward returned: finite and bounded everywhere; on the real rows not
rising with the queue and varied enough to matter; on probes beyond the recorded range not rising with the queue,
falling with the departures or paying for gridlock."""

from __future__ import annotations

from typing import Mapping, NamedTuple

import numpy as np

from marlinkit.maestro.sandbox.limits import FIELD_NAMES, SandboxError, SandboxLimits


def check_outputs(values: np.ndarray, bound: float) -> None:
    """Stage 3: raise ``SandboxError("safety", ...)`` unless all values are finite and in range."""
    bad = ~np.isfinite(values)
    if bad.any():
        raise SandboxError("safety", f"{int(bad.sum())} of {values.size} values are not finite (first: {values[bad][0]})")
    worst = float(np.abs(values).max())
    if worst > bound:
        raise SandboxError("safety", f"|value| reaches {worst:.6g}, outside [-{bound:g}, {bound:g}]")


def check_queue_alignment(values: np.ndarray, queue: np.ndarray, limits: SandboxLimits = SandboxLimits()) -> float:
    """Safety on real traffic: the reward must not rise with the queue length; returns Spearman's rho.

    The learning goal asks for short queues. A reward that pays for them on real traffic (while
    behaving on synthetic rows) is refused; so is one constant on real traffic.
    """
    if np.ptp(values) == 0 or np.ptp(queue) == 0:
        raise SandboxError("safety", "the reward is constant on the real traffic rows (it ignores its inputs)")
    rho = float(np.corrcoef(_average_ranks(values), _average_ranks(queue))[0, 1])
    if not rho < limits.max_queue_correlation:
        raise SandboxError("safety", f"on real traffic the reward rises with the queue length (Spearman {rho:+.2f}, "
                                     f"must be below {limits.max_queue_correlation:+.2f})")
    return rho


class Probes(NamedTuple):
    """Synthetic rows beyond the recorded range (:func:`probe_rows`) and where each group lies."""

    metrics: dict[str, np.ndarray]
    difficulty: np.ndarray
    queue_sweeps: np.ndarray  # (sweeps, QUEUE_STEPS) row indices: the queue 0, 1, ..., capacity
    throughput_sweeps: np.ndarray  # (sweeps, THROUGHPUT_STEPS) row indices: departures 0, 1, ..., 12
    gridlock: np.ndarray  # row indices of gridlocked intersections


#: Queue capacity of an intersection (halted vehicles on its 12 incoming lanes): the probes' largest queue.
QUEUE_CAPACITY = 120
THROUGHPUT_STEPS = 13  # departures 0..12 in one second: twice the documented range
PROBE_BASES = 11  # real rows the sweeps start from: the queue's 0, 10, ..., 100th percentile


def probe_rows(metrics: Mapping[str, np.ndarray], difficulty: np.ndarray, n_real: int) -> Probes:
    """Synthetic rows that probe the reward where the recorded traffic does not reach.

    From :data:`PROBE_BASES` real rows (spread over the queue length), each once as recorded and
    once with its phase held for a whole episode (360 s): a sweep of the queue from 0 to
    :data:`QUEUE_CAPACITY` and a sweep of the departures from 0 to 12, every other input as in
    the base row; then gridlocked intersections (queue at capacity, nobody leaving, everyone
    waiting 300 s, the phase held 60, 120 or 360 s) in every phase and at the lowest, middle and
    highest difficulty of the real rows. Deterministic: derived from the rows alone.
    """
    from marlinkit.maestro.sandbox.reward_rows import SECONDS

    queue = np.asarray(metrics["queue_length"][:n_real], dtype=float)
    order = np.argsort(queue, kind="stable")
    bases = order[np.round(np.linspace(0, n_real - 1, PROBE_BASES)).astype(int)]
    base_rows = np.column_stack([np.asarray(metrics[name][:n_real], dtype=float)[bases] for name in FIELD_NAMES])
    base_difficulty = np.asarray(difficulty[:n_real], dtype=float)[bases]
    held = base_rows.copy()
    held[:, FIELD_NAMES.index("phase_duration")] = float(SECONDS)
    base_rows = np.vstack([base_rows, held])
    base_difficulty = np.concatenate([base_difficulty, base_difficulty])
    blocks, levels, groups = [], [], {}
    start = 0
    for field_name, steps in (("queue_length", np.arange(QUEUE_CAPACITY + 1.0)),
                              ("throughput", np.arange(float(THROUGHPUT_STEPS)))):
        rows = np.repeat(base_rows, len(steps), axis=0)
        rows[:, FIELD_NAMES.index(field_name)] = np.tile(steps, len(base_rows))
        blocks.append(rows)
        levels.append(np.repeat(base_difficulty, len(steps)))
        groups[field_name] = start + np.arange(len(rows)).reshape(len(base_rows), len(steps))
        start += len(rows)
    jam = {"queue_length": float(QUEUE_CAPACITY), "waiting_time": 300.0, "pressure": float(QUEUE_CAPACITY),
           "throughput": 0.0, "delay": 1.0, "occupancy": 1.0}
    known = np.unique(np.asarray(difficulty[:n_real], dtype=float))
    gridlock = []
    for held_s in (60.0, 120.0, float(SECONDS)):
        for phase in range(4):
            for level in (known[0], known[len(known) // 2], known[-1]):  # difficulties the real rows have
                gridlock.append([jam.get(name, 0.0) for name in FIELD_NAMES])
                gridlock[-1][FIELD_NAMES.index("phase")] = float(phase)
                gridlock[-1][FIELD_NAMES.index("phase_duration")] = held_s
                levels.append(np.array([level]))
    blocks.append(np.array(gridlock))
    rows = np.vstack(blocks)
    return Probes({name: rows[:, i] for i, name in enumerate(FIELD_NAMES)}, np.concatenate(levels),
                  groups["queue_length"], groups["throughput"], start + np.arange(len(gridlock)))


def env_reward(metrics: Mapping[str, np.ndarray]) -> np.ndarray:
    """The environment's own reward on reward-input rows (its template: flow - wait - pressure)."""
    from marlinkit.envs.traffic.env import RewardWeights

    w = RewardWeights()
    return (w.flow * np.asarray(metrics["throughput"]) - w.wait * np.asarray(metrics["queue_length"])
            - w.pressure * np.abs(np.asarray(metrics["pressure"])))


def check_behaviour(real_values: np.ndarray, real_metrics: Mapping[str, np.ndarray], real_difficulty: np.ndarray,
                    probes: Probes, probe_values: np.ndarray, limits: SandboxLimits = SandboxLimits()) -> None:
    """Safety rules beyond the recorded range (README, threat model); ``SandboxError("safety")`` on a breach.

    1. *spread*: 170 x the reward's range on the real rows is at least ``min_spread_fraction`` of
       the environment reward's range there (a reward too small to change training is refused);
    2. *queue*: on neighbouring rows of the queue sweeps (one more halted vehicle, nothing else
       changed) the reward rises on at most ``max_rising_pairs`` of the pairs;
    3. *throughput*: on neighbouring rows of the departure sweeps it falls on at most that share;
    4. *gridlock*: on no gridlock row is it above its lower quartile on the real rows of the same difficulty.
    """
    from marlinkit.maestro.curriculum import CurriculumConfig

    scale = CurriculumConfig().llm_scale
    env_range = float(np.ptp(env_reward(real_metrics)))
    spread = scale * float(np.ptp(real_values))
    if env_range > 0 and not spread >= limits.min_spread_fraction * env_range:
        raise SandboxError("safety", f"the reward barely varies: {scale:g} x its range on real traffic is {spread:.3g}, "
                                     f"under {limits.min_spread_fraction:g} of the environment reward's range ({env_range:.3g})")
    tolerance = 1e-9 * max(1.0, limits.bound)
    for name, sweeps, sign, verb in (("queue length", probes.queue_sweeps, 1.0, "rises with"),
                                     ("throughput", probes.throughput_sweeps, -1.0, "falls with")):
        steps = sign * np.diff(probe_values[sweeps], axis=1)
        share = float(np.mean(steps > tolerance))
        if share > limits.max_rising_pairs:
            raise SandboxError("safety", f"the reward {verb} the {name} on {share:.0%} of neighbouring probe rows "
                                         f"(at most {limits.max_rising_pairs:.0%} allowed)")
    real_difficulty = np.asarray(real_difficulty, dtype=float)
    for level in np.unique(probes.difficulty[probes.gridlock]):
        quartile = float(np.percentile(real_values[real_difficulty == level], 25))
        jammed = probes.gridlock[probes.difficulty[probes.gridlock] == level]
        worst = float(probe_values[jammed].max())
        if worst > quartile + tolerance:
            raise SandboxError("safety", f"the reward pays for gridlock: {worst:.3g} on a gridlocked intersection at "
                                         f"difficulty {level:g}, above its lower quartile on real traffic there ({quartile:.3g})")


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank (scipy's ``rankdata`` default, without importing scipy)."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2.0)[inverse]
