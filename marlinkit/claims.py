"""The claims ledger: each paper claim, the paper's number, ours, a verdict and the evidence file.

The ledger is computed from the committed paper-preset tables (``figures/paper/``), never typed by hand:
``notebooks/claims_ledger.ipynb`` writes it to ``figures/claims.csv`` and renders the README's claims
table from it (between the markers :data:`README_BEGIN` and :data:`README_END`); a test checks that the
README's table is the ledger's rendering.

Verdicts (one vocabulary for both papers):

* ``holds``: our result has the paper's direction, and the stated test is significant where one applies;
* ``holds, not significant``: the direction holds, the test does not reach p < 0.05;
* ``mixed``: the direction holds in some cells and is reversed in others;
* ``contradicted``: our result has the opposite direction (significantly, where a test applies), or misses the
  paper's stated criterion;
* ``contradicted, not significant``: the opposite direction or no difference, the test does not reach p < 0.05;
* ``not testable``: the runs cannot test it (the reason is in ``ours``);
* ``pending``: the runs that test it are not committed yet.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pandas as pd

from marlinkit import paths

#: Where the paper preset's tables live (the ledger's inputs), relative to the repository root.
PAPER_FIGURES = paths.FIGURES_DIR / "paper"
#: The ledger file.
LEDGER_PATH = paths.FIGURES_DIR / "claims.csv"
README_BEGIN = "<!-- claims ledger: begin (generated from figures/claims.csv) -->"
README_END = "<!-- claims ledger: end -->"
#: The significance level of every test behind a verdict.
ALPHA = 0.05
#: The verdicts a test decides: the direction names them, significance (p < :data:`ALPHA`) qualifies them.
TESTED_VERDICTS = ("holds", "holds, not significant", "contradicted", "contradicted, not significant")
#: The ledger's vocabulary; "not testable" carries its reason in parentheses, "not testable (...)".
VERDICTS = TESTED_VERDICTS + ("mixed", "not testable", "pending")
#: How marlinkit.maestro.claims appends smollm2's own verdict to its cell (longest alternative first).
_SMOLLM2_VERDICT = re.compile(
    r" \((" + "|".join(re.escape(v) for v in sorted(TESTED_VERDICTS, key=len, reverse=True)) + r")\)$")
CORRIDORS = ("single_slot", "symmetrical_two_slot", "asymmetrical_two_slot", "two_path", "maze_like")


def verdict_for(direction: bool, p: float | None) -> str:
    """``holds`` or ``contradicted`` when the test is significant, each with ", not significant" when it is not (or
    there is no p): a claim that a handful of seeds fails to support is not thereby refuted."""
    significant = p is not None and p < ALPHA
    word = "holds" if direction else "contradicted"
    return word if significant else f"{word}, not significant"


@dataclass(frozen=True)
class Claim:
    """One row of the ledger."""

    paper: str
    """"MARLIN" or "MAESTRO"."""
    claim: str
    """The paper's claim, in one sentence."""
    paper_value: str
    """What the paper reports for it."""
    ours: str
    """What our committed runs give."""
    verdict: str
    """One of the module's verdicts."""
    evidence: str
    """The table the row is computed from, relative to the repository root."""
    test: str
    """The statistical test or criterion behind the verdict."""
    p: float | None = None
    """The test's p-value where one applies (the smallest over cells when several are tested)."""


COLUMNS = [f.name for f in fields(Claim)]


def _rel(path: Path) -> str:
    return str(Path(path).resolve().relative_to(paths.REPO_ROOT.resolve()))


def _pending(paper: str, claim: str, paper_value: str, evidence: Path, test: str, what: str) -> Claim:
    return Claim(paper, claim, paper_value, f"runs not committed yet: {what}", "pending", _rel(evidence), test)


# ----- MARLIN ---------------------------------------------------------------------------------------------

def _marlin_direction(table: pd.DataFrame, episode: int, at_least: bool) -> tuple[str, str, float | None]:
    """Summary, verdict and smallest across-seed p of "MARLIN ahead of (or level with) MARL" at one episode."""
    rows = table[table.episode == episode].set_index("scenario").reindex(list(CORRIDORS))
    diff = rows.MARLIN - rows.MARL
    sig = rows.significant_seeds.astype(str).str.lower() == "true"
    if at_least:  # "at or above": a deficit only counts when significant
        favour, against = ~(sig & (diff < 0)), sig & (diff < 0)
    else:
        favour, against = diff > 0, diff < 0
    ahead_sig = int((sig & (diff > 0)).sum())
    behind_sig = int((sig & (diff < 0)).sum())
    text = (f"MARLIN - MARL {diff.min():+.3f} to {diff.max():+.3f}: ahead in {int((diff > 0).sum())}/5, "
            f"significantly ahead in {ahead_sig}/5, significantly behind in {behind_sig}/5")
    if int(against.sum()) == 0 and int(favour.sum()) == len(rows):
        verdict = "holds" if at_least or ahead_sig == len(rows) else "holds, not significant"
    elif behind_sig > len(rows) // 2:
        verdict = "contradicted"
    elif int(favour.sum()) == 0:
        verdict = "contradicted" if behind_sig else "contradicted, not significant"
    else:
        verdict = "mixed"
    p = float(rows.p_value_seeds.min()) if rows.p_value_seeds.notna().any() else None
    return text, verdict, p


def _paper_direction(table: pd.DataFrame, episode: int) -> str:
    rows = table[table.episode == episode]
    diff = rows.paper_MARLIN - rows.paper_MARL
    return (f"Table I, episode {episode}: MARLIN - MARL {diff.min():+.3f} to {diff.max():+.3f}, "
            f"ahead in {int((diff > 0).sum())}/5")


def marlin_claims(root: Path = PAPER_FIGURES) -> list[Claim]:
    """MARLIN's claims from the paper-preset tables under ``root``."""
    root = Path(root)
    table1 = root / "marlin" / "table1_ttests.csv"
    claims: list[Claim] = []
    test = "paired t-test across 5 seeds, per corridor (smallest p shown)"
    if table1.exists():
        t = pd.read_csv(table1)
        for episode, claim, at_least in (
                (100, "MARLIN learns faster than MARL: ahead at episode 100 (the policy evaluated alone)", False),
                (1600, "MARLIN ends at or above MARL at episode 1600 (the policy evaluated alone)", True)):
            ours, verdict, p = _marlin_direction(t, episode, at_least)
            claims.append(Claim("MARLIN", claim, _paper_direction(t, episode), ours + " (plans: calibrated surrogate planner)",
                                verdict, _rel(table1), test, p))
    executed = root / "marlin" / "executed_vs_policy.csv"
    for episode, metric, claim in (
            (100, "executed", "MARLIN learns faster than MARL: ahead at episode 100 (executed training episodes, the paper's metric, the authors' protocol)"),
            (1600, "executed", "MARLIN ends at or above MARL at episode 1600 (executed training episodes, the paper's metric, the authors' protocol)"),
            (100, "policy", "MARLIN learns faster than MARL: ahead at episode 100 (the policy alone, the authors' protocol)"),
            (1600, "policy", "MARLIN ends at or above MARL at episode 1600 (the policy alone, the authors' protocol)")):
        if not executed.exists():
            claims.append(_pending("MARLIN", claim, "Fig. 3 / Table I", executed, "mean over runs per corridor",
                                   "the authors' protocol (1 copy per MARLIN training)"))
            continue
        claims.append(_executed_claim(pd.read_csv(executed), episode, claim, executed, metric))
    fidelity = root / "marlin" / "fidelity_rllib_departures_summary.csv"
    if fidelity.exists():
        f = pd.read_csv(fidelity).set_index("variant")
        ours_row = f.loc["ours"]
        best = f.within_01 if "within_01" in f else f["within_0.1"]
        claims.append(Claim(
            "MARLIN", "Our MARL (MAPPO, centralised critic) reproduces the authors' MARL training performance",
            "Table I MARL: 15 cells (5 corridors x episodes 100/850/1600)",
            f"within 0.1 in {int(ours_row['within_0.1'])}/15 cells (mean absolute difference {ours_row.mean_abs_difference:.3f}); "
            f"{int(best.max())}/15 with {best.idxmax()} per update stream",
            "holds" if int(best.max()) >= 13 else "mixed", _rel(fidelity), "|ours - paper| <= 0.1 per cell"))
    fig5 = root / "marlin" / "fig5_hardware_simulated.csv"
    if fig5.exists():
        h = pd.read_csv(fig5)
        last = h.checkpoint.max()
        m = h[(h.system == "MARLIN") & (h.checkpoint == last)].iloc[0]
        r = h[(h.system == "MARL") & (h.checkpoint == last)].iloc[0]
        ahead = h.pivot(index="checkpoint", columns="system", values="median")
        early = ahead[ahead.index <= 850]
        lead = early.index[early.MARLIN > early.MARL]
        holds = len(lead) > 0 and m["median"] <= r["median"] + 0.05
        claims.append(Claim(
            "MARLIN", "On hardware (maze-like), MARLIN reaches near-perfect performance earlier; MARL is slightly ahead "
            "after long training (Fig. 5)",
            "Fig. 5: MARLIN's median ahead early, MARL's slightly ahead late",
            f"simulated actuation noise, not robots: MARLIN's median ahead at checkpoints "
            f"{', '.join(str(int(c)) for c in lead) or 'none'} of <= 850; at {last}: median {m['median']:.2f} vs "
            f"{r['median']:.2f}",
            "holds" if holds else "contradicted",
            _rel(fig5), "medians per checkpoint over 5 seeds x 50 runs (no test)"))
    return claims


#: The systems the executed-metric claims compare (``executed_vs_policy.csv``): the authors' protocol's MARL (6 copies)
#: and MARLIN with the plan source calibrated to Llama's LLM-only mean and perfect-plan share.
EXECUTED_MARL, EXECUTED_MARLIN = "MARL", "MARLIN surrogate_llama"


def _executed_claim(table: pd.DataFrame, episode: int, claim: str, path: Path, metric: str = "executed") -> Claim:
    rows = table[(table.episode == episode) & (table.metric == metric)]
    wide = rows.pivot_table(index="scenario", columns="system", values="mean")
    runs = rows.pivot_table(index="scenario", columns="system", values="runs")
    if not {EXECUTED_MARL, EXECUTED_MARLIN} <= set(wide.columns):
        return _pending("MARLIN", claim, "Fig. 3", path, "mean over runs per corridor",
                        f"{metric}-metric rows of {EXECUTED_MARL} and {EXECUTED_MARLIN}")
    wide = wide.reindex([c for c in CORRIDORS if c in wide.index])
    diff = wide[EXECUTED_MARLIN] - wide[EXECUTED_MARL]
    favour = (diff >= -0.01) if episode >= 1600 else (diff > 0)
    verdict = ("holds, not significant" if favour.all() else "contradicted" if not favour.any() else "mixed")
    behind = [c.replace("_", "-") for c in wide.index[~favour]]
    return Claim(
        "MARLIN", claim, "Fig. 3: MARLIN's executed episodes at or above MARL's" if metric == "executed" else
        "Fig. 3 / Table I: MARLIN at or above MARL",
        f"the authors' protocol, MARLIN (surrogate_llama, 1 copy, {int(runs[EXECUTED_MARLIN].min())}-"
        f"{int(runs[EXECUTED_MARLIN].max())} runs) - MARL (6 copies, {int(runs[EXECUTED_MARL].max())} run(s)) "
        f"{diff.min():+.3f} to {diff.max():+.3f}: {'at or above' if episode >= 1600 else 'ahead'} in "
        f"{int(favour.sum())}/{len(diff)}" + (f", not in {', '.join(behind)}" if behind and favour.any() else ""),
        verdict, _rel(path), "means over runs (too few runs for a test)")


# ----- MAESTRO --------------------------------------------------------------------------------------------

def maestro_claims(root: Path = PAPER_FIGURES) -> list[Claim]:
    """MAESTRO's claims: the rows of ``maestro/claims.csv`` (:mod:`marlinkit.maestro.claims` computes them from the
    committed runs); one pending row while that table is not committed."""
    root = Path(root)
    own = root / "maestro" / "claims.csv"
    if own.exists():  # written by marlinkit.maestro.claims: the reference architect's verdict, smollm2's beside it
        table = pd.read_csv(own, keep_default_na=False)
        out = []
        for r in table.itertuples(index=False):
            small = _SMOLLM2_VERDICT.search(str(r.smollm2))
            if not str(r.verdict).startswith("not testable") or small is None:
                verdict, p = str(r.verdict), (None if r.p in ("", "—") else float(r.p))
                ours = f"reference architect (a surrogate, not an LLM): {r.reference_architect}; smollm2: {r.smollm2}"
            else:  # the reference architect's runs cannot decide yet (missing, too few seeds): smollm2's runs decide
                verdict, p = small.group(1), None
                why = "" if str(r.reference_architect) == str(r.verdict) else f"; its verdict: {r.verdict}"
                ours = (f"smollm2: {_SMOLLM2_VERDICT.sub('', str(r.smollm2))}; reference architect (a surrogate, "
                        f"not an LLM): {r.reference_architect}{why}")
            out.append(Claim("MAESTRO", str(r.claim), str(r.paper), ours, verdict, _rel(own), str(r.test), p))
        return out
    return [_pending("MAESTRO", "MAESTRO's claims", "the paper's Tables 1-7 and Appendix A", own,
                     "marlinkit.maestro.claims", "the claims table (python -m marlinkit.maestro.claims)")]


# ----- the ledger ------------------------------------------------------------------------------------------

def ledger(root: Path = PAPER_FIGURES) -> pd.DataFrame:
    """Every claim of both papers as a table with :data:`COLUMNS`."""
    rows = [asdict(c) for c in marlin_claims(root) + maestro_claims(root)]
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown_cell(text: object) -> str:
    """``text`` as one cell of a Markdown pipe table: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def format_p(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "—"
    return f"{p:.2g}" if p >= 0.001 else "< 0.001"


def readme_table(table: pd.DataFrame) -> str:
    """The README's claims tables, one per paper: each claim, its verdict, the paper's number and ours, the
    evidence linked."""
    out = []
    for paper in dict.fromkeys(table.paper):
        out += [f"**{paper}**", "", "| Claim | Verdict | Paper | Ours | p | Evidence |", "|---|---|---|---|---|---|"]
        for r in table[table.paper == paper].itertuples(index=False):
            cells = [markdown_cell(v) for v in (r.claim, r.verdict, r.paper_value, r.ours)]
            p = format_p(None if pd.isna(r.p) else float(r.p))
            out.append(f"| {cells[0]} | **{cells[1]}** | {cells[2]} | {cells[3]} | {p} | "
                       f"[{Path(r.evidence).name}]({r.evidence}) |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def render_into(text: str, table: pd.DataFrame) -> str:
    """``text`` (the README) with the block between the markers replaced by the ledger's table."""
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no claims block: add the lines {README_BEGIN!r} and {README_END!r}")
    return text[:start] + README_BEGIN + "\n" + readme_table(table) + "\n" + text[end:]


def write(table: pd.DataFrame, path: Path = LEDGER_PATH) -> Path:
    from marlinkit.files import atomic_write_text

    atomic_write_text(Path(path), table.to_csv(index=False))
    return Path(path)
