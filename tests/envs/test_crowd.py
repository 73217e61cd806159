"""The crowd world of Fig. 6: map checks, conflicts, corridors and pair layouts (marlinkit.envs.crowd)."""


from __future__ import annotations

import numpy as np
import pytest

from marlinkit.envs import crowd
from marlinkit.envs.corridor.layouts import to_ascii

WORLD = crowd.crowd_map_from_ascii()
BOTTOM_LEFT = 0  # corridor (2, 2)-(2, 3), mouths (2, 1) below and (2, 4) above


def make_state(cells, headings, inside=None) -> crowd.CrowdState:
    n = len(cells)
    return crowd.CrowdState(np.array(cells, dtype=np.int64), np.ones(n, bool) if inside is None else np.array(inside),
                            np.array(headings, dtype=np.int64), np.zeros(n, np.int64), 0)


def test_the_map_has_twelve_starts_one_exit_and_five_bridge_corridors():
    assert len(WORLD.starts) == 12 and WORLD.exit == (6, 0)
    assert WORLD.corridors[BOTTOM_LEFT] == ((2, 2), (2, 3)) and WORLD.mouths[BOTTOM_LEFT] == ((2, 1), (2, 4))
    assert len(WORLD.corridors) == 5 and all(len(c) >= 2 for c in WORLD.corridors)
    assert min(WORLD.exit_distance[s] for s in WORLD.starts) > 0


@pytest.mark.parametrize(("text", "message"), [
    ("######\n#SE.E#\n######\n", "exactly one exit"),
    ("#######\n#S.c.E#\n#.###.#\n#.....#\n#######\n", "alternative route"),
    ("######\n#S.cE#\n#....#\n######\n", "exactly one free cell at each end"),
    ("#####\n#S#E#\n#####\n", "cannot reach the exit"),
    ("######\n#ScE.#\n##c###\n######\n", "branches|exactly one free cell"),
])
def test_bad_maps_are_rejected(text, message):
    with pytest.raises(ValueError, match=message):
        crowd.crowd_map_from_ascii(text)


def test_facing_agents_in_one_corridor_conflict_and_others_do_not():
    up, down = 1, 0  # headings: end 1 is (2, 4), north
    facing = make_state([(2, 2), (2, 3)], [up, down])
    assert crowd.find_conflicts(WORLD, facing, np.ones(2, bool)) == [(0, 1)]
    assert crowd.find_conflicts(WORLD, facing, np.array([True, False])) == []  # one of them is busy
    assert crowd.find_conflicts(WORLD, make_state([(2, 2), (2, 3)], [up, up]), np.ones(2, bool)) == []  # following
    assert crowd.find_conflicts(WORLD, make_state([(2, 2), (2, 3)], [down, up]), np.ones(2, bool)) == []  # moving apart
    # two corridors
    assert crowd.find_conflicts(WORLD, make_state([(2, 2), (9, 3)], [up, down]), np.ones(2, bool)) == []
    gone = make_state([(2, 2), (2, 3)], [up, down], inside=[True, False])
    assert crowd.find_conflicts(WORLD, gone, np.ones(2, bool)) == []


def test_entering_a_corridor_sets_the_heading_and_the_exit_removes_agents():
    state = make_state([(2, 1), (6, 1)], [-1, 0])  # agent 0 below the corridor, agent 1 next to the exit
    nothing = np.full((2, 2), -1, dtype=np.int64)
    after = crowd.step(WORLD, state, np.array([1, 2]), nothing, np.zeros(WORLD.valid.shape, bool))
    assert after.pos[0].tolist() == [2, 2] and after.heading[0] == 1  # entered by end 0, heads to end 1
    assert not after.inside[1] and after.inside[0] and after.t == 1
    reserved = np.zeros(WORLD.valid.shape, bool)
    reserved[2, 2] = True
    blocked = crowd.step(WORLD, state, np.array([1, 0]), nothing, reserved)
    assert blocked.pos[0].tolist() == [2, 1]  # a reserved cell blocks like a wall


def test_the_pair_layout_is_the_corridor_its_mouths_and_their_neighbours():
    state = make_state([(2, 2), (2, 3), (3, 4)], [1, 0, -1])
    problem = crowd.pair_problem(WORLD, state, (0, 1))
    expected = {(2, 2), (2, 3), (2, 1), (2, 4), (1, 1), (3, 1), (1, 4), (2, 5)}  # (3, 4) holds agent 2
    assert set(problem.cells()) == expected
    assert problem.offset == (1, 1)
    to_map = lambda c: (c[0] + 1, c[1] + 1)  # noqa: E731
    assert [to_map(s) for s in problem.layout.starts] == [(2, 2), (2, 3)]
    assert [to_map(g) for g in problem.layout.goals] == [(2, 4), (2, 1)]  # each robot gets through
    assert to_ascii(problem.layout).splitlines() == ["#.#", ".a#", "#B#", "#A#", ".b."]
    blocked_goal = make_state([(2, 2), (2, 3), (2, 4)], [1, 0, -1])
    assert crowd.pair_problem(WORLD, blocked_goal, (0, 1)) is None
