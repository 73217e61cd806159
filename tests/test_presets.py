"""The presets: one section per experiment, overrides checked before compute."""

from __future__ import annotations

import pytest

from marlinkit import presets


def test_every_preset_has_the_same_sections_and_keys():
    reference = presets.PRESETS[presets.DEFAULT_PRESET]
    for name in presets.PRESET_NAMES:
        sections = presets.PRESETS[name]
        assert sections.keys() == reference.keys(), name
        for section, settings in sections.items():
            assert settings.keys() == reference[section].keys(), (name, section)


def test_preset_overrides_apply_and_typos_fail_before_compute():
    settings = presets.get("smoke", "marlin_training", episodes=3)
    assert settings["episodes"] == 3
    settings["scenarios"].append("not_a_layout")  # callers get copies, never the shared definition
    assert "not_a_layout" not in presets.get("smoke", "marlin_training")["scenarios"]
    with pytest.raises(ValueError, match="unknown marlin_training setting"):
        presets.get("smoke", "marlin_training", episode=3)
    with pytest.raises(ValueError, match="unknown preset"):
        presets.get("fast", "marlin_training")


def test_executor_environment_variables_move_every_grid_and_explicit_settings_win(monkeypatch):
    monkeypatch.setenv("MARLINKIT_EXECUTOR", "ray")
    monkeypatch.setenv("MARLINKIT_RAY_ADDRESS", "auto")
    with_executor = [s for s, settings in presets.PRESETS["paper"].items() if "executor" in settings]
    assert {"marlin_training", "maestro", "fig5_hardware", "dynamic_env"} <= set(with_executor)
    for section in with_executor:
        settings = presets.get("paper", section)
        assert (settings["executor"], settings["ray_address"]) == ("ray", "auto"), section
    assert presets.get("paper", "marlin_training", executor="local")["executor"] == "local"
    assert "executor" not in presets.get("paper", "llm_only")
