"""MARLIN (paper Algorithm 1): MAPPO whose actions come from policy sampling or from a plan source.

Three systems per scenario: ``MARL`` (MAPPO alone), ``MARLIN`` (Algorithm 1 switching between the
policy and plans) and ``LLM-only`` (the plan source alone). The plan source is any
``PlanSource``; the default is the exact joint planner (perfect plans, not an LLM), the LLM
negotiation plugs in at the same place.

Protocol as we read it (the authors' public code): one training = ``n_envs`` (15) corridor copies in lock step
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
from typing import Any, Literal

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
    rule: Literal["paper", "code"] = "paper"
    """"paper": mean below the LLM-only value or perfect plan; "code": the authors' code, median below it or a
    plateau."""
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

    def __init__(self, layout: Layout, source: PlanSource, n_envs: int, llm_only: float, config: SwitchConfig,
                 seed: int,
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
            new = self.source.make_plan(self.layout, positions, core.EPISODE_STEPS - step,
                                        seed=self.seed * 1_000_003 + self.plans_made)
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
                                                     None if cached is None else cached.performance, self.llm_only,
                                                     self.config)
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
            info.append({"generator": self.first_generator[c], "toggled": self.toggled[c],
                         "plan_cache_hit": self.cache_hit[c]})
        return info


# The switch as the authors' public code runs it (rule "authors")


@dataclass(frozen=True)
class AuthorsSwitchConfig:
    """The generator switch of the authors' public code (``AuthorsSwitch``); its constants are theirs."""

    rule: str = "authors"
    """Always "authors" (``TrainingConfig.switch_rule`` picks this config)."""
    m: int = 5
    """Episodes 1..m-1 sample from the policy, episodes m..2m-1 follow plans (1-based, as the authors count)."""
    window: int = 5
    """p-bar is the median of this many last executed episodes, from a buffer that starts as zeros."""
    toggle_probability: float = 0.1
    """Chance per episode of switching generator at ``toggle_step`` (not in the forced plan episodes)."""
    toggle_step: int = core.EPISODE_STEPS // 2
    """Step of the possible toggle; a toggle to plans plans only the steps left but plays them by absolute step."""
    plateau_length: int = 25
    """p-bar values, one per switching episode, in the plateau test."""
    plateau_tolerance: float = 0.075
    """A plateau: every relative change between consecutive p-bar values within this, and their mean not 1."""
    last_switch_episode: int = 1625
    """After this 1-based episode the policy alone acts (no plans, no toggles)."""

    def __post_init__(self):
        if (self.rule != "authors" or self.m < 1 or self.window < 1 or self.plateau_length < 2
                or not 0 <= self.toggle_probability <= 1):
            raise ValueError(f"invalid authors' switch settings {self}")


def score_from(layout: Layout, positions: np.ndarray, actions: np.ndarray) -> float:
    """The score of ``actions`` played from ``positions``, each robot's progress counted from there (not from the
    layout's start): ``1 - d_end / d_from`` clipped at 0, and 1 for a robot that starts or ends on its goal."""
    arrays = core.layout_arrays(layout)
    state = core.CorridorState(np.asarray(positions, np.int64).reshape(1, core.N_AGENTS, 2).copy(),
                               np.zeros(1, np.int64))
    for joint in np.asarray(actions, np.int64):
        state = core.step(arrays, state, joint[None]).state
    d_from = np.abs(np.asarray(positions).reshape(core.N_AGENTS, 2) - arrays.goals).sum(-1)
    d_end = np.abs(state.pos[0] - arrays.goals).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        progress = np.where((d_from == 0) | (d_end == 0), 1.0, np.maximum(0.0, 1.0 - d_end / d_from))
    return float(progress.mean())


class AuthorsPlanCache:
    """One plan and its score per ``plan_key``; a new plan replaces one that scores no better (ties replace),
    and a score may be overwritten by what replaying the plan achieved (``update``)."""

    def __init__(self):
        self.entries: dict[tuple, tuple[np.ndarray, float]] = {}

    def get(self, key: tuple) -> tuple[np.ndarray | None, float]:
        """The cached actions and score, or (None, 0.0)."""
        return self.entries.get(key, (None, 0.0))

    def offer(self, key: tuple, actions: np.ndarray, score: float) -> None:
        if self.get(key)[1] <= score:
            self.entries[key] = (actions, score)

    def update(self, key: tuple, score: float) -> None:
        """Replace the score of the plan cached under ``key`` (the actions stay)."""
        if key in self.entries:
            self.entries[key] = (self.entries[key][0], score)


@dataclass
class _CopyState:
    """One copy's switch state across and within episodes (see ``AuthorsSwitch``)."""

    recent: deque  # the last ``window`` executed performances, zeros before the first
    p_bars: deque  # p-bar at the start of each switching episode, the last ``plateau_length``
    episode: int = 0  # finished episodes; the running one is ``episode + 1`` (1-based)
    last_performance: float | None = None
    use_plan: bool = False  # the authors' plan mode; kept across episodes (read by the score update)
    locked: bool = False  # no toggle this episode (forced plan episodes, or after a toggle)
    active: bool = False  # this episode lies in the switching range m..last_switch_episode
    plan: np.ndarray | None = None  # the actions plan mode plays, indexed by the episode's absolute step
    plan_score: float = 0.0
    plan_key: tuple | None = None  # key of the last plan made (the one a score update overwrites)
    start_key: tuple | None = None  # key of this episode's start state (where every plan is cached)
    p_bar: float = 0.0
    first: str = SAMPLING
    toggled: bool = False
    cache_hit: bool = False
    from_plan: bool = False  # this step's actions came from the plan
    plan_steps: int = 0


class AuthorsSwitch:
    """MARLIN's generator switch as the authors' public code runs it; the same interface as ``Algorithm1``.

    Per copy and episode (1-based ``e``), at step 0: for ``e < m`` and ``e > last_switch_episode`` the policy acts
    all episode. Otherwise the switch first overwrites the score of the last plan made with the performance the
    previous episode achieved, when that episode ended in plan mode and achieved something else; then records
    p-bar (median of the last ``window`` executed episodes, plans included, from a zero-filled buffer) for the
    plateau test; then picks plan mode if the cached plan of the start state scores exactly 1, else if ``e < 2m``
    (no toggle then), else if p-bar is below the LLM-only performance, else on a plateau (the last
    ``plateau_length`` p-bars all within ``plateau_tolerance`` relative change of the one before and not all 1);
    otherwise the policy.

    In plan mode a step plays the current plan when its score is above p-bar (strictly) or exactly 1; else at step
    0 a new plan is made from the start (cached when it scores above 0 and no worse than the cached one) and its
    first action played; later steps play the plan only if that new plan's score passes the same test, otherwise
    the policy acts. At ``toggle_step``, with ``toggle_probability``, an unlocked episode switches: from plans to
    the policy, or to a plan made from the current positions for the steps left. That plan is cached under the
    start state's key, its running score is set to 1, and it is played by the episode's absolute step, so past its
    length the robots WAIT.
    """

    def __init__(self, layout: Layout, source: PlanSource, n_envs: int, llm_only: float, config: AuthorsSwitchConfig,
                 seed: int,
                 plan_budget: int | None = None):
        if plan_budget is not None:
            raise ValueError("the authors' switch re-plans without limit: plan_budget must be None")
        self.layout, self.source, self.config, self.llm_only, self.seed = layout, source, config, llm_only, seed
        self.cache = AuthorsPlanCache()
        self.rng = np.random.default_rng((seed, 1))
        self.plans_made = 0
        self.copies = [_CopyState(deque([0.0] * config.window, maxlen=config.window),
                                  deque(maxlen=config.plateau_length))
                       for _ in range(n_envs)]

    def set_layout(self, layout: Layout, llm_only: float) -> None:
        """Switch to a changed environment; plans stay cached per layout (``plan_key``)."""
        self.layout, self.llm_only = layout, llm_only

    def p_bar(self, copy: int) -> float:
        return float(np.median(self.copies[copy].recent))

    def plateau(self, copy: int) -> bool:
        values = np.array(self.copies[copy].p_bars, float)
        if len(values) != self.config.plateau_length or values.mean() == 1:
            return False
        with np.errstate(divide="ignore", invalid="ignore"):
            changes = np.diff(values) / values[:-1]
        return bool(np.all(np.abs(changes) <= self.config.plateau_tolerance))

    def _make_plan(self, s: _CopyState, positions: np.ndarray, steps_left: int) -> None:
        """Plan from ``positions``; a plan scoring above 0 (measured from ``positions``) is cached under the start
        state's key and becomes the current plan."""
        self.plans_made += 1
        plan = self.source.make_plan(self.layout, positions, steps_left, seed=self.seed * 1_000_003 + self.plans_made)
        score = (float(plan.performance) if steps_left == core.EPISODE_STEPS
                 else score_from(self.layout, positions, plan.actions))
        if score > 0:
            self.cache.offer(s.start_key, plan.actions, score)
            s.plan, s.plan_score, s.plan_key = plan.actions, score, s.start_key

    def _start(self, c: int, positions: np.ndarray) -> None:
        s, config = self.copies[c], self.config
        e = s.episode + 1
        s.toggled = s.cache_hit = False
        s.plan_steps = 0
        s.active = config.m <= e <= config.last_switch_episode
        if not s.active:
            s.first = SAMPLING
            return
        s.locked = False
        if (s.last_performance is not None and s.use_plan and s.last_performance != s.plan_score
                and s.plan_key is not None):
            self.cache.update(s.plan_key, s.last_performance)
        s.p_bar = float(np.median(s.recent))
        s.p_bars.append(s.p_bar)
        s.start_key = plan_key(self.layout, positions)
        s.plan, s.plan_score = self.cache.get(s.start_key)
        if s.plan_score == 1:
            s.use_plan = True
        elif e < 2 * config.m:
            s.use_plan, s.locked = True, True
        elif s.p_bar < self.llm_only or self.plateau(c):
            s.use_plan = True
        else:
            s.use_plan = False
        s.first = PLAN if s.use_plan else SAMPLING

    def _plan_action(self, s: _CopyState, positions: np.ndarray, step: int) -> np.ndarray | None:
        """Plan mode's joint action at ``step``, or None where the policy acts."""
        if s.plan is not None and (s.plan_score > s.p_bar or s.plan_score == 1):
            s.cache_hit = s.cache_hit or step == 0
        elif step == 0:
            self._make_plan(s, positions, core.EPISODE_STEPS)
        else:
            return None
        if s.plan is None:
            return None
        return s.plan[step] if step < len(s.plan) else np.zeros(core.N_AGENTS, np.int64)  # past the plan: WAIT

    def __call__(self, state: core.CorridorState, sampled: np.ndarray) -> np.ndarray:
        actions = sampled.copy()
        for c, s in enumerate(self.copies):
            step = int(state.t[c])
            if step == 0:
                self._start(c, state.pos[c])
            s.from_plan = False
            if not s.active:
                continue
            if not s.locked and step == self.config.toggle_step and self.rng.random() < self.config.toggle_probability:
                s.locked, s.toggled = True, True
                s.use_plan = not s.use_plan
                if s.use_plan:
                    self._make_plan(s, state.pos[c], core.EPISODE_STEPS - step)
                    s.plan_score = 1.0
            if s.use_plan:
                planned = self._plan_action(s, state.pos[c], step)
                if planned is not None:
                    actions[c], s.from_plan = planned, True
                    s.plan_steps += 1
        return actions

    @property
    def generated(self) -> np.ndarray:
        """bool [B]: the copies whose actions of the last call came from a plan (WAITs past a plan's end included)."""
        return np.array([s.from_plan for s in self.copies])

    def end_episode(self, performance: np.ndarray) -> list[dict[str, Any]]:
        """Store each copy's executed performance (plans included); return what each copy did this episode."""
        info = []
        for s, p in zip(self.copies, performance):
            s.recent.append(float(p))
            s.last_performance = float(p)
            s.episode += 1
            info.append({"generator": s.first, "toggled": s.toggled, "plan_cache_hit": s.cache_hit,
                         "plan_steps": s.plan_steps})
        return info


def make_switch(layout: Layout, source: PlanSource, n_envs: int, llm_only: float,
                config: SwitchConfig | AuthorsSwitchConfig,
                seed: int, plan_budget: int | None = None) -> Algorithm1 | AuthorsSwitch:
    """MARLIN's generator switch for ``config``: ``AuthorsSwitch`` for the authors' rule, else ``Algorithm1``."""
    kind = AuthorsSwitch if isinstance(config, AuthorsSwitchConfig) else Algorithm1
    return kind(layout, source, n_envs, llm_only, config, seed, plan_budget)
