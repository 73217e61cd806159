"""Fig. 3 (training curves of MARL, MARLIN and the plan source alone) and Table I (checkpoint means and tests).

``run(cfg)`` trains (or loads) the ``fig3_training`` grid; ``figure3`` and ``table1`` draw it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from marlinkit.config_fields import label, required_preset, typed
from marlinkit.errors import parameter
from marlinkit.paper_values import MARLIN_TABLE1
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.envs.corridor.plans import PlanSource
from marlinkit.llm import config as llm_config
from marlinkit.marlin import grid, llm_trials
from marlinkit.marlin.algorithm1 import PLAN
from marlinkit.marlin.grid import GridConfig, GridResult, Results
from marlinkit.plots import Provenance


#: The transcripts of MARLIN's negotiations in training (``data/transcripts/marlin_training__*.jsonl``).
TRANSCRIPT_PURPOSE = "marlin_training"

#: The experiment's section name.
EXPERIMENT = "fig3_training"


@dataclass(frozen=True)
class Config(GridConfig):
    """The ``fig3_training`` section: one MARLIN grid (``grid.GridConfig``, fields documented there) and the
    negotiation protocol that plan source "llm" negotiates by."""

    llm_only: llm_trials.Trials | None = None
    """Plan source "llm": the negotiation protocol and its LLM-only trials (the ``llm_only`` section of
    ``negotiation``'s preset, else of ``preset``; ``presets.get`` fills it in); its ``llm`` is the LLM."""
    preset: str | None = label()
    """The preset whose MARLIN results folder holds the runs (a label: not part of any run's key)."""
    progress: bool = label(True)
    """Print a line per finished run (a label)."""

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "llm_only", typed(llm_trials.Trials, self.llm_only, "llm_only"))


@dataclass(frozen=True)
class Training(GridResult):
    """The ``fig3_training`` :class:`~marlinkit.result.Result`: tables ``episodes`` and ``evaluations``; ``config`` is
    the runs' config (plan source set; with the LLM source, Algorithm 1's thresholds filled in)."""

    plan_source: str
    """How figures name the plan source."""
    protocol: llm_trials.Trials | None = None
    """Plan source "llm": the negotiation protocol and LLM-only trials used."""

    @classmethod
    def of(cls, results: Results, config: Config, preset: str, plan_source: str,
           protocol: llm_trials.Trials | None = None) -> "Training":
        return cls(EXPERIMENT, preset, config, grid.result_tables(results), results.files,
                   provenance(config, preset, plan_source, protocol), plan_source, protocol)


def with_plan_steps(config: Config, plan_steps: str | None) -> Config:
    """``config`` with MAPPO's ``generated_steps`` set to ``plan_steps`` (None: unchanged); a bad value fails here, by
    name."""
    if plan_steps is None:
        return config
    with parameter("PLAN_STEPS", plan_steps):
        return dataclasses.replace(config, mappo=dataclasses.replace(config.mappo, generated_steps=plan_steps))


def settings(config: Config, plan_steps: str | None = None) -> tuple[Config, PlanSource | None, str]:
    """The grid :func:`run` trains for ``config`` (nothing is run): its config, its non-LLM plan source (None
    for "llm", which :func:`run` builds) and how figures name that source. ``plan_steps``: :func:`with_plan_steps`.
    A bad value fails here, by name."""
    config = with_plan_steps(config, plan_steps)
    with parameter("PLAN_SOURCE", config.plan_source):
        return grid.with_plan_source(config)


def run(cfg: Config) -> Training:
    """The runs behind Fig. 3 and Table I: MARL and MARLIN per scenario and seed, and the LLM-only system, saved
    under ``cfg.preset``'s MARLIN results (``data/results/marlin/<preset>/``).

    ``cfg.plan_source``:
    ``"surrogate"``: the calibrated surrogate planner (``marlinkit.marlin.surrogate_planner``, not an LLM) with
    the authors' Llama 3.1 8B thresholds, which its LLM-only performance is calibrated to.
    ``"llm"``: MARLIN negotiates with ``cfg.llm_only.llm`` (None: ``$MARLINKIT_LLM``, else smollm2) by ``cfg.llm_only``,
    behind its transcript cache; Algorithm 1's threshold and the LLM-only box are that LLM's own LLM-only trials
    (``marlinkit.marlin.llm_trials``, the runs of notebooks/marlin/llm_only). ``"exact"``: the exact joint planner, a
    perfect plan source and not an LLM, with the authors' Llama 3.1 8B thresholds.

    ``cfg.switch_rule="code"``: the authors' code variant of Algorithm 1's switch, whose MARLIN runs are saved
    under their own names (``grid.system_tag``); so are MARLIN's runs whose plan steps are kept out of its updates
    (``with_plan_steps(cfg, "separate")``; MARL's are shared).
    """
    preset = required_preset(cfg)
    config = cfg
    if config.negotiation == preset:  # the preset's own protocol: the runs' plain names
        config = dataclasses.replace(config, negotiation=None)
    config, source, label_ = settings(config)
    if config.plan_source != "llm":
        return Training.of(grid.run_grid(config, preset, source=source, progress=cfg.progress), config, preset, label_)
    protocol = config.llm_only
    if protocol is None:
        raise ValueError("plan_source 'llm' negotiates by an llm_only section's protocol: set the config's llm_only")
    protocol_preset = config.negotiation or preset
    missing = sorted(set(config.scenarios) - set(protocol.scenarios))
    if missing:
        raise ValueError(f"preset {protocol_preset!r}: the llm_only section has no trials for {missing}; "
                         "Algorithm 1 needs that LLM's LLM-only performance for every trained scenario")
    source = llm_trials.negotiator(protocol, purpose=TRANSCRIPT_PURPOSE)
    alone = llm_trials.play(protocol, protocol_preset, cfg.progress)
    trials = alone.table
    measured = trials.groupby("scenario").performance.mean().to_dict()
    config = dataclasses.replace(config, systems=("MARL", "MARLIN"),
                                 llm_only_performance=config.llm_only_performance
                                 or {s: measured[s] for s in config.scenarios})
    results = grid.run_grid(config, preset, source=source, progress=cfg.progress)
    llm_only_rows = pd.DataFrame({
        "scenario": trials.scenario, "system": "LLM-only", "seed": trials.seed, "episode": trials.trial + 1,
        "env_copy": 0,
        "layout": trials.scenario, "generator": PLAN, "toggled": False, "plan_cache_hit": False,
        "performance": trials.performance, "steps": core.EPISODE_STEPS, "wall_time_s": trials.seconds})
    llm_only_rows = llm_only_rows[llm_only_rows.scenario.isin(config.scenarios)]
    episodes = pd.concat([results.episodes, llm_only_rows], ignore_index=True)
    return Training.of(Results(episodes, results.evaluations, results.files + alone.paths), config, preset,
                       f"LLM negotiation, {llm_config.label(source.backend)}", protocol)


def variant_note(training: Training) -> str:
    """What figures add to the plan source's name for this training (``grid.variant_note``)."""
    return grid.variant_note(training.config, training.protocol)


def provenance(config: Config, preset: str, plan_source: str, protocol: llm_trials.Trials | None = None) -> Provenance:
    """The provenance of Fig. 3's and Table I's outputs: preset, engine, plan source and seeds on the footer line;
    the plan source's full name, the grid's variant, copies x episodes and the plan budget in its details."""
    budget = "unlimited re-planning" if config.plan_budget is None else f"plan budget {config.plan_budget}"
    llm = plan_source.removeprefix("LLM negotiation, ")
    return Provenance(preset, engine="corridor core (numpy)", source=grid.footer_source(config.plan_source, llm),
                      seeds=config.seeds,
                      details={"plan source": plan_source + grid.variant_note(config, protocol),
                               "protocol": f"{config.n_envs} copies x {config.episodes} episodes, {budget}"})


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
            pairs = at[at.system == "MARL"].merge(at[at.system == "MARLIN"], on=["seed", "run"],
                                                  suffixes=("_marl", "_marlin"))
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

    Save the Markdown with ``markdown_floatfmt=TABLE1_MARKDOWN_FLOATFMT`` so the paper's values keep their trailing
    zeros.

    MARL and MARLIN read "mean ± SD over seeds" when there are several seeds; the across-seed test sits beside the
    per-run one.
    """
    shown = table.copy()
    for column in ("MARL", "MARLIN"):  # the paper_* columns are already the paper's own strings
        sd = table[f"{column}_seed_sd"]
        shown[column] = [f"{m:.4f}" if np.isnan(d) else f"{m:.4f} ± {d:.4f}" for m, d in zip(table[column], sd)]
    for column in ("p_value", "p_value_seeds"):
        shown[column] = table[column].map(lambda p: "n/a" if np.isnan(p) else f"{p:.2g}")
    shown["diff_ci95"] = [("n/a" if np.isnan(lo) else f"[{lo:+.3f}, {hi:+.3f}]")
                          for lo, hi in zip(table.diff_ci_low, table.diff_ci_high)]
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
    """The plan source alone (LLM-only; the exact planner when it is the source): a box from the first to the third
    quartile of its runs with the median, whiskers to the minimum and maximum, and a diamond at the mean (visible
    even when every run scores the same)."""
    from marlinkit.plots import PAPER_COLORS

    values = np.asarray(values, float)
    if not len(values):
        return None
    color = PAPER_COLORS["LLM-only"]
    ax.boxplot([values], positions=[x], widths=width, manage_ticks=False, patch_artist=True, whis=(0, 100),
               boxprops={"facecolor": color, "alpha": 0.45}, medianprops={"color": "black", "lw": 1})
    return ax.plot([x], [values.mean()], "D", color=color, mec="black", mew=0.6, ms=6, zorder=4,
                   label=f"{label}, {len(values)} run{'s' * (len(values) != 1)}:\nbox quartiles, whiskers min-max, "
                         "diamond mean")[0]


def table1_caption(config: Config) -> str:
    """Table I's caption, one sentence (its columns are defined by :func:`table1_details`)."""
    return (f"Table I (reproduction): MARL and MARLIN mean performance at checkpoints {sorted(config.checkpoints)}, "
            "paired t-tests over evaluation runs and over seeds, beside the paper's Table I.")


def table1_details(table: pd.DataFrame, config: Config) -> dict[str, str]:
    """What each of Table I's tests takes as its unit, so that neither p-value is over-read (the table's provenance)."""
    runs, seeds = int(table.runs.iloc[0]), int(table.seeds.iloc[0])
    spread = (f"± SD over {seeds} seeds {list(config.seeds)}" if seeds > 1
              else f"one seed {list(config.seeds)}: no spread")
    return {"mean": f"mean performance at the checkpoint ({spread})",
            "p_value": (f"paired t-test over {runs} evaluation runs (pairs share seed and run; bold: p < "
                        f"{SIGNIFICANCE}); its unit is one evaluation run of the trained policies, so it measures the "
                        "evaluation noise of those policies, not the variation between trainings"),
            "p_value_seeds": f"paired t-test over the {seeds} per-seed means (the seed is the unit)",
            "diff_ci95": "95 % t interval of MARLIN - MARL over seeds",
            "paper_*": "the paper's Table I at episodes 100/850/1600 (Llama 3.1 8B)"}


def seed_curves(episodes: pd.DataFrame, system: str) -> pd.DataFrame:
    """Median performance over copies per episode (rows) and seed (columns) of one system."""
    data = episodes[episodes.system == system]
    return data.groupby(["episode", "seed"]).performance.median().unstack("seed")


#: A panel whose MARLIN episodes after the forced first 2m are at least this share plan episodes says so on the figure:
#: its MARLIN curve then shows the plans far more than the policy.
MOSTLY_PLANS = 0.5


def plan_episodes(results: Results, config: Config) -> pd.DataFrame:
    """Per scenario: the share of MARLIN's copy-episodes that started on a plan, over all episodes and after
    Algorithm 1's forced first 2m (``plan_share_after_<2m>``, where its rule decides), the share toggled at
    step 25, and the plan source alone's mean beside Algorithm 1's threshold."""
    episodes = results.episodes
    marlin = episodes[episodes.system == "MARLIN"]
    forced = 2 * config.switch_config().m
    is_plan = lambda generators: (generators == PLAN).mean()  # noqa: E731
    summary = marlin.groupby("scenario").agg(plan_share=("generator", is_plan), toggled_share=("toggled", "mean"))
    summary[f"plan_share_after_{forced}"] = marlin[marlin.episode > forced].groupby("scenario").generator.apply(is_plan)
    summary["llm_only_mean"] = episodes[episodes.system == "LLM-only"].groupby("scenario").performance.mean()
    summary["llm_only_threshold"] = summary.index.map(config.llm_only_threshold)
    return summary


def _draw_training_panel(ax, results: Results, scenario: str, n_seeds: int, policy: bool, source_label: str,
                         handles: dict) -> None:
    """One corridor's panel of :func:`figure3`: both systems' curves (and their policies' checkpoint evaluations
    where ``policy``) and the plan source alone; the legend handles go to ``handles``."""
    from marlinkit.plots import PAPER_COLORS

    data = results.episodes[results.episodes.scenario == scenario]
    last = int(data.episode.max())
    for system in ("MARL", "MARLIN"):
        curves = seed_curves(data, system)
        # translucent, MARL above MARLIN: where the curves coincide neither hides the other
        handles[system], = ax.plot(curves.index, curves.mean(axis=1), color=PAPER_COLORS[system], label=system, lw=0.9,
                                   alpha=0.75, zorder=3 if system == "MARL" else 2)
        if curves.shape[1] > 1:
            handles[system + " band"] = ax.fill_between(
                curves.index, curves.min(axis=1), curves.max(axis=1), color=PAPER_COLORS[system], alpha=0.18, lw=0,
                label=f"{system}: range over {n_seeds} seeds")
    if policy and not results.evaluations.empty:
        evaluated = results.evaluations[results.evaluations.scenario == scenario]
        for system, marker in (("MARL", "o"), ("MARLIN", "s")):
            per_seed = (evaluated[evaluated.system == system].groupby(["checkpoint", "seed"]).performance.mean()
                        .groupby("checkpoint"))
            if not len(per_seed):
                continue
            mean, low, high = per_seed.mean(), per_seed.min(), per_seed.max()
            handles[system + " policy"] = ax.errorbar(
                mean.index, mean, yerr=[mean - low, high - mean], fmt=marker, ms=4, color=PAPER_COLORS[system],
                mec="black", mew=0.5, capsize=2, lw=0.8, zorder=5,
                label=f"{system}: policy alone, checkpoint evaluation\n(mean, range over seeds)")
    alone = draw_plan_source_alone(ax, data[data.system == "LLM-only"].performance, last * 1.1, last * 0.08,
                                   source_label)
    if alone is not None:
        handles["alone"] = alone
    ax.set_xlim(0, last * 1.18)


def figure3(results: Results, scenarios: list[str], source_label: str = "LLM-only", title: str | None = None,
            plan_share: pd.Series | None = None, policy: bool = False):
    """Median training performance per episode for MARL and MARLIN; the plan source alone (``source_label``)
    at the right of each panel. Panels in rows of three, sized for a two-column paper figure.

    The line is the mean over seeds of each seed's median over copies; the band spans the seeds' medians
    (min to max) when there are several seeds. ``plan_share`` (per scenario, e.g. ``plan_episodes``'
    ``plan_share_after_10``): a panel where it is at least ``MOSTLY_PLANS`` says that MARLIN's curve there is
    mostly its plans, not its policy. ``policy``: also draw each system's policy alone, its checkpoint evaluations
    (``results.evaluations``: mean over seeds of each seed's mean, bars from the lowest to the highest seed), so that
    a curve of plan replays is not read as the policy's.
    """
    import matplotlib.pyplot as plt

    from marlinkit.plots import PAPER_COLORS

    columns = min(3, len(scenarios))
    rows = -(-len(scenarios) // columns)
    legend_below = len(scenarios) == rows * columns  # no spare panel to hold the legend
    fig, axes = plt.subplots(rows, columns, figsize=(7.2, 2.3 * rows + 0.4 + 0.6 * legend_below + 0.3 * bool(title)),
                             sharey=True, squeeze=False)
    n_seeds = results.episodes[results.episodes.system == "MARL"].seed.nunique()
    handles = {}
    for ax, scenario in zip(axes.flat, scenarios):
        _draw_training_panel(ax, results, scenario, n_seeds, policy, source_label, handles)
        share = None if plan_share is None else plan_share.get(scenario)
        if share is not None and share >= MOSTLY_PLANS:
            note = "\nmarkers: its policy alone" if policy else ""
            ax.text(0.43, 0.04, f"MARLIN: {share:.0%} plan\nepisodes, its curve shows\nthe plans, not its policy{note}",
                    transform=ax.transAxes, ha="center", va="bottom", fontsize=6, color=PAPER_COLORS["MARLIN"],
                    bbox={"facecolor": "white", "alpha": 0.8, "lw": 0, "pad": 1.5})
        ax.set_title(get_layout(scenario).title, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(scenarios):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        executed = "executed episodes (plans incl.):\n" if policy else ""
        ax.set_ylabel(f"{executed}median performance\n(mean of {n_seeds} seed{'s' * (n_seeds > 1)})", fontsize=8)
    for ax in axes.flat[max(0, len(scenarios) - columns):len(scenarios)]:
        ax.set_xlabel("episode (per environment copy)", fontsize=8)
    axes[0][0].set_ylim(-0.1, 1.05)  # a plan source alone scoring 0 sits above the axis, not on it
    spare = axes.flat[len(scenarios)] if len(scenarios) < axes.size else None
    if spare is not None:
        spare.legend(handles=list(handles.values()), loc="center", fontsize=8, frameon=False)
    else:
        height = fig.get_figheight()  # inches: the footer takes the lowest ~0.35, the legend ~0.5 above it
        fig.legend(handles=list(handles.values()), loc="lower center", ncol=min(3, len(handles)), fontsize=8,
                   frameon=False, bbox_to_anchor=(0.5, 0.35 / height))
    if title:
        fig.suptitle(title, fontsize=8)
    fig.tight_layout(rect=(0, 0.4 / fig.get_figheight() if spare is not None else 0.9 / fig.get_figheight(), 1, 1))
    return fig
