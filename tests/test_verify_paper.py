"""`make verify PRESET=paper` on real committed runs: prefixes equal the full run's first rows, every committed
run family is covered, a one-digit change and a missing transcript record fail by name, code records."""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from marlinkit import paths
from marlinkit.commands import verify
from marlinkit.repro import numerics, provenance, verify_paper
from marlinkit.marlin import batched, systems
from marlinkit.marlin.grid import GridConfig
from marlinkit.marlin.surrogate_planner import CalibratedSurrogatePlanner
from marlinkit.runs import ResultStore

PAPER_MARLIN = paths.DATA_DIR / "results" / "marlin" / "paper"
SMALL = {"episodes": 8, "n_envs": 2, "checkpoints": [4, 8], "eval_runs": 3,
         "mappo": {"update_epochs": 2, "steps_per_iteration": 40, "minibatch_size": 16}}


def _training(table: pd.DataFrame) -> pd.DataFrame:
    return table.drop(columns="wall_time_s")


@pytest.mark.parametrize("system", [pytest.param("MARL", marks=pytest.mark.slow), "MARLIN"])
def test_a_prefix_is_the_first_rows_of_the_full_run_on_both_trainers(system):
    # updates every 20 steps per copy, checkpoints at 4 and 8, Algorithm 1's plan episodes 6-10: the prefix of 5
    # episodes stops between them, with the full run's settings
    config = GridConfig(scenarios=("single_slot",), seeds=(3,), systems=(system,), trainer="batched", **SMALL)
    source = CalibratedSurrogatePlanner()
    full, evaluations = batched.train_systems([("single_slot", system, 3)], config, source)[0]
    prefix, prefix_evaluations = batched.train_systems([("single_slot", system, 3)], config, source, stop_after=5)[0]
    assert len(prefix) == 5 * 2 and len(full) == 8 * 2
    pd.testing.assert_frame_equal(_training(prefix), _training(full).iloc[:len(prefix)])
    assert set(prefix_evaluations.checkpoint) == {4}  # the checkpoint inside the prefix, evaluated as in the full run
    pd.testing.assert_frame_equal(prefix_evaluations, evaluations[evaluations.checkpoint == 4])
    alone, _ = systems.train_system("single_slot", system, 3, config, source, stop_after=5)
    alone_full, _ = systems.train_system("single_slot", system, 3, config, source)
    pd.testing.assert_frame_equal(_training(alone), _training(alone_full).iloc[:len(alone)])


def test_every_committed_run_is_in_a_checked_family():
    runs, others = verify_paper.discover(paths.DATA_DIR / "results", paths.DATA_DIR / "maestro_sweep")
    assert not [path for path, why in others if why.startswith(("UNKNOWN", "UNREADABLE"))]
    assert {Path(path).stem for path, why in others
            if not why.startswith("left out")} <= set(verify_paper.NOT_RECOMPUTED)
    families = {run.family for run in runs}
    for family in ("marlin/paper: marl", "marlin/paper: marlin-calibrated-surrogate-planner-code-switch",
                   "marlin/paper/fidelity/6-copies: marl",
                   "marlin/paper/fig5_hardware: marlin-calibrated-surrogate-planner",
                   "marlin/paper/dynamic_env: marlin-calibrated-surrogate-planner", "maestro/paper: A7",
                   "maestro/paper/ue25_openblas_maddpg: A8", "maestro_sweep: ue25"):
        assert family in families
    chosen = verify_paper.choose(runs, 5)
    assert set(chosen) == families and all(run.family == family for family, run in chosen.items())
    assert verify_paper.choose(runs, 5) == chosen and verify_paper.choose(runs, 6) != chosen  # seeded, rotating


def _copy_run(name: str, root: Path) -> Path:
    """One committed MARLIN paper run (sidecar and table) in a results root of its own; its table's path there."""
    folder = root / "marlin" / "paper"
    folder.mkdir(parents=True)
    for path in PAPER_MARLIN.glob(f"{name}.*"):
        shutil.copy(path, folder / path.name)
    return ResultStore(folder).table_path(name)


def _verify(root: Path, tmp_path: Path, capsys, episodes: int) -> tuple[dict, str]:
    parser = argparse.ArgumentParser()
    verify.add_arguments(parser)
    args = parser.parse_args(["--preset", "paper", "--runs-root", str(root), "--sweep-root", str(tmp_path / "no-sweep"),
                              "--episodes", str(episodes), "--workers", "1", "--seed-choice", "0",
                              "--scratch", str(tmp_path / "scratch")])
    out = verify.command(args)
    return out, capsys.readouterr().out


def test_a_committed_run_changed_in_one_digit_fails_by_name(tmp_path, capsys, monkeypatch):
    name = "single_slot__marl__seed0"
    table = _copy_run(name, tmp_path / "results")
    out, text = _verify(tmp_path / "results", tmp_path, capsys, episodes=2)
    assert out["exit_code"] == 0 and "ok       marlin/paper: marl" in text and "30 rows equal byte for byte" in text

    lines = gzip.decompress(table.read_bytes()).decode().splitlines(keepends=True)
    row = lines[17].split(",")  # row 17: episode 2, copy 1
    column = lines[0].split(",").index("performance")
    digit = next(i for i, c in enumerate(row[column]) if c.isdigit() and c != "0")
    row[column] = row[column][:digit] + str(int(row[column][digit]) % 9 + 1) + row[column][digit + 1:]
    lines[17] = ",".join(row)
    table.write_bytes(gzip.compress("".join(lines).encode(), mtime=0))
    out, text = _verify(tmp_path / "results", tmp_path, capsys, episodes=2)
    assert out["exit_code"] == 1 and out["differing"] == [f"{verify_paper.repo_relative(table.parent)}/{name}"]
    assert f"DIFFERS  marlin/paper: marl" in text and name in text
    assert "first difference: row 17 (episode 2), column 'performance'" in text
    assert "damaged" in text  # and its table no longer matches its sidecar's SHA-256
    made = json.loads((table.parent / f"{name}.json").read_text())["numerics"]["cpu"]
    assert f"made and recomputed on the same processor model ({made})" in text or "made on another processor" in text
    monkeypatch.setattr(numerics, "cpu_model", lambda: "Another Processor")  # a difference says where each ran
    out, text = _verify(tmp_path / "results", tmp_path, capsys, episodes=2)
    assert out["exit_code"] == 1 and f"made on another processor ({made}), recomputed on Another Processor" in text


@pytest.mark.slow
def test_a_transcript_missing_one_record_fails_by_name(tmp_path, capsys, monkeypatch):
    name = "single_slot__marlin-negotiation-smollm2-SmolLM2-135M-Instruct.Q4-1-quick-negotiation__seed0"
    _copy_run(name, tmp_path / "results")
    transcript = "marlin_training__smollm2__SmolLM2-135M-Instruct.Q4-1.jsonl"
    records = (paths.TRANSCRIPTS_DIR / transcript).read_text(encoding="utf-8").splitlines(keepends=True)
    copy = tmp_path / "transcripts"
    copy.mkdir()
    monkeypatch.setattr(paths, "TRANSCRIPTS_DIR", copy)
    # which call the run's prefix makes first: the miss an empty transcript reports (seed and prompt)
    (copy / transcript).write_text("", encoding="utf-8")
    out, text = _verify(tmp_path / "results", tmp_path, capsys, episodes=7)
    assert out["exit_code"] == 1 and "transcript miss in strict replay" in text
    key = re.search(r"\(key ([0-9a-f]{64}),", text).group(1)
    kept = [line for line in records if json.loads(line)["key"] != key]
    assert len(records) - len(kept) >= 1  # that call's record (some calls were recorded twice, as equal copies)
    (copy / transcript).write_text("".join(kept), encoding="utf-8")
    out, text = _verify(tmp_path / "results", tmp_path, capsys, episodes=7)
    assert out["exit_code"] == 1 and f"FAILED   marlin/paper: {name.split('__')[1]}" in text
    assert f"run MARLIN {name}: " in text and "transcript miss in strict replay" in text and f"(key {key}," in text
    assert "live LLM calls: 0" in text
    (copy / transcript).write_text("".join(records), encoding="utf-8")
    out, text = _verify(tmp_path / "results", tmp_path, capsys, episodes=7)  # every record there: it replays
    assert out["exit_code"] == 0, text


def test_new_sidecars_record_their_code_and_it_is_not_their_identity(tmp_path):
    store = ResultStore(tmp_path, code=("marlinkit.marlin.grid",))
    store.save("run", pd.DataFrame({"episode": [1, 2], "performance": [0.5, 0.25]}), {"seed": 0})
    code = store.load_sidecar("run")["code"]
    assert code["sources_sha256"] == provenance.sources_sha256(("marlinkit.marlin.grid",))
    assert code["numerics_path"] == ["marlinkit.marlin.grid"] and len(code["commit"] or "x" * 40) == 40
    files = provenance.path_files(("marlinkit.marlin.grid",))
    assert "marlinkit/algos/mappo.py" in files and "marlinkit/repro/numerics.py" in files
    assert not any(f.startswith(("marlinkit/maestro/", "marlinkit/presets")) for f in files)
    sidecar = store.load_sidecar("run")
    sidecar["code"] = {"commit": "0" * 40, "sources_sha256": "older"}  # other code: still the same complete run
    store.sidecar_path("run").write_text(json.dumps(sidecar), encoding="utf-8")
    assert store.is_complete("run", {"seed": 0})
