"""Every experiment shows one face: ``run(cfg) -> Result`` (marlinkit.result)."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path

import pandas as pd
import pytest

from marlinkit import config_fields, paper_audit, plots, presets
from marlinkit.marlin import fig1_scenarios
from marlinkit.result import Result



@pytest.mark.parametrize("section", sorted(presets.experiments()))
def test_every_experiment_takes_its_config_and_returns_a_result(section):
    """``run(cfg) -> Result``: one required argument, the section's ``Config``, whose ``preset`` label names the results
    folder and the outputs."""
    module = presets.experiments()[section]
    assert list(inspect.signature(module.run).parameters) == ["cfg"], section
    assert config_fields.is_label({f.name: f for f in dataclasses.fields(module.Config)}["preset"]), section
    returned = typing.get_type_hints(module.run)["return"]
    assert inspect.isclass(returned) and issubclass(returned, Result), (section, returned)


def test_a_result_holds_dataframes_sorted_files_and_a_provenance():
    provenance = plots.Provenance("smoke", engine="corridor core (numpy)", source="no LLM", seeds=(0, 1, 2))
    result = Result("fig1_scenarios", "smoke", fig1_scenarios.Config(), {"rows": pd.DataFrame({"a": [1, 2]})},
                    (Path("b.csv"), "a.json", Path("b.csv")), provenance)
    assert result.paths == (Path("a.json"), Path("b.csv"))
    assert result.table("rows").a.tolist() == [1, 2]
    with pytest.raises(KeyError, match="its tables: rows"):
        result.table("episodes")
    with pytest.raises(TypeError):
        result.tables["more"] = pd.DataFrame()  # read-only
    assert result.summary().splitlines()[1:] == ["tables: rows (2 rows)", "files: 2 in .",
                                                 "provenance: preset smoke | corridor core (numpy) | no LLM | "
                                                 "seeds 0-2"]
    with pytest.raises(TypeError, match="DataFrame"):
        Result("x", "smoke", None, {"rows": [1, 2]}, (), provenance)
    with pytest.raises(TypeError, match="Provenance"):
        Result("x", "smoke", None, {}, (), {"preset": "smoke"})


def test_the_layouts_and_the_paper_audit_run_as_results():
    layouts = fig1_scenarios.run(presets.get("smoke", "fig1_scenarios"))
    table = layouts.table("layouts")
    assert list(table.scenario) == list(presets.get("smoke", "fig1_scenarios").scenarios)
    assert (table.free_cells > 0).all() and table.cells.str.contains("#").all()
    assert fig1_scenarios.ascii_layouts(layouts).startswith(table.title.iloc[0] + "\n")
    audit = paper_audit.run(presets.get("smoke", "paper_audit", bootstrap_resamples=200, rounding_samples=10))
    checks, disagreements = audit.table("maestro_checks"), audit.table("maestro_disagreements")
    assert len(disagreements) == int((~checks.agrees).sum()) > 0 and audit.paths == ()
    assert audit.provenance.source == "numbers transcribed from the papers; no runs"
