"""Result keys: which stored run a configuration names.

A run's key is the short hash of the settings its numbers depend on (:func:`config_hash`); its sidecar records it,
and a runner resumes a run whose recorded key is the one its configuration hashes to today. Settings added after
runs were stored enter a key only when they are set, so the stored runs keep their keys: the tables below name each
such setting with the value every run had before the setting existed, and the ``*_key`` functions leave a setting
at that value out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

#: ``MAPPOConfig`` settings added after runs were stored, with the value the earlier runs had.
MAPPO_ADDED_LATER = {"init": "orthogonal", "generated_steps": "learn", "gradients": "closed_form",
                     "precision": "float32"}
#: ``MADDPGConfig`` settings added after runs were stored, with the value the earlier runs had.
MADDPG_ADDED_LATER = {"products": "torch", "sharing": "none", "decision_s": 1}
#: Settings of a MARLIN grid run (``marlinkit.marlin.grid.job_config``) added after runs were stored, with the
#: value the earlier runs had (the plan budget's rule is recorded beside the budget: runs before that rule differ).
GRID_ADDED_LATER = {"protocol": "paper", "actuation_noise": None, "trainer": "one-at-a-time", "layout_schedule": [],
                    "llm_only_performance_after": {}, "plan_budget": None, "plan_budget_for": None}


def config_hash(config: dict[str, Any]) -> str:
    """A short stable hash of a JSON-serialisable configuration."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def without_earlier_values(settings: Mapping[str, Any], added_later: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` less each setting of ``added_later`` left at the value the runs before it had."""
    return {k: v for k, v in settings.items() if k not in added_later or v != added_later[k]}


def mappo_key(config) -> dict[str, Any]:
    """The settings of a ``MAPPOConfig`` a run's key holds."""
    return without_earlier_values(dataclasses.asdict(config), MAPPO_ADDED_LATER)


def maddpg_key(config) -> dict[str, Any]:
    """The settings of a ``MADDPGConfig`` a run's key holds."""
    return without_earlier_values(dataclasses.asdict(config), MADDPG_ADDED_LATER)


def grid_key(job: dict[str, Any]) -> dict[str, Any]:
    """The settings of one MARLIN grid run its key holds (``job``: all of them)."""
    return without_earlier_values(job, GRID_ADDED_LATER)
