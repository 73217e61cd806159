"""Calibrated surrogate planner: exact joint plans corrupted at a per-scenario rate. NOT an LLM.

A stand-in for the paper's Llama 3.1 8B negotiation that runs on a CPU in microseconds. It takes
the exact joint planner's shortest plan (``marlinkit.algos.joint_planner``) and, independently
for every step and robot, replaces the action with probability ``rate`` by one of the four other
actions, chosen uniformly. The draws come from the ``seed`` of ``make_plan`` alone, so the same
call gives the same plan. The corrupted plan is played from the given positions and its end
performance is the plan's performance, as for every plan source.

The rate of each scenario is calibrated (``calibrate``, a measured bisection over the rate with
the LLM-only protocol of ``systems.plan_source_alone``) so that the surrogate's LLM-only performance matches
the authors' measured Llama 3.1 8B LLM-only performance (``paper_values.AUTHORS_LLM_ONLY``). The
calibrated rates are package data, ``surrogate_planner_rates.json`` beside this file, written by::

    python -m marlinkit calibrate-surrogate --trials 400 --seed 0

What it matches is the *mean* LLM-only performance from the start state; it does not imitate an
LLM's kind of mistakes, its plans from other states, or its cost.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, Layout
from marlinkit.envs.corridor.plans import Plan
from marlinkit.paper_values import AUTHORS_LLM_ONLY, AUTHORS_MARLIN_ROWS_PER_EPISODE, AUTHORS_PERFECT_PLAN_SHARE

RATES_FILE = Path(__file__).with_name("surrogate_planner_rates.json")
NAME = "calibrated-surrogate-planner"
SALT = 0x5A77  # keeps the corruption stream apart from every other use of the same seed
# |LLM-only(surrogate) - target| a held-out seed must meet (tests/marlin/test_surrogate_planner.py)
CALIBRATION_TOLERANCE = 0.05


def corrupt(actions: np.ndarray, rate: float, seed: int | None) -> np.ndarray:
    """``actions`` int[T, 2] with each entry replaced, with probability ``rate``, by another action (uniform).

    The random draws do not depend on ``rate``: for one seed a larger rate corrupts a superset of steps.
    """
    rng = np.random.default_rng([SALT, 0 if seed is None else int(seed) % 2**63])
    actions = np.asarray(actions, dtype=np.int64)
    hit = rng.random(actions.shape) < rate
    other = (actions + rng.integers(1, core.N_ACTIONS, size=actions.shape)) % core.N_ACTIONS
    return np.where(hit, other, actions)


def play(layout: Layout, positions: np.ndarray, actions: np.ndarray) -> float:
    """Performance after playing ``actions`` int[T, 2] from ``positions`` on the corridor core."""
    arrays = core.layout_arrays(layout)
    state = core.CorridorState(np.asarray(positions, dtype=np.int64).reshape(1, core.N_AGENTS, 2),
                               np.zeros(1, np.int64))
    for joint in actions:
        state = core.step(arrays, state, joint[None]).state
    return float(core.performance(arrays, state)[0])


def load_rates(path: Path = RATES_FILE) -> dict[str, float]:
    """The calibrated corruption rate per scenario from the package's calibration file."""
    try:
        record = json.loads(Path(path).read_text())
        rates = {str(k): float(v["rate"]) for k, v in record["scenarios"].items()}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"cannot read the surrogate planner's calibrated rates from {path}: {error!r}; "
                         f"recreate it with: python -m marlinkit calibrate-surrogate") from error
    bad = {k: v for k, v in rates.items() if not 0.0 <= v <= 1.0}
    if bad:
        raise ValueError(f"{path}: corruption rates must lie in [0, 1], got {bad}")
    return rates


class CalibratedSurrogatePlanner:
    """``PlanSource``: exact plans corrupted at the scenario's rate (a surrogate for an LLM, not an LLM)."""

    def __init__(self, rates: dict[str, float] | None = None):
        self.rates = dict(load_rates() if rates is None else rates)
        digest = hashlib.sha256(json.dumps(self.rates, sort_keys=True).encode()).hexdigest()[:10]
        self.name = f"{NAME}[rates {digest}]"  # the rates enter every run's cache key through the name
        self._exact = ExactJointPlanner()
        self._plans: dict[tuple, Plan] = {}

    def rate(self, layout: Layout) -> float:
        if layout.name not in self.rates:
            raise ValueError(f"no calibrated corruption rate for scenario {layout.name!r} (have {sorted(self.rates)})")
        return self.rates[layout.name]

    def exact_plan(self, layout: Layout, positions: np.ndarray, steps_left: int = core.EPISODE_STEPS) -> Plan:
        """The exact joint planner's shortest plan (searched once per state and step budget, then reused)."""
        key = (layout.name, tuple(np.asarray(positions).ravel().tolist()), steps_left)
        if key not in self._plans:  # the exact search is the cost; its plans are reused
            self._plans[key] = self._exact.make_plan(layout, positions, steps_left)
        return self._plans[key]

    def make_plan(self, layout: Layout, positions: np.ndarray, steps_left: int = core.EPISODE_STEPS,
                  seed: int | None = None) -> Plan:
        exact = self.exact_plan(layout, positions, steps_left)
        rate = self.rate(layout)
        actions = corrupt(exact.actions, rate, seed)
        changed = int((actions != exact.actions).sum())
        return Plan(actions, play(layout, positions, actions), self.name,
                    stats={"plan_steps": len(actions), "corrupted_actions": changed, "rate": rate})


LLAMA_RATES_FILE = Path(__file__).with_name("surrogate_llama_rates.json")
LLAMA_NAME = "surrogate-llama"
LLAMA_SALT = 0x11A3A  # the perfect-or-not draw's stream, apart from the corruption's
IMPERFECT_TRIES = 100  # corruption draws tried for an imperfect plan before the last one is taken
#: The authors' forced plan episodes (5-9) whose rows give each perfect-plan share.
FORCED_PLAN_EPISODES = 5
#: The rows behind a share of 0 that ``llama_shares`` assumes: the most the authors' logs can hold (5 x 12).
ZERO_SHARE_ROWS = FORCED_PLAN_EPISODES * AUTHORS_MARLIN_ROWS_PER_EPISODE[1]


def supported_share(perfect: int, plans: int) -> float:
    """The posterior mean of a plan source's probability of a perfect plan after ``perfect`` of ``plans`` were
    perfect, under the Jeffreys prior Beta(1/2, 1/2): ``(perfect + 1/2) / (plans + 1)``. Above 0 for 0 of n."""
    if not 0 <= perfect <= plans:
        raise ValueError(f"need 0 <= perfect <= plans, got {perfect} of {plans}")
    return (perfect + 0.5) / (plans + 1)


def llama_shares(rows: int = ZERO_SHARE_ROWS) -> dict[str, float]:
    """The perfect-plan share ``surrogate_llama`` draws per corridor (a rule fixed before its maze-like curve was seen).

    * Where the authors' forced-episode rows held perfect plans, their share (``AUTHORS_PERFECT_PLAN_SHARE``).
    * Where they held none (maze-like), not 0 but ``supported_share(0, n)``, the Jeffreys posterior mean, at the
      largest number of rows the logs can hold: ``n = FORCED_PLAN_EPISODES x 12`` (``AUTHORS_MARLIN_ROWS_PER_EPISODE``)
      = 60 (``rows``, ``ZERO_SHARE_ROWS``), which gives 1/122 = 0.0082.

    Why: 0 of n perfect plans is not a probability of 0, and under the authors' switch the difference is not one of
    degree. A perfect plan, once made for the start state, stays cached and plays every later switching
    episode (``AuthorsSwitch``), so at a share of exactly 0 it can never happen and at any share above 0 each run
    makes one eventually; the point estimate 0 decides the outcome rather than estimating it. The posterior mean is
    the standard estimate for a proportion that stays inside (0, 1). The row count is not recorded, only its bounds
    (10 to 60 rows), and rows that replay one cached plan are not independent plans, so the sample may be smaller
    still; of the values the bounds allow, n = 60 gives the smallest share (at n = 10: 1/22 = 0.045), the one least
    favourable to plans carrying the maze-like curve. Interior shares are kept: they already let the mechanism work.
    """
    return {scenario: share if share > 0 else supported_share(0, rows)
            for scenario, share in AUTHORS_PERFECT_PLAN_SHARE.items()}


def imperfect_target(scenario: str, rows: int = ZERO_SHARE_ROWS) -> float:
    """The mean an imperfect ``surrogate_llama`` plan must reach so that, with the perfect share (``llama_shares``),
    the LLM-only mean is the authors' value: ``(mean - share) / (1 - share)``."""
    share = llama_shares(rows)[scenario]
    return (AUTHORS_LLM_ONLY[scenario] - share) / (1 - share)


#: Earlier calibrations of ``surrogate_llama`` (rates and shares), before maze-like's share of 0 became
#: ``supported_share``: a run keyed by one of them is a run of today's plan source in every corridor whose rate and
#: share are still the same there (``LlamaSurrogatePlanner.equivalent_names``).
LLAMA_EARLIER: tuple[dict[str, dict[str, float]], ...] = (
    {"rates": {"asymmetrical_two_slot": 0.05957, "maze_like": 0.246094, "single_slot": 0.464844,
               "symmetrical_two_slot": 0.816406, "two_path": 0.354492},
     "shares": dict(AUTHORS_PERFECT_PLAN_SHARE)},
)


class LlamaSurrogatePlanner:
    """``PlanSource`` ``surrogate_llama``: perfect as often as the authors' Llama plans were, else imperfect. NOT an
    LLM.

    Per plan, a draw from the plan's seed decides: with the scenario's share (``llama_shares``: the authors' share,
    and above 0 where they saw no perfect plan) the exact plan; otherwise the exact plan corrupted at the scenario's
    rate (``corrupt``), drawn again until it is not perfect. The rates (``surrogate_llama_rates.json``) are calibrated
    so that the imperfect plans' mean makes the LLM-only mean the authors' (``imperfect_target``); written by
    ``python -m marlinkit calibrate-surrogate --kind llama``.

    The perfect-or-not draw depends on the plan's seed alone, not on the corridor: trainings of one seed in different
    corridors draw the same uniform for their k-th plan (common random numbers), so their first plans are perfect
    together whenever it falls below the smaller share. Each corridor's own share and mean are as calibrated.
    """

    def __init__(self, rates: dict[str, float] | None = None, shares: dict[str, float] | None = None):
        self.rates = dict(load_rates(LLAMA_RATES_FILE) if rates is None else rates)
        self.shares = dict(llama_shares() if shares is None else shares)
        record = json.dumps({"rates": self.rates, "shares": self.shares}, sort_keys=True)
        self.name = f"{LLAMA_NAME}[{hashlib.sha256(record.encode()).hexdigest()[:10]}]"
        self._corrupted = CalibratedSurrogatePlanner(self.rates)

    def equivalent_names(self, scenario: str) -> tuple[str, ...]:
        """The names of earlier calibrations (``LLAMA_EARLIER``) that make this planner's plans in ``scenario``: the
        same rate and share there, so every plan of every seed is the same (the draws depend on the plan's seed, the
        corridor's share and rate alone). Runs keyed by those names are runs of this planner in that corridor."""
        names = []
        for record in LLAMA_EARLIER:
            earlier = LlamaSurrogatePlanner(record["rates"], record["shares"])
            same = all(getattr(earlier, part).get(scenario) == getattr(self, part).get(scenario)
                       for part in ("rates", "shares"))
            if same and earlier.name != self.name:
                names.append(earlier.name)
        return tuple(names)

    def make_plan(self, layout: Layout, positions: np.ndarray, steps_left: int = core.EPISODE_STEPS,
                  seed: int | None = None) -> Plan:
        seed = 0 if seed is None else int(seed) % 2**56
        if layout.name not in self.shares:
            raise ValueError(f"no perfect-plan share for scenario {layout.name!r} (have {sorted(self.shares)})")
        if np.random.default_rng([LLAMA_SALT, seed]).random() < self.shares[layout.name]:
            actions = self._corrupted.exact_plan(layout, positions, steps_left).actions
            return Plan(actions, play(layout, positions, actions), self.name,
                        stats={"plan_steps": len(actions), "perfect_draw": True})
        plan = self._corrupted.make_plan(layout, positions, steps_left, seed)
        for attempt in range(1, IMPERFECT_TRIES):
            if plan.performance < 1:
                break
            plan = self._corrupted.make_plan(layout, positions, steps_left, seed * IMPERFECT_TRIES + attempt)
        return Plan(plan.actions, plan.performance, self.name, stats={**plan.stats, "perfect_draw": False})


def llm_only_mean(scenario: str, rate: float, trials: int, seed: int, kind: str = "mean") -> float:
    """The surrogate's LLM-only performance at ``rate``, measured by ``systems.plan_source_alone`` itself; ``kind``
    "llama": of ``surrogate_llama``'s imperfect plans alone (its perfect share set to 0)."""
    from marlinkit.marlin import systems

    source = (LlamaSurrogatePlanner({scenario: rate}, {scenario: 0.0}) if kind == "llama"
              else CalibratedSurrogatePlanner({scenario: rate}))
    return float(systems.plan_source_alone(scenario, seed, trials, source).performance.mean())


def calibrate(scenario: str, target: float, trials: int, seed: int, iterations: int = 10,
              kind: str = "mean") -> dict[str, Any]:
    """Bisection over the rate for LLM-only performance ``target`` (falls with the rate; draws shared across rates)."""
    low, high = 0.0, 1.0
    tried = {r: llm_only_mean(scenario, r, trials, seed, kind) for r in (low, high)}
    if not tried[high] <= target <= tried[low]:
        raise ValueError(f"{scenario}: target {target} outside what the surrogate reaches "
                         f"({tried[high]:.3f} at rate 1 .. {tried[low]:.3f} at rate 0)")
    for _ in range(iterations):
        middle = round((low + high) / 2, 6)
        tried[middle] = llm_only_mean(scenario, middle, trials, seed, kind)
        low, high = (middle, high) if tried[middle] > target else (low, middle)
    rate = min(tried, key=lambda r: (abs(tried[r] - target), r))
    return {"rate": rate, "llm_only": tried[rate], "target": target, "error": tried[rate] - target,
            "search": {f"{r:.6f}": round(p, 6) for r, p in sorted(tried.items())}}


def calibration_command(trials: int, seed: int, kind: str, rows: int) -> str:
    """The command line that recomputes a calibration file (recorded in it)."""
    command = f"python -m marlinkit calibrate-surrogate --trials {trials} --seed {seed}"
    command += " --kind llama" if kind == "llama" else ""
    return command + (f" --rows {rows}" if rows != ZERO_SHARE_ROWS else "")


def calibrate_file(trials: int = 400, seed: int = 0, kind: str = "mean", out: Path | None = None,
                   scenarios=LAYOUT_NAMES, rows: int = ZERO_SHARE_ROWS, log=print) -> Path:
    """Calibrate the corruption rates of ``scenarios`` and write them to ``out`` (default: the package data file of
    ``kind``); the other corridors keep their records in ``out``, made with the same trials and seed (a calibration
    depends on its own corridor's target alone). ``kind`` "mean": the calibrated surrogate (LLM-only mean);
    "llama": surrogate_llama (mean and perfect share, ``rows`` behind a share of 0)."""
    from marlinkit.files import atomic_write_text

    llama = kind == "llama"
    out = Path(out or (LLAMA_RATES_FILE if llama else RATES_FILE))
    records = {}
    if set(scenarios) != set(LAYOUT_NAMES):
        stored = out if out.exists() else LLAMA_RATES_FILE if llama else RATES_FILE  # a new file: the package's
        kept = json.loads(Path(stored).read_text())
        if (kept["trials"], kept["seed"]) != (trials, seed):
            raise ValueError(f"{out} was calibrated with other trials or seed than {trials}, {seed}: calibrate all")
        records = {k: v for k, v in kept["scenarios"].items() if k not in scenarios}
    for scenario in scenarios:
        target = imperfect_target(scenario, rows) if llama else AUTHORS_LLM_ONLY[scenario]
        records[scenario] = calibrate(scenario, target, trials, seed, kind=kind)
        log(f"{scenario} {({k: v for k, v in records[scenario].items() if k != 'search'})}")
    record = {"command": calibration_command(trials, seed, kind, rows),
              "target": "paper_values.AUTHORS_LLM_ONLY (the authors' Llama 3.1 8B LLM-only performance)",
              "protocol": "marlinkit.marlin.systems.plan_source_alone: plans from the start positions, seed * 1000003 "
                          "+ trial per plan",
              "trials": trials, "seed": seed, "scenarios": records}
    if llama:
        record.update(llama_record(records, scenarios, trials, seed, rows, log))
    atomic_write_text(out, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return out


def llama_record(records: dict, scenarios, trials: int, seed: int, rows: int, log=print) -> dict[str, Any]:
    """surrogate_llama's part of a calibration record: its target, its shares, and each corridor's whole plan source
    on a held-out seed (added to ``records``)."""
    from marlinkit.marlin import systems

    target = ("paper_values.AUTHORS_LLM_ONLY (the authors' Llama 3.1 8B LLM-only performance) with the perfect plans "
              "of surrogate_planner.llama_shares (paper_values.AUTHORS_PERFECT_PLAN_SHARE; "
              f"where it is 0, the Jeffreys posterior mean for 0 of {rows} rows): each rate "
              "calibrates the imperfect plans' mean to (mean - share) / (1 - share)")
    planner = LlamaSurrogatePlanner({k: v["rate"] for k, v in records.items()}, llama_shares(rows))
    for scenario in scenarios:
        alone = systems.plan_source_alone(scenario, seed + 1, trials, planner).performance
        records[scenario]["held_out"] = {"seed": seed + 1, "llm_only": round(float(alone.mean()), 6),
                                         "perfect_share": round(float((alone == 1).mean()), 6),
                                         "perfect_share_target": round(planner.shares[scenario], 6)}
        log(f"{scenario} {records[scenario]['held_out']}")
    return {"target": target, "shares": llama_shares(rows)}
