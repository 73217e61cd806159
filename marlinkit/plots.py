"""Figure and table output shared by every notebook: one-line provenance footers, full provenance in metadata and
JSON sidecars, byte-stable files."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

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


def use_bundled_fonts() -> None:
    """Draw every figure with the fonts matplotlib ships, never the system's (called on import).

    matplotlib prefers an installed font to its own copy of it, and a system DejaVu of another version (Debian's
    ``fonts-dejavu-core``) has other bounding boxes and is another file, both of which a PDF records: the same figure
    would have other bytes on a machine with those fonts installed."""
    from matplotlib import font_manager

    fonts = Path(matplotlib.get_data_path()) / "fonts"
    manager = font_manager.fontManager
    manager.ttflist, manager.afmlist = [], []  # the font list matplotlib cached may hold the system's alone
    for kind, folders in (("ttf", ("ttf",)), ("afm", ("afm", "pdfcorefonts"))):
        for path in sorted(font_manager.findSystemFonts([str(fonts / f) for f in folders], fontext=kind)):
            manager.addfont(path)
    cached = getattr(font_manager.FontManager, "_findfont_cached", None)  # lookups made before this call
    if cached is not None:
        cached.cache_clear()


use_bundled_fonts()

PAPER_COLORS = {"MARL": "#1f77b4", "MARLIN": "#d62728", "LLM-only": "#7f7f7f"}


def seeds_text(seeds: Iterable[int]) -> str:
    """Seeds in a few characters: ``seed 3``, ``seeds 0-11``, ``seeds 0,2,5``, ``seeds 0-3,7``,
    ``seeds 200-1300 step 100``; empty for no seeds."""
    values = sorted({int(s) for s in seeds})
    if not values:
        return ""
    if len(values) == 1:
        return f"seed {values[0]}"
    steps = {b - a for a, b in zip(values, values[1:])}
    if len(values) >= 3 and len(steps) == 1 and steps != {1}:
        return f"seeds {values[0]}-{values[-1]} step {steps.pop()}"
    groups = [[values[0]]]  # runs of consecutive seeds
    for value in values[1:]:
        if value == groups[-1][-1] + 1:
            groups[-1].append(value)
        else:
            groups.append([value])
    return "seeds " + ",".join(f"{g[0]}-{g[-1]}" if len(g) > 2 else ",".join(map(str, g)) for g in groups)


@dataclass(frozen=True)
class Provenance:
    """What produced a figure or table: the footer's four facts, and everything else a reader may ask.

    :meth:`footer` is the one line drawn under a figure (and printed under a table); the full record
    (:meth:`to_dict`) goes into the image files' metadata and the JSON sidecar beside them.
    """

    preset: str
    """The preset the runs were made at (``smoke``, ``quick``, ``paper``, or a named run family)."""
    engine: str | None = None
    """The simulator, short (``corridor core (numpy)``, ``sumo (SUMO 1.28)``); None where nothing was simulated."""
    source: str | None = None
    """Where the plans or replies came from: the LLM (``LLM smollm2 (...)``), a plan source (a surrogate named as
    one, e.g. ``plans: surrogate of Llama 3.1 8B``), or ``no LLM``; None where not applicable."""
    seeds: tuple[int, ...] = ()
    """The training seeds the figure pools (printed compactly: ``seeds 0-11``)."""
    details: dict[str, str] = field(default_factory=dict)
    """Everything else, by name: protocol, settings, deviations from the paper, the quantities' definitions."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        object.__setattr__(self, "details", {str(k): str(v) for k, v in self.details.items()})

    def footer(self) -> str:
        """The one line under a figure: preset, engine, LLM or plan source, seeds."""
        parts = [f"preset {self.preset}", self.engine, self.source, seeds_text(self.seeds)]
        return " | ".join(part for part in parts if part)

    def with_details(self, **details: Any) -> "Provenance":
        """The same provenance with ``details`` added (a key given again replaces the old value)."""
        return replace(self, details={**self.details, **details})

    def to_dict(self) -> dict[str, Any]:
        """The full record, as the JSON sidecar holds it."""
        return {"preset": self.preset, "engine": self.engine, "source": self.source, "seeds": list(self.seeds),
                "details": dict(sorted(self.details.items()))}

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> "Provenance":
        return cls(record["preset"], record.get("engine"), record.get("source"), tuple(record.get("seeds", ())),
                   dict(record.get("details", {})))

    def text(self) -> str:
        """The full record as readable lines: the footer, then one ``name: value`` line per detail."""
        return "\n".join([self.footer(), *(f"{key}: {value}" for key, value in sorted(self.details.items()))])

    def json(self) -> str:
        """The JSON sidecar's text: sorted keys, so equal provenance gives equal bytes."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


FOOTER_FONTSIZE = 7
SMALLEST_FOOTER_FONTSIZE = 5.5  # a narrow figure's footer shrinks this far


def add_footer(fig: plt.Figure, text: str) -> None:
    """The one-line provenance footer at the figure's bottom; moved below everything else where it would overlap
    the axes' labels. A footer wider than the figure shrinks, down to :data:`SMALLEST_FOOTER_FONTSIZE`; it never
    wraps (the saved image, ``bbox_inches="tight"``, grows to hold a line longer still)."""
    if "\n" in text:
        raise ValueError(f"a figure footer is one line: {text!r}")
    footer = fig.text(0.5, 0.005, text, ha="center", va="bottom", fontsize=FOOTER_FONTSIZE, color="#555555")
    if not hasattr(fig.canvas, "get_renderer"):  # a bare Figure(): the Agg canvas that savefig would use anyway
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    while (footer.get_window_extent(renderer).width > fig.bbox.width
           and footer.get_fontsize() > SMALLEST_FOOTER_FONTSIZE):
        footer.set_fontsize(footer.get_fontsize() - 0.5)
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
    bottoms = [box.y0 for box in boxes if box is not None]  # lowest edge of the axes with their labels, in pixels
    if bottoms and footer.get_window_extent(renderer).y1 > min(bottoms):
        footer.set_verticalalignment("top")
        footer.set_y((min(bottoms) - 4) / fig.bbox.height)


def image_metadata(name: str, provenance: Provenance) -> dict[str, dict[str, str | None]]:
    """The metadata ``save_figure`` writes, per format: the full provenance, and no date or software version
    (identical bytes on any machine)."""
    keywords = "; ".join(filter(None, ["marlinkit", *provenance.footer().split(" | ")]))
    return {"png": {"Title": name, "Description": provenance.text(), "Comment": provenance.json(),
                    "Source": "marlinkit", "Software": None},
            "pdf": {"Title": name, "Subject": provenance.text(), "Keywords": keywords, "Creator": "marlinkit",
                    "CreationDate": None, "ModDate": None, "Producer": None}}


def save_figure(fig: plt.Figure, out_dir: Path, name: str, provenance: Provenance,
                show: bool | None = None) -> list[Path]:
    """Write ``name.png`` and ``name.pdf`` with a one-line provenance footer, the full provenance in their
    metadata and in ``name.json`` beside them; identical bytes on rerun.

    In a notebook (``show=None``) the PNG just written is displayed inline, footer included, and the figure
    is closed so that the inline backend does not draw it a second time.
    """
    if not isinstance(provenance, Provenance):
        raise TypeError(f"save_figure needs a Provenance, not {type(provenance).__name__}")
    add_footer(fig, provenance.footer())
    metadata = image_metadata(name, provenance)
    written = []
    for ext, kwargs in (("png", {"dpi": 150}), ("pdf", {})):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, bbox_inches="tight", metadata=metadata[ext], **kwargs)
        path = Path(out_dir) / f"{name}.{ext}"
        atomic_write_bytes(path, buffer.getvalue())
        written.append(path)
        if ext == "png" and (in_notebook() if show is None else show):
            from IPython.display import Image, display

            display(Image(data=buffer.getvalue(), format="png"))
    sidecar = Path(out_dir) / f"{name}.json"
    atomic_write_text(sidecar, provenance.json())
    if show is None and in_notebook():
        plt.close(fig)
    return [*written, sidecar]


#: How a table prints a missing value (NaN, None).
MISSING = "—"
#: A number that rounds to zero from below ("-0.000"): printed without its sign, the width kept.
_NEGATIVE_ZERO = re.compile(r"(?<![\w.])-(0(?:\.0+)?)(?![\w.])")


def save_table(table: pd.DataFrame, out_dir: Path, name: str, caption: str, provenance: Provenance,
               latex_table: str | None = None, markdown_floatfmt: str | list[str] = "g") -> list[Path]:
    """Write a table as CSV, Markdown and LaTeX (the one-sentence caption above it, the provenance's footer line
    below it) and the full provenance in ``name.table.json`` beside them.

    ``latex_table`` replaces the generated LaTeX body, for tables that need bold cells.
    ``markdown_floatfmt``: tabulate's number format, one for all columns or one per column (the Markdown
    writer reads numeric-looking strings as numbers: "0.9700" prints as 0.97 under the default "g").
    """
    if not isinstance(provenance, Provenance):
        raise TypeError(f"save_table needs a Provenance, not {type(provenance).__name__}")
    if "\n" in caption:
        raise ValueError(f"a table caption is one line: {caption!r}")
    out_dir = Path(out_dir)
    csv_path, md_path, tex_path = (out_dir / f"{name}.{ext}" for ext in ("csv", "md", "tex"))
    sidecar = out_dir / f"{name}.table.json"
    footer = provenance.footer()
    atomic_write_text(csv_path, table.to_csv(index=False))
    shown = table.astype(object).where(table.notna(), None)  # a missing cell prints as MISSING, not "nan"
    markdown = _NEGATIVE_ZERO.sub(r" \1", shown.to_markdown(index=False, floatfmt=markdown_floatfmt,
                                                           missingval=MISSING))
    atomic_write_text(md_path, f"{caption}\n\n{markdown}\n\n{footer}\n")
    body = latex_table if latex_table is not None else table.to_latex(index=False, escape=True, na_rep=MISSING)
    atomic_write_text(tex_path, f"% {caption}\n% {footer}\n{body}")
    atomic_write_text(sidecar, provenance.json())
    return [csv_path, md_path, tex_path, sidecar]
