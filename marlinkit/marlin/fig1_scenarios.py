"""Fig. 1: the five corridor layouts (``notebooks/marlin/fig1_scenarios``), drawn by ``envs.corridor.render``.

``run(cfg)`` simulates nothing: its table ``layouts`` describes each layout (size, free cells, starts,
goals, the cells as text), the figure is ``envs.corridor.render.draw_all_layouts``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, get_layout, to_ascii
from marlinkit.config_fields import label, required_preset
from marlinkit.plots import Provenance
from marlinkit.result import Result


@dataclass(frozen=True)
class Config:
    """The ``fig1_scenarios`` section."""

    scenarios: tuple[str, ...] = tuple(LAYOUT_NAMES)
    """Layouts printed as text beside the figure, in this order."""
    preset: str | None = label()
    """The preset named on the outputs' footer (a label)."""

    def __post_init__(self):
        object.__setattr__(self, "scenarios", tuple(self.scenarios))
        unknown = sorted(set(self.scenarios) - set(LAYOUT_NAMES))
        if unknown:
            raise ValueError(f"unknown scenario(s) {unknown}; choose from {list(LAYOUT_NAMES)}")


def run(cfg: Config) -> Result:
    """The layouts of ``cfg``: table ``layouts``, one row per scenario; no files are written or read."""
    config, preset = cfg, required_preset(cfg)
    rows = []
    for name in config.scenarios:
        layout = get_layout(name)
        rows.append({"scenario": name, "title": layout.title, "width": layout.valid.shape[0],
                     "height": layout.valid.shape[1],
                     "free_cells": int(layout.valid.sum()), "starts": str(list(layout.starts)),
                     "goals": str(list(layout.goals)),
                     "cells": to_ascii(layout)})
    provenance = Provenance(preset, engine="corridor core (numpy)", source="no LLM",
                            details={"layouts": "cells from the authors' public code"})
    return Result("fig1_scenarios", preset, config, {"layouts": pd.DataFrame(rows)}, (), provenance)


def ascii_layouts(result: Result) -> str:
    """Each layout's title and its cells as text (``#`` wall, ``.`` free), as the notebook prints them."""
    return "".join(f"{row.title}\n{row.cells}\n\n" for row in result.table("layouts").itertuples())
