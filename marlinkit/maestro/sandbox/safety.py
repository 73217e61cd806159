"""Stage 3, safety: the values on the recorded rows, then a seeded search for rows where the reward misbehaves.

On the recorded traffic the reward must be finite, within the bound, not constant and large enough to matter
(:func:`check_outputs`, :func:`check_real`). Then :func:`search` looks for a counterexample to each property a
traffic reward must have, over the whole metric domain (:data:`DOMAIN`, beyond anything recorded) and at every
difficulty level the curriculum can produce:

* ``finite``: finite and within ``[-bound, bound]`` everywhere (an operation without a finite value in a row the
  program reaches is a failure of this property too);
* ``queue_length``, ``waiting_time``, ``delay``: not rising when one of them grows, everything else unchanged;
* ``throughput``: not falling when more vehicles leave;
* ``phase``: the same value whatever the phase and however long it has been held (unless
  ``SandboxLimits.phase_terms``: the prompt asked for such a term);
* ``jam``: on a jammed intersection of any shape (:data:`JAM`: long queue, long waits, slow, occupied lanes,
  nobody leaving; any pressure, phase and phase time) never above the reward's lower quartile on the recorded
  rows of the same difficulty.

The search is deterministic: a seeded draw of ``search_rows`` rows (or pairs) per property, each metric taken
at an edge of its range, at zero, at a whole number or anywhere in between, the difficulty levels in turn; then
``search_rounds`` rounds of local search around the candidates that came closest to a violation. The first
property with a violation ends it; the counterexample is simplified (metrics moved to whole numbers or zero
while it still violates) and reported. A search can miss a violation confined to a region it never samples:
see docs/threat-model.md.
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

import numpy as np

from marlinkit.maestro.sandbox.limits import FIELD_NAMES, SandboxError, SandboxLimits

#: Queue capacity of an intersection (halted vehicles on its 12 incoming lanes): the largest queue searched.
QUEUE_CAPACITY = 120
#: The searched range of each metric (low, high, whole numbers only): the documented ranges, widened to what an
#: intersection can physically show (a full queue, twice the documented departures, a phase held all episode).
DOMAIN = {
    "queue_length": (0.0, float(QUEUE_CAPACITY), True), "waiting_time": (0.0, 600.0, False),
    "pressure": (-120.0, 120.0, True), "throughput": (0.0, 12.0, True), "delay": (0.0, 1.0, False),
    "occupancy": (0.0, 1.0, False), "phase": (0.0, 3.0, True), "phase_duration": (0.0, 360.0, True),
}
#: A jammed intersection: each metric within these bounds (the others anywhere in :data:`DOMAIN`).
JAM = {"queue_length": (60.0, float(QUEUE_CAPACITY)), "waiting_time": (60.0, 600.0), "delay": (0.5, 1.0),
       "occupancy": (0.5, 1.0), "throughput": (0.0, 0.0)}
#: The metrics a reward must not rise with (+1) or fall with (-1), the others unchanged.
MONOTONE = (("queue_length", 1.0), ("waiting_time", 1.0), ("delay", 1.0), ("throughput", -1.0))
PROPERTIES = ("finite",) + tuple(name for name, _ in MONOTONE) + ("phase", "jam")
_KEEP_BEST = 32  # candidates the local search starts from, each round

Evaluate = Callable[[dict, np.ndarray], np.ndarray]


def check_outputs(values: np.ndarray, bound: float) -> None:
    """Raise ``SandboxError("safety", ...)`` unless all values are finite and within ``[-bound, bound]``."""
    bad = ~np.isfinite(values)
    if bad.any():
        raise SandboxError("safety", f"{int(bad.sum())} of {values.size} values are not finite (first: "
                                     f"{values[bad][0]})")
    worst = float(np.abs(values).max()) if values.size else 0.0
    if worst > bound:
        raise SandboxError("safety", f"|value| reaches {worst:.6g}, outside [-{bound:g}, {bound:g}]")


def env_reward(metrics: Mapping[str, np.ndarray]) -> np.ndarray:
    """The environment's own reward on reward-input rows (its template: flow - wait - pressure)."""
    from marlinkit.envs.traffic.env import RewardWeights

    w = RewardWeights()
    return (w.flow * np.asarray(metrics["throughput"]) - w.wait * np.asarray(metrics["queue_length"])
            - w.pressure * np.abs(np.asarray(metrics["pressure"])))


def check_real(values: np.ndarray, metrics: Mapping[str, np.ndarray], limits: SandboxLimits = SandboxLimits()) -> None:
    """On the recorded traffic: not constant, and 170 x its range at least ``min_spread_fraction`` of the
    environment reward's range there (a reward too small to change training is refused)."""
    from marlinkit.maestro.curriculum import CurriculumConfig

    if np.ptp(values) == 0:
        raise SandboxError("safety", "the reward is constant on the real traffic rows (it ignores its inputs)")
    scale = CurriculumConfig().llm_scale
    env_range, spread = float(np.ptp(env_reward(metrics))), scale * float(np.ptp(values))
    if env_range > 0 and not spread >= limits.min_spread_fraction * env_range:
        raise SandboxError("safety", f"the reward barely varies: {scale:g} x its range on real traffic is "
                                     f"{spread:.3g}, "
                                     f"under {limits.min_spread_fraction:g} of the environment reward's range "
                                     f"({env_range:.3g})")


class Counterexample(NamedTuple):
    """A violation the search found: the property, the rows (one, or the pair compared) and their values."""

    prop: str
    difficulty: float
    rows: list[dict[str, float]]
    values: list[float | None]  # None: no finite value
    message: str

    def to_dict(self) -> dict:
        return {"property": self.prop, "difficulty": self.difficulty, "rows": self.rows, "values": self.values}


def _draw(rng: np.random.Generator, n: int, region: Mapping[str, tuple[float, float]]) -> np.ndarray:
    """``n`` rows: each metric at an edge of its range, at zero, a whole number or anywhere in between."""
    rows = np.empty((n, len(FIELD_NAMES)))
    for j, name in enumerate(FIELD_NAMES):
        low, high, whole = DOMAIN[name]
        low, high = region.get(name, (low, high))
        values = rng.uniform(low, high, n)
        kind = rng.random(n)
        values = np.where(kind < 0.45 if whole else kind < 0.25, np.round(values), values)
        values = np.where(kind >= 0.85, low, np.where(kind >= 0.7, high, values))
        if low < 0.0 < high:
            values = np.where((kind >= 0.6) & (kind < 0.7), 0.0, values)
        rows[:, j] = np.round(values) if name == "phase" else values
    return rows


def _mutate(rng: np.random.Generator, rows: np.ndarray, region: Mapping[str, tuple[float, float]]) -> np.ndarray:
    """Neighbours of ``rows``: about a third of the metrics moved a little, to an edge or to a whole number."""
    out = rows.copy()
    fresh = _draw(rng, len(rows), region)
    for j, name in enumerate(FIELD_NAMES):
        low, high, _ = DOMAIN[name]
        low, high = region.get(name, (low, high))
        kind = rng.random(len(rows))
        nudged = np.clip(out[:, j] + rng.normal(0.0, 0.03 * (high - low) + 1e-12, len(rows)), low, high)
        out[:, j] = np.where(kind < 0.2, nudged, np.where(kind < 0.35, fresh[:, j], out[:, j]))
        if name == "phase":
            out[:, j] = np.round(out[:, j])
    return out


class _Property:
    """One property: where its rows come from, the row it is compared with, and the violation (> 0 breaks it)."""

    def __init__(self, name: str, limits: SandboxLimits, thresholds: dict[float, float]):
        self.name, self.limits, self.thresholds = name, limits, thresholds
        self.region = JAM if name == "jam" else {}
        self.paired = name not in ("finite", "jam")

    def partner(self, rng: np.random.Generator, rows: np.ndarray) -> np.ndarray:
        out = rows.copy()
        if self.name == "phase":
            j, k = FIELD_NAMES.index("phase"), FIELD_NAMES.index("phase_duration")
            out[:, j] = (rows[:, j] + rng.integers(1, 4, len(rows))) % 4
            held = _draw(rng, len(rows), {})[:, k]
            out[:, k] = np.where(rng.random(len(rows)) < 0.5, held, rows[:, k])
            return out
        j = FIELD_NAMES.index(self.name)
        low, high, whole = DOMAIN[self.name]
        room = high - rows[:, j]
        step = np.where(rng.random(len(rows)) < 0.5, rng.uniform(0.0, 1.0, len(rows)) * room,
                        np.minimum(1.0 if whole else 0.01 * (high - low), room))
        out[:, j] = rows[:, j] + step
        return out

    def violation(self, values: np.ndarray, partner_values: np.ndarray | None, difficulty: np.ndarray) -> np.ndarray:
        if self.name == "finite":
            return np.abs(values) - self.limits.bound
        if self.name == "jam":
            return values - np.array([self.thresholds[float(d)] for d in difficulty])
        if self.name == "phase":
            return np.abs(partner_values - values)
        sign = dict(MONOTONE)[self.name]
        return sign * (partner_values - values)


def _values(evaluate: Evaluate, rows: np.ndarray, difficulty: np.ndarray) -> np.ndarray:
    return evaluate({name: rows[:, j] for j, name in enumerate(FIELD_NAMES)}, difficulty)


def _row_dict(row: np.ndarray) -> dict[str, float]:
    return {name: float(v) for name, v in zip(FIELD_NAMES, row)}


def search(evaluate: Evaluate, levels: tuple[float, ...], thresholds: dict[float, float],
           limits: SandboxLimits = SandboxLimits()) -> Counterexample | None:
    """The first counterexample to :data:`PROPERTIES` the seeded search finds, or None.

    ``evaluate(metrics, difficulty)`` gives the reward per row (raising ``SandboxError`` with ``row`` set when a
    row has no finite value); ``thresholds`` maps each level to the reward's lower quartile on the recorded rows.
    """
    tolerance = 1e-9 * max(1.0, limits.bound)
    for number, name in enumerate(PROPERTIES):
        if name == "phase" and limits.phase_terms:
            continue
        prop = _Property(name, limits, thresholds)
        rng = np.random.default_rng([limits.search_seed, number])
        rows = _draw(rng, limits.search_rows, prop.region)
        difficulty = np.asarray(levels, dtype=float)[np.arange(limits.search_rows) % len(levels)]
        for round_ in range(limits.search_rounds + 1):
            found, scores = _try(evaluate, prop, rng, rows, difficulty, tolerance)
            if found is not None:
                return found
            if round_ == limits.search_rounds:
                break
            best = np.argsort(-scores, kind="stable")[:_KEEP_BEST]
            picked = np.repeat(best, max(1, limits.search_rows // (2 * len(best))))
            rows = _mutate(rng, rows[picked], prop.region)
            moved = rng.random(len(picked)) < 0.2
            difficulty = np.where(moved, np.asarray(levels)[rng.integers(0, len(levels), len(picked))],
                                  difficulty[picked])
    return None


def _try(evaluate: Evaluate, prop: _Property, rng: np.random.Generator, rows: np.ndarray, difficulty: np.ndarray,
         tolerance: float) -> tuple[Counterexample | None, np.ndarray]:
    """Evaluate one batch of candidates: a counterexample (simplified), or the scores that rank them."""
    partners = prop.partner(rng, rows) if prop.paired else None
    stacked = rows if partners is None else np.vstack([rows, partners])
    stacked_d = difficulty if partners is None else np.concatenate([difficulty, difficulty])
    try:
        values = _values(evaluate, stacked, stacked_d)
    except SandboxError as error:
        row = error.row if error.row is not None else 0
        return Counterexample("finite", float(stacked_d[row]), [_row_dict(stacked[row])], [None],
                              f"the reward has no finite value on a searched row: {error.reason}"), np.zeros(0)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.argmax(bad))
        return Counterexample("finite", float(stacked_d[row]), [_row_dict(stacked[row])], [None],
                              "the reward is not finite on a searched row"), np.zeros(0)
    n = len(rows)
    scores = prop.violation(values[:n], None if partners is None else values[n:], difficulty)
    if not (scores > tolerance).any():
        return None, scores
    i = int(np.argmax(scores > tolerance))
    pair = [rows[i]] + ([] if partners is None else [partners[i]])
    found = np.array([values[i]] + ([] if partners is None else [values[n + i]]))
    pair, values = _simplify(evaluate, prop, pair, found, float(difficulty[i]), tolerance)
    return Counterexample(prop.name, float(difficulty[i]), [_row_dict(r) for r in pair], values.tolist(),
                          _message(prop, pair, values, float(difficulty[i]))), scores


def _simplify(evaluate: Evaluate, prop: _Property, pair: list[np.ndarray], values: np.ndarray, difficulty: float,
              tolerance: float) -> tuple[list[np.ndarray], np.ndarray]:
    """Move each metric the pair shares to zero (or its range's low end), else to a whole number, while the
    violation holds: a counterexample easier to read, and its values. Deterministic; one batch per metric. A
    simpler row without a finite value ends it there (the worker that found it is closed)."""
    pair = [row.copy() for row in pair]
    for j, name in enumerate(FIELD_NAMES):
        if len(pair) == 2 and pair[0][j] != pair[1][j]:
            continue
        low, high = prop.region.get(name, DOMAIN[name][:2])
        for candidate in (min(max(0.0, low), high), float(np.round(pair[0][j]))):
            if candidate == pair[0][j]:
                continue
            trial = [row.copy() for row in pair]
            for row in trial:
                row[j] = candidate
            try:
                tried = _values(evaluate, np.array(trial), np.full(len(trial), difficulty))
            except SandboxError:
                return pair, values
            if not np.isfinite(tried).all():
                continue
            score = prop.violation(tried[:1], tried[1:] if len(trial) == 2 else None, np.array([difficulty]))
            if score[0] > tolerance:
                pair, values = trial, tried
                break
    return pair, values


def _message(prop: _Property, pair: list[np.ndarray], values: np.ndarray, difficulty: float) -> str:
    row = ", ".join(f"{name} {v:g}" for name, v in zip(FIELD_NAMES, pair[0]))
    if prop.name == "finite":
        return f"the reward is {values[0]:.6g}, outside [-{prop.limits.bound:g}, {prop.limits.bound:g}], at {row} " \
               f"(d = {difficulty:g})"
    if prop.name == "jam":
        return (f"the reward pays for a jam: {values[0]:.6g} at {row} (d = {difficulty:g}), above its lower quartile "
                f"on real traffic at that difficulty ({prop.thresholds[difficulty]:.6g})")
    changed = [name for name, a, b in zip(FIELD_NAMES, *pair) if a != b]
    moves = ", ".join(f"{name} {a:g} -> {b:g}" for name, a, b in zip(FIELD_NAMES, *pair) if a != b)
    if prop.name == "phase":
        return (f"the reward depends on the phase or its timing ({' and '.join(changed)}): {values[0]:.6g} -> "
                f"{values[1]:.6g} when {moves}, at {row} (d = {difficulty:g})")
    verb = "rises" if dict(MONOTONE)[prop.name] > 0 else "falls"
    return (f"the reward {verb} with {prop.name}: {values[0]:.6g} -> {values[1]:.6g} when {moves}, at {row} "
            f"(d = {difficulty:g})")
