"""MARLIN corridor: layouts, dynamics, rewards, batched core vs ParallelEnv, PettingZoo conformance."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.env import CorridorParallelEnv
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES, Layout, get_layout, layout_from_ascii, to_ascii, validate
from marlinkit.envs.corridor.render import draw_all_layouts, rgb_array

WAIT, FORWARD, BACKWARD, LEFT, RIGHT = range(5)

# The authors' rules, written out independently of layouts.py.
_CENTRE = {(1, y) for y in range(8)}
EXPECTED_CELLS = {
    "single_slot": _CENTRE | {(0, 3)},
    "symmetrical_two_slot": _CENTRE | {(0, 3), (2, 3)},
    "asymmetrical_two_slot": _CENTRE | {(0, 3), (2, 4)},
    "two_path": {(1, 0), (1, 1), (1, 6), (1, 7)} | {(x, y) for x in (0, 2) for y in range(1, 7)},
    "maze_like": {(1, 0), (2, 0), (2, 1), (0, 2), (1, 2), (2, 2), (0, 3), (2, 3), (0, 4), (2, 4),
                  (2, 5), (2, 6), (1, 6), (1, 7)},
}

OPEN_3X3 = """
B..
.A.
...
"""


def _state(*cells) -> core.CorridorState:
    """One environment with robot 0 and robot 1 on the given (x, y) cells."""
    return core.CorridorState(np.array([cells], dtype=np.int64), np.zeros(1, dtype=np.int64))


def _step(layout, cells, actions):
    arrays = core.layout_arrays(get_layout(layout))
    result = core.step(arrays, _state(*cells), np.array([actions]))
    return [tuple(map(int, p)) for p in result.state.pos[0]], result.blocked[0].tolist(), result.reward[0]


def _reference_step(layout: Layout, pos, actions):
    """The authors' rules written as plain Python, one robot after the other."""
    deltas = {WAIT: (0, 0), FORWARD: (0, 1), BACKWARD: (0, -1), LEFT: (-1, 0), RIGHT: (1, 0)}
    pos = [tuple(p) for p in pos]
    blocked = [False, False]
    for i in (0, 1):
        dx, dy = deltas[actions[i]]
        target = (pos[i][0] + dx, pos[i][1] + dy)
        if actions[i] == WAIT:
            continue
        if layout.is_free(*target) and target != pos[1 - i]:
            pos[i] = target
        else:
            blocked[i] = True
    progress = []
    for i in (0, 1):
        d = abs(pos[i][0] - layout.goals[i][0]) + abs(pos[i][1] - layout.goals[i][1])
        start_d = abs(layout.starts[i][0] - layout.goals[i][0]) + abs(layout.starts[i][1] - layout.goals[i][1])
        progress.append(max(0.0, 1 - d / start_d))
    rewards = [2 * progress[i] - 0.5 * blocked[i] for i in (0, 1)]
    return pos, blocked, rewards, progress


# --- layouts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_layout_cells_starts_and_goals_match_the_authors_code(name):
    layout = get_layout(name)
    assert (layout.width, layout.height) == (3, 8)
    assert set(layout.cells()) == EXPECTED_CELLS[name]
    assert layout.starts == ((1, 0), (1, 7))
    assert layout.goals == ((1, 7), (1, 0))


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_ascii_round_trip(name):
    layout = get_layout(name)
    text = to_ascii(layout)
    back = layout_from_ascii(text, name=name)
    assert np.array_equal(back.valid, layout.valid)
    assert (back.starts, back.goals) == (layout.starts, layout.goals)
    assert to_ascii(back) == text


def test_ascii_map_reads_top_row_as_north_and_keeps_explicit_goals():
    layout = layout_from_ascii("""
        #b#
        .A.
        #.#
        aB#
    """)
    assert layout.starts == ((1, 2), (1, 0))
    assert layout.goals == ((0, 0), (1, 3))
    assert not layout.valid[0, 3] and layout.valid[0, 2]
    assert layout_from_ascii(to_ascii(layout)).goals == layout.goals
    # Robots drawn at their current cells, as the LLM prompt shows them.
    assert to_ascii(get_layout("single_slot"), [(1, 3), (0, 3)]).splitlines()[4] == "10#"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#A#\n###\n#B#", "no path from robot 0"),
        ("#A#\n#.#\n#A#", "appears more than once"),
        ("#A#\n#x#\n#B#", "unknown character 'x'"),
        ("#A#\n#a#\n#B#", "give both goal marks"),
        ("#A#\n#.#\n#.#", r"lacks start mark\(s\) \['B'\]"),
        ("#A#\n#.\n#B#", "different lengths"),
    ],
)
def test_bad_ascii_maps_are_rejected_with_a_clear_message(text, message):
    with pytest.raises(ValueError, match=message):
        layout_from_ascii(text)


def test_overlapping_starts_and_unknown_layouts_are_rejected():
    valid = get_layout("single_slot").valid
    with pytest.raises(ValueError, match=r"both robots start on \(1, 0\)"):
        validate(Layout("clash", valid, ((1, 0), (1, 0)), ((1, 7), (1, 6))))
    with pytest.raises(ValueError, match="start of robot 1 at \\(0, 0\\) is not a free cell"):
        validate(Layout("in_wall", valid, ((1, 0), (0, 0)), ((1, 7), (1, 6))))
    with pytest.raises(ValueError, match="unknown corridor layout 'nope'; choose one of single_slot"):
        get_layout("nope")


# --- dynamics ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected"),
    [(WAIT, (1, 1)), (FORWARD, (1, 2)), (BACKWARD, (1, 0)), (LEFT, (0, 1)), (RIGHT, (2, 1))],
)
def test_each_action_moves_one_cell(action, expected):
    layout = layout_from_ascii(OPEN_3X3)
    pos, blocked, reward = _step(layout, [(1, 1), (0, 2)], [action, WAIT])
    assert pos == [expected, (0, 2)]
    assert blocked == [False, False]
    # Robot 0's goal is (0, 2), two moves from its start: p = max(0, 1 - d / 2).
    d = abs(expected[0] - 0) + abs(expected[1] - 2)
    assert reward[0] == pytest.approx(2 * max(0.0, 1 - d / 2))


def test_robot_1_may_enter_the_cell_robot_0_just_left():
    pos, blocked, _ = _step("single_slot", [(1, 3), (1, 4)], [BACKWARD, BACKWARD])
    assert pos == [(1, 2), (1, 3)]
    assert blocked == [False, False]


def test_robot_0_cannot_enter_robot_1s_cell_even_if_robot_1_leaves_it():
    pos, blocked, reward = _step("single_slot", [(1, 3), (1, 4)], [FORWARD, FORWARD])
    assert pos == [(1, 3), (1, 5)]
    assert blocked == [True, False]
    assert reward[0] == pytest.approx(2 * 3 / 7 - 0.5)  # d = 4 of D = 7
    assert reward[1] == pytest.approx(2 * 2 / 7)  # robot 1 moved away from its goal (1, 0): d = 5


def test_head_on_moves_block_both_robots():
    pos, blocked, _ = _step("single_slot", [(1, 3), (1, 4)], [FORWARD, BACKWARD])
    assert pos == [(1, 3), (1, 4)]
    assert blocked == [True, True]


@pytest.mark.parametrize(
    ("layout", "cells", "actions"),
    [
        ("single_slot", [(1, 0), (1, 7)], [LEFT, RIGHT]),  # into walls
        ("single_slot", [(1, 0), (1, 7)], [BACKWARD, FORWARD]),  # off the south / north edge
        ("symmetrical_two_slot", [(0, 3), (2, 3)], [LEFT, RIGHT]),  # off the west / east edge
    ],
)
def test_walls_and_grid_edges_block_and_cost_half(layout, cells, actions):
    pos, blocked, reward = _step(layout, cells, actions)
    assert pos == cells
    assert blocked == [True, True]
    p = core.progress(core.layout_arrays(get_layout(layout)), np.array(cells))
    np.testing.assert_allclose(reward, 2 * p - 0.5)


def test_waiting_is_free_and_reward_is_twice_progress():
    pos, blocked, reward = _step("single_slot", [(1, 5), (0, 3)], [WAIT, WAIT])
    assert pos == [(1, 5), (0, 3)] and blocked == [False, False]
    np.testing.assert_allclose(reward, [2 * 5 / 7, 2 * 3 / 7])


def test_progress_and_performance_for_hand_computed_positions():
    arrays = core.layout_arrays(get_layout("single_slot"))
    # Robot 0 two cells short of (1, 7): 5/7; robot 1 in the slot (0, 3), d = 1 + 3 = 4: 3/7.
    np.testing.assert_allclose(core.progress(arrays, np.array([(1, 5), (0, 3)])), [5 / 7, 3 / 7])
    np.testing.assert_allclose(core.performance(arrays, _state((1, 5), (0, 3))), [4 / 7])
    np.testing.assert_allclose(core.performance(arrays, _state((1, 7), (1, 0))), [1.0])
    np.testing.assert_allclose(core.performance(arrays, _state((1, 0), (1, 7))), [0.0])
    # Farther from the goal than at the start: p is clipped at 0, not negative.
    maze = core.layout_arrays(get_layout("maze_like"))
    np.testing.assert_allclose(core.progress(maze, np.array([(2, 0), (1, 6)])), [0.0, 1 / 7])


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_batched_core_follows_the_rules_written_as_plain_python(name):
    layout = get_layout(name)
    arrays = core.layout_arrays(layout)
    rng = np.random.default_rng(7)
    batch = 32
    state = core.reset(arrays, batch)
    for _ in range(core.EPISODE_STEPS):
        actions = rng.integers(0, core.N_ACTIONS, size=(batch, 2))
        result = core.step(arrays, state, actions)
        for b in range(batch):
            pos, blocked, rewards, _ = _reference_step(layout, state.pos[b], actions[b].tolist())
            assert [tuple(p) for p in result.state.pos[b].tolist()] == pos
            assert result.blocked[b].tolist() == blocked
            np.testing.assert_allclose(result.reward[b], rewards)
        state = result.state
    assert result.done.all()


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_parallel_env_and_batched_core_give_identical_trajectories(name):
    arrays = core.layout_arrays(get_layout(name))
    rng = np.random.default_rng(3)
    batch = 6
    actions = rng.integers(0, core.N_ACTIONS, size=(core.EPISODE_STEPS, batch, 2))
    state = core.reset(arrays, batch)
    batched_obs, batched_rewards = [], []
    for t in range(core.EPISODE_STEPS):
        result = core.step(arrays, state, actions[t])
        state = result.state
        batched_obs.append(core.observe(arrays, state))
        batched_rewards.append(result.reward)
    batched_performance = core.performance(arrays, state)
    for b in range(batch):
        env = CorridorParallelEnv(name)
        env.reset(seed=b)
        for t in range(core.EPISODE_STEPS):
            obs, rewards, _, _, infos = env.step({"robot_0": int(actions[t, b, 0]), "robot_1": int(actions[t, b, 1])})
            np.testing.assert_array_equal(np.stack([obs["robot_0"], obs["robot_1"]]), batched_obs[t][b])
            assert [rewards["robot_0"], rewards["robot_1"]] == batched_rewards[t][b].tolist()
        assert infos["robot_0"]["performance"] == batched_performance[b]


# --- the PettingZoo env --------------------------------------------------------------------------


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_parallel_api_conformance(name):
    parallel_api_test(CorridorParallelEnv(name), num_cycles=1000)


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_parallel_seed_determinism(name):
    parallel_seed_test(lambda: CorridorParallelEnv(name))


def test_episode_is_truncated_after_50_steps_with_performance_in_infos():
    env = CorridorParallelEnv("single_slot")
    obs, infos = env.reset(seed=0)
    assert obs["robot_0"].tolist() == [1, 0, 1, 7] and obs["robot_1"].tolist() == [1, 7, 1, 0]
    assert infos["robot_0"] == {"blocked": False, "progress": 0.0}
    assert env.observation_space("robot_0").contains(obs["robot_0"])
    for t in range(1, core.EPISODE_STEPS + 1):
        # Robot 0 walks north and stops under robot 1, which waits: from step 7 on robot 0 is blocked.
        obs, rewards, terminations, truncations, infos = env.step({"robot_0": FORWARD, "robot_1": WAIT})
        assert not any(terminations.values())
        assert all(truncations.values()) == (t == core.EPISODE_STEPS)
        assert ("performance" in infos["robot_0"]) == (t == core.EPISODE_STEPS)
    assert obs["robot_0"].tolist() == [1, 6, 1, 7]
    assert infos["robot_0"]["blocked"] and not infos["robot_1"]["blocked"]
    assert infos["robot_0"]["progress"] == pytest.approx(6 / 7)
    assert rewards["robot_0"] == pytest.approx(2 * 6 / 7 - 0.5)
    assert infos["robot_1"]["performance"] == pytest.approx(3 / 7)
    assert env.agents == []
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({"robot_0": WAIT, "robot_1": WAIT})


def test_env_rejects_bad_actions_and_render_modes():
    env = CorridorParallelEnv("two_path")
    env.reset()
    with pytest.raises(ValueError, match="one action for each"):
        env.step({"robot_0": WAIT})
    with pytest.raises(ValueError, match="integers in 0..4"):
        env.step({"robot_0": 5, "robot_1": WAIT})
    with pytest.raises(ValueError, match="integers in 0..4"):
        env.step({"robot_0": -1, "robot_1": WAIT})
    with pytest.raises(ValueError, match="render_mode 'human' not supported"):
        CorridorParallelEnv("two_path", render_mode="human")


def test_renders_show_the_robots_where_they_are():
    env = CorridorParallelEnv("single_slot", render_mode="ansi")
    env.reset()
    env.step({"robot_0": FORWARD, "robot_1": BACKWARD})
    assert env.render() == "#a#\n#1#\n#.#\n#.#\n..#\n#.#\n#0#\n#b#"  # goals stay marked
    image_env = CorridorParallelEnv("single_slot", render_mode="rgb_array")
    image_env.reset()
    start = image_env.render()
    image_env.step({"robot_0": FORWARD, "robot_1": WAIT})
    moved = image_env.render()
    assert start.dtype == np.uint8 and start.ndim == 3 and start.shape[2] == 3
    assert start.shape == moved.shape and not np.array_equal(start, moved)
    assert np.array_equal(start, rgb_array("single_slot", np.array([[(1, 0), (1, 7)]])))


def test_figure_1_panels_follow_the_papers_order():
    fig = draw_all_layouts()
    titles = [ax.get_title().replace("\n", " ") for ax in fig.axes]
    assert titles == ["(a) Asymmetrical Two Slot", "(b) Symmetrical Two Slot", "(c) Single Slot", "(d) Two Path",
                      "(e) Maze-Like"]
    with pytest.raises(ValueError, match="trajectory must have shape"):
        rgb_array("single_slot", np.zeros((3, 2)))


def test_bench_cli_prints_throughput_keys_as_json(capsys):
    import json

    from marlinkit.__main__ import main

    assert main(["bench", "corridor", "--steps", "60", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rates = [f"batched_b{b}_agent_steps_per_s" for b in (1, 64, 1024)] + ["parallel_env_agent_steps_per_s"]
    assert all(result[key] > 0 for key in rates)
    assert result["target_b1024_agent_steps_per_s"] == 1e6
    assert result["meets_target"] == (result["batched_b1024_agent_steps_per_s"] >= 1e6)
    assert main(["bench", "corridor", "--steps", "0", "--json"]) == 2
    assert "--steps must be positive" in capsys.readouterr().out
