"""The README's figure table names outputs that exist."""

from __future__ import annotations

import re

from marlinkit import paths


def test_every_output_the_readme_figure_table_names_exists():
    readme = (paths.REPO_ROOT / "README.md").read_text()
    section = readme.split("## Figures and tables", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(figures/[^`]+)`", section)
    assert named, "the README figure table names no output files"
    missing = []
    for entry in named:
        # `figures/marlin/fig1_scenarios.{png,pdf}` names two files; `figures/paper/marlin/fig3_training*.png`
        # names a figure and its rows: at least one file must match
        stem, _, exts = entry.partition("{")
        candidates = [stem + ext for ext in exts.rstrip("}").split(",")] if exts else [entry]
        missing += [c for c in candidates if not any(paths.REPO_ROOT.glob(c))]
    assert not missing, f"README names outputs that do not exist: {missing}"


def test_every_function_the_readme_figure_table_names_exists():
    """The figure table's code column: a newcomer gets from a paper figure to its code; every name must resolve."""
    import importlib

    readme = (paths.REPO_ROOT / "README.md").read_text()
    section = readme.split("## Figures and tables", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith(("| MARLIN |", "| MAESTRO |", "| both |"))]
    assert rows and all(len(row) == 5 for row in rows), "every row has a code column"
    checked, unresolved = 0, []
    for row in rows:
        module = None
        for name in re.findall(r"`([\w.]+)`", row[3]):
            if name.startswith("."):  # `.figure5`: the previous name's module
                target = f"{module}{name}"
            else:
                target = f"marlinkit.{name}"
            parent, _, attribute = target.rpartition(".")
            try:
                module, found = parent, hasattr(importlib.import_module(parent), attribute)
            except ImportError:
                found = False
            checked += 1
            if not found:
                unresolved.append(target)
    assert checked >= 20 and not unresolved, unresolved
