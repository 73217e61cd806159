"""The presets: one section per experiment, overrides checked before compute."""

from __future__ import annotations

import dataclasses

import pytest

from marlinkit import presets


def test_every_preset_has_the_same_sections_and_a_key_one_leaves_out_is_none():
    """A key left out of the presets file takes its Config's default: only a field whose default is None is left out
    where another preset sets it, so every preset states every value that is not None."""
    reference = presets.PRESETS[presets.DEFAULT_PRESET]
    for name in presets.PRESET_NAMES:
        sections = presets.PRESETS[name]
        assert sections.keys() == reference.keys(), name
        for section, values in sections.items():
            defaults = {f.name: f.default for f in dataclasses.fields(presets.config_class(section))}
            keys = set().union(*(presets.PRESETS[other][section] for other in presets.PRESET_NAMES))
            assert all(defaults[key] is None for key in keys - set(values)), (name, section, keys - set(values))


def test_preset_overrides_apply_and_typos_fail_before_compute():
    config = presets.get("smoke", "fig3_training", episodes=3, checkpoints=[1, 3])
    assert config.episodes == 3 and config.checkpoints == (1, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.episodes = 4  # a config is frozen: a changed copy is dataclasses.replace(config, ...)
    with pytest.raises(ValueError, match=r"unknown fig3_training setting\(s\) \['episode'\]"):
        presets.get("smoke", "fig3_training", episode=3)
    with pytest.raises(ValueError, match="checkpoints"):  # a bad value fails in the dataclass, naming its field
        presets.get("smoke", "fig3_training", episodes=3)
    with pytest.raises(ValueError, match="unknown preset"):
        presets.get("fast", "fig3_training")


def test_a_derived_field_is_refused_as_an_override_and_no_preset_sets_one():
    with pytest.raises(ValueError, match=r"\['checkpoints'\] are derived"):
        presets.get("smoke", "fig5_hardware", checkpoints=[1, 2])
    with pytest.raises(ValueError, match=r"\['layout_schedule', 'scenarios'\] are derived"):
        presets.get("smoke", "dynamic_env", scenarios=["maze_like"], layout_schedule=[[2, "single_slot"]])
    # the field to set instead
    assert presets.get("smoke", "dynamic_env", scenario="two_path").scenarios == ("two_path",)
    for preset, sections in presets.PRESETS.items():
        for section, values in sections.items():
            assert not set(values) & set(getattr(presets.config_class(section), "DERIVED", ())), (preset, section)


def test_every_section_is_its_experiments_frozen_config_with_a_docstring_per_field():
    """The Config dataclass of each section documents every field (the preset values are plain data)."""
    import ast
    import inspect

    for name in presets.PRESET_NAMES:
        for section in presets.PRESETS[name]:
            config = presets.get(name, section)
            assert dataclasses.is_dataclass(config) and type(config).__dataclass_params__.frozen, (name, section)
    for section in presets.PRESETS[presets.DEFAULT_PRESET]:
        for cls in type(presets.get("quick", section)).__mro__:
            if not dataclasses.is_dataclass(cls):
                continue
            body = ast.parse(inspect.getsource(cls)).body[0].body
            documented = {node.target.id for node, after in zip(body, body[1:]) if isinstance(node, ast.AnnAssign)
                          and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)}
            declared = {node.target.id for node in body if isinstance(node, ast.AnnAssign)}
            assert declared <= documented, (section, cls.__name__, sorted(declared - documented))


def test_executor_environment_variables_move_every_grid_and_explicit_settings_win(monkeypatch):
    monkeypatch.setenv("MARLINKIT_EXECUTOR", "ray")
    monkeypatch.setenv("MARLINKIT_RAY_ADDRESS", "auto")
    with_executor = [s for s, settings in presets.PRESETS["paper"].items() if "executor" in settings]
    assert {"fig3_training", "ablation", "fig5_hardware", "dynamic_env"} <= set(with_executor)
    for section in with_executor:
        config = presets.get("paper", section)
        assert (config.executor, config.ray_address) == ("ray", "auto"), section
    assert presets.get("paper", "fig3_training", executor="local").executor == "local"
    assert not hasattr(presets.get("paper", "llm_only"), "executor")


def test_every_section_is_named_after_its_experiment_module():
    modules = presets.experiments()
    assert set(modules) == set(presets.PRESETS[presets.DEFAULT_PRESET])
    assert all(module.__name__.rsplit(".", 1)[1] == section for section, module in modules.items())


def test_a_grid_negotiating_by_another_preset_names_a_known_preset():
    from marlinkit.errors import ParameterError

    assert presets.get("smoke", "fig3_training", plan_source="llm", negotiation="quick").negotiation == "quick"
    with pytest.raises(ParameterError) as error:
        presets.get("smoke", "fig3_training", plan_source="llm", negotiation="fast")
    assert error.value.parameter == "NEGOTIATION" and "smoke, quick, paper" in str(error.value)
