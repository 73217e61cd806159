"""The plan-source seam of MARLIN (the paper's G_IAN): a corridor state in, a joint plan out.

Implementations: the exact joint planner (``marlinkit.algos.joint_planner``, an upper bound,
not an LLM) and the LLM negotiation (``marlinkit.marlin.negotiation``). Algorithm 1 only sees
this interface, so swapping the planner for an LLM changes no training code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from marlinkit.envs.corridor.layouts import Layout


@dataclass
class Plan:
    """A joint action sequence for both robots and what it achieved when simulated."""

    actions: np.ndarray  # int64[T, 2], corridor action ids, T <= EPISODE_STEPS
    performance: float  # episode performance of the plan played from its start positions
    source: str  # name of the plan source, e.g. "exact-joint-planner" or "llm:smollm2"
    transcript: list[dict[str, Any]] = field(default_factory=list)  # messages exchanged, if any
    stats: dict[str, Any] = field(default_factory=dict)  # counts: messages, tokens, seconds, ...


class PlanSource(Protocol):
    """Anything that can plan both robots' moves from given positions."""

    name: str

    def make_plan(self, layout: Layout, positions: np.ndarray, steps_left: int, seed: int | None = None) -> Plan:
        """Plan from ``positions`` (int[2, 2]) for at most ``steps_left`` steps."""
        ...


def plan_key(layout: Layout, positions: np.ndarray) -> tuple:
    """Cache key of a plan: the layout and both robots' positions and goals, as in the authors' code."""
    return (layout.name, tuple(map(int, np.asarray(positions).ravel())),
            tuple(map(int, np.asarray(layout.goals).ravel())))
