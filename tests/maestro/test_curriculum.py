"""MAESTRO's difficulty rules, regeneration triggers, fallback and w(d) against hand-worked cases."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest

from marlinkit.maestro import curriculum as cur

CONFIG = cur.CurriculumConfig()  # the paper's constants: target 165, bars 173.25 / 156.75


def run(returns, config=CONFIG, state=None):
    state = state or cur.initial_difficulty(config)
    states = []
    for value in returns:
        state = cur.update_difficulty(state, value, config)
        states.append(state)
    return states


def test_thresholds_are_the_papers():
    assert CONFIG.up_ratio * CONFIG.target == pytest.approx(173.25)
    assert CONFIG.down_ratio * CONFIG.target == pytest.approx(156.75)


def test_steady_high_returns_raise_d_every_second_episode_up_to_the_cap():
    states = run([180.0] * 50)
    d = [s.difficulty for s in states]
    # The window fills at episode 5 (first window above), the second window above is episode 6.
    assert d[:12] == [0.3, 0.3, 0.3, 0.3, 0.3, 0.35, 0.35, 0.4, 0.4, 0.45, 0.45, 0.5]
    assert d[30] == 0.95 and d[31] == 1.0 and d[32:] == [1.0] * 18  # episode 32 reaches the cap
    assert [s.event for s in states[4:8]] == [None, "up", None, "up"]
    assert states[33].event == "up" and not states[33].changed  # clipped: not a change
    # Unchanged since episode 32, so the plateau rule fires at episode 47 and is clipped too.
    assert states[46].event == "plateau" and not states[46].changed and states[46].unchanged == 0
    assert states[45].unchanged == 14


def test_returns_between_the_bars_only_move_d_through_the_plateau_rule():
    d = [s.difficulty for s in run([160.0] * 46)]
    assert d[13] == 0.3 and d[14] == 0.35  # episode 15
    assert d[28] == 0.35 and d[29] == 0.4  # episode 30
    assert d[44] == 0.45 and d[45] == 0.45


def test_low_returns_hold_the_floor_and_undo_each_plateau_raise():
    states = run([150.0] * 33)
    d = [s.difficulty for s in states]
    assert states[4].event == "down" and not states[4].changed  # already at 0.3
    assert d[14] == 0.35 and states[14].event == "plateau"  # episode 15: 15 episodes unchanged
    assert d[15] == 0.3 and states[15].event == "down" and states[15].changed
    assert d[29] == 0.3 and d[30] == 0.35 and d[31] == 0.3  # again 15 episodes later


def test_rolling_window_drops_on_consecutive_episodes():
    config = cur.CurriculumConfig(d_initial=0.5)
    states = run([180.0] * 6 + [140.0] * 6, config)
    # Window means from episode 5: 180, 180, 172, 164, 156, 148, 140, 140.
    assert [s.difficulty for s in states] == [0.5] * 5 + [0.55, 0.55, 0.55, 0.45, 0.35, 0.3, 0.3]
    assert [s.event for s in states] == [None] * 5 + ["up", None, None, "down", "down", "down", "down"]


def test_a_window_not_above_the_bar_breaks_the_streak():
    # Windows: 180 (above), 170 (not above), 178 (above), 178 (above -> raise at episode 8).
    states = run([180.0] * 5 + [130.0, 220.0, 180.0])
    assert [s.above_streak for s in states[4:]] == [1, 0, 1, 0]
    assert [s.difficulty for s in states] == [0.3] * 7 + [0.35]


def test_target_is_configurable_and_only_the_scale_matters():
    returns = [180.0] * 6 + [140.0] * 6
    scaled = cur.CurriculumConfig(target=1.0, d_initial=0.5)
    paper = cur.CurriculumConfig(d_initial=0.5)
    assert [s.difficulty for s in run([r / 165.0 for r in returns], scaled)] == [
        s.difficulty for s in run(returns, paper)
    ]


def test_resume_from_json_continues_the_same_trajectory():
    returns = list(np.random.default_rng(0).uniform(140, 190, size=60))
    full = run(returns)
    saved = json.loads(json.dumps(asdict(full[29])))
    resumed = run(returns[30:], state=cur.DifficultyState(**saved))
    assert resumed == full[30:]


def test_an_episode_without_a_score_leaves_the_window_and_streak_and_runs_the_plateau_clock():
    # reading 9: max-pressure no better than fixed-time on the architect's traffic gives the episode no score (NaN)
    nan = float("nan")
    high = [CONFIG.up_ratio * CONFIG.target + 1.0] * CONFIG.window
    before = run(high)[-1]  # one full window above the bar: the streak stands at 1
    assert before.above_streak == 1 and before.difficulty == CONFIG.d_initial
    skipped = cur.update_difficulty(before, nan, CONFIG)
    assert (skipped.returns, skipped.above_streak, skipped.difficulty) == (before.returns, 1, before.difficulty)
    assert (skipped.episode, skipped.unchanged, skipped.event, skipped.changed) == (before.episode + 1,
                                                                                    before.unchanged + 1, None, False)
    # the next scored window above the bar is the second in a row: d rises as if the unscored episode were not there
    assert cur.update_difficulty(skipped, high[0], CONFIG).event == "up"
    # a low window does not lower d through an unscored episode, and unscored episodes alone reach the plateau escape
    low = run([0.0] * CONFIG.window, state=cur.DifficultyState(difficulty=0.5))[-1]
    assert low.difficulty == 0.4 and cur.update_difficulty(low, 0.0, CONFIG).difficulty == 0.3
    assert cur.update_difficulty(low, nan, CONFIG).difficulty == 0.4
    states = run([nan] * CONFIG.plateau_episodes)
    assert [s.event for s in states].count("plateau") == 1 and states[-1].event == "plateau"
    assert states[-1].returns == () and states[-1].difficulty == CONFIG.d_initial + CONFIG.plateau_step


def test_bad_inputs_fail_before_compute():
    with pytest.raises(ValueError, match="finite or NaN"):
        cur.update_difficulty(cur.initial_difficulty(), float("inf"))
    with pytest.raises(ValueError, match="d_initial"):
        cur.CurriculumConfig(d_initial=0.2)
    with pytest.raises(ValueError, match="window"):
        cur.CurriculumConfig(window=0)


def triggers(returns, config=CONFIG):
    """Run the schedule with every generation accepted; return (episode, trigger) of each event."""
    d = cur.initial_difficulty(config)
    r = cur.record_generation(cur.initial_reward_state(d), True, config)
    events = []
    for value in returns:
        d = cur.update_difficulty(d, value, config)
        r = cur.advance_rewards(r, d, config)
        if r.pending:
            events.append((d.episode, r.trigger))
            r = cur.record_generation(r, True, config)
    return events


def test_regeneration_on_difficulty_change_then_on_the_interval():
    # d: 0.35 at ep 6, +0.05 every 2 episodes -> 0.45 at ep 10 (delta 0.15), 0.60 at 16, 0.75 at 22,
    # 0.90 at 28, 1.0 from 32 (delta 0.10 only); then 20 episodes after ep 28 -> ep 48, 68.
    # The clipped plateau at ep 47 raised nothing, so it triggers nothing.
    assert triggers([180.0] * 70) == [
        (10, "difficulty"), (16, "difficulty"), (22, "difficulty"), (28, "difficulty"),
        (48, "interval"), (68, "interval"),
    ]


def test_regeneration_on_stagnation_increase():
    assert triggers([160.0] * 46) == [(15, "stagnation"), (30, "stagnation"), (45, "stagnation")]
    no_plateau = cur.CurriculumConfig(plateau_episodes=1000)
    assert triggers([160.0] * 41, no_plateau) == [(20, "interval"), (40, "interval")]


def test_three_failed_attempts_fall_back_to_the_environment_reward_until_the_next_trigger():
    config = cur.CurriculumConfig(plateau_episodes=1000)
    d = cur.initial_difficulty(config)
    r = cur.initial_reward_state(d)
    r = cur.record_generation(r, False, config)
    r = cur.record_generation(r, False, config)
    assert r.pending and r.failures == 2
    r = cur.record_generation(r, True, config)  # third attempt passes: no fallback
    assert r.source == "llm" and not r.pending and r.failures == 0
    for _ in range(20):
        d = cur.update_difficulty(d, 160.0, config)
        r = cur.advance_rewards(r, d, config)
    assert r.pending and r.trigger == "interval"
    for _ in range(3):
        r = cur.record_generation(r, False, config)
    assert r.source == "env" and not r.pending
    assert cur.training_reward(-2.0, 0.5, d.difficulty, r, config) == -2.0  # behaves as A2
    with pytest.raises(ValueError, match="no regeneration event"):
        cur.record_generation(r, True, config)
    for _ in range(19):
        d = cur.update_difficulty(d, 160.0, config)
        r = cur.advance_rewards(r, d, config)
        assert r.source == "env" and not r.pending
    d = cur.update_difficulty(d, 160.0, config)
    r = cur.advance_rewards(r, d, config)
    assert r.pending  # the next trigger: generation is tried again
    with pytest.raises(ValueError, match="still open"):
        cur.advance_rewards(r, d, config)
    r = cur.record_generation(r, True, config)
    assert r.source == "llm"
    assert cur.training_reward(-2.0, 0.5, 0.65, r, config) == pytest.approx(24.1)
    assert cur.record_runtime_failure(r).source == "env"


def test_weight_is_linear_from_0_1_at_d_0_3_to_0_5_at_d_1():
    assert cur.weight(0.3) == pytest.approx(0.1)
    assert cur.weight(1.0) == pytest.approx(0.5)
    assert cur.weight(0.65) == pytest.approx(0.3)
    assert cur.weight(0.475) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="outside"):
        cur.weight(0.2)


def test_combined_reward_matches_the_papers_formula():
    # d = 0.65: w = 0.3 -> 0.7 * r_env + 0.3 * 170 * r_llm
    r_env, r_llm = np.array([-2.0, 0.0, 10.0]), np.array([0.5, -1.0, 0.0])
    assert cur.combined_reward(r_env, r_llm, 0.65) == pytest.approx([24.1, -51.0, 7.0])
    assert cur.combined_reward(-2.0, 0.5, 0.3) == pytest.approx(0.9 * -2.0 + 0.1 * 85.0)


def test_difficulty_levels_are_the_exact_values_training_reaches():
    levels = cur.difficulty_levels()
    assert len(levels) == 15 and levels[0] == 0.3 and levels[-1] == 1.0
    config = cur.CurriculumConfig(target=100.0)
    state, seen = cur.initial_difficulty(config), set()
    for score in [200.0] * 40 + [0.0] * 7 + [96.0] * 30:  # raises, drops, plateaus
        state = cur.update_difficulty(state, score, config)
        seen.add(state.difficulty)
    assert seen <= set(levels) and len(seen) > 5


def test_the_paper_setting_is_the_printed_rule_and_measured_moves_only_target_and_start():
    assert cur.rule_config("paper") == CONFIG  # the committed paper runs keep their keys
    measured = cur.rule_config("measured")
    assert measured.target == pytest.approx(78.47 / 0.962, abs=0.01) and measured.d_initial == 0.4
    assert asdict(measured) == {**asdict(CONFIG), "target": measured.target, "d_initial": 0.4}
    assert cur.difficulty_levels(measured) == cur.difficulty_levels(CONFIG)  # the sandbox validates on the same levels
    assert cur.rule_config("measured", score_scale=1.0).target == pytest.approx(measured.target / 165.0)
    with pytest.raises(ValueError, match="unknown curriculum setting 'measure'.*measured"):
        cur.rule_config("measure")


def test_the_measured_target_and_start_come_from_the_data_they_name():
    """MEASURED_LEARNER_SCORE is the sweep's plain MADDPG, last 20 training episodes; d = 0.4 is the real flow's
    load."""
    import pandas as pd

    from marlinkit import paths
    from marlinkit.envs.traffic.context import context_for_difficulty, load_flow_file, truncate
    from marlinkit.envs.traffic.data import REAL_FLOW, find_data_dir, load_network

    sweep = pd.read_csv(paths.DATA_DIR / "maestro_sweep" / "paper__seed200.csv")
    sweep = sweep[sweep.episode.between(80, 99)]  # the last 20 of the first 100 episodes
    score = 165 * (sweep.train_return - sweep.fixed_time_return) / (sweep.max_pressure_return - sweep.fixed_time_return)
    assert score.mean() == pytest.approx(cur.MEASURED_LEARNER_SCORE, abs=0.005)
    folder = find_data_dir()
    network, real = load_network(folder), len(truncate(load_flow_file(folder / REAL_FLOW), 360))
    vehicles = {d: np.mean([len(context_for_difficulty(d, s, 360).flow(network)) for s in range(5)])
                for d in (0.35, 0.4, 0.45)}
    assert real == 299 and min(vehicles, key=lambda d: abs(vehicles[d] - real)) == cur.REAL_FLOW_DIFFICULTY
