"""The workshop track (``notebooks/workshop/``): the few runners and figures its notebooks need.

Sizes come from the ``workshop`` preset section. The notebooks default to the ``workshop`` preset (the class's sizes;
smollm2's replies replay from the committed ``data/transcripts/workshop_workshop__*.jsonl``, new calls go to the
model and a git-ignored local transcript); ``smoke`` is what the tests run (seconds, strict replay of
``workshop_smoke__*.jsonl``, no model load); ``quick`` is a longer session with every call live. Training goes through
``grid.run_grid``, so runs are cached by configuration and written atomically with it under
``data/results/workshop/<preset>/``. Participants work in copies (``copy_notebooks``, ``make workshop``).

Importing this module in a Jupyter kernel makes an interrupted cell print one line rather than a traceback
(:func:`marlinkit.errors.one_line_interrupts`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from marlinkit import paths
from marlinkit.plots import Provenance
from marlinkit.errors import ParameterError, one_line_interrupts
from marlinkit.marlin import fig3_training, grid
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.env import CorridorParallelEnv
from marlinkit.envs.corridor.layouts import Layout, get_layout
from marlinkit.llm import config as llm_config
from marlinkit.marlin import llm_trials
from marlinkit.llm.base import ChatBackend
from marlinkit.llm.cache import TranscriptCache
from marlinkit.marlin.negotiation import Negotiation, greedy_robots
from marlinkit.config_fields import check_choices, label, required_preset, typed
from marlinkit.marlin.systems import TrainingConfig

one_line_interrupts()

ENGINE = "corridor core (numpy)"
#: The experiment's section name.
EXPERIMENT = "workshop"
EXACT_LABEL = "exact planner: perfect plans, not an LLM"


@dataclass(frozen=True)
class Part(TrainingConfig):
    """One training part of the workshop (notebook 02's MAPPO, notebook 04's MARL vs MARLIN): ``systems.TrainingConfig``
    fields, and the LLM-only trials of notebook 04's plan sources."""

    llm_only_trials: int = 1
    """Plans each plan source plays alone (notebook 04: their mean is Algorithm 1's threshold)."""


@dataclass(frozen=True)
class NegotiationSettings(llm_trials.NegotiationLimits):
    """Notebook 03's negotiation protocol, and whether the session talks to the model."""

    record: bool | None = None
    """True: call the model live and record (a session preset); None: strict replay unless ``$MARLINKIT_RECORD``."""


@dataclass(frozen=True)
class Config:
    """The ``workshop`` section: the teaching session's sizes (``quick``) or nbval's (``smoke``); a mapping given for
    a part holds its fields."""

    scenario: str = "single_slot"
    """The workshop's corridor layout."""
    seed: int = 0
    """Seed of every training and trial."""
    training: Part = field(default_factory=Part)
    """Notebook 02's MAPPO training."""
    negotiation: NegotiationSettings = field(default_factory=NegotiationSettings)
    """Notebook 03's protocol (notebook 04's negotiation too)."""
    marlin: Part = field(default_factory=Part)
    """Notebook 04's MARL vs MARLIN."""
    part: Literal["training", "comparison"] = "training"
    """What :func:`run` runs: notebook 02's training or notebook 04's comparison."""
    llm: str | None = None
    """The LLM of notebooks 03 and 04 (their ``LLM``): None the negotiation's (``$MARLINKIT_LLM`` overrides it);
    ``"scripted"`` the greedy script, no model and no transcript; any setting :mod:`marlinkit.llm.config` knows."""
    plan_budget: int | None = None
    """New plans per training per plan source in notebook 04's comparison (its ``PLAN_BUDGET``); None: the
    ``marlin`` part's."""
    preset: str | None = label()
    """The preset whose workshop results folder holds the runs (a label: not part of any run's key)."""
    root: Path | str | None = label()
    """A folder for the runs instead of the preset's (a label; None: ``data/results/workshop/<preset>``)."""
    progress: bool = label(False)
    """Show the trainings' progress (a label)."""

    def __post_init__(self):
        for part, cls in (("training", Part), ("negotiation", NegotiationSettings), ("marlin", Part)):
            object.__setattr__(self, part, typed(cls, getattr(self, part), part))
        self.grid("training"), self.grid("marlin")  # bad values fail here, by field
        check_choices(self)
        budget = self.plan_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ParameterError("PLAN_BUDGET", budget,
                                 "new plans per training: None (the preset's) or an integer >= 1")
        if self.llm is not None:
            llm_config.check(self.llm)

    def grid(self, part: str) -> grid.GridConfig:
        """``run_grid``'s config of one part: one scenario, one seed, in this process (one local worker on purpose:
        the LLM, loaded once, and the training share the notebook's process)."""
        values = getattr(self, part)
        return grid.GridConfig(**{f.name: getattr(values, f.name) for f in dataclasses.fields(values)},
                               scenarios=(self.scenario,), seeds=(self.seed,), workers=1)

    def negotiation_limits(self) -> llm_trials.NegotiationLimits:
        values = dataclasses.asdict(self.negotiation)
        return llm_trials.NegotiationLimits(**{k: v for k, v in values.items() if k != "record"})


def results_root(preset: str) -> Path:
    return paths.results_dir("workshop", preset)


# ---------------------------------------------------------------------------------------------
# Participants' copies


def copy_notebooks(dest: str | Path) -> list[str]:
    """Copy each workshop notebook that ``dest`` lacks into it (``make workshop``); return one line per notebook.

    Participants run, edit and save these copies, in a folder git ignores, so the tracked notebooks never change and
    ``git pull`` always brings the teacher's updates. A copy already there is kept (it holds the participant's work);
    one whose cells differ from the tracked notebook's is named, with how to get the new version.
    """
    import nbformat

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    lines = []
    for source in sorted((paths.NOTEBOOKS_DIR / "workshop").glob("*.ipynb")):
        copy = dest / source.name
        if not copy.exists():
            copy.write_bytes(source.read_bytes())
            lines.append(f"{copy}: copied from {source.relative_to(paths.REPO_ROOT)}")
            continue
        cells = [[cell.cell_type, cell.source] for cell in nbformat.read(source, as_version=4).cells]
        mine = [[cell.cell_type, cell.source] for cell in nbformat.read(copy, as_version=4).cells]
        lines.append(f"{copy}: your copy, kept" + ("" if cells == mine else
                     f" (it differs from {source.relative_to(paths.REPO_ROOT)}: delete it and run `make workshop` "
                     "again for a fresh copy)"))
    return lines


# ---------------------------------------------------------------------------------------------
# Notebook 01: the environment


def random_policy_performance(layout: str | Layout, runs: int, seed: int) -> np.ndarray:
    """Episode performance of ``runs`` episodes with uniformly random actions: the floor a learner must beat."""
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    arrays = core.layout_arrays(get_layout(layout))
    rng = np.random.default_rng(seed)
    state = core.reset(arrays, runs)
    for _ in range(core.EPISODE_STEPS):
        state = core.step(arrays, state, rng.integers(0, core.N_ACTIONS, (runs, core.N_AGENTS))).state
    return core.performance(arrays, state)


def play_plan(layout: str | Layout, actions: np.ndarray,
              render_mode: str | None = "rgb_array") -> tuple[CorridorParallelEnv, dict]:
    """Step the PettingZoo env through a joint plan int[T, 2], then WAIT to the episode's end.

    Returns the finished env (``env.render()`` draws the trajectory) and the last step's infos
    (``infos[agent]["performance"]``).
    """
    actions = np.asarray(actions, dtype=np.int64).reshape(-1, core.N_AGENTS)
    if len(actions) > core.EPISODE_STEPS:
        raise ValueError(f"a plan has at most {core.EPISODE_STEPS} steps, got {len(actions)}")
    env = CorridorParallelEnv(layout, render_mode=render_mode)
    env.reset()
    infos: dict = {}
    for t in range(core.EPISODE_STEPS):
        joint = actions[t] if t < len(actions) else (0, 0)
        _, _, _, _, infos = env.step({agent: int(a) for agent, a in zip(env.possible_agents, joint)})
    return env, infos


# ---------------------------------------------------------------------------------------------
# Notebooks 02 and 04: training through grid.run_grid


def run(cfg: Config) -> grid.GridResult:
    """The workshop's training (``cfg.part`` "training": notebook 02's MAPPO alone) or its comparison
    ("comparison": notebook 04's MARL vs MARLIN with the LLM and the exact planner, :class:`Comparison`), saved under
    ``cfg.preset``'s workshop results (``cfg.root`` replaces them) and loaded from there when already run."""
    preset = required_preset(cfg)
    root = Path(cfg.root or results_root(preset))
    if cfg.part == "training":
        return _training(cfg, preset, root)
    return _comparison(cfg, preset, chat_backend(cfg), root)


def _training(cfg: Config, preset: str, root: Path) -> grid.GridResult:
    """MAPPO alone (the paper's MARL system) on the workshop scenario: notebook 02's learning curve."""
    config = dataclasses.replace(cfg.grid("training"), systems=("MARL",))
    results = grid.run_grid(config, preset, root=root / "mappo", progress=cfg.progress)
    return grid.GridResult.of(EXPERIMENT, results, cfg, preset, training_provenance(cfg))


def training_provenance(cfg: Config) -> Provenance:
    """Notebook 02's footer: MAPPO alone, no LLM."""
    settings = cfg.training
    return Provenance(required_preset(cfg), engine=ENGINE, source="no LLM", seeds=(cfg.seed,),
                      details={"training": f"MAPPO on {cfg.scenario}: {settings.n_envs} copies x "
                                           f"{settings.episodes} episodes"})


def plan_budget(cfg: Config) -> int:
    """New plans per training per plan source in the comparison: ``cfg.plan_budget``, else the ``marlin`` part's."""
    return cfg.marlin.plan_budget if cfg.plan_budget is None else cfg.plan_budget


def comparison_provenance(cfg: Config, backend: ChatBackend) -> Provenance:
    """Notebook 04's footer: the LLM and the exact planner (not an LLM) as MARLIN's plan sources."""
    settings = cfg.marlin
    return Provenance(required_preset(cfg), engine=ENGINE,
                      source=f"LLM {llm_config.label(backend)} and the exact planner (not an LLM)",
                      seeds=(cfg.seed,),
                      details={"training": f"{cfg.scenario}: {settings.n_envs} copies x {settings.episodes} "
                                           f"episodes, plan budget {plan_budget(cfg)}"})


def chat_backend(cfg: Config) -> ChatBackend:
    """The workshop's LLM (``cfg.llm``, else the negotiation's) behind its transcript cache; ``"scripted"``: the
    greedy script, uncached.

    Replay is strict unless the section (or ``$MARLINKIT_RECORD``) records. A section that records by itself (the
    session presets: talking to the model is their point) records new calls to the git-ignored
    ``workshop_<preset>_local__*.jsonl`` and first looks each call up in the committed ``workshop_<preset>__*.jsonl``
    (the teacher's recording, copied from a local file), so running a notebook never changes a tracked file.
    """
    preset, negotiation = required_preset(cfg), cfg.negotiation
    local = negotiation.record is True
    return llm_config.cached_backend(cfg.llm or negotiation.llm,
                                     f"workshop_{preset}_local" if local else f"workshop_{preset}",
                                     record=negotiation.record, script=greedy_robots, model="greedy-robots",
                                     shared=(f"workshop_{preset}",) if local else ())


def llm_calls(backend: ChatBackend) -> str:
    """One line on where this run's replies came from: the model, the committed transcript, or a script."""
    if not isinstance(backend, TranscriptCache):
        return (f"{llm_config.label(backend)}: {getattr(backend, 'replies', 0)} replies computed by the script "
                "(no model, no transcript)")
    replayed = backend.hits + backend.copied
    return (f"{llm_config.label(backend)}: {backend.misses} calls to the model, {replayed} replies replayed "
            "from data/transcripts/ "
            f"({', '.join(p.name for p in [backend.path, *backend.shared] if p.exists()) or 'none yet'})")


def negotiator(cfg: Config, backend: ChatBackend) -> Negotiation:
    """The negotiation plan source with the workshop's protocol settings (rounds, moves, tokens)."""
    return Negotiation(backend, cfg.negotiation_limits().negotiation_config())


@dataclass(frozen=True)
class Comparison(grid.GridResult):
    """Notebook 04's :class:`~marlinkit.result.Result`: tables ``episodes`` (``grid.run_grid`` rows plus ``curve``:
    MARL, MARLIN (<source>), <source> (alone)) and ``evaluations`` (checkpoint evaluations plus ``curve``)."""

    thresholds: dict[str, float]
    """Plan-source label -> the LLM-only performance Algorithm 1 compared against."""
    llm_calls: str
    """Where the LLM's replies came from in this run (:func:`llm_calls`): the model, the transcript or the script."""


def _comparison(cfg: Config, preset: str, backend: ChatBackend, root: Path) -> Comparison:
    """MARL vs MARLIN with two plan sources: the LLM negotiation and the exact planner (perfect plans, not an LLM).

    Per source: its LLM-only trials first, whose mean is Algorithm 1's threshold (the paper's rule:
    the LLM-only performance *of the plan source in use*); then MARLIN with that threshold. Both
    sources get the same plan budget (:func:`plan_budget`). MARL needs no plan source and is trained once. Curves:
    ``MARL``, ``MARLIN (<source>)`` and ``<source> (alone)`` (``curve_source`` reads the source back).
    """
    base = dataclasses.replace(cfg.grid("marlin"), plan_budget=plan_budget(cfg))
    root = root / "marlin"
    sources = {f"{backend.name} negotiation": ("llm", negotiator(cfg, backend)),
               EXACT_LABEL: ("exact", ExactJointPlanner())}
    episodes, evaluations, thresholds, written = [], [], {}, []
    for label, (folder, source) in sources.items():
        alone_runs = grid.run_grid(dataclasses.replace(base, systems=("LLM-only",)), preset, source, root / folder,
                                   cfg.progress)
        alone = alone_runs.episodes
        thresholds[label] = float(alone.performance.mean())
        systems = ["MARL", "MARLIN"] if folder == "llm" else ["MARLIN"]
        trained = grid.run_grid(dataclasses.replace(base, systems=tuple(systems),
                                                    llm_only_performance={cfg.scenario: thresholds[label]}),
                                preset, source, root / folder, cfg.progress)
        written += [*alone_runs.files, *trained.files]
        for table, out in ((pd.concat([trained.episodes, alone], ignore_index=True), episodes),
                           (trained.evaluations, evaluations)):
            out.append(table.assign(curve=np.select([table.system == "MARL", table.system == "LLM-only"],
                                                    ["MARL", f"{label} (alone)"], f"MARLIN ({label})")))
    tables = {"episodes": pd.concat(episodes, ignore_index=True),
              "evaluations": pd.concat(evaluations, ignore_index=True)}
    return Comparison(EXPERIMENT, preset, cfg, tables, tuple(written), comparison_provenance(cfg, backend), thresholds,
                      llm_calls(backend))


def comparison_table(comparison: Comparison) -> pd.DataFrame:
    """Per MARLIN variant and checkpoint: mean evaluation of MARL and MARLIN and the paper's paired t-test (Table I)."""
    tables = []
    evaluations = comparison.evaluations
    checkpoints = sorted(evaluations.checkpoint.unique())
    for label, threshold in comparison.thresholds.items():
        pair = evaluations[(evaluations.system == "MARL") | (evaluations.curve == f"MARLIN ({label})")]
        table = fig3_training.table1(pair, checkpoints)
        tables.append(table.assign(plan_source=label, llm_only=threshold))
    columns = ["plan_source", "llm_only", "episode", "MARL", "MARLIN", "p_value", "runs"]
    return pd.concat(tables, ignore_index=True)[columns]


# ---------------------------------------------------------------------------------------------
# Figures


def curve_source(curve: str) -> str:
    """The plan source of a curve name (``MARLIN (<source>)``, ``<source> (alone)``), else the name itself
    (``MARL``)."""
    if curve.startswith("MARLIN (") and curve.endswith(")"):
        return curve[len("MARLIN ("):-1]
    return curve.removesuffix(" (alone)")


def learning_curve_figure(episodes: pd.DataFrame, evaluations: pd.DataFrame | None = None, by: str = "system"):
    """Median training performance per episode over copies (interquartile band) for each ``by`` group.

    Checkpoint evaluations (sampled policy) are drawn as dots of the same colour; LLM-only rows
    (a plan source alone, no training) as a dashed line at their mean. Groups named
    ``"MARLIN (<plan source>)"`` and ``"<plan source> (alone)"`` share their plan source's colour.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    palette, colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"]), {}
    for name, rows in episodes.groupby(by, sort=True):
        color = colors.setdefault(curve_source(name), next(palette))
        if (rows.system == "LLM-only").all():
            ax.axhline(rows.performance.mean(), color=color, ls="--", lw=1.2, label=name)
            continue
        grouped = rows.groupby("episode").performance
        median = grouped.median()
        ax.plot(median.index, median.values, color=color, lw=1.4, label=name)
        ax.fill_between(median.index, grouped.quantile(0.25).values, grouped.quantile(0.75).values, color=color,
                        alpha=0.15)
        if evaluations is not None and len(evaluations):
            points = evaluations[evaluations[by] == name].groupby("checkpoint").performance.mean()
            ax.plot(points.index, points.values, "o", color=color, ms=6, mec="white")
    ax.set_xlabel("episode (per environment copy)\nlines: training median over copies (band: quartiles); "
                  "dots: checkpoint evaluation mean; dashed: plan source alone", fontsize=8)
    ax.set_ylabel("performance (mean progress)")
    ax.set_ylim(-0.02, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig
