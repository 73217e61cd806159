"""Build the documentation site: ``make docs`` (Sphinx + MyST, warnings are errors).

The hand-written pages in ``docs/`` are copied into a staging folder (``build/docs/src``) beside the generated
pages, so nothing generated is ever committed and nothing can drift:

* the verdict summary of the index (``docs/index.md`` marks its place): counts per verdict and paper, and every
  claim linked to the page of the figure or table it bears on, from the claims ledger (``figures/claims.csv``);
* ``reproduction/<paper>/``: one reproduction report per paper, rendered from the figure catalog
  (``docs/figures.toml``), the ledger and the committed figures and tables under ``figures/`` (copied in; no
  training is re-run): an overview with the paper's claims, one page per figure or table (the figure, the paper's
  numbers beside ours, the deviations, the command, the claims it bears on), and one page per topic of the paper's
  notes (``docs/reproduction/<paper>_notes.md``, a topic per paragraph that opens in bold);
* ``reference/configuration/``: every ``*Config`` dataclass of the package with its fields' types, defaults and
  docstrings, read from the code, a page per subpackage;

then ``sphinx-build -W`` writes the HTML site to ``build/docs/html``.

Usage: ``python tools/docs_site.py [--staging DIR] [--html DIR]``.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import html
import importlib
import inspect
import math
import pkgutil
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from marlinkit import catalog, claims, claims_plan  # noqa: E402

DOCS = REPO / "docs"
FIGURES = REPO / "figures"
REPORT_PAPERS = {"MARLIN": "marlin", "MAESTRO": "maestro"}
#: Where docs/index.md takes the verdict summary.
VERDICT_MARKER = "<!-- verdict summary -->"


# ----- configuration reference -----------------------------------------------------------------------------

def field_docstrings(cls: type) -> dict[str, str]:
    """The docstring written under each field of a dataclass (the string literal after its annotation)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, following in zip(body, body[1:] + [None]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def config_classes() -> list[type]:
    """Every dataclass named ``*Config`` (or ``Config``) defined in the package, in module order."""
    import marlinkit

    found: list[type] = []
    for info in sorted(pkgutil.walk_packages(marlinkit.__path__, "marlinkit."), key=lambda i: i.name):
        benchmark = info.name.startswith(("marlinkit.repro.bench", "marlinkit.commands.bench"))
        if benchmark or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__
                    and name.endswith("Config")):
                found.append(obj)
    return found


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return f"`{f.default!r}`"
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = f.default_factory()  # type: ignore[misc]
        text = repr(value)
        return f"`{text}`" if len(text) <= 60 else f"`{type(value).__name__}(...)`"
    return "required"


_ROLE = re.compile(r":(?:py:)?[a-z]+:`~?([^`<]*?)(?:\s*<([^`>]+)>)?`")


def plain_roles(text: str) -> str:
    """Sphinx roles in a docstring as inline code, which MyST shows as written: ":data:`X`" -> "`X`",
    ":meth:`~a.b.c`" -> "`a.b.c`", ":mod:`title <a.b>`" -> "`a.b`"."""
    return _ROLE.sub(lambda m: f"`{m.group(2) or m.group(1)}`", text)


#: The configuration reference's pages: one per subpackage, the package's own modules on the last.
CONFIG_GROUPS = {"algos": "Learners (marlinkit.algos)", "envs": "Environments (marlinkit.envs)",
                 "llm": "LLM back-ends (marlinkit.llm)", "marlin": "MARLIN experiments (marlinkit.marlin)",
                 "maestro": "MAESTRO experiments (marlinkit.maestro)"}
OTHER_GROUP = ("package", "Shared modules (marlinkit)")


def _code(text: str) -> str:
    """Inline code for a table cell that may break after an underscore, a dot or a comma, so that a long name
    narrows its column instead of widening the table."""
    escaped = html.escape(" ".join(text.split())).replace("|", "&#124;")
    for mark in ("_", ".", ","):
        escaped = escaped.replace(mark, mark + "<wbr>")
    return f'<code class="docutils literal notranslate">{escaped}</code>'


def _config_section(cls: type) -> list[str]:
    lines = [f"## {cls.__qualname__}", "", f"`{cls.__module__}.{cls.__qualname__}`", ""]
    doc = inspect.getdoc(cls) or ""
    if doc and not doc.startswith(f"{cls.__name__}("):
        lines += [plain_roles(doc.split("\n\n")[0]), ""]
    docs = field_docstrings(cls)
    for base in cls.__mro__[1:]:
        if dataclasses.is_dataclass(base):
            docs = {**field_docstrings(base), **docs}
    lines += ["| Field | Type | Default | Meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        default = _default(f)
        cells = (_code(f.name), _code(str(kind)), _code(default[1:-1]) if default.startswith("`") else default,
                 claims.markdown_cell(re.sub(r"(`+)([^`]+?)\1(?!`)", lambda m: _code(m.group(2)),
                                             plain_roles(docs.get(f.name, "")))))
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def configuration_pages() -> dict[str, str]:
    """The configuration reference: an overview and one page per subpackage, {page name: Markdown}."""
    groups: dict[str, list[type]] = {}
    for cls in config_classes():
        part = cls.__module__.split(".")[1]
        groups.setdefault(part if part in CONFIG_GROUPS else OTHER_GROUP[0], []).append(cls)
    titles = {**CONFIG_GROUPS, OTHER_GROUP[0]: OTHER_GROUP[1]}
    order = [g for g in (*CONFIG_GROUPS, OTHER_GROUP[0]) if g in groups]
    pages = {g: "\n".join([f"# {titles[g]}", ""] + [line for cls in groups[g] for line in _config_section(cls)])
             for g in order}
    overview = ["# Configuration reference", "",
                "Every setting of every experiment, read from the `Config` dataclasses' field docstrings when the",
                "site is built, so these pages cannot drift from the code. A preset "
                "(`marlinkit/settings/presets.toml`,",
                "resolved by `marlinkit/presets.py`) is a set of values for these fields.", ""]
    for g in order:
        overview.append(f"- [{titles[g]}]({g}.md): " + ", ".join(f"`{c.__qualname__}`" for c in groups[g]))
    overview += ["", "```{toctree}", ":hidden:", ""] + order + ["```", ""]
    return {"index": "\n".join(overview), **pages}


# ----- reproduction reports ------------------------------------------------------------------------------------

#: A committed table with more rows than this is shown folded (a <details> element the reader opens).
FOLD_ROWS = 12
#: The order of the summary verdicts in the index's counts (a claim's summary is one of the ledger's verdicts, or
#: "depends on the stand-in" where its stand-ins disagree).
VERDICT_ORDER = (*claims.VERDICTS, "depends on the stand-in")
_REFERENCE = re.compile(r"\b(Fig\.|Figs\.|Table|Tables)\s*((?:[IVX]+|\d+)(?:\s*-\s*(?:[IVX]+|\d+))?"
                        r"(?:\s*,\s*(?:\d+(?:\s*-\s*\d+)?)(?![\w.]))*)")


def slug(text: str) -> str:
    """A page name from a label: "Fig. 3 (executed vs policy)" -> "fig-3-executed-vs-policy"."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "page"


def references(text: str) -> set[str]:
    """The figures and tables a text names: "Fig. 3-5, Tables 1-2" -> {"Fig. 3", "Fig. 4", "Fig. 5", "Table 1",
    "Table 2"}; Roman numerals ("Table I") are kept as written."""
    found: set[str] = set()
    for kind, numbers in _REFERENCE.findall(str(text)):
        kind = "Fig." if kind.startswith("Fig") else "Table"
        for part in re.split(r"\s*,\s*", numbers):
            low, _, high = (x.strip() for x in part.partition("-"))
            if low.isdigit() and high.isdigit() and int(low) <= int(high) <= int(low) + 20:
                found.update(f"{kind} {n}" for n in range(int(low), int(high) + 1))
            elif low:
                found.add(f"{kind} {low}")
    return found


def base_verdict(verdict: object) -> str:
    """A verdict without its reason, which follows a parenthesis or a colon: "not testable (...)" and
    "not testable: ..." -> "not testable"; "depends on the stand-in: a: holds; b: ..." -> "depends on the stand-in"."""
    return re.split(r"\s*[(:]", str(verdict).strip(), maxsplit=1)[0].strip() or "—"


def verdict_badge(verdict: object, reason: bool = False) -> str:
    """The verdict as coloured inline HTML (the class names one verdict family: holds, contradicted, other), with
    its reason after it when ``reason``."""
    text = base_verdict(verdict)
    family = "holds" if text.startswith("holds") else "contradicted" if text.startswith("contradicted") else "other"
    badge = f'<span class="verdict verdict-{family}">{html.escape(text)}</span>'
    whole = str(verdict).strip()
    rest = whole[len(text):].strip().removeprefix(":").strip() if whole.startswith(text) else ""
    return f"{badge} {claims.markdown_cell(html.escape(rest))}" if reason and rest else badge


def read_ledger() -> pd.DataFrame:
    """The committed claims ledger (``figures/claims.csv``), else the ledger computed now."""
    if claims.LEDGER_PATH.exists():
        return pd.read_csv(claims.LEDGER_PATH, keep_default_na=False, na_values=[""])
    return claims.ledger()


def claim_heads(ledger: pd.DataFrame) -> pd.DataFrame:
    """One row per claim (its first row in the ledger): the claim, where the paper makes it, and its summary."""
    return ledger.drop_duplicates("claim_id").reset_index(drop=True)


@dataclasses.dataclass
class FigurePage:
    """One generated page: a catalog entry as one paper's report shows it."""

    entry: catalog.Entry
    name: str
    outputs: tuple[str, ...]


def own_outputs(entry: catalog.Entry, slug_: str) -> tuple[str, ...]:
    """The outputs of ``entry`` that belong to one paper: all of them for a one-paper entry; for an entry of both
    papers, those whose file name names the paper (or names neither paper)."""
    if entry.paper != "both":
        return entry.outputs
    others = [s for s in REPORT_PAPERS.values() if s != slug_]
    return tuple(o for o in entry.outputs
                 if slug_ in Path(o).name or not any(other in Path(o).name for other in others))


def figure_pages(paper: str, entries: list[catalog.Entry]) -> list[FigurePage]:
    pages: list[FigurePage] = []
    taken: set[str] = set()
    for e in entries:
        if e.paper not in (paper, "both"):
            continue
        name = slug(e.label)
        while name in taken or name in ("index", "claims"):
            name += "-2"
        taken.add(name)
        pages.append(FigurePage(e, name, own_outputs(e, REPORT_PAPERS[paper])))
    return pages


def _evidence_matches(evidence: object, outputs: tuple[str, ...]) -> bool:
    """Whether one of the files a ledger row cites (``"a.csv; b.csv"``) is among a page's outputs."""
    stems = {Path(o).stem for o in outputs} | {Path(o).stem.split("__")[0] for o in outputs}
    return any(Path(part).stem in stems for part in str(evidence).split("; ") if part)


def claim_pages(row: pd.Series, pages: list[FigurePage]) -> list[FigurePage]:
    """The figure pages a ledger row bears on: a file it cites among a page's outputs, or a figure or table the
    row's paper location names in the page's label."""
    location = row.get("paper_location", "")
    named = references("" if pd.isna(location) else location)
    by_evidence = [p for p in pages
                   if p.entry.label != "Claims ledger" and _evidence_matches(row.get("evidence"), p.outputs)]
    by_location = [p for p in pages if p not in by_evidence and named & references(p.entry.label)]
    return by_evidence + by_location


def claims_pages(ledger: pd.DataFrame, pages: list[FigurePage]) -> dict[str, list[FigurePage]]:
    """{claim id: the figure pages any of its rows bears on}, in the order the rows name them."""
    found: dict[str, list[FigurePage]] = {}
    for _, r in ledger.iterrows():
        own = found.setdefault(r.claim_id, [])
        own += [p for p in claim_pages(r, pages) if p not in own]
    return found


def claim_target(claim_id: str, pages: list[FigurePage]) -> str:
    """Where a claim is linked to, relative to its paper's report folder: its section of the paper's claims ledger
    page, which shows every claim of the paper."""
    ledger_page = next((p for p in pages if p.entry.label == "Claims ledger"), None)
    return f"{ledger_page.name}.md#{claim_id}" if ledger_page else "index.md"


def _cell(value: object, column: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if column in ("p", "p_adjusted"):
        try:
            return claims.format_p(float(value))
        except ValueError:
            return claims.markdown_cell(value)
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() else f"{value:.3g}"
    return claims.markdown_cell(value) or "—"


def _who(r: pd.Series) -> str:
    """A row's stand-in, or its run set where the ledger names one (MAESTRO)."""
    runs = r.get("runs")
    return str(runs) if isinstance(runs, str) and runs else str(r.get("stand_in", "—"))


def _effect(r: pd.Series) -> str:
    value = r.get("effect")
    if value is None or pd.isna(value):
        return "—"
    return f"{value:+.3g} [{r.ci_low:+.3g}, {r.ci_high:+.3g}]"


def _rows_table(rows: pd.DataFrame, detail: bool = False) -> str:
    """A claim's ledger rows, one per stand-in (MAESTRO: run set) and protocol: the test, n, the effect with its
    bootstrap 95 % CI, p (Holm-adjusted; the raw p too when ``detail``), the verdict, and the detail."""
    head = ["Stand-in", "Protocol"] + (["Test"] if detail else []) + ["n", "Effect [95 % CI]"]
    head += (["p"] if detail else []) + ["p (Holm)", "Verdict"] + (["Detail"] if detail else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in rows.iterrows():
        n = r.get("n")
        cells = [claims.markdown_cell(_who(r)), _cell(r.get("protocol"))] + ([_cell(r.get("test"))] if detail else [])
        cells += ["—" if n is None or pd.isna(n) else str(int(n)), _effect(r)]
        cells += [_cell(r.get("p"), "p")] if detail else []
        cells += [_cell(r.get("p_adjusted"), "p_adjusted"), verdict_badge(r.verdict, reason=True)]
        cells += [_cell(r.get("ours"))] if detail else []
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def claim_section(rows: pd.DataFrame) -> list[str]:
    """One claim as a page shows it: its id as a heading, its summary verdict, where the paper makes it and the
    paper's words; then its primary protocol's rows, one per stand-in (for a claim no stand-in can test, why), and
    every row of every protocol folded."""
    head = rows.iloc[0]
    primary = rows[rows.protocol == head.protocol] if "protocol" in rows.columns else rows
    untested = base_verdict(head.summary) == "not testable"
    lines = [f"### `{head.claim_id}`", "",
             f"{verdict_badge(head.summary)} *{claims.markdown_cell(head.paper_location)}*: "
             f"{claims.markdown_cell(head.claim)}", "",
             f"**Why not testable.** {verdict_badge(head.summary, reason=True).split('</span>', 1)[1].strip()}"
             if untested else _scroll(_rows_table(primary)), "",
             _fold(f"Every row ({len(rows)}): each stand-in and protocol, the test and the detail",
                   _scroll(_rows_table(rows, detail=True))), ""]
    return lines


#: A figure page that bears on more claims than this lists them in one table (folded when long) instead of a
#: section each; the paper's claims ledger page has every claim's section.
CLAIM_SECTIONS_MAX = 6


def claims_overview(rows: pd.DataFrame, target: str) -> str:
    """The claims of ``rows`` as one table, a claim a row: its id linked to its section at ``target``, its summary,
    where the paper makes it, the paper's words, and per stand-in its primary protocol's verdict."""
    lines = ["| Claim | Summary | In the paper | The paper's words | Per stand-in (primary protocol) |",
             "|---|---|---|---|---|"]
    for claim_id, group in rows.groupby("claim_id", sort=False):
        head = group.iloc[0]
        each = "<br>".join(f"{html.escape(_who(r))}: {verdict_badge(r.verdict)}"
                           for _, r in group[group.protocol == head.protocol].iterrows())
        lines.append(f"| [`{claim_id}`]({target}#{claim_id}) | {verdict_badge(head.summary)} | "
                     f"{claims.markdown_cell(head.paper_location)} | {claims.markdown_cell(head.claim)} | {each} |")
    table = _scroll("\n".join(lines))
    count = rows.claim_id.nunique()
    return _fold(f"Show the {count} claims", table) if count > FOLD_ROWS else table


def _scroll(table: str) -> str:
    return f'<div class="table-scroll">\n\n{table}\n\n</div>'


def _fold(summary: str, body: str) -> str:
    return f"<details>\n<summary>{html.escape(summary)}</summary>\n\n{body}\n\n</details>"


def _table_markdown(path: Path) -> str:
    """A committed Markdown table: its caption as a paragraph, then the table in a scrollable box, folded when it
    is long; a footer line after the table stays below it."""
    text = path.read_text(encoding="utf-8").strip()
    caption, _, rest = text.partition("\n\n")
    if not rest:
        caption, rest = "", text
    table_lines = [line for line in rest.splitlines() if line.startswith("|")]
    after = "\n".join(line for line in rest.splitlines() if line.strip() and not line.startswith("|"))
    rows = max(len(table_lines) - 2, 0)
    body = _scroll("\n".join(table_lines))
    if rows > FOLD_ROWS:
        body = _fold(f"Show the table ({rows} rows): {path.name}", body)
    parts = [f"*{caption.strip()}*" if caption else "", body, f"<small>{html.escape(after)}</small>" if after else ""]
    return "\n\n".join(p for p in parts if p)


def _page_outputs(page: FigurePage, staging: Path, ledger_page: bool) -> tuple[list[str], list[str], list[str]]:
    """A figure page's outputs as Markdown lines: its images (copied into ``staging``), its tables, and the outputs
    not committed yet."""
    e = page.entry
    images, tables, missing = [], [], []
    for output in page.outputs:
        source = FIGURES / output
        if not source.exists():
            missing.append(output)
        elif source.suffix == ".png":
            target = staging / "_figures" / output
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            images += [f"![{e.label}: {Path(output).stem}](../../_figures/{output})", "",
                       f"<small>figures/{html.escape(output)}</small>", ""]
        elif source.suffix == ".md":
            tables += [_table_markdown(source), ""]
        elif source.suffix == ".csv" and not ledger_page:
            tables += [f"`figures/{output}` ({len(pd.read_csv(source))} rows)", ""]
    return images, tables, missing


def figure_page(paper: str, page: FigurePage, own: pd.DataFrame, pages: list[FigurePage], staging: Path) -> str:
    """One figure or table of the paper: the claim and its verdicts first, then the figure, the paper's numbers
    beside ours, its tables, the deviations and the command that remakes it; copies its images into ``staging``."""
    e = page.entry
    ledger_page = e.label == "Claims ledger"
    if ledger_page:
        bearing = own
    else:
        on = claims_pages(own, pages) if len(own) else {}
        bearing = own[own.claim_id.map(lambda c: page in on.get(c, []))] if len(own) else own
    heads = claim_heads(bearing) if len(bearing) else bearing
    verdicts = (" ".join(f'<span class="claim-verdict">{verdict_badge(r.summary)} '
                         f'<code>{html.escape(r.claim_id)}</code></span>'
                         for r in heads.itertuples(index=False)) if len(heads)
                else "none: no claim of the claims ledger bears on it")
    lines = [f"# {e.label}: {e.title}", "",
             f'<p class="figure-lead"><b>Claim.</b> {html.escape(e.claim)}<br><b>Verdicts.</b> {verdicts}</p>', ""]
    images, tables, missing = _page_outputs(page, staging, ledger_page)
    if images:
        lines += ["## Figure", ""] + images
    lines += ["## The paper beside ours", ""]
    if ledger_page:
        lines += [f"Every claim of {paper} ({len(heads)}), each under its summary verdict with every row of "
                  "`figures/claims.csv` it has: one per stand-in (MAESTRO: run set) and protocol, with the effect, "
                  "its bootstrap 95 % CI and the Holm-adjusted p. The tests and their rules: "
                  "[the analysis plan](../../claims-plan.md).", ""]
    elif len(heads) > CLAIM_SECTIONS_MAX:
        counts = heads.summary.map(base_verdict).value_counts()
        lines += [f"The claims this {'figure' if images else 'table'} bears on ({len(heads)}: "
                  + ", ".join(f"{counts[v]} {verdict_badge(v)}" for v in _ordered(counts.index))
                  + "); each links to its section of the [claims ledger page](claims-ledger.md), with its rows of "
                  "`figures/claims.csv` per stand-in and protocol.", "",
                  claims_overview(bearing, "claims-ledger.md"), ""]
    elif len(bearing):
        lines += [f"The claims this {'figure' if images else 'table'} bears on ({len(heads)}), each under its "
                  "summary verdict, with its rows of `figures/claims.csv`: the primary protocol's per stand-in, "
                  "every protocol's folded.", ""]
    if len(bearing) and (ledger_page or len(heads) <= CLAIM_SECTIONS_MAX):
        for claim_id in heads.claim_id:
            lines += claim_section(bearing[bearing.claim_id == claim_id])
    elif not len(bearing):
        lines += ["No row of the claims ledger (`figures/claims.csv`) bears on this figure or table"
                  + ("; the tables below set the paper's numbers beside ours where the paper prints them." if tables
                     else "."), ""]
    if tables:
        lines += ["## Tables", ""] + tables
    lines += ["## Deviations from the paper", "", e.deviations, "", "## Remake it", ""]
    if e.command:
        lines += ["```bash", e.command, "```", ""]
        if e.notebook:
            functions = f", functions `marlinkit.{e.function}`." if e.function else "."
            lines += [f"Notebook `{e.notebook}`{functions}", ""]
    else:
        lines += ["Nothing in the project remakes it.", ""]
    lines += [f"*Not committed yet: `figures/{output}`.*\n" for output in missing]
    return "\n".join(lines)


def notes_topics(text: str) -> list[tuple[str, str]]:
    """A notes file split into topics: a topic starts at a line that opens in bold, after a blank line or where
    the bold words end in a full stop or are followed by a parenthesis ("**Measured run time** (...)"); its title is
    the bold words up to their first colon."""
    lines = text.strip().splitlines()
    topics: list[tuple[str, list[str]]] = []
    for i, line in enumerate(lines):
        starts = False
        if line.startswith("**"):
            closed = re.match(r"\*\*([^*]+)\*\*", line)
            starts = (i == 0 or not lines[i - 1].strip() or bool(
                closed and (closed.group(1).endswith(".") or line[closed.end():].lstrip().startswith("("))))
        if starts:
            bold = " ".join(lines[i:i + 4])[2:].split("**")[0]
            title = bold.split(":")[0].split(" (")[0].strip().rstrip(".").replace("`", "")
            if len(title) > 70:
                title = title[:70].rsplit(" ", 1)[0] + " ..."
            topics.append((title, [line]))
        elif topics:
            topics[-1][1].append(line)
        else:
            topics.append(("Overview", [line]))
    return [(title, "\n".join(body).strip()) for title, body in topics]


def report_pages(paper: str, entries: list[catalog.Entry], ledger: pd.DataFrame, staging: Path) -> dict[str, str]:
    """One paper's report: an overview page with its claims, one page per figure or table, one per notes topic.
    Returns {page name: Markdown}; copies the figures shown into ``staging/_figures``."""
    slug_ = REPORT_PAPERS[paper]
    own = ledger[ledger.paper == paper].reset_index(drop=True)
    pages = figure_pages(paper, entries)
    out = {p.name: figure_page(paper, p, own, pages, staging) for p in pages}
    notes_file = DOCS / "reproduction" / f"{slug_}_notes.md"
    topics = notes_topics(notes_file.read_text(encoding="utf-8")) if notes_file.exists() else []
    topic_names = []
    for i, (title, body) in enumerate(topics, 1):
        name = f"notes/{i:02d}-{slug(title)[:40].strip('-')}"
        topic_names.append(name.split("/", 1)[1])
        out[name] = f"# {title}\n\n{body}\n"
    if topics:
        out["notes/index"] = "\n".join([
            "# Measurements and discussion", "",
            f"What the runs behind the {paper} report are, how long they took, and what they show beyond the",
            "figures: one page per topic.", "", "```{toctree}", ":maxdepth: 1", ""] + topic_names + ["```", ""])
    heads = claim_heads(own) if len(own) else own
    on = claims_pages(own, pages) if len(own) else {}
    counts = heads.summary.map(base_verdict).value_counts() if len(own) else pd.Series(dtype=int)
    summary = ", ".join(f"{counts[v]} {verdict_badge(v)}" for v in _ordered(counts.index))
    lines = [f"# {paper} reproduction", "",
             "Every figure and table of the paper as the committed runs give it, beside the paper's numbers, with the",
             "claim it bears on, our verdict, how our set-up deviates, and the command that remakes it. Nothing is",
             "re-run when the site is built: the figures and tables are the committed files under `figures/`.", "",
             "## Claims and verdicts", ""]
    if len(own):
        lines += [f"{len(heads)} claims ({len(own)} rows of the ledger): {summary}. Each claim links to its section "
                  "of the claims ledger page, where its rows stand per stand-in and protocol, and to the figures "
                  "and tables it bears on.", ""]
        lines += [_claim_item(r, "", pages, on.get(r.claim_id, [])) for _, r in heads.iterrows()]
        lines += ["", "The plan: [the analysis plan](../../claims-plan.md) (`docs/claims.toml`); verdicts and their "
                  "rules: `marlinkit/claims.py`; the ledger: `figures/claims.csv`.", ""]
    else:
        lines += ["No claim rows in the ledger.", ""]
    lines += ["```{toctree}", ":caption: Figures and tables", ":maxdepth: 1", ""]
    lines += [f"{p.entry.label} <{p.name}>" for p in pages] + ["```", ""]
    if topics:
        lines += ["```{toctree}", ":caption: Measurements and discussion", ":maxdepth: 1", "", "notes/index", "```",
                  ""]
    out["index"] = "\n".join(lines)
    return out


def _ordered(verdicts) -> list[str]:
    """Verdicts in :data:`VERDICT_ORDER`, any other after them in the order given."""
    verdicts = list(dict.fromkeys(verdicts))
    return [v for v in VERDICT_ORDER if v in verdicts] + [v for v in verdicts if v not in VERDICT_ORDER]


def _claim_item(head: pd.Series, folder: str, pages: list[FigurePage], bearing: list[FigurePage]) -> str:
    """A claim as a list item: its summary verdict, its id linked to its section of the claims ledger page, the
    paper's words, and the figures or tables it bears on, linked (``folder``: the report's, relative to the page)."""
    shown = ", ".join(f"[{html.escape(p.entry.label)}]({folder}{p.name}.md)" for p in bearing[:3])
    return (f"- {verdict_badge(head.summary)} [`{head.claim_id}`]({folder}{claim_target(head.claim_id, pages)}): "
            f"{claims.markdown_cell(head.claim)}" + (f" (shown in: {shown})" if shown else ""))


def verdict_summary(ledger: pd.DataFrame, entries: list[catalog.Entry]) -> str:
    """The index's verdict summary: counts of the claims' summary verdicts per paper, then every claim linked to
    its figure page."""
    if not len(ledger):
        return "No claim rows in the ledger yet."
    heads = claim_heads(ledger)
    verdicts = _ordered(heads.summary.map(base_verdict))
    counts = {paper: heads[heads.paper == paper].summary.map(base_verdict).value_counts()
              for paper in REPORT_PAPERS}
    lines = ["| Verdict | " + " | ".join(f"[{paper}](reproduction/{slug_}/index.md)"
                                          for paper, slug_ in REPORT_PAPERS.items()) + " |",
             "|---|" + "---:|" * len(REPORT_PAPERS)]
    for v in verdicts:
        lines.append(f"| {verdict_badge(v)} | " + " | ".join(str(counts[p].get(v, 0)) for p in REPORT_PAPERS) + " |")
    lines.append("| **claims** | " + " | ".join(f"**{int(counts[p].sum())}**" for p in REPORT_PAPERS) + " |")
    lines += ["", f"{len(heads)} claims, {len(ledger)} rows of the ledger (one per stand-in and protocol); a claim's "
              "summary is its primary protocol's verdict where its stand-ins agree, else \"depends on the "
              "stand-in\". Each claim below links to its section of its paper's claims ledger page, where its "
              "rows stand per stand-in and protocol, and to the figures and tables it bears on. How a verdict "
              "follows from its test: "
              "[the analysis plan](claims-plan.md).", ""]
    for paper, slug_ in REPORT_PAPERS.items():
        own = ledger[ledger.paper == paper].reset_index(drop=True)
        if not len(own):
            continue
        pages = figure_pages(paper, entries)
        on = claims_pages(own, pages)
        lines += [f"**{paper}**", ""]
        for _, r in claim_heads(own).iterrows():
            lines.append(_claim_item(r, f"reproduction/{slug_}/", pages, on.get(r.claim_id, [])))
        lines.append("")
    return "\n".join(lines)


# ----- the build -----------------------------------------------------------------------------------------------

def stage(staging: Path) -> None:
    """Copy the hand-written pages and write the generated ones into ``staging``."""
    if staging.exists():
        shutil.rmtree(staging)
    shutil.copytree(DOCS, staging, ignore=shutil.ignore_patterns("*_notes.md", "figures.toml", "__pycache__",
                                                                 "screenshots"))
    (staging / "reference" / "configuration").mkdir(parents=True, exist_ok=True)
    for name, page in configuration_pages().items():
        (staging / "reference" / "configuration" / f"{name}.md").write_text(page, encoding="utf-8")
    plan_page = staging / "claims-plan.md"
    plan_page.write_text(plan_page.read_text(encoding="utf-8") + "\n## The claims, as the plan holds them\n\n"
                         + _scroll(claims_plan.markdown(claims_plan.load())) + "\n", encoding="utf-8")
    ledger = read_ledger()
    entries = catalog.load()
    index = staging / "index.md"
    text = index.read_text(encoding="utf-8")
    if VERDICT_MARKER not in text:
        raise ValueError(f"docs/index.md has no {VERDICT_MARKER!r}: the verdict summary goes there")
    index.write_text(text.replace(VERDICT_MARKER, verdict_summary(ledger, entries)), encoding="utf-8")
    for paper, slug_ in REPORT_PAPERS.items():
        folder = staging / "reproduction" / slug_
        folder.mkdir(parents=True, exist_ok=True)
        for name, page in report_pages(paper, entries, ledger, staging).items():
            (folder / f"{name}.md").parent.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}.md").write_text(page, encoding="utf-8")


def build(staging: Path, html: Path) -> int:
    stage(staging)
    if html.exists():
        shutil.rmtree(html)  # no page of an earlier build is left behind
    command = [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html", str(staging), str(html)]
    return subprocess.call(command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--staging", type=Path, default=REPO / "build" / "docs" / "src")
    parser.add_argument("--html", type=Path, default=REPO / "build" / "docs" / "html")
    args = parser.parse_args(argv)
    code = build(args.staging, args.html)
    if code == 0:
        print(f"documentation site written to {args.html}/index.html")
    return code


if __name__ == "__main__":
    sys.exit(main())
