"""MARLIN's scalability scenario (paper Fig. 6): many robots, one exit, pairwise negotiation in corridors.

One agent starts on each of ``n_agents`` grey start cells and walks randomly until it reaches the
green exit, where it leaves. Corridors are one cell wide with no alternative route: two agents in
the same corridor heading to opposite ends cannot pass each other. Such a pair is a *conflict*:
its local situation becomes a 2-robot corridor ``Layout`` (the corridor, both mouths and the
cells next to the mouths, where one robot can step aside) that any MARLIN ``PlanSource`` plans
(the LLM negotiation, or the exact joint planner as an upper bound). The pair then follows the
plan while everyone else keeps walking randomly; the plan's cells are reserved, so no other agent
steps into them and the pair moves exactly as the plan was simulated.

=================  ==========================================================================
map                ``CROWD_MAP`` (ours; the paper only shows a picture): 12 x 12, 12 starts,
                   one exit, five 1-wide corridors, each a bridge between two areas
state              ``CrowdState``: positions, inside or not, heading in a corridor, cooldown
moves              robots move in index order, one cell or none; a move into a wall, the grid
                   edge, another robot or a reserved cell is blocked (the robot stays)
heading            the corridor end opposite the one an agent entered by: "getting through"
negotiation goal   each robot of the pair: the mouth cell at its heading end (the two swap)
=================  ==========================================================================

Deviations from the paper: the random walk may be biased towards the exit (``exit_bias``; 0 is
the paper's pure random walk), and a pair whose negotiation did not get it through is not paired
again for ``cooldown`` steps (otherwise it would be re-negotiated at every step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Grid, Layout, read_ascii_grid, validate

WALL, FREE, START, EXIT, CORRIDOR = "#", ".", "S", "E", "c"
MOVES = core.ACTION_DELTAS[1:]  # the four moves, without WAIT

#: The Fig. 6 map (ours): four rooms and a hall joined by 1-wide corridors ``c``, starts ``S``, exit ``E``.
CROWD_MAP = """
############
#S.S#..#S.S#
#...#..#...#
#S.S#..#S.S#
##c##..##c##
##c##..##c##
#..........#
#..........#
##c###c##c##
##c###c##c##
#S.S##c#S.S#
######E#####
"""


@dataclass(frozen=True)
class CrowdMap(Grid):
    """The many-agent map: free cells, start cells, the exit and the corridors (each an ordered path)."""

    name: str
    valid: np.ndarray = field(repr=False)  # bool[W, H]
    starts: tuple[tuple[int, int], ...]  # in reading order (top row first, then west to east)
    exit: tuple[int, int]
    corridors: tuple[tuple[tuple[int, int], ...], ...]  # cells from end 0 to end 1
    mouths: tuple[tuple[tuple[int, int], tuple[int, int]], ...]  # per corridor: the free cell beyond end 0 and end 1
    corridor_id: np.ndarray = field(repr=False)  # int64[W, H], -1 outside corridors
    exit_distance: np.ndarray = field(repr=False)  # int64[W, H], moves to the exit (-1 for walls)


def _neighbours(valid: np.ndarray, cell: tuple[int, int]) -> list[tuple[int, int]]:
    x, y = cell
    return [(x + dx, y + dy) for dx, dy in MOVES.tolist()
            if 0 <= x + dx < valid.shape[0] and 0 <= y + dy < valid.shape[1] and valid[x + dx, y + dy]]


def _distances(valid: np.ndarray, source: tuple[int, int], blocked=frozenset()) -> np.ndarray:
    """Moves from every cell to ``source`` avoiding ``blocked`` cells (breadth-first); -1 where unreachable."""
    dist = np.full(valid.shape, -1, dtype=np.int64)
    dist[source] = 0
    frontier = [source]
    while frontier:
        nxt = []
        for cell in frontier:
            for n in _neighbours(valid, cell):
                if dist[n] < 0 and n not in blocked:
                    dist[n] = dist[cell] + 1
                    nxt.append(n)
        frontier = nxt
    return dist


def _trace_corridor(valid: np.ndarray, is_corridor: np.ndarray, first: tuple[int, int]) -> tuple[list, list]:
    """The corridor component holding ``first``, ordered end to end, and its free non-corridor neighbours."""
    component, stack = {first}, [first]
    while stack:
        for n in _neighbours(valid, stack.pop()):
            if is_corridor[n] and n not in component:
                component.add(n)
                stack.append(n)
    inner = {c: [n for n in _neighbours(valid, c) if n in component] for c in component}
    if any(len(v) > 2 for v in inner.values()):
        raise ValueError(f"corridor at {first} branches; corridors must be 1-wide paths")
    ends = sorted(c for c, v in inner.items() if len(v) <= 1)
    path, previous = [ends[0]], None
    while len(path) < len(component):
        step = next(n for n in inner[path[-1]] if n != previous)
        previous = path[-1]
        path.append(step)
    outside = [[n for n in _neighbours(valid, end) if not is_corridor[n]] for end in (path[0], path[-1])]
    if len(path) == 1:  # a 1-cell corridor: its two outside neighbours are the two mouths
        outside = [outside[0][:1], outside[0][1:]]
    inner_cells = [n for c in path[1:-1] for n in _neighbours(valid, c) if not is_corridor[n]]
    if inner_cells or any(len(o) != 1 for o in outside):
        raise ValueError(f"corridor {path} must open to exactly one free cell at each end and nowhere else")
    return path, [outside[0][0], outside[1][0]]


def crowd_map_from_ascii(text: str = CROWD_MAP, name: str = "fig6") -> CrowdMap:
    """Read a many-agent map (``#`` wall, ``.`` free, ``S`` start, ``E`` exit, ``c`` corridor) and check it.

    Every corridor must be a 1-wide path opening to one free cell at each end and be a bridge (no
    alternative route), and every start must reach the exit.
    """
    chars = read_ascii_grid(text, WALL + FREE + START + EXIT + CORRIDOR)
    valid, is_corridor = chars != WALL, chars == CORRIDOR
    reading = sorted((tuple(map(int, c)) for c in np.argwhere(chars == START)), key=lambda c: (-c[1], c[0]))
    exits = [tuple(map(int, c)) for c in np.argwhere(chars == EXIT)]
    if len(exits) != 1:
        raise ValueError(f"the map needs exactly one exit {EXIT!r}, found {len(exits)}")
    if not reading:
        raise ValueError(f"the map has no start cell {START!r}")
    corridors, mouths = [], []
    corridor_id = np.full(valid.shape, -1, dtype=np.int64)
    for cell in sorted(tuple(map(int, c)) for c in np.argwhere(is_corridor)):
        if corridor_id[cell] >= 0:
            continue
        path, ends = _trace_corridor(valid, is_corridor, cell)
        if _distances(valid, ends[0], blocked=frozenset(path))[ends[1]] >= 0:
            raise ValueError(f"corridor {path} has an alternative route between {ends[0]} and {ends[1]}")
        for c in path:
            corridor_id[c] = len(corridors)
        corridors.append(tuple(path))
        mouths.append(tuple(ends))
    exit_distance = _distances(valid, exits[0])
    unreachable = [s for s in reading if exit_distance[s] < 0]
    if unreachable:
        raise ValueError(f"start cell(s) {unreachable} cannot reach the exit {exits[0]}")
    return CrowdMap(name, valid, tuple(reading), exits[0], tuple(corridors), tuple(mouths), corridor_id, exit_distance)


# ----------------------------------------------------------------------------- dynamics


class CrowdState(NamedTuple):
    """State of one map with ``N`` agents."""

    pos: np.ndarray  # int64[N, 2]; an agent that left keeps its last cell (the exit) but is not inside
    inside: np.ndarray  # bool[N], still in the map
    heading: np.ndarray  # int64[N], corridor end (0 or 1) the agent is heading to; -1 outside corridors
    cooldown: np.ndarray  # int64[N], steps until the agent may be paired for a negotiation again
    t: int  # steps taken


def reset(world: CrowdMap, n_agents: int, rng: np.random.Generator) -> CrowdState:
    """``n_agents`` agents on distinct start cells drawn with ``rng`` (all of them when ``n_agents`` equals the
    starts)."""
    if not 1 <= n_agents <= len(world.starts):
        raise ValueError(f"n_agents must be in 1..{len(world.starts)} (the map's start cells), got {n_agents}")
    chosen = np.sort(rng.choice(len(world.starts), size=n_agents, replace=False))
    pos = np.array([world.starts[i] for i in chosen], dtype=np.int64)
    return CrowdState(pos, np.ones(n_agents, bool), np.full(n_agents, -1, np.int64), np.zeros(n_agents, np.int64), 0)


def random_actions(world: CrowdMap, state: CrowdState, rng: np.random.Generator, exit_bias: float = 0.0) -> np.ndarray:
    """One move per agent, int64[N] corridor action ids 1-4: uniform, or with probability ``exit_bias`` a step towards
    the exit."""
    n = len(state.pos)
    actions = rng.integers(1, core.N_ACTIONS, size=n)
    greedy = rng.random(n) < exit_bias
    for i in np.flatnonzero(greedy & state.inside):
        x, y = state.pos[i]
        closer = [a for a, (dx, dy) in enumerate(MOVES.tolist(), start=1)
                  if world.is_free(x + dx, y + dy) and world.exit_distance[x + dx, y + dy] < world.exit_distance[x, y]]
        actions[i] = closer[0]
    return actions


def step(world: CrowdMap, state: CrowdState, actions: np.ndarray, planned: np.ndarray,
         reserved: np.ndarray) -> CrowdState:
    """Advance one step. ``planned`` int64[N, 2] is the next cell of agents following a plan (-1 for the others);
    the others take ``actions`` but may not enter ``reserved`` bool[W, H] cells. Agents on the exit leave."""
    pos, old = state.pos.copy(), state.pos
    occupied = {tuple(p) for p in pos[state.inside].tolist()}
    for i in np.flatnonzero(state.inside):  # index order, like the corridor core's robot order
        here = tuple(pos[i].tolist())
        if planned[i, 0] >= 0:
            target = tuple(planned[i].tolist())
        else:
            tx, ty = (pos[i] + core.ACTION_DELTAS[actions[i]]).tolist()
            free = world.is_free(tx, ty) and not reserved[tx, ty]
            target = (tx, ty) if free and (tx, ty) not in occupied else here
        occupied.discard(here)
        occupied.add(target)
        pos[i] = target
    inside = state.inside & ~((pos[:, 0] == world.exit[0]) & (pos[:, 1] == world.exit[1]))
    heading = state.heading.copy()
    new_id, old_id = world.corridor_id[pos[:, 0], pos[:, 1]], world.corridor_id[old[:, 0], old[:, 1]]
    for i in np.flatnonzero(new_id != old_id):
        k = int(new_id[i])
        # entering by the mouth of end 0 heads to end 1 and vice versa
        heading[i] = -1 if k < 0 else int(tuple(old[i].tolist()) == world.mouths[k][0])
    heading[~inside] = -1
    return CrowdState(pos, inside, heading, np.maximum(state.cooldown - 1, 0), state.t + 1)


def find_conflicts(world: CrowdMap, state: CrowdState, eligible: np.ndarray) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` of eligible agents in one corridor facing each other (the one behind the other heads
    towards it); per corridor the nearest facing pair, pairs disjoint, sorted."""
    pairs = []
    for k, path in enumerate(world.corridors):
        order = {cell: n for n, cell in enumerate(path)}
        here = [(order[tuple(state.pos[i].tolist())], int(i)) for i in np.flatnonzero(state.inside & eligible)
                if world.corridor_id[tuple(state.pos[i].tolist())] == k]
        here.sort()
        for (a, i), (b, j) in zip(here, here[1:]):
            if state.heading[i] == 1 and state.heading[j] == 0:
                pairs.append((min(i, j), max(i, j)))
                break
    return sorted(pairs)


# ----------------------------------------------------------------------------- the pair's corridor problem


@dataclass(frozen=True)
class PairProblem:
    """A conflict as a 2-robot corridor: robot 0 is agent ``agents[0]``; local cell + ``offset`` = map cell."""

    agents: tuple[int, int]
    corridor: int
    layout: Layout
    offset: tuple[int, int]

    def cells(self) -> list[tuple[int, int]]:
        """The map cells of the local corridor (what the pair reserves)."""
        return [(x + self.offset[0], y + self.offset[1]) for x, y in self.layout.cells()]


def pair_problem(world: CrowdMap, state: CrowdState, pair: tuple[int, int], taken=frozenset()) -> PairProblem | None:
    """The local 2-robot layout of a conflict: the corridor, its two mouths and the free cells next to the
    mouths, minus cells held by other agents or ``taken`` (reserved); goals: each robot's heading mouth.

    None when the pair cannot be planned now (another agent stands where the pair needs to go).
    """
    i, j = pair
    k = int(world.corridor_id[tuple(state.pos[i].tolist())])
    mouths = world.mouths[k]
    cells = set(world.corridors[k]) | set(mouths)
    for mouth in mouths:
        cells.update(n for n in _neighbours(world.valid, mouth) if world.corridor_id[n] < 0)
    others = {tuple(p) for a, p in enumerate(state.pos.tolist()) if state.inside[a] and a not in pair}
    cells -= others | set(taken)
    cells.discard(world.exit)  # an agent there has left: the exit is never a waiting cell
    xs, ys = zip(*cells)
    x0, y0 = min(xs), min(ys)
    valid = np.zeros((max(xs) - x0 + 1, max(ys) - y0 + 1), dtype=bool)
    for x, y in cells:
        valid[x - x0, y - y0] = True
    local = lambda cell: (int(cell[0]) - x0, int(cell[1]) - y0)  # noqa: E731
    starts = (local(state.pos[i]), local(state.pos[j]))
    goals = (local(mouths[state.heading[i]]), local(mouths[state.heading[j]]))
    try:
        layout = validate(Layout(f"crowd_corridor_{k}", valid, starts, goals, f"corridor {k} of the Fig. 6 map"))
    except ValueError:
        return None
    return PairProblem((i, j), k, layout, (x0, y0))


def plan_cells(problem: PairProblem, actions: np.ndarray) -> np.ndarray:
    """Map cells of both robots after each move of a joint plan, simulated with the corridor core: int64[T, 2, 2]."""
    arrays = core.layout_arrays(problem.layout)
    state, cells = core.reset(arrays, 1), []
    for joint in np.asarray(actions, dtype=np.int64).reshape(-1, core.N_AGENTS):
        state = core.step(arrays, state, joint[None]).state
        cells.append(state.pos[0] + np.asarray(problem.offset))
    return np.asarray(cells, dtype=np.int64).reshape(-1, core.N_AGENTS, 2)


# ----------------------------------------------------------------------------- an episode


@dataclass(frozen=True)
class EpisodeConfig:
    """Settings of one Fig. 6 episode."""

    max_steps: int = 300  # the episode is cut after this many steps; agents still inside are counted
    max_moves: int = core.EPISODE_STEPS  # moves one negotiated plan may take at most
    exit_bias: float = 0.0  # probability of a step towards the exit instead of a random one (0: the paper)
    cooldown: int = 5  # steps before a pair that did not get through may be paired again
    max_negotiations: int = 0  # negotiations per episode at most (0: no limit); later conflicts are left to the walk

    def __post_init__(self):
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if not 1 <= self.max_moves <= core.EPISODE_STEPS:
            raise ValueError(f"max_moves must be in 1..{core.EPISODE_STEPS}, got {self.max_moves}")
        if not 0.0 <= self.exit_bias <= 1.0:
            raise ValueError(f"exit_bias must be in [0, 1], got {self.exit_bias}")
        if self.cooldown < 0 or self.max_negotiations < 0:
            raise ValueError(f"cooldown and max_negotiations must be >= 0, got {self.cooldown}, "
                             f"{self.max_negotiations}")


COUNTS = ("conflicts", "negotiations", "resolved", "deferred", "plan_moves", "llm_calls", "prompt_tokens",
          "completion_tokens", "fallbacks", "llm_seconds")


def negotiation_seed(seed: int, index: int) -> int:
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0] % 2**31)


def _negotiate(world: CrowdMap, state: CrowdState, pairs, facing: set, active: list, source, seed: int,
               config: EpisodeConfig, counts: dict) -> None:
    """Count the facing ``pairs`` met this step and negotiate a plan for each that can be planned (appended to
    ``active`` as ``[problem, cells, next move]``); ``facing`` holds the pairs already facing at the previous step."""
    for pair in pairs:
        met = pair not in facing
        counts["conflicts"] += met
        if config.max_negotiations and counts["negotiations"] >= config.max_negotiations:
            continue
        taken = {cell for problem, _, _ in active for cell in problem.cells()}
        problem = pair_problem(world, state, pair, taken)
        if problem is None:
            counts["deferred"] += met
            continue
        plan = source.make_plan(problem.layout, np.asarray(problem.layout.starts), config.max_moves,
                                seed=negotiation_seed(seed, counts["negotiations"]))
        counts["negotiations"] += 1
        counts["plan_moves"] += len(plan.actions)
        for key in COUNTS[5:]:
            counts[key] += plan.stats.get(key, 0)
        active.append([problem, plan_cells(problem, plan.actions), 0])


def _planned_moves(world: CrowdMap, n_agents: int, active: list) -> tuple[np.ndarray, np.ndarray]:
    """The cells the active plans move their agents to this step (-1: no plan) and the cells they reserve."""
    planned = np.full((n_agents, 2), -1, dtype=np.int64)
    reserved = np.zeros(world.valid.shape, dtype=bool)
    for problem, cells, move in active:
        if move < len(cells):
            planned[list(problem.agents)] = cells[move]
        for cell in problem.cells():
            reserved[cell] = True
    return planned, reserved


def _advance_plans(state: CrowdState, active: list, config: EpisodeConfig, counts: dict) -> tuple[CrowdState, list]:
    """Move every active plan one step on; a finished plan counts as resolved when its agents reached their goals,
    else its agents cool down. The state with the new cooldowns and the plans still running."""
    cooldown, still = state.cooldown.copy(), []
    for entry in active:
        problem, cells, move = entry
        if move + 1 < len(cells):
            entry[2] += 1
            still.append(entry)
            continue
        goals = np.asarray(problem.layout.goals) + np.asarray(problem.offset)
        if np.array_equal(state.pos[list(problem.agents)], goals):
            counts["resolved"] += 1
        else:
            cooldown[list(problem.agents)] = config.cooldown
    return state._replace(cooldown=cooldown), still


def run_episode(world: CrowdMap, n_agents: int, source, seed: int, config: EpisodeConfig = EpisodeConfig(),
                state: CrowdState | None = None) -> dict:
    """Random walks with pairwise negotiation until every agent has left or ``max_steps``; the episode's counts.

    ``source`` is any ``PlanSource``; ``state`` replaces the seeded start (tests build deadlocks with it).
    ``conflicts`` counts facing pairs as they meet (a pair facing over several steps counts once), ``deferred``
    those that could not be planned when they met (another agent in the way), ``resolved`` negotiated pairs
    that got past each other.
    """
    rng = np.random.default_rng(seed)
    state = reset(world, n_agents, rng) if state is None else state
    n_agents = len(state.pos)
    counts = dict.fromkeys(COUNTS, 0)
    counts["llm_seconds"] = 0.0
    active: list[list] = []  # [problem, cells int[T, 2, 2], next move]
    facing: set[tuple[int, int]] = set()  # pairs found facing at the previous step
    while state.t < config.max_steps and state.inside.any():
        busy = np.zeros(n_agents, bool)
        for problem, _, _ in active:
            busy[list(problem.agents)] = True
        pairs = find_conflicts(world, state, ~busy & (state.cooldown == 0))
        _negotiate(world, state, pairs, facing, active, source, seed, config, counts)
        facing = set(pairs)
        planned, reserved = _planned_moves(world, n_agents, active)
        state = step(world, state, random_actions(world, state, rng, config.exit_bias), planned, reserved)
        state, active = _advance_plans(state, active, config, counts)
    counts.update(steps=state.t, agents_left=int((~state.inside).sum()), agents_inside=int(state.inside.sum()))
    return counts
