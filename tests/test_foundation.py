"""The project's plumbing: presets, result store, figure files, CLI contract, README table."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from marlinkit import paths, plots, presets
from marlinkit.runs import ResultStore, config_hash


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


def _draw(out_dir):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [0, 1, 0.5])
    written = plots.save_figure(fig, out_dir, "demo", plots.provenance_text("smoke", engine="test", llm="none"))
    plt.close(fig)
    return {p.suffix: p.read_bytes() for p in written}


def test_figures_are_byte_stable_across_reruns(tmp_path):
    first, second = _draw(tmp_path / "a"), _draw(tmp_path / "b")
    assert first.keys() == {".png", ".pdf"}
    assert first == second


def test_tables_are_written_in_three_formats_with_caption(tmp_path):
    table = pd.DataFrame({"scenario": ["single_slot"], "MARL": [0.5]})
    written = plots.save_table(table, tmp_path, "t", "Table X (preset: smoke)")
    assert [p.suffix for p in written] == [".csv", ".md", ".tex"]
    assert "Table X (preset: smoke)" in (tmp_path / "t.md").read_text()
    assert "single\\_slot" in (tmp_path / "t.tex").read_text()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "marlinkit", *args], capture_output=True, text=True, timeout=120)


def test_cli_info_prints_one_json_object_last():
    done = _cli("info", "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["versions"]["torch"].startswith("2.13.0")
    assert info["device"]["torch_device"] in ("cpu", "cuda")
    assert set(info["llm_backends"]) >= {"scripted", "transformers", "smollm2", "openai"}
    assert "sumo" in info["traffic_engines"]


def test_cli_rejects_an_unknown_preset_with_a_clear_error():
    done = _cli("presets", "--check", "fast", "--json")
    assert done.returncode == 2
    assert "unknown preset 'fast'" in json.loads(done.stdout.strip().splitlines()[-1])["error"]


def test_every_output_the_readme_figure_table_names_exists():
    readme = (paths.REPO_ROOT / "README.md").read_text()
    section = readme.split("## Figures and tables", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(figures/[^`]+)`", section)
    assert named, "the README figure table names no output files"
    missing = []
    for entry in named:
        # `figures/marlin/fig1_scenarios.{png,pdf}` names two files
        stem, _, exts = entry.partition("{")
        candidates = [stem + ext for ext in exts.rstrip("}").split(",")] if exts else [entry]
        missing += [c for c in candidates if not (paths.REPO_ROOT / c).exists()]
    assert not missing, f"README names outputs that do not exist: {missing}"
