"""MAESTRO's Tables 1-7 from an :class:`~marlinkit.maestro.ablation.AblationResults`, as data frames.

Its Figures 1-8 are drawn by :mod:`marlinkit.maestro.figures` from the same summaries.

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

import itertools
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from marlinkit import paper_values as pv
from marlinkit import stats
from marlinkit.maestro.ablation import ABLATIONS, EVAL_POLICIES, AblationResults, rule_config

if TYPE_CHECKING:
    from marlinkit.plots import Provenance

#: Primary traffic metrics (the paper's mean delay, queue length and throughput).
TRAFFIC = {"avg_delay_s": "Avg delay (s)", "avg_queue": "Avg queue (veh)", "throughput": "Throughput (veh/ep)"}
#: Secondary metrics (see the module docstring for why travel time is not primary).
SECONDARY = {"avg_travel_time_s": "Avg travel time (s)", "avg_wait_s": "Avg wait (s)"}
#: Column of each metric in the paper's Table 1 (``paper_values.MAESTRO_TRAFFIC``); queue is not in it.
_PAPER_TABLE1 = {"throughput": 0, "avg_travel_time_s": 1, "avg_delay_s": 2, "avg_wait_s": 3}
_METRICS = {**TRAFFIC, **SECONDARY}


def in_final_window(results: AblationResults) -> pd.Series:
    """Which episode rows lie in the final window (the last ``final_window`` episodes) that Tables 2-4 and 7 average."""
    episode = results.episodes["episode"]
    return episode >= episode.max() + 1 - results.config.final_window


def final_by_seed(results: AblationResults) -> pd.DataFrame:
    """One row per (ablation, seed): final-window means of score, returns and evaluation traffic metrics
    (``eval_<metric>_<policy>`` for both policies; ``eval_<metric>`` is the evaluated policy's)."""
    late = results.episodes[in_final_window(results)]
    evaluated = [f"eval_{k}_{p}" for p in EVAL_POLICIES for k in ("return", "score", *_METRICS, "vehicles")]
    columns = ["score", "env_return", "train_return", "difficulty"] + evaluated
    out = late.groupby(["ablation", "seed"])[columns].mean().reset_index()
    for k in ("return", "score", *_METRICS):
        out[f"eval_{k}"] = out[f"eval_{k}_{results.config.eval_policy}"]
    return out


#: A training episode's calibration is ill-conditioned when its max-pressure and fixed-time returns lie closer than
#: this fraction of the results' median gap (a near-empty context: both controllers barely delay anyone, and the
#: score divides by almost nothing). Its score is kept, as the run's rule saw it, and flagged. Where max-pressure did
#: no better than fixed-time the score is undefined (NaN): the rule skipped it (curriculum reading 9), and the
#: final-window means average the scored episodes.
ILL_CONDITIONED_FRACTION = 0.05


def ill_conditioned(results: AblationResults, fraction: float = ILL_CONDITIONED_FRACTION) -> pd.DataFrame:
    """Training episodes whose score is ill-conditioned (:data:`ILL_CONDITIONED_FRACTION`), one row each, with
    whether the episode lies in the final window (and so in Tables 2-4 and 7)."""
    df = results.episodes
    gap = df["max_pressure_return"] - df["fixed_time_return"]
    bad = gap < fraction * gap.median()
    out = df.loc[bad, ["ablation", "seed", "episode", "difficulty", "fixed_time_return", "max_pressure_return",
                       "score"]]
    out.insert(6, "gap", gap[bad])
    out["in final window"] = in_final_window(results)[bad]
    return out.reset_index(drop=True)


def ill_conditioned_note(results: AblationResults) -> str:
    """What the ill-conditioned episodes do to the final scores ("" when there are none)."""
    bad = ill_conditioned(results)
    if bad.empty:
        return ""
    runs = ", ".join(f"{a} seed {s}: {len(g)}" for (a, s), g in bad.groupby(["ablation", "seed"]))
    undefined = int(bad["score"].isna().sum())
    text = (f"{len(bad)} training episodes have an ill-conditioned score (max-pressure and fixed-time within "
            f"{ILL_CONDITIONED_FRACTION:.0%} of the median gap on their near-empty context"
            + (f", {undefined} of them with no score: max-pressure no better than fixed-time" if undefined else "")
            + f"; {runs})")
    final = bad[bad["in final window"]]
    if final.empty:
        return text + ", none in the final window."
    window, late = results.config.final_window, results.episodes[in_final_window(results)]
    parts = []
    for (a, s), g in final.groupby(["ablation", "seed"]):
        run = late[(late["ablation"] == a) & (late["seed"] == s)]
        kept = run[~run["episode"].isin(g["episode"])]["score"].mean()
        scored = int(g["score"].notna().sum())
        parts.append(f"{a} seed {s}: {len(g)} of its last {window}"
                     + (f", final score {run['score'].mean():.1f} with them, {kept:.1f} without" if scored
                        else f" (none scored), final score {kept:.1f} over the scored episodes"))
    return text + "; in the final window " + "; ".join(parts) + "."


def travel_time_note(results: AblationResults) -> str:
    """Why average travel time is not a primary metric, with the finished-vehicle counts measured here."""
    df = results.episodes
    finished = pd.concat([df[f"eval_throughput_{p}"] for p in EVAL_POLICIES]).dropna()
    finished = pd.concat([finished, results.baselines["throughput"]])
    due = int(results.baselines["vehicles"].max())
    return (f"travel time and wait are secondary: in a {results.config.episode_seconds}-s episode only "
            f"{int(finished.min())}-{int(finished.max())} of the {due} vehicles due finish, and unfinished ones count "
            f"up to the episode's end, so travel time barely separates controllers")


def seed_groups(final: pd.DataFrame, column: str = "score") -> dict[str, np.ndarray]:
    """The seed-level values of ``column`` per ablation, in the order of ``ABLATIONS``."""
    return {a: final.loc[final["ablation"] == a, column].to_numpy() for a in ABLATIONS if a in set(final["ablation"])}


def _fmt(x, digits: int = 2) -> str:
    return "—" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{digits}f}"


#: The paper's columns of a configuration it did not run (A0): every value absent, printed "—".
_NOT_IN_PAPER = {key: None for key in ("mean", "sd", "cv_pct", "sharpe", "best", "worst", "sortino", "var_5",
                                       "max_drawdown", "success_rate")}


def nan_if_undefined(function, *args):
    """``function(*args)``, or NaN where the statistic is undefined (it raises ValueError)."""
    try:
        return function(*args)
    except ValueError:
        return np.nan


def _paper_traffic(a: str, key: str) -> str:
    """The paper's Table 1 value of a metric, with its % change vs A2 ("—" where the paper has none)."""
    if key not in _PAPER_TABLE1 or a not in pv.MAESTRO_TRAFFIC:  # A0: not in the paper's ablation
        return "—"
    change = pv.MAESTRO_TRAFFIC_CHANGE.get(a)  # the paper's own percentages, not recomputed from rounded values
    return f"{pv.MAESTRO_TRAFFIC[a][_PAPER_TABLE1[key]]}" + (f" ({change[_PAPER_TABLE1[key]]})" if change else "")


#: Tables 1 and 6: the column between our traffic levels and the paper's, which says they are not comparable (the
#: paper's episodes are its own CityFlow runs of another length and flow: vehicles and seconds differ in scale).
VS_PAPER, NOT_COMPARABLE = "vs paper", "not comparable"


def table1(results: AblationResults, seed: int = 200) -> pd.DataFrame:
    """Table 1: traffic metrics of the evaluated policy late in training, one seed, % change vs A2, with
    fixed-time and max-pressure on the same evaluation episode; primary metrics first."""
    final = final_by_seed(results)
    final = final[final["seed"] == seed].set_index("ablation")
    rows = []
    for name, base in results.baselines.set_index("controller").iterrows():
        rows.append({"Condition": f"{name} (same evaluation episode)",
                     **{label: f"{base[key]:.1f}" for key, label in _METRICS.items()}, VS_PAPER: "—",
                     **{f"paper {label}": "—" for label in _METRICS.values()}})
    for a in final.index:
        row = {"Condition": f"{ABLATIONS[a].label}, {results.config.eval_policy} policy"}
        for key, label in _METRICS.items():
            ours, base = final.loc[a, f"eval_{key}"], final.loc["A2", f"eval_{key}"] if "A2" in final.index else np.nan
            change = f" ({100 * (ours - base) / base:+.1f}%)" if a != "A2" and base else ""
            row[label] = f"{ours:.1f}{change}"
        row[VS_PAPER] = NOT_COMPARABLE
        row.update({f"paper {label}": _paper_traffic(a, key) for key, label in _METRICS.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_sd(values) -> str:
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if not len(values):
        return "—"
    return f"{values.mean():.2f} ± {_fmt(values.std(ddof=1) if len(values) > 1 else np.nan)}"


def table2(results: AblationResults, random: np.ndarray | None = None) -> pd.DataFrame:
    """Table 2: mean +- SD, CV, Sharpe vs A2, best and worst seed of the final score, and the final-window evaluation
    score on the real flow under both protocols; with ``random`` (the random switcher's calibrated scores on the real
    flow, one per draw), rows for it, fixed-time and max-pressure, scored in the evaluation columns."""
    final = final_by_seed(results)
    groups = seed_groups(final)
    base = groups["A2"].mean() if "A2" in groups else np.nan
    rows = []
    for a, values in groups.items():
        paper = pv.MAESTRO_TABLE2.get(a, _NOT_IN_PAPER)
        sharpe = np.nan if a == "A2" else nan_if_undefined(stats.sharpe_ratio, values, base)
        evaluated = final[final["ablation"] == a]
        rows.append({"Condition": ABLATIONS[a].label, "Curric.": ABLATIONS[a].curriculum_mode,
                     "Reward": "LLM-shaped" if ABLATIONS[a].llm_reward else "Template",
                     "Mean ± SD": f"{values.mean():.2f} ± {_fmt(values.std(ddof=1) if len(values) > 1 else np.nan)}",
                     "CV (%)": _fmt(100 * nan_if_undefined(stats.coefficient_of_variation, values)),
                     "SR": _fmt(sharpe), "Best": _fmt(values.max()), "Worst": _fmt(values.min()),
                     **{f"Eval real, {p}": _mean_sd(evaluated[f"eval_score_{p}"]) for p in EVAL_POLICIES},
                     "paper Mean ± SD": f"{_fmt(paper['mean'])} ± {_fmt(paper['sd'])}",
                     "paper CV (%)": _fmt(paper["cv_pct"]),
                     "paper SR": _fmt(paper["sharpe"]), "paper Best": _fmt(paper["best"]),
                     "paper Worst": _fmt(paper["worst"])})
    if random is not None:
        levels = {f"Random phase switcher ({len(random)} draws)": random, "Fixed-time 30 s": [0.0],
                  "Max-pressure": [results.config.target_paper]}
        for name, values in levels.items():
            rows.append({"Condition": name, "Curric.": "—", "Reward": "—", "Mean ± SD": "—", "CV (%)": "—",
                         "SR": "—",
                         "Best": "—", "Worst": "—", **{f"Eval real, {p}": _mean_sd(values) for p in EVAL_POLICIES},
                         "paper Mean ± SD": "— ± —", "paper CV (%)": "—", "paper SR": "—",
                         "paper Best": "—",
                         "paper Worst": "—"})
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
    return ("—" if not np.isfinite(size) else "Large" if size >= 0.8 else "Medium" if size >= 0.5
            else "Small" if size >= 0.2 else "Negligible")


def table4(results: AblationResults) -> pd.DataFrame:
    """Table 4: Mann-Whitney U (exact, Bonferroni over the pairs), Cohen's d, seeds for 80 % power."""
    groups = seed_groups(final_by_seed(results))
    too_few = sorted(a for a, values in groups.items() if len(values) < 2)
    if too_few:  # a rank test and a pooled SD need two seeds per condition (a long run may have finished one)
        return pd.DataFrame([{"Comparison": f"{first} vs {second}", "U": "—", "p": "—", "p (Bonferroni)": "—",
                              "Cohen's d": "—", "Effect": "—",
                              "Significant?": f"— (fewer than 2 seeds: {', '.join(too_few)})"}
                             for first, second in itertools.combinations(groups, 2)])
    rows = []
    for row in stats.pairwise_mann_whitney(groups) if len(groups) > 1 else []:
        first, second = row["comparison"].split(" vs ")
        d = row["cohens_d"]
        paper = pv.MAESTRO_TABLE4.get((first, second), {})
        rows.append({"Comparison": row["comparison"], "U": _fmt(row["U"], 1), "p": _fmt(row["p"], 3),
                     "p (Bonferroni)": _fmt(row["p_bonferroni"], 3), "Cohen's d": _fmt(d), "Effect": _effect_label(d),
                     "Significant?": "Yes" if row["p_bonferroni"] < 0.05 else "No",
                     "seeds for 80% power at our d": nan_if_undefined(stats.seeds_for_power, d),
                     "paper U": _fmt(paper.get("U"), 1), "paper p": _fmt(paper.get("p"), 3),
                     "paper d": _fmt(paper.get("cohens_d")),
                     "paper seeds for power (its d)": pv.MAESTRO_POWER_SEEDS.get((first, second))})
    return pd.DataFrame(rows)


#: The saved tables: a one-sentence caption each, and the definitions a reader needs (the tables' provenance),
#: next to the code.
CAPTIONS = {
    "table1": ("Table 1: traffic metrics of each condition's evaluation episodes on the real flow in the final window, "
               "seed {seed}, beside the paper's Table 1 (not comparable in level).",
               "Primary metrics: delay, queue, throughput; % vs A2; fixed-time and max-pressure run on the same "
               "evaluation episode. Paper columns: its Table 1 (CityFlow, its own episodes and flow: vehicles and "
               "seconds of another scale, hence 'not comparable'; it gives no queue), percentages as the paper "
               "prints them."),
    "table2": ("Table 2: final score per condition, mean ± SD, CV and Sharpe ratio over seeds, beside the "
               "paper's Table 2.",
               "score = 165 x (R - R_fixed) / (R_maxpressure - R_fixed), an affine map of our training-episode return "
               "R (165 = max-pressure, 0 = fixed-time 30 s, both run on the same traffic: the episode's context and "
               "SUMO seed), averaged over the last {window} episodes of each seed; Mean ± SD over seeds (SD with "
               "ddof=1). CV = SD / mean, undefined (—) when the mean score is <= 0; SR (Sharpe) = (mean - A2 mean) / "
               "SD. Eval real, greedy / stochastic: the evaluation score on the real flow (the argmax of the actor, "
               "the paper's deterministic protocol; or its Gumbel-softmax sample), averaged over the final window's "
               "evaluations, Mean ± SD over seeds. Baseline rows are scored on that same real-flow episode: the "
               "random phase switcher (a uniform phase request every second, one seeded draw per row of its SD), "
               "fixed-time (0) and max-pressure (165) by the scale's construction. "
               "Paper columns: its Table 2 (episode return, not our score: levels and CV are not comparable)."),
    "table3": ("Table 3: final score per seed and condition, with the paper's Table 3 rows below.",
               "score: see Table 2."),
    "table4": ("Table 4: two-sided Mann-Whitney U test, Cohen's d and the seeds 80% power needs, per pair "
               "of conditions.",
               "U = min(U_X, U_Y), U_X counting pairs with x > y (ties 1/2); p exact when no ties, else the exact "
               "tie-correct permutation p; Bonferroni over the {pairs} pairs. Cohen's d = (mean Y - mean X) / pooled "
               "SD (ddof=1): positive when the second-named condition scores higher. Seeds for 80% power: per "
               "condition, two-sided t-test at alpha 0.05, computed from our d; the paper's number comes from its own "
               "d, so equal counts are no agreement."),
    "table6": ("Table 6: evaluation score and traffic metrics, mean ± SD over seeds for both evaluated policies, "
               "beside the paper's seed-200 levels (not comparable).",
               "The paper gives seed 200 only, from its own CityFlow episodes and flow (vehicles and seconds of "
               "another scale, hence 'not comparable')."),
    "table7": ("Table 7: risk metrics of the final score over seeds, beside the paper's Table 7.",
               "The paper's finance names for seed-level numbers. Sharpe = (mean - A2 mean) / SD; Sortino = (mean - A2 "
               "mean) / downside deviation, sqrt(sum(min(0, x - own mean)^2) / (n - 1)); VaR (5%) = the empirical 5 % "
               "quantile (inverted CDF: the worst seed for n < 20); max drawdown = mean - worst seed (not a "
               "peak-to-trough of a time series); success = share of seeds with score >= 0.95 x 165."),
    "table5": ("Table 5: wall time per component summed over all runs, per run and as a share, beside the paper's "
               "hours; a total is this run's measured wall time, in which a call replayed from the transcript cache "
               "takes milliseconds, so calls x latency can exceed it.",
               "Model latency per call: the model's latency as recorded in the transcript (non-fallback calls). "
               "Simulation includes the evaluation and calibration (fixed-time, max-pressure) episodes; LLM reward "
               "calls include evaluating the generated reward code; 'other' is the runs' wall time that no episode "
               "times (process start, model load, checkpoints). The paper's hours: 200 episodes on a GPU."),
}


def caption(name: str, results: AblationResults) -> str:
    """The one-sentence caption of table ``name`` (a key of :data:`CAPTIONS`)."""
    return CAPTIONS[name][0].format(seed=200)


def provenance(name: str, results: AblationResults) -> "Provenance":
    """The provenance of table ``name``: the results', with the table's definitions (and the ill-conditioned
    episodes, where they matter) in its details."""
    groups = seed_groups(final_by_seed(results))
    definitions = CAPTIONS[name][1].format(window=results.config.final_window,
                                           pairs=len(groups) * (len(groups) - 1) // 2)
    details = {"definitions": definitions}
    if name in ("table2", "table3", "table4", "table7") and (note := ill_conditioned_note(results)):
        details["ill-conditioned episodes"] = note
    return results.provenance.with_details(**details)


#: Table 5's row for the run time outside the timed components (its sidecar's ``wall_s`` minus their sum).
OVERHEAD = "other (process start, model load, checkpoints)"


def cost_breakdown(results: AblationResults) -> pd.DataFrame:
    """Table 5: wall time per component, summed over runs, per run, and the paper's (200 episodes, GPU).

    The components are timed per episode; the runs' own wall times (sidecars) also hold what no episode
    times: the process start, loading the model, checkpoints. That rest is a row of its own, so the total
    is the runs' measured wall time. A call's latency is the model's as recorded in the transcript; a call
    replayed from the transcript cache (``of them replayed``) takes milliseconds of this run's wall time, so
    calls x latency exceeds a component's total by about the replayed calls' latency.
    """
    df, gen = results.episodes, results.generations
    runs = df.groupby(["ablation", "seed"]).ngroups
    components = {  # evaluation and calibration (fixed-time, max-pressure) episodes count as simulation
        "simulation": df["sim_s"].sum() + df["eval_s"].sum() + df["baseline_s"].sum(),
        "MADDPG training": df["train_s"].sum(),
        "LLM curriculum calls": df["llm_curriculum_s"].sum(),
        "LLM reward calls": df["llm_reward_s"].sum() + df["reward_eval_s"].sum(),
    }
    walls = [sidecar.get("wall_s") for sidecar in results.sidecars.values()]
    if walls and all(isinstance(w, (int, float)) for w in walls):
        components[OVERHEAD] = max(sum(walls) - sum(components.values()), 0.0)
    calls = {"LLM curriculum calls": gen[(gen["kind"] == "context") & ~gen["fallback"]],
             "LLM reward calls": gen[(gen["kind"] == "reward") & ~gen["fallback"]]}
    replayed = {name: int(frame["cached"].fillna(False).astype(bool).sum()) if "cached" in frame else 0
                for name, frame in calls.items()}
    total = sum(components.values())
    paper_total = 3.5
    rows = []
    for name, seconds in components.items():
        frame = calls.get(name)
        rows.append({"Component": name, "Calls (all runs)": len(frame) if frame is not None else "—",
                     "of them replayed": replayed[name] if frame is not None else "—",
                     "Model latency per call (s)": (_fmt(frame["llm_seconds"].mean())
                                                    if frame is not None and len(frame) else "—"),
                     "Total (s, all runs)": _fmt(seconds, 1), "Per run (s)": _fmt(seconds / runs, 1),
                     "Percentage": f"{100 * seconds / total:.1f}%",
                     "paper total": f"{pv.MAESTRO_COST_HOURS[name]:.2f} h" if name in pv.MAESTRO_COST_HOURS else "—",
                     "paper percentage": (f"{100 * pv.MAESTRO_COST_HOURS[name] / paper_total:.1f}%"
                                          if name in pv.MAESTRO_COST_HOURS else "—")})
    rows.append({"Component": "Total", "Calls (all runs)": "—", "of them replayed": "—",
                 "Model latency per call (s)": "—",
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
            row = {"Condition": ABLATIONS[a].label,
                   "policy": policy + (" (reported)" if policy == results.config.eval_policy else ""),
                   "seeds": len(frame)}
            for key, label in {"score": "Eval score", **_METRICS}.items():
                values = frame[f"eval_{key}_{policy}"]
                row[label] = (f"{values.mean():.1f} ± {values.std(ddof=1):.1f}" if len(values) > 1
                              else f"{values.mean():.1f}")
            row[VS_PAPER] = NOT_COMPARABLE
            row.update({f"paper {label} (seed 200)": _paper_traffic(a, key) for key, label in _METRICS.items()})
            rows.append(row)
    return pd.DataFrame(rows)


def table7(results: AblationResults) -> pd.DataFrame:
    """Table 7: Sharpe, Sortino, VaR (5 %), max drawdown, success rate (score >= 0.95 x 165)."""
    groups = seed_groups(final_by_seed(results))
    base = groups["A2"].mean() if "A2" in groups else np.nan
    threshold = 0.95 * results.config.target_paper
    rows = []
    for a, values in groups.items():
        paper = pv.MAESTRO_TABLE7.get(a, _NOT_IN_PAPER)
        rows.append({"Condition": ABLATIONS[a].label,
                     "Sharpe": "—" if a == "A2" else _fmt(nan_if_undefined(stats.sharpe_ratio, values, base)),
                     "Sortino": "—" if a == "A2" else _fmt(nan_if_undefined(stats.sortino_ratio, values, base)),
                     "VaR (5%)": _fmt(stats.value_at_risk(values)), "Max drawdown": _fmt(stats.max_drawdown(values)),
                     "Success rate": f"{100 * stats.success_rate(values, threshold):.0f}% "
                                     f"({int(np.sum(values >= threshold))}/{len(values)})",
                     "paper Sharpe": _fmt(paper["sharpe"]), "paper Sortino": _fmt(paper["sortino"]),
                     "paper VaR": _fmt(paper["var_5"]), "paper MDD": _fmt(paper["max_drawdown"]),
                     "paper success": ("—" if paper["success_rate"] is None
                                       else f"{100 * paper['success_rate']:.0f}%")})
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
        lambda r: "; ".join(pd.Series([rejection_stage(x) for x in r]).value_counts().head(3).index))
    out = out.merge(reasons.rename("top rejection stages").reset_index(), on=["kind", "mode"], how="left")
    retired = gen[gen["kind"] == "retire"].groupby("mode").size()  # accepted rewards retired in training
    out["retired in training"] = [int(retired.get(m, 0)) if k == "reward" else 0
                                  for k, m in zip(out["kind"], out["mode"])]
    return out.fillna({"top rejection stages": "—"})


def rejection_stage(reason: str) -> str:
    """The check a rejected reply failed, without its particulars: 'syntax: does not parse: ...' -> 'syntax',
    'cut off before the context was complete (dropped ... after 2 member(s): ...' -> 'cut off before the context
    was complete', 'route_mix shares must sum to 1, got 6.0000' -> 'route_mix shares must sum to 1'."""
    head = str(reason).split(":")[0]
    return re.split(r"\s*\(|, got ", head)[0].strip() or str(reason)


def curriculum_movement(results: AblationResults) -> pd.DataFrame:
    """Why the difficulty moves or does not (Section 4.2's rule in numbers), per configuration and seed.

    The rule raises d after ``up_windows`` windows whose mean training score beats ``up_ratio * target``,
    lowers it whenever the window mean is below ``down_ratio * target``, and forces a raise after
    ``plateau_episodes`` unchanged episodes. The columns count what fired, the levels d visited, and how
    the rolling 5-episode window mean of the score stood against the two bars.
    """
    rule = rule_config(results.config)
    up_bar, down_bar = rule.up_ratio * rule.target, rule.down_ratio * rule.target
    rows = []
    for (a, seed), run in results.episodes.groupby(["ablation", "seed"]):
        window = run.sort_values("episode")["score"].rolling(rule.window).mean().dropna()
        events = run["difficulty_event"].value_counts()
        rows.append({"config": a, "seed": int(seed), "episodes": len(run),
                     "d_max": float(run["difficulty"].max()), "d_mean": float(run["difficulty"].mean()),
                     "episodes at d_min (%)": 100 * float((run["difficulty"] <= rule.d_min + 1e-9).mean()),
                     "raises (score)": int(events.get("up", 0)), "raises (plateau)": int(events.get("plateau", 0)),
                     "drop decisions": int(events.get("down", 0)),
                     "window score mean": float(window.mean()), "window score max": float(window.max()),
                     "windows above drop bar (%)": 100 * float((window >= down_bar).mean()),
                     "windows above raise bar (%)": 100 * float((window > up_bar).mean()),
                     "raise bar": up_bar, "drop bar": down_bar})
    return pd.DataFrame(rows)
