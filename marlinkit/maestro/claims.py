"""MAESTRO's claims, one by one, over the committed ablation runs: ``figures/paper/maestro/claims.{csv,md,tex}``.

For each claim: the paper's number, ours under the reference architect (a surrogate, not an LLM:
:mod:`marlinkit.maestro.reference_queue`'s runs), ours under SmolLM2 (the ``ue25_openblas`` ablation, same
MADDPG cadence, SUMO), and a verdict with its test and p. The verdict is the reference architect's (the row
whose architect writes working rewards and whose curriculum moves). A claim's cell gives its numbers once every
configuration it compares has a committed run, with the seeds each has; a verdict and p need :data:`MIN_SEEDS`
seeds of each, and until then the verdict is "not testable" with the seeds committed ("runs missing" with none).
Only complete runs are read (:func:`committed`), never computed, so the table is a function of the committed
runs: the same runs, the same bytes.

Every number is over seeds, each seed's value the mean of its final window (the last 20 training episodes,
:func:`marlinkit.maestro.report.final_by_seed`), on the calibrated score (0 = fixed-time, 165 = max-pressure on
the same traffic) unless stated. Tests are two-sided Mann-Whitney U (exact) between configurations, Brown-Forsythe
(Levene, median-centred) for a difference in spread, and a one-sided Wilcoxon signed-rank test of the per-seed
mean difficulty against the floor 0.3. Verdicts are the claims ledger's (:data:`marlinkit.claims.VERDICTS`): one of
:data:`marlinkit.claims.TESTED_VERDICTS`, named by the direction and qualified by the test
(:func:`marlinkit.claims.verdict_for`), or ``not testable (...)`` with its reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from marlinkit import paper_values as pv
from marlinkit import paths, stats
from marlinkit.claims import ALPHA, verdict_for
from marlinkit.maestro import ablation
from marlinkit.maestro.report import final_by_seed
from marlinkit.maestro.results import AblationResults

COLUMNS = ("claim", "paper", "reference_architect", "smollm2", "verdict", "test", "p")
MISSING = "not testable (runs missing)"
#: The late half of training, where the curriculum's difficulty is read.
LATE_EPISODES = (100, 199)
#: The bar a moving curriculum must clear: A2's mean d over :data:`LATE_EPISODES` above it.
DIFFICULTY_BAR = 0.4
#: Seeds per configuration a test needs (with fewer, a claim reports its numbers and no verdict).
MIN_SEEDS = 2
#: The two ablation rows: overrides of the paper preset's ``ablation`` section (the command line resolves them with
#: :func:`marlinkit.presets.ablation_config` and hands :func:`write` their configs).
ROWS: dict[str, dict[str, Any]] = {
    "reference_architect": {"llm": "reference", "engine": "cityflow", "curriculum": "plain_maddpg",
                            "maddpg_setting": "ue25_openblas", "ablations": ("A0", "A2", "A7", "A8")},
    "smollm2": {"maddpg_setting": "ue25_openblas"},
}


def committed(cfg: ablation.Config, preset: str = "paper") -> AblationResults | None:
    """The complete runs of a preset's ablation under ``cfg`` (its section, resolved) as results, None when there is
    none. Nothing is computed: a missing run is left out, and its seeds with it (each configuration keeps the seeds it
    has)."""
    from marlinkit.maestro.curriculum_env import calibrate, calibration_config
    from marlinkit.runs import ResultStore, run_name

    store = ResultStore(ablation.results_root(preset, cfg))
    if not store.is_complete("ablation_calibration", calibration_config(cfg)):
        return None
    calibration, info = calibrate(cfg, store)
    names = [run_name(a, f"seed{s}") for a in cfg.ablations for s in cfg.seeds
             if store.is_complete(run_name(a, f"seed{s}"), ablation.run_config(cfg, a, s, calibration))]
    if not names:
        return None
    episodes = pd.concat([store.load(n) for n in names], ignore_index=True)
    generations = ablation.load_all_generations(store.root, names)
    seeds = tuple(sorted(set(episodes["seed"])))
    return AblationResults.of(dataclasses.replace(cfg, seeds=seeds), preset, episodes, generations,
                           {n: store.load_sidecar(n) for n in names}, calibration, info, store.root,
                           store.load("ablation_calibration"))


def _groups(results: AblationResults, column: str) -> dict[str, np.ndarray]:
    final = final_by_seed(results)
    return {a: final.loc[final["ablation"] == a, column].to_numpy() for a in ablation.ABLATIONS if a in set(final["ablation"])}


def _counts(groups: dict[str, Any], names: tuple[str, ...]) -> dict[str, int]:
    return {a: len(groups.get(a, ())) for a in names}


def _seeds(groups: dict[str, Any], *names: str) -> str:
    """How many seeds each configuration of a claim has, e.g. ``seeds A2 2, A7 1``."""
    return "seeds " + ", ".join(f"{a} {n}" for a, n in _counts(groups, names).items())


def _gate(groups: dict[str, Any], *names: str) -> str | None:
    """Why a claim cannot be tested on ``groups`` (per configuration, its seeds' values), None when it can: the
    claim's configurations need a committed seed each to be reported, and two each to be tested."""
    counts = _counts(groups, names)
    if min(counts.values()) == 0:
        return MISSING
    if min(counts.values()) < MIN_SEEDS:
        return f"not testable ({_seeds(groups, *names)} committed; a test needs {MIN_SEEDS} each)"
    return None


def _fmt(x: float | None, digits: int = 2) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _sd(values: np.ndarray) -> float:
    return float(values.std(ddof=1)) if len(values) >= MIN_SEEDS else math.nan


def _identical(results: AblationResults, first: str, second: str) -> bool:
    """Whether two configurations trained to the bit alike (A7 with no generated reward accepted is A2)."""
    e = results.episodes
    one = e[e["ablation"] == first].sort_values(["seed", "episode"])["train_return"].to_numpy()
    two = e[e["ablation"] == second].sort_values(["seed", "episode"])["train_return"].to_numpy()
    return len(one) == len(two) and np.array_equal(one, two)


# ----- the claims: each takes results (or None) and returns (ours, verdict, p) ---------------------------------
# Each reports its numbers once every configuration it compares has a committed seed, with the seeds per
# configuration; a verdict and p need two seeds of each.

Outcome = tuple[str, str, float | None]


def stability(results: AblationResults | None) -> Outcome:
    """A7 more stable than A2 over seeds: CV and Sharpe of the final score; Brown-Forsythe on the spread."""
    from scipy.stats import levene

    groups = _groups(results, "score") if results is not None else {}
    gate = _gate(groups, "A2", "A7")
    if gate == MISSING:
        return MISSING, MISSING, None
    if _identical(results, "A2", "A7"):
        return "A7 = A2 to the bit (no generated reward accepted)", "not testable (A7 is A2)", None
    a2, a7 = groups["A2"], groups["A7"]
    cv = {a: stats.coefficient_of_variation(v) if len(v) >= MIN_SEEDS and v.mean() > 0 else np.nan
          for a, v in (("A2", a2), ("A7", a7))}
    sharpe = stats.sharpe_ratio(a7, a2.mean()) if _sd(a7) > 0 else np.nan
    text = (f"CV {_fmt(100 * cv['A7'])} % vs {_fmt(100 * cv['A2'])} % (mean {a7.mean():.2f} vs {a2.mean():.2f}, "
            f"SD {_fmt(_sd(a7))} vs {_fmt(_sd(a2))}), Sharpe {_fmt(sharpe)}; {_seeds(groups, 'A7', 'A2')}")
    if gate:
        return text, gate, None
    p = float(levene(a7, a2, center="median").pvalue)
    return text, verdict_for(_sd(a7) < _sd(a2), p), p


def traffic(results: AblationResults | None) -> Outcome:
    """A7 better than A2 on evaluation delay (lower) and throughput (higher), real flow; p: the larger of the two."""
    delay = _groups(results, "eval_avg_delay_s") if results is not None else {}
    flow = _groups(results, "eval_throughput") if results is not None else {}
    gate = _gate(delay, "A2", "A7")
    if gate == MISSING:
        return MISSING, MISSING, None
    if _identical(results, "A2", "A7"):
        return "A7 = A2 to the bit (no generated reward accepted)", "not testable (A7 is A2)", None
    change = {k: 100 * (g["A7"].mean() / g["A2"].mean() - 1) for k, g in (("delay", delay), ("throughput", flow))}
    text = (f"delay {delay['A7'].mean():.1f} vs {delay['A2'].mean():.1f} s ({change['delay']:+.1f} %), throughput "
            f"{flow['A7'].mean():.1f} vs {flow['A2'].mean():.1f} ({change['throughput']:+.1f} %); "
            f"{_seeds(delay, 'A7', 'A2')}")
    if gate:
        return text, gate, None
    p = max(stats.mann_whitney(delay["A7"], delay["A2"]).p_value, stats.mann_whitney(flow["A7"], flow["A2"]).p_value)
    return text, verdict_for(change["delay"] < 0 and change["throughput"] > 0, p), float(p)


def a8_highest(results: AblationResults | None) -> Outcome:
    """A8 has the highest mean final score of A2, A7, A8; test: A8 vs the next best."""
    groups = _groups(results, "score") if results is not None else {}
    gate = _gate(groups, "A2", "A7", "A8")
    if gate == MISSING:
        return MISSING, MISSING, None
    means = {a: groups[a].mean() for a in ("A2", "A7", "A8")}
    best_other = max(("A2", "A7"), key=means.get)
    text = (", ".join(f"{a} {means[a]:.2f}" for a in ("A2", "A7", "A8")) + f" (A8 vs {best_other}); "
            + _seeds(groups, "A2", "A7", "A8"))
    if gate:
        return text, gate, None
    p = float(stats.mann_whitney(groups["A8"], groups[best_other]).p_value)
    return text, verdict_for(means["A8"] > means[best_other], p), p


def curriculum_rises(results: AblationResults | None) -> Outcome:
    """The curriculum raises the difficulty: per A2 seed, mean d over episodes 100-199; Wilcoxon against 0.3.
    Only runs that reached episode 199 count."""
    from scipy.stats import wilcoxon

    if results is None:
        return MISSING, MISSING, None
    e = results.episodes
    a2 = e[e["ablation"] == "A2"]
    complete = a2.groupby("seed")["episode"].max() >= LATE_EPISODES[1]
    a2 = a2[a2["seed"].isin(complete[complete].index)]
    per_seed = a2[a2["episode"].between(*LATE_EPISODES)].groupby("seed")["difficulty"].mean().to_numpy()
    gate = _gate({"A2": per_seed}, "A2")
    if gate == MISSING:
        return MISSING, MISSING, None
    changes = a2.groupby("seed")["difficulty"].apply(lambda d: int((d.diff().fillna(0) != 0).sum()))
    text = (f"A2 mean d over episodes {LATE_EPISODES[0]}-{LATE_EPISODES[1]}: {per_seed.mean():.3f} "
            f"(seeds {per_seed.min():.3f}-{per_seed.max():.3f}); {changes.mean():.0f} changes per run; "
            f"{_seeds({'A2': per_seed}, 'A2')}")
    if gate:
        return text, gate, None
    above = per_seed - 0.3
    p = float(wilcoxon(above, alternative="greater").pvalue) if np.any(above != 0) else 1.0
    return text, verdict_for(per_seed.mean() > DIFFICULTY_BAR, p), p


def beats_no_curriculum(results: AblationResults | None) -> Outcome:
    """Curriculum + shaping (A7) better than no curriculum (A0, the real flow): final evaluation score on the real flow."""
    if results is not None and "A0" not in results.config.ablations:
        return "no A0 run (the ablation has none)", "not testable (no A0 run)", None
    groups = _groups(results, "eval_score") if results is not None else {}
    gate = _gate(groups, "A0", "A7")
    if gate == MISSING:
        return MISSING, MISSING, None
    text = f"evaluation score A7 {groups['A7'].mean():.2f} vs A0 {groups['A0'].mean():.2f}; {_seeds(groups, 'A7', 'A0')}"
    if gate:
        return text, gate, None
    p = float(stats.mann_whitney(groups["A7"], groups["A0"]).p_value)
    return text, verdict_for(groups["A7"].mean() > groups["A0"].mean(), p), p


def target_sooner(results: AblationResults | None) -> Outcome:
    """A7 reaches the rule's target sooner than A2: the first episode whose 5-episode window mean score reaches the
    target, per seed (a seed that never reaches it counts as the run's length); Mann-Whitney A7 vs A2. Not testable
    when every run's first window already reaches the target: the measure is then at its floor for both."""
    if results is None:
        return MISSING, MISSING, None
    rule = ablation.rule_config(results.config)
    target, episodes = rule.target, results.config.episodes
    first: dict[str, list[int]] = {}
    for (a, _), run in results.episodes[results.episodes["ablation"].isin(["A2", "A7"])].groupby(["ablation", "seed"]):
        window = run.sort_values("episode")["score"].rolling(rule.window).mean().to_numpy()
        reached = np.flatnonzero(window >= target)
        first.setdefault(a, []).append(int(reached[0]) if len(reached) else episodes)
    gate = _gate(first, "A2", "A7")
    if gate == MISSING:
        return MISSING, MISSING, None
    never = {a: sum(v == episodes for v in values) for a, values in first.items()}
    text = (f"target {target:g}: median episode A7 {np.median(first['A7']):.0f}, A2 {np.median(first['A2']):.0f} "
            f"(never reached: A7 {never['A7']}, A2 {never['A2']} seeds); {_seeds(first, 'A7', 'A2')}")
    if _identical(results, "A2", "A7"):
        return text + "; A7 = A2 to the bit", "not testable (A7 is A2)", None
    if gate:
        return text, gate, None
    if all(v == rule.window - 1 for values in first.values() for v in values):
        return text, (f"not testable (every run's first {rule.window}-episode window already reaches the target "
                      f"{target:g})"), None
    p = float(stats.mann_whitney(first["A7"], first["A2"]).p_value)
    return text, verdict_for(np.median(first["A7"]) < np.median(first["A2"]), p), p


PT2 = pv.MAESTRO_TABLE2
#: (claim, the paper's number, test, the function) in the order of the table.
CLAIMS: tuple[tuple[str, str, str, Callable[[AblationResults | None], Outcome]], ...] = (
    ("A7 more stable than A2 (CV, Sharpe)",
     f"CV {PT2['A7']['cv_pct']} % vs {PT2['A2']['cv_pct']} %, Sharpe {PT2['A7']['sharpe']} (Table 2, 4 seeds)",
     "Brown-Forsythe (Levene, median) on the final scores, A7 vs A2", stability),
    ("A7 better than A2 on delay and throughput",
     "delay -19.9 %, throughput +5.9 % (Table 1, seed 200)",
     ("Mann-Whitney U per metric, evaluation episodes (real flow) in the final window; p: the larger; "
      "holds needs A7 lower on delay and higher on throughput"), traffic),
    ("A8 the highest mean",
     f"A8 {PT2['A8']['mean']} > A7 {PT2['A7']['mean']} > A2 {PT2['A2']['mean']} (Table 2)",
     "Mann-Whitney U, A8 vs the next-best configuration", a8_highest),
    ("the curriculum raises difficulty",
     "d spans 0.3-0.7, ~80 changes in 200 episodes (A.2)",
     f"one-sided Wilcoxon signed-rank of per-seed mean d (episodes {LATE_EPISODES[0]}-{LATE_EPISODES[1]}) against 0.3; "
     f"holds needs mean d > {DIFFICULTY_BAR}", curriculum_rises),
    ("curriculum + shaping better than no curriculum (A0)",
     "not measured (no no-curriculum run in the paper's ablation)",
     "Mann-Whitney U, A7 vs A0, final-window evaluation score (real flow)", beats_no_curriculum),
    ("target reached within N episodes (A7 sooner than A2)",
     "A7 reaches A2's level ~15 episodes earlier; A2 converges by ~120, A7 by ~110 (A.6)",
     "Mann-Whitney U on the first episode whose 5-episode window mean reaches the rule's target", target_sooner),
)


def claims_table(reference: AblationResults | None, smollm2: AblationResults | None) -> pd.DataFrame:
    """One row per claim: the paper, both rows of ours, and the reference architect's verdict, test and p."""
    rows = []
    for claim, paper, test, function in CLAIMS:
        ours, verdict, p = function(reference)
        theirs, their_verdict, _ = function(smollm2)
        smollm2_text = theirs if their_verdict.startswith("not testable") else f"{theirs} ({their_verdict})"
        rows.append({"claim": claim, "paper": paper, "reference_architect": ours, "smollm2": smollm2_text,
                     "verdict": verdict, "test": test, "p": "—" if p is None else f"{p:.3g}"})
    return pd.DataFrame(rows, columns=list(COLUMNS))


CAPTION = "MAESTRO's claims over the committed runs: the paper's value, both rows of ours, and the verdict, test and p."
#: What the caption's rows are (the table's provenance).
DETAILS = {"reference_architect": ("A0/A2/A7/A8 with the reference architect (a rule-based surrogate, not an LLM), "
                                   "CityFlow, curriculum target plain_maddpg, MADDPG ue25_openblas"),
           "smollm2": "A2/A7/A8 with SmolLM2-135M, SUMO, the paper's target 165, MADDPG ue25_openblas",
           "values": ("each seed's value is the mean of its last 20 training episodes (score: 0 = fixed-time, 165 = "
                      "max-pressure on the same traffic)"),
           "verdict": (f"the reference architect's; 'not testable' with the seeds committed while a configuration has "
                       f"fewer than {MIN_SEEDS}")}


def write(configs: dict[str, ablation.Config], out_dir: Path | None = None, preset: str = "paper") -> list[Path]:
    """``claims.{csv,md,tex}`` in ``out_dir`` (default ``figures/<preset>/maestro``) from the committed runs of the
    two rows (``configs``: each name of :data:`ROWS` -> its ``Config``)."""
    from marlinkit.plots import Provenance, save_table

    out = Path(out_dir) if out_dir else paths.FIGURES_DIR / preset / "maestro"
    out.mkdir(parents=True, exist_ok=True)
    reference, smollm2 = committed(configs["reference_architect"], preset), committed(configs["smollm2"], preset)
    table = claims_table(reference, smollm2)
    seeds = sorted({seed for results in (reference, smollm2) if results is not None for seed in results.config.seeds})
    provenance = Provenance(preset, engine="CityFlow and SUMO", seeds=seeds, details=DETAILS,
                            source="reference architect (a surrogate, not an LLM); LLM smollm2")
    return save_table(table, out, "claims", CAPTION, provenance)


if __name__ == "__main__":  # the presets, above the experiments, resolve the rows' settings
    from marlinkit import presets

    parser = argparse.ArgumentParser(prog="python -m marlinkit.maestro.claims", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: figures/paper/maestro)")
    args = parser.parse_args()
    rows = {name: presets.ablation_config("paper", record=False, **overrides) for name, overrides in ROWS.items()}
    print("\n".join(str(p) for p in write(rows, args.out)))
