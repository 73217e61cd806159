"""A paper notebook run as a reader runs it shows its figure and its table inline, with no widget warnings."""

from __future__ import annotations

import nbformat
import papermill

from marlinkit import paths


def test_llm_only_notebook_at_smoke_shows_figures_and_tables_inline(tmp_path):
    source = paths.NOTEBOOKS_DIR / "marlin" / "llm_only.ipynb"
    executed = tmp_path / "llm_only.ipynb"
    papermill.execute_notebook(str(source), str(executed), parameters={"PRESET": "smoke", "FIGURES_DIR": str(tmp_path / "figures")},
                               cwd=str(source.parent), progress_bar=False, kernel_name="python3")
    outputs = [o for cell in nbformat.read(executed, as_version=4).cells if cell.cell_type == "code" for o in cell.outputs]
    kinds = [kind for o in outputs for kind in o.get("data", {})]
    assert "image/png" in kinds, f"no inline figure; outputs: {kinds}"
    assert "text/html" in kinds or "text/markdown" in kinds, "the summary table is not shown"
    assert not any("<Figure size" in o.get("data", {}).get("text/plain", "") for o in outputs), "a figure shown as text"
    streams = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "TqdmWarning" not in streams and "IProgress" not in streams
    assert (tmp_path / "figures" / "llm_only_boxplots.png").is_file(), "the file is still written"
