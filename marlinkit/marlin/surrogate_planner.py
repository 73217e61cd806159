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

    python -m marlinkit.marlin.surrogate_planner --trials 400 --seed 0

What it matches is the *mean* LLM-only performance from the start state; it does not imitate an
LLM's kind of mistakes, its plans from other states, or its cost.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, Layout
from marlinkit.envs.corridor.plans import Plan
from marlinkit.paper_values import AUTHORS_LLM_ONLY

RATES_FILE = Path(__file__).with_name("surrogate_planner_rates.json")
NAME = "calibrated-surrogate-planner"
SALT = 0x5A77  # keeps the corruption stream apart from every other use of the same seed
CALIBRATION_TOLERANCE = 0.05  # |LLM-only(surrogate) - target| a held-out seed must meet (tests/marlin/test_surrogate_planner.py)


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
    state = core.CorridorState(np.asarray(positions, dtype=np.int64).reshape(1, core.N_AGENTS, 2), np.zeros(1, np.int64))
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
                         f"recreate it with: python -m marlinkit.marlin.surrogate_planner") from error
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

    def make_plan(self, layout: Layout, positions: np.ndarray, steps_left: int = core.EPISODE_STEPS,
                  seed: int | None = None) -> Plan:
        key = (layout.name, tuple(np.asarray(positions).ravel().tolist()), steps_left)
        if key not in self._plans:  # the exact search is the cost; its plans are reused
            self._plans[key] = self._exact.make_plan(layout, positions, steps_left)
        exact = self._plans[key]
        rate = self.rate(layout)
        actions = corrupt(exact.actions, rate, seed)
        changed = int((actions != exact.actions).sum())
        return Plan(actions, play(layout, positions, actions), self.name,
                    stats={"plan_steps": len(actions), "corrupted_actions": changed, "rate": rate})


def llm_only_mean(scenario: str, rate: float, trials: int, seed: int) -> float:
    """The surrogate's LLM-only performance at ``rate``, measured by ``systems.plan_source_alone`` itself."""
    from marlinkit.marlin import systems

    return float(systems.plan_source_alone(scenario, seed, trials, CalibratedSurrogatePlanner({scenario: rate})).performance.mean())


def calibrate(scenario: str, target: float, trials: int, seed: int, iterations: int = 10) -> dict[str, Any]:
    """Bisection over the rate for LLM-only performance ``target`` (falls with the rate; draws shared across rates)."""
    low, high = 0.0, 1.0
    tried = {r: llm_only_mean(scenario, r, trials, seed) for r in (low, high)}
    if not tried[high] <= target <= tried[low]:
        raise ValueError(f"{scenario}: target {target} outside what the surrogate reaches "
                         f"({tried[high]:.3f} at rate 1 .. {tried[low]:.3f} at rate 0)")
    for _ in range(iterations):
        middle = round((low + high) / 2, 6)
        tried[middle] = llm_only_mean(scenario, middle, trials, seed)
        low, high = (middle, high) if tried[middle] > target else (low, middle)
    rate = min(tried, key=lambda r: (abs(tried[r] - target), r))
    return {"rate": rate, "llm_only": tried[rate], "target": target, "error": tried[rate] - target,
            "search": {f"{r:.6f}": round(p, 6) for r, p in sorted(tried.items())}}


def main(argv: list[str] | None = None) -> None:
    from marlinkit.files import atomic_write_text

    parser = argparse.ArgumentParser(description="calibrate the surrogate planner's corruption rates (writes the package data)")
    parser.add_argument("--trials", type=int, default=400, help="LLM-only trials per rate tried (default 400)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the calibration trials (default 0)")
    parser.add_argument("--out", type=Path, default=RATES_FILE)
    args = parser.parse_args(argv)
    scenarios = {}
    for scenario in LAYOUT_NAMES:
        scenarios[scenario] = calibrate(scenario, AUTHORS_LLM_ONLY[scenario], args.trials, args.seed)
        print(scenario, {k: v for k, v in scenarios[scenario].items() if k != "search"}, flush=True)
    record = {"command": f"python -m marlinkit.marlin.surrogate_planner --trials {args.trials} --seed {args.seed}",
              "target": "paper_values.AUTHORS_LLM_ONLY (the authors' Llama 3.1 8B LLM-only performance)",
              "protocol": "marlinkit.marlin.systems.plan_source_alone: plans from the start positions, seed * 1000003 + trial per plan",
              "trials": args.trials, "seed": args.seed, "scenarios": scenarios}
    atomic_write_text(args.out, json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
