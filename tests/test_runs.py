"""Result files: one run per configuration, resumed by its hash."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from marlinkit import config_fields, paths, presets
from marlinkit.repro.keys import config_hash
from marlinkit.runs import ResultStore


def test_result_store_resumes_only_for_the_same_configuration(tmp_path):
    store = ResultStore(tmp_path)
    table = pd.DataFrame({"episode": [0, 1], "performance": [0.25, 1.0]})
    config = {"scenario": "single_slot", "seed": 0}
    assert not store.is_complete("run", config)
    store.save("run", table, config, llm_backend="none")
    assert store.is_complete("run", config)
    assert not store.is_complete("run", {**config, "seed": 1})
    pd.testing.assert_frame_equal(store.load("run"), table)
    sidecar = store.load_sidecar("run")
    assert sidecar["config"] == config and sidecar["llm_backend"] == "none"
    assert sidecar["config_hash"] == config_hash(config) and "numpy" in sidecar["versions"]
    assert not list(tmp_path.glob("*.tmp")), "temporary files must not be left behind"
    assert store.table_path("run").stat().st_mode & 0o044, "result files are readable by others, like any file"


def test_result_store_cached_computes_once_per_configuration(tmp_path):
    store, calls = ResultStore(tmp_path), []

    def compute():
        calls.append(1)
        return pd.DataFrame({"trial": [0, 1], "performance": [0.5, 0.75]})

    first = store.cached("run", {"seed": 0}, compute, llm="scripted")
    again = store.cached("run", {"seed": 0}, compute, llm="scripted")
    pd.testing.assert_frame_equal(first, again)
    assert len(calls) == 1 and store.load_sidecar("run")["llm"] == "scripted"
    store.cached("run", {"seed": 1}, compute)  # another configuration: computed again
    assert len(calls) == 2


def test_config_hash_ignores_key_order_but_not_values():
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_a_large_table_is_written_compressed_with_stable_bytes_and_read_back_checked(tmp_path, monkeypatch):
    import gzip

    from marlinkit import runs
    from marlinkit.files import ResultFileError

    monkeypatch.setattr(runs, "COMPRESS_OVER_BYTES", 100)
    store = ResultStore(tmp_path)
    table = pd.DataFrame({"episode": range(50), "performance": [i / 7 for i in range(50)]})
    store.save("big", table, {"seed": 0})
    assert store.table_path("big").name == "big.csv.gz" and not (tmp_path / "big.csv").exists()
    first = store.table_path("big").read_bytes()
    store.save("big", table, {"seed": 0})
    assert store.table_path("big").read_bytes() == first  # no timestamp in the gzip header
    assert store.is_complete("big", {"seed": 0})
    pd.testing.assert_frame_equal(store.load("big"), table)
    assert store.load_sidecar("big")["table_sha256"] == __import__("hashlib").sha256(gzip.decompress(first)).hexdigest()
    store.table_path("big").write_bytes(first[: len(first) // 2])  # truncated
    with pytest.warns(RuntimeWarning, match="cannot be read"):
        assert not store.is_complete("big", {"seed": 0})
    with pytest.raises(ResultFileError, match="big.csv.gz"):
        store.load("big")
    store.save("big", table.head(3), {"seed": 0})  # small again: plain CSV, the old compressed file gone
    assert store.table_path("big").name == "big.csv" and not (tmp_path / "big.csv.gz").exists()


# Labels: the fields that name or place a run's outputs (``config_fields.LABEL``) are not part of its key.

RESULTS = paths.DATA_DIR / "results"


def test_a_label_is_left_out_of_the_key_and_of_equality_at_every_level():
    from marlinkit.marlin import fig3_training, llm_trials

    cfg = presets.get("smoke", "fig3_training", plan_source="llm")
    assert cfg.preset == "smoke" and cfg.llm_only.preset == "smoke"
    relabelled = dataclasses.replace(cfg, preset="paper", progress=False,
                                     llm_only=dataclasses.replace(cfg.llm_only, preset="quick", progress=False))
    assert relabelled == cfg and config_fields.key_fields(relabelled) == config_fields.key_fields(cfg)
    assert "preset" not in config_fields.key_fields(cfg) and "preset" not in config_fields.key_fields(cfg)["llm_only"]
    values = {f.name: getattr(cfg.llm_only, f.name) for f in dataclasses.fields(llm_trials.Trials)}
    assert config_fields.key_fields(cfg.llm_only) == dataclasses.asdict(llm_trials.Trials(**values))  # as before labels
    assert [f.name for f in dataclasses.fields(fig3_training.Config)
            if config_fields.is_label(f)] == ["preset", "progress"]


def test_a_config_without_its_preset_is_refused_by_name():
    from marlinkit.marlin import fig1_scenarios

    with pytest.raises(ValueError, match="fig1_scenarios.Config.preset is not set"):
        fig1_scenarios.run(fig1_scenarios.Config())


def _sidecar(path):
    return json.loads(path.read_text())


def test_committed_traffic_baselines_are_found_by_todays_labelled_config():
    from marlinkit.maestro import traffic_baselines

    for name in ("traffic_baselines", "traffic_difficulty"):
        sidecar = _sidecar(RESULTS / "maestro" / "paper" / f"{name}.json")
        engines = sidecar["engines"]
        for preset in ("paper", "a label only"):
            cfg = dataclasses.replace(presets.get("paper", "traffic_baselines"), preset=preset)
            key = {**config_fields.key_fields(cfg), "engines": engines, "difficulty_engines": engines}
            assert isinstance(cfg, traffic_baselines.Config) and json.loads(json.dumps(key)) == sidecar["config"]
            assert config_hash(key) == sidecar["config_hash"], name


@pytest.mark.parametrize("name", ["single_slot__marl__seed0", "maze_like__marl__seed1", "two_path__marlin__seed2"])
def test_committed_marlin_runs_are_found_by_todays_labelled_fig3_config(name):
    from marlinkit.marlin import fig3_training, grid

    sidecar = _sidecar(RESULTS / "marlin" / "paper" / f"{name}.json")
    recorded = sidecar["config"]
    for preset in ("paper", "a label only"):
        cfg = dataclasses.replace(presets.get("paper", "fig3_training", plan_source="exact"), preset=preset)
        config, source, _ = fig3_training.settings(cfg)
        source_name = (source or grid.ExactJointPlanner()).name
        key = grid.job_config(recorded["scenario"], recorded["system"], recorded["seed"], config, source_name)
        assert config_hash(key) == sidecar["config_hash"], name


@pytest.mark.parametrize("name", ["A2__seed200", "A7__seed300", "A8__seed400"])
def test_committed_maestro_runs_are_found_by_todays_labelled_ablation_config(name, tmp_path):
    from marlinkit.maestro import ablation, curriculum_env

    sidecar = _sidecar(RESULTS / "maestro" / "paper" / f"{name}.json")
    recorded = sidecar["config"]
    calibration = curriculum_env.Calibration(**recorded["calibration"])
    for labels in ({}, {"root": tmp_path, "progress": False}):
        cfg = presets.ablation_config("paper", **labels)
        assert cfg.preset == "paper"
        key = ablation.run_config(cfg, recorded["ablation"], recorded["seed"], calibration)
        assert config_hash(key) == sidecar["config_hash"], name


@pytest.mark.parametrize("section, field, value", [("fig3_training", "trainer", "parallel"),
                                                    ("fig3_training", "plan_source", "gpt"),
                                                    ("fig5_hardware", "protocol", "rllib"),
                                                    ("ablation", "engine", "vissim"),
                                                    ("ablation", "eval_policy", "mean"),
                                                    ("fig3_training", "negotiation", "quik"),
                                                    ("workshop", "part", "both")])
def test_a_switch_outside_its_literal_choices_is_refused_when_the_config_is_built(section, field, value):
    config = presets.get("smoke", section)
    allowed = config_fields.literal_choices(config, {f.name: f for f in dataclasses.fields(config)}[field])
    # the plain strings the keys hold
    assert getattr(config, field) in allowed and isinstance(getattr(config, field), (str, type(None)))
    with pytest.raises(ValueError, match=f"unknown {field} '{value}': {field} must be one of"):
        dataclasses.replace(config, **{field: value})


def test_the_traffic_environments_switches_are_refused_when_its_config_is_built():
    from typing import get_args

    from marlinkit.envs.traffic import data
    from marlinkit.envs.traffic.context import TimeProfile, TrafficContext
    from marlinkit.envs.traffic.env import TrafficEnvConfig

    assert tuple(data.FLOWS) == get_args(data.FlowName)  # one list of the data set's flows
    assert TrafficEnvConfig(engine="cityflow", flow="real_5734").flow == "real_5734"
    for field, value in (("engine", "vissim"), ("flow", "real_9999")):
        with pytest.raises(ValueError, match=f"unknown {field} '{value}': {field} must be one of"):
            TrafficEnvConfig(**{field: value})
    with pytest.raises(ValueError, match="time_profile.kind must be one of"):
        TimeProfile(kind="weekly").validate()
    with pytest.raises(ValueError, match="major_axis must be one of"):
        TrafficContext(major_axis="diagonal")


@pytest.mark.parametrize("section", ["ablation", "llm_only", "workshop"])
def test_an_unknown_llm_setting_is_refused_when_the_config_is_built(section):
    from marlinkit.errors import ParameterError

    config = presets.get("smoke", section)
    part = config.negotiation if section == "workshop" else config
    with pytest.raises(ParameterError, match="LLM = 'llama': unknown LLM setting"):
        dataclasses.replace(part, llm="llama")
    if section == "ablation":  # the reference architect, a surrogate, is the ablation's own setting
        assert dataclasses.replace(config, llm="reference").llm == "reference"


def test_every_field_typed_by_a_named_literal_has_its_choices_checked():
    """A field annotated with a ``Literal`` alias (``EngineName``, ``FlowName``, ...) that the module declaring it does
    not import would read as having no choices, and take any value: every such annotation must resolve."""
    import importlib
    import pkgutil
    import re
    import typing

    import marlinkit

    modules = [importlib.import_module(info.name) for info in pkgutil.walk_packages(marlinkit.__path__, "marlinkit.")
               if not info.name.endswith("__main__") and ".sandbox.worker" not in info.name]
    aliases = {name for module in modules for name, value in vars(module).items()
               if typing.get_origin(value) is typing.Literal}
    assert {"EngineName", "FlowName", "PresetName", "Executor"} <= aliases
    unresolved, checked = [], 0
    for module in modules:
        for cls in vars(module).values():
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__):
                continue
            for f in dataclasses.fields(cls):
                declared_here = f.name in cls.__dict__.get("__annotations__", {})
                if declared_here and set(re.findall(r"\w+", str(f.type))) & aliases:
                    checked += 1
                    if config_fields.class_literal_choices(cls, f) is None:
                        unresolved.append(f"{cls.__module__}.{cls.__name__}.{f.name}: {f.type}")
    assert checked >= 8 and unresolved == []
