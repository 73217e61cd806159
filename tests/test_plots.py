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


def test_a_long_footer_moves_below_the_axis_labels_and_a_short_one_stays(tmp_path):
    def draw(footer):
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel("training episode")
        fig.tight_layout(rect=(0, 0.09, 1, 1))
        plots.save_figure(fig, tmp_path, "f", footer, show=False)
        renderer = fig.canvas.get_renderer()
        text = fig.texts[-1]
        gap = ax.get_tightbbox(renderer).y0 - text.get_window_extent(renderer).y1
        plt.close(fig)
        return text.get_position()[1], gap, text.get_verticalalignment()

    _, gap, text_alignment = draw("seeds " + ", ".join(str(s) for s in range(200, 3000, 100)) * 3)  # wraps to several lines
    assert gap >= 0 and text_alignment == "top"  # hangs below the axes and their labels; the saved image grows
    short_y, short_gap, _ = draw("preset: smoke")
    assert short_y == 0.005 and short_gap > 0  # where it always was: committed figures keep their bytes


def test_a_bare_figure_gets_its_footer_too(tmp_path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 2))
    fig.add_subplot().set_xlabel("x")
    written = plots.save_figure(fig, tmp_path, "bare", "preset: smoke " * 40, show=False)
    assert [p.name for p in written] == ["bare.png", "bare.pdf"] and fig.texts[-1].get_verticalalignment() == "top"
