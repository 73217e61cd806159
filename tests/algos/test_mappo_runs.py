"""MAPPO's trainer over many runs at once: a run's numbers do not depend on its batch partners."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from marlinkit.marlin import algorithm1, grid
from marlinkit.marlin import batched as marlin_batched
from marlinkit.algos import mappo, mappo_fast
from marlinkit.marlin.surrogate_planner import CalibratedSurrogatePlanner
from marlinkit.envs.corridor.layouts import get_layout

SETTINGS = {"scenarios": ["single_slot", "maze_like"], "seeds": [0, 1], "episodes": 6, "n_envs": 3,
            "checkpoints": [3, 6],
            "eval_runs": 5, "llm_only_trials": 1, "workers": 1, "switch_rule": "paper", "llm_only_performance": None,
            "plan_budget": None, "mappo": {"update_epochs": 2, "steps_per_iteration": 150}}
JOBS = [("single_slot", "MARL", 0), ("maze_like", "MARLIN", 1)]


def _tables_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return a.drop(columns=["wall_time_s"], errors="ignore").equals(b.drop(columns=["wall_time_s"], errors="ignore"))


def test_two_runs_batched_give_the_bytes_of_each_run_alone():
    """'Alone' is the trainer with one run (``mappo.train``)."""
    source = CalibratedSurrogatePlanner()
    both = marlin_batched.train_systems(JOBS, grid.GridConfig(**SETTINGS), source)
    for job, (episodes, evaluations) in zip(JOBS, both):
        alone_episodes, alone_evaluations = marlin_batched.train_systems([job], grid.GridConfig(**SETTINGS),
                                                                         CalibratedSurrogatePlanner())[0]
        assert _tables_equal(episodes, alone_episodes) and _tables_equal(evaluations, alone_evaluations), job
    marlin_runs = both[1][0]
    # Algorithm 1 switched per copy inside the batch
    assert set(marlin_runs.generator) == {algorithm1.SAMPLING, algorithm1.PLAN}
    assert len(both[0][1]) == 2 * SETTINGS["eval_runs"]

    config = mappo.MAPPOConfig(update_epochs=2, steps_per_iteration=150)
    specs = [mappo.RunSpec(get_layout("single_slot"), 0), mappo.RunSpec(get_layout("maze_like"), 1)]
    batch = mappo.train_runs(config, specs, n_envs=3, episodes=4)
    for run, spec in enumerate(specs):
        alone = mappo.train(config, spec.layout, n_envs=3, episodes=4, seed=spec.seed).state_dict()
        weights = batch.policy(run).state_dict()
        assert all(torch.equal(weights[k], alone[k]) for k in weights)
        initial = mappo.MAPPO(config, [spec.seed]).policy(0).state_dict()
        assert not torch.equal(weights["actor.2.weight"], initial["actor.2.weight"])  # it trained


def test_per_run_state_stays_apart():
    config = mappo.MAPPOConfig(update_epochs=1, steps_per_iteration=150, max_grad_norm=0.5)
    batch = mappo.MAPPO(config, [3, 3, 4])
    first, second, third = (batch.policy(r).state_dict() for r in range(3))
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not torch.equal(first["actor.0.weight"], third["actor.0.weight"])
    assert torch.equal(first["actor.0.weight"], mappo.initial_layers(config, 3)[0].weight.detach())
    assert batch.flat.shape[1] % mappo.FLAT_ALIGN == 0
    with pytest.raises(ValueError, match="MARL and MARLIN"):
        marlin_batched.train_systems([("single_slot", "LLM-only", 0)], grid.GridConfig(**SETTINGS))
    x = torch.randn(3, 7, 5)
    assert torch.equal(mappo_fast.per_run_exp(x)[2], x[2].exp())
    obs = np.zeros((3, 2, 4), np.float32)
    assert batch.logits(obs).shape == (3, 2, 5) and batch.policy(1).logits(obs[0]).shape == (2, 5)


def test_grid_runner_trains_a_workers_runs_as_one_batch_and_resumes(tmp_path):
    settings = grid.GridConfig(**{**SETTINGS, "scenarios": ["single_slot"], "seeds": [0, 1], "episodes": 4,
                                  "checkpoints": [4],
                                  "llm_only_trials": 2, "trainer": "batched"})
    source = CalibratedSurrogatePlanner()
    results = grid.run_grid(settings, "test", source=source, root=tmp_path, progress=False)
    assert set(results.episodes.system) == set(algorithm1.SYSTEMS) and set(results.evaluations.seed) == {0, 1}
    alone_episodes, alone_evaluations = marlin_batched.train_systems([("single_slot", "MARLIN", 1)], settings,
                                                                     CalibratedSurrogatePlanner())[0]
    ours = results.episodes[(results.episodes.system == "MARLIN") & (results.episodes.seed == 1)].reset_index(drop=True)
    assert _tables_equal(ours[alone_episodes.columns], alone_episodes)
    sidecar = next(tmp_path.glob("single_slot__marlin-*seed1.json")).read_text()
    assert '"trainer": "batched"' in sidecar
    again = grid.run_grid(settings, "test", source=source, root=tmp_path, progress=False)  # loaded, not retrained
    assert again.episodes.equals(results.episodes)
    with pytest.raises(ValueError, match="trainer"):
        dataclasses.replace(settings, trainer="vmap")


def test_runs_above_the_distinct_capacity_fall_back_to_per_row_and_stay_apart(monkeypatch):
    monkeypatch.setattr(mappo, "DISTINCT_CAPACITY", 4)  # every batch now has more distinct observations
    config = mappo.MAPPOConfig(update_epochs=1, steps_per_iteration=150)
    specs = [mappo.RunSpec(get_layout("two_path"), 5), mappo.RunSpec(get_layout("single_slot"), 6)]
    batch = mappo.train_runs(config, specs, n_envs=3, episodes=2)
    assert batch.distinct_fallbacks > 0
    alone = mappo.train_runs(config, specs[1:], n_envs=3, episodes=2).policy(0).state_dict()
    weights = batch.policy(1).state_dict()
    assert all(torch.equal(weights[k], alone[k]) for k in weights)


def test_separated_plan_steps_batched_give_the_bytes_of_each_run_alone_and_change_only_marlin():
    """generated_steps="separate" (plan steps kept out of what the policy learns), per run inside a batch."""
    separate = {**SETTINGS, "mappo": {**SETTINGS["mappo"], "generated_steps": "separate"}}
    both = marlin_batched.train_systems(JOBS, grid.GridConfig(**separate), CalibratedSurrogatePlanner())
    for job, (episodes, evaluations) in zip(JOBS, both):
        alone_episodes, alone_evaluations = marlin_batched.train_systems([job], grid.GridConfig(**separate),
                                                                         CalibratedSurrogatePlanner())[0]
        assert _tables_equal(episodes, alone_episodes) and _tables_equal(evaluations, alone_evaluations), job
    paper = marlin_batched.train_systems(JOBS, grid.GridConfig(**SETTINGS), CalibratedSurrogatePlanner())
    assert _tables_equal(both[0][1], paper[0][1])  # MARL has no generated steps: the setting changes nothing
    assert set(both[1][0].generator) == {algorithm1.SAMPLING, algorithm1.PLAN}
    assert not _tables_equal(both[1][0], paper[1][0])  # MARLIN learns otherwise once plan steps are kept apart
