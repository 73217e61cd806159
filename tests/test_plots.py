"""Figure and table writers: byte-stable files with provenance."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from marlinkit import plots


def _draw(out_dir):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [0, 1, 0.5])
    written = plots.save_figure(fig, out_dir, "demo", plots.provenance_text("smoke", engine="test", llm="none"))
    plt.close(fig)
    return {p.suffix: p.read_bytes() for p in written}


def test_figures_are_byte_stable_across_reruns(tmp_path):
    first, second = _draw(tmp_path / "a"), _draw(tmp_path / "b")
    assert first.keys() == {".png", ".pdf"}
    assert first == second


def test_tables_are_written_in_three_formats_with_caption(tmp_path):
    table = pd.DataFrame({"scenario": ["single_slot"], "MARL": [0.5]})
    written = plots.save_table(table, tmp_path, "t", "Table X (preset: smoke)")
    assert [p.suffix for p in written] == [".csv", ".md", ".tex"]
    assert "Table X (preset: smoke)" in (tmp_path / "t.md").read_text()
    assert "single\\_slot" in (tmp_path / "t.tex").read_text()
