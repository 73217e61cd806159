"""Build the documentation site: ``make docs`` (Sphinx + MyST, warnings are errors).

The hand-written pages in ``docs/`` are copied into a staging folder (``build/docs/src``) beside three kinds of
generated pages, so nothing generated is ever committed and nothing can drift:

* ``reproduction/marlin.md`` and ``reproduction/maestro.md``: one reproduction report per paper, rendered from the
  figure catalog (``docs/figures.toml``), the claims ledger (``figures/claims.csv``) and the committed figures and
  tables under ``figures/`` (copied in; no training is re-run);
* ``reference/configuration.md``: every ``*Config`` dataclass of the package with its fields' types, defaults and
  docstrings, read from the code;

then ``sphinx-build -W`` writes the HTML site to ``build/docs/html``.

Usage: ``python tools/docs_site.py [--staging DIR] [--html DIR]``.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import pkgutil
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
        if info.name.startswith("marlinkit.bench") or info.name.endswith("__main__"):
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


def configuration_page() -> str:
    lines = ["# Configuration reference", "",
             "Every setting of every experiment, read from the `Config` dataclasses' field docstrings when the site",
             "is built, so this page cannot drift from the code. A preset (`marlinkit/presets.py`) is a set of values",
             "for these fields.", ""]
    for cls in config_classes():
        lines += [f"## `{cls.__module__}.{cls.__qualname__}`", ""]
        doc = inspect.getdoc(cls) or ""
        if doc and not doc.startswith(f"{cls.__name__}("):
            lines += [doc.split("\n\n")[0], ""]
        docs = field_docstrings(cls)
        for base in cls.__mro__[1:]:
            if dataclasses.is_dataclass(base):
                docs = {**field_docstrings(base), **docs}
        lines += ["| Field | Type | Default | Meaning |", "|---|---|---|---|"]
        for f in dataclasses.fields(cls):
            kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
            lines.append(f"| `{f.name}` | `{claims.markdown_cell(kind)}` | {claims.markdown_cell(_default(f))} | {claims.markdown_cell(docs.get(f.name, ''))} |")
        lines.append("")
    return "\n".join(lines)


# ----- reproduction reports ------------------------------------------------------------------------------------

def _table_markdown(path: Path) -> str:
    """A committed Markdown table: its caption line as a paragraph, then the table."""
    text = path.read_text(encoding="utf-8").strip()
    caption, _, table = text.partition("\n\n")
    return f"*{caption.strip()}*\n\n{table.strip()}" if table else text


def _claims_table(ledger: pd.DataFrame) -> str:
    """Every row of a paper's ledger, a claim's rows together under its summary."""
    lines = ["| Claim | Stand-in | Protocol | Test | n | Effect [95 % CI] | p | p (Holm) | Verdict | Detail |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    cell = claims.markdown_cell
    for claim_id, group in ledger.groupby("claim_id", sort=False):
        head = group.iloc[0]
        lines.append(f"| **{claim_id}** ({cell(head.paper_location)}): {cell(head.claim)} | | | | | | | | "
                     f"**{cell(head.summary)}** | |")
        for r in group.itertuples(index=False):
            who = r.runs if isinstance(r.runs, str) and r.runs else r.stand_in
            n = "—" if pd.isna(r.n) else str(int(r.n))
            p, adjusted = (claims.format_p(None if pd.isna(v) else float(v)) for v in (r.p, r.p_adjusted))
            lines.append(f"| | {cell(who)} | {r.protocol} | {r.test} | {n} | {claims.effect_text(r)} | {p} | "
                         f"{adjusted} | {cell(r.verdict)} | {cell(r.ours)} |")
    return "\n".join(lines)


def report_page(paper: str, entries: list[catalog.Entry], ledger: pd.DataFrame, staging: Path) -> str:
    """One paper's reproduction report; copies the figures it shows into ``staging/_figures``."""
    own = ledger[ledger.paper == paper]
    notes = DOCS / "reproduction" / f"{REPORT_PAPERS[paper]}_notes.md"
    lines = [f"# {paper}: reproduction report", "",
             "Every figure and table of the paper as the committed runs give it, beside the paper's numbers, with the",
             "claim it supports, our verdict, how our set-up deviates, and the command that remakes it. Nothing here is",
             "re-run when the site is built: the figures and tables are the committed files under `figures/`.", "",
             "## Claims", "", _claims_table(own) if len(own) else "No claim rows in the ledger.", "",
             f"The plan: `docs/claims.toml`; verdicts and their rules: `marlinkit/claims.py`; the ledger: "
             f"`figures/claims.csv`.", ""]
    for e in entries:
        if e.paper not in (paper, "both"):
            continue
        lines += [f"## {e.label}: {e.title}", "",
                  f"**Claim.** {e.claim}", "", f"**Deviations.** {e.deviations}", ""]
        stems = {Path(o).stem.split("__")[0] for o in e.outputs} | {Path(o).stem for o in e.outputs}
        verdicts = own[own.evidence.map(lambda ev: any(Path(p).stem in stems for p in ev.split("; ")))]
        for r in verdicts.drop_duplicates("claim_id").itertuples(index=False):
            lines += [f"**Verdict: {r.summary}.** `{r.claim_id}`: {r.claim}", ""]
        if e.command:
            where = f" (notebook `{e.notebook}`, `marlinkit.{e.function}`)" if e.notebook else ""
            lines += [f"**Remake.** `{e.command}`{where}.", ""]
        for output in e.outputs:
            source = FIGURES / output
            if not source.exists():
                lines += [f"*Not committed yet: `figures/{output}`.*", ""]
                continue
            if source.suffix == ".png":
                target = staging / "_figures" / output
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                lines += [f"![{e.label}: {Path(output).stem}](../_figures/{output})", ""]
            elif source.suffix == ".md":
                lines += [_table_markdown(source), ""]
            elif source.suffix == ".csv":
                lines += [f"`figures/{output}` ({len(pd.read_csv(source))} rows)", ""]
    if notes.exists():
        lines += ["## Measurements and discussion", "", notes.read_text(encoding="utf-8").strip(), ""]
    return "\n".join(lines)


# ----- the build -----------------------------------------------------------------------------------------------

def stage(staging: Path) -> None:
    """Copy the hand-written pages and write the generated ones into ``staging``."""
    if staging.exists():
        shutil.rmtree(staging)
    shutil.copytree(DOCS, staging, ignore=shutil.ignore_patterns("*_notes.md", "figures.toml", "__pycache__"))
    (staging / "reference").mkdir(exist_ok=True)
    (staging / "reference" / "configuration.md").write_text(configuration_page(), encoding="utf-8")
    plan_page = staging / "claims-plan.md"
    plan_page.write_text(plan_page.read_text(encoding="utf-8") + "\n## The claims, as the plan holds them\n\n"
                         + claims_plan.markdown(claims_plan.load()) + "\n", encoding="utf-8")
    ledger = pd.read_csv(claims.LEDGER_PATH, keep_default_na=False, na_values=[""]) if claims.LEDGER_PATH.exists() \
        else claims.ledger()
    entries = catalog.load()
    (staging / "reproduction").mkdir(exist_ok=True)
    for paper, slug in REPORT_PAPERS.items():
        (staging / "reproduction" / f"{slug}.md").write_text(report_page(paper, entries, ledger, staging),
                                                             encoding="utf-8")


def build(staging: Path, html: Path) -> int:
    stage(staging)
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
