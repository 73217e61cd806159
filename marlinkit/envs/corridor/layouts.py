"""The five MARLIN corridor layouts (paper Fig. 1) and user layouts from ASCII maps.

Coordinates are ``(x, y)`` with ``y`` growing north (FORWARD = y+1). The paper's grids are
3 wide (x 0-2) and 8 tall (y 0-7); the valid cells below are read from the authors' public
code (see the documentation's "Sources and measured facts"). Both robots start at the corridor ends and swap places.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

WIDTH, HEIGHT = 3, 8
PAPER_STARTS = ((1, 0), (1, 7))
ASCII_WALL, ASCII_FREE = "#", "."
ASCII_STARTS, ASCII_GOALS = ("A", "B"), ("a", "b")


class Grid:
    """Size and free-cell queries of any map holding a ``valid`` bool[width, height] array."""

    valid: np.ndarray

    @property
    def width(self) -> int:
        return int(self.valid.shape[0])

    @property
    def height(self) -> int:
        return int(self.valid.shape[1])

    def is_free(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height and bool(self.valid[x, y])


@dataclass(frozen=True)
class Layout(Grid):
    """A corridor world: which cells are free, where each robot starts and where it must go."""

    name: str
    valid: np.ndarray = field(repr=False)  # bool[width, height], indexed valid[x, y]
    starts: tuple[tuple[int, int], tuple[int, int]]
    goals: tuple[tuple[int, int], tuple[int, int]]
    title: str = ""

    def cells(self) -> list[tuple[int, int]]:
        """Free cells, sorted by (x, y)."""
        return [(int(x), int(y)) for x, y in np.argwhere(self.valid)]


def get_layout(name: str | Layout) -> Layout:
    """A paper layout by name (or a Layout passed through)."""
    if isinstance(name, Layout):
        return name
    if name not in LAYOUTS:
        raise ValueError(f"unknown corridor layout {name!r}; choose one of {', '.join(LAYOUT_NAMES)}")
    return LAYOUTS[name]


def shortest_path_length(layout: Layout, start: tuple[int, int], goal: tuple[int, int]) -> int | None:
    """Moves from ``start`` to ``goal`` through free cells, ignoring the other robot; None if unreachable."""
    seen = {tuple(start): 0}
    queue = deque([tuple(start)])
    while queue:
        x, y = queue.popleft()
        if (x, y) == tuple(goal):
            return seen[(x, y)]
        for nx, ny in ((x, y + 1), (x, y - 1), (x - 1, y), (x + 1, y)):
            if layout.is_free(nx, ny) and (nx, ny) not in seen:
                seen[(nx, ny)] = seen[(x, y)] + 1
                queue.append((nx, ny))
    return None


def validate(layout: Layout) -> Layout:
    """Reject layouts a robot cannot solve, with a message that says what is wrong."""
    if layout.valid.ndim != 2 or not layout.valid.any():
        raise ValueError(f"layout {layout.name!r} has no free cells")
    for role, points in (("start", layout.starts), ("goal", layout.goals)):
        if len(points) != 2:
            raise ValueError(f"layout {layout.name!r} needs exactly 2 {role}s, got {len(points)}")
        for agent, (x, y) in enumerate(points):
            if not layout.is_free(x, y):
                raise ValueError(f"layout {layout.name!r}: {role} of robot {agent} at {(x, y)} is not a free cell")
    if tuple(layout.starts[0]) == tuple(layout.starts[1]):
        raise ValueError(f"layout {layout.name!r}: both robots start on {tuple(layout.starts[0])}")
    if tuple(layout.goals[0]) == tuple(layout.goals[1]):
        raise ValueError(f"layout {layout.name!r}: both robots share the goal {tuple(layout.goals[0])}")
    for agent in range(2):
        start, goal = layout.starts[agent], layout.goals[agent]
        if tuple(start) == tuple(goal):
            raise ValueError(f"layout {layout.name!r}: robot {agent} starts on its goal {tuple(goal)}")
        if shortest_path_length(layout, start, goal) is None:
            raise ValueError(f"layout {layout.name!r}: no path from robot {agent}'s start {tuple(start)} to its goal "
                             f"{tuple(goal)}")
    return layout


def _from_cells(name: str, title: str, cells: list[tuple[int, int]]) -> Layout:
    valid = np.zeros((WIDTH, HEIGHT), dtype=bool)
    for x, y in cells:
        valid[x, y] = True
    return validate(Layout(name, valid, PAPER_STARTS, PAPER_STARTS[::-1], title))


_CENTRE = [(1, y) for y in range(HEIGHT)]

LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        _from_cells("single_slot", "Single Slot Corridor", _CENTRE + [(0, 3)]),
        _from_cells("symmetrical_two_slot", "Symmetrical Two Slot Corridor", _CENTRE + [(0, 3), (2, 3)]),
        _from_cells("asymmetrical_two_slot", "Asymmetrical Two Slot Corridor", _CENTRE + [(0, 3), (2, 4)]),
        _from_cells(
            "two_path",
            "Two Path Corridor",
            [(1, 0), (1, 1), (1, 6), (1, 7)] + [(x, y) for x in (0, 2) for y in range(1, 7)],
        ),
        _from_cells(
            "maze_like",
            "Maze-Like Corridor",
            [(1, 0), (2, 0), (2, 1), (0, 2), (1, 2), (2, 2), (0, 3), (2, 3), (0, 4), (2, 4),
             (2, 5), (2, 6), (1, 6), (1, 7)],
        ),
    )
}
LAYOUT_NAMES = tuple(LAYOUTS)


def read_ascii_grid(text: str, allowed: str) -> np.ndarray:
    """The characters of an ASCII map as ``str[width, height]`` indexed ``[x, y]``; the top line is the largest y.

    Shared by the corridor layouts and the many-agent map of ``marlinkit.envs.crowd``.
    """
    rows = [line.strip() for line in text.strip("\n").splitlines() if line.strip()]
    if not rows:
        raise ValueError("empty corridor map")
    widths = {len(row) for row in rows}
    if len(widths) != 1:
        raise ValueError(f"corridor map rows have different lengths {sorted(widths)}")
    for row_index, row in enumerate(rows):
        for x, char in enumerate(row):
            if char not in allowed:
                raise ValueError(f"unknown character {char!r} at row {row_index + 1}, column {x + 1}; use any of "
                                 f"{''.join(sorted(set(allowed)))}")
    return np.array([list(row) for row in reversed(rows)], dtype="<U1").T


def layout_from_ascii(text: str, name: str = "custom", title: str = "") -> Layout:
    """Build a layout from an ASCII map; the top line is the northernmost row (largest y).

    ``#`` wall, ``.`` free, ``A``/``B`` the starts of robots 0/1, ``a``/``b`` their goals.
    Without goal marks the robots swap places, as in the paper.
    """
    chars = read_ascii_grid(text, ASCII_WALL + ASCII_FREE + "".join(ASCII_STARTS + ASCII_GOALS))
    valid = chars != ASCII_WALL
    marks: dict[str, tuple[int, int]] = {}
    for y in reversed(range(chars.shape[1])):  # reading order: top row first
        for x in range(chars.shape[0]):
            char = str(chars[x, y])
            if char in marks:
                raise ValueError(f"mark {char!r} appears more than once (first at {marks[char]}, again at {(x, y)})")
            if char not in (ASCII_WALL, ASCII_FREE):
                marks[char] = (x, y)
    missing = [c for c in ASCII_STARTS if c not in marks]
    if missing:
        raise ValueError(f"corridor map lacks start mark(s) {missing}")
    starts = (marks["A"], marks["B"])
    given_goals = [c for c in ASCII_GOALS if c in marks]
    if len(given_goals) == 1:
        raise ValueError("give both goal marks 'a' and 'b', or neither (the robots then swap places)")
    goals = (marks["a"], marks["b"]) if given_goals else (starts[1], starts[0])
    return validate(Layout(name, valid, starts, goals, title or name))


def to_ascii(layout: Layout, positions=None) -> str:
    """Render a layout (and optionally robot positions) in the format ``layout_from_ascii`` reads.

    Robots at ``positions`` are drawn as ``0``/``1``, the numbers of ``robot_0``/``robot_1`` (the env's ``ansi``
    render).
    """
    grid = [[ASCII_FREE if layout.valid[x, y] else ASCII_WALL for x in range(layout.width)]
            for y in range(layout.height)]
    for agent in range(2):
        gx, gy = layout.goals[agent]
        grid[gy][gx] = ASCII_GOALS[agent]
    points = layout.starts if positions is None else positions
    symbols = ASCII_STARTS if positions is None else ("0", "1")
    for agent in range(2):
        x, y = (int(v) for v in points[agent])
        grid[y][x] = symbols[agent]
    return "\n".join("".join(row) for row in reversed(grid))
