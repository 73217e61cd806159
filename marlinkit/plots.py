"""Figure and table output shared by every notebook: provenance footers, byte-stable files."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import matplotlib

# Jupyter and papermill kernels set MPLBACKEND (the inline backend): figures show in the notebook, and
# ``save_figure`` displays the PNG it wrote. A batch run (a script, a worker process) that chose no backend
# gets Agg, so that a stale $DISPLAY never opens windows; an interactive session or an explicit choice is kept.
if "MPLBACKEND" not in os.environ and "matplotlib.pyplot" not in sys.modules and not hasattr(sys, "ps1"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from marlinkit.progress import in_notebook  # noqa: E402
from marlinkit.files import atomic_write_bytes, atomic_write_text  # noqa: E402

PAPER_COLORS = {"MARL": "#1f77b4", "MARLIN": "#d62728", "LLM-only": "#7f7f7f"}


def provenance_text(preset: str, engine: str | None = None, llm: str | None = None, note: str | None = None) -> str:
    """One line saying what produced a figure or table."""
    parts = [f"preset: {preset}"]
    if engine:
        parts.append(f"engine: {engine}")
    if llm:
        parts.append(f"LLM: {llm}")
    if note:
        parts.append(note)
    return "marlinkit | " + " | ".join(parts)


def add_footer(fig: plt.Figure, text: str) -> None:
    """The provenance footer at the figure's bottom; moved below everything else where it would overlap the
    axes' labels (a long footer, e.g. twelve seeds); the saved image (``bbox_inches="tight"``) grows to hold it."""
    footer = fig.text(0.5, 0.005, text, ha="center", va="bottom", fontsize=7, color="#555555", wrap=True)
    if not hasattr(fig.canvas, "get_renderer"):  # a bare Figure(): the Agg canvas that savefig would use anyway
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
    bottoms = [box.y0 for box in boxes if box is not None]  # lowest edge of the axes with their labels, in pixels
    if bottoms and footer.get_window_extent(renderer).y1 > min(bottoms):
        footer.set_verticalalignment("top")
        footer.set_y((min(bottoms) - 4) / fig.bbox.height)


def save_figure(fig: plt.Figure, out_dir: Path, name: str, footer: str, show: bool | None = None) -> list[Path]:
    """Write ``name.png`` and ``name.pdf`` with a provenance footer; identical bytes on rerun.

    In a notebook (``show=None``) the PNG just written is displayed inline, footer included, and the figure
    is closed so that the inline backend does not draw it a second time.
    """
    add_footer(fig, footer)
    written = []
    for ext, kwargs in (("png", {"metadata": {"Software": None}, "dpi": 150}),
                        ("pdf", {"metadata": {"CreationDate": None, "ModDate": None, "Producer": None}})):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, bbox_inches="tight", **kwargs)
        path = Path(out_dir) / f"{name}.{ext}"
        atomic_write_bytes(path, buffer.getvalue())
        written.append(path)
        if ext == "png" and (in_notebook() if show is None else show):
            from IPython.display import Image, display

            display(Image(data=buffer.getvalue(), format="png"))
    if show is None and in_notebook():
        plt.close(fig)
    return written


def save_table(table: pd.DataFrame, out_dir: Path, name: str, caption: str, latex_table: str | None = None,
               markdown_floatfmt: str | list[str] = "g") -> list[Path]:
    """Write a table as CSV, Markdown (with the caption) and LaTeX (caption included).

    ``latex_table`` replaces the generated LaTeX body, for tables that need bold cells.
    ``markdown_floatfmt``: tabulate's number format, one for all columns or one per column (the Markdown
    writer reads numeric-looking strings as numbers: "0.9700" prints as 0.97 under the default "g").
    """
    out_dir = Path(out_dir)
    csv_path, md_path, tex_path = (out_dir / f"{name}.{ext}" for ext in ("csv", "md", "tex"))
    atomic_write_text(csv_path, table.to_csv(index=False))
    atomic_write_text(md_path, f"{caption}\n\n{table.to_markdown(index=False, floatfmt=markdown_floatfmt)}\n")
    body = latex_table if latex_table is not None else table.to_latex(index=False, escape=True)
    atomic_write_text(tex_path, f"% {caption}\n{body}")
    return [csv_path, md_path, tex_path]
