"""MARLIN's generator switch as the authors' public code runs it (``switch_rule="authors"``), one test per rule.

Each test drives ``AuthorsSwitch`` through a scripted sequence of episodes on the real corridor core: the policy's
samples are WAITs, the plan sources are real (the exact joint planner, or its plans cut short), and the
performance each episode reports to the switch is scripted where a rule reads only that. Line numbers refer to the
authors' public repository SooratiLab/MARLIN at commit a73a337.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.envs.corridor.plans import Plan, plan_key
from marlinkit.marlin import algorithm1, grid, systems
from marlinkit.marlin.algorithm1 import PLAN, SAMPLING, AuthorsSwitch, AuthorsSwitchConfig
from marlinkit.marlin.surrogate_planner import play

LAYOUT = get_layout("two_path")
ARRAYS = core.layout_arrays(LAYOUT)
START = plan_key(LAYOUT, np.asarray(LAYOUT.starts))
NO_TOGGLE = AuthorsSwitchConfig(toggle_probability=0.0)


class ShortPlans:
    """A real plan source that gets worse or better on request: the exact plan cut to ``lengths[i]`` moves for the
    i-th plan (the rest WAIT), scored by playing it."""

    name = "short-plans"

    def __init__(self, *lengths: int):
        self.lengths, self.calls = list(lengths), 0

    def make_plan(self, layout, positions, steps_left, seed=None):
        exact = ExactJointPlanner().make_plan(layout, positions, steps_left)
        actions = exact.actions[:self.lengths[min(self.calls, len(self.lengths) - 1)]]
        self.calls += 1
        return Plan(actions, play(layout, positions, actions), self.name)


def short_score(moves: int) -> float:
    return play(LAYOUT, np.asarray(LAYOUT.starts),
                ExactJointPlanner().make_plan(LAYOUT, np.asarray(LAYOUT.starts), 50).actions[:moves])


def episode(switch: AuthorsSwitch, reported: float | None = None) -> tuple[dict, list[bool], float]:
    """One episode on the core with WAIT as the policy's samples; the switch is told ``reported`` (None: what the
    episode achieved). Returns the switch's record, which steps came from a plan, and the achieved performance."""
    state = core.reset(ARRAYS, 1)
    from_plan = []
    for _ in range(core.EPISODE_STEPS):
        actions = switch(state, np.zeros((1, 2), np.int64))
        from_plan.append(bool(switch.generated[0]))
        state = core.step(ARRAYS, state, actions).state
    achieved = float(core.performance(ARRAYS, state)[0])
    info = switch.end_episode(np.array([achieved if reported is None else reported]))[0]
    return info, from_plan, achieved


def make(source=None, llm_only: float = 0.5, config: AuthorsSwitchConfig = NO_TOGGLE) -> AuthorsSwitch:
    return AuthorsSwitch(LAYOUT, source or ExactJointPlanner(), n_envs=1, llm_only=llm_only, config=config, seed=0)


def test_p_bar_is_the_median_of_the_last_five_executed_episodes_from_a_zero_buffer():
    """follows corridor_env.py:22, 52-53 and 129-133 of SooratiLab/MARLIN at a73a337: a five-slot buffer of zeros,
    each executed episode's performance written into it, p-bar its median."""
    switch = make()
    for reported, expected in [(1.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.2, 1.0), (0.2, 1.0), (0.2, 0.2)]:
        switch.end_episode(np.array([reported]))
        assert switch.p_bar(0) == expected


def test_episodes_1_to_4_sample_from_the_policy_and_5_to_9_follow_plans_without_toggles():
    """follows llm_stochastic_sampling.py:140-142 (the policy before episode m), 183-192 (a perfect cached plan first,
    then episodes m..2m-1 follow a plan locked against the toggle), 83-84 and common_marl.py:75 (m = 5)."""
    switch = make(ShortPlans(6), llm_only=0.0, config=AuthorsSwitchConfig(toggle_probability=1.0))
    records = [episode(switch) for _ in range(9)]
    assert [r[0]["generator"] for r in records] == [SAMPLING] * 4 + [PLAN] * 5
    assert not any(r[0]["toggled"] for r in records)
    assert not any(any(r[1]) for r in records[:4]) and all(r[1][0] for r in records[4:]), "each starts on a plan"
    perfect = make(ExactJointPlanner(), llm_only=0.0, config=AuthorsSwitchConfig(toggle_probability=1.0))
    records = [episode(perfect)[0] for _ in range(9)]
    assert [r["toggled"] for r in records] == [False] * 5 + [True] * 4, "a perfect cached plan comes first: no lock"


def test_a_cached_perfect_plan_is_followed_whatever_p_bar_says():
    """follows llm_stochastic_sampling.py:172-186: a cached plan scoring exactly 1 puts the episode in plan mode,
    ahead of every other rule, and leaves it open to the toggle."""
    switch = make(llm_only=0.0)
    for _ in range(9):
        episode(switch)  # the exact plan (score 1) is cached at episode 5
    assert switch.cache.get(START)[1] == 1.0
    for _ in range(3):  # p-bar 1 >= the LLM-only 0 and no plateau: only the perfect plan makes these plan episodes
        info, from_plan, achieved = episode(switch)
        assert info["generator"] == PLAN and all(from_plan) and achieved == 1.0 and info["plan_cache_hit"]


def test_p_bar_below_the_llm_only_performance_chooses_plans_and_above_it_the_policy():
    """follows llm_stochastic_sampling.py:43-49 (the hard-coded Llama LLM-only performance), 194-197 (below it:
    plans) and 203-206 (otherwise the policy)."""
    below, above = make(ShortPlans(3), llm_only=0.9), make(ShortPlans(3), llm_only=0.05)
    for switch in (below, above):
        for _ in range(10):
            info = episode(switch, reported=0.5)[0]
    assert below.copies[0].p_bar == 0.5
    assert info["generator"] == SAMPLING
    assert episode(below, reported=0.5)[0]["generator"] == PLAN
    assert systems.AUTHORS_COPIES == {"MARLIN": 1, "MARL": 6}


def test_plateau_is_25_p_bars_within_7_5_percent_of_each_other_and_not_all_perfect():
    """follows llm_stochastic_sampling.py:199-201 (a plateau chooses plans), 80, 168 and 339-343 (one p-bar per
    switching episode, the last 25 kept) and 345-355 (all relative changes within 0.075, their mean not 1)."""
    switch = make(ShortPlans(3), llm_only=0.1)
    generators = [episode(switch, reported=0.8)[0]["generator"] for _ in range(28)]
    # p-bar is 0.8 from episode 5 on; the 25th value of the test arrives at episode 29
    assert generators[9:] == [SAMPLING] * 19
    assert episode(switch, reported=0.8)[0]["generator"] == PLAN and switch.plateau(0)
    rising = make(ShortPlans(3), llm_only=0.1)
    for e in range(40):  # +8 % per episode from episode 5 on: no plateau
        episode(rising, reported=min(1.0, 0.2 * 1.08 ** e))
    assert not rising.plateau(0) and len(rising.copies[0].p_bars) == 25
    perfect = make(ShortPlans(3), llm_only=0.1)
    for _ in range(40):
        episode(perfect, reported=1.0)
    assert len(perfect.copies[0].p_bars) == 25 and not perfect.plateau(0)


def test_a_cached_plan_is_replayed_only_when_it_scores_strictly_above_p_bar():
    """follows llm_stochastic_sampling.py:257-263: the cached plan is played when its score is above p-bar (strict)
    or 1; at an equal score the switch plans anew."""
    source = ShortPlans(3)  # every plan: 3 moves, score 1/7
    switch = make(source, llm_only=1.0)
    for _ in range(4):
        episode(switch)  # the policy (WAIT): 0
    hits, calls = [], []
    for _ in range(4):  # p-bar 0, 0, 0, then 1/7 (three plan episodes in the median)
        info, from_plan, _ = episode(switch)
        hits.append(info["plan_cache_hit"])
        calls.append(source.calls)
    assert switch.copies[0].p_bar == switch.cache.get(START)[1] == short_score(3)
    assert hits == [False, True, True, False] and calls == [1, 1, 1, 2]


def test_a_new_plan_not_above_p_bar_gives_only_the_first_step_and_the_policy_the_rest():
    """follows llm_stochastic_sampling.py:264-285 and 294-300: when no cached plan beats p-bar, a new plan is made at
    step 0 and its first action played; the later steps follow it only if it scores above p-bar, else the policy
    acts."""
    weak, strong = short_score(5), short_score(6)
    source = ShortPlans(5, 6)
    switch = make(source, llm_only=1.0)
    for _ in range(4):
        episode(switch, reported=0.5)  # p-bar 0.5 from episode 5 on
    assert weak < 0.5 < strong
    info, from_plan, _ = episode(switch)
    assert info["generator"] == PLAN and not info["plan_cache_hit"] and source.calls == 1
    assert from_plan == [True] + [False] * 49, "step 0 from the new plan, then the policy"
    info, from_plan, achieved = episode(switch)  # the second plan, 6 moves, scores above p-bar: played whole
    assert all(from_plan) and achieved == strong and switch.cache.get(START)[1] == strong


def test_a_plan_episode_overwrites_the_cached_score_with_what_it_achieved():
    """follows llm_stochastic_sampling.py:161-166 and llm_action_dict.py:75-77: at the next switching start, an
    episode that ended in plan mode and achieved another score than its plan's writes that score into the cache."""
    switch = make(ExactJointPlanner(), llm_only=0.0)
    for _ in range(4):
        episode(switch)
    episode(switch, reported=0.25)  # episode 5 plays the exact plan (score 1) but reports 0.25
    assert switch.cache.get(START)[1] == 1.0, "the score changes only at the next switching start"
    info = episode(switch)[0]
    # forced episode; the plan is no longer perfect
    assert switch.cache.get(START)[1] == 0.25 and info["generator"] == PLAN


def test_the_step_25_toggle_plans_the_steps_left_plays_them_by_absolute_step_and_its_cached_score_is_overwritten():
    """follows llm_stochastic_sampling.py:208-230 (with 10 % chance at step 25 an unlocked episode switches; a switch
    to plans plans from the current cells for the 25 steps left, caches that plan under the start state's key and
    sets the running score to 1), 294-300 and llm_move_gen.py:394-405 (the plan scored from where it was made),
    236-240 (the plan is indexed by the episode's step, so steps 25-49 WAIT) and 161-166 (the score update)."""
    assert AuthorsSwitchConfig().toggle_probability == 0.1 and AuthorsSwitchConfig().toggle_step == 25
    switch = make(ExactJointPlanner(), llm_only=0.0, config=AuthorsSwitchConfig(toggle_probability=1.0))
    for _ in range(9):
        episode(switch)  # episodes 5-9 cache the exact plan (score 1)
    info, from_plan, achieved = episode(switch)  # a perfect plan: plan mode, toggled to the policy at step 25
    assert info["generator"] == PLAN and info["toggled"] and from_plan == [True] * 25 + [False] * 25 and achieved == 1.0
    switch.cache.entries.clear()  # no cached plan: p-bar 1 >= 0 -> the policy, toggled to plans at step 25
    info, from_plan, achieved = episode(switch)
    plan, score = switch.cache.get(START)
    assert info["generator"] == SAMPLING and info["toggled"] and from_plan == [False] * 25 + [True] * 25
    assert achieved == 0.0, "the robots waited 25 steps, then the plan's index was past its end: WAIT"
    assert len(plan) <= 25 and score == 1.0, "a plan from the (unmoved) start cells, scored from there"
    switch.config = NO_TOGGLE
    info = episode(switch)[0]
    assert switch.cache.get(START)[1] == 0.0, "the running score 1 differed from the achieved 0: overwritten"
    assert info["generator"] == SAMPLING
    assert algorithm1.score_from(LAYOUT, np.array([[1, 3], [1, 0]]), np.zeros((3, 2), np.int64)) == 0.5


def test_a_rarely_perfect_plan_source_ends_up_carrying_every_switching_episode():
    """follows llm_action_dict.py:32-39 (a plan replaces the cached one only when it scores at least as well: the
    cache keeps the best plan made so far), llm_stochastic_sampling.py:257-285 (plan mode re-plans while the cached
    score is not above p-bar) and 170-186 (once the start state's cached plan scores 1, it plays every switching
    episode, whatever p-bar and the policy say): of seven plans only the last is perfect, and from then on every
    episode plays it and no plan is made again."""
    cache = algorithm1.AuthorsPlanCache()
    first, worse, tie = np.zeros((1, 2), np.int64), np.ones((1, 2), np.int64), np.full((1, 2), 2)
    cache.offer(START, first, 0.5)
    cache.offer(START, worse, 0.3)
    assert cache.get(START)[0] is first, "a worse plan does not replace a better one"
    cache.offer(START, tie, 0.5)
    assert cache.get(START)[0] is tie, "ties replace"
    source = ShortPlans(3, 3, 3, 3, 3, 3, 50)  # the seventh plan is the exact plan, the only perfect one
    switch = make(source, llm_only=1.0)  # the policy (WAIT) scores 0, below the threshold: plan mode every episode
    records = [episode(switch) for _ in range(120)]
    found = next(e for e, r in enumerate(records) if r[2] == 1.0)
    assert source.calls == 7 and 9 < found < 100, "six imperfect plans first, the perfect one at a later re-plan"
    assert all(r[2] <= short_score(3) for r in records[:found])
    for info, from_plan, achieved in records[found + 1:]:
        assert info["generator"] == PLAN and info["plan_cache_hit"] and all(from_plan) and achieved == 1.0
    assert switch.cache.get(START)[1] == 1.0


def test_only_the_policy_acts_after_the_last_switching_episode():
    """follows llm_stochastic_sampling.py:140-142: after episode 1625 the policy acts alone (no plan, no toggle)."""
    assert AuthorsSwitchConfig().last_switch_episode == 1625
    switch = make(ExactJointPlanner(), llm_only=0.0,
                  config=AuthorsSwitchConfig(toggle_probability=1.0, last_switch_episode=12))
    records = [episode(switch) for _ in range(16)]
    assert records[11][0]["generator"] == PLAN and any(records[11][1])  # episode 12: the perfect plan
    assert all(r[0]["generator"] == SAMPLING and not any(r[1]) and not r[0]["toggled"] for r in records[12:])


def test_authors_protocol_gives_marlin_one_copy_and_marl_six_under_names_and_keys_of_their_own(tmp_path):
    config = grid.GridConfig(scenarios=("two_path",), seeds=(0,), systems=("MARL", "MARLIN"), episodes=6, n_envs=15,
                             checkpoints=(6,), eval_runs=2, llm_only_trials=1, switch_rule="authors",
                             protocol="authors", plan_source="exact", workers=1,
                             mappo={"steps_per_iteration": 200, "update_epochs": 1})
    assert config.for_system("MARLIN").n_envs == 1 and config.for_system("MARL").n_envs == 6
    marlin = grid.job_config("two_path", "MARLIN", 0, config, "exact-joint-planner")
    assert marlin["n_envs"] == 1 and marlin["protocol"] == "authors" and marlin["switch"]["rule"] == "authors"
    assert grid.system_tag("MARLIN", "exact-joint-planner", "authors") == "marlin-authors-switch"
    assert grid.output_suffix(config) == "__exact_planner__authors_switch__authors_protocol"
    results = grid.run_grid(config, "quick", root=tmp_path, progress=False)
    copies = results.episodes.groupby("system").env_copy.nunique().to_dict()
    assert copies == {"MARL": 6, "MARLIN": 1}
    marlin_rows = results.episodes[results.episodes.system == "MARLIN"]
    assert marlin_rows.generator.tolist() == [SAMPLING] * 4 + [PLAN] * 2 and (marlin_rows.plan_steps[4:] > 0).all()
    stacked = grid.run_grid(dataclasses.replace(config, trainer="batched", batch_runs=4), "quick", root=tmp_path / "b",
                            progress=False)
    assert stacked.episodes.groupby("system").env_copy.nunique().to_dict() == {"MARL": 6, "MARLIN": 1}
    assert stacked.episodes[stacked.episodes.system == "MARLIN"].generator.tolist() == marlin_rows.generator.tolist()
    with pytest.raises(ValueError, match="protocol"):
        systems.TrainingConfig(protocol="rllib")


def test_surrogate_llama_is_perfect_as_often_as_llama_was_and_matches_its_llm_only_mean_on_a_held_out_seed():
    from marlinkit.marlin.surrogate_planner import LlamaSurrogatePlanner
    from marlinkit.paper_values import AUTHORS_LLM_ONLY, AUTHORS_PERFECT_PLAN_SHARE

    planner = LlamaSurrogatePlanner()
    assert planner.name.startswith("surrogate-llama[")
    for scenario in AUTHORS_LLM_ONLY:
        alone = systems.plan_source_alone(scenario, 7, 120, planner).performance  # about 4 standard errors allowed
        assert abs((alone == 1).mean() - AUTHORS_PERFECT_PLAN_SHARE[scenario]) < 0.1, scenario
        assert abs(alone.mean() - AUTHORS_LLM_ONLY[scenario]) < 0.08, scenario
    assert {k: v for k, v in planner.shares.items() if k != "maze_like"} == {
        k: v for k, v in AUTHORS_PERFECT_PLAN_SHARE.items() if k != "maze_like"}, "interior shares are the authors'"
    again = systems.plan_source_alone("two_path", 7, 20, LlamaSurrogatePlanner()).performance
    assert again.tolist() == systems.plan_source_alone("two_path", 7, 20, planner).performance.tolist()


def test_surrogate_llama_draws_a_rare_perfect_plan_where_the_authors_saw_none():
    """0 of n perfect plans is not a probability of 0: where the authors' rows held none, the share is the Jeffreys
    posterior mean at the most rows their logs can hold, 0.5 / (5 x 12 + 1), and the plan source does draw perfect
    plans (the calibration's held-out seed: its recorded mean and perfect share)."""
    from marlinkit.marlin.surrogate_planner import (LLAMA_RATES_FILE, LlamaSurrogatePlanner, llama_shares,
                                                    supported_share)
    from marlinkit.paper_values import AUTHORS_PERFECT_PLAN_SHARE

    assert AUTHORS_PERFECT_PLAN_SHARE["maze_like"] == 0.0
    assert llama_shares()["maze_like"] == supported_share(0, 60) == 0.5 / 61
    assert supported_share(3, 25) == 3.5 / 26
    with pytest.raises(ValueError):
        supported_share(2, 1)
    held_out = json.loads(LLAMA_RATES_FILE.read_text())["scenarios"]["maze_like"]["held_out"]
    alone = systems.plan_source_alone("maze_like", held_out["seed"], 400, LlamaSurrogatePlanner()).performance
    assert (alone == 1).sum() >= 1 and (alone == 1).mean() == held_out["perfect_share"]
    assert abs(alone.mean() - 0.333) < 0.05 and round(float(alone.mean()), 6) == held_out["llm_only"]


def test_authors_protocol_queue_resumes_and_its_tables_separate_the_executed_metric_from_the_policy(tmp_path,
                                                                                                     monkeypatch):
    from marlinkit import paths, presets
    from marlinkit.marlin import authors_figures, authors_protocol

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    config = presets.get("smoke", "authors_protocol", scenarios=["two_path"], plan_sources=["exact"],
                         marlin_seeds=[0, 1])
    order = authors_protocol.job_order(presets.get("paper", "authors_protocol"))
    assert order[3:6] == [("surrogate_llama", "MARLIN", 0), ("surrogate_llama", "MARLIN", 1),
                          ("surrogate_llama", "MARL", 0)]
    assert len(order) == 3 + 10 + 3 + 3 + 10
    assert authors_protocol.queue(config, "smoke", log=lambda line: None) == 4  # LLM-only, MARLIN 0, MARLIN 1, MARL 0
    assert authors_protocol.queue(config, "smoke", log=lambda line: None) == 0, "finished runs are not trained again"
    pooled = authors_protocol.run(config)
    assert pooled.runs.finished.all() and (tmp_path / "results" / "marlin" / "smoke" / "authors_protocol").is_dir()
    # LLM-only; 3 trained, with __eval
    assert len(pooled.paths) == 2 * (1 + 3 * 2) and all(path.is_file() for path in pooled.paths)
    table = authors_protocol.executed_vs_policy(pooled, config)
    assert list(table.columns) == ["scenario", "episode", "system", "metric", "mean", "sd", "runs"]
    marlin = table[table.system == "MARLIN exact"].set_index(["episode", "metric"])
    curve = authors_protocol.executed_curve(pooled.episodes)
    medians = curve[(curve.system == "MARLIN")].set_index("episode").performance
    # window 6-24..6+25, cut to the run
    assert marlin.loc[(6, "executed"), "mean"] == pytest.approx(medians.loc[1:12].mean())
    evaluated = pooled.evaluations[(pooled.evaluations.system == "MARLIN") & (pooled.evaluations.checkpoint == 12)]
    assert (marlin.loc[(12, "policy"), "mean"] == pytest.approx(evaluated.performance.mean())
            and marlin.loc[(12, "policy"), "runs"] == 2)
    # from episode 5 the exact planner's perfect plans drive the executed metric; the policy alone stays far below
    assert (medians.loc[5:9] == 1.0).all() and medians.loc[1:4].max() < 0.9 and marlin.loc[(12, "policy"), "mean"] < 0.5
    claims = authors_protocol.claims(table, config)
    assert claims.executed.str.startswith("holds").all() and claims.MARL.eq("MARL").all()
    provenance = pooled.provenance
    assert (provenance.details["runs finished"] == "MARLIN exact 2/2, MARL 1/1"
            and provenance.footer().startswith("preset smoke"))
    assert pooled.source_provenance("exact").details["plan source"].startswith("exact")
    linear = pd.Series(np.arange(1.0, 31.0), index=range(1, 31))
    # +-10 % of the episode: 4 -> itself, 10 -> 9..11, 30 -> 27..30 (the end)
    smooth = authors_figures.log_smooth(linear)
    assert smooth.loc[4] == 4 and smooth.loc[10] == 10 and smooth.loc[30] == 28.5


def test_zero_share_sensitivity_trains_maze_like_with_its_own_shares_and_rates_in_a_folder_of_its_own(
        tmp_path, monkeypatch, capsys):
    from marlinkit import paths, presets
    from marlinkit.marlin import authors_protocol
    from marlinkit.marlin.surrogate_planner import LlamaSurrogatePlanner, llama_shares

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    root = authors_protocol.sensitivity_root("smoke", 10)
    assert (root.parent == tmp_path / "results" / "marlin" / "smoke"
            and root.name == "authors_protocol__zero_share_rows10")
    root.mkdir(parents=True)
    (root / authors_protocol.SENSITIVITY_RATES).write_text(json.dumps({"scenarios": {"maze_like": {"rate": 0.3}}}))
    assert llama_shares(10)["maze_like"] == 0.5 / 11 and llama_shares(10)["two_path"] == llama_shares()["two_path"]
    from marlinkit.__main__ import main

    section = presets.get
    monkeypatch.setattr(presets, "get", lambda preset, name, **overrides: section(
        preset, name, **overrides, **({"marlin_seeds": [0]} if name == "authors_protocol" else {})))
    assert main(["authors-queue", "--preset", "smoke", "--zero-share-rows", "10", "--scenarios", "maze_like"]) == 0
    assert "written" in capsys.readouterr().out
    table = pd.read_csv(root / "executed_vs_policy.csv")
    assert set(table.scenario) == {"maze_like"} and set(table.system) == {"MARLIN surrogate_llama"}
    sidecar = json.loads((root / "maze_like__marlin-surrogate-llama-authors-switch__seed0.json").read_text())
    name = LlamaSurrogatePlanner({"maze_like": 0.3}, llama_shares(10)).name
    assert sidecar["config"]["plan_source"] == name != LlamaSurrogatePlanner().name
    assert not (tmp_path / "results" / "marlin" / "smoke" / "authors_protocol").exists(), "the section's runs untouched"


def test_runs_of_an_earlier_surrogate_llama_calibration_stay_finished_where_its_plans_are_todays(tmp_path):
    """Recalibrating maze-like changes the plan source's name (the cache key of every corridor's runs), but not the
    plans of the other corridors: runs keyed by the earlier name count as finished there, and only there."""
    from marlinkit import runs
    from marlinkit.marlin.surrogate_planner import LLAMA_EARLIER, LlamaSurrogatePlanner

    today = LlamaSurrogatePlanner()
    earlier = LlamaSurrogatePlanner(LLAMA_EARLIER[0]["rates"], LLAMA_EARLIER[0]["shares"])
    assert earlier.name == "surrogate-llama[f0b2f80317]" != today.name, "the name the committed runs carry"
    assert today.equivalent_names("two_path") == (earlier.name,) and today.equivalent_names("maze_like") == ()
    from marlinkit.commands.recompute import plan_source

    assert plan_source(earlier.name).name == earlier.name, "verify_paper rebuilds a committed run's planner"
    for scenario, same in (("two_path", True), ("maze_like", False)):
        layout = get_layout(scenario)
        plans = [(earlier.make_plan(layout, np.asarray(layout.starts), seed=s).actions,
                  today.make_plan(layout, np.asarray(layout.starts), seed=s).actions) for s in range(40)]
        assert all(a.shape == b.shape and (a == b).all() for a, b in plans) == same, scenario
    store = runs.ResultStore(tmp_path)
    for scenario in ("two_path", "maze_like"):
        job = {"scenario": scenario, "system": "LLM-only", "seed": 0, "trials": 1, "plan_source": earlier.name}
        store.save(f"{scenario}__run", pd.DataFrame({"performance": [0.5]}), job)
        keyed_today = {**job, "plan_source": today.name}
        assert grid.is_finished(store, f"{scenario}__run", keyed_today, today) == (scenario == "two_path")
        assert not grid.is_finished(store, f"{scenario}__run", keyed_today, ExactJointPlanner())
