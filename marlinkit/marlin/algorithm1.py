"""MARLIN (paper Algorithm 1): MAPPO whose actions come from policy sampling or from a plan source.

Three systems per scenario: ``MARL`` (MAPPO alone), ``MARLIN`` (Algorithm 1 switching between the
policy and plans) and ``LLM-only`` (the plan source alone). The plan source is any
``PlanSource``; the default is the exact joint planner (perfect plans, not an LLM), the LLM
negotiation plugs in at the same place.

Protocol as we read it (FACTS §4): one training = ``n_envs`` (15) corridor copies in lock step
feeding one shared policy; "episode" counts per copy (the x-axis of Fig. 3); each copy runs
Algorithm 1 on its own performance history and all copies share the plan cache. Policy
checkpoints at given episodes are evaluated over ``eval_runs`` runs with actions *sampled* from
the policy (start and dynamics are deterministic, so greedy runs would all be identical); run
``r`` of a checkpoint uses random stream ``(seed, episode, r)`` for every system, which makes
MARL and MARLIN runs pairs for the paired t-test of Table I.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout
from marlinkit.envs.corridor.plans import Plan, PlanSource, plan_key

SYSTEMS = ("MARL", "MARLIN", "LLM-only")
SAMPLING, PLAN = "sampling", "plan"  # the paper's G_ADS and G_IAN


@dataclass(frozen=True)
class SwitchConfig:
    """Algorithm 1's generator switch."""

    m: int = 5
    """Initial episodes of sampling, then as many of plans (paper: m = 5)."""
    window: int = 5
    """Past episodes in the performance average (paper: 5)."""
    rule: str = "paper"
    """"paper": mean below the LLM-only value or perfect plan; "code": the authors' code, median below it or a plateau."""
    toggle_probability: float = 0.1
    """Chance per episode and copy of switching generator at ``toggle_step`` (paper: 10 %)."""
    toggle_step: int = core.EPISODE_STEPS // 2
    """Step of the possible toggle (paper: step_max / 2)."""
    plateau_tolerance: float = 0.01
    """"code" rule: a plateau is a window median within this of the previous window's, below 1."""

    def __post_init__(self):
        if self.rule not in ("paper", "code"):
            raise ValueError(f"switch rule must be 'paper' or 'code', got {self.rule!r}")
        if self.m < 0 or self.window < 1 or not 0 <= self.toggle_probability <= 1:
            raise ValueError(f"invalid switch settings {self}")


def recent_performance(history: list[float] | deque, config: SwitchConfig) -> float | None:
    """The paper's p-bar: mean (code rule: median) of the last ``window`` episodes; None without history."""
    recent = list(history)[-config.window:]
    if not recent:
        return None
    return float(np.median(recent) if config.rule == "code" else np.mean(recent))


def choose_generator(episode: int, history: list[float] | deque, plan_performance: float | None,
                     llm_only: float, config: SwitchConfig) -> str:
    """Algorithm 1, lines 7-13: the generator of 0-based ``episode`` of one copy, at step 0."""
    if episode < config.m:
        return SAMPLING
    if episode < 2 * config.m:
        return PLAN
    p_bar = recent_performance(history, config)
    if config.rule == "paper":
        return PLAN if plan_performance == 1.0 or p_bar < llm_only else SAMPLING
    previous = list(history)[-2 * config.window:-config.window]
    plateau = (len(previous) == config.window and p_bar < 1.0
               and abs(p_bar - float(np.median(previous))) <= config.plateau_tolerance)
    return PLAN if p_bar < llm_only or plateau else SAMPLING


class PlanCache:
    """Plans per ``plan_key``; a new plan replaces the cached one only when it performs better."""

    def __init__(self):
        self.plans: dict[tuple, Plan] = {}

    def get(self, key: tuple) -> Plan | None:
        return self.plans.get(key)

    def offer(self, key: tuple, plan: Plan) -> Plan:
        """Store ``plan`` if it beats the cached one; return the plan now cached."""
        cached = self.plans.get(key)
        if cached is None or plan.performance > cached.performance:
            self.plans[key] = plan
        return self.plans[key]


class Algorithm1:
    """The generator switch of every copy; called by the trainer each step as ``generator(state, sampled)``."""

    def __init__(self, layout: Layout, source: PlanSource, n_envs: int, llm_only: float, config: SwitchConfig, seed: int,
                 plan_budget: int | None = None):
        self.layout, self.source, self.config, self.llm_only = layout, source, config, llm_only
        self.cache = PlanCache()
        self.rng = np.random.default_rng((seed, 1))
        self.seed = seed
        self.plan_budget = plan_budget  # None: the paper's unlimited re-planning
        self.plans_made = 0
        self.history = [deque(maxlen=2 * config.window) for _ in range(n_envs)]
        self.episode = [0] * n_envs
        self.generator = [SAMPLING] * n_envs
        self.first_generator = [SAMPLING] * n_envs
        self.toggled = [False] * n_envs
        self.cache_hit = [False] * n_envs
        self.plan: list[np.ndarray | None] = [None] * n_envs
        self.plan_start = [0] * n_envs

    def set_layout(self, layout: Layout, llm_only: float) -> None:
        """Switch to a changed environment; plans stay cached per layout (``plan_key``), so none crosses over."""
        self.layout, self.llm_only = layout, llm_only

    def _load_plan(self, copy: int, positions: np.ndarray, step: int) -> bool:
        """Lines 5 and 14-15: the cached plan for this state, or a new one when none or worse than p-bar.

        With a plan budget, new plans are made only for an episode's start, while the budget lasts: there
        Algorithm 1 starts its plan episodes, and a plan of the start cells serves every copy and episode. A
        toggle at step 25, or a start once the budget is spent, uses the cached plan of its state as it is, and a
        state without one gets no plan (False: the copy keeps sampling). Otherwise the first episodes' toggles,
        each from a state of its own, would spend the budget before the forced plan episodes (Algorithm 1's
        episodes m..2m-1) asked for their plan. Without a budget (the paper) every miss re-plans.
        """
        key = plan_key(self.layout, positions)
        plan = self.cache.get(key)
        p_bar = recent_performance(self.history[copy], self.config)
        hit = plan is not None and (p_bar is None or plan.performance >= p_bar)
        if not hit and self.plan_budget is not None and (self.plans_made >= self.plan_budget or step > 0):
            if plan is None:
                return False
            hit = True
        if not hit:
            self.plans_made += 1
            new = self.source.make_plan(self.layout, positions, core.EPISODE_STEPS - step, seed=self.seed * 1_000_003 + self.plans_made)
            plan = self.cache.offer(key, new)
        self.cache_hit[copy] = self.cache_hit[copy] or hit
        self.plan[copy], self.plan_start[copy] = plan.actions, step
        return True

    def __call__(self, state: core.CorridorState, sampled: np.ndarray) -> np.ndarray:
        actions = sampled.copy()
        for c in range(len(actions)):
            step = int(state.t[c])
            if step == 0:
                cached = self.cache.get(plan_key(self.layout, state.pos[c]))
                self.generator[c] = choose_generator(self.episode[c], self.history[c],
                                                     None if cached is None else cached.performance, self.llm_only, self.config)
                self.cache_hit[c] = False
                if self.generator[c] == PLAN and not self._load_plan(c, state.pos[c], step):
                    self.generator[c] = SAMPLING
                self.first_generator[c], self.toggled[c] = self.generator[c], False
            elif step == self.config.toggle_step and self.rng.random() < self.config.toggle_probability:
                if self.generator[c] == PLAN:
                    self.generator[c], self.toggled[c] = SAMPLING, True
                elif self._load_plan(c, state.pos[c], step):
                    self.generator[c], self.toggled[c] = PLAN, True
            if self.generator[c] == PLAN:
                offset = step - self.plan_start[c]
                plan = self.plan[c]
                actions[c] = plan[offset] if offset < len(plan) else 0  # after the plan: WAIT
        return actions

    @property
    def generated(self) -> np.ndarray:
        """bool [B]: the copies whose actions of the last call came from the plan (read by the trainers'
        ``generated_steps`` setting; a plan that ran out drives its copy's WAITs too)."""
        return np.array([g == PLAN for g in self.generator])

    def end_episode(self, performance: np.ndarray) -> list[dict[str, Any]]:
        """Line 21: store each copy's performance; return what each copy did this episode."""
        info = []
        for c, p in enumerate(performance):
            self.history[c].append(float(p))
            self.episode[c] += 1
            info.append({"generator": self.first_generator[c], "toggled": self.toggled[c], "plan_cache_hit": self.cache_hit[c]})
        return info
