"""Runs made by earlier numerics: recomputed with the code that made them, checked out beside the repository.

When a change to an algorithm's numerics changes the bytes of its committed runs, those runs stay verifiable without
keeping the old code path alive in the package: ``data/numerics_epochs.toml`` names each closed *numerics epoch*,
the run kinds it covers and the last commit of its code. A committed run of such a kind whose files were last
committed in an ancestor of that commit (git history) belongs to the epoch; its prefix is recomputed by that
commit's own code, in a git worktree under ``build/verify-code/``, through that commit's own ``verify_paper``
functions. A closed epoch's bytes may depend on the processor's vendor (the reason it was closed), so its runs are
chosen among those made on this machine's vendor, and a family made on another vendor only is named, not failed.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Callable

from marlinkit import paths
from marlinkit.repro import numerics, provenance
from marlinkit.repro.verify_paper.runs import CommittedRun, repo_relative

EPOCHS_FILE = paths.DATA_DIR / "numerics_epochs.toml"
CHECKOUTS = paths.BUILD_DIR / "verify-code"
#: The file a finished checkout holds (untracked in it): the commit checked out.
CHECKED_OUT = ".marlinkit-checkout"
_FIELDS = {"name": str, "kinds": list, "last_commit": str, "why": str}

#: Run in the old commit's checkout: its own functions recompute the run's prefix and print it as JSON. Its imports
#: are that commit's module paths (``marlinkit.verify_paper``, where the closed epochs' commits kept it).
_DRIVER = r"""
import json, sys
from pathlib import Path
import marlinkit
from marlinkit.verify_paper.runs import discover
from marlinkit.verify_paper.check import _calibrate
from marlinkit.verify_paper.prefix import recompute
job = json.loads(sys.argv[1])
runs, _ = discover(Path(job["runs_root"]), Path(job["sweep_root"]))
matches = [r for r in runs if r.label == job["label"]]
if not matches:
    print("RESULT " + json.dumps({"error": f"the commit's code does not find the run {job['label']}"}))
    sys.exit(0)
run, extra, problems = matches[0], (), []
if run.kind == "maestro-ablation":
    extra = _calibrate(run, Path(job["scratch"]) / "calibration", problems)
out = recompute(run, job["episodes"], job["scratch"], *extra)
if problems:
    out = {**out, "error": "; ".join(problems)}
print("RESULT " + json.dumps(out, default=str))
"""


def vendor(cpu: str | None) -> str:
    """The vendor of a processor model name as sidecars record it (``numerics.cpu``)."""
    text = (cpu or "").lower()
    return "GenuineIntel" if "intel" in text else "AuthenticAMD" if "amd" in text else "unknown"


@functools.cache
def epochs() -> tuple[dict[str, Any], ...]:
    """The closed numerics epochs, validated (a malformed file is an error naming the entry and field)."""
    if not EPOCHS_FILE.exists():
        return ()
    entries = tomllib.loads(EPOCHS_FILE.read_text(encoding="utf-8")).get("epoch", [])
    for index, entry in enumerate(entries):
        for field, kind in _FIELDS.items():
            if not isinstance(entry.get(field), kind):
                raise ValueError(f"{EPOCHS_FILE.name}: epoch {index + 1} needs {field!r} as {kind.__name__}")
        if len(entry["last_commit"]) != 40:
            raise ValueError(f"{EPOCHS_FILE.name}: epoch {entry['name']!r}: last_commit must be a full hash")
    return tuple(entries)


@functools.cache
def _last_commit_of(path: str) -> str | None:
    out = provenance.git("log", "-1", "--format=%H", "--", path)
    return out.strip() or None if out else None


@functools.cache
def _is_ancestor(commit: str, of: str) -> bool:
    try:
        done = subprocess.run(["git", "--no-optional-locks", "merge-base", "--is-ancestor", commit, of],
                              cwd=paths.REPO_ROOT, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def epoch_of(run: CommittedRun) -> dict[str, Any] | None:
    """The closed epoch whose code made ``run``, or None (today's numerics)."""
    for epoch in epochs():
        if run.kind not in epoch["kinds"]:
            continue
        made = _last_commit_of(f"{repo_relative(run.folder)}/{run.name}.json")
        if made is not None and _is_ancestor(made, epoch["last_commit"]):
            return epoch
    return None


def here_can_check(run: CommittedRun) -> bool:
    """Whether this machine recomputes ``run``: any run of today's numerics; a closed epoch's on its own vendor."""
    made = (run.sidecar.get("numerics") or {}).get("cpu")
    return epoch_of(run) is None or vendor(made) == numerics.cpu_vendor()


def checkout(commit: str) -> Path:
    """A git worktree of ``commit`` under ``build/verify-code/`` (made once), with this clone's data beside it.

    Runs of one epoch are recomputed in parallel worker processes: the first to need the commit checks it out while
    the others wait on a lock file, then use its checkout. A checkout cut short (no completion mark) is made again."""
    import fcntl
    import shutil

    folder = CHECKOUTS / commit[:12]
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(CHECKOUTS / f"{commit[:12]}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / CHECKED_OUT).is_file():
            if folder.exists():
                shutil.rmtree(folder)
            subprocess.run(["git", "worktree", "prune"], cwd=paths.REPO_ROOT, capture_output=True, check=False)
            done = subprocess.run(["git", "worktree", "add", "--force", "--detach", str(folder), commit],
                                  cwd=paths.REPO_ROOT, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"could not check out commit {commit[:12]} for its runs: {done.stderr.strip()}")
            (folder / CHECKED_OUT).write_text(commit + "\n")
        for name in ("hangzhou_4x4",):  # data the clone fetched (never committed)
            source, target = paths.DATA_DIR / name, folder / "data" / name
            if source.exists() and not target.exists():
                target.symlink_to(source.resolve())
    return folder


def recompute_at(commit: str, run: CommittedRun, episodes: int, scratch: str) -> dict[str, Any]:
    """``run``'s prefix recomputed by ``commit``'s code (a fresh interpreter in its checkout, through that commit's
    ``marlinkit.verify_paper`` functions), as today's ``ExperimentHooks.recompute`` returns it, plus the commit."""
    try:
        root = checkout(commit)
    except RuntimeError as error:
        return {"error": str(error), "code": commit}
    label = repo_relative(run.folder) + "/" + run.name
    job = {"label": label, "episodes": episodes, "scratch": str(Path(scratch).resolve()),
           "runs_root": str(root / "data" / "results"), "sweep_root": str(root / "data" / "maestro_sweep")}
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(job)], cwd=root, env=env, capture_output=True,
                          text=True, check=False)
    result = next((line[7:] for line in reversed(done.stdout.splitlines()) if line.startswith("RESULT ")), None)
    if result is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"commit {commit[:12]}'s code failed: {tail[0]}", "code": commit}
    return {**json.loads(result), "code": commit}


def recompute_any(recompute: Callable[..., dict[str, Any]], run: CommittedRun, episodes: int, scratch: str,
                  *extra) -> dict[str, Any]:
    """A run's prefix by the code that made it: a closed epoch's commit, else today's code, ``recompute`` (a
    module-level function: this runs in a worker process; ``extra``: its folder's calibration)."""
    epoch = epoch_of(run)
    if epoch is None:
        return recompute(run, episodes, scratch, *extra)
    return recompute_at(epoch["last_commit"], run, episodes, scratch)


def elsewhere(runs: list[CommittedRun]) -> list[str]:
    """A line for each family none of whose runs this machine recomputes (a closed epoch's, made on another vendor)."""
    families: dict[str, list[CommittedRun]] = {}
    for run in runs:
        families.setdefault(run.family, []).append(run)
    lines = []
    for family, members in sorted(families.items()):
        if not any(here_can_check(r) for r in members):
            made = sorted({(r.sidecar.get("numerics") or {}).get("cpu") or "?" for r in members})
            epoch = epoch_of(members[0]) or {"name": "?"}
            lines.append(f"  ELSEWHERE {family}: its {len(members)} run(s) were made by the closed numerics epoch "
                         f"{epoch['name']!r} on {', '.join(made)}, whose bytes depend on the vendor; this machine is "
                         f"{numerics.cpu_model()} ({numerics.cpu_vendor()}): recompute them on a processor of theirs")
    return lines
