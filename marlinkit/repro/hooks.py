"""What the reproducibility layer's checks ask of today's experiments, handed in by an entry point.

The layer imports no experiment: :mod:`marlinkit.commands.verify` fills an :class:`ExperimentHooks` with functions
of the experiments and the presets (:mod:`marlinkit.commands.recompute`), and :mod:`marlinkit.repro.verify` and
:mod:`marlinkit.repro.verify_paper` call them. ``recompute`` runs in worker processes of their own, so it is a
module-level function (pickled by its name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ExperimentHooks:
    """The experiments' side of ``verify``: each field a plain function."""

    default_preset: str
    """The preset ``verify`` recomputes when none is named."""
    check_preset: Callable[[str], str]
    """A preset's name, checked: an unknown one raises, naming the known ones."""
    recompute: Callable[..., dict[str, Any]]
    """``(run, episodes, scratch, *prepared)``: a committed run's prefix by today's code: ``table`` (CSV text) and,
    for MAESTRO, ``generations``; or ``error``, never an exception. ``prepared``: what ``prepare`` gave its folder."""
    prepare: Callable[[Any, Path, list[str]], tuple]
    """``(run, scratch, problems)``: what a MAESTRO ablation folder's runs share (its ``Config`` and calibration),
    recomputed once and compared whole (a difference goes to ``problems``); ``(None, None)`` when nothing names it."""
    numerics_entries: Callable[[Any], tuple[str, ...]]
    """``(run)``: the runner modules whose imports make a committed run's numerics path."""
    recompute_maestro_run: Callable[[str, str, Path], tuple[Path, str, tuple[str, ...]]]
    """``(preset, "A2:200", scratch)``: one committed MAESTRO run recomputed whole in ``scratch``; its committed
    folder, its file stem and its table's measured wall-time columns."""
