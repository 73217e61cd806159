"""The MARLIN configurations as the committed runs recorded them: today's presets and ``Config`` dataclasses give the
cache key (``keys.config_hash`` of ``grid.job_config``) of every committed paper run, so a change of a Config's shape
that changed a recorded configuration would make every committed run look unfinished (and retrain it)."""

from __future__ import annotations

import dataclasses

import pytest

from marlinkit import config_fields, paths, presets, runs
from marlinkit.files import read_json
from marlinkit.llm import config as llm_config
from marlinkit.marlin import authors_protocol, fidelity, fig3_training, grid
from marlinkit.marlin.hardware import ActuationNoise
from marlinkit.repro import keys

PAPER = paths.DATA_DIR / "results" / "marlin" / "paper"


def committed(config: grid.GridConfig, root, source_name: str) -> tuple[int, list[str]]:
    """How many of the grid's runs are committed under ``root``, and those whose recorded key is not today's."""
    store = runs.ResultStore(root)
    present, differing = 0, []
    for name, job in grid.grid_jobs(config, source_name):
        tables = [name] if job["system"] == "LLM-only" else [name, name + "__eval"]
        for table in tables:
            path = store.sidecar_path(table)
            if path.exists():
                present += 1
                if read_json(path)["config_hash"] != keys.config_hash(job):
                    differing.append(table)
    return present, differing


def source_name(config: grid.GridConfig) -> tuple[grid.GridConfig, str]:
    config, source, _ = grid.with_plan_source(config)
    return config, (source or grid.ExactJointPlanner()).name


@pytest.mark.parametrize("variant", [{}, {"plan_source": "exact"}, {"switch_rule": "code"}, {"plan_steps": "separate"}])
def test_the_paper_fig3_grids_find_their_committed_runs(variant):
    plan_steps = variant.pop("plan_steps", None)
    config, _, _ = fig3_training.settings(presets.get("paper", "fig3_training", **variant), plan_steps)
    config, name = source_name(config)
    present, differing = committed(config, PAPER, name)
    expected = (sum(1 if system == "LLM-only" else 2 for system in config.systems)
                * len(config.scenarios) * len(config.seeds))
    assert differing == [] and present == expected


@pytest.mark.parametrize("section", ["fig5_hardware", "dynamic_env"])
def test_the_paper_fig5_and_dynamic_grids_find_their_committed_runs(section):
    config, name = source_name(presets.get("paper", section))
    present, differing = committed(config, PAPER / section, name)
    assert differing == [] and present == (5 if section == "fig5_hardware" else 0) + 2 * 2 * len(config.seeds)


def test_actuation_noise_is_typed_and_recorded_as_its_fields():
    config = presets.get("paper", "fig5_hardware")
    assert config.actuation_noise == ActuationNoise(p_fail=0.05, p_slip=0.05)
    job = grid.job_config("maze_like", "MARL", 0, config, grid.ExactJointPlanner.name)
    assert list(job["actuation_noise"].items()) == [("p_fail", 0.05), ("p_slip", 0.05)]


def test_the_paper_fidelity_variants_find_their_committed_runs():
    section, training = presets.get("paper", "fidelity"), presets.get("paper", "fig3_training")
    assert [v.name for v in section.variants] == ["6 copies", "9 copies", "torch init"]
    for variant in section.variants:
        config = fidelity.variant_config(training, variant, section.seeds)
        present, differing = committed(config, PAPER / "fidelity" / llm_config.slug(variant.name),
                                       grid.ExactJointPlanner.name)
        assert differing == [] and present == 2 * len(config.scenarios) * len(section.seeds), variant
    torch_init = fidelity.variant_config(training, section.variants[2], (0,))
    assert (torch_init.mappo == dataclasses.replace(training.mappo, init="torch")
            and torch_init.n_envs == training.n_envs)


def test_the_committed_authors_protocol_runs_are_found_by_todays_section():
    config = presets.get("paper", "authors_protocol")
    finished = [(source, system, seed, scenario) for source, system, seed in authors_protocol.job_order(config)
                for scenario in config.scenarios
                if authors_protocol.is_finished(config, "paper", source, system, seed, scenario)]
    on_disk = {path.stem for path in (PAPER / grid.AUTHORS_PROTOCOL_DIR).glob("*.json")
               if not path.stem.endswith("__eval")}
    assert len(finished) == len(on_disk) >= 25  # every committed run is today's (none retrained, none orphaned)


#: The ``config`` (less ``llm``) that the smoke and quick LLM-only runs recorded in their sidecars before the
#: nested settings became dataclasses; those runs are not committed (they replay from committed transcripts).
LLM_ONLY_RECORDED = {
    "smoke": {"max_moves": 2, "max_new_tokens": 80, "max_rounds": 1, "scenarios": ["single_slot", "two_path"],
              "seed": 0, "stall_limit": 3, "trials": 1},
    "quick": {"max_moves": 8, "max_new_tokens": 80, "max_rounds": 1,
              "scenarios": ["single_slot", "symmetrical_two_slot", "asymmetrical_two_slot", "two_path", "maze_like"],
              "seed": 0, "stall_limit": 3, "trials": 2},
}


@pytest.mark.parametrize("preset", ["smoke", "quick"])
def test_the_llm_only_section_is_recorded_as_before(preset):
    """The run's key is the section less its labels (``config_fields.key_fields``): the preset and progress labels
    are not recorded."""
    today = config_fields.key_fields(presets.get(preset, "llm_only"))
    assert ({k: list(v) if isinstance(v, tuple) else v for k, v in today.items() if k != "llm"}
            == LLM_ONLY_RECORDED[preset])


def test_nested_settings_are_dataclasses_and_a_mapping_is_built_into_one():
    config = presets.get("smoke", "fig3_training")
    assert config.mappo.update_epochs == 4 and config.mappo.steps_per_iteration == 400  # the smoke preset's overrides
    assert grid.GridConfig(llm_only_performance={"single_slot": 0.5}).llm_only_performance == (("single_slot", 0.5),)
    with pytest.raises(ValueError, match=r"unknown mappo setting\(s\) \['learning_rate'\]"):
        grid.GridConfig(mappo={"learning_rate": 1.0})
    with pytest.raises(ValueError, match=r"unknown actuation_noise setting\(s\) \['p_drop'\]"):
        grid.GridConfig(actuation_noise={"p_drop": 0.1})
    for section in ("fig3_training", "fig5_hardware", "dynamic_env", "fidelity", "authors_protocol", "workshop",
                    "llm_only"):
        for preset in presets.PRESET_NAMES:
            config = presets.get(preset, section)
            assert not [f.name for f in dataclasses.fields(config)
                        if isinstance(getattr(config, f.name), dict)], section
