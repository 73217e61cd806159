"""The MARLIN grid runner: every scenario x system x seed of a ``GridConfig``, cached per run and resumable.

``run_grid`` is shared by Fig. 3 / Table I (``fig3_training.run``), Fig. 5 and the dynamic environment.
Missing runs go to an executor (local processes or Ray); each run is saved as soon as it finishes.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

import pandas as pd

from marlinkit import executors, paths, runs
from marlinkit.plots import Provenance
from marlinkit.result import Result
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES
from marlinkit.envs.corridor.plans import PlanSource
from marlinkit.llm import config as llm_config
from marlinkit.llm.cache import transcript_context
from marlinkit.marlin.algorithm1 import SYSTEMS
from marlinkit.marlin.systems import TrainingConfig, plan_source_alone, train_system
from marlinkit.repro import keys
from marlinkit.settings import PresetName

#: "one-at-a-time": each run in its own job (``mappo.train``); "batched": a worker's runs as one stacked computation
#: (``marlinkit.marlin.batched``). Both train by ``mappo.train_runs``: a run's numbers do not depend on its batch
#: partners.
Trainer = Literal["one-at-a-time", "batched"]
TRAINERS = get_args(Trainer)
#: MARLIN's plan sources: the calibrated surrogate planner (not an LLM; the quick and paper presets'
#: default), the configured LLM's negotiation, the exact joint planner (a perfect plan source), and the surrogate
#: calibrated to both the mean and the share of perfect plans of the authors' Llama runs (not an LLM either).
PlanSourceName = Literal["surrogate", "llm", "exact", "surrogate_llama"]
PLAN_SOURCES = get_args(PlanSourceName)


class Results(NamedTuple):
    episodes: pd.DataFrame  # one row per episode and copy (all systems)
    evaluations: pd.DataFrame  # one row per checkpoint evaluation run (MARL, MARLIN)
    files: tuple[Path, ...] = ()  # the runs' tables and sidecars, as saved


def result_tables(results: Results) -> dict[str, pd.DataFrame]:
    """A grid's tables as a :class:`~marlinkit.result.Result` names them."""
    return {"episodes": results.episodes, "evaluations": results.evaluations}


@dataclass(frozen=True)
class GridResult(Result):
    """The :class:`~marlinkit.result.Result` of an experiment that runs one MARLIN grid: tables ``episodes`` (one
    row per episode and copy, every system) and ``evaluations`` (one row per checkpoint evaluation run)."""

    @property
    def episodes(self) -> pd.DataFrame:
        return self.tables["episodes"]

    @property
    def evaluations(self) -> pd.DataFrame:
        return self.tables["evaluations"]

    @property
    def results(self) -> Results:
        """The grid's rows as the figure functions read them."""
        return Results(self.episodes, self.evaluations, self.paths)

    @classmethod
    def of(cls, experiment: str, results: Results, config: "GridConfig", preset: str,
           provenance: Provenance) -> "GridResult":
        return cls(experiment, preset, config, result_tables(results), results.files, provenance)


@dataclass(frozen=True)
class GridConfig(TrainingConfig):
    """A MARLIN grid: every scenario x system x seed of one training protocol (Fig. 3 / Table I, and the
    grids of Fig. 5 and the dynamic environment); the defaults are the paper's protocol."""

    scenarios: tuple[str, ...] = tuple(LAYOUT_NAMES)
    """Corridor layouts to train on (``marlinkit.envs.corridor.layouts``)."""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """Training seeds; every scenario and system is trained once per seed."""
    systems: tuple[str, ...] = SYSTEMS
    """Systems to run: "MARL", "MARLIN" and "LLM-only" (the plan source alone)."""
    llm_only_trials: int = 50
    """Plans the LLM-only system plays per scenario and seed (paper: 50)."""
    trainer: Trainer = "one-at-a-time"
    """``TRAINERS``: one ``mappo.train`` per run, or a worker's runs as one stacked computation ("batched")."""
    plan_source: PlanSourceName = "surrogate"
    """MARLIN's plans (``PLAN_SOURCES``): the calibrated surrogate planner (not an LLM), "llm" or "exact"."""
    workers: int = 2
    """Jobs at once (``marlinkit.executors.run_jobs``)."""
    executor: executors.Executor = "local"
    """"local" processes, or "ray" (the optional extra; the same numbers)."""
    ray_address: str | None = None
    """None: start a local Ray instance; "auto" or "ray://host:10001": join a cluster."""
    batch_runs: int | None = None
    """Most runs per batch of the batched trainer (None: one batch per worker); a run's numbers do not depend on it."""
    negotiation: PresetName | None = None
    """``plan_source`` "llm" only: the name of the preset whose ``llm_only`` section is MARLIN's negotiation protocol
    and gives its LLM-only trials (Algorithm 1's threshold and the box; ``presets.get`` puts that section in
    ``fig3_training.Config.llm_only``);
    None: the grid's own preset's. E.g. "quick" lets a paper-length grid negotiate as the quick preset does, where the
    paper's protocol is out of a CPU's reach. It names the runs (``system_tag``) and the outputs (``output_suffix``)."""

    def __post_init__(self):
        for name in ("scenarios", "systems"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        super().__post_init__()
        unknown = sorted(set(self.scenarios) - set(LAYOUT_NAMES))
        if unknown:
            raise ValueError(f"unknown scenario(s) {unknown}; choose from {list(LAYOUT_NAMES)}")
        bad = sorted(set(self.systems) - set(SYSTEMS))
        if bad:
            raise ValueError(f"unknown system(s) {bad}; choose from {list(SYSTEMS)}")
        for name in ("llm_only_trials", "workers"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.batch_runs is not None and int(self.batch_runs) < 1:
            raise ValueError(f"batch_runs must be None (one batch per worker) or >= 1, got {self.batch_runs}")
        if self.negotiation is not None and self.plan_source != "llm":
            raise ValueError(f"negotiation={self.negotiation!r} sets the LLM's negotiation protocol: it needs "
                             f"plan_source 'llm', not {self.plan_source!r}")
        executors.check_executor(self.executor, self.workers)
        for name in {*self.scenarios, *(name for _, name in self.layout_schedule or ())}:
            self.llm_only_threshold(name)


def job_config(scenario: str, system: str, seed: int, config: GridConfig, source_name: str) -> dict[str, Any]:
    """Everything that shapes one run's numbers (its cache key, :func:`marlinkit.repro.keys.grid_key`)."""
    config = config.for_system(system)  # the authors' protocol: the system's own copy count
    noise = dataclasses.asdict(config.actuation_noise) if config.actuation_noise else None
    job = {"scenario": scenario, "system": system, "seed": seed, "protocol": config.protocol, "actuation_noise": noise}
    if system == "LLM-only":
        return keys.grid_key({**job, "trials": config.llm_only_trials, "plan_source": source_name})
    training = config.mappo
    if system != "MARLIN":  # MARL has no generated steps: its numbers, key and name do not depend on the setting
        training = dataclasses.replace(training, generated_steps="learn")
    schedule = list(config.layout_schedule or ())
    job.update(episodes=config.episodes, n_envs=config.n_envs, checkpoints=sorted(config.checkpoints),
               eval_runs=config.eval_runs, mappo=keys.mappo_key(training), trainer=config.trainer,
               layout_schedule=[[k, name] for k, name in schedule])
    if system == "MARLIN":
        budget = None if config.plan_budget is None else int(config.plan_budget)  # spent on episode starts only
        job.update(switch=dataclasses.asdict(config.switch_config()),
                   llm_only_performance=config.llm_only_threshold(scenario), plan_source=source_name,
                   plan_budget=budget, plan_budget_for=None if budget is None else "episode starts",
                   llm_only_performance_after={name: config.llm_only_threshold(name) for _, name in schedule})
    return keys.grid_key(job)


def system_tag(system: str, source_name: str, switch_rule: str = "paper", generated_steps: str = "learn",
               negotiation: str | None = None) -> str:
    """The system part of a run name; runs using another plan source than the exact planner name it, and
    MARLIN runs under another switch rule than the paper's, with their plan steps kept out of learning
    (``MAPPOConfig.generated_steps``), or negotiating by another preset's protocol (``GridConfig.negotiation``),
    name that too, so that switching any of them keeps both sets of results instead of overwriting one with the
    other."""
    tag = system.replace("-", "_").lower()
    if system == "MARL":
        return tag
    if source_name != ExactJointPlanner.name:
        tag = f"{tag}-{llm_config.slug(source_name.split('[')[0])}"
    if system == "MARLIN" and switch_rule != "paper":
        tag = f"{tag}-{switch_rule}-switch"
    if system == "MARLIN" and generated_steps != "learn":
        tag = f"{tag}-{generated_steps}-plan-steps"
    if system == "MARLIN" and negotiation is not None:
        tag = f"{tag}-{negotiation}-negotiation"
    return tag


def _run_batch(batch: list[tuple[str, dict[str, Any]]], config: GridConfig,
               source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """Several MARL/MARLIN runs trained together by the batched trainer (one torch thread); their tables to save."""
    import torch

    from marlinkit.marlin import batched as marlin_batched

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        config = config.for_system(batch[0][1]["system"])  # the authors' protocol batches one system at a time
        results = marlin_batched.train_systems([(c["scenario"], c["system"], c["seed"]) for _, c in batch], config,
                                               source)
        share = len(batch)  # each run's share of the batch's time
        provenance = {"wall_time_s": (time.perf_counter() - started) / share,
                      "cpu_time_s": (time.process_time() - cpu_started) / share,
                      "engine": "corridor core (numpy)", "trainer": f"batched ({len(batch)} runs)"}
    finally:
        torch.set_num_threads(threads)
    tables = []
    for (name, job), (episodes, evaluations) in zip(batch, results):
        tables += [(name + "__eval", evaluations, {}),
                   (name, episodes, {**provenance, "plan_source": job.get("plan_source")})]
    return tables


def _run_job(name: str, job: dict[str, Any], config: GridConfig,
             source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """One run on any executor (one torch thread): train or plan; return its tables and provenance to save.

    The caller writes the files, so executors on other machines need no shared filesystem.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with transcript_context(run=f"MARLIN {name}"):  # a transcript miss or damaged transcript names the run
            return _run_tables(name, job, config, source)
    finally:
        torch.set_num_threads(threads)


def _run_tables(name: str, job: dict[str, Any], config: GridConfig,
                source: PlanSource | None) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """Train or plan one run: its tables (the episode table last) and provenance."""
    started, cpu_started = time.perf_counter(), time.process_time()
    tables = []
    if job["system"] == "LLM-only":
        episodes = plan_source_alone(job["scenario"], job["seed"], job["trials"], source, config.actuation_noise)
    else:
        episodes, evaluations = train_system(job["scenario"], job["system"], job["seed"], config, source)
        tables.append((name + "__eval", evaluations, {}))
    tables.append((name, episodes, {"wall_time_s": time.perf_counter() - started,
                                    "cpu_time_s": time.process_time() - cpu_started,
                                    "engine": "corridor core (numpy)", "plan_source": job.get("plan_source")}))
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


#: Folder (under the preset's MARLIN results) of the runs under the authors' protocol (``TrainingConfig.protocol``).
AUTHORS_PROTOCOL_DIR = "authors_protocol"


def results_root(config: GridConfig, preset: str) -> Path:
    """Where a grid's runs are saved: the preset's MARLIN results, the authors' protocol in its own folder."""
    root = paths.results_dir("marlin", preset)
    return root / AUTHORS_PROTOCOL_DIR if config.protocol == "authors" else root


def numerics_entries(source: PlanSource | None) -> tuple[str, ...]:
    """The modules whose imports make a grid's numerics path (``marlinkit.repro.provenance``): this runner and its plan
    source's."""
    return tuple(dict.fromkeys((__name__, type(source or ExactJointPlanner()).__module__)))


def grid_jobs(config: GridConfig, source_name: str) -> list[tuple[str, dict[str, Any]]]:
    """Every run of ``config`` as (name, cache key), scenario by system by seed; ``source_name``: MARLIN's plan
    source's."""
    plan_steps = config.mappo.generated_steps
    return [(runs.run_name(sc, system_tag(sy, source_name, config.switch_rule, plan_steps, config.negotiation),
                           f"seed{se}"),
             job_config(sc, sy, se, config, source_name))
            for sc in config.scenarios for sy in config.systems for se in config.seeds]


def equivalent_jobs(job: dict[str, Any], source: PlanSource | None) -> list[dict[str, Any]]:
    """``job`` and, where its plan source declares earlier names that make the same plans in the job's corridor
    (``equivalent_names``, e.g. ``LlamaSurrogatePlanner``), the same job under each of those names."""
    names = getattr(source, "equivalent_names", None)
    if names is None or "plan_source" not in job:
        return [job]
    return [job] + [{**job, "plan_source": name} for name in names(job["scenario"])]


def is_finished(store: runs.ResultStore, name: str, job: dict[str, Any], source: PlanSource | None) -> bool:
    """The run ``name`` is saved complete (with its evaluation, unless LLM-only) under ``job`` or an equivalent job."""
    return any(store.is_complete(name, key) and (key["system"] == "LLM-only" or store.is_complete(name + "__eval", key))
               for key in equivalent_jobs(job, source))


def run_grid(config: GridConfig, preset: str, source: PlanSource | None = None, root: Path | None = None,
             progress: bool = True) -> Results:
    """Run (or load) every scenario x system x seed of ``config``; finished runs are never redone.

    Missing runs go to ``config.executor`` ("local" processes or "ray", see ``marlinkit.executors``)
    with ``workers`` at a time; each run's files are written here as soon as it finishes.
    """
    root = Path(root) if root else results_root(config, preset)
    store = runs.ResultStore(root, code=numerics_entries(source))
    jobs = grid_jobs(config, (source or ExactJointPlanner()).name)
    todo = [(name, job) for name, job in jobs if not is_finished(store, name, job, source)]

    configs = dict(todo)

    def save(tables: list) -> None:
        for table_name, table, provenance in tables:  # the episode table last: its sidecar marks the run complete
            store.save(table_name, table, configs[table_name.removesuffix("__eval")], **provenance)

    executor, workers = config.executor, config.workers
    batched = config.trainer == "batched"
    systems = " and ".join(config.systems)  # the progress line's label: "MARL runs", "LLM-only runs", ...
    single = [(name, job) for name, job in todo if not batched or job["system"] == "LLM-only"]
    with transcript_context(preset=preset):  # a transcript miss's recording hint names the preset
        executors.run_jobs(_run_job, [(name, job, config, source) for name, job in single], executor, workers,
                           config.ray_address, progress, f"{systems} runs", on_result=lambda _, tables: save(tables))
        if batched:  # the trainings as one stacked computation per worker (marlinkit.marlin.batched)
            trained = [(name, job) for name, job in todo if job["system"] != "LLM-only"]
            groups = [[t for t in trained if t[1]["system"] == system] for system in ("MARL", "MARLIN")]
            if config.protocol == "paper":  # the same copy count: MARL and MARLIN may share a batch
                groups = [trained]
            batches = [batch for group in groups
                       for batch in training_batches(group, workers, config.batch_runs or len(group))]
            executors.run_jobs(_run_batch, [(batch, config, source) for batch in batches], executor, workers,
                               config.ray_address, progress, f"{systems} batches",
                               on_result=lambda _, tables: save(tables))
    episodes = pd.concat([store.load(name) for name, _ in jobs], ignore_index=True)
    evaluated = [name + "__eval" for name, job in jobs if job["system"] != "LLM-only"]
    evaluations = [store.load(name) for name in evaluated]
    saved = [path for name in [name for name, _ in jobs] + evaluated
             for path in (store.table_path(name), store.sidecar_path(name))]
    return Results(episodes, pd.concat(evaluations, ignore_index=True) if evaluations else pd.DataFrame(), tuple(saved))


SURROGATE_LABEL = ("calibrated surrogate planner (exact plans corrupted to the authors' Llama 3.1 8B LLM-only "
                   "performance; NOT an LLM)")
#: File-name suffix of each plan source's Fig. 3 and Table I outputs.
PLAN_SOURCE_SUFFIX = {"surrogate": "", "llm": "__llm", "exact": "__exact_planner",
                      "surrogate_llama": "__surrogate_llama"}
SURROGATE_LLAMA_LABEL = ("surrogate_llama (exact plans, perfect as often as the authors' Llama 3.1 8B plans were, "
                         "else corrupted to its LLM-only mean; NOT an LLM)")
#: How a figure's one-line footer names each non-LLM plan source (a surrogate named as one); the LLM source is named
#: by its model (:func:`footer_source`).
PLAN_SOURCE_FOOTER = {"surrogate": "plans: calibrated surrogate, not an LLM",
                      "exact": "plans: exact planner, not an LLM",
                      "surrogate_llama": "plans: surrogate_llama (Llama-calibrated surrogate), not an LLM"}


def footer_source(plan_source: str, llm: str | None = None) -> str:
    """A figure footer's plan source: ``PLAN_SOURCE_FOOTER``'s name, or ``LLM <llm>`` for the LLM source."""
    return f"LLM {llm}" if plan_source == "llm" else PLAN_SOURCE_FOOTER[plan_source]


def variant_note(config: GridConfig, protocol=None) -> str:
    """What figures add to the plan source's name: nothing for Algorithm 1 as printed, else the switch rule,
    how plan steps are learned from, and another preset's negotiation protocol (``protocol``: that preset's
    ``llm_trials.Trials``, whose limits it states)."""
    note = "" if config.switch_rule == "paper" else f"; Algorithm 1's switch: the authors' {config.switch_rule} variant"
    if config.protocol == "authors":
        note += "; the authors' protocol (MARLIN on 1 copy, MARL on 6)"
    if config.mappo.generated_steps != "learn":
        note += f"; plan steps kept out of MAPPO's updates (generated_steps={config.mappo.generated_steps!r})"
    if config.negotiation is not None:
        if protocol is None:
            raise ValueError(f"the grid negotiates by the {config.negotiation} preset's protocol: "
                             "pass its llm_only section")
        note += (f"; the {config.negotiation} preset's negotiation (<= {protocol.max_moves} moves, "
                 f"{protocol.max_rounds} round(s), {protocol.max_new_tokens} tokens, {protocol.trials} LLM-only "
                 "trials per scenario)")
    return note


def output_suffix(config: GridConfig) -> str:
    """File-name suffix of a grid's Fig. 3 and Table I outputs: its plan source's, ``__code_switch``
    under the authors' code variant of Algorithm 1's switch, ``__separate_plan_steps`` with plan steps kept apart,
    ``__<preset>_negotiation`` with another preset's negotiation protocol."""
    plan_steps = config.mappo.generated_steps
    switch = "" if config.switch_rule == "paper" else f"__{config.switch_rule}_switch"
    return (PLAN_SOURCE_SUFFIX[config.plan_source] + switch
            + ("" if plan_steps == "learn" else f"__{plan_steps}_plan_steps")
            + ("" if config.negotiation is None else f"__{config.negotiation}_negotiation")
            + ("" if config.protocol == "paper" else f"__{config.protocol}_protocol"))


def with_plan_source(config: GridConfig, plan_source: str | None = None) -> tuple[GridConfig, PlanSource | None, str]:
    """``config`` with its plan source (``plan_source``, else the config's), that source, and how figures name it.

    A non-LLM source costs no LLM time, so its runs re-plan without limit (``plan_budget`` None, the paper's
    rule); ``plan_budget`` limits the LLM source only. The "llm" source is built by the caller (None here).
    """
    config = dataclasses.replace(config, plan_source=plan_source or config.plan_source)
    if config.plan_source == "llm":
        return config, None, "llm"
    config = dataclasses.replace(config, plan_budget=None)
    if config.plan_source == "exact":
        return config, None, f"{ExactJointPlanner.name} (a perfect plan source, not an LLM)"
    if config.plan_source == "surrogate_llama":
        from marlinkit.marlin.surrogate_planner import LlamaSurrogatePlanner

        return config, LlamaSurrogatePlanner(), SURROGATE_LLAMA_LABEL
    from marlinkit.marlin.surrogate_planner import CalibratedSurrogatePlanner

    return config, CalibratedSurrogatePlanner(), SURROGATE_LABEL


def non_llm_plan_source(config: GridConfig, plan_source: str | None,
                        source: PlanSource | None) -> tuple[GridConfig, PlanSource | None]:
    """A grid's config and plan source where no LLM is wired (Fig. 5, the dynamic environment): ``source`` if
    given, else ``plan_source`` or the config's ("surrogate" or "exact")."""
    if source is not None:
        return config, source
    config, source, _ = with_plan_source(config, plan_source)
    if config.plan_source == "llm":
        raise ValueError("the LLM plan source is not wired here; use plan_source 'surrogate' or 'exact'")
    return config, source


def plan_source_label(config: GridConfig, plan_source: str | None = None) -> str:
    """How figures name the plan source a grid's MARLIN runs use (``plan_source``, else the config's)."""
    return with_plan_source(config, plan_source)[2]
