"""The figure catalog: every figure and table of both papers, where it is remade and by what.

The catalog is data (``docs/figures.toml``); the README's figure index and the documentation site's
reproduction reports are both rendered from it, so they cannot disagree.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from marlinkit import paths

CATALOG_PATH = paths.REPO_ROOT / "docs" / "figures.toml"
README_BEGIN = "<!-- figure index: begin (generated from docs/figures.toml) -->"
README_END = "<!-- figure index: end -->"


@dataclass(frozen=True)
class Entry:
    """One figure or table of a paper."""

    paper: str
    """"MARLIN", "MAESTRO" or "both"."""
    label: str
    """The paper's name for it, e.g. "Fig. 3"."""
    title: str
    """What it shows, in a few words."""
    claim: str
    """The claim it supports."""
    deviations: str
    """How our set-up differs from the paper's for it."""
    command: str
    """The command that remakes its outputs from committed runs ("" when nothing can)."""
    notebook: str = ""
    """The notebook that makes it, relative to the repository root."""
    function: str = ""
    """The package functions the notebook calls (relative to ``marlinkit.``)."""
    outputs: tuple[str, ...] = field(default_factory=tuple)
    """Its files, relative to ``figures/``."""


def load(path: Path = CATALOG_PATH) -> list[Entry]:
    """The catalog's entries in file order; a missing field is an error naming the entry."""
    with Path(path).open("rb") as handle:
        raw = tomllib.load(handle)
    entries = []
    for i, item in enumerate(raw.get("figure", [])):
        try:
            entries.append(Entry(**{**item, "outputs": tuple(item.get("outputs", ()))}))
        except TypeError as error:
            raise ValueError(f"{path}: entry {i + 1} ({item.get('label', '?')}): {error}") from None
    return entries


def readme_index(entries: list[Entry]) -> str:
    """One line per figure or table: paper, label, notebook, function, first output."""
    lines = ["| Paper | Figure / table | Notebook | Function (`marlinkit.`) | Output (`figures/`) |",
             "|---|---|---|---|---|"]
    for e in entries:
        notebook = f"`{e.notebook}`" if e.notebook else "—"
        function = f"`{e.function}`" if e.function else "—"
        output = (f"`{e.outputs[0]}`" + (f" (+{len(e.outputs) - 1})" if len(e.outputs) > 1 else "")
                  if e.outputs else "—")
        lines.append(f"| {e.paper} | {e.label}: {e.title} | {notebook} | {function} | {output} |")
    return "\n".join(lines)


def render_into(text: str, entries: list[Entry]) -> str:
    """``text`` (the README) with its figure-index block replaced by :func:`readme_index`."""
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no figure index block: add {README_BEGIN!r} and {README_END!r}")
    return text[:start] + README_BEGIN + "\n" + readme_index(entries) + "\n" + text[end:]
