"""Figure and table writers: one-line footers, the full provenance in metadata and sidecars, byte-stable files."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from PIL import Image

from marlinkit import plots

PROVENANCE = plots.Provenance("smoke", engine="corridor core (numpy)", source="plans: surrogate of Llama 3.1 8B",
                              seeds=(0, 1, 2, 3, 7),
                              details={"protocol": "2 copies x 40 episodes", "deviation": "n × 2 ≥ 4"})


def _draw(out_dir, provenance=PROVENANCE):
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.plot([0, 1, 2], [0, 1, 0.5])
    written = plots.save_figure(fig, out_dir, "demo", provenance, show=False)
    footer = fig.texts[-1]
    fits = footer.get_window_extent(fig.canvas.get_renderer()).width <= fig.bbox.width
    plt.close(fig)
    return {p.suffix: p.read_bytes() for p in written}, (footer, fits)


def test_figures_are_byte_stable_across_reruns(tmp_path):
    (first, _), (second, _) = _draw(tmp_path / "a"), _draw(tmp_path / "b")
    assert first.keys() == {".png", ".pdf", ".json"}
    assert first == second
    changed, _ = _draw(tmp_path / "c", PROVENANCE.with_details(protocol="3 copies"))
    assert changed[".json"] != first[".json"] and changed[".png"] != first[".png"]  # the metadata is in the bytes


def test_the_footer_is_one_line_with_preset_engine_source_and_compact_seeds(tmp_path):
    _, (footer, fits) = _draw(tmp_path)
    text = footer.get_text()
    assert text == "preset smoke | corridor core (numpy) | plans: surrogate of Llama 3.1 8B | seeds 0-3,7"
    assert "\n" not in text and not footer.get_wrap()
    assert fits  # within the 4-inch figure's width
    assert footer.get_fontsize() < plots.FOOTER_FONTSIZE  # by shrinking, not wrapping


@pytest.mark.parametrize("seeds, text", [((), ""), ((4,), "seed 4"), (range(12), "seeds 0-11"),
                                         ((0, 2, 5), "seeds 0,2,5"), ((5, 0, 1, 2, 9, 10), "seeds 0-2,5,9,10"),
                                         (range(200, 1400, 100), "seeds 200-1300 step 100")])
def test_seeds_are_printed_compactly(seeds, text):
    assert plots.seeds_text(seeds) == text


def test_png_and_pdf_metadata_and_the_sidecar_carry_the_full_provenance(tmp_path):
    _draw(tmp_path)
    sidecar = (tmp_path / "demo.json").read_text()
    assert plots.Provenance.from_dict(json.loads(sidecar)) == PROVENANCE
    assert json.loads(sidecar) == PROVENANCE.to_dict() and list(json.loads(sidecar)) == sorted(json.loads(sidecar))
    png = Image.open(tmp_path / "demo.png").text
    assert png["Title"] == "demo" and png["Comment"] == sidecar and "Software" not in png
    assert png["Description"].splitlines() == [PROVENANCE.footer(), "deviation: n × 2 ≥ 4",
                                                "protocol: 2 copies x 40 episodes"]
    pdf = (tmp_path / "demo.pdf").read_bytes()
    assert _pdf_info(pdf, "Title") == "demo" and _pdf_info(pdf, "Subject") == PROVENANCE.text()
    assert "seeds 0-3,7" in _pdf_info(pdf, "Keywords") and b"/CreationDate" not in pdf and b"/Producer" not in pdf


def _pdf_info(pdf: bytes, key: str) -> str:
    """A string of a PDF's document information (matplotlib writes it uncompressed, as a literal string)."""
    start = pdf.index(f"/{key} (".encode()) + len(key) + 3
    raw, i = bytearray(), start
    while pdf[i:i + 1] != b")":
        if pdf[i:i + 1] == b"\\":
            i += 1
            raw += {b"n": b"\n", b"r": b"\r", b"t": b"\t"}.get(pdf[i:i + 1], pdf[i:i + 1])
        else:
            raw += pdf[i:i + 1]
        i += 1
    return raw[2:].decode("utf-16-be") if raw.startswith(b"\xfe\xff") else raw.decode("latin-1")


def test_a_footer_too_long_for_a_narrow_figure_stays_one_line_and_only_a_provenance_is_accepted(tmp_path):
    fig, ax = plt.subplots(figsize=(2, 2))
    plots.save_figure(fig, tmp_path, "f", plots.Provenance("smoke", engine="x" * 200), show=False)
    assert (fig.texts[-1].get_fontsize() == plots.SMALLEST_FOOTER_FONTSIZE
            and Image.open(tmp_path / "f.png").width > 2 * 150)
    with pytest.raises(TypeError):
        plots.save_figure(fig, tmp_path, "g", "preset: smoke", show=False)
    plt.close(fig)
    assert not (tmp_path / "g.png").exists()


def test_tables_are_written_in_three_formats_with_caption_footer_and_sidecar(tmp_path):
    table = pd.DataFrame({"scenario": ["single_slot"], "MARL": [0.5]})
    written = plots.save_table(table, tmp_path, "t", "Table X: one sentence.", PROVENANCE)
    assert [p.name for p in written] == ["t.csv", "t.md", "t.tex", "t.table.json"]
    md = (tmp_path / "t.md").read_text().split("\n\n")
    assert md[0] == "Table X: one sentence." and md[-1] == PROVENANCE.footer() + "\n"
    assert "single\\_slot" in (tmp_path / "t.tex").read_text()
    assert plots.Provenance.from_dict(json.loads((tmp_path / "t.table.json").read_text())) == PROVENANCE
    with pytest.raises(ValueError, match="one line"):
        plots.save_table(table, tmp_path, "t", "two\nlines", PROVENANCE)


def test_a_footer_that_would_overlap_the_axis_labels_moves_below_them(tmp_path):
    def draw(bottom):
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel("training episode")
        fig.subplots_adjust(bottom=bottom)
        plots.save_figure(fig, tmp_path, "f", plots.Provenance("smoke"), show=False)
        renderer = fig.canvas.get_renderer()
        text = fig.texts[-1]
        gap = ax.get_tightbbox(renderer).y0 - text.get_window_extent(renderer).y1
        plt.close(fig)
        return text.get_position()[1], gap, text.get_verticalalignment()

    _, gap, alignment = draw(0.1)  # no room left for it: it hangs below the labels, the saved image grows
    assert gap >= 0 and alignment == "top"
    y, gap, alignment = draw(0.3)
    assert y == 0.005 and gap > 0 and alignment == "bottom"


def test_a_bare_figure_gets_its_footer_too(tmp_path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 2))
    fig.add_subplot().set_xlabel("x")
    written = plots.save_figure(fig, tmp_path, "bare", plots.Provenance("smoke", seeds=(1,)), show=False)
    assert ([p.name for p in written] == ["bare.png", "bare.pdf", "bare.json"]
            and fig.texts[-1].get_text() == "preset smoke | seed 1")


def test_a_table_prints_missing_values_as_a_dash_and_no_negative_zero(tmp_path):
    import numpy as np

    table = pd.DataFrame({"x": [1.0, np.nan, -0.00004, -1.5], "name": ["a", None, "c", "d-0"]})
    plots.save_table(table, tmp_path, "t", "Table X.", PROVENANCE, markdown_floatfmt=".3f")
    md = (tmp_path / "t.md").read_text()
    assert "nan" not in md.lower() and "-0.000" not in md and " 0.000 |" in md and "-1.500" in md and "d-0" in md
    assert md.count(plots.MISSING) == 2 and "NaN" not in (tmp_path / "t.tex").read_text()
    assert pd.read_csv(tmp_path / "t.csv").x.isna().sum() == 1  # the CSV keeps the raw values


def test_figures_use_matplotlibs_own_fonts_never_the_systems():
    """A system DejaVu of another version (Debian's) has other bounding boxes and is another file, both of which a
    PDF records: the fonts found are those matplotlib ships, whatever is installed or cached."""
    from pathlib import Path

    import matplotlib
    from matplotlib import font_manager

    bundled = Path(matplotlib.get_data_path()).resolve()
    for properties in (dict(family="DejaVu Sans"), dict(family="DejaVu Sans", weight="bold"), dict(family="monospace"),
                       dict(family="serif", style="italic")):
        found = Path(font_manager.findfont(font_manager.FontProperties(**properties), fallback_to_default=False))
        assert found.resolve().is_relative_to(bundled), (properties, found)
    assert all(Path(f.fname).resolve().is_relative_to(bundled) for f in font_manager.fontManager.ttflist)
