"""The Fig. 6 scalability experiment: negotiated deadlocks, episodes and the runner (the crowd world itself:
tests/envs/test_crowd.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marlinkit import paths, presets
from marlinkit.marlin import fig6_scalability
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs import crowd
from marlinkit.envs.corridor.plans import Plan
from marlinkit.marlin.negotiation import Negotiation, NegotiationConfig, greedy_robots
from marlinkit.llm.backends.scripted import ScriptedBackend
from tests.envs.test_crowd import WORLD, make_state

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
    source = Negotiation(ScriptedBackend(greedy_robots, "greedy-robots"), NegotiationConfig(max_moves=3, max_rounds=1))
    state = make_state([(2, 2), (2, 3)], [1, 0])
    counts = crowd.run_episode(WORLD, 2, source, seed=0, config=crowd.EpisodeConfig(max_steps=4, max_moves=3),
                               state=state)
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
        fig6_scalability.run(presets.get("smoke", "fig6_scalability", **override, progress=False))


def test_the_runner_saves_resumes_and_recomputes_on_new_settings(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path)
    section = lambda **overrides: presets.get("smoke", "fig6_scalability",  # noqa: E731
                                              systems=["exact"], agents=[2, 4], progress=False, **overrides)
    result = fig6_scalability.run(section())
    first = result.table("episodes")
    assert list(first.agents) == [2, 4] and (tmp_path / "marlin" / "smoke").is_dir()
    assert result.paths and all(path.exists() and path.parent == tmp_path / "marlin" / "smoke" for path in result.paths)
    real = crowd.run_episode
    monkeypatch.setattr(crowd, "run_episode", lambda *a, **k: pytest.fail("a finished run was recomputed"))
    pd.testing.assert_frame_equal(fig6_scalability.run(section()).table("episodes"), first)
    monkeypatch.setattr(crowd, "run_episode", real)
    assert len(fig6_scalability.run(section(trials=2)).table("episodes")) == 4


def test_the_smoke_preset_replays_its_llm_negotiation_from_the_committed_transcript(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path)
    result = fig6_scalability.run(presets.get("smoke", "fig6_scalability", progress=False))
    table = result.table("episodes")
    assert result.provenance.source.startswith("LLM ") and result.provenance.source.endswith(" vs exact joint planner")
    llm, exact = (table[table.system == s].iloc[0] for s in ("llm", "exact"))
    assert llm.negotiations == exact.negotiations == 1 and llm.llm_calls > 0 and exact.llm_calls == 0
    summary = fig6_scalability.summary(table)
    assert set(summary.system) == {"llm", "exact"} and summary.negotiations.tolist() == [1.0, 1.0]
