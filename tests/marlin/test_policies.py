"""The committed trained policies: one per corridor and system, small, loadable, rebuilt from their sidecar."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import LAYOUT_NAMES
from marlinkit.marlin import policies
from marlinkit.marlin.systems import TrainingConfig

TINY = dataclasses.replace(policies.SETTINGS, episodes=4, n_envs=2, checkpoints=(4,), eval_runs=4,
                           mappo={"update_epochs": 2, "steps_per_iteration": 100})


@pytest.mark.parametrize("scenario", LAYOUT_NAMES)
@pytest.mark.parametrize("system", policies.SYSTEMS)
def test_every_corridor_and_system_has_a_small_committed_policy_that_plays(scenario, system):
    path = policies.policy_path(scenario, system)
    assert path.is_file() and path.stat().st_size < 400_000, path
    policy = policies.load(scenario, system)
    assert policy.info["scenario"] == scenario and policy.info["system"] == system
    assert TrainingConfig(**policy.info["settings"]) == policies.SETTINGS  # the sidecar rebuilds it
    cells, performance = policies.play_episode(policy)
    assert cells.shape == (core.EPISODE_STEPS + 1, 2, 2) and 0.0 <= performance <= 1.0


def test_a_saved_policy_loads_as_the_trained_actor_and_plays_the_same_episode(tmp_path):
    agent, info = policies.train("single_slot", "MARLIN", settings=TINY)
    policies.save(agent, info, tmp_path)
    loaded = policies.load("single_slot", "MARLIN", root=tmp_path)
    observations = np.random.default_rng(0).integers(0, 8, (20, 2, 4))
    assert np.array_equal(loaded.actor.logits(observations), agent.logits(observations))
    trained = policies.Policy(agent, "single_slot", "MARLIN", 0, info)
    assert np.array_equal(policies.play_episode(loaded, seed=3)[0], policies.play_episode(trained, seed=3)[0])
    assert TrainingConfig(**info["settings"]) == TINY and info["plan_source"].endswith("(not an LLM)")


def test_a_missing_policy_says_how_to_train_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m marlinkit policies"):
        policies.load("single_slot", "MARL", root=tmp_path)


def test_the_command_writes_an_episode_as_a_gif(tmp_path):
    from marlinkit.__main__ import main

    assert main(["policies", "--gif", str(tmp_path), "--scenarios", "single_slot", "--systems", "MARL"]) == 0
    gif = tmp_path / "policy__single_slot__MARL.gif"
    assert gif.read_bytes()[:6] in (b"GIF87a", b"GIF89a") and gif.stat().st_size < 300_000
