"""MARLIN (paper Algorithm 1): MAPPO whose actions come from policy sampling or from a plan source.

Three systems per scenario: ``MARL`` (MAPPO alone), ``MARLIN`` (Algorithm 1 switching between the
policy and plans) and ``LLM-only`` (the plan source alone). The plan source is any
``PlanSource``; the default is the exact joint planner (an upper bound, not an LLM), the LLM
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

import dataclasses
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from marlinkit import executors, paths, presets, runs
from marlinkit.marlin import hardware
from marlinkit.progress import Progress
from marlinkit.paper_values import AUTHORS_LLM_ONLY, MARLIN_TABLE1
from marlinkit.algos import mappo
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, Layout, get_layout
from marlinkit.envs.corridor.plans import Plan, PlanSource, plan_key
from marlinkit.llm import config as llm_config
from marlinkit.llm.cache import transcript_context

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

        With the plan budget spent, the cached plan is used as it is, and a state without one gets
        no plan (False: the copy keeps sampling).
        """
        key = plan_key(self.layout, positions)
        plan = self.cache.get(key)
        p_bar = recent_performance(self.history[copy], self.config)
        hit = plan is not None and (p_bar is None or plan.performance >= p_bar)
        if not hit and self.plan_budget is not None and self.plans_made >= self.plan_budget:
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

    def end_episode(self, performance: np.ndarray) -> list[dict[str, Any]]:
        """Line 21: store each copy's performance; return what each copy did this episode."""
        info = []
        for c, p in enumerate(performance):
            self.history[c].append(float(p))
            self.episode[c] += 1
            info.append({"generator": self.first_generator[c], "toggled": self.toggled[c], "plan_cache_hit": self.cache_hit[c]})
        return info


# ---------------------------------------------------------------------------------------------
# One run of one system


def _settings_parts(settings: dict[str, Any]) -> tuple[mappo.MAPPOConfig, SwitchConfig]:
    overrides = settings.get("mappo") or {}
    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(mappo.MAPPOConfig)})
    if unknown:
        raise ValueError(f"unknown mappo setting(s) {unknown}; see marlinkit.algos.mappo.MAPPOConfig")
    return mappo.MAPPOConfig(**overrides), SwitchConfig(rule=settings.get("switch_rule", "paper"))


def llm_only_threshold(settings: dict[str, Any], scenario: str) -> float:
    """Algorithm 1's LLM-only performance of a scenario: the setting's value, else the authors' Llama 3.1 8B one."""
    values = {**AUTHORS_LLM_ONLY, **(settings.get("llm_only_performance") or {})}
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
    """One MARL or MARLIN training's parts: what a trainer (``mappo.train`` or ``mappo_batched.train``) takes, and its tables."""

    layout_at: Callable[[int], Layout]
    generator: Algorithm1 | None  # MARLIN's switch for this run (None: MARL)
    on_episode_end: mappo.EpisodeCallback  # records episodes and evaluates checkpoints into ``tables``
    tables: Callable[[], tuple[pd.DataFrame, pd.DataFrame]]  # per-episode records and checkpoint evaluations


def system_run(scenario: str, system: str, seed: int, settings: dict[str, Any], source: PlanSource | None = None) -> SystemRun:
    """Set up one training of MARL or MARLIN (``train_system`` runs it alone, ``marlin_batched`` with others)."""
    layout_at = layout_schedule(scenario, settings.get("layout_schedule"))
    _, switch = _settings_parts(settings)
    n_envs, checkpoints = settings["n_envs"], set(settings["checkpoints"])
    noise = settings.get("actuation_noise")
    controller = None
    if system == "MARLIN":
        controller = Algorithm1(layout_at(0), source or ExactJointPlanner(), n_envs, llm_only_threshold(settings, layout_at(0).name),
                                switch, seed, settings.get("plan_budget"))
    records, evaluations = [], []
    clock = [time.perf_counter()]
    episodes_done = Progress.episodes(settings["episodes"], f"{scenario} {system} seed {seed}")

    def on_episode_end(episode, agent, performance, team_return):
        now = time.perf_counter()
        layout = layout_at(episode - 1)
        info = controller.end_episode(performance) if controller else [{"generator": SAMPLING, "toggled": False, "plan_cache_hit": False}] * n_envs
        for c in range(n_envs):
            records.append({"scenario": scenario, "system": system, "seed": seed, "episode": episode, "env_copy": c, "layout": layout.name,
                            **info[c], "performance": float(performance[c]), "return": float(team_return[c]),
                            "steps": core.EPISODE_STEPS, "wall_time_s": (now - clock[0]) / n_envs})
        if episode in checkpoints:
            runs_, stream = settings["eval_runs"], (seed, episode)
            actuate = hardware.ActuationNoise(**noise).actuator(stream, runs_) if noise else None
            scores = mappo.evaluate(agent, layout, runs_, stream, actuate)
            evaluations.extend({"scenario": scenario, "system": system, "seed": seed, "checkpoint": episode, "layout": layout.name,
                                "run": r, "performance": float(s)} for r, s in enumerate(scores))
        if controller:
            controller.set_layout(layout_at(episode), llm_only_threshold(settings, layout_at(episode).name))
        episodes_done.update()
        clock[0] = time.perf_counter()

    return SystemRun(layout_at, controller, on_episode_end, lambda: (episodes_done.close(), pd.DataFrame(records), pd.DataFrame(evaluations))[1:])


def train_system(scenario: str, system: str, seed: int, settings: dict[str, Any],
                 source: PlanSource | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train MARL or MARLIN once; return per-episode records and checkpoint evaluations.

    ``settings["layout_schedule"]`` changes the layout during training (``layout_schedule``);
    ``settings["actuation_noise"]`` evaluates checkpoints under ``hardware.ActuationNoise``.
    """
    run = system_run(scenario, system, seed, settings, source)
    config, _ = _settings_parts(settings)
    mappo.train(config, run.layout_at, n_envs=settings["n_envs"], episodes=settings["episodes"], seed=seed,
                generator=run.generator, on_episode_end=run.on_episode_end)
    return run.tables()


def llm_only(scenario: str, seed: int, trials: int, source: PlanSource | None = None,
             noise: dict[str, float] | None = None) -> pd.DataFrame:
    """The plan source alone: ``trials`` plans from the start, each played out on the core.

    With ``noise`` (``hardware.ActuationNoise`` settings) each trial runs on noisy robots and re-plans after a deviation.
    """
    layout, source = get_layout(scenario), source or ExactJointPlanner()
    arrays = core.layout_arrays(layout)
    rows = []
    for trial in range(trials):
        started = time.perf_counter()
        if noise:
            performance, total, _ = hardware.play_plans_under_noise(layout, source, hardware.ActuationNoise(**noise), (seed, trial),
                                                                    plan_seed=(seed * 1_000_003 + trial) * core.EPISODE_STEPS)
        else:
            plan = source.make_plan(layout, np.asarray(layout.starts), core.EPISODE_STEPS, seed=seed * 1_000_003 + trial)
            padded = np.zeros((core.EPISODE_STEPS, core.N_AGENTS), np.int64)
            padded[:len(plan.actions)] = plan.actions[:core.EPISODE_STEPS]
            end, rewards = core.rollout(arrays, padded)
            performance, total = float(core.performance(arrays, end)[0]), float(rewards.sum())
        rows.append({"scenario": scenario, "system": "LLM-only", "seed": seed, "episode": trial + 1, "env_copy": 0, "layout": scenario,
                     "generator": PLAN, "toggled": False, "plan_cache_hit": False, "performance": performance, "return": total,
                     "steps": core.EPISODE_STEPS, "wall_time_s": time.perf_counter() - started})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# The grid runner


#: "one-at-a-time": each run in its own job (``mappo.train``); "batched": a worker's runs as one stacked computation
#: (``marlinkit.marlin.batched``; a run's numbers do not depend on its batch partners, but differ from mappo.train's in the last bits).
TRAINERS = ("one-at-a-time", "batched")


class Results(NamedTuple):
    episodes: pd.DataFrame  # one row per episode and copy (all systems)
    evaluations: pd.DataFrame  # one row per checkpoint evaluation run (MARL, MARLIN)


def validate_settings(settings: dict[str, Any]) -> None:
    """Fail before any compute on settings that cannot run."""
    unknown = sorted(set(settings["scenarios"]) - set(LAYOUT_NAMES))
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; choose from {list(LAYOUT_NAMES)}")
    bad = sorted(set(settings.get("systems", SYSTEMS)) - set(SYSTEMS))
    if bad:
        raise ValueError(f"unknown system(s) {bad}; choose from {list(SYSTEMS)}")
    if not all(1 <= c <= settings["episodes"] for c in settings["checkpoints"]):
        raise ValueError(f"checkpoints {settings['checkpoints']} must lie in 1..episodes={settings['episodes']}")
    for key in ("episodes", "n_envs", "eval_runs", "llm_only_trials", "workers"):
        if int(settings[key]) < 1:
            raise ValueError(f"{key} must be >= 1, got {settings[key]}")
    if settings.get("trainer", "one-at-a-time") not in TRAINERS:
        raise ValueError(f"trainer must be one of {TRAINERS}, got {settings['trainer']!r}")
    if settings.get("batch_runs") is not None and int(settings["batch_runs"]) < 1:
        raise ValueError(f"batch_runs must be None (one batch per worker) or >= 1, got {settings['batch_runs']}")
    if settings.get("plan_budget") is not None and int(settings["plan_budget"]) < 1:
        raise ValueError(f"plan_budget must be None (unlimited) or >= 1, got {settings['plan_budget']}")
    _settings_parts(settings)
    executors.check_executor(settings.get("executor", "local"), settings["workers"])
    changes = settings.get("layout_schedule") or []
    unknown = sorted({name for _, name in changes} - set(LAYOUT_NAMES))
    if unknown or not all(1 <= int(k) < settings["episodes"] for k, _ in changes):
        raise ValueError(f"layout_schedule {changes} needs [episode, layout] pairs with 1 <= episode < episodes "
                         f"and layouts from {list(LAYOUT_NAMES)}")
    if settings.get("actuation_noise"):
        hardware.ActuationNoise(**settings["actuation_noise"])
    for name in {*settings["scenarios"], *(name for _, name in changes)}:
        llm_only_threshold(settings, name)


def job_config(scenario: str, system: str, seed: int, settings: dict[str, Any], source_name: str) -> dict[str, Any]:
    """Everything that shapes one run's numbers (its cache key)."""
    config, switch = _settings_parts(settings)
    base = {"scenario": scenario, "system": system, "seed": seed}
    # Optional settings enter the key only when set, so runs made before they existed stay valid.
    if settings.get("actuation_noise"):
        base["actuation_noise"] = dict(settings["actuation_noise"])
    if system == "LLM-only":
        return {**base, "trials": settings["llm_only_trials"], "plan_source": source_name}
    base.update(episodes=settings["episodes"], n_envs=settings["n_envs"], checkpoints=sorted(settings["checkpoints"]),
                eval_runs=settings["eval_runs"], mappo=dataclasses.asdict(config))
    if settings.get("trainer", "one-at-a-time") != "one-at-a-time":  # its numbers differ from mappo.train's in the last bits
        base["trainer"] = settings["trainer"]
    if settings.get("layout_schedule"):
        base["layout_schedule"] = [[int(k), name] for k, name in settings["layout_schedule"]]
    if system == "MARLIN":
        base.update(switch=dataclasses.asdict(switch), llm_only_performance=llm_only_threshold(settings, scenario),
                    plan_source=source_name)
        if settings.get("plan_budget") is not None:
            base["plan_budget"] = int(settings["plan_budget"])
        if settings.get("layout_schedule"):
            base["llm_only_performance_after"] = {name: llm_only_threshold(settings, name) for _, name in settings["layout_schedule"]}
    return base


def system_tag(system: str, source_name: str) -> str:
    """The system part of a run name; runs using another plan source than the exact planner name it,
    so that switching sources keeps both sets of results instead of overwriting one with the other."""
    tag = system.replace("-", "_").lower()
    if system == "MARL" or source_name == ExactJointPlanner.name:
        return tag
    return f"{tag}-{llm_config.slug(source_name.split('[')[0])}"


def _run_batch(batch: list[tuple[str, dict[str, Any]]], settings: dict[str, Any],
               source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """Several MARL/MARLIN runs trained together by the batched trainer (one torch thread); their tables to save."""
    import torch

    from marlinkit.marlin import batched as marlin_batched

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        results = marlin_batched.train_systems([(c["scenario"], c["system"], c["seed"]) for _, c in batch], settings, source)
        share = len(batch)  # each run's share of the batch's time
        provenance = {"wall_time_s": (time.perf_counter() - started) / share, "cpu_time_s": (time.process_time() - cpu_started) / share,
                      "engine": "corridor core (numpy)", "trainer": f"batched ({len(batch)} runs)"}
    finally:
        torch.set_num_threads(threads)
    tables = []
    for (name, config), (episodes, evaluations) in zip(batch, results):
        tables += [(name + "__eval", evaluations, {}), (name, episodes, {**provenance, "plan_source": config.get("plan_source")})]
    return tables


def _run_job(name: str, config: dict[str, Any], settings: dict[str, Any],
             source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """One run on any executor (one torch thread): train or plan; return its tables and provenance to save.

    The caller writes the files, so executors on other machines need no shared filesystem.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with transcript_context(run=f"MARLIN {name}"):  # a transcript miss or damaged transcript names the run
            return _run_tables(name, config, settings, source)
    finally:
        torch.set_num_threads(threads)


def _run_tables(name: str, config: dict[str, Any], settings: dict[str, Any],
                source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """Train or plan one run: its tables (the episode table last) and provenance."""
    started, cpu_started = time.perf_counter(), time.process_time()
    tables = []
    if config["system"] == "LLM-only":
        episodes = llm_only(config["scenario"], config["seed"], config["trials"], source, settings.get("actuation_noise"))
    else:
        episodes, evaluations = train_system(config["scenario"], config["system"], config["seed"], settings, source)
        tables.append((name + "__eval", evaluations, {}))
    tables.append((name, episodes, {"wall_time_s": time.perf_counter() - started, "cpu_time_s": time.process_time() - cpu_started,
                                    "engine": "corridor core (numpy)", "plan_source": config.get("plan_source")}))
    return tables


def training_batches(trained: list[tuple[str, dict[str, Any]]], workers: int, batch_runs: int) -> list[list]:
    """Cut the trainings of a grid into batches for the batched trainer: at least one per worker, at most
    ``batch_runs`` runs each, seed by seed (a batch's runs are saved when it finishes, so a long grid whose
    batches hold one seed each resumes seed by seed). A run's numbers do not depend on its batch."""
    ordered = sorted(trained, key=lambda job: job[1]["seed"])  # stable: scenario and system order kept within a seed
    if not ordered:
        return []
    count = min(len(ordered), max(workers, -(-len(ordered) // max(int(batch_runs), 1))))
    size, extra = divmod(len(ordered), count)
    batches, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        batches.append(ordered[start:end])
        start = end
    return batches


def run_grid(settings: dict[str, Any], preset: str, source: PlanSource | None = None, root: Path | None = None,
             progress: bool = True) -> Results:
    """Run (or load) every scenario x system x seed of ``settings``; finished runs are never redone.

    Missing runs go to ``settings["executor"]`` ("local" processes or "ray", see ``marlinkit.executors``)
    with ``workers`` at a time; each run's files are written here as soon as it finishes.
    """
    validate_settings(settings)
    source_name = (source or ExactJointPlanner()).name
    root = Path(root) if root else paths.results_dir("marlin", preset)
    store = runs.ResultStore(root)
    jobs = [(runs.run_name(sc, system_tag(sy, source_name), f"seed{se}"), job_config(sc, sy, se, settings, source_name))
            for sc in settings["scenarios"] for sy in settings.get("systems", SYSTEMS) for se in settings["seeds"]]
    todo = [(name, config) for name, config in jobs
            if not (store.is_complete(name, config)
                    and (config["system"] == "LLM-only" or store.is_complete(name + "__eval", config)))]

    configs = dict(todo)

    def save(tables: list) -> None:
        for table_name, table, provenance in tables:  # the episode table last: its sidecar marks the run complete
            store.save(table_name, table, configs[table_name.removesuffix("__eval")], **provenance)

    executor, workers = settings.get("executor", "local"), settings["workers"]
    batched = settings.get("trainer", "one-at-a-time") == "batched"
    single = [(name, config) for name, config in todo if not batched or config["system"] == "LLM-only"]
    with transcript_context(preset=preset):  # a transcript miss's recording hint names the preset
        executors.run_jobs(_run_job, [(name, config, settings, source) for name, config in single], executor, workers,
                           settings.get("ray_address"), progress, "MARLIN runs", on_result=lambda _, tables: save(tables))
        if batched:  # the trainings as one stacked computation per worker (marlinkit.marlin.batched)
            trained = [(name, config) for name, config in todo if config["system"] != "LLM-only"]
            batches = training_batches(trained, workers, settings.get("batch_runs") or len(trained))
            executors.run_jobs(_run_batch, [(batch, settings, source) for batch in batches], executor, workers,
                               settings.get("ray_address"), progress, "MARLIN batches", on_result=lambda _, tables: save(tables))
    episodes = pd.concat([store.load(name) for name, _ in jobs], ignore_index=True)
    evaluations = [store.load(name + "__eval") for name, config in jobs if config["system"] != "LLM-only"]
    return Results(episodes, pd.concat(evaluations, ignore_index=True) if evaluations else pd.DataFrame())


#: MARLIN's plan sources: the calibrated surrogate planner (not an LLM; the quick and paper presets'
#: default), the configured LLM's negotiation, and the exact joint planner (a perfect plan source).
PLAN_SOURCES = ("surrogate", "llm", "exact")
SURROGATE_LABEL = "calibrated surrogate planner (exact plans corrupted to the authors' Llama 3.1 8B LLM-only performance; NOT an LLM)"
#: File-name suffix of each plan source's Fig. 3 and Table I outputs.
PLAN_SOURCE_SUFFIX = {"surrogate": "", "llm": "__llm", "exact": "__exact_planner"}


class Training(NamedTuple):
    results: Results
    settings: dict[str, Any]  # the marlin_training settings the runs used (thresholds filled in)
    plan_source: str  # how figures name the plan source


def plan_source_settings(preset: str, section: str, plan_source: str | None = None,
                         **overrides: Any) -> tuple[str, dict[str, Any], PlanSource | None, str]:
    """The plan source of a MARLIN grid (``plan_source`` or the section's ``plan_source``), its settings and figure label.

    A non-LLM source costs no LLM time, so its runs re-plan without limit (``plan_budget`` None, the paper's
    rule); ``plan_budget`` limits the LLM source only.
    """
    settings = presets.get(preset, section, **overrides)
    plan_source = plan_source or settings.get("plan_source") or "exact"
    if plan_source not in PLAN_SOURCES:
        raise ValueError(f"plan_source must be one of {PLAN_SOURCES}, got {plan_source!r}")
    settings["plan_source"] = plan_source
    if plan_source == "llm":
        return plan_source, settings, None, "llm"
    settings = {**settings, "plan_budget": None}
    if plan_source == "exact":
        return plan_source, settings, None, f"{ExactJointPlanner.name} (a perfect plan source, not an LLM)"
    from marlinkit.algos.surrogate_planner import CalibratedSurrogatePlanner

    source = CalibratedSurrogatePlanner()
    return plan_source, settings, source, SURROGATE_LABEL


def run_training(preset: str, plan_source: str | None = None, llm: str | None = None, progress: bool = True,
                 **overrides: Any) -> Training:
    """The runs behind Fig. 3 and Table I: MARL and MARLIN per scenario and seed, and the LLM-only system.

    ``plan_source`` (default: the preset's ``marlin_training.plan_source``):
    ``"surrogate"``: the calibrated surrogate planner (``marlinkit.algos.surrogate_planner``, not an LLM) with
    the authors' Llama 3.1 8B thresholds, which its LLM-only performance is calibrated to.
    ``"llm"``: MARLIN negotiates with the configured LLM (``llm``, else ``$MARLINKIT_LLM``, else
    smollm2) by the ``llm_only`` preset section's protocol, behind its transcript cache; Algorithm 1's
    threshold and the LLM-only box are that LLM's own LLM-only trials (``marlinkit.marlin.llm_only``, the
    runs of notebooks/marlin/llm_only). ``"exact"``: the exact joint planner, a perfect plan source and not
    an LLM, with the authors' Llama 3.1 8B thresholds.
    """
    plan_source, settings, source, label = plan_source_settings(preset, "marlin_training", plan_source, **overrides)
    if plan_source != "llm":
        return Training(run_grid(settings, preset, source=source, progress=progress), settings, label)
    from marlinkit.marlin import llm_only as experiments

    protocol = presets.get(preset, "llm_only")
    missing = sorted(set(settings["scenarios"]) - set(protocol["scenarios"]))
    if missing:
        raise ValueError(f"preset {preset!r}: the llm_only section has no trials for {missing}; "
                         "Algorithm 1 needs that LLM's LLM-only performance for every trained scenario")
    source = experiments.negotiator(protocol, llm, purpose="marlin_training")
    validate_settings(settings)
    trials = experiments.run_llm_only(preset, llm, progress=progress)
    measured = trials.groupby("scenario").performance.mean().to_dict()
    settings = {**settings, "systems": ["MARL", "MARLIN"],
                "llm_only_performance": settings["llm_only_performance"] or {s: measured[s] for s in settings["scenarios"]}}
    results = run_grid(settings, preset, source=source, progress=progress)
    llm_only_rows = pd.DataFrame({
        "scenario": trials.scenario, "system": "LLM-only", "seed": trials.seed, "episode": trials.trial + 1, "env_copy": 0,
        "layout": trials.scenario, "generator": PLAN, "toggled": False, "plan_cache_hit": False,
        "performance": trials.performance, "steps": core.EPISODE_STEPS, "wall_time_s": trials.seconds})
    llm_only_rows = llm_only_rows[llm_only_rows.scenario.isin(settings["scenarios"])]
    episodes = pd.concat([results.episodes, llm_only_rows], ignore_index=True)
    return Training(Results(episodes, results.evaluations), settings,
                    f"LLM negotiation, {llm_config.label(source.backend)}")


# ---------------------------------------------------------------------------------------------
# Figure 3 and Table I

SIGNIFICANCE = 0.001  # Table I bolds p < 0.001
SEED_SIGNIFICANCE = 0.05  # the across-seed test, with 3-5 seeds, at the conventional level


def table1(evaluations: pd.DataFrame, checkpoints: list[int]) -> pd.DataFrame:
    """Mean checkpoint performance of MARL and MARLIN with two tests, and the over-seed spread.

    ``p_value``: paired t-test over the evaluation runs sharing (seed, run): the unit is one evaluation
    run of the trained policies, so it measures the evaluation noise of those policies, not how much
    training on another seed would change them. ``p_value_seeds``: paired t-test over the per-seed means
    (the seed is the unit; NaN with fewer than 2 seeds). ``*_seed_sd``: standard deviation over seeds of
    the per-seed means; ``diff_ci_low/high``: 95 % t interval of the mean MARLIN - MARL difference over
    seeds. The i-th checkpoint is set beside the paper's i-th column (episodes 100, 850, 1600).
    """
    from scipy import stats as scipy_stats

    from marlinkit import stats

    paper_episodes = (100, 850, 1600)
    rows = []
    for scenario, group in evaluations.groupby("scenario", sort=False):
        for i, checkpoint in enumerate(sorted(checkpoints)):
            at = group[group.checkpoint == checkpoint]
            pairs = at[at.system == "MARL"].merge(at[at.system == "MARLIN"], on=["seed", "run"], suffixes=("_marl", "_marlin"))
            test = stats.paired_ttest(pairs.performance_marl, pairs.performance_marlin)
            per_seed = pairs.groupby("seed")[["performance_marl", "performance_marlin"]].mean()
            n_seeds = len(per_seed)
            difference = per_seed.performance_marlin - per_seed.performance_marl
            if n_seeds >= 2:
                seed_test = stats.paired_ttest(per_seed.performance_marl, per_seed.performance_marlin)
                half = float(scipy_stats.t.ppf(0.975, n_seeds - 1) * difference.std(ddof=1) / np.sqrt(n_seeds))
            else:
                seed_test, half = None, np.nan
            paper_episode = paper_episodes[i] if i < len(paper_episodes) else None
            paper = MARLIN_TABLE1.get(scenario, {}).get(paper_episode, ("", ""))  # strings as printed
            p_seeds = seed_test.p_value if seed_test else np.nan
            rows.append({"scenario": scenario, "episode": checkpoint, "MARL": pairs.performance_marl.mean(),
                         "MARLIN": pairs.performance_marlin.mean(), "p_value": test.p_value, "runs": test.n,
                         "significant": bool(test.p_value < SIGNIFICANCE), "seeds": n_seeds,
                         "MARL_seed_sd": per_seed.performance_marl.std(ddof=1) if n_seeds >= 2 else np.nan,
                         "MARLIN_seed_sd": per_seed.performance_marlin.std(ddof=1) if n_seeds >= 2 else np.nan,
                         "diff_ci_low": difference.mean() - half, "diff_ci_high": difference.mean() + half,
                         "p_value_seeds": p_seeds, "significant_seeds": bool(p_seeds < SEED_SIGNIFICANCE),
                         "paper_episode": paper_episode, "paper_MARL": paper[0], "paper_MARLIN": paper[1]})
    return pd.DataFrame(rows)


#: Markdown number formats of Table I's shown columns: the paper's values keep the four decimals it prints ("0.9700").
TABLE1_MARKDOWN_FLOATFMT = ["g"] * 10 + [".4f", ".4f"]


def table1_markup(table: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Table I for Markdown (bold better mean where p < 0.001) and its LaTeX body (bold the same way).

    Save the Markdown with ``markdown_floatfmt=TABLE1_MARKDOWN_FLOATFMT`` so the paper's values keep their trailing zeros.

    MARL and MARLIN read "mean ± SD over seeds" when there are several seeds; the across-seed test sits beside the per-run one.
    """
    shown = table.copy()
    for column in ("MARL", "MARLIN"):  # the paper_* columns are already the paper's own strings
        sd = table[f"{column}_seed_sd"]
        shown[column] = [f"{m:.4f}" if np.isnan(d) else f"{m:.4f} ± {d:.4f}" for m, d in zip(table[column], sd)]
    for column in ("p_value", "p_value_seeds"):
        shown[column] = table[column].map(lambda p: "n/a" if np.isnan(p) else f"{p:.2g}")
    shown["diff_ci95"] = [("n/a" if np.isnan(lo) else f"[{lo:+.3f}, {hi:+.3f}]") for lo, hi in zip(table.diff_ci_low, table.diff_ci_high)]
    latex = shown.copy()
    for i, row in table.iterrows():
        if row.significant:
            better = "MARLIN" if row.MARLIN > row.MARL else "MARL"
            shown.loc[i, better] = f"**{shown.loc[i, better]}**"
            latex.loc[i, better] = f"\\textbf{{{latex.loc[i, better]}}}"
    latex["scenario"] = latex.scenario.str.replace("_", r"\_")
    latex["MARL"] = latex.MARL.str.replace("±", r"$\pm$")
    latex["MARLIN"] = latex.MARLIN.str.replace("±", r"$\pm$")
    columns = ["scenario", "episode", "MARL", "MARLIN", "p_value", "runs", "seeds", "p_value_seeds", "diff_ci95",
               "paper_episode", "paper_MARL", "paper_MARLIN"]
    body = latex[columns].rename(columns=lambda c: c.replace("_", r"\_")).to_latex(index=False, escape=False)
    return shown[columns], body


def draw_plan_source_alone(ax, values, x: float, width: float, label: str = "LLM-only"):
    """The plan source alone (LLM-only; the exact planner when it is the source): a box over its runs from
    minimum to maximum and a diamond at the mean, visible even when every run scores the same."""
    from marlinkit.plots import PAPER_COLORS

    values = np.asarray(values, float)
    if not len(values):
        return None
    color = PAPER_COLORS["LLM-only"]
    ax.boxplot([values], positions=[x], widths=width, manage_ticks=False, patch_artist=True, whis=(0, 100),
               boxprops={"facecolor": color, "alpha": 0.45}, medianprops={"color": "black", "lw": 1})
    return ax.plot([x], [values.mean()], "D", color=color, mec="black", mew=0.6, ms=6, zorder=4,
                   label=f"{label}, {len(values)} run{'s' * (len(values) != 1)}:\nbox min-max, diamond mean")[0]


def table1_caption(table: pd.DataFrame, settings: dict[str, Any], footer: str) -> str:
    """Table I's caption: what each test's unit is, so that neither p-value is over-read."""
    runs, seeds = int(table.runs.iloc[0]), int(table.seeds.iloc[0])
    spread = f"± SD over {seeds} seeds {list(settings['seeds'])}" if seeds > 1 else f"one seed {list(settings['seeds'])}: no spread"
    return (f"Table I (reproduction): mean performance at checkpoints {sorted(settings['checkpoints'])} "
            f"({spread}). p_value: paired t-test over {runs} evaluation runs "
            f"(pairs share seed and run; bold: p < {SIGNIFICANCE}); its unit is one evaluation run of the trained policies, "
            f"so it measures the evaluation noise of those policies, not the variation between trainings. "
            f"p_value_seeds: paired t-test over the {seeds} per-seed means (the seed is the unit), "
            f"diff_ci95: 95 % t interval of MARLIN - MARL over seeds. "
            f"paper_* = the paper's Table I at episodes 100/850/1600 (Llama 3.1 8B). {footer}")


def seed_curves(episodes: pd.DataFrame, system: str) -> pd.DataFrame:
    """Median performance over copies per episode (rows) and seed (columns) of one system."""
    data = episodes[episodes.system == system]
    return data.groupby(["episode", "seed"]).performance.median().unstack("seed")


def figure3(results: Results, scenarios: list[str], source_label: str = "LLM-only", title: str | None = None):
    """Median training performance per episode for MARL and MARLIN; the plan source alone (``source_label``)
    at the right of each panel. Panels in rows of three, sized for a two-column paper figure.

    The line is the mean over seeds of each seed's median over copies; the band spans the seeds' medians
    (min to max) when there are several seeds.
    """
    import matplotlib.pyplot as plt

    from marlinkit.plots import PAPER_COLORS

    episodes = results.episodes
    columns = min(3, len(scenarios))
    rows = -(-len(scenarios) // columns)
    legend_below = len(scenarios) == rows * columns  # no spare panel to hold the legend
    fig, axes = plt.subplots(rows, columns, figsize=(7.2, 2.3 * rows + 0.4 + 0.6 * legend_below + 0.3 * bool(title)),
                             sharey=True, squeeze=False)
    n_seeds = episodes[episodes.system == "MARL"].seed.nunique()
    handles = {}
    for ax, scenario in zip(axes.flat, scenarios):
        data = episodes[episodes.scenario == scenario]
        last = int(data.episode.max())
        for system in ("MARL", "MARLIN"):
            curves = seed_curves(data, system)
            handles[system], = ax.plot(curves.index, curves.mean(axis=1), color=PAPER_COLORS[system], label=system, lw=1.0)
            if curves.shape[1] > 1:
                handles[system + " band"] = ax.fill_between(
                    curves.index, curves.min(axis=1), curves.max(axis=1), color=PAPER_COLORS[system], alpha=0.18, lw=0,
                    label=f"{system}: range over {n_seeds} seeds")
        alone = draw_plan_source_alone(ax, data[data.system == "LLM-only"].performance, last * 1.1, last * 0.08, source_label)
        if alone is not None:
            handles["alone"] = alone
        ax.set_xlim(0, last * 1.18)
        ax.set_title(get_layout(scenario).title, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(scenarios):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel(f"median performance\n(mean of {n_seeds} seed{'s' * (n_seeds > 1)})", fontsize=8)
    for ax in axes.flat[max(0, len(scenarios) - columns):len(scenarios)]:
        ax.set_xlabel("episode (per environment copy)", fontsize=8)
    axes[0][0].set_ylim(-0.02, 1.05)
    spare = axes.flat[len(scenarios)] if len(scenarios) < axes.size else None
    if spare is not None:
        spare.legend(handles=list(handles.values()), loc="center", fontsize=8, frameon=False)
    else:
        height = fig.get_figheight()  # inches: the footer takes the lowest ~0.35, the legend ~0.5 above it
        fig.legend(handles=list(handles.values()), loc="lower center", ncol=min(3, len(handles)), fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, 0.35 / height))
    if title:
        fig.suptitle(title, fontsize=8)
    fig.tight_layout(rect=(0, 0.4 / fig.get_figheight() if spare is not None else 0.9 / fig.get_figheight(), 1, 1))
    return fig
