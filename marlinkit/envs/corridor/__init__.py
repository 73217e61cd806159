"""MARLIN's corridor worlds: layouts, the batched core, and the PettingZoo env on top."""

from marlinkit.envs.corridor.core import (
    ACTION_NAMES,
    BLOCK_PENALTY,
    EPISODE_STEPS,
    LLM_ACTION_NAMES,
    N_ACTIONS,
    N_AGENTS,
    CorridorState,
    LayoutArrays,
    layout_arrays,
)
from marlinkit.envs.corridor.env import AGENTS, CorridorParallelEnv
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, LAYOUTS, Layout, get_layout, layout_from_ascii, to_ascii

__all__ = [
    "ACTION_NAMES", "BLOCK_PENALTY", "EPISODE_STEPS", "LLM_ACTION_NAMES", "N_ACTIONS", "N_AGENTS",
    "CorridorState", "LayoutArrays", "layout_arrays", "LAYOUT_NAMES", "LAYOUTS", "Layout",
    "get_layout", "layout_from_ascii", "to_ascii", "AGENTS", "CorridorParallelEnv",
]
