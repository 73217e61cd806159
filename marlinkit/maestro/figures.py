"""MAESTRO's Figures 1-8 from an :class:`~marlinkit.maestro.ablation.AblationResults`.

Each function draws on axes the notebook makes (``notebooks/maestro/ablation_results.ipynb``,
``maestro_framework.ipynb``) and saves with its provenance. The numbers come from the same
seed-level summaries as the tables (:mod:`marlinkit.maestro.report`, whose docstring defines the
score and the final window): Figures 3 and 8 are learning curves, 4-6 the final scores beside the
paper's Table 2, 7 the difficulty trajectories, and 1-2 the framework drawn from the components
this package runs, annotated with the calls measured.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from marlinkit import paper_values as pv
from marlinkit import stats
from marlinkit.maestro.ablation import ABLATIONS, EVAL_POLICIES, AblationResults, rule_config
from marlinkit.maestro.report import (ILL_CONDITIONED_FRACTION, acceptance, final_by_seed, ill_conditioned,
                                     nan_if_undefined, seed_groups)
from marlinkit.maestro.sandbox import STAGES

COLORS = {"A0": "#7f7f7f", "A2": "#1f77b4", "A7": "#d62728", "A8": "#2ca02c"}


# ----- Figures 3-8: the ablation's results ------------------------------------------------------

def _curve(df: pd.DataFrame, column: str, band: str, seed: int = 0):
    """Mean over seeds per episode and a band: 95 % bootstrap CI ("ci") or +- SD ("sd")."""
    wide = df.pivot(index="episode", columns="seed", values=column).dropna(how="all")
    mean = wide.mean(axis=1)
    if wide.shape[1] < 2:
        return mean, mean, mean
    if band == "sd":
        sd = wide.std(axis=1, ddof=1)
        return mean, mean - sd, mean + sd
    bounds = np.array([stats.bootstrap_ci(row.dropna().to_numpy(), seed=seed) if row.notna().sum() > 1 else (m, m)
                       for (_, row), m in zip(wide.iterrows(), mean)])
    return mean, bounds[:, 0], bounds[:, 1]


def _identical_to(drawn: dict[str, pd.Series], curve: pd.Series) -> str | None:
    """The configuration already drawn whose curve equals ``curve`` value for value (it would hide under it), if any."""
    return next((name for name, other in drawn.items() if other.index.equals(curve.index)
                 and np.array_equal(other.to_numpy(), curve.to_numpy(), equal_nan=True)), None)


def random_level(random: np.ndarray) -> tuple[float, float]:
    """The random switcher's mean and SD over its draws (SD 0 for a single draw)."""
    return float(np.mean(random)), float(np.std(random, ddof=1)) if len(random) > 1 else 0.0


def random_label(random: np.ndarray) -> str:
    """The legend's words for the random phase switcher's level: its mean, SD and draws on the real flow."""
    sd = f" ± {np.std(random, ddof=1):.0f}" if len(random) > 1 else ""
    return f"random phase switcher, real flow: {np.mean(random):.0f}{sd} ({len(random)} draws)"


def baseline_levels(ax, results: AblationResults, random: np.ndarray | None = None, short: bool = False) -> None:
    """The calibrated scale's levels: 165 = max-pressure and 0 = fixed-time (each on the traffic scored), and, where
    given, the random phase switcher's mean on the real flow (a uniform phase request every second, ``random``: one
    calibrated score per seeded draw, :func:`marlinkit.maestro.heldout.random_scores`) with a +- SD band."""
    target = results.config.target_paper
    ax.axhline(target, color="k", ls=":", lw=1,
               label=f"max-pressure ({target:.0f})" if short else f"{target:.0f} = max-pressure on the same traffic")
    ax.axhline(0.0, color="grey", ls=":", lw=1,
               label="fixed-time (0)" if short else "0 = fixed-time on the same traffic")
    if random is not None and len(random):
        mean, sd = random_level(random)
        ax.axhline(mean, color="#9467bd", ls="-.", lw=1, label=random_label(random))
        ax.axhspan(mean - sd, mean + sd, color="#9467bd", alpha=0.08, lw=0)


def learning_curves(ax, results: AblationResults, column: str = "score", band: str = "ci",
                    random: np.ndarray | None = None) -> None:
    """Figures 3 (95 % CI bands) and 8 (SD bands): mean over seeds per episode, beside the scale's levels
    (:func:`baseline_levels`). A curve equal to one drawn before it (A7 whose reward replies all failed trains
    exactly as A2) is dashed and labelled so."""
    drawn: dict[str, pd.Series] = {}
    bad = ill_conditioned(results) if column == "score" else pd.DataFrame(columns=["episode"])
    shown: list[np.ndarray] = []  # band values outside the ill-conditioned episodes: what the y-axis must hold
    for a, frame in results.episodes.groupby("ablation"):
        frame = frame.dropna(subset=[column])
        mean, low, high = _curve(frame, column, band)
        same = _identical_to(drawn, mean)
        ax.plot(mean.index, mean, color=COLORS[a], ls="--" if same else "-",
                label=ABLATIONS[a].label + (f": identical to {same}" if same else ""))
        ax.fill_between(mean.index, low, high, color=COLORS[a], alpha=0.2)
        drawn[a] = mean
        keep = ~mean.index.isin(bad["episode"])
        shown += [np.asarray(low)[keep], np.asarray(high)[keep]]
    baseline_levels(ax, results, random)
    ax.set_xlabel("training episode")
    if len(bad):  # a near-empty context's score divides by almost nothing: keep it drawn, but off a readable axis
        values = np.concatenate([*shown, [0.0, results.config.target_paper]])
        low, high = np.nanmin(values), np.nanmax(values)
        pad = 0.08 * (high - low)
        ax.set_ylim(low - pad, high + pad)
        runs = "; ".join(f"{a} seed {s}, episodes {_ranges(g['episode'])} ({_score_range(g['score'])})"
                         for (a, s), g in bad.groupby(["ablation", "seed"]))
        outside = "; ".join(f"{a} mean leaves the axis at episodes "
                            f"{_ranges(mean.index[(mean < low - pad) | (mean > high + pad)])} "
                            f"({mean[(mean < low - pad) | (mean > high + pad)].min():.0f} to "
                            f"{mean[(mean < low - pad) | (mean > high + pad)].max():.0f})"
                            for a, mean in drawn.items() if ((mean < low - pad) | (mean > high + pad)).any())
        note = (f"y-axis clipped to the curves outside {len(bad)} ill-conditioned episode scores (near-empty contexts: "
                f"max-pressure and fixed-time within {ILL_CONDITIONED_FRACTION:.0%} of the median gap): {runs}"
                + (f". {outside}" if outside else ""))
        ax.text(0.01, 0.02, "\n".join(textwrap.wrap(note, 85)), transform=ax.transAxes, fontsize=5.5, va="bottom")
        # The legend's "best" place inside the axes can sit on the note (curves filling the other corners):
        # beside the axes, both stay readable.
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=7)


def _score_range(scores: pd.Series) -> str:
    """'-40 to 900', with how many have no score (NaN: max-pressure no better than fixed-time)."""
    scored, undefined = scores.dropna(), int(scores.isna().sum())
    text = f"{scored.min():.0f} to {scored.max():.0f}" if len(scored) else ""
    return ", ".join(part for part in (text, f"{undefined} without a score" if undefined else "") if part)


def _ranges(episodes) -> str:
    """Episode numbers as ranges: 30, 180-182, 184."""
    values, parts = sorted(int(e) for e in episodes), []
    for e in values:
        if parts and e == parts[-1][1] + 1:
            parts[-1][1] = e
        else:
            parts.append([e, e])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)


def _spread(values: np.ndarray, gap: float) -> np.ndarray:
    """Label heights near ``values``, at least ``gap`` apart, in the same order (for labels beside markers)."""
    order = np.argsort(values, kind="stable")
    placed = np.asarray(values, float)[order].copy()
    for i in range(1, len(placed)):
        placed[i] = max(placed[i], placed[i - 1] + gap)
    out = np.empty_like(placed)
    out[order] = placed
    return out


def evaluation_curves(ax, results: AblationResults, random: np.ndarray | None = None) -> None:
    """Evaluation score on the real flow per evaluation, mean over seeds: the evaluated policy solid,
    the other dashed; 0 = fixed-time and 165 = max-pressure on that same evaluation episode, and the random
    switcher's level on it (:func:`baseline_levels`)."""
    drawn: dict[str, pd.Series] = {}
    for a, frame in results.episodes.groupby("ablation"):
        for policy in EVAL_POLICIES:
            column = f"eval_score_{policy}"
            mean = frame.dropna(subset=[column]).groupby("episode")[column].mean()
            reported = policy == results.config.eval_policy
            same = _identical_to(drawn, mean)
            ax.plot(mean.index, mean, color=COLORS[a], ls="-" if reported else "--", lw=1.5 if reported else 0.9,
                    label=f"{a} {policy}" + (" (reported)" if reported else "") + (f" = {same}" if same else ""))
            drawn[f"{a} {policy}"] = mean
    baseline_levels(ax, results, random, short=True)
    ax.set_xlabel("training episode")
    ax.set_ylabel("evaluation score, real flow")
    ax.legend(fontsize=6, ncol=2)


def final_boxplot(ax, results: AblationResults, random: np.ndarray | None = None) -> None:
    """Figure 4: final-score box plots; one marker per seed, its label in a column right of the box; the
    random switcher's level on the real flow where given (:func:`baseline_levels`)."""
    final = final_by_seed(results)
    names = [a for a in ABLATIONS if a in set(final["ablation"])]
    # every seed has its own marker, so the box draws no outlier circles (they would show a seed twice)
    ax.boxplot([final.loc[final["ablation"] == a, "score"].to_numpy() for a in names], tick_labels=names, widths=0.4,
               showfliers=False)
    span = float(np.ptp(final["score"])) if len(final) > 1 else 1.0
    bad = ill_conditioned(results)
    flagged = set(map(tuple, bad.loc[bad["in final window"], ["ablation", "seed"]].to_numpy().tolist()))
    label_ys = [np.asarray(ax.get_ylim())]
    for k, a in enumerate(names, 1):
        rows = final[final["ablation"] == a].sort_values("seed")
        xs = k + np.linspace(-0.1, 0.1, len(rows)) if len(rows) > 1 else np.array([k])
        ys = rows["score"].to_numpy()
        ax.scatter(xs, ys, color=COLORS[a], zorder=3, s=25)
        spread = _spread(ys, 0.06 * span)
        label_ys.append(spread)
        for seed, x, y, label_y in zip(rows["seed"], xs, ys, spread):
            flag = (a, seed) in flagged
            ax.annotate(f"{seed}{' *' if flag else ''}", (x, y), xytext=(k + 0.3, label_y), textcoords="data",
                        fontsize=7,
                        va="center", color=COLORS[a], fontweight="bold" if flag else "normal",
                        arrowprops={"arrowstyle": "-", "color": "#aaaaaa", "lw": 0.5})
    ax.set_xlim(0.5, len(names) + 0.6)
    # the spread labels can run past the data; keep every one inside the axes
    every = np.concatenate(label_ys)
    if random is not None and len(random):
        mean, sd = random_level(random)
        every = np.concatenate([every, [mean - sd, mean + sd]])
        baseline_levels(ax, results, random, short=True)
        ax.legend(fontsize=6, loc="best")
    ax.set_ylim(every.min() - 0.04 * span, every.max() + 0.04 * span)
    ax.set_ylabel(f"score, last {results.config.final_window} episodes")
    ax.set_xlabel("configuration (box: quartiles over seeds; markers: the seeds, labelled)"
                  + ("\n* final window holds ill-conditioned scores (Table 2's note)"
                     if flagged else ""), fontsize=8)


def _paper_panel(ax, names: list[str], key: str, error: str | None, ylabel: str) -> None:
    """The paper's Table 2 values in a panel of their own (its episode return is not our score)."""
    shown = [a for a in names if a in pv.MAESTRO_TABLE2]  # A0 is not in the paper's ablation
    x = np.arange(len(shown))
    ax.bar(x, [pv.MAESTRO_TABLE2[a][key] for a in shown], 0.5, color="#bbbbbb", capsize=4,
           yerr=[pv.MAESTRO_TABLE2[a][error] for a in shown] if error else None)
    ax.set_xticks(x, shown)
    ax.set_ylabel(ylabel)
    ax.set_title("paper (Table 2, 4 seeds)", fontsize=9)


def means_and_sds(axes, results: AblationResults, random: np.ndarray | None = None) -> None:
    """Figure 5: mean +- SD over seeds per configuration: ours (final score) left, with the random switcher's level
    on the real flow where given, the paper's (its episode return, Table 2) right, each on its own axis: two
    different quantities."""
    groups = seed_groups(final_by_seed(results))
    names = list(groups)
    x = np.arange(len(names))
    ours_sd = [groups[a].std(ddof=1) if len(groups[a]) > 1 else 0 for a in names]
    axes[0].bar(x, [groups[a].mean() for a in names], 0.5, yerr=ours_sd, color=[COLORS[a] for a in names], capsize=4)
    axes[0].set_xticks(x, names)
    if random is not None and len(random):
        baseline_levels(axes[0], results, random, short=True)
        low, high = axes[0].get_ylim()
        axes[0].set_ylim(low, high + 0.3 * (high - low))  # headroom: the legend above the bars
        axes[0].legend(fontsize=6, loc="upper center")
    axes[0].set_ylabel(f"final score, last {results.config.final_window} episodes\n(0 fixed-time, 165 max-pressure)")
    axes[0].set_title(f"ours ({len(results.config.seeds)} seeds)", fontsize=9)
    _paper_panel(axes[1], names, "mean", "sd", "paper's episode return, episodes 180-199")


def cv_comparison(axes, results: AblationResults) -> None:
    """Figure 6: coefficient of variation over seeds per configuration (lower is better): ours (of the final score)
    left, the paper's (of its episode return, Table 2) right, each on its own axis.

    A CV that is undefined (mean score <= 0, or a single seed) gets no bar but the words "CV undefined".
    """
    groups = seed_groups(final_by_seed(results))
    names = list(groups)
    x = np.arange(len(names))
    ours = [100 * nan_if_undefined(stats.coefficient_of_variation, groups[a]) for a in names]
    axes[0].bar(x, ours, 0.5, color=[COLORS[a] for a in names])
    for position, value in zip(x, ours):
        if not np.isfinite(value):
            axes[0].text(position, 0, "CV undefined", ha="center", va="bottom", fontsize=6, rotation=90)
    axes[0].set_xticks(x, names)
    axes[0].set_ylabel("CV (%) of the final score")
    axes[0].set_title(f"ours ({len(results.config.seeds)} seeds)", fontsize=9)
    _paper_panel(axes[1], names, "cv_pct", None, "CV (%) of the paper's episode return")


def difficulty_trajectories(axes, results: AblationResults, seed: int = 200) -> None:
    """Figure 7: difficulty per episode for one seed (bold) and the others (thin, dashed, drawn on top, so
    that seeds with the same trajectory stay visible); orange marks where the bold seed's d actually fell."""
    styles = ["--", ":", "-.", (0, (5, 1, 1, 1))]
    with_curriculum = [(a, f) for a, f in results.episodes.groupby("ablation") if f["difficulty"].notna().any()]
    for ax, (a, frame) in zip(axes, with_curriculum):  # A0 (no curriculum) has no difficulty
        others = 0
        for s, run in frame.groupby("seed"):
            bold = s == seed
            ax.step(run["episode"], run["difficulty"], where="post", color=COLORS[a], lw=3 if bold else 1.1,
                    alpha=0.45 if bold else 0.95, ls="-" if bold else styles[others % len(styles)],
                    zorder=1 if bold else 2, label=f"seed {s}")
            others += not bold
        run = frame[frame["seed"] == seed]
        last = frame["episode"].max()
        # a "down" decision at the floor leaves d unchanged: shade only real reductions, within the run
        fell = run.loc[(run["difficulty_next"] < run["difficulty"] - 1e-12) & (run["episode"] < last), "episode"]
        for episode in fell:
            ax.axvspan(episode + 0.5, episode + 1.5, color="orange", alpha=0.3, lw=0)
        ax.set_title(ABLATIONS[a].label + ("" if len(fell) else f"\nseed {seed}: d never fell"), fontsize=9)
        ax.set_ylim(0.28, 1.02)
        ax.set_xlim(frame["episode"].min() - 0.5, last + 0.5)
        ax.set_xlabel("training episode")
    axes[0].set_ylabel("difficulty d")
    axes[0].legend(fontsize=6)


# ----- Figures 1 and 2: the framework as this code implements it ---------------------------------

def _box(ax, xy, text, color, width=0.32, height=0.13):
    from matplotlib.patches import FancyBboxPatch

    x, y = xy
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.01",
                                fc=color, ec="#333333", lw=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=7, wrap=True)


def _arrow(ax, start, end, text="", color="#333333", offset=(0.0, 0.02), ha="center"):
    """An arrow; its label sits ``offset`` from the midpoint on a white ground, beside the line, not on it."""
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "color": color, "lw": 1.2})
    if text:
        ax.text((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1], text, fontsize=6.5,
                ha=ha, va="center", color=color, bbox={"fc": "white", "ec": "none", "pad": 0.5})


def framework_diagram(ax, results: AblationResults) -> None:
    """Figure 1: the dual loop, labelled with this run's components, rules and measured call counts."""
    c = rule_config(results.config)
    gen = results.generations[~results.generations["fallback"]]
    n_ctx, n_rew = (int((gen["kind"] == k).sum()) for k in ("context", "reward"))
    runs = results.episodes.groupby(["ablation", "seed"]).ngroups
    ax.set_xlim(0, 1), ax.set_ylim(0, 1), ax.axis("off")
    _box(ax, (0.5, 0.86), f"LLM architect (outer loop)\n{results.llm}", "#fde0c5", 0.5)
    _box(ax, (0.2, 0.6), f"CurriculumArchitect\nllm_adaptive / llm\n{n_ctx} context replies", "#fff2cc")
    _box(ax, (0.8, 0.6), f"RewardSynthesizer (A7)\nsandbox: {' -> '.join(STAGES)}\n{n_rew} reward replies", "#fff2cc")
    _box(ax, (0.2, 0.3), f"Hangzhou 4x4, 16 agents\n{results.engine}\n{results.config.episode_seconds} s episodes",
         "#dae8fc")
    _box(ax, (0.8, 0.3), f"MADDPG (inner loop)\n(1-w(d)) r_env + w(d)*{c.llm_scale:g}*r_LLM\nw in "
                         f"[{c.w_min}, {c.w_max}]", "#d5e8d4")
    _box(ax, (0.5, 0.08), f"difficulty rules (4.2): window {c.window}, up > {c.up_ratio * c.target:.2f}, "
                          f"down < {c.down_ratio * c.target:.2f}, plateau {c.plateau_episodes} eps\n"
                          f"score = 165 x (R - fixed-time) / (max-pressure - fixed-time), both on the same traffic",
                          "#eeeeee", 0.8, 0.1)
    _arrow(ax, (0.35, 0.82), (0.22, 0.67), "difficulty + stats", offset=(-0.03, 0.0), ha="right")
    _arrow(ax, (0.65, 0.82), (0.78, 0.67), "d, stats, goal", offset=(0.03, 0.0), ha="left")
    _arrow(ax, (0.2, 0.53), (0.2, 0.37), "TrafficContext JSON", offset=(0.015, 0.0), ha="left")
    _arrow(ax, (0.8, 0.53), (0.8, 0.37), "compute_reward code", offset=(0.015, 0.0), ha="left")
    _arrow(ax, (0.36, 0.31), (0.64, 0.31), "obs, r_env", offset=(0, 0.025))
    _arrow(ax, (0.64, 0.27), (0.36, 0.27), "phases (actions)", offset=(0, -0.025))
    _arrow(ax, (0.8, 0.23), (0.6, 0.13), "episode returns", offset=(0.03, 0.0), ha="left")
    _arrow(ax, (0.4, 0.13), (0.2, 0.23), "new d -> next context", offset=(-0.03, 0.0), ha="right")
    ax.set_title(f"MAESTRO dual loop as run here ({runs} runs)", fontsize=9)


def architect_diagram(ax, results: AblationResults) -> None:
    """Figure 2: the architect's two generators, their validation and fallbacks, with measured outcomes."""
    acc = acceptance(results).set_index(["kind", "mode"])

    def rate(kind, mode):
        if (kind, mode) not in acc.index:
            return "not run"
        row = acc.loc[(kind, mode)]
        return f"{int(row['accepted'])}/{int(row['calls'])} accepted, {int(row['fallbacks'])} fallbacks"

    ax.set_xlim(0, 1), ax.set_ylim(0, 1), ax.axis("off")
    _box(ax, (0.5, 0.9), "prompt: difficulty d, summary statistics, learning goal", "#fde0c5", 0.6, 0.08)
    _box(ax, (0.22, 0.68), "context prompt\n+ example context for d", "#fff2cc")
    _box(ax, (0.78, 0.68), "reward prompt\n+ example compute_reward", "#fff2cc")
    _box(ax, (0.22, 0.45), "JSON -> TrafficContext schema\n(llm_adaptive: load within 25 %)", "#dae8fc")
    _box(ax, (0.78, 0.45), "sandbox: " + " / ".join(STAGES) + "\n(AST allow-list, limited process, range)", "#dae8fc")
    _box(ax, (0.22, 0.2), "retry with the error (x3),\nthen context_for_difficulty(d)", "#f8cecc")
    _box(ax, (0.78, 0.2), "3 failures: environment reward\nuntil the next trigger", "#f8cecc")
    _box(ax, (0.5, 0.2), "in use: the next\nepisodes' context /\nthe active reward", "#d5e8d4", 0.16, 0.12)
    for x, side in ((0.22, 1), (0.78, -1)):
        _arrow(ax, (x, 0.62), (x, 0.51))
        _arrow(ax, (x, 0.39), (x, 0.26), "rejected", color="#b85450", offset=(0.015, 0.0), ha="left")
        _arrow(ax, (x + side * 0.12, 0.39), (0.5 - side * 0.05, 0.26), "accepted", color="#2e7d32")
    _arrow(ax, (0.4, 0.86), (0.25, 0.75))
    _arrow(ax, (0.6, 0.86), (0.75, 0.75))
    ax.text(0.22, 0.04, f"llm_adaptive: {rate('context', 'llm_adaptive')}\nllm: {rate('context', 'llm')}",
            ha="center", fontsize=7)
    ax.text(0.78, 0.04, f"A7 rewards: {rate('reward', 'llm_reward')}", ha="center", fontsize=7)
    ax.set_title("The LLM architect: generation, validation, fallback (measured in this run)", fontsize=9)
