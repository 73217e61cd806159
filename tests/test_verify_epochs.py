"""Closed numerics epochs: the committed MADDPG runs made before MADDPG's numerics became vendor-independent are
recomputed by the code that made them, on their own vendor; a malformed epochs file is a clear error."""

from __future__ import annotations

import dataclasses

import pytest

from marlinkit import paths
from marlinkit.commands import recompute
from marlinkit.repro import numerics, provenance, verify_paper
from marlinkit.repro.verify_paper import epochs


@pytest.fixture(scope="module")
def committed():
    if provenance.history_note() is not None:
        pytest.skip("needs the git history to date the committed runs")
    return verify_paper.discover(paths.DATA_DIR / "results", paths.DATA_DIR / "maestro_sweep")[0]


def test_every_maddpg_run_made_before_the_change_belongs_to_the_closed_epoch_and_no_other_run_does(committed):
    """The runs of the folders that existed at the epoch's last commit are in it; the runs made by today's MADDPG
    (the shared5 ablation, begun after the change) and every MAPPO run are not."""
    (epoch,) = epochs.epochs()
    assert epoch["name"] == "maddpg-mkl-vector-maths" and epoch["kinds"] == ["maestro-ablation", "maestro-sweep"]
    maddpg = [r for r in committed if r.kind.startswith("maestro")]
    today = [r for r in maddpg if "shared5" in r.label]
    assert len(maddpg) - len(today) > 100 and all(epochs.epoch_of(r) == epoch for r in maddpg if r not in today)
    assert today and not any(epochs.epoch_of(r) for r in today)
    assert not any(epochs.epoch_of(r) for r in committed if r.kind.startswith(("marlin", "plan")))


def test_a_new_run_of_the_same_kind_is_todays(committed, tmp_path):
    """A run not committed at or before the epoch's last commit (here: one copied outside the repository) is made by
    today's code, on any vendor."""
    run = next(r for r in committed if r.kind == "maestro-ablation")
    moved = dataclasses.replace(run, folder=tmp_path)
    assert epochs.epoch_of(moved) is None and epochs.here_can_check(moved)


def test_a_closed_epochs_runs_are_checked_on_their_own_vendor_only(committed, monkeypatch):
    assert epochs.vendor("Intel(R) Xeon(R) Processor") == "GenuineIntel"
    assert epochs.vendor("AMD EPYC") == "AuthenticAMD" and epochs.vendor(None) == "unknown"
    maddpg = [r for r in committed if r.kind.startswith("maestro") and epochs.epoch_of(r) is not None]
    for machine in ("GenuineIntel", "AuthenticAMD"):
        monkeypatch.setattr(numerics, "cpu_vendor", lambda machine=machine: machine)
        mine = [r for r in maddpg if epochs.vendor(r.sidecar["numerics"]["cpu"]) == machine]
        assert [r for r in maddpg if epochs.here_can_check(r)] == mine
        lines = epochs.elsewhere(maddpg)
        unchecked = {r.family for r in maddpg} - {r.family for r in mine}
        assert len(lines) == len(unchecked) and all(line.split()[1] in " ".join(unchecked) for line in lines)


def test_a_malformed_epochs_file_names_the_entry_and_field(tmp_path, monkeypatch):
    bad = tmp_path / "numerics_epochs.toml"
    monkeypatch.setattr(epochs, "EPOCHS_FILE", bad)
    epochs.epochs.cache_clear()
    try:
        bad.write_text('[[epoch]]\nname = "x"\nkinds = ["maestro-sweep"]\nwhy = "y"\n')
        with pytest.raises(ValueError, match="epoch 1 needs 'last_commit'"):
            epochs.epochs()
        epochs.epochs.cache_clear()
        bad.write_text('[[epoch]]\nname = "x"\nkinds = ["maestro-sweep"]\nwhy = "y"\nlast_commit = "23693c6"\n')
        with pytest.raises(ValueError, match="full hash"):
            epochs.epochs()
    finally:
        epochs.epochs.cache_clear()


@pytest.mark.slow
def test_a_closed_epochs_run_recomputes_by_its_own_commit_and_not_by_todays(committed, tmp_path):
    """A sweep run made on this machine's vendor: its first episodes recomputed at the epoch's commit equal the
    committed rows byte for byte; today's code gives other bytes once MADDPG has updated (verify's 8 episodes)."""
    here = [r for r in committed if r.kind == "maestro-sweep" and epochs.here_can_check(r)]
    if not here:
        pytest.skip("no committed sweep run was made on this machine's vendor")
    run = next((r for r in here if r.name.startswith("ue25__")), here[0])  # updates from episode 2 on
    text, damaged = verify_paper.committed_table(run)
    assert not damaged
    old = epochs.recompute_at(epochs.epochs()[0]["last_commit"], run, 8, str(tmp_path / "old"))
    assert "error" not in old, old.get("error")
    assert verify_paper.compare_prefix(text, old["table"], verify_paper.TIMING_COLUMNS[run.kind])[0] == "same"
    new = recompute.recompute(run, 8, str(tmp_path / "new"))
    assert verify_paper.compare_prefix(text, new["table"], verify_paper.TIMING_COLUMNS[run.kind])[0] == "differs"


def test_workers_that_need_one_commit_at_once_share_one_checkout(tmp_path, monkeypatch):
    """Runs of one epoch are recomputed in parallel: every worker gets the same finished checkout (the second used to
    fail with git's "already exists" while the first was checking out), and one cut short is made again."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    if provenance.history_note() is not None:
        pytest.skip("needs the git history")
    monkeypatch.setattr(epochs, "CHECKOUTS", tmp_path / "verify-code")
    commit = subprocess.run(["git", "rev-parse", "HEAD~1"], cwd=paths.REPO_ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        with ThreadPoolExecutor(3) as pool:
            folders = list(pool.map(lambda _: epochs.checkout(commit), range(3)))
        assert len(set(folders)) == 1 and (folders[0] / epochs.CHECKED_OUT).read_text().strip() == commit
        (folders[0] / epochs.CHECKED_OUT).unlink()  # as if the checkout had been cut short
        assert epochs.checkout(commit) == folders[0] and (folders[0] / "marlinkit" / "__init__.py").is_file()
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tmp_path / "verify-code" / commit[:12])],
                       cwd=paths.REPO_ROOT, capture_output=True, check=False)
