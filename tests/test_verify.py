"""`make verify`'s comparison on real small output folders: tables, renderings, images, missing and new files."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from marlinkit import paths, plots, presets
from marlinkit.commands import verify as verify_command
from marlinkit.repro import comparisons, verify

COST = pd.DataFrame({"Component": ["simulation", "LLM calls", "Total"], "Calls": ["—", "58", "—"],
                     "Total (s, all runs)": [49.1, 925.2, 974.3], "Percentage": ["5.0%", "95.0%", "100%"]})
SCORES = pd.DataFrame({"scenario": ["single_slot", "maze_like"], "MARL": [0.436, 0.512], "p_value": [0.0022, 0.3]})


def write_outputs(root: Path, cost: pd.DataFrame = COST, scores: pd.DataFrame = SCORES) -> Path:
    """A reference-like folder written by the project's own writers (CSV + Markdown + LaTeX, PNG + PDF)."""
    provenance = plots.Provenance("quick", engine="corridor core (numpy)", seeds=(0, 1))
    plots.save_table(cost, root / "maestro", "table5_cost", "Table 5.", provenance)
    plots.save_table(scores, root / "marlin", "table1_ttests", "Table I.", provenance)
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot(scores["MARL"])
    plots.save_figure(fig, root / "marlin", "fig3_training", provenance)
    plt.close(fig)
    return root


@pytest.fixture
def folders(tmp_path):
    for name in ("reference", "scratch"):
        (tmp_path / name / "maestro").mkdir(parents=True)
        (tmp_path / name / "marlin").mkdir(parents=True)
    return write_outputs(tmp_path / "reference"), tmp_path / "scratch"


def by_path(checks):
    return {c.path: c for c in checks}


def test_identical_reruns_are_the_same_file_by_file(folders):
    reference, scratch = folders
    write_outputs(scratch)
    checks = verify.compare_trees(reference, scratch)
    assert len(checks) == 11 and all(c.status == "same" for c in checks)
    text, ok = verify.summary(checks, 0, images_informational=False)
    assert ok and "tables and data files: 9 same" in text and "images: 2 same" in text and "live LLM calls: 0" in text


def test_a_changed_cell_is_reported_with_row_column_and_values(folders):
    reference, scratch = folders
    write_outputs(scratch, scores=SCORES.assign(MARL=[0.376, 0.512]))
    checks = by_path(verify.compare_trees(reference, scratch))
    table = checks["marlin/table1_ttests.csv"]
    assert table.status == "differs" and table.details == ["row 1 (single_slot), column 'MARL': '0.436' -> '0.376'"]
    assert checks["marlin/table1_ttests.md"].status == checks["marlin/table1_ttests.tex"].status == "differs"
    assert checks["marlin/fig3_training.png"].status == "differs"  # the figure drawn from it changed too
    text, ok = verify.summary(list(checks.values()), 0, images_informational=False)
    assert not ok and "differs   marlin/table1_ttests.csv" in text


def test_wall_time_columns_are_tolerated_and_nothing_else(folders):
    reference, scratch = folders
    replayed = COST.assign(**{"Total (s, all runs)": [51.0, 0.4, 51.4], "Percentage": ["99.2%", "0.8%", "100%"]})
    write_outputs(scratch, cost=replayed)
    checks = by_path(verify.compare_trees(reference, scratch))
    assert checks["maestro/table5_cost.csv"].status == "tolerated"
    assert "5 wall-time cell(s) differ" in checks["maestro/table5_cost.csv"].details[0]
    assert checks["maestro/table5_cost.md"].status == checks["maestro/table5_cost.tex"].status == "tolerated"
    assert verify.summary(list(checks.values()), 0, images_informational=False)[1]
    # A non-time cell of the same table, or a wall-time cell that is no longer a number, is a difference.
    write_outputs(scratch, cost=replayed.assign(Calls=["—", "57", "—"]))
    checks = by_path(verify.compare_trees(reference, scratch))
    assert checks["maestro/table5_cost.csv"].details == ["row 2 (LLM calls), column 'Calls': '58' -> '57'"]
    assert checks["maestro/table5_cost.md"].status == "differs"
    write_outputs(scratch, cost=replayed.assign(Percentage=["99.2%", "n/a", "100%"]))
    assert by_path(verify.compare_trees(reference, scratch))["maestro/table5_cost.csv"].status == "differs"


def test_missing_and_new_files_are_reported(folders):
    reference, scratch = folders
    write_outputs(scratch)
    (scratch / "marlin" / "table1_ttests.tex").unlink()
    shutil.copy(scratch / "marlin" / "table1_ttests.csv", scratch / "marlin" / "extra.csv")
    checks = by_path(verify.compare_trees(reference, scratch))
    assert checks["marlin/table1_ttests.tex"].status == "missing" and checks["marlin/extra.csv"].status == "new"
    text, ok = verify.summary(list(checks.values()), 0, images_informational=False)
    assert not ok and "1 missing" in text and "1 new" in text


def test_images_can_be_informational_and_live_calls_always_fail(folders):
    reference, scratch = folders
    write_outputs(scratch)
    (scratch / "marlin" / "fig3_training.png").write_bytes(b"another matplotlib build")
    checks = verify.compare_trees(reference, scratch)
    assert not verify.summary(checks, 0, images_informational=False)[1]
    text, ok = verify.summary(checks, 0, images_informational=True)
    assert ok and "images (informational): 1 same, 1 differs" in text
    assert not verify.summary(verify.compare_trees(reference, reference), 2, images_informational=False)[1]


def test_live_calls_are_records_added_to_the_transcripts(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"key": 1}\n')
    before = comparisons.transcript_records(tmp_path)
    with (tmp_path / "a.jsonl").open("a") as handle:
        handle.write('{"key": 2}\n')
    (tmp_path / "b.jsonl").write_text('{"key": 3}\n')
    assert comparisons.live_calls(before, comparisons.transcript_records(tmp_path)) == 2


def test_the_command_compares_a_scratch_folder_and_exits_non_zero_on_a_difference(folders, capsys):
    reference, scratch = folders
    write_outputs(scratch / "figures", scores=SCORES.assign(p_value=[0.18, 0.3]))
    args = argparse.Namespace(preset="quick", reference=reference, scratch=scratch, compare_only=True,
                              images_informational=False)
    result = verify_command.command(args)
    assert result["exit_code"] == 1 and "marlin/table1_ttests.csv" in result["differing"]
    assert "column 'p_value': '0.0022' -> '0.18'" in capsys.readouterr().out
    shutil.rmtree(scratch / "figures")
    write_outputs(scratch / "figures")
    assert verify_command.command(args)["exit_code"] == 0


def test_the_paper_presets_folder_and_ledger_inside_figures_are_not_part_of_the_quick_comparison(folders):
    reference, scratch = folders
    write_outputs(scratch)
    (reference / "paper" / "marlin").mkdir(parents=True)
    (reference / "paper" / "marlin" / "table1_ttests.csv").write_text("scenario\nmaze_like\n")
    (reference / "claims.csv").write_text("paper,claim\nMARLIN,learns faster\n")  # the paper preset's claims ledger
    missing = by_path(verify.compare_trees(reference, scratch))
    assert "paper/marlin/table1_ttests.csv" in missing and "claims.csv" in missing  # neither is the quick preset's
    checks = verify.compare_trees(reference, scratch, skip=verify.PAPER_IN_FIGURES)
    assert not any(c.path.startswith("paper/") or c.path == "claims.csv" for c in checks)
    assert verify.summary(checks, 0, images_informational=False)[1]  # the rest is the same file by file
    assert verify.reference_root("paper") == verify.reference_root("quick") / "paper"


def test_every_file_the_claims_ledger_writes_into_figures_is_left_out_of_the_quick_comparison():
    from marlinkit import claims

    written = {claims.LEDGER_PATH, claims.CELLS_PATH, claims.VALUES_PATH}
    assert all(path.parent == paths.FIGURES_DIR and path.name in verify.PAPER_IN_FIGURES for path in written)


@pytest.mark.slow
def test_one_maestro_run_is_recomputed_and_compared_with_its_committed_files(tmp_path, monkeypatch, capsys):
    """`verify --maestro-run A2:200`: a real smoke run recomputed in a scratch folder matches its reference up to
    the measured wall-time columns and the generation log's timing fields; a changed result cell, a changed
    generation record and a run with no reference are each caught."""
    import json

    from marlinkit import paths
    from marlinkit.maestro import ablation

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    # committed
    ablation.run(presets.ablation_config("smoke", seeds=[200], ablations=["A2"], workers=1, progress=False))
    reference = tmp_path / "results" / "maestro" / "smoke"
    scratch = tmp_path / "scratch"
    checks = by_path(verify.verify_maestro_run("smoke", "A2:200", scratch, verify_command.HOOKS))
    assert set(checks) == {"A2__seed200.csv", "ablation_calibration.csv", "A2__seed200.generations.jsonl",
                           "A2__seed200.json"}
    assert all(c.ok for c in checks.values()), checks
    assert checks["A2__seed200.csv"].status == "tolerated"  # its measured wall-time columns differ, nothing else
    table = pd.read_csv(reference / "A2__seed200.csv")
    table.loc[2, "score"] += 1e-9  # one result cell
    table.to_csv(reference / "A2__seed200.csv", index=False)
    log = [json.loads(line) for line in (reference / "A2__seed200.generations.jsonl").read_text().splitlines()]
    # A7's sandbox verdicts time their stages: tolerated
    timed = [dict(r, verdict={"accepted": False, "timings": {"syntax": 0.001}}) for r in log]
    retimed = [dict(r, verdict={"accepted": False, "timings": {"syntax": 0.002}}) for r in log]
    for name, records in (("timed.jsonl", timed), ("retimed.jsonl", retimed)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    assert verify.compare_generation_logs(tmp_path / "timed.jsonl", tmp_path / "retimed.jsonl")[0] == "tolerated"
    retimed[0]["verdict"]["accepted"] = True
    (tmp_path / "retimed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in retimed))
    assert verify.compare_generation_logs(tmp_path / "timed.jsonl", tmp_path / "retimed.jsonl")[0] == "differs"
    log[0]["reply"] = log[0]["reply"] + " "
    (reference / "A2__seed200.generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    result = verify_command.command(argparse.Namespace(preset="smoke", reference=None, scratch=scratch,
                                                   compare_only=False, maestro_run="A2:200",
                                                   images_informational=False))
    assert result["exit_code"] == 1 and result["live_llm_calls"] == 0
    assert result["differing"] == ["A2__seed200.csv", "A2__seed200.generations.jsonl"]
    out = capsys.readouterr().out
    assert "column 'score'" in out and "record 1, field 'reply'" in out and "DIFFERENCES FOUND" in out
    with pytest.raises(FileNotFoundError, match="no committed run A2__seed300"):
        verify.verify_maestro_run("smoke", "A2:300", scratch, verify_command.HOOKS)
    with pytest.raises(ValueError, match="ABLATION:SEED"):
        verify.verify_maestro_run("smoke", "A9:200", scratch, verify_command.HOOKS)
