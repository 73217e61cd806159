"""Source notebooks are committed clean: no outputs, no execution counts, a papermill parameters cell."""

from __future__ import annotations

import ast

import nbformat
import pytest

from marlinkit import paths

# JupyterLab's autosave copies are not source and are git-ignored.
NOTEBOOKS = sorted(nb for nb in paths.NOTEBOOKS_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in nb.parts)


def _ids(notebook) -> str:
    return str(notebook.relative_to(paths.NOTEBOOKS_DIR))


def _assigned(cell) -> set[str]:
    """The names a code cell assigns at its top level."""
    return {target.id for node in ast.parse(cell.source).body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name)}


def test_there_are_notebooks_to_check():
    assert NOTEBOOKS, f"no notebooks found under {paths.NOTEBOOKS_DIR}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_ids)
def test_notebook_has_no_outputs_and_no_execution_counts(notebook):
    nb = nbformat.read(notebook, as_version=4)
    dirty = [i for i, cell in enumerate(nb.cells)
             if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)]
    assert not dirty, f"{_ids(notebook)}: cells {dirty} hold outputs; run `.venv/bin/nbstripout {notebook}`"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_ids)
def test_notebook_has_a_parameters_cell_defining_preset_and_figures_dir(notebook):
    nb = nbformat.read(notebook, as_version=4)
    tagged = [cell for cell in nb.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{_ids(notebook)}: needs exactly one cell tagged 'parameters', found {len(tagged)}"
    assert tagged[0].cell_type == "code"
    missing = {"PRESET", "FIGURES_DIR"} - _assigned(tagged[0])
    assert not missing, f"{_ids(notebook)}: the parameters cell does not define {sorted(missing)}"
    first_code = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert first_code is tagged[0], f"{_ids(notebook)}: the parameters cell must be the first code cell"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_ids)
def test_notebook_is_stored_as_jupyter_writes_it(notebook):
    """Opening a notebook in JupyterLab must not change it: same kernelspec, same JSON layout."""
    text = notebook.read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    assert nb.metadata.kernelspec == {"display_name": "Python 3 (ipykernel)", "language": "python",
                                      "name": "python3"}, \
        f"{_ids(notebook)}: kernelspec differs from what ipykernel's JupyterLab writes"
    assert nb.metadata.language_info.get("pygments_lexer") == "ipython3", f"{_ids(notebook)}: language_info incomplete"
    assert nbformat.writes(nb) + "\n" == text, \
        f"{_ids(notebook)}: not in nbformat's layout; load and save it with nbformat"


def test_gitattributes_routes_notebooks_through_nbstripout():
    attributes = (paths.REPO_ROOT / ".gitattributes").read_text()
    assert "*.ipynb filter=nbstripout" in attributes
    makefile = (paths.REPO_ROOT / "Makefile").read_text()
    assert "git config filter.nbstripout.clean" in makefile, "make setup must install the nbstripout git filter"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_ids)
def test_papermill_reads_every_parameter_of_the_parameters_cell(notebook):
    """papermill skips a parameter line holding a second '=' (in its comment, say) and warns "Unable to parse line"
    on every `make figures`; each assigned name must be one it reads."""
    import papermill

    nb = nbformat.read(notebook, as_version=4)
    cell = next(cell for cell in nb.cells if "parameters" in cell.metadata.get("tags", []))
    assigned = _assigned(cell)
    read = set(papermill.inspect_notebook(str(notebook)))
    assert assigned == read, f"{_ids(notebook)}: papermill does not read {sorted(assigned - read)}"
