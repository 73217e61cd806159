"""`make figures` gets through: its commands parse, and at PRESET=paper the notebooks whose paper-protocol LLM calls are
not recorded are left out, and said so."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from marlinkit import paths, presets

NEGOTIATION_NOTEBOOKS = {"marlin/fig2_negotiation", "marlin/llm_only", "marlin/fig6_scalability"}

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _dry_run(build_root, *args: str, **env: str) -> tuple[set[str], str]:
    """The notebooks `make -n figures ...` would execute (as <paper>/<name>), and its printed text. An empty
    BUILD_ROOT, so that notebooks a real `make figures` already executed here are listed too."""
    environment = {k: v for k, v in os.environ.items() if k not in ("RECORD", "MARLINKIT_RECORD", "PAPER_NEGOTIATIONS")}
    out = subprocess.run(["make", "-n", "--no-print-directory", "figures", f"BUILD_ROOT={build_root}", *args],
                         cwd=paths.REPO_ROOT, capture_output=True, text=True, env={**environment, **env},
                         check=True).stdout
    executed = set(re.findall(r"papermill .*? notebooks/(\w+/\w+)\.ipynb \S+\.partial\.ipynb", out))
    # What make would hand the shell must parse: a comma inside a recipe's $(if ...) once split its echo
    # mid-quote, and every `make figures` stopped there, before any notebook (a dry run only prints it).
    syntax = subprocess.run(["bash", "-n"], input=out, capture_output=True, text=True)
    assert syntax.returncode == 0, f"make figures {' '.join(args)}: its commands do not parse: {syntax.stderr}"
    return executed, out


def test_paper_preset_leaves_out_the_unrecorded_negotiations_and_says_so(tmp_path):
    executed, out = _dry_run(tmp_path, "PRESET=paper")
    assert executed and not executed & NEGOTIATION_NOTEBOOKS
    assert {"marlin/fig3_training", "marlin/fig5_hardware", "maestro/ablation_results"} <= executed
    said = [line for line in out.splitlines() if "leaves out" in line]
    assert said and all(name in said[0] for name in NEGOTIATION_NOTEBOOKS) and "RECORD=1" in said[0]


@pytest.mark.parametrize("args, env", [(("PRESET=paper", "RECORD=1"), {}),
                                       pytest.param(("PRESET=paper",), {"MARLINKIT_RECORD": "1"},
                                                    marks=pytest.mark.slow),
                                       pytest.param(("PRESET=paper", "PAPER_NEGOTIATIONS=1"), {},
                                                    marks=pytest.mark.slow),
                                       pytest.param((), {}, marks=pytest.mark.slow)])
def test_recording_replaying_or_another_preset_runs_them(tmp_path, args, env):
    executed, out = _dry_run(tmp_path, *args, **env)
    said = [line for line in out.splitlines() if "leaves out" in line]
    assert (NEGOTIATION_NOTEBOOKS <= executed
            and not any(name in line for line in said for name in NEGOTIATION_NOTEBOOKS))


# The notebooks' parameter names, as fig3_training.settings' arguments.
VARIANT_PARAMETERS = {"PLAN_SOURCE": "plan_source", "SWITCH_RULE": "switch_rule", "PLAN_STEPS": "plan_steps",
                      "NEGOTIATION": "negotiation"}


def test_each_paper_row_is_named_after_the_outputs_its_parameters_write(tmp_path):
    """A row's executed notebook (`<nb>__<variant>.ipynb`) is named after the figures and tables its parameters write
    (`grid.output_suffix`), so that make re-runs the row whose outputs are stale, and no two rows write one file."""
    from marlinkit.marlin import fig3_training, grid

    _, out = _dry_run(tmp_path, "PRESET=paper")
    rows = re.findall(r"notebooks/marlin/(fig3_training)\.ipynb \S+/\1(__\w+)\.partial\.ipynb ((?:-p \S+ \S+ ?)*)", out)
    assert {suffix for _, suffix, _ in rows} == {"__code_switch", "__exact_planner", "__separate_plan_steps",
                                                  "__llm__quick_negotiation"}
    for notebook, suffix, parameters in rows:
        given = dict(re.findall(r"-p (\S+) (\S+)", parameters))
        assert given.pop("PRESET") == "paper"
        given.pop("FIGURES_DIR")
        budget = given.pop("PLAN_BUDGET", None)
        fields = {VARIANT_PARAMETERS[k]: v for k, v in given.items() if k != "PLAN_STEPS"}
        section = presets.get("paper", "fig3_training", **fields, **({"plan_budget": int(budget)} if budget else {}))
        config, _, _ = fig3_training.settings(section, given.get("PLAN_STEPS"))
        assert grid.output_suffix(config) == suffix, (notebook, parameters)


def _maestro_rows(out: str) -> list[tuple[str, str, str]]:
    """(notebook, suffix, parameters) of each MAESTRO variant row in `make -n figures` output."""
    return re.findall(r"notebooks/maestro/(ablation_results|cost_breakdown)\.ipynb \S+/\1(__\w+)\.partial\.ipynb "
                      r"(.*)$", out, flags=re.MULTILINE)


@pytest.mark.slow
def test_the_maestro_rows_are_named_after_the_outputs_their_maddpg_setting_writes(tmp_path):
    """At PRESET=paper, the ablation's notebooks also run under the sweep's chosen MADDPG cadence: all 36 of its runs
    are committed. With fewer and no seed complete (a partial copy of the run folder, RUNS_DIR_ue25_openblas), make
    says it skips them and how many exist, unless RECORD=1 trains the rest. Each row's executed notebook carries the
    suffix its figures and tables get (`ablation.output_suffix`), so that no row overwrites the paper-default outputs
    and make re-runs the row whose outputs are stale."""
    from marlinkit.maestro import ablation

    config = presets.ablation_config("paper", record=False, maddpg_setting="ue25_openblas")
    runs = sorted(ablation.results_root("paper", config).glob("A*__seed*.json"))
    assert len(runs) == len(config.ablations) * len(config.seeds) == 36
    partial = tmp_path / "partial"
    partial.mkdir()
    for run in runs[:5]:
        shutil.copy(run, partial)
    _, out = _dry_run(tmp_path / "build", "PRESET=paper", f"RUNS_DIR_ue25_openblas={partial}")
    def ue25_rows(out: str) -> list[tuple[str, str, str]]:  # the reference architect's rows have their own test
        return [row for row in _maestro_rows(out) if "reference_architect" not in row[1]]

    assert not ue25_rows(out) and "skips the MAESTRO ablation row ue25_openblas: 5 of its 36 runs are committed" in out
    for args in (("PRESET=paper",), ("PRESET=paper", f"RUNS_DIR_ue25_openblas={partial}", "RECORD=1")):
        _, out = _dry_run(tmp_path / "build", *args)
        rows = ue25_rows(out)
        assert sorted(notebook for notebook, _, _ in rows) == ["ablation_results", "cost_breakdown"], args
        for notebook, suffix, parameters in rows:
            given = dict(re.findall(r"-p (\S+) (\S+)", parameters))
            assert given["MADDPG"] == config.maddpg_setting, (notebook, parameters)
            assert ablation.output_suffix(presets.ablation_config(given["PRESET"], record=False,
                                                               maddpg_setting=given["MADDPG"])) \
                == suffix == "__ue25_openblas_maddpg", (notebook, parameters)
        assert "MAESTRO ablation row ue25_openblas" not in out, args


ROWS_WITH_FOUR_CONFIGURATIONS = {  # make's folder variable, the overrides, the words of its note
    "reference": ("RUNS_DIR_reference_architect", {"maddpg": "ue25_openblas", "curriculum": "plain_maddpg"},
                  "MAESTRO ablation row reference_architect"),
    "shared5": ("RUNS_DIR_reference_architect_shared5", {"maddpg": "shared5", "curriculum": "paper"},
                "MAESTRO ablation row reference_architect_shared5"),
}


@pytest.mark.slow
@pytest.mark.parametrize("row", sorted(ROWS_WITH_FOUR_CONFIGURATIONS))
def test_the_reference_architect_rows_run_over_the_seeds_with_all_four_runs_and_are_named_after_their_outputs(
        tmp_path, row):
    """The reference-architect ablations (A0/A2/A7/A8 x 12 seeds, `reference_queue`; its first row and the shared5 row)
    run at PRESET=paper over the seeds whose four runs are committed (counted in the row's folder), and say so; with no
    such seed make skips the row and says how many runs are in; with all 48 it runs over the preset's seeds. The rows
    pass ARCHITECT=reference (and the shared5 row its MADDPG setting and curriculum target) and carry the suffix their
    outputs get; MAESTRO's claims come from the claims ledger, made at PRESET=paper, with no per-paper claims table."""
    from marlinkit.maestro import ablation, reference_queue

    folder_variable, chosen, words = ROWS_WITH_FOUR_CONFIGURATIONS[row]
    config = presets.ablation_config("paper", record=False, **reference_queue.overrides("reference", **chosen))
    runs, empty = tmp_path / "runs", tmp_path / "empty"
    runs.mkdir()
    empty.mkdir()
    others = [f"{v}={empty}" for v, _, _ in ROWS_WITH_FOUR_CONFIGURATIONS.values() if v != folder_variable]

    def commit(first: int, last: int) -> str:
        for a, s in reference_queue.queue(config.seeds)[first:last]:
            (runs / f"{a}__seed{s}.json").write_text("{}")
        return _dry_run(tmp_path / "build", "PRESET=paper", f"{folder_variable}={runs}", *others)[1]

    def rows(out: str) -> list[tuple[str, str, dict[str, str]]]:
        found = [(nb, suffix, {**dict(re.findall(r"-p (\S+) (\S+)", parameters)),
                               **dict(re.findall(r"-y '(SEEDS): (\[[^]]*\])'", parameters))})
                 for nb, suffix, parameters in _maestro_rows(out) if "reference" in suffix]
        assert all(suffix == ablation.output_suffix(config) for _, suffix, _ in found), found
        for _, _, parameters in found:
            assert ((parameters.get("MADDPG"), parameters.get("CURRICULUM"))
                    == (chosen.get("maddpg"), chosen.get("curriculum"))), parameters
        return found

    out = commit(0, 3)  # A2, A0, A8 of seed 200: no seed has all four
    assert f"{words}: 3 of its 48 runs are committed, no seed has all 4" in out and not rows(out)
    assert "notebooks/claims_ledger.ipynb" in out and "marlinkit.maestro.claims" not in out
    out = commit(3, 11)  # seed 200 and 300 complete, seed 400's A2 A0 A8
    assert f"{words} over seeds [200, 300] only, those with all 4 runs committed: 11 of its 48" in out
    made = rows(out)
    assert sorted(nb for nb, _, _ in made) == ["ablation_results", "cost_breakdown"]
    assert all(p["ARCHITECT"] == "reference" and p["SEEDS"] == "[200, 300]" for _, _, p in made), made
    out = commit(11, 48)
    made = rows(out)
    assert len(made) == 2 and all(p["ARCHITECT"] == "reference" and "SEEDS" not in p for _, _, p in made), made
    said = "".join(line for line in out.splitlines() if line.startswith("echo"))
    assert f"{words}:" not in said and f"{words} over" not in said
