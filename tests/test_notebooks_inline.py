"""A paper notebook run as a reader runs it shows its figure and its table inline, with no widget warnings."""

from __future__ import annotations

import nbformat
import papermill
import pytest

from marlinkit import paths


@pytest.mark.slow
def test_llm_only_notebook_at_smoke_shows_figures_and_tables_inline(tmp_path):
    source = paths.NOTEBOOKS_DIR / "marlin" / "llm_only.ipynb"
    executed = tmp_path / "llm_only.ipynb"
    papermill.execute_notebook(str(source), str(executed),
                               parameters={"PRESET": "smoke", "FIGURES_DIR": str(tmp_path / "figures")},
                               cwd=str(source.parent), progress_bar=False, kernel_name="python3")
    outputs = [o for cell in nbformat.read(executed, as_version=4).cells if cell.cell_type == "code"
               for o in cell.outputs]
    kinds = [kind for o in outputs for kind in o.get("data", {})]
    assert "image/png" in kinds, f"no inline figure; outputs: {kinds}"
    assert "text/html" in kinds or "text/markdown" in kinds, "the summary table is not shown"
    assert not any("<Figure size" in o.get("data", {}).get("text/plain", "") for o in outputs), "a figure shown as text"
    streams = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "TqdmWarning" not in streams and "IProgress" not in streams
    assert (tmp_path / "figures" / "llm_only_boxplots.png").is_file(), "the file is still written"


def test_plots_uses_agg_only_in_batch_and_keeps_a_kernels_inline_backend():
    import os
    import subprocess
    import sys

    code = "import marlinkit.plots, matplotlib; print(matplotlib.get_backend())"
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    batch = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert batch.stdout.strip().lower() == "agg"
    inline = "module://matplotlib_inline.backend_inline"  # what ipykernel sets before any cell runs
    kernel = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**env, "MPLBACKEND": inline}, check=True)
    assert kernel.stdout.strip() == inline
