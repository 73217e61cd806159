"""MAESTRO's Tables 1-7 and Figures 1-8 from an :class:`~marlinkit.maestro.ablation.AblationResults`.

Seed-level statistics as in Section 5.3: one number per (config, seed), the mean over the last
``final_window`` training episodes (the paper: episodes 180-199). The return compared with the
paper is our *score* (see :mod:`marlinkit.maestro.ablation`: 165 = max-pressure level, 0 = fixed-time
level, each on the traffic the episode ran on), a per-episode affine map of our environment
return: CV and the absolute levels are not comparable with the paper's. Traffic metrics come from
the evaluation episodes on the real Hangzhou flow inside the final window, of the evaluated policy
``config.eval_policy`` (both policies in Table 6). Primary metrics are delay, queue and throughput
(:data:`TRAFFIC`), as the paper reports them (Sections 5.3-5.4); average travel time and wait are
secondary (:data:`SECONDARY`): in a 360-s episode only a few dozen of the ~300 vehicles due finish
(:func:`travel_time_note` gives the measured counts), and the unfinished ones count up to the
episode's end, so every controller lands near the same travel time. The paper's values sit next to
ours in every table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marlinkit import paper_values as pv
from marlinkit import stats
from marlinkit.maestro.sandbox import STAGES
from marlinkit.maestro.ablation import ABLATIONS, EVAL_POLICIES, AblationResults

#: Primary traffic metrics (the paper's mean delay, queue length and throughput).
TRAFFIC = {"avg_delay_s": "Avg delay (s)", "avg_queue": "Avg queue (veh)", "throughput": "Throughput (veh/ep)"}
#: Secondary metrics (see the module docstring for why travel time is not primary).
SECONDARY = {"avg_travel_time_s": "Avg travel time (s)", "avg_wait_s": "Avg wait (s)"}
#: Column of each metric in the paper's Table 1 (``paper_values.MAESTRO_TRAFFIC``); queue is not in it.
_PAPER_TABLE1 = {"throughput": 0, "avg_travel_time_s": 1, "avg_delay_s": 2, "avg_wait_s": 3}
_METRICS = {**TRAFFIC, **SECONDARY}
COLORS = {"A2": "#1f77b4", "A7": "#d62728", "A8": "#2ca02c"}


def final_by_seed(results: AblationResults) -> pd.DataFrame:
    """One row per (ablation, seed): final-window means of score, returns and evaluation traffic metrics
    (``eval_<metric>_<policy>`` for both policies; ``eval_<metric>`` is the evaluated policy's)."""
    window = results.config.final_window
    df = results.episodes
    late = df[df["episode"] >= df["episode"].max() + 1 - window]
    evaluated = [f"eval_{k}_{p}" for p in EVAL_POLICIES for k in ("return", "score", *_METRICS, "vehicles")]
    columns = ["score", "env_return", "train_return", "difficulty"] + evaluated
    out = late.groupby(["ablation", "seed"])[columns].mean().reset_index()
    for k in ("return", "score", *_METRICS):
        out[f"eval_{k}"] = out[f"eval_{k}_{results.config.eval_policy}"]
    return out


def travel_time_note(results: AblationResults) -> str:
    """Why average travel time is not a primary metric, with the finished-vehicle counts measured here."""
    df = results.episodes
    finished = pd.concat([df[f"eval_throughput_{p}"] for p in EVAL_POLICIES]).dropna()
    finished = pd.concat([finished, results.baselines["throughput"]])
    due = int(results.baselines["vehicles"].max())
    return (f"travel time and wait are secondary: in a {results.config.episode_seconds}-s episode only "
            f"{int(finished.min())}-{int(finished.max())} of the {due} vehicles due finish, and unfinished ones count "
            f"up to the episode's end, so travel time barely separates controllers")


def _groups(final: pd.DataFrame, column: str = "score") -> dict[str, np.ndarray]:
    return {a: final.loc[final["ablation"] == a, column].to_numpy() for a in ABLATIONS if a in set(final["ablation"])}


def _fmt(x, digits: int = 2) -> str:
    return "—" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{digits}f}"


def _safe(function, *args):
    try:
        return function(*args)
    except ValueError:
        return np.nan


def _paper_traffic(a: str, key: str) -> str:
    """The paper's Table 1 value of a metric, with its % change vs A2 ("—" where the paper has none)."""
    if key not in _PAPER_TABLE1:
        return "—"
    change = pv.MAESTRO_TRAFFIC_CHANGE.get(a)  # the paper's own percentages, not recomputed from rounded values
    return f"{pv.MAESTRO_TRAFFIC[a][_PAPER_TABLE1[key]]}" + (f" ({change[_PAPER_TABLE1[key]]})" if change else "")


def table1(results: AblationResults, seed: int = 200) -> pd.DataFrame:
    """Table 1: traffic metrics of the evaluated policy late in training, one seed, % change vs A2, with
    fixed-time and max-pressure on the same evaluation episode; primary metrics first."""
    final = final_by_seed(results)
    final = final[final["seed"] == seed].set_index("ablation")
    rows = []
    for name, base in results.baselines.set_index("controller").iterrows():
        rows.append({"Condition": f"{name} (same evaluation episode)",
                     **{label: f"{base[key]:.1f}" for key, label in _METRICS.items()},
                     **{f"paper {label}": "—" for label in _METRICS.values()}})
    for a in final.index:
        row = {"Condition": f"{ABLATIONS[a].label}, {results.config.eval_policy} policy"}
        for key, label in _METRICS.items():
            ours, base = final.loc[a, f"eval_{key}"], final.loc["A2", f"eval_{key}"] if "A2" in final.index else np.nan
            change = f" ({100 * (ours - base) / base:+.1f}%)" if a != "A2" and base else ""
            row[label] = f"{ours:.1f}{change}"
            row[f"paper {label}"] = _paper_traffic(a, key)
        rows.append(row)
    return pd.DataFrame(rows)


def table2(results: AblationResults) -> pd.DataFrame:
    """Table 2: mean +- SD, CV, Sharpe vs A2, best and worst seed of the final score."""
    groups = _groups(final_by_seed(results))
    base = groups["A2"].mean() if "A2" in groups else np.nan
    rows = []
    for a, values in groups.items():
        paper = pv.MAESTRO_TABLE2[a]
        sharpe = np.nan if a == "A2" else _safe(stats.sharpe_ratio, values, base)
        rows.append({"Condition": ABLATIONS[a].label, "Curric.": ABLATIONS[a].curriculum_mode,
                     "Reward": "LLM-shaped" if ABLATIONS[a].llm_reward else "Template",
                     "Mean ± SD": f"{values.mean():.2f} ± {_fmt(values.std(ddof=1) if len(values) > 1 else np.nan)}",
                     "CV (%)": _fmt(100 * _safe(stats.coefficient_of_variation, values)),
                     "SR": _fmt(sharpe), "Best": _fmt(values.max()), "Worst": _fmt(values.min()),
                     "paper Mean ± SD": f"{paper['mean']:.2f} ± {paper['sd']:.2f}", "paper CV (%)": _fmt(paper["cv_pct"]),
                     "paper SR": _fmt(paper["sharpe"]), "paper Best": _fmt(paper["best"]), "paper Worst": _fmt(paper["worst"])})
    return pd.DataFrame(rows)


def table3(results: AblationResults) -> pd.DataFrame:
    """Table 3: per-seed final score, Mean/SD/Range, and the per-seed range row; paper rows below."""
    final = final_by_seed(results)
    wide = final.pivot(index="ablation", columns="seed", values="score")
    seeds = list(wide.columns)
    rows = []
    for a in wide.index:
        values = wide.loc[a].dropna().to_numpy()
        rows.append({"Condition": f"ours {ABLATIONS[a].label}", **{f"Seed {s}": _fmt(wide.loc[a, s]) for s in seeds},
                     "Mean": _fmt(values.mean()), "SD": _fmt(values.std(ddof=1) if len(values) > 1 else np.nan),
                     "Range": _fmt(np.ptp(values))})
    rows.append({"Condition": "ours per-seed range", **{f"Seed {s}": _fmt(np.ptp(wide[s].dropna())) for s in seeds},
                 "Mean": "—", "SD": "—", "Range": "—"})
    for a, per_seed in pv.MAESTRO_TABLE3_SEEDS.items():
        summary = pv.MAESTRO_TABLE3_SUMMARY[a]
        rows.append({"Condition": f"paper {ABLATIONS[a].label}",
                     **{f"Seed {s}": _fmt(per_seed.get(s)) for s in seeds},
                     "Mean": _fmt(summary["mean"]), "SD": _fmt(summary["sd"]), "Range": _fmt(summary["range"])})
    return pd.DataFrame(rows)


def _effect_label(d: float) -> str:
    size = abs(d)
    return "—" if not np.isfinite(size) else "Large" if size >= 0.8 else "Medium" if size >= 0.5 else "Small" if size >= 0.2 else "Negligible"


def table4(results: AblationResults) -> pd.DataFrame:
    """Table 4: Mann-Whitney U (exact, Bonferroni over the pairs), Cohen's d, seeds for 80 % power."""
    groups = _groups(final_by_seed(results))
    rows = []
    for row in stats.pairwise_mann_whitney(groups) if len(groups) > 1 else []:
        first, second = row["comparison"].split(" vs ")
        d = row["cohens_d"]
        paper = pv.MAESTRO_TABLE4.get((first, second), {})
        rows.append({"Comparison": row["comparison"], "U": _fmt(row["U"], 1), "p": _fmt(row["p"], 3),
                     "p (Bonferroni)": _fmt(row["p_bonferroni"], 3), "Cohen's d": _fmt(d), "Effect": _effect_label(d),
                     "Significant?": "Yes" if row["p_bonferroni"] < 0.05 else "No",
                     "seeds for 80% power at our d": _safe(stats.seeds_for_power, d),
                     "paper U": _fmt(paper.get("U"), 1), "paper p": _fmt(paper.get("p"), 3),
                     "paper d": _fmt(paper.get("cohens_d")),
                     "paper seeds for power (its d)": pv.MAESTRO_POWER_SEEDS.get((first, second))})
    return pd.DataFrame(rows)


#: Captions of the saved tables: every quantity a reader needs is defined here, next to the code.
CAPTIONS = {
    "table1": ("Table 1: traffic metrics (primary: delay, queue, throughput), evaluation episodes on the real flow in "
               "the final window, seed {seed}; % vs A2; fixed-time and max-pressure on the same evaluation episode. "
               "Paper columns: its Table 1 (CityFlow; it gives no queue), percentages as the paper prints them."),
    "table2": ("Table 2: final score per condition. score = 165 x (R - R_fixed) / (R_maxpressure - R_fixed), an affine "
               "map of our training-episode return R (165 = max-pressure, 0 = fixed-time 30 s, both run on the same "
               "traffic: the episode's context and SUMO seed), averaged over the last {window} episodes of each seed; Mean ± SD over seeds (SD with ddof=1). "
               "CV = SD / mean, undefined (—) when the mean score is <= 0; SR (Sharpe) = (mean - A2 mean) / SD. "
               "Paper columns: its Table 2 (episode return, not our score: levels and CV are not comparable)."),
    "table3": "Table 3: per-seed final score (see Table 2 for score); paper rows from its Table 3.",
    "table4": ("Table 4: two-sided Mann-Whitney U per pair 'X vs Y'. U = min(U_X, U_Y), U_X counting pairs with "
               "x > y (ties 1/2); p exact when no ties, else the exact tie-correct permutation p; Bonferroni over "
               "the {pairs} pairs. Cohen's d = (mean Y - mean X) / pooled SD (ddof=1): positive when the second-named "
               "condition scores higher. Seeds for 80% power: per condition, two-sided t-test at alpha 0.05, "
               "computed from our d; the paper's number comes from its own d, so equal counts are no agreement."),
    "table6": ("Table 6: evaluation score and traffic metrics mean ± SD across seeds, both evaluated policies "
               "(the paper gives seed 200 only)."),
    "table7": ("Table 7: risk metrics of the final score over seeds (the paper's finance names for seed-level "
               "numbers). Sharpe = (mean - A2 mean) / SD; Sortino = (mean - A2 mean) / downside deviation, "
               "sqrt(sum(min(0, x - own mean)^2) / (n - 1)); VaR (5%) = the empirical 5 % quantile (inverted CDF: "
               "the worst seed for n < 20); max drawdown = mean - worst seed (not a peak-to-trough of a time "
               "series); success = share of seeds with score >= 0.95 x 165."),
}


def caption(name: str, results: AblationResults) -> str:
    """The caption of table ``name`` (a key of :data:`CAPTIONS`), filled in from ``results``, with provenance."""
    groups = _groups(final_by_seed(results))
    text = CAPTIONS[name].format(seed=200, window=results.config.final_window, pairs=len(groups) * (len(groups) - 1) // 2)
    return f"{text} {results.provenance()}"


def cost_breakdown(results: AblationResults) -> pd.DataFrame:
    """Table 5: wall time per component, summed over runs, per run, and the paper's (200 episodes, GPU)."""
    df, gen = results.episodes, results.generations
    runs = df.groupby(["ablation", "seed"]).ngroups
    components = {  # evaluation and calibration (fixed-time, max-pressure) episodes count as simulation
        "simulation": df["sim_s"].sum() + df["eval_s"].sum() + df["baseline_s"].sum(),
        "MADDPG training": df["train_s"].sum(),
        "LLM curriculum calls": df["llm_curriculum_s"].sum(),
        "LLM reward calls": df["llm_reward_s"].sum() + df["reward_eval_s"].sum(),
    }
    calls = {"LLM curriculum calls": gen[(gen["kind"] == "context") & ~gen["fallback"]],
             "LLM reward calls": gen[(gen["kind"] == "reward") & ~gen["fallback"]]}
    total = sum(components.values())
    paper_total = 3.5
    rows = []
    for name, seconds in components.items():
        frame = calls.get(name)
        rows.append({"Component": name, "Calls (all runs)": len(frame) if frame is not None else "—",
                     "Model latency per call (s)": _fmt(frame["llm_seconds"].mean()) if frame is not None and len(frame) else "—",
                     "Total (s, all runs)": _fmt(seconds, 1), "Per run (s)": _fmt(seconds / runs, 1),
                     "Percentage": f"{100 * seconds / total:.1f}%",
                     "paper total": f"{pv.MAESTRO_COST_HOURS[name]:.2f} h",
                     "paper percentage": f"{100 * pv.MAESTRO_COST_HOURS[name] / paper_total:.1f}%"})
    rows.append({"Component": "Total", "Calls (all runs)": "—", "Model latency per call (s)": "—",
                 "Total (s, all runs)": _fmt(total, 1), "Per run (s)": _fmt(total / runs, 1), "Percentage": "100%",
                 "paper total": f"{paper_total:.2f} h", "paper percentage": "100%"})
    return pd.DataFrame(rows)


def table6(results: AblationResults) -> pd.DataFrame:
    """Table 6 as A.5 asks for it: evaluation score and traffic metrics, mean +- SD across seeds, for both
    evaluated policies (the evaluated one first; the paper: seed 200 only)."""
    final = final_by_seed(results)
    policies = sorted(EVAL_POLICIES, key=lambda p: p != results.config.eval_policy)
    rows = []
    for a, frame in final.groupby("ablation"):
        for policy in policies:
            row = {"Condition": ABLATIONS[a].label, "policy": policy + (" (reported)" if policy == results.config.eval_policy else ""),
                   "seeds": len(frame)}
            for key, label in {"score": "Eval score", **_METRICS}.items():
                values = frame[f"eval_{key}_{policy}"]
                row[label] = f"{values.mean():.1f} ± {values.std(ddof=1):.1f}" if len(values) > 1 else f"{values.mean():.1f}"
            row.update({f"paper {label} (seed 200)": _paper_traffic(a, key) for key, label in _METRICS.items()})
            rows.append(row)
    return pd.DataFrame(rows)


def table7(results: AblationResults) -> pd.DataFrame:
    """Table 7: Sharpe, Sortino, VaR (5 %), max drawdown, success rate (score >= 0.95 x 165)."""
    groups = _groups(final_by_seed(results))
    base = groups["A2"].mean() if "A2" in groups else np.nan
    threshold = 0.95 * results.config.target_paper
    rows = []
    for a, values in groups.items():
        paper = pv.MAESTRO_TABLE7[a]
        rows.append({"Condition": ABLATIONS[a].label,
                     "Sharpe": "—" if a == "A2" else _fmt(_safe(stats.sharpe_ratio, values, base)),
                     "Sortino": "—" if a == "A2" else _fmt(_safe(stats.sortino_ratio, values, base)),
                     "VaR (5%)": _fmt(stats.value_at_risk(values)), "Max drawdown": _fmt(stats.max_drawdown(values)),
                     "Success rate": f"{100 * stats.success_rate(values, threshold):.0f}% "
                                     f"({int(np.sum(values >= threshold))}/{len(values)})",
                     "paper Sharpe": _fmt(paper["sharpe"]), "paper Sortino": _fmt(paper["sortino"]),
                     "paper VaR": _fmt(paper["var_5"]), "paper MDD": _fmt(paper["max_drawdown"]),
                     "paper success": f"{100 * paper['success_rate']:.0f}%"})
    return pd.DataFrame(rows)


def acceptance(results: AblationResults) -> pd.DataFrame:
    """LLM replies per kind and mode: calls, accepted, rate, fallbacks, rewards retired in training (budget, crash)."""
    gen = results.generations
    calls = gen[~gen["fallback"]]
    out = calls.groupby(["kind", "mode"]).agg(calls=("accepted", "size"), accepted=("accepted", "sum")).reset_index()
    out["acceptance"] = out["accepted"] / out["calls"]
    fallbacks = gen[gen["fallback"]].groupby(["kind", "mode"]).size().rename("fallbacks").reset_index()
    out = out.merge(fallbacks, on=["kind", "mode"], how="left").fillna({"fallbacks": 0})
    reasons = calls[~calls["accepted"]].groupby(["kind", "mode"])["reason"].agg(
        lambda r: "; ".join(pd.Series([x.split(":")[0] for x in r]).value_counts().head(3).index))
    out = out.merge(reasons.rename("top rejection stages").reset_index(), on=["kind", "mode"], how="left")
    retired = gen[gen["kind"] == "retire"].groupby("mode").size()  # accepted rewards retired in training
    out["retired in training"] = [int(retired.get(m, 0)) if k == "reward" else 0 for k, m in zip(out["kind"], out["mode"])]
    return out.fillna({"top rejection stages": "—"})


# ----- figures -----------------------------------------------------------------------------------

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


def learning_curves(ax, results: AblationResults, column: str = "score", band: str = "ci") -> None:
    """Figures 3 (95 % CI bands) and 8 (SD bands): mean over seeds per episode."""
    for a, frame in results.episodes.groupby("ablation"):
        frame = frame.dropna(subset=[column])
        mean, low, high = _curve(frame, column, band)
        ax.plot(mean.index, mean, color=COLORS[a], label=ABLATIONS[a].label)
        ax.fill_between(mean.index, low, high, color=COLORS[a], alpha=0.2)
    ax.axhline(results.config.target_paper, color="k", ls=":", lw=1, label="165 = max-pressure on the same traffic")
    ax.axhline(0.0, color="grey", ls=":", lw=1, label="0 = fixed-time on the same traffic")
    ax.set_xlabel("training episode")
    ax.legend(fontsize=7)


def _spread(values: np.ndarray, gap: float) -> np.ndarray:
    """Label heights near ``values``, at least ``gap`` apart, in the same order (for labels beside markers)."""
    order = np.argsort(values, kind="stable")
    placed = np.asarray(values, float)[order].copy()
    for i in range(1, len(placed)):
        placed[i] = max(placed[i], placed[i - 1] + gap)
    out = np.empty_like(placed)
    out[order] = placed
    return out


def evaluation_curves(ax, results: AblationResults) -> None:
    """Evaluation score on the real flow per evaluation, mean over seeds: the evaluated policy solid,
    the other dashed; 0 = fixed-time and 165 = max-pressure on that same evaluation episode."""
    for a, frame in results.episodes.groupby("ablation"):
        for policy in EVAL_POLICIES:
            column = f"eval_score_{policy}"
            mean = frame.dropna(subset=[column]).groupby("episode")[column].mean()
            reported = policy == results.config.eval_policy
            ax.plot(mean.index, mean, color=COLORS[a], ls="-" if reported else "--", lw=1.5 if reported else 0.9,
                    label=f"{a} {policy}" + (" (reported)" if reported else ""))
    ax.axhline(results.config.target_paper, color="k", ls=":", lw=1, label="max-pressure (165)")
    ax.axhline(0.0, color="grey", ls=":", lw=1, label="fixed-time (0)")
    ax.set_xlabel("training episode")
    ax.set_ylabel("evaluation score, real flow")
    ax.legend(fontsize=6, ncol=2)


def final_boxplot(ax, results: AblationResults) -> None:
    """Figure 4: final-score box plots; one marker per seed, its label in a column right of the box."""
    final = final_by_seed(results)
    names = [a for a in ABLATIONS if a in set(final["ablation"])]
    # every seed has its own marker, so the box draws no outlier circles (they would show a seed twice)
    ax.boxplot([final.loc[final["ablation"] == a, "score"].to_numpy() for a in names], tick_labels=names, widths=0.4,
               showfliers=False)
    span = float(np.ptp(final["score"])) if len(final) > 1 else 1.0
    for k, a in enumerate(names, 1):
        rows = final[final["ablation"] == a].sort_values("seed")
        xs = k + np.linspace(-0.1, 0.1, len(rows)) if len(rows) > 1 else np.array([k])
        ys = rows["score"].to_numpy()
        ax.scatter(xs, ys, color=COLORS[a], zorder=3, s=25)
        for seed, x, y, label_y in zip(rows["seed"], xs, ys, _spread(ys, 0.06 * span)):
            ax.annotate(str(seed), (x, y), xytext=(k + 0.3, label_y), textcoords="data", fontsize=7, va="center",
                        color=COLORS[a], arrowprops={"arrowstyle": "-", "color": "#aaaaaa", "lw": 0.5})
    ax.set_xlim(0.5, len(names) + 0.6)
    ax.set_ylabel(f"score, last {results.config.final_window} episodes")
    ax.set_xlabel("configuration (box: quartiles over seeds; markers: the seeds, labelled)", fontsize=8)


def means_and_sds(ax, results: AblationResults) -> None:
    """Figure 5: mean +- SD per config, ours and the paper's side by side."""
    groups = _groups(final_by_seed(results))
    names = list(groups)
    x = np.arange(len(names))
    ours = [groups[a].mean() for a in names]
    ours_sd = [groups[a].std(ddof=1) if len(groups[a]) > 1 else 0 for a in names]
    paper = [pv.MAESTRO_TABLE2[a]["mean"] for a in names]
    paper_sd = [pv.MAESTRO_TABLE2[a]["sd"] for a in names]
    ax.bar(x - 0.2, ours, 0.4, yerr=ours_sd, color=[COLORS[a] for a in names], capsize=4, label="ours (score)")
    ax.bar(x + 0.2, paper, 0.4, yerr=paper_sd, color="#bbbbbb", capsize=4, label="paper (Table 2)")
    ax.set_xticks(x, names)
    ax.legend(fontsize=7)


def cv_comparison(ax, results: AblationResults) -> None:
    """Figure 6: coefficient of variation per config (lower is better), ours and the paper's.

    A CV that is undefined (mean score <= 0, or a single seed) gets no bar but the words "CV undefined".
    """
    groups = _groups(final_by_seed(results))
    names = list(groups)
    x = np.arange(len(names))
    ours = [100 * _safe(stats.coefficient_of_variation, groups[a]) for a in names]
    ax.bar(x - 0.2, ours, 0.4, color=[COLORS[a] for a in names], label="ours (score)")
    for position, value in zip(x, ours):
        if not np.isfinite(value):
            ax.text(position - 0.2, 0, "CV undefined", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.bar(x + 0.2, [pv.MAESTRO_TABLE2[a]["cv_pct"] for a in names], 0.4, color="#bbbbbb", label="paper (Table 2)")
    ax.set_xticks(x, names)
    ax.set_ylabel("CV (%)")
    ax.legend(fontsize=7)


def difficulty_trajectories(axes, results: AblationResults, seed: int = 200) -> None:
    """Figure 7: difficulty per episode for one seed (bold) and the others (thin, dashed, drawn on top, so
    that seeds with the same trajectory stay visible); orange marks where the bold seed's d actually fell."""
    styles = ["--", ":", "-.", (0, (5, 1, 1, 1))]
    for ax, (a, frame) in zip(axes, results.episodes.groupby("ablation")):
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
    from marlinkit.maestro import curriculum as cur

    c = cur.CurriculumConfig(target=results.config.target_paper)
    gen = results.generations[~results.generations["fallback"]]
    n_ctx, n_rew = (int((gen["kind"] == k).sum()) for k in ("context", "reward"))
    runs = results.episodes.groupby(["ablation", "seed"]).ngroups
    ax.set_xlim(0, 1), ax.set_ylim(0, 1), ax.axis("off")
    _box(ax, (0.5, 0.86), f"LLM architect (outer loop)\n{results.llm}", "#fde0c5", 0.5)
    _box(ax, (0.2, 0.6), f"CurriculumArchitect\nllm_adaptive / llm\n{n_ctx} context replies", "#fff2cc")
    _box(ax, (0.8, 0.6), f"RewardSynthesizer (A7)\nsandbox: {' -> '.join(STAGES)}\n{n_rew} reward replies", "#fff2cc")
    _box(ax, (0.2, 0.3), f"Hangzhou 4x4, 16 agents\n{results.engine}\n{results.config.episode_seconds} s episodes", "#dae8fc")
    _box(ax, (0.8, 0.3), f"MADDPG (inner loop)\n(1-w(d)) r_env + w(d)*{c.llm_scale:g}*r_LLM\nw in [{c.w_min}, {c.w_max}]", "#d5e8d4")
    _box(ax, (0.5, 0.08), f"difficulty rules (4.2): window {c.window}, up > {c.up_ratio * c.target:.2f}, "
                          f"down < {c.down_ratio * c.target:.2f}, plateau {c.plateau_episodes} eps\n"
                          f"score = 165 x (R - fixed-time) / (max-pressure - fixed-time), both on the same traffic", "#eeeeee", 0.8, 0.1)
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
