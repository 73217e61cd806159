"""The claims ledger's data: for each plan entry (``docs/claims.toml``), stand-in and protocol, the values a test
compares, read from the committed runs and tables. Nothing here decides a verdict: :mod:`marlinkit.claims` applies
the plan's test, correction and verdict rule to what :func:`extract` returns.

A claim's extractor returns an :class:`Extract` (its cells: one per corridor, metric or flow) or an
:class:`Unavailable` (why the runs cannot give the values, and the verdict that follows from it: "not testable" or
"inconclusive"). A cell's values are oriented by ``sign``: the paper's direction is ``sign * (x - y) > 0`` (paired
and unpaired), ``sign * (x - null) > 0`` (one-sample), a rising ``y`` with ``x`` (association), or
``sign * statistic > 0`` (paired bootstrap over the rows of ``matrix``).

MAESTRO's runs come in run sets (``[[run_set]]`` in the plan): each names its stand-in, folder, engine, curriculum
target and held-out evaluation, and each gives one row per claim and protocol.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from marlinkit import paths

ROOT = paths.REPO_ROOT
MARLIN_RUNS = Path("data/results/marlin/paper")
CORRIDORS = ("single_slot", "symmetrical_two_slot", "asymmetrical_two_slot", "two_path", "maze_like")
OPEN_CORRIDORS = CORRIDORS[:4]
#: MARLIN's run files per stand-in and protocol (the system part of ``<corridor>__<system>__seed<k>``).
MARLIN_SYSTEMS = {
    ("equal-copies", "calibrated-surrogate"): "marlin-calibrated-surrogate-planner",
    ("equal-copies", "exact-planner"): "marlin",
    ("equal-copies", "smollm2"): "marlin-negotiation-smollm2-SmolLM2-135M-Instruct.Q4-1-quick-negotiation",
    ("authors-protocol", "calibrated-surrogate"): "marlin-surrogate-llama-authors-switch",
    ("authors-protocol", "exact-planner"): "marlin-authors-switch",
}
LLM_ONLY_SYSTEMS = {
    ("equal-copies", "calibrated-surrogate"): "llm_only-calibrated-surrogate-planner",
    ("equal-copies", "exact-planner"): "llm_only",
    ("authors-protocol", "calibrated-surrogate"): "llm_only-surrogate-llama",
    ("authors-protocol", "exact-planner"): "llm_only",
}
PROTOCOL_FOLDERS = {"equal-copies": MARLIN_RUNS, "authors-protocol": MARLIN_RUNS / "authors_protocol"}
#: The executed-episode window around a checkpoint (the authors' protocol tables use the same).
WINDOW = (24, 25)
PEAK_LEVEL, PEAK_WINDOW, LAST_EPISODE = 0.95, 50, 1600
#: MAESTRO: the final window of training and the late half where the curriculum is read.
FINAL_EPISODES, LATE_EPISODES = (180, 199), (100, 199)
HELDOUT_FLOWS = ("real_5816", "real_5734")
PAPER_TARGET = 165.0


@dataclass(frozen=True)
class Cell:
    """One test's values."""

    name: str
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    sign: int = 1
    null: float = 0.0
    units: tuple[str, ...] = ()
    """The units (seeds, runs) of ``x`` (and of ``y`` where paired)."""
    matrix: tuple[tuple[float, ...], ...] = ()
    statistic: Callable[[np.ndarray], float] | None = None
    summary: tuple[float, float, int] | None = None
    """Mean, SD and n where only a table's summary is committed (one-sample tests)."""


@dataclass(frozen=True)
class Extract:
    cells: tuple[Cell, ...]
    compared: str
    """What is set against what, like for like, in words."""
    configurations: tuple[str, ...] = ()
    """MAESTRO: the configurations the gate checks."""


@dataclass(frozen=True)
class Unavailable:
    verdict: str
    why: str


@dataclass(frozen=True)
class RunSet:
    """A MAESTRO run set: one stand-in's runs under one setting."""

    name: str
    stand_in: str
    folder: str
    engine: str
    target: float
    learner: str
    heldout: str = ""
    note: str = ""
    registered: str = "before-results"


@dataclass(frozen=True)
class Context:
    """Where a row's values come from: its claim, stand-in (and MAESTRO run set) and protocol."""

    claim: object
    stand_in: str
    protocol: str
    run_set: RunSet | None = None
    root: Path = ROOT


def run_sets(plan_path: Path = ROOT / "docs" / "claims.toml") -> tuple[RunSet, ...]:
    with open(plan_path, "rb") as f:
        raw = tomllib.load(f).get("run_set", [])
    return tuple(RunSet(**r) for r in raw)


# ----- MARLIN -----------------------------------------------------------------------------------------------------

@functools.cache
def _csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path)


def _seed_files(root: Path, folder: Path, corridor: str, system: str, suffix: str) -> list[Path]:
    return sorted((root / folder).glob(f"{corridor}__{system}__seed*{suffix}"))


def _training_files(root: Path, folder: Path, corridor: str, system: str) -> list[Path]:
    """A system's training runs (one file per seed, gzipped or not)."""
    found = _seed_files(root, folder, corridor, system, ".csv.gz") + _seed_files(root, folder, corridor, system, ".csv")
    return sorted(p for p in found if "__eval" not in p.name)


def _seed_of(path: Path) -> str:
    return path.name.split("__seed")[1].split("_")[0].split(".")[0]


def eval_by_seed(root: Path, folder: Path, corridor: str, system: str, checkpoint: int,
                 layout: str | None = None) -> dict[str, float]:
    """Per seed (run), the mean performance of the policy evaluated alone at ``checkpoint``."""
    out = {}
    for path in _seed_files(root, folder, corridor, system, "__eval.csv"):
        d = _csv(path)
        d = d[d.checkpoint == checkpoint]
        if layout is not None:
            d = d[d.layout == layout]
        if len(d):
            out[_seed_of(path)] = float(d.performance.mean())
    return out


@functools.cache
def executed_curve(path: Path) -> pd.Series:
    """A run's executed training performance per episode: the median over its copies."""
    d = pd.read_csv(path, usecols=["episode", "performance"])
    return d.groupby("episode").performance.median()


def executed_by_seed(root: Path, folder: Path, corridor: str, system: str, episode: int) -> dict[str, float]:
    before, after = WINDOW
    return {_seed_of(p): float(executed_curve(p).loc[episode - before:episode + after].mean())
            for p in _training_files(root, folder, corridor, system)}


def episodes_to_peak(curve: pd.Series) -> float:
    """The first episode whose rolling median (:data:`PEAK_WINDOW`) reaches :data:`PEAK_LEVEL` (1600 if never)."""
    rolling = curve.rolling(PEAK_WINDOW, min_periods=PEAK_WINDOW).median()
    reached = rolling.index[rolling >= PEAK_LEVEL]
    return float(reached[0]) if len(reached) else float(LAST_EPISODE)


def peak_by_seed(root: Path, folder: Path, corridor: str, system: str) -> dict[str, float]:
    return {_seed_of(p): episodes_to_peak(executed_curve(p))
            for p in _training_files(root, folder, corridor, system)}


def _pair(a: dict[str, float], b: dict[str, float]) -> tuple[tuple[float, ...], tuple[float, ...], tuple[str, ...]]:
    units = tuple(sorted(set(a) & set(b), key=int))
    return tuple(a[u] for u in units), tuple(b[u] for u in units), units


def _cell(name: str, a: dict[str, float], b: dict[str, float], paired: bool, sign: int = 1) -> Cell:
    if paired:
        x, y, units = _pair(a, b)
        return Cell(name, x, y, sign, units=units)
    units = tuple(sorted(a, key=int))
    return Cell(name, tuple(a[u] for u in units), tuple(b[u] for u in sorted(b, key=int)), sign, units=units)


def _marlin_systems(ctx: Context) -> tuple[str, str] | Unavailable:
    system = MARLIN_SYSTEMS.get((ctx.protocol, ctx.stand_in))
    if system is None:
        return Unavailable("not testable", f"no {ctx.protocol} runs with the {ctx.stand_in} plans (experiment: MARLIN "
                                           f"with {ctx.stand_in} plans under that protocol, >= 5 runs per corridor)")
    return system, "marl"


def _label(ctx: Context) -> str:
    if ctx.protocol == "authors-protocol":
        return "the authors' protocol: MARLIN 1 copy (10 runs) against MARL 6 copies (3 runs), no shared seeds"
    return "equal copies (15 per training), shared seeds 0-4"


def _policy_at(ctx: Context, checkpoints: tuple[tuple[int, int], ...], corridors=CORRIDORS) -> Extract | Unavailable:
    """MARLIN against MARL, the policy evaluated alone, per corridor at each (checkpoint, sign)."""
    systems = _marlin_systems(ctx)
    if isinstance(systems, Unavailable):
        return systems
    folder, paired = PROTOCOL_FOLDERS[ctx.protocol], ctx.claim.pairing_for(ctx.protocol) == "paired"
    cells = []
    for corridor in corridors:
        for checkpoint, sign in checkpoints:
            a = eval_by_seed(ctx.root, folder, corridor, systems[0], checkpoint)
            b = eval_by_seed(ctx.root, folder, corridor, systems[1], checkpoint)
            name = corridor if len(checkpoints) == 1 else _checkpoint_name(corridor, checkpoint, sign)
            cells.append(_cell(name, a, b, paired, sign))
    return Extract(tuple(cells), f"MARLIN - MARL, the policy alone; {_label(ctx)}")


def ahead_at(episode: int) -> Callable[[Context], Extract | Unavailable]:
    return lambda ctx: _policy_at(ctx, ((episode, 1),))


def maze_pattern(ctx: Context) -> Extract | Unavailable:
    return _policy_at(ctx, ((100, -1), (850, 1), (1600, 1)), corridors=("maze_like",))


def _checkpoint_name(corridor: str, checkpoint: int, sign: int) -> str:
    return f"{corridor} @ {checkpoint} ({'MARL' if sign < 0 else 'MARLIN'} ahead)"


def executed_at(episode: int) -> Callable[[Context], Extract | Unavailable]:
    def extract(ctx: Context) -> Extract | Unavailable:
        systems = _marlin_systems(ctx)
        if isinstance(systems, Unavailable):
            return systems
        folder = PROTOCOL_FOLDERS[ctx.protocol]
        cells = tuple(_cell(c, executed_by_seed(ctx.root, folder, c, systems[0], episode),
                            executed_by_seed(ctx.root, folder, c, systems[1], episode), False) for c in CORRIDORS)
        return Extract(cells, f"MARLIN - MARL, executed training episodes {episode - WINDOW[0]}-{episode + WINDOW[1]} "
                              f"(the paper's plotted metric); {_label(ctx)}")
    return extract


def peak_earlier(corridors: tuple[str, ...]) -> Callable[[Context], Extract | Unavailable]:
    def extract(ctx: Context) -> Extract | Unavailable:
        systems = _marlin_systems(ctx)
        if isinstance(systems, Unavailable):
            return systems
        folder, paired = PROTOCOL_FOLDERS[ctx.protocol], ctx.claim.pairing_for(ctx.protocol) == "paired"
        xs, ys, units = [], [], []
        for c in corridors:  # MARL's episodes (x) against MARLIN's (y): the paper's direction is x > y
            cell = _cell(c, peak_by_seed(ctx.root, folder, c, systems[1]),
                         peak_by_seed(ctx.root, folder, c, systems[0]), paired)
            xs += cell.x
            ys += cell.y
            units += [f"{c}:{u}" for u in cell.units]
        name = "+".join(corridors) if len(corridors) > 1 else corridors[0]
        return Extract((Cell(name, tuple(xs), tuple(ys), 1, units=tuple(units)),),
                       f"MARL - MARLIN episodes to a {PEAK_WINDOW}-episode rolling median >= {PEAK_LEVEL} "
                       f"(censored at {LAST_EPISODE}); {_label(ctx)}")
    return extract


def beats_llm_only(ctx: Context) -> Extract | Unavailable:
    systems = _marlin_systems(ctx)
    llm = LLM_ONLY_SYSTEMS.get((ctx.protocol, ctx.stand_in))
    if isinstance(systems, Unavailable):
        return systems
    if llm is None:
        return Unavailable("inconclusive", "smollm2's LLM-only runs record 2 trials per corridor with no per-trial "
                                           "values committed; the plan needs >= 5 (experiment: 5 LLM-only seeds)")
    folder, paired = PROTOCOL_FOLDERS[ctx.protocol], ctx.claim.pairing_for(ctx.protocol) == "paired"
    cells = []
    for c in CORRIDORS:
        trials = {_seed_of(p): float(_csv(p).performance.mean())
                  for p in _seed_files(ctx.root, folder, c, llm, ".csv")}
        cells.append(_cell(c, eval_by_seed(ctx.root, folder, c, systems[0], LAST_EPISODE), trials, paired))
    return Extract(tuple(cells), f"MARLIN's policy at episode 1600 - LLM-only ({llm}); {_label(ctx)}")


def llm_plans_struggle(ctx: Context) -> Extract | Unavailable:
    table = _csv(ctx.root / "figures/marlin/llm_only_performance.csv")
    means = ", ".join(f"{r.scenario} {r.llm_only_performance:.2f}" for r in table.itertuples())
    return Unavailable("inconclusive", f"{int(table.trials.min())} trials per corridor, no per-trial values "
                                       f"committed (means: {means}); the plan needs >= 5 trials per corridor")


def hardware(ctx: Context) -> Extract | Unavailable:
    folder = MARLIN_RUNS / "fig5_hardware"
    per = {}
    for system in ("marl", "marlin-calibrated-surrogate-planner"):
        early = {}
        for path in _seed_files(ctx.root, folder, "maze_like", system, "__eval.csv"):
            d = _csv(path)
            early[_seed_of(path)] = float(d[d.checkpoint <= 850].groupby("checkpoint").performance.mean().mean())
        per[system] = (early, eval_by_seed(ctx.root, folder, "maze_like", system, LAST_EPISODE))
    marl, marlin = per["marl"], per["marlin-calibrated-surrogate-planner"]
    cells = (_cell("early (checkpoints <= 850)", marlin[0], marl[0], True),
             _cell("late (1600): MARL ahead", marl[1], marlin[1], True))
    return Extract(cells, "MARLIN - MARL early, MARL - MARLIN at 1600; maze-like with simulated actuation noise, "
                          "not robots; 5 shared seeds x 50 runs")


def dynamic(ctx: Context) -> Extract | Unavailable:
    folder = MARLIN_RUNS / "dynamic_env"
    after, end = {}, {}
    for system in ("marl", "marlin-calibrated-surrogate-planner"):
        after[system] = {_seed_of(p): float(executed_curve(p).loc[1001:1010].mean())
                         for p in _training_files(ctx.root, folder, "single_slot", system)}
        end[system] = eval_by_seed(ctx.root, folder, "single_slot", system, LAST_EPISODE, layout="maze_like")
    m, r = "marlin-calibrated-surrogate-planner", "marl"
    return Extract((_cell("after the change (episodes 1001-1010, executed)", after[m], after[r], True),
                    _cell("end (policy on the new layout at 1600)", end[m], end[r], True)),
                   "MARLIN - MARL; single-slot until 1000, maze-like after; 5 shared seeds")


def fidelity(ctx: Context) -> Extract | Unavailable:
    table = _csv(ctx.root / "figures/paper/marlin/fidelity_rllib_departures.csv")
    ours = table[table.variant == "ours"]
    cells = tuple(Cell(f"{r.scenario} @ {r.paper_episode}", null=float(r.paper_MARL),
                       summary=(float(r.ours_MARL), float(r.ours_seed_sd), int(r.seeds)))
                  for r in ours.itertuples())
    return Extract(cells, "our MARL (15 copies; mean, SD and seeds of fidelity_rllib_departures.csv, a t interval) "
                          "- the authors' printed MARL, per cell")


# ----- MAESTRO ----------------------------------------------------------------------------------------------------

@functools.cache
def episodes(root: Path, folder: str) -> pd.DataFrame:
    files = sorted((root / folder).glob("A*__seed*.csv"))
    if not files:
        return pd.DataFrame(columns=["ablation", "seed", "episode"])
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)


def _window(d: pd.DataFrame, span: tuple[int, int]) -> pd.DataFrame:
    return d[(d.episode >= span[0]) & (d.episode <= span[1])]


PROTOCOL_COLUMNS = {"greedy-real": "eval_score_greedy", "stochastic-real": "eval_score_stochastic",
                    "training-own": "score"}
HELDOUT_PROTOCOLS = {"greedy-heldout": ("greedy", HELDOUT_FLOWS), "stochastic-heldout": ("stochastic", HELDOUT_FLOWS),
                     "greedy-contexts": ("greedy", None)}


def heldout_table(ctx: Context) -> pd.DataFrame | None:
    rs = ctx.run_set
    if not rs.heldout or not (ctx.root / rs.heldout).exists():
        return None
    return _csv(ctx.root / rs.heldout)


def scores(ctx: Context, configuration: str, protocol: str | None = None) -> dict[str, float]:
    """Per seed, a configuration's score under ``protocol`` (the row's by default)."""
    protocol = protocol or ctx.protocol
    if protocol in HELDOUT_PROTOCOLS:
        table = heldout_table(ctx)
        if table is None:
            return {}
        policy, flows = HELDOUT_PROTOCOLS[protocol]
        d = table[(table.configuration == configuration) & (table.protocol == policy)]
        d = d[d.traffic.isin(flows)] if flows else d[d.traffic.str.startswith("context:")]
        return {str(s): float(v) for s, v in d.groupby("seed").score.mean().items()}
    d = episodes(ctx.root, ctx.run_set.folder)
    d = _window(d[d.ablation == configuration], FINAL_EPISODES)
    return {str(s): float(v) for s, v in d.groupby("seed")[PROTOCOL_COLUMNS[protocol]].mean().items()}


def _missing(ctx: Context, *configurations: str) -> Unavailable | None:
    protocol = ctx.protocol if ctx.protocol in PROTOCOL_COLUMNS or ctx.protocol in HELDOUT_PROTOCOLS else "training-own"
    gone = [c for c in configurations if not scores(ctx, c, protocol)]
    if not gone:
        return None
    where = "held-out evaluation" if ctx.protocol in HELDOUT_PROTOCOLS else "runs"
    return Unavailable("not testable", f"no {where} of {', '.join(gone)} committed (experiment: train and evaluate "
                                       f"them on seeds 200-1300)")


def _maestro_label(ctx: Context) -> str:
    labels = {"greedy-real": "greedy evaluation on the real flow, episodes 180-199",
              "stochastic-real": "stochastic evaluation on the real flow, episodes 180-199",
              "training-own": "training score on each configuration's own curriculum traffic (not like for like)",
              "greedy-heldout": "greedy evaluation on the held-out flows real_5816 and real_5734",
              "stochastic-heldout": "stochastic evaluation on the held-out flows real_5816 and real_5734",
              "greedy-contexts": "greedy evaluation on 5 held-out curriculum contexts"}
    return labels.get(ctx.protocol, ctx.protocol)


def compare(first: str, second: str) -> Callable[[Context], Extract | Unavailable]:
    """``first - second`` per shared seed, the row's protocol."""
    def extract(ctx: Context) -> Extract | Unavailable:
        gone = _missing(ctx, first, second)
        if gone:
            return gone
        cell = _cell(f"{first} - {second}", scores(ctx, first), scores(ctx, second), True)
        note = "; A0 evaluated on its own training traffic" if "A0" in (first, second) and ctx.protocol.endswith(
            "real") else ""
        return Extract((cell,), f"{first} - {second}, {_maestro_label(ctx)}{note}", (first, second))
    return extract


def _one_against_two(ctx: Context, lead: str, others: tuple[str, str]) -> Extract | Unavailable:
    """``lead`` against each of ``others``, paired by seed: one cell per pair (the missing ones named in order)."""
    named = tuple(sorted((lead, *others)))
    gone = _missing(ctx, *named)
    if gone:
        return gone
    own = scores(ctx, lead)
    cells = tuple(_cell(f"{lead} - {c}", own, scores(ctx, c), True) for c in others)
    return Extract(cells, f"{lead} against {' and '.join(others)}, {_maestro_label(ctx)}", named)


def highest_mean(ctx: Context) -> Extract | Unavailable:
    return _one_against_two(ctx, "A8", ("A7", "A2"))


TRAFFIC_METRICS = (("avg_delay_s", -1), ("throughput", 1), ("avg_travel_time_s", -1), ("avg_wait_s", -1))


def traffic(first: str) -> Callable[[Context], Extract | Unavailable]:
    def extract(ctx: Context) -> Extract | Unavailable:
        gone = _missing(ctx, first, "A2")
        if gone:
            return gone
        policy = ctx.protocol.split("-")[0]
        d = _window(episodes(ctx.root, ctx.run_set.folder), FINAL_EPISODES)
        cells = []
        for metric, sign in TRAFFIC_METRICS:
            per = {a: {str(s): float(v) for s, v in
                       d[d.ablation == a].groupby("seed")[f"eval_{metric}_{policy}"].mean().items()}
                   for a in (first, "A2")}
            cells.append(_cell(metric, per[first], per["A2"], True, sign))
        return Extract(tuple(cells), f"{first} against A2 per seed (delay, travel time, wait lower; throughput "
                                     f"higher), {_maestro_label(ctx)}", (first, "A2"))
    return extract


def _matrix(ctx: Context, configurations: tuple[str, ...]) -> tuple[tuple[tuple[float, ...], ...], tuple[str, ...]]:
    per = [scores(ctx, c) for c in configurations]
    units = tuple(sorted(set.intersection(*(set(p) for p in per)), key=int))
    return tuple(tuple(p[u] for p in per) for u in units), units


def _cv(v: np.ndarray) -> float:
    return float(np.std(v, ddof=1) / np.mean(v)) if np.mean(v) > 0 else np.nan


def _log_cv_ratio(v: np.ndarray, w: np.ndarray) -> float:
    """log(CV(v) / CV(w)); NaN where either CV is undefined or 0 (a resample of identical seeds), which the
    bootstrap leaves out like any other non-finite value."""
    cv_v, cv_w = _cv(v), _cv(w)
    return float(np.log(cv_v / cv_w)) if cv_v > 0 and cv_w > 0 else np.nan


def _sharpe(v: np.ndarray, base: float) -> float:
    return float((np.mean(v) - base) / np.std(v, ddof=1))


def _sortino(v: np.ndarray, base: float) -> float:
    down = np.sqrt(np.mean(np.minimum(v - base, 0.0) ** 2))
    return float((np.mean(v) - base) / down) if down > 0 else np.nan


#: Statistics over seeds (rows) of the columns (A2, A7, A8): each in the paper's direction.
STATISTICS: dict[str, Callable[[np.ndarray], float]] = {
    "Sharpe(A7) - Sharpe(A8)": lambda m: _sharpe(m[:, 1], m[:, 0].mean()) - _sharpe(m[:, 2], m[:, 0].mean()),
    "log CV(A2) / CV(A7)": lambda m: _log_cv_ratio(m[:, 0], m[:, 1]),
    "log CV(A8) / CV(A7)": lambda m: _log_cv_ratio(m[:, 2], m[:, 1]),
    "log CV(A8) / CV(A2)": lambda m: _log_cv_ratio(m[:, 2], m[:, 0]),
    "Sortino(A7) - Sortino(A8)": lambda m: _sortino(m[:, 1], m[:, 0].mean()) - _sortino(m[:, 2], m[:, 0].mean()),
    "VaR5(A7) - VaR5(A8)": lambda m: float(np.percentile(m[:, 1], 5) - np.percentile(m[:, 2], 5)),
    "drawdown(A8) - drawdown(A7)": lambda m: float(np.max(np.abs(m[:, 2] - m[:, 2].mean()))
                                                   - np.max(np.abs(m[:, 1] - m[:, 1].mean()))),
}


def bootstrap_statistics(*names: str) -> Callable[[Context], Extract | Unavailable]:
    def extract(ctx: Context) -> Extract | Unavailable:
        gone = _missing(ctx, "A2", "A7", "A8")
        if gone:
            return gone
        matrix, units = _matrix(ctx, ("A2", "A7", "A8"))
        cells = tuple(Cell(n, matrix=matrix, statistic=STATISTICS[n], units=units) for n in names)
        return Extract(cells, f"{'; '.join(names)} over shared seeds (columns A2, A7, A8), {_maestro_label(ctx)}",
                       ("A2", "A7", "A8"))
    return extract


def worst_seed(ctx: Context) -> Extract | Unavailable:
    gone = _missing(ctx, "A2", "A7")
    if gone:
        return gone
    a2, a7 = scores(ctx, "A2"), scores(ctx, "A7")
    base = float(np.mean(list(a2.values())))
    units = tuple(sorted(a7, key=int))
    return Extract((Cell("A7 seeds above A2's mean", tuple(a7[u] for u in units), null=base, units=units),),
                   f"A7's seeds against A2's mean {base:.1f}, {_maestro_label(ctx)}", ("A2", "A7"))


def success_rate(ctx: Context) -> Extract | Unavailable:
    gone = _missing(ctx, "A2", "A7", "A8")
    if gone:
        return gone
    base = float(np.mean(list(scores(ctx, "A2").values())))
    a7, a8 = ({k: float(v > base) for k, v in scores(ctx, c).items()} for c in ("A7", "A8"))
    return Extract((_cell("success(A7) - success(A8)", a7, a8, True),),
                   f"seeds above A2's mean {base:.1f}: A7 against A8, {_maestro_label(ctx)}", ("A2", "A7", "A8"))


def _band_sd(curves: np.ndarray) -> float:
    return float(np.nanmean(np.nanstd(curves, axis=0, ddof=1)))


def narrow_bands(ctx: Context) -> Extract | Unavailable:
    gone = _missing(ctx, "A2", "A7", "A8")
    if gone:
        return gone
    column = PROTOCOL_COLUMNS[ctx.protocol]
    d = _window(episodes(ctx.root, ctx.run_set.folder), LATE_EPISODES).dropna(subset=[column])
    wide = {a: d[d.ablation == a].pivot(index="seed", columns="episode", values=column) for a in ("A2", "A7", "A8")}
    seeds = sorted(set.intersection(*(set(w.index) for w in wide.values())))
    width = wide["A2"].shape[1]
    matrix = tuple(tuple(np.concatenate([wide[a].loc[s].to_numpy() for a in ("A2", "A7", "A8")])) for s in seeds)

    def ratio(m: np.ndarray, top: int) -> float:
        blocks = [m[:, i * width:(i + 1) * width] for i in range(3)]
        return float(np.log(_band_sd(blocks[top]) / _band_sd(blocks[1])))

    cells = (Cell("log band(A2) / band(A7)", matrix=matrix, statistic=lambda m: ratio(m, 0),
                  units=tuple(map(str, seeds))),
             Cell("log band(A8) / band(A7)", matrix=matrix, statistic=lambda m: ratio(m, 2),
                  units=tuple(map(str, seeds))))
    return Extract(cells, f"across-seed SD of the evaluation curve, episodes 100-199, {_maestro_label(ctx)}",
                   ("A2", "A7", "A8"))


def _first_reaching(series: pd.Series, level: float) -> float:
    moving = series.rolling(5, min_periods=5).mean()
    reached = moving.index[moving >= level]
    return float(reached[0]) if len(reached) else 200.0


def reaches_level(ctx: Context) -> Extract | Unavailable:
    gone = _missing(ctx, "A2", "A7")
    if gone:
        return gone
    column = PROTOCOL_COLUMNS[ctx.protocol]
    d = episodes(ctx.root, ctx.run_set.folder).dropna(subset=[column])
    level = scores(ctx, "A2")
    per = {a: {str(s): _first_reaching(g.set_index("episode")[column], level[str(s)])
               for s, g in d[d.ablation == a].groupby("seed") if str(s) in level} for a in ("A2", "A7")}
    return Extract((_cell("episodes(A2) - episodes(A7)", per["A2"], per["A7"], True),),
                   f"first evaluation episode whose 5-evaluation mean reaches A2's final level for the seed, "
                   f"{_maestro_label(ctx)}", ("A2", "A7"))


def _needs_target(ctx: Context, target: float) -> Unavailable | None:
    if abs(ctx.run_set.target - target) < 1e-9:
        return None
    return Unavailable("not testable", f"runs under curriculum target {ctx.run_set.target:g}, this row needs "
                                       f"{target:g} (experiment: A2 runs under target {target:g})")


def raises_difficulty(target: float) -> Callable[[Context], Extract | Unavailable]:
    def extract(ctx: Context) -> Extract | Unavailable:
        wrong = _needs_target(ctx, target) or _missing(ctx, "A2")
        if wrong:
            return wrong
        d = _window(episodes(ctx.root, ctx.run_set.folder), LATE_EPISODES)
        per = d[d.ablation == "A2"].groupby("seed").difficulty.mean()
        bar = 0.3 + ctx.claim.margin
        return Extract((Cell("A2 mean d, episodes 100-199", tuple(per.to_numpy()), null=bar,
                             units=tuple(map(str, per.index))),),
                       f"A2's mean difficulty over episodes 100-199 against {bar:g} (floor 0.3 + margin), "
                       f"curriculum target {ctx.run_set.target:g}", ())
    return extract


def _changes(d: pd.DataFrame) -> pd.Series:
    return d.groupby("seed").apply(lambda g: int((g.sort_values("episode").difficulty.diff().fillna(0) != 0).sum()),
                                   include_groups=False)


def _change_size(d: pd.DataFrame) -> pd.Series:
    def size(g: pd.DataFrame) -> float:
        step = g.sort_values("episode").difficulty.diff().abs()
        return float(step[step > 0].mean()) if (step > 0).any() else 0.0
    return d.groupby("seed").apply(size, include_groups=False)


def per_run(configurations: tuple[str, ...], value: Callable[[pd.DataFrame], pd.Series], null: float,
            what: str) -> Callable[[Context], Extract | Unavailable]:
    """A one-sample cell per configuration: ``value`` per seed against ``null``."""
    def extract(ctx: Context) -> Extract | Unavailable:
        gone = _missing(ctx, *configurations)
        if gone:
            return gone
        d = episodes(ctx.root, ctx.run_set.folder)
        cells = []
        for a in configurations:
            per = value(d[d.ablation == a])
            cells.append(Cell(a, tuple(map(float, per.to_numpy())), null=null, units=tuple(map(str, per.index))))
        return Extract(tuple(cells), f"{what} against {null:g}, per run", ())
    return extract


def fewer_larger(ctx: Context) -> Extract | Unavailable:
    gone = _missing(ctx, "A2", "A8")
    if gone:
        return gone
    d = episodes(ctx.root, ctx.run_set.folder)
    count = {a: {str(k): float(v) for k, v in _changes(d[d.ablation == a]).items()} for a in ("A2", "A8")}
    size = {a: {str(k): float(v) for k, v in _change_size(d[d.ablation == a]).items()} for a in ("A2", "A8")}
    return Extract((_cell("changes(A2) - changes(A8)", count["A2"], count["A8"], True),
                    _cell("size(A8) - size(A2)", size["A8"], size["A2"], True)),
                   "difficulty changes per run and their mean size, A8 against A2", ())


def _gain_after_cuts(g: pd.DataFrame, column: str) -> float:
    g = g.sort_values("episode").set_index("episode")
    evals = g[column].dropna()
    cuts = set(g.index[g.difficulty_next < g.difficulty])
    gains = {t: float(evals.loc[t + 1:t + 10].mean() - evals.loc[:t].iloc[-1])
             for t in evals.index[:-1] if len(evals.loc[:t])}
    after = [v for t, v in gains.items() if any(0 <= t - c < 10 for c in cuts)]
    rest = [v for t, v in gains.items() if not any(0 <= t - c < 10 for c in cuts)]
    return float(np.nanmean(after) - np.nanmean(rest)) if after and rest else np.nan


def cuts_precede_gains(ctx: Context) -> Extract | Unavailable:
    column = PROTOCOL_COLUMNS[ctx.protocol]
    value = lambda d: d.groupby("seed").apply(lambda g: _gain_after_cuts(g, column), include_groups=False)  # noqa
    out = per_run(("A2", "A7"), value, 0.0, "gain of the evaluation score in the 10 episodes after a cut minus "
                                            "elsewhere")(ctx)
    return Extract(out.cells, out.compared + f", {_maestro_label(ctx)}", ("A2", "A7")) if isinstance(
        out, Extract) else out


def _total_seconds(d: pd.DataFrame) -> pd.Series:
    cols = ["sim_s", "train_s", "reward_eval_s", "llm_curriculum_s", "llm_reward_s", "baseline_s", "eval_s"]
    return d[cols].fillna(0).sum(axis=1)


def _run_totals(ctx: Context) -> pd.DataFrame:
    d = episodes(ctx.root, ctx.run_set.folder).copy()
    d["total_s"], d["llm_s"] = _total_seconds(d), d[["llm_curriculum_s", "llm_reward_s"]].fillna(0).sum(axis=1)
    out = d.groupby(["ablation", "seed"])[["sim_s", "train_s", "llm_s", "total_s"]].sum()
    out.index = [f"{a}:{s}" for a, s in out.index]
    return out


def simulation_dominates(ctx: Context) -> Extract | Unavailable:
    t = _run_totals(ctx)
    if t.empty:
        return Unavailable("not testable", f"no runs in {ctx.run_set.name}")
    return Extract((Cell("simulation s - MADDPG s", tuple(t.sim_s), tuple(t.train_s), units=tuple(t.index)),),
                   f"per run, simulation against MADDPG update seconds ({ctx.run_set.engine}, CPU cores; shares "
                   f"compared, never hours)", ())


def llm_share(ctx: Context) -> Extract | Unavailable:
    t = _run_totals(ctx)
    if t.empty:
        return Unavailable("not testable", f"no runs in {ctx.run_set.name}")
    return Extract((Cell("architect's share of a run", tuple(t.llm_s / t.total_s), sign=-1, null=ctx.claim.margin,
                         units=tuple(t.index)),),
                   f"per run, the architect's share of wall time against {ctx.claim.margin:g}", ())


def regenerations(ctx: Context) -> Extract | Unavailable:
    value = lambda d: d.groupby("seed").reward_trigger.apply(lambda s: float(s.notna().sum()))  # noqa
    return per_run(("A7",), value, 60.0, "reward generations per 200-episode A7 run")(ctx)


def monotone(ctx: Context) -> Extract | Unavailable:
    d = _csv(ctx.root / "data/results/maestro/paper/traffic_difficulty.csv")
    d = d[d.controller == "fixed-time"]
    cells = []
    for engine, g in d.groupby("engine"):
        means = g.groupby("difficulty")[["avg_queue", "avg_delay_s"]].mean()
        for metric in ("avg_queue", "avg_delay_s"):
            cells.append(Cell(f"{engine}: {metric}", tuple(means.index), tuple(means[metric])))
    return Extract(tuple(cells), "Spearman's rho of difficulty against the mean over 5 seeds, fixed-time control", ())


def generalization(ctx: Context) -> Extract | Unavailable:
    return _one_against_two(ctx, "A7", ("A8", "A0"))


EXTRACTORS: dict[str, Callable[[Context], Extract | Unavailable]] = {
    "marlin-ahead-at-100": ahead_at(100),
    "marlin-ahead-at-850": ahead_at(850),
    "marlin-at-or-above-at-1600": ahead_at(1600),
    "marlin-executed-ahead-at-100": executed_at(100),
    "marlin-executed-at-or-above-at-1600": executed_at(1600),
    "marlin-maze-pattern": maze_pattern,
    "marlin-peak-earlier": peak_earlier(OPEN_CORRIDORS),
    "marlin-maze-095-earlier": peak_earlier(("maze_like",)),
    "marlin-beats-llm-only": beats_llm_only,
    "marlin-llm-plans-struggle": llm_plans_struggle,
    "marlin-hardware": hardware,
    "marlin-dynamic-environment": dynamic,
    "marlin-our-marl-matches-authors": fidelity,
    "maestro-a7-above-a2-mean": compare("A7", "A2"),
    "maestro-a7-traffic": traffic("A7"),
    "maestro-a8-traffic": traffic("A8"),
    "maestro-a8-above-a2": compare("A8", "A2"),
    "maestro-a8-highest-mean": highest_mean,
    "maestro-a7-sharpe-above-a8": bootstrap_statistics("Sharpe(A7) - Sharpe(A8)"),
    "maestro-a7-cv-lower": bootstrap_statistics("log CV(A2) / CV(A7)", "log CV(A8) / CV(A7)"),
    "maestro-a8-less-stable": bootstrap_statistics("log CV(A8) / CV(A2)"),
    "maestro-a7-risk-metrics": bootstrap_statistics("Sortino(A7) - Sortino(A8)", "VaR5(A7) - VaR5(A8)",
                                                    "drawdown(A8) - drawdown(A7)"),
    "maestro-a7-worst-seed": worst_seed,
    "maestro-a7-success-rate": success_rate,
    "maestro-a7-narrow-bands": narrow_bands,
    "maestro-a7-reaches-level-sooner": reaches_level,
    "maestro-curriculum-alone-improves": compare("A2", "A0"),
    "maestro-a7-above-a0": compare("A7", "A0"),
    "maestro-curriculum-raises-difficulty": raises_difficulty(PAPER_TARGET),
    "maestro-curriculum-raises-difficulty-target-67": raises_difficulty(67.46),
    "maestro-difficulty-range": per_run(("A2", "A7"), lambda d: d.groupby("seed").difficulty.max(), 0.7,
                                        "the largest difficulty reached in 200 episodes"),
    "maestro-curriculum-update-frequency": per_run(("A2", "A7"), _changes, 80.0, "difficulty changes per run"),
    "maestro-difficulty-cuts-precede-gains": cuts_precede_gains,
    "maestro-a8-fewer-larger-adjustments": fewer_larger,
    "maestro-difficulty-monotone": monotone,
    "maestro-cost-simulation-dominates": simulation_dominates,
    "maestro-cost-llm-share-small": llm_share,
    "maestro-reward-regenerations": regenerations,
    "maestro-generalization": generalization,
}


def extract(ctx: Context) -> Extract | Unavailable:
    """The values of one row (claim, stand-in, protocol)."""
    return EXTRACTORS[ctx.claim.id](ctx)


#: The configurations each MAESTRO claim compares (the gates check these).
CONFIGURATIONS: dict[str, tuple[str, ...]] = {
    "maestro-a7-above-a2-mean": ("A2", "A7"), "maestro-a7-traffic": ("A2", "A7"), "maestro-a8-traffic": ("A2", "A8"),
    "maestro-a8-above-a2": ("A2", "A8"), "maestro-a8-highest-mean": ("A2", "A7", "A8"),
    "maestro-a7-sharpe-above-a8": ("A2", "A7", "A8"), "maestro-a7-cv-lower": ("A2", "A7", "A8"),
    "maestro-a8-less-stable": ("A2", "A8"), "maestro-a7-risk-metrics": ("A2", "A7", "A8"),
    "maestro-a7-worst-seed": ("A2", "A7"), "maestro-a7-success-rate": ("A2", "A7", "A8"),
    "maestro-a7-narrow-bands": ("A2", "A7", "A8"), "maestro-a7-reaches-level-sooner": ("A2", "A7"),
    "maestro-curriculum-alone-improves": ("A0", "A2"), "maestro-a7-above-a0": ("A0", "A7"),
    "maestro-difficulty-cuts-precede-gains": ("A2", "A7"), "maestro-generalization": ("A0", "A7", "A8"),
}
