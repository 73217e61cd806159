"""MARLIN's scalability experiment (paper Fig. 6): pairwise negotiation among many random walkers.

``run`` plays ``trials`` episodes of ``marlinkit.envs.crowd`` for every number of agents
in ``agents``, once per plan source in ``systems``: ``"llm"`` (MARLIN's negotiation behind the
transcript cache ``data/transcripts/fig6_scalability__<backend>__<model>.jsonl``) and ``"exact"``
(the exact joint planner, an upper bound, not an LLM). Both systems see the same seeds, so their
episodes are identical until the first negotiation. One tidy table per system (one row per
episode) goes to ``data/results/marlin/<preset>/`` with its configuration sidecar.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from marlinkit import paths
from marlinkit.plots import Provenance
from marlinkit.result import Result
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs import crowd
from marlinkit.llm import config as llm_config
from marlinkit.llm.cache import transcript_context
from marlinkit.config_fields import key_fields, label, required_preset
from marlinkit.marlin.llm_trials import NegotiationLimits, negotiator, trial_seed
from marlinkit.runs import ResultStore, run_name

SECTION = "fig6_scalability"
SYSTEMS = ("llm", "exact")
ENGINE = "crowd map on the corridor core (numpy)"
SYSTEM_LABELS = {"llm": "LLM negotiation", "exact": "exact joint planner (upper bound)"}


@dataclass(frozen=True)
class Config(NegotiationLimits):
    """The ``fig6_scalability`` section: episodes of many walkers in the corridor network of paper Fig. 6."""

    systems: tuple[str, ...] = SYSTEMS
    """Plan sources: "llm" (MARLIN's negotiation) and "exact" (the exact joint planner, an upper bound)."""
    agents: tuple[int, ...] = (2, 4, 6, 8, 10, 12)
    """Numbers of walkers, each at most the map's start cells."""
    trials: int = 10
    """Episodes per number of walkers and system."""
    seed: int = 0
    """Base seed of the episodes' seeds (``llm_trials.trial_seed``); both systems see the same seeds."""
    max_steps: int = 2000
    """The episode is cut after this many steps; walkers still inside are counted."""
    exit_bias: float = 0.0
    """Probability of a step towards the exit instead of a random one (0: the paper's pure random walk)."""
    cooldown: int = 5
    """Steps before a pair that did not get through may be paired again."""
    max_negotiations: int = 0
    """Negotiations per episode at most (0: no limit); later conflicts are left to the walk."""
    preset: str | None = label()
    """The preset whose MARLIN results folder holds the runs (a label: not part of any run's key)."""
    progress: bool = label(True)
    """Print a line per episode (a label)."""

    def __post_init__(self):
        object.__setattr__(self, "systems", tuple(self.systems))
        object.__setattr__(self, "agents", tuple(int(n) for n in self.agents))
        super().__post_init__()
        unknown = sorted(set(self.systems) - set(SYSTEMS))
        if unknown or not self.systems:
            raise ValueError(f"systems must be a non-empty subset of {SYSTEMS}, got {list(self.systems)}")
        starts = len(crowd.crowd_map_from_ascii().starts)
        bad = [n for n in self.agents if not 1 <= n <= starts]
        if bad or not self.agents:
            raise ValueError(f"agents must be numbers in 1..{starts} (the map's start cells), got {list(self.agents)}")
        if self.trials < 1:
            raise ValueError(f"trials must be >= 1, got {self.trials}")
        self.episode_config()

    def episode_config(self) -> crowd.EpisodeConfig:
        return crowd.EpisodeConfig(max_steps=self.max_steps, max_moves=self.max_moves, exit_bias=self.exit_bias,
                                   cooldown=self.cooldown, max_negotiations=self.max_negotiations)


def _source(system: str, config: Config):
    if system == "exact":
        return ExactJointPlanner(), "none (exact joint planner)"
    source = negotiator(config, purpose=SECTION)
    return source, llm_config.label(source.backend)


def run(cfg: Config) -> Result:
    """Episodes per system x number of agents x trial (loaded when already computed with the same settings), saved
    under ``cfg.preset``'s MARLIN results (``data/results/marlin/<preset>/``), negotiating with ``cfg.llm``. Table
    ``episodes``: one row per system, number of agents and trial (conflicts, negotiations, resolved, LLM calls, steps,
    agents inside)."""
    config, preset, progress = cfg, required_preset(cfg), cfg.progress
    world, episode = crowd.crowd_map_from_ascii(), config.episode_config()
    store = ResultStore(paths.results_dir("marlin", preset))
    tables, written = [], []
    for system in config.systems:
        source, llm_label = _source(system, config)
        run_config = {**key_fields(config), "system": system, "llm": llm_label, "map": crowd.CROWD_MAP}
        name = run_name(SECTION, system, llm_config.slug(llm_label))

        def compute() -> pd.DataFrame:  # called at once, in this iteration
            rows = []
            for trial in range(config.trials):  # trial-major: an interrupted recording covers every agent count
                for n_agents in config.agents:
                    seed = trial_seed(config.seed, f"agents{n_agents}", trial)
                    with transcript_context(run=f"{name} {n_agents} agents trial {trial}", preset=preset):
                        counts = crowd.run_episode(world, n_agents, source, seed, episode)
                    rows.append({"system": system, "llm": llm_label, "agents": n_agents, "trial": trial, "seed": seed,
                                 **counts})
                    if progress:
                        print(f"{system} {n_agents} agents trial {trial}: {counts['negotiations']} negotiations, "
                              f"{counts['resolved']} resolved, {counts['llm_calls']} LLM calls, {counts['steps']} "
                              f"steps, {counts['agents_inside']} inside", flush=True)
            return pd.DataFrame(rows)

        transcript = str(getattr(getattr(source, "backend", None), "path", "")) or None
        tables.append(store.cached(name, run_config, compute, llm=llm_label, engine=ENGINE, transcript_file=transcript))
        written += [store.table_path(name), store.sidecar_path(name), *([transcript] if transcript else [])]
    table = pd.concat(tables, ignore_index=True)
    return Result(SECTION, preset, config, {"episodes": table}, tuple(written), provenance(config, preset, table))


def provenance(config: Config, preset: str, table: pd.DataFrame) -> Provenance:
    """Fig. 6's footer: the LLM against the exact joint planner; the walk and negotiation protocol in its details."""
    llm_label = table.loc[table.system == "llm", "llm"].iloc[0] if (table.system == "llm").any() else None
    return Provenance(
        preset, engine=ENGINE, source=f"LLM {llm_label} vs exact joint planner",
        details={"plan sources": f"{llm_label} vs exact joint planner (upper bound)",
                 "protocol": f"{config.trials} trial(s) per count; walk biased to the exit p={config.exit_bias}; "
                             f"<= {config.max_negotiations or 'any'} negotiation(s)/episode of <= {config.max_moves} "
                             f"moves, {config.max_rounds} round(s), {config.max_new_tokens} tokens"})


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per system and number of agents: mean counts per episode, and the share of negotiations that resolved."""
    grouped = table.groupby(["system", "agents"], sort=True)
    out = grouped.agg(episodes=("trial", "size"), conflicts=("conflicts", "mean"),
                      negotiations=("negotiations", "mean"),
                      resolved=("resolved", "mean"), llm_calls=("llm_calls", "mean"),
                      completion_tokens=("completion_tokens", "mean"), fallbacks=("fallbacks", "mean"),
                      steps=("steps", "mean"), agents_inside=("agents_inside", "mean"),
                      all_left=("agents_inside", lambda v: 100 * (v == 0).mean())).reset_index()
    out = out.rename(columns={"all_left": "all left (% of episodes)"})
    totals = grouped[["resolved", "negotiations"]].sum()
    out["resolved (% of negotiations)"] = 100 * (totals.resolved
                                                 / totals.negotiations.where(totals.negotiations > 0)).to_numpy()
    return out


def draw_map(world: crowd.CrowdMap, ax=None):
    """The map as in paper Fig. 6: grey start cells, the green exit, the examined corridors in blue (``render``'s
    style)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    from marlinkit.envs.corridor.render import FREE_COLOR, GRID_COLOR, WALL_COLOR

    if ax is None:
        ax = Figure(figsize=(4.2, 4.4)).subplots()
    colors = {"start": "#9e9e9e", "exit": "#2ca02c", "corridor": "#6baed6"}
    starts = set(world.starts)
    for x in range(world.width):
        for y in range(world.height):
            color = (WALL_COLOR if not world.valid[x, y] else colors["exit"] if (x, y) == world.exit
                     else colors["start"] if (x, y) in starts else colors["corridor"] if world.corridor_id[x, y] >= 0
                     else FREE_COLOR)
            ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=color, edgecolor=GRID_COLOR, linewidth=0.8))
    for k, path in enumerate(world.corridors):
        (x, y) = np.mean(path, axis=0)
        ax.text(x, y, str(k), ha="center", va="center", fontsize=7, color="#08306b")
    ax.set_xlim(-0.5, world.width - 0.5)
    ax.set_ylim(-0.5, world.height - 0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(world.width))
    ax.set_yticks(range(world.height))
    ax.tick_params(length=0, labelsize=6)
    handles = [Patch(facecolor=colors["start"], label="start"), Patch(facecolor=colors["exit"], label="exit"),
               Patch(facecolor=colors["corridor"], label="corridor (no alternative route)"),
               Patch(facecolor=WALL_COLOR, label="wall")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2, fontsize=7, frameon=False)
    return ax


def figure(summary_table: pd.DataFrame, max_steps: int):
    """Against the number of agents: negotiations (and conflicts), deadlocks resolved, LLM calls and steps until all
    left.

    The planner is drawn as a wide pale line with hollow markers and the LLM on top, narrow and dashed, so
    that equal values show both; the legend sits below the panels, clear of the data.
    """
    import matplotlib.pyplot as plt

    panels = (("negotiations", "negotiations triggered", "negotiations per episode\n(dotted: conflicts found)"),
              ("resolved", "deadlocks resolved", "deadlocks resolved per episode"),
              ("llm_calls", "LLM calls", "LLM calls per episode"),
              ("steps", "steps until all left", f"steps (cut at {max_steps})"))
    styles = {"exact": {"lw": 3.5, "alpha": 0.45, "marker": "o", "ms": 8, "mfc": "none", "zorder": 2,
                        "color": "#1f77b4"},
              "llm": {"lw": 1.2, "ls": "--", "marker": "s", "ms": 3.5, "zorder": 3, "color": "#d62728"}}
    fig, axes = plt.subplots(1, len(panels), figsize=(11.0, 3.5))
    for ax, (column, title, ylabel) in zip(axes, panels):
        for system in sorted(SYSTEMS, key=lambda name: name != "exact"):  # the planner first, underneath
            rows = summary_table[summary_table.system == system]
            if len(rows):
                line, = ax.plot(rows.agents, rows[column], label=SYSTEM_LABELS[system], **styles.get(system, {}))
                if column == "negotiations":  # conflicts beyond max_negotiations are found but left to the walk
                    ax.plot(rows.agents, rows.conflicts, ls=":", color=line.get_color(), lw=1, zorder=1,
                            label=f"{SYSTEM_LABELS[system]}: conflicts found")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("agents")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.set_xticks(sorted(summary_table.agents.unique()))
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    height = fig.get_figheight()  # inches: a provenance footer of up to two lines takes the lowest ~0.4
    fig.legend(handles, labels, loc="lower center", ncol=len(handles), fontsize=7, frameon=False,
               bbox_to_anchor=(0.5, 0.42 / height))
    fig.tight_layout(rect=(0, 0.72 / height, 1, 1))
    return fig
