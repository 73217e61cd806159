"""Result keys (:mod:`marlinkit.repro.keys`): today's code gives committed runs the keys their sidecars recorded, and
a setting added after runs were stored enters a key only when it is set."""

from __future__ import annotations

import json

import pytest

from marlinkit import paths, presets
from marlinkit.algos.maddpg import MADDPGConfig
from marlinkit.algos.mappo import MAPPOConfig
from marlinkit.maestro import ablation, sweep
from marlinkit.maestro.curriculum_env import Calibration
from marlinkit.marlin import fig3_training, grid
from marlinkit.repro import keys

MARLIN_PAPER = paths.DATA_DIR / "results" / "marlin" / "paper"


def read(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_hash_of_a_configuration_is_pinned_and_ignores_key_order():
    assert keys.config_hash({"a": 1}) == "f9d86028c6e0"
    assert keys.config_hash({"a": 1, "b": [2, 3]}) == keys.config_hash({"b": [2, 3], "a": 1})


def test_the_earlier_values_are_todays_defaults():
    """A key without an added setting rebuilds the ``Config`` its run had: its default is the earlier value."""
    for cls, added in ((MAPPOConfig, keys.MAPPO_ADDED_LATER), (MADDPGConfig, keys.MADDPG_ADDED_LATER)):
        defaults = cls()
        assert {name: getattr(defaults, name) for name in added} == added, cls.__name__


def test_an_added_setting_enters_the_key_only_when_set():
    assert set(keys.MAPPO_ADDED_LATER).isdisjoint(keys.mappo_key(MAPPOConfig()))
    assert keys.mappo_key(MAPPOConfig(precision="float64"))["precision"] == "float64"
    assert set(keys.MADDPG_ADDED_LATER).isdisjoint(keys.maddpg_key(MADDPGConfig()))
    assert keys.maddpg_key(MADDPGConfig(decision_s=5))["decision_s"] == 5
    earlier = {"trainer": "one-at-a-time", "layout_schedule": [], "plan_budget": None}
    assert keys.grid_key({"seed": 0, **earlier}) == {"seed": 0}
    assert keys.grid_key({"trainer": "batched", "protocol": "authors"}) == {"trainer": "batched", "protocol": "authors"}


@pytest.mark.parametrize("section, folder, name", [
    ("fig3_training", "", "maze_like__marl__seed0"),
    ("fig3_training", "", "asymmetrical_two_slot__marlin-calibrated-surrogate-planner__seed0"),
    ("fig3_training", "", "asymmetrical_two_slot__llm_only-calibrated-surrogate-planner__seed3"),
    ("fig5_hardware", "fig5_hardware", "maze_like__marlin-calibrated-surrogate-planner__seed0"),
])
def test_todays_marlin_grids_give_committed_runs_their_recorded_keys(section, folder, name):
    config = presets.get("paper", section)
    if section == "fig3_training":
        config, _, _ = fig3_training.settings(config, None)
    config, source, _ = grid.with_plan_source(config)
    jobs = dict(grid.grid_jobs(config, (source or grid.ExactJointPlanner()).name))
    assert keys.config_hash(jobs[name]) == read(MARLIN_PAPER / folder / f"{name}.json")["config_hash"]


def test_todays_maestro_configs_give_committed_runs_their_recorded_keys():
    cfg = presets.ablation_config("paper")
    committed = read(ablation.results_root("paper", cfg) / "A2__seed200.json")
    calibration = Calibration(**committed["config"]["calibration"])
    assert keys.config_hash(ablation.run_config(cfg, "A2", 200, calibration)) == committed["config_hash"]
    run = read(sweep.DEFAULT_OUT / "paper__seed200.json")
    config = sweep.maddpg_config(run["setting"], run["maddpg"]["seed"], run["episodes"], run["episode_seconds"],
                                 run["maddpg"]["eval_every"])
    assert keys.maddpg_key(config) == run["maddpg"]
