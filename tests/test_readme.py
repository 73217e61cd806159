"""The README as a landing page: short, its claims table rendered from the claims ledger (itself computed from the
committed tables), its figure index rendered from the figure catalog, every name in them real, and no working notes
anywhere in the product."""

from __future__ import annotations

import importlib
import re

import pandas as pd
import pytest

from marlinkit import catalog, claims, paths

README = paths.REPO_ROOT / "README.md"
MAX_LINES = 150
#: Working-notes language that must not reach the product (README, docs, package, tests, notebooks).
WORKING_NOTES = re.compile("this" + " stop|[Ii]ssue #?[0-9]+|FACTS" + " §")  # written in parts: not a match itself
PRODUCT = ("README.md", "docs", "marlinkit", "tests", "notebooks", "tools", "Makefile", ".ci")


def test_readme_is_a_landing_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines, more than {MAX_LINES}: move detail to docs/"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:2] == ["## Two commands", "## What replicates"], headings


def test_the_ledger_is_what_the_committed_tables_give():
    """figures/claims.csv is never edited by hand: recomputed from the plan and the committed runs, it is the same."""
    committed = pd.read_csv(claims.LEDGER_PATH, keep_default_na=False)
    recomputed = pd.read_csv(__import__("io").StringIO(claims.ledger().to_csv(index=False)), keep_default_na=False)
    pd.testing.assert_frame_equal(committed, recomputed)
    assert set(committed.paper) == {"MARLIN", "MAESTRO"}
    heads = {v.split(":")[0].split(" (")[0] for v in committed.verdict}
    assert heads <= set(claims.VERDICTS), heads
    for evidence in set(committed.evidence):
        for pattern in evidence.split("; "):
            assert next(paths.REPO_ROOT.glob(pattern), None) is not None, pattern


def test_readme_claims_table_is_the_ledgers():
    text = README.read_text(encoding="utf-8")
    ledger = pd.read_csv(claims.LEDGER_PATH)
    assert claims.render_into(text, ledger) == text, (
        "the README's claims table differs from figures/claims.csv: run notebooks/claims_ledger.ipynb "
        "(make figures PRESET=paper) to render it")


def test_a_changed_ledger_changes_the_readme_table():
    """The check above can fail: one verdict changed in the ledger no longer matches the README."""
    text = README.read_text(encoding="utf-8")
    ledger = pd.read_csv(claims.LEDGER_PATH)
    ledger.loc[0, "verdict"] = "contradicted" if ledger.loc[0, "verdict"] != "contradicted" else "holds"
    assert claims.render_into(text, ledger) != text


def test_readme_figure_index_is_the_catalogs():
    text = README.read_text(encoding="utf-8")
    assert catalog.render_into(text, catalog.load()) == text, "the README's figure index differs from docs/figures.toml"


@pytest.mark.parametrize("entry", catalog.load(), ids=lambda e: f"{e.paper}-{e.label}")
def test_every_catalog_entry_names_real_notebooks_functions_and_outputs(entry):
    if entry.notebook:
        assert (paths.REPO_ROOT / entry.notebook).exists(), entry.notebook
    for name in filter(None, (n.strip() for n in entry.function.split(","))):
        if "..." in name:
            continue
        target = f"marlinkit.{name}"
        try:
            importlib.import_module(target)
            continue
        except ImportError:
            pass
        parent, _, attribute = target.rpartition(".")
        assert hasattr(importlib.import_module(parent), attribute), target
    missing = [o for o in entry.outputs if not (paths.FIGURES_DIR / o).exists()]
    assert not missing, f"{entry.label}: outputs not committed: {missing}"


def test_no_working_notes_in_the_product():
    found = []
    for top in PRODUCT:
        root = paths.REPO_ROOT / top
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        for path in files:
            if path.suffix not in {".py", ".md", ".ipynb", ".toml", ".txt", ""} or "__pycache__" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if WORKING_NOTES.search(line):
                    found.append(f"{path.relative_to(paths.REPO_ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "\n".join(found)
