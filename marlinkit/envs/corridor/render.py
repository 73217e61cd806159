"""Matplotlib drawings of corridor layouts (paper Fig. 1) and of robot trajectories.

Kept apart from the dynamics so the core and the env import no plotting library.
Coordinates match the env: x to the east, y to the north, one unit per cell.
"""

from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Patch, Rectangle

from marlinkit.envs.corridor.layouts import Layout, get_layout

#: Paper Fig. 1 panel order: (a) Asymmetrical Two Slot, (b) Symmetrical Two Slot, (c) Single Slot,
#: (d) Two Path, (e) Maze Like (the figure's caption).
FIGURE1_ORDER = ("asymmetrical_two_slot", "symmetrical_two_slot", "single_slot", "two_path", "maze_like")
ROBOT_COLORS = ("#1f77b4", "#ff7f0e")
WALL_COLOR, FREE_COLOR, GRID_COLOR = "#3a3a3a", "#f4f4f4", "#b0b0b0"
_PATH_OFFSET = (-0.12, 0.12)  # robots' paths are drawn side by side so both stay visible


def draw_layout(layout: str | Layout, ax: Axes | None = None, trajectory=None, title: str | None = None) -> Axes:
    """Draw walls, free cells, starts (filled discs), goals (dashed squares) and optionally a trajectory.

    ``trajectory`` holds both robots' cells over time, int[T + 1, 2, 2] as (step, robot, (x, y));
    each robot's moves are drawn as arrows and its last cell as a ring.
    """
    layout = get_layout(layout)
    if ax is None:
        ax = Figure(figsize=(1.6, 3.6)).subplots()
    for x in range(layout.width):
        for y in range(layout.height):
            color = FREE_COLOR if layout.valid[x, y] else WALL_COLOR
            ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=color, edgecolor=GRID_COLOR, linewidth=0.8))
    for robot, color in enumerate(ROBOT_COLORS):
        gx, gy = layout.goals[robot]
        ax.add_patch(Rectangle((gx - 0.42, gy - 0.42), 0.84, 0.84, fill=False, edgecolor=color, linewidth=1.6,
                               linestyle="--"))
        sx, sy = layout.starts[robot]
        ax.add_patch(Circle((sx, sy), 0.26, facecolor=color, edgecolor="white", linewidth=0.8, zorder=3))
        ax.text(sx, sy, str(robot), ha="center", va="center", fontsize=8, color="white", fontweight="bold")
    if trajectory is not None:
        _draw_trajectory(ax, np.asarray(trajectory, dtype=float))
    ax.set_xlim(-0.5, layout.width - 0.5)
    ax.set_ylim(-0.5, layout.height - 0.5)
    ax.set_xticks(range(layout.width))
    ax.set_yticks(range(layout.height))
    ax.tick_params(length=0, labelsize=7)
    ax.set_aspect("equal")
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(layout.title if title is None else title, fontsize=9)
    return ax


def _draw_trajectory(ax: Axes, trajectory: np.ndarray) -> None:
    if trajectory.ndim != 3 or trajectory.shape[1:] != (2, 2):
        raise ValueError(f"trajectory must have shape [T + 1, 2 robots, 2 (x, y)], got {trajectory.shape}")
    for robot, color in enumerate(ROBOT_COLORS):
        path = trajectory[:, robot] + _PATH_OFFSET[robot]
        for start, end in zip(path[:-1], path[1:]):
            if np.array_equal(start, end):
                continue  # a WAIT or a blocked move: nothing to draw
            ax.annotate("", xy=end, xytext=start, zorder=4,
                        arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.4, "shrinkA": 0, "shrinkB": 0,
                                    "mutation_scale": 8})
        ax.add_patch(Rectangle(path[-1] - 0.09, 0.18, 0.18, facecolor="white", edgecolor=color, linewidth=1.6,
                               zorder=5))


def legend_handles() -> list:
    """Legend entries shared by every panel."""
    handles = [Patch(facecolor=WALL_COLOR, label="wall"),
               Patch(facecolor=FREE_COLOR, edgecolor=GRID_COLOR, label="free cell")]
    for robot, color in enumerate(ROBOT_COLORS):
        handles.append(Line2D([], [], marker="o", linestyle="", markersize=8, markerfacecolor=color,
                              markeredgecolor="white", label=f"robot {robot} start"))
        handles.append(Patch(fill=False, edgecolor=color, linestyle="--", linewidth=1.6, label=f"robot {robot} goal"))
    return handles


def draw_all_layouts(trajectories: dict | None = None) -> Figure:
    """Paper Fig. 1: the five layouts side by side, panels (a)-(e) in the paper's order.

    ``trajectories`` optionally maps a layout name to a trajectory to overlay on its panel.
    """
    fig = Figure(figsize=(8.0, 4.4))
    axes = fig.subplots(1, len(FIGURE1_ORDER))
    for letter, name, ax in zip("abcde", FIGURE1_ORDER, axes):
        layout = get_layout(name)
        trajectory = (trajectories or {}).get(name)
        short = layout.title.replace(" Corridor", "")
        draw_layout(layout, ax, trajectory, title=textwrap.fill(f"({letter}) {short}", width=16))
    fig.legend(handles=legend_handles(), loc="lower center", ncol=3, fontsize=7, frameon=False,
               bbox_to_anchor=(0.5, 0.035))
    fig.subplots_adjust(bottom=0.17, top=0.9, wspace=0.35)
    return fig


def rgb_array(layout: str | Layout, trajectory=None) -> np.ndarray:
    """A layout (and trajectory) drawn to an RGB image, uint8[H, W, 3], for ``render_mode="rgb_array"``."""
    ax = draw_layout(layout, trajectory=trajectory)
    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()
