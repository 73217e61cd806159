"""`make figures` gets through: its commands parse, and at PRESET=paper the notebooks whose paper-protocol LLM calls are not
recorded are left out, and said so."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from marlinkit import paths

NEGOTIATION_NOTEBOOKS = {"marlin/fig2_negotiation", "marlin/llm_only", "marlin/fig6_scalability"}

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _dry_run(build_root, *args: str, **env: str) -> tuple[set[str], str]:
    """The notebooks `make -n figures ...` would execute (as <paper>/<name>), and its printed text. An empty
    BUILD_ROOT, so that notebooks a real `make figures` already executed here are listed too."""
    environment = {k: v for k, v in os.environ.items() if k not in ("RECORD", "MARLINKIT_RECORD", "PAPER_NEGOTIATIONS")}
    out = subprocess.run(["make", "-n", "--no-print-directory", "figures", f"BUILD_ROOT={build_root}", *args], cwd=paths.REPO_ROOT,
                         capture_output=True, text=True, env={**environment, **env}, check=True).stdout
    executed = set(re.findall(r"papermill .*? notebooks/(\w+/\w+)\.ipynb \S+\.partial\.ipynb", out))
    # What make would hand the shell must parse: a comma inside a recipe's $(if ...) once split its echo
    # mid-quote, and every `make figures` stopped there, before any notebook (a dry run only prints it).
    syntax = subprocess.run(["bash", "-n"], input=out, capture_output=True, text=True)
    assert syntax.returncode == 0, f"make figures {' '.join(args)}: its commands do not parse: {syntax.stderr}"
    return executed, out


def test_paper_preset_leaves_out_the_unrecorded_negotiations_and_says_so(tmp_path):
    executed, out = _dry_run(tmp_path, "PRESET=paper")
    assert executed and not executed & NEGOTIATION_NOTEBOOKS
    assert {"marlin/fig3_training", "marlin/table1_ttests", "marlin/fig5_hardware", "maestro/ablation_results"} <= executed
    said = [line for line in out.splitlines() if "leaves out" in line]
    assert said and all(name in said[0] for name in NEGOTIATION_NOTEBOOKS) and "RECORD=1" in said[0]


@pytest.mark.parametrize("args, env", [(("PRESET=paper", "RECORD=1"), {}), (("PRESET=paper",), {"MARLINKIT_RECORD": "1"}),
                                       (("PRESET=paper", "PAPER_NEGOTIATIONS=1"), {}), ((), {})])
def test_recording_replaying_or_another_preset_runs_them(tmp_path, args, env):
    executed, out = _dry_run(tmp_path, *args, **env)
    assert NEGOTIATION_NOTEBOOKS <= executed and "leaves out" not in out


# The notebooks' parameter names, as fig3_training.settings' arguments.
VARIANT_PARAMETERS = {"PLAN_SOURCE": "plan_source", "SWITCH_RULE": "switch_rule", "PLAN_STEPS": "plan_steps",
                      "NEGOTIATION": "negotiation"}


def test_each_paper_row_is_named_after_the_outputs_its_parameters_write(tmp_path):
    """A row's executed notebook (`<nb>__<variant>.ipynb`) is named after the figures and tables its parameters write
    (`grid.output_suffix`), so that make re-runs the row whose outputs are stale, and no two rows write one file."""
    from marlinkit.marlin import fig3_training, grid

    _, out = _dry_run(tmp_path, "PRESET=paper")
    rows = re.findall(r"notebooks/marlin/(fig3_training|table1_ttests)\.ipynb \S+/\1(__\w+)\.partial\.ipynb ((?:-p \S+ \S+ ?)*)", out)
    assert {suffix for _, suffix, _ in rows} == {"__code_switch", "__exact_planner", "__separate_plan_steps",
                                                  "__llm__quick_negotiation"}
    for notebook, suffix, parameters in rows:
        given = dict(re.findall(r"-p (\S+) (\S+)", parameters))
        assert given.pop("PRESET") == "paper"
        given.pop("FIGURES_DIR")
        budget = given.pop("PLAN_BUDGET", None)
        config, _, _ = fig3_training.settings("paper", **{VARIANT_PARAMETERS[k]: v for k, v in given.items()},
                                              **({"plan_budget": int(budget)} if budget else {}))
        assert grid.output_suffix(config) == suffix, (notebook, parameters)
