"""One training of one MARLIN system (MARL, MARLIN, LLM-only): its settings (``TrainingConfig``), the parts a
trainer takes, and its tables.

``system_run`` sets up a MARL or MARLIN training (``train_system`` runs it alone with ``mappo.train``;
``marlinkit.marlin.batched`` runs many together); ``llm_only`` plays the plan source alone.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, get_args

import numpy as np
import pandas as pd

from marlinkit.config_fields import check_choices, typed
from marlinkit.marlin import hardware
from marlinkit.progress import Progress
from marlinkit.paper_values import AUTHORS_LLM_ONLY
from marlinkit.algos import mappo
from marlinkit.algos import mappo_rollouts
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, Layout, get_layout
from marlinkit.envs.corridor.plans import PlanSource
from marlinkit.marlin.algorithm1 import (PLAN, SAMPLING, Algorithm1, AuthorsSwitch, AuthorsSwitchConfig, SwitchConfig,
                                         make_switch)

#: ``TrainingConfig.protocol``: "paper", every system on ``n_envs`` copies; "authors", the copies the authors' code
#: gives each system (``AUTHORS_COPIES``).
TrainingProtocol = Literal["paper", "authors"]
PROTOCOLS = get_args(TrainingProtocol)
#: ``TrainingConfig.switch_rule``: Algorithm 1 as printed, a simplified reading of the authors' code, or their code.
SwitchRule = Literal["paper", "code", "authors"]
#: Environment copies per training in the authors' code: MARLIN's plan sampler runs on one, MARL on 3 workers x 2.
AUTHORS_COPIES = {"MARLIN": 1, "MARL": 6}


@dataclass(frozen=True)
class TrainingConfig:
    """One MARL or MARLIN training's settings (what ``system_run`` and ``train_system`` read); the defaults
    are the paper's protocol (15 copies x 1600 episodes, checkpoints 100/850/1600 of 50 runs each)."""

    episodes: int = 1600
    """Training episodes per environment copy (paper: 1600)."""
    n_envs: int = 15
    """Environment copies feeding the one policy update stream."""
    checkpoints: tuple[int, ...] = (100, 850, 1600)
    """Episodes after which the policy is evaluated (paper Table I: 100, 850, 1600)."""
    eval_runs: int = 50
    """Sampled evaluation runs per checkpoint (paper: 50)."""
    mappo: mappo.MAPPOConfig = field(default_factory=mappo.MAPPOConfig)
    """MAPPO's settings (``marlinkit.algos.mappo.MAPPOConfig``; the default: the authors' RLlib settings). A mapping
    given here holds the settings that differ from the default."""
    switch_rule: SwitchRule = "paper"
    """Algorithm 1's switch: "paper" as printed, "code" a simplified reading of the authors' code (median, and a
    window-to-window plateau; ``algorithm1.SwitchConfig``), "authors" the authors' code step for step
    (``algorithm1.AuthorsSwitch``)."""
    protocol: TrainingProtocol = "paper"
    """``PROTOCOLS``: "paper", every system on ``n_envs`` copies; "authors", MARLIN on 1 copy and MARL on 6, as the
    authors' code runs them (``n_envs`` is then ignored; ``for_system``)."""
    llm_only_performance: tuple[tuple[str, float], ...] | None = None
    """Algorithm 1's LLM-only threshold per scenario, ``(scenario, value)`` pairs (a mapping given here becomes them);
    None: the authors' Llama 3.1 8B values (``AUTHORS_LLM_ONLY``)."""
    plan_budget: int | None = None
    """New plans a MARLIN training may ask its plan source for (None: the paper's unlimited re-planning)."""
    actuation_noise: hardware.ActuationNoise | None = None
    """The robots' actuation noise under which checkpoints are evaluated (Fig. 5; a mapping given here holds its
    fields); None: noiseless."""
    layout_schedule: tuple[tuple[int, str], ...] | None = None
    """``(k, layout)`` pairs: the layout after ``k`` episodes (the dynamic environment); None: one layout."""

    def __post_init__(self):
        object.__setattr__(self, "checkpoints", tuple(int(c) for c in self.checkpoints))
        object.__setattr__(self, "mappo", typed(mappo.MAPPOConfig, self.mappo, "mappo"))
        object.__setattr__(self, "actuation_noise",
                           typed(hardware.ActuationNoise, self.actuation_noise, "actuation_noise"))
        if self.llm_only_performance is not None:
            pairs = self.llm_only_performance
            if isinstance(pairs, Mapping):
                pairs = pairs.items()
            object.__setattr__(self, "llm_only_performance", tuple((str(k), float(v)) for k, v in pairs))
        if self.layout_schedule:
            object.__setattr__(self, "layout_schedule", tuple((int(k), str(name)) for k, name in self.layout_schedule))
        for name in ("episodes", "n_envs", "eval_runs"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not all(1 <= c <= self.episodes for c in self.checkpoints):
            raise ValueError(f"checkpoints {list(self.checkpoints)} must lie in 1..episodes={self.episodes}")
        if self.plan_budget is not None and int(self.plan_budget) < 1:
            raise ValueError(f"plan_budget must be None (unlimited) or >= 1, got {self.plan_budget}")
        self.switch_config()
        changes = self.layout_schedule or ()
        unknown = sorted({name for _, name in changes} - set(LAYOUT_NAMES))
        if unknown or not all(1 <= k < self.episodes for k, _ in changes):
            raise ValueError(f"layout_schedule {[list(c) for c in changes]} needs [episode, layout] pairs with "
                             f"1 <= episode < episodes and layouts from {list(LAYOUT_NAMES)}")
        check_choices(self)  # this class's switches and those of the classes built on it


    def switch_config(self) -> SwitchConfig | AuthorsSwitchConfig:
        return AuthorsSwitchConfig() if self.switch_rule == "authors" else SwitchConfig(rule=self.switch_rule)

    def for_system(self, system: str) -> "TrainingConfig":
        """The settings one run of ``system`` trains with: under the authors' protocol, its copy count."""
        if self.protocol != "authors" or system not in AUTHORS_COPIES:
            return self
        return dataclasses.replace(self, n_envs=AUTHORS_COPIES[system])

    def llm_only_threshold(self, scenario: str) -> float:
        """Algorithm 1's LLM-only performance of a scenario: the setting's value, else the authors' Llama 3.1 8B one."""
        values = {**AUTHORS_LLM_ONLY, **dict(self.llm_only_performance or ())}
        if scenario not in values:
            raise ValueError(f"no LLM-only performance for scenario {scenario!r}; set llm_only_performance")
        return float(values[scenario])


def layout_schedule(scenario: str, changes: list | None = None) -> Callable[[int], Layout]:
    """The layout of each 0-based episode: ``scenario``, then ``name`` after ``k`` episodes for each ``[k, name]``."""
    steps = sorted((int(k), get_layout(name)) for k, name in changes or [])
    first = get_layout(scenario)

    def layout_at(episode: int) -> Layout:
        return next((layout for k, layout in reversed(steps) if episode >= k), first)

    return layout_at


class SystemRun(NamedTuple):
    """One MARL or MARLIN training's parts: what the trainer (``mappo.train`` or ``mappo.train_runs``) takes, and its
    tables."""

    layout_at: Callable[[int], Layout]
    generator: Algorithm1 | AuthorsSwitch | None  # MARLIN's switch for this run (None: MARL)
    on_episode_end: mappo_rollouts.EpisodeCallback  # records episodes and evaluates checkpoints into ``tables``
    tables: Callable[[], tuple[pd.DataFrame, pd.DataFrame]]  # per-episode records and checkpoint evaluations


def system_run(scenario: str, system: str, seed: int, config: TrainingConfig,
               source: PlanSource | None = None) -> SystemRun:
    """Set up one training of MARL or MARLIN (``train_system`` runs it alone, ``marlin_batched`` with others)."""
    config = config.for_system(system)
    layout_at = layout_schedule(scenario, config.layout_schedule)
    n_envs, checkpoints = config.n_envs, set(config.checkpoints)
    noise = config.actuation_noise
    controller = None
    if system == "MARLIN":
        controller = make_switch(layout_at(0), source or ExactJointPlanner(), n_envs,
                                 config.llm_only_threshold(layout_at(0).name), config.switch_config(), seed,
                                 config.plan_budget)
    records, evaluations = [], []
    clock = [time.perf_counter()]
    episodes_done = Progress.episodes(config.episodes, f"{scenario} {system} seed {seed}")

    def on_episode_end(episode, agent, performance, team_return):
        now = time.perf_counter()
        layout = layout_at(episode - 1)
        info = (controller.end_episode(performance) if controller
                else [{"generator": SAMPLING, "toggled": False, "plan_cache_hit": False}] * n_envs)
        for c in range(n_envs):
            records.append({"scenario": scenario, "system": system, "seed": seed, "episode": episode, "env_copy": c,
                            "layout": layout.name, **info[c], "performance": float(performance[c]),
                            "return": float(team_return[c]), "steps": core.EPISODE_STEPS,
                            "wall_time_s": (now - clock[0]) / n_envs})
        if episode in checkpoints:
            runs_, stream = config.eval_runs, (seed, episode)
            actuate = noise.actuator(stream, runs_) if noise else None
            scores = mappo.evaluate(agent, layout, runs_, stream, actuate)
            evaluations.extend({"scenario": scenario, "system": system, "seed": seed, "checkpoint": episode,
                                "layout": layout.name, "run": r, "performance": float(s)} for r, s in enumerate(scores))
        if controller:
            controller.set_layout(layout_at(episode), config.llm_only_threshold(layout_at(episode).name))
        episodes_done.update()
        clock[0] = time.perf_counter()

    return SystemRun(layout_at, controller, on_episode_end,
                     lambda: (episodes_done.close(), pd.DataFrame(records), pd.DataFrame(evaluations))[1:])


def episodes_to_train(episodes: int, stop_after: int | None) -> int:
    """Episodes a trainer plays: all ``episodes`` of the schedule, or its first ``stop_after`` (a prefix of the full
    run: every setting stays the full run's, so the prefix's records are the full run's first ones)."""
    if stop_after is not None and int(stop_after) < 1:
        raise ValueError(f"stop_after must be None or >= 1, got {stop_after}")
    return episodes if stop_after is None else min(episodes, int(stop_after))


def train_system(scenario: str, system: str, seed: int, config: TrainingConfig,
                 source: PlanSource | None = None, stop_after: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train MARL or MARLIN once; return per-episode records and checkpoint evaluations.

    ``config.layout_schedule`` changes the layout during training (``layout_schedule``);
    ``config.actuation_noise`` evaluates checkpoints under ``hardware.ActuationNoise``.
    ``stop_after``: play only the schedule's first episodes (``episodes_to_train``; ``make verify PRESET=paper``).
    """
    run = system_run(scenario, system, seed, config, source)
    config = config.for_system(system)
    mappo.train(config.mappo, run.layout_at, n_envs=config.n_envs,
                episodes=episodes_to_train(config.episodes, stop_after), seed=seed, generator=run.generator,
                on_episode_end=run.on_episode_end)
    return run.tables()


def plan_source_alone(scenario: str, seed: int, trials: int, source: PlanSource | None = None,
                      noise: hardware.ActuationNoise | None = None) -> pd.DataFrame:
    """The plan source alone: ``trials`` plans from the start, each played out on the core.

    With ``noise`` each trial runs on noisy robots and re-plans after a deviation.
    """
    layout, source = get_layout(scenario), source or ExactJointPlanner()
    arrays = core.layout_arrays(layout)
    rows = []
    trials_done = Progress.episodes(trials, f"{scenario} LLM-only seed {seed}", unit="trials")
    for trial in range(trials):
        started = time.perf_counter()
        if noise:
            plan_seed = (seed * 1_000_003 + trial) * core.EPISODE_STEPS
            performance, total, _ = hardware.play_plans_under_noise(layout, source, noise, (seed, trial),
                                                                    plan_seed=plan_seed)
        else:
            plan = source.make_plan(layout, np.asarray(layout.starts), core.EPISODE_STEPS,
                                    seed=seed * 1_000_003 + trial)
            padded = np.zeros((core.EPISODE_STEPS, core.N_AGENTS), np.int64)
            padded[:len(plan.actions)] = plan.actions[:core.EPISODE_STEPS]
            end, rewards = core.rollout(arrays, padded)
            performance, total = float(core.performance(arrays, end)[0]), float(rewards.sum())
        rows.append({"scenario": scenario, "system": "LLM-only", "seed": seed, "episode": trial + 1, "env_copy": 0,
                     "layout": scenario, "generator": PLAN, "toggled": False, "plan_cache_hit": False,
                     "performance": performance, "return": total, "steps": core.EPISODE_STEPS,
                     "wall_time_s": time.perf_counter() - started})
        trials_done.update()
    trials_done.close()
    return pd.DataFrame(rows)
