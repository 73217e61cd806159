"""Write the MAESTRO ablation rows of marlinkit/settings/ablation_rows.toml as make variables (the Makefile's include).

``make figures PRESET=paper`` runs each row's notebooks under the row's output suffix. What make needs of a row (its
notebook parameters, the suffix its outputs and runs carry, its configurations and seeds, the command that trains its
missing runs) is derived here from the row as loaded, so the rows are defined in their TOML file alone. A row the
notebooks' parameters (``ARCHITECT``, ``MADDPG``, ``CURRICULUM``) cannot express is refused, naming the setting that
differs.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

#: The preset whose ablation the rows modify.
PRESET = "paper"


@dataclasses.dataclass(frozen=True)
class MakeRow:
    """What the Makefile needs of one ablation row."""

    name: str
    """The row's name in ablation_rows.toml."""
    suffix: str
    """The setting suffix naming its runs' folder, transcripts and outputs (``ablation.setting_suffix``)."""
    parameters: tuple[tuple[str, str], ...]
    """The notebooks' parameters that select it (``-p NAME value``)."""
    ablations: tuple[str, ...]
    """Its configurations, e.g. A0/A2/A7/A8."""
    seeds: tuple[int, ...]
    """The preset's seeds."""
    trains: str
    """How its missing runs are trained, in words (the note make prints names it)."""


def notebook_parameters(name: str, row: Any) -> tuple[tuple[str, str], ...]:
    """The notebooks' ``ARCHITECT``, ``MADDPG`` and ``CURRICULUM`` of an ablation row (those it sets)."""
    from marlinkit.maestro.ablation import REFERENCE_LLM

    architect = row.llm == REFERENCE_LLM
    if row.curriculum is not None and not architect:
        raise ValueError(f"ablation row {name!r}: the notebooks choose a curriculum target with the reference "
                         "architect only")
    given = (("ARCHITECT", REFERENCE_LLM if architect else None), ("MADDPG", row.maddpg_setting),
             ("CURRICULUM", row.curriculum))
    return tuple((parameter, value) for parameter, value in given if value is not None)


def make_row(name: str, row: Any) -> MakeRow:
    """One row's :class:`MakeRow`; refused when its notebook parameters give another configuration than the row."""
    from marlinkit import presets
    from marlinkit.maestro import ablation, reference_queue

    parameters = notebook_parameters(name, row)
    given = dict(parameters)
    cfg = presets.ablation_config(PRESET, record=False, **reference_queue.overrides(
        given.get("ARCHITECT"), given.get("MADDPG"), given.get("CURRICULUM")))
    wanted = presets.ablation_config(PRESET, record=False, **row.overrides())
    differ = [f.name for f in dataclasses.fields(cfg) if f.name != "ablations"
              and getattr(cfg, f.name) != getattr(wanted, f.name)]
    if differ:
        raise ValueError(f"ablation row {name!r}: the notebooks' parameters {given} give another {differ[0]} "
                         f"({getattr(cfg, differ[0])!r}) than the row ({getattr(wanted, differ[0])!r})")
    if cfg.llm == ablation.REFERENCE_LLM:
        trains = (f"python -m marlinkit reference-queue run --maddpg-setting {cfg.maddpg_setting} "
                  f"--curriculum {cfg.curriculum} trains the rest")
    else:
        trains = f"RECORD=1 trains the rest and records their {cfg.llm} calls"
    return MakeRow(name, ablation.setting_suffix(cfg), parameters, cfg.ablations, cfg.seeds, trains)


def makefile_text(rows: list[MakeRow]) -> str:
    """The include: ``ABLATION_ROWS`` and, per row ``<name>``, ``ROW_SUFFIX_<name>``, ``ROW_ARGS_<name>``,
    ``ROW_ABLATIONS_<name>``, ``ROW_ALL_<name>`` (its runs in all) and ``ROW_TRAINS_<name>``."""
    lines = ["# Made by `python -m marlinkit ablation-rows` from marlinkit/settings/ablation_rows.toml: do not edit.",
             f"ABLATION_ROWS := {' '.join(row.name for row in rows)}"]
    for row in rows:
        args = " ".join(f"-p {name} {value}" for name, value in row.parameters)
        lines += [f"ROW_SUFFIX_{row.name} := {row.suffix}", f"ROW_ARGS_{row.name} := {args}",
                  f"ROW_ABLATIONS_{row.name} := {' '.join(row.ablations)}",
                  f"ROW_ALL_{row.name} := {len(row.ablations) * len(row.seeds)}",
                  f"ROW_TRAINS_{row.name} := {row.trains}"]
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="the make include to write (atomically)")


def command(args: argparse.Namespace) -> dict[str, Any]:
    from marlinkit import settings
    from marlinkit.files import atomic_write_text

    rows = [make_row(name, row) for name, row in settings.ablation_rows().items()]
    atomic_write_text(args.out, makefile_text(rows))
    return {"rows": [row.name for row in rows], "out": str(args.out)}
