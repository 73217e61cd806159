"""Recompute a preset in a scratch folder and compare every table and figure with the reference ones.

The ``verify`` command: the reproducibility layer's check (:mod:`marlinkit.repro.verify`, and for ``--preset paper``
:mod:`marlinkit.repro.verify_paper`) handed today's presets and experiments as :data:`HOOKS`.
"""

from __future__ import annotations

import argparse
from typing import Any

from marlinkit import presets
from marlinkit.commands import recompute
from marlinkit.repro import verify
from marlinkit.repro.hooks import ExperimentHooks

HOOKS = ExperimentHooks(default_preset=presets.DEFAULT_PRESET, check_preset=presets.check_preset,
                        recompute=recompute.recompute, prepare=recompute.prepare,
                        numerics_entries=recompute.numerics_entries,
                        recompute_maestro_run=recompute.recompute_maestro_run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    verify.add_arguments(parser, HOOKS.default_preset)


def command(args: argparse.Namespace) -> dict[str, Any]:
    """Recompute (unless ``--compare-only``), compare, print the summary; ``exit_code`` 1 on any difference."""
    return verify.verify(args, HOOKS)
