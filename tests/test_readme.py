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
        # `figures/marlin/fig1_scenarios.{png,pdf}` names two files
        stem, _, exts = entry.partition("{")
        candidates = [stem + ext for ext in exts.rstrip("}").split(",")] if exts else [entry]
        missing += [c for c in candidates if not (paths.REPO_ROOT / c).exists()]
    assert not missing, f"README names outputs that do not exist: {missing}"
