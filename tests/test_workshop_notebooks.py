"""The workshop notebooks at the smoke preset (their default, ``workshop``, is the class's size: the browser test runs
it), run as papermill runs them: no error, a figure inline; and a bad parameter shown as one line naming the cell."""

from __future__ import annotations

import nbformat
import papermill
import pytest

from marlinkit import paths

WORKSHOP = sorted((paths.NOTEBOOKS_DIR / "workshop").glob("*.ipynb"))
#: The one the default `make test` runs (the whole MARLIN loop at smoke); the others are marked slow.
DEFAULT_RUN = "04_marlin_in_15_minutes.ipynb"


def _run(source, tmp_path, **parameters):
    executed = tmp_path / source.name
    papermill.execute_notebook(str(source), str(executed),
                               parameters={"FIGURES_DIR": str(tmp_path / "figures"), **parameters},
                               cwd=str(source.parent), progress_bar=False, kernel_name="python3")
    return nbformat.read(executed, as_version=4)


def test_the_workshop_notebooks_default_to_the_workshop_preset():
    for source in WORKSHOP:
        parameters = papermill.inspect_notebook(str(source))
        assert parameters["PRESET"]["default"] == '"workshop"', source.name


@pytest.mark.parametrize("source",
                         [pytest.param(p, marks=() if p.name == DEFAULT_RUN else pytest.mark.slow) for p in WORKSHOP],
                         ids=lambda p: p.name)
def test_workshop_notebook_runs_at_smoke_with_a_figure_inline(source, tmp_path):
    nb = _run(source, tmp_path, PRESET="smoke")
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{source.name}: no inline figure"


@pytest.mark.slow
def test_a_bad_preset_shows_one_line_that_names_the_parameter_the_allowed_values_and_the_cell(tmp_path):
    source = paths.NOTEBOOKS_DIR / "workshop" / "01_corridor_env.ipynb"
    with pytest.raises(papermill.PapermillExecutionError) as error:
        _run(source, tmp_path, PRESET="quik")
    assert error.value.ename == "ParameterError"
    lines = [line for line in error.value.traceback if line.strip()]
    assert len(lines) == 1, lines  # no traceback through the library
    assert ("PRESET = 'quik'" in lines[0] and "workshop, smoke, quick, paper" in lines[0]
            and "parameters cell" in lines[0])


@pytest.mark.slow
def test_a_bad_plan_source_in_a_paper_notebook_is_one_line_too(tmp_path):
    source = paths.NOTEBOOKS_DIR / "marlin" / "fig3_training.ipynb"
    with pytest.raises(papermill.PapermillExecutionError) as error:
        _run(source, tmp_path, PRESET="smoke", PLAN_SOURCE="surogate")
    (line,) = [line for line in error.value.traceback if line.strip()]
    assert error.value.ename == "ParameterError" and "PLAN_SOURCE = 'surogate'" in line and "'surrogate'" in line
    assert "parameters cell" in line
