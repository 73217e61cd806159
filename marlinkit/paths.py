"""Every filesystem location the project uses, built from this file's location (one place)."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
FIGURES_DIR = REPO_ROOT / "figures"
DATA_DIR = REPO_ROOT / "data"
#: Run results (tidy CSV + sidecar per run); ``$MARLINKIT_RESULTS`` moves them, e.g. to a scratch folder that
#: makes every run recompute (``make verify``).
RESULTS_ENV = "MARLINKIT_RESULTS"
RESULTS_DIR = Path(os.environ.get(RESULTS_ENV) or DATA_DIR / "results").resolve()
#: Recorded LLM calls; ``$MARLINKIT_TRANSCRIPTS`` moves them (e.g. a copy with a record removed, in a test).
TRANSCRIPTS_ENV = "MARLINKIT_TRANSCRIPTS"
TRANSCRIPTS_DIR = Path(os.environ.get(TRANSCRIPTS_ENV) or DATA_DIR / "transcripts").resolve()
BUILD_DIR = REPO_ROOT / "build"
# Where outputs go when a notebook is run without an explicit output folder (nbval, JupyterLab):
# never the committed figures/ folder.
SCRATCH_DIR = BUILD_DIR / "scratch"
CACHE_DIR = Path(os.environ.get("MARLINKIT_CACHE", str(Path.home() / ".cache" / "marlinkit")))

#: Folders searched for shared data sets, in order (the repository's own data/ first).
SHARED_DATA_CANDIDATES = (DATA_DIR, REPO_ROOT.parent / "shared" / "data")


def results_dir(paper: str, preset: str) -> Path:
    """Folder holding the tidy result files of one paper under one preset."""
    return RESULTS_DIR / paper / preset


def figures_dir(paper: str, out_dir: str | os.PathLike | None = None) -> Path:
    """Folder a notebook writes its figures/tables to: ``out_dir`` when given, else scratch."""
    path = Path(out_dir) if out_dir else SCRATCH_DIR / "figures" / paper
    if not path.is_absolute():
        path = REPO_ROOT / path
    path.mkdir(parents=True, exist_ok=True)
    return path
