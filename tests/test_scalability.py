"""The Fig. 6 scalability scenario: map, dynamics, conflict detection, pair layouts, episodes and the runner."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marlinkit import paths
from marlinkit.marlin import fig6_scalability
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs import crowd
from marlinkit.envs.corridor.layouts import to_ascii
from marlinkit.envs.corridor.plans import Plan
from marlinkit.marlin.negotiation import Negotiation, NegotiationConfig
from marlinkit.llm.backends.scripted import ScriptedBackend

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
    assert crowd.find_conflicts(WORLD, make_state([(2, 2), (9, 3)], [up, down]), np.ones(2, bool)) == []  # two corridors
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


def test_the_exact_planner_resolves_a_constructed_deadlock_and_everyone_leaves():
    state = make_state([(2, 2), (2, 3), (10, 10)], [1, 0, -1])
    config = crowd.EpisodeConfig(max_steps=200, max_moves=12, exit_bias=1.0)
    counts = crowd.run_episode(WORLD, 3, ExactJointPlanner(), seed=0, config=config, state=state)
    assert counts["negotiations"] == 1 and counts["resolved"] == 1 and counts["plan_moves"] == 7
    assert counts["agents_left"] == 3 and counts["agents_inside"] == 0 and counts["steps"] < 200


def test_a_plan_too_short_to_pass_leaves_the_deadlock_unresolved():
    state = make_state([(2, 2), (2, 3)], [1, 0])
    config = crowd.EpisodeConfig(max_steps=3, max_moves=2, cooldown=10)
    counts = crowd.run_episode(WORLD, 2, ExactJointPlanner(), seed=0, config=config, state=state)
    assert counts["negotiations"] == 1 and counts["resolved"] == 0 and counts["steps"] == 3


class WaitOnce:
    """A plan source whose plan is one joint WAIT: the pair stays facing."""

    name = "wait-once"

    def make_plan(self, layout, positions, steps_left, seed=None):
        return Plan(np.zeros((1, 2), dtype=np.int64), 0.0, self.name)


def test_a_pair_left_facing_counts_as_one_conflict():
    state = make_state([(2, 2), (2, 3)], [1, 0])
    config = crowd.EpisodeConfig(max_steps=2, max_moves=1, cooldown=0, max_negotiations=1)
    counts = crowd.run_episode(WORLD, 2, WaitOnce(), seed=0, config=config, state=state)
    assert counts["negotiations"] == 1 and counts["resolved"] == 0
    assert counts["conflicts"] == 1  # found again at the second step (over the cap), but it is the same meeting


def test_llm_negotiation_counts_calls_and_tokens():
    source = Negotiation(ScriptedBackend(), NegotiationConfig(max_moves=3, max_rounds=1))
    state = make_state([(2, 2), (2, 3)], [1, 0])
    counts = crowd.run_episode(WORLD, 2, source, seed=0, config=crowd.EpisodeConfig(max_steps=4, max_moves=3), state=state)
    assert counts["negotiations"] == 1 and counts["llm_calls"] >= 6  # at least two replies per move
    assert counts["completion_tokens"] > 0 and counts["plan_moves"] == 3


def test_seeded_episodes_reproduce():
    config = crowd.EpisodeConfig(max_steps=400, max_moves=8, exit_bias=0.2)
    runs = [crowd.run_episode(WORLD, 8, ExactJointPlanner(), seed, config) for seed in (3, 3, 4)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.parametrize(("override", "message"), [
    ({"agents": [13]}, "agents must be"),
    ({"systems": ["oracle"]}, "systems must be"),
    ({"exit_bias": 1.5}, "exit_bias"),
    ({"max_moves": 0}, "max_moves"),
    ({"trials": 0}, "trials"),
    ({"speed": 2}, "unknown fig6_scalability setting"),
])
def test_bad_settings_raise_before_any_episode(override, message, monkeypatch):
    monkeypatch.setattr(crowd, "run_episode", lambda *a, **k: pytest.fail("an episode ran"))
    with pytest.raises(ValueError, match=message):
        fig6_scalability.run_scalability("smoke", progress=False, **override)


def test_the_runner_saves_resumes_and_recomputes_on_new_settings(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path)
    first = fig6_scalability.run_scalability("smoke", systems=["exact"], agents=[2, 4], progress=False)
    assert list(first.agents) == [2, 4] and (tmp_path / "marlin" / "smoke").is_dir()
    real = crowd.run_episode
    monkeypatch.setattr(crowd, "run_episode", lambda *a, **k: pytest.fail("a finished run was recomputed"))
    pd.testing.assert_frame_equal(fig6_scalability.run_scalability("smoke", systems=["exact"], agents=[2, 4], progress=False), first)
    monkeypatch.setattr(crowd, "run_episode", real)
    assert len(fig6_scalability.run_scalability("smoke", systems=["exact"], agents=[2, 4], trials=2, progress=False)) == 4


def test_the_smoke_preset_replays_its_llm_negotiation_from_the_committed_transcript(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path)
    table = fig6_scalability.run_scalability("smoke", progress=False)
    llm, exact = (table[table.system == s].iloc[0] for s in ("llm", "exact"))
    assert llm.negotiations == exact.negotiations == 1 and llm.llm_calls > 0 and exact.llm_calls == 0
    summary = fig6_scalability.summary(table)
    assert set(summary.system) == {"llm", "exact"} and summary.negotiations.tolist() == [1.0, 1.0]
