"""The one face every experiment shows: ``run(cfg) -> Result``.

Each experiment module (``marlinkit.marlin.fig3_training``, ``marlinkit.maestro.ablation``, ...) takes its section's
frozen ``Config`` (everything the run depends on, nested sections included; its ``preset`` label names the results
folder and the outputs, and is not part of any run's key: :data:`marlinkit.config_fields.LABEL`) and returns a
:class:`Result` (or a subclass that adds typed fields of its own, such as the ablation's calibration). Whatever the
experiment, a reader finds the same four things on it:

- ``tables``: its numbers, as named DataFrames (one row per episode, trial, evaluation or run);
- ``paths``: the result files it wrote or read back (tables, sidecars, transcripts, generation logs);
- ``provenance``: preset, engine, LLM or plan source and seeds, the line every figure made from it carries;
- ``config``: the frozen ``Config`` it ran, beside the ``experiment`` (its section name) and ``preset``.

``result.summary()`` prints them in a few lines; ``result.table(name)`` names the known tables when a name is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from marlinkit import paths as repo_paths
from marlinkit.plots import Provenance


@dataclass(frozen=True)
class Result:
    """What an experiment's ``run`` returns: named tables, the files behind them, their provenance and the config."""

    experiment: str
    """The experiment's section name, which is its module's name (``fig3_training``, ``ablation``, ...)."""
    preset: str
    """The preset whose results folder holds the runs (``smoke``, ``quick``, ``paper``, a run family)."""
    config: Any
    """The frozen ``Config`` the experiment ran (the section's dataclass)."""
    tables: Mapping[str, pd.DataFrame]
    """The numbers, by name: e.g. ``episodes`` (one row per training episode and copy), ``evaluations``, ``trials``."""
    paths: tuple[Path, ...]
    """The result files written or read back, sorted: tables, JSON sidecars, transcripts, generation logs."""
    provenance: Provenance
    """Preset, engine, LLM or plan source (a surrogate named as one) and seeds: every figure's one-line footer."""

    def __post_init__(self) -> None:
        if not self.experiment or not isinstance(self.experiment, str):
            raise ValueError(f"experiment must be a section name, got {self.experiment!r}")
        bad = {name: type(table).__name__ for name, table in self.tables.items()
               if not isinstance(name, str) or not isinstance(table, pd.DataFrame)}
        if bad:
            raise TypeError(f"{self.experiment}: every table must be a DataFrame under a str name; got {bad}")
        if not isinstance(self.provenance, Provenance):
            raise TypeError(f"{self.experiment}: provenance must be a plots.Provenance, got "
                            f"{type(self.provenance).__name__}")
        object.__setattr__(self, "tables", MappingProxyType(dict(self.tables)))
        object.__setattr__(self, "paths", files(self.paths))

    def table(self, name: str) -> pd.DataFrame:
        """One table by name; a wrong name raises, naming the tables there are."""
        if name not in self.tables:
            raise KeyError(f"{self.experiment} has no table {name!r}; its tables: {', '.join(self.tables) or 'none'}")
        return self.tables[name]

    def summary(self) -> str:
        """A few readable lines: what ran, its tables with their sizes, how many files, and the footer line."""
        shapes = ", ".join(f"{name} ({len(table)} rows)" for name, table in self.tables.items()) or "none"
        return "\n".join([f"{self.experiment} at preset {self.preset}: "
                          f"{type(self.config).__module__}.{type(self.config).__name__}",
                          f"tables: {shapes}",
                          f"files: {len(self.paths)}" + (f" in {folders(self.paths)}" if self.paths else ""),
                          f"provenance: {self.provenance.footer()}"])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.summary().replace(chr(10), '; ')}>"


def files(found: Iterable[str | Path]) -> tuple[Path, ...]:
    """Paths as the sorted tuple a :class:`Result` holds (each once)."""
    return tuple(sorted({Path(path) for path in found}))


def folders(found: Iterable[Path], most: int = 3) -> str:
    """The folders holding ``found``, each shown relative to the repository when it sits inside it (at most
    ``most``)."""
    shown = []
    for folder in sorted({Path(path).parent for path in found}):
        try:
            shown.append(str(folder.resolve().relative_to(repo_paths.REPO_ROOT)))
        except ValueError:
            shown.append(str(folder))
    return ", ".join(shown[:most]) + (f" and {len(shown) - most} more" if len(shown) > most else "")
