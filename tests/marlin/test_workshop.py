"""The workshop runners: seeded floors, plans played through the PettingZoo API, cached training, thresholds."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from marlinkit import presets
from marlinkit.marlin import workshop
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import get_layout
from marlinkit.llm import config as llm_config
from marlinkit.llm.backends.smollm2 import MODEL_NAME

SMOKE = presets.get("smoke", "workshop")


def scripted_comparison(root, **changes):
    """Notebook 04's comparison at nbval's sizes with the greedy script as the LLM (no model, no transcript)."""
    return workshop.run(dataclasses.replace(SMOKE, part="comparison", llm="scripted", root=root, **changes))


def test_random_floor_is_seeded_and_below_the_planner():
    first = workshop.random_policy_performance("single_slot", runs=64, seed=3)
    assert np.array_equal(first, workshop.random_policy_performance("single_slot", runs=64, seed=3))
    assert not np.array_equal(first, workshop.random_policy_performance("single_slot", runs=64, seed=4))
    assert first.shape == (64,) and ((0 <= first) & (first <= 1)).all() and first.mean() < 0.9
    with pytest.raises(ValueError, match="runs must be >= 1"):
        workshop.random_policy_performance("single_slot", runs=0, seed=0)


def test_play_plan_steps_the_env_to_the_plans_performance():
    layout = get_layout("maze_like")
    plan = ExactJointPlanner().make_plan(layout, np.array(layout.starts), 50)
    env, infos = workshop.play_plan(layout, plan.actions)
    assert infos["robot_0"]["performance"] == plan.performance == 1.0
    assert not env.agents  # the episode ran to its 50-step end
    assert env.render().ndim == 3
    _, idle = workshop.play_plan(layout, np.zeros((0, 2)), render_mode=None)
    assert idle["robot_1"]["performance"] == 0.0
    with pytest.raises(ValueError, match="at most 50 steps"):
        workshop.play_plan(layout, np.zeros((51, 2)))


def test_training_runs_the_preset_sizes_and_reloads_them(tmp_path):
    section = presets.get("smoke", "workshop")
    training = section.training
    assert section.part == "training" and section.preset == "smoke"
    results = workshop.run(dataclasses.replace(section, root=tmp_path))
    assert set(results.episodes.system) == {"MARL"}
    assert len(results.episodes) == training.episodes * training.n_envs
    assert (results.evaluations.groupby("checkpoint").size().to_dict()
            == {c: training.eval_runs for c in training.checkpoints})
    again = workshop.run(dataclasses.replace(section, root=tmp_path))  # loaded from the result store, not retrained
    assert again.evaluations.performance.tolist() == results.evaluations.performance.tolist()


def test_comparison_uses_each_plan_sources_own_llm_only_performance(tmp_path):
    comparison = scripted_comparison(tmp_path)
    llm_label = "scripted negotiation"
    assert comparison.thresholds[workshop.EXACT_LABEL] == 1.0
    alone = comparison.episodes[comparison.episodes.curve == f"{llm_label} (alone)"]
    assert comparison.thresholds[llm_label] == pytest.approx(alone.performance.mean())
    sidecars = [json.loads(p.read_text()) for p in tmp_path.rglob("*marlin*seed0.json")]
    assert sorted(s["config"]["llm_only_performance"] for s in sidecars) == sorted(comparison.thresholds.values())
    assert set(comparison.episodes.curve) == {"MARL", *(f"MARLIN ({label})" for label in comparison.thresholds),
                                              *(f"{label} (alone)" for label in comparison.thresholds)}
    assert {workshop.curve_source(curve) for curve in comparison.episodes.curve} == {"MARL", *comparison.thresholds}
    # The forced plan episodes (6-10) with the exact planner follow its perfect plan from the start.
    exact = comparison.episodes[comparison.episodes.curve == f"MARLIN ({workshop.EXACT_LABEL})"]
    forced = exact[exact.episode.between(6, 10) & (exact.generator == "plan") & ~exact.toggled]
    assert len(forced) and (forced.performance == 1.0).all()
    table = workshop.comparison_table(comparison)
    checkpoints = presets.get("smoke", "workshop").marlin.checkpoints
    assert len(table) == 2 * len(checkpoints) and set(table.plan_source) == set(comparison.thresholds)


def test_smoke_comparison_replays_from_the_committed_smollm2_transcript(tmp_path):
    backend = type("B", (), {"name": "smollm2", "model": MODEL_NAME})
    path = llm_config.transcript_path("workshop_smoke", backend)
    if not path.exists():
        pytest.fail(f"{path} is missing: record it by running notebooks/workshop 03 and 04 with MARLINKIT_RECORD=1")
    # strict replay: a changed prompt or schedule fails here, naming the missing call
    comparison = workshop.run(dataclasses.replace(SMOKE, part="comparison", root=tmp_path))
    replayed = re.search(r": 0 calls to the model, (\d+) replies replayed from data/transcripts/", comparison.llm_calls)
    assert replayed and int(replayed.group(1)) > 0, comparison.llm_calls
    assert 0 <= comparison.thresholds["smollm2 negotiation"] <= 1


def test_learning_curve_figure_draws_training_curves_and_llm_only_lines(tmp_path):
    comparison = scripted_comparison(tmp_path)
    fig = workshop.learning_curve_figure(comparison.episodes, comparison.evaluations, by="curve")
    labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert sorted(labels) == sorted(set(comparison.episodes.curve))
    dashed = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert (sorted(round(line.get_ydata()[0], 6) for line in dashed)
            == sorted(round(v, 6) for v in comparison.thresholds.values()))


def test_the_scripted_llm_runs_every_cell_that_reports_llm_calls(tmp_path):
    # the exercise's LLM = "scripted": a script, uncached
    comparison = scripted_comparison(tmp_path, plan_budget=2)
    computed = re.search(r"^scripted \(greedy-robots\): (\d+) replies computed by the script", comparison.llm_calls)
    assert computed and int(computed.group(1)) > 0, comparison.llm_calls
    assert comparison.provenance.details["training"].endswith("plan budget 2")
    assert comparison.thresholds["scripted negotiation"] > 0
    sidecars = [json.loads(p.read_text()) for p in tmp_path.rglob("*marlin*seed0.json")]
    assert sidecars and {s["config"]["plan_budget"] for s in sidecars} == {2}


def test_the_workshop_preset_replays_the_committed_recording_and_records_misses_to_an_ignored_file():
    import subprocess

    from marlinkit import paths

    backend = workshop.chat_backend(presets.get("workshop", "workshop"))
    assert backend.path.name.startswith("workshop_workshop_local__") and not backend.replay_only
    committed = backend.shared[0]
    assert (committed.name.startswith("workshop_workshop__")
            and committed.is_file()), "the teacher's recording is committed"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(backend.path)], cwd=paths.REPO_ROOT).returncode
    assert ignored == 0, f"{backend.path} (live calls) must be git-ignored"
    # nbval: strict replay, committed
    assert workshop.chat_backend(SMOKE).path.name.startswith("workshop_smoke__")


@pytest.mark.parametrize("bad, parameter", [({"preset": "quik"}, "PRESET"), ({"plan_budget": 0}, "PLAN_BUDGET"),
                                            ({"llm": "llama"}, "LLM")])
def test_a_bad_notebook_parameter_is_a_parameter_error_naming_it_and_the_allowed_values(bad, parameter, tmp_path):
    from marlinkit.errors import ParameterError

    with pytest.raises(ParameterError) as error:  # what the notebooks' first cell does with their parameters
        presets.get(bad.pop("preset", "smoke"), "workshop", part="comparison", root=tmp_path, **bad)
    assert error.value.parameter == parameter and str(error.value).startswith(f"{parameter} = ")
    (line,) = error.value._render_traceback_()  # what IPython shows instead of the traceback: one line
    assert "parameters cell" in line and parameter in line
