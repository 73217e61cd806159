"""Recompute a preset in a scratch folder and compare every table and figure with the reference ones.

``make verify [PRESET=quick]`` (``python -m marlinkit verify --preset quick``) runs ``make figures``
with the figures, the executed notebooks and the run results all in ``build/verify-<preset>/`` (a
fresh results root, ``$MARLINKIT_RESULTS``, so every run really recomputes) in strict replay (a
transcript miss is an error; ``MARLINKIT_RECORD`` is removed), then compares each file under the
reference folder (``figures/``; ``build/figures-smoke/`` for ``smoke``) with its scratch twin:

* tables (``.csv``): byte equality; when the bytes differ, the differing cells are listed. Only
  the measured columns of :data:`WALL_TIME_COLUMNS` are exempt: there both cells must be numbers, of
  any value (wall time measures the machine and its load, replayed LLM calls take milliseconds where
  the recording took seconds, and a strict-replay rerun replays every call). Every other cell, the
  header and the row count must be identical.
* renderings of a table (``.md``, ``.tex`` next to a ``.csv``): byte equality; for a table with
  wall-time columns, tokens may differ only where both are numbers.
* images (``.png``, ``.pdf``): byte equality (matplotlib is pinned and the writers drop dates);
  reported in their own section, and with ``--images-informational`` they do not fail the check.
* anything else: byte equality.

A file in the reference folder but not in scratch is *missing*; one only in scratch is *new*.
Live LLM calls are counted as records added to ``data/transcripts/`` during the run (must be 0).
The exit code is 1 on any difference, missing or new file, or live call.

``--preset paper`` (days of training) recomputes a prefix of one committed run per run family instead and
compares it with the committed run's first rows: :mod:`marlinkit.repro.verify_paper`.

What needs an experiment (the presets, recomputing a run) is handed in as
:class:`~marlinkit.repro.hooks.ExperimentHooks` by the command, :mod:`marlinkit.commands.verify`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from marlinkit import paths
from marlinkit.repro import verify_paper
from marlinkit.repro.comparisons import (GENERATION_TIMING_FIELDS, SHOWN, compare_table, is_number, live_calls,
                                         timing_field, transcript_records, without_timing)
from marlinkit.repro.hooks import ExperimentHooks

#: Columns holding measurements of how a run went rather than its results, per table relative to the reference folder:
#: wall time (or shares of it), and how its LLM replies were obtained (Table 5: how many were replayed from the
#: transcript rather than called, and the latency recorded for them; a strict-replay rerun replays them all).
WALL_TIME_COLUMNS: dict[str, tuple[str, ...]] = {
    "maestro/table5_cost.csv": ("of them replayed", "Model latency per call (s)", "Total (s, all runs)", "Per run (s)",
                                "Percentage"),
    "maestro/traffic_baselines.csv": ("wall_s",),
}
TABLE_SUFFIXES = (".csv",)
RENDERING_SUFFIXES = (".md", ".tex")
IMAGE_SUFFIXES = (".png", ".pdf")
_TOKEN = re.compile(r"[^\s|&]+")
_RULE = re.compile(r"[-:=]+")


@dataclass
class FileCheck:
    """The comparison of one file."""

    path: str  # relative to both roots, e.g. "maestro/table5_cost.csv"
    kind: str  # "table", "rendering", "image" or "other"
    status: str  # "same", "tolerated" (only wall-time cells differ), "differs", "missing" or "new"
    details: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("same", "tolerated")


def _kind(path: Path) -> str:
    if path.suffix in TABLE_SUFFIXES:
        return "table"
    if path.suffix in RENDERING_SUFFIXES and path.with_suffix(".csv").exists():
        return "rendering"
    return "image" if path.suffix in IMAGE_SUFFIXES else "other"


def compare_rendering(reference: Path, scratch: Path, numbers_may_differ: bool) -> tuple[str, list[str]]:
    """Status of a Markdown/LaTeX rendering; with ``numbers_may_differ`` only numeric tokens may change
    (the caller allows it only when the table rendered matched up to its wall-time cells)."""
    if reference.read_bytes() == scratch.read_bytes():
        return "same", []
    if numbers_may_differ:
        old, new = (
            [t for t in _TOKEN.findall(p.read_text(encoding="utf-8")) if not _RULE.fullmatch(t)]
            for p in (reference, scratch))
        changed = [(x, y) for x, y in zip(old, new) if x != y]
        if len(old) == len(new) and all(is_number(x) and is_number(y) for x, y in changed):
            return "tolerated", [f"{len(changed)} number(s) differ, in a table with wall-time columns: tolerated"]
    return "differs", ["bytes differ" + ("" if numbers_may_differ else " (the table it renders is compared above)")]


#: What other commands write inside the default preset's figures/: the paper preset's own folder and the claims ledger
#: beside it, and the trained policies' animations (``python -m marlinkit policies --gif figures/policies``).
PAPER_IN_FIGURES = ("paper", "claims.csv", "claims_cells.csv", "claims_values.csv", "policies")


def compare_trees(reference: Path, scratch: Path,
                  wall_time_columns: dict[str, tuple[str, ...]] = WALL_TIME_COLUMNS,
                  skip: tuple[str, ...] = ()) -> list[FileCheck]:
    """Every file of ``reference`` against ``scratch`` (and the files only ``scratch`` has), sorted by path;
    top-level folders named in ``skip`` belong to another preset (figures/paper/ inside the quick preset's figures/)."""
    def files(root: Path) -> set[str]:
        return {p.relative_to(root).as_posix() for p in root.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
                and p.relative_to(root).parts[0] not in skip}

    ours, theirs = files(reference), files(scratch) if scratch.exists() else set()
    checks, table_ok = [], {}
    for name in sorted(ours | theirs, key=lambda n: (Path(n).suffix not in TABLE_SUFFIXES, n)):  # tables first
        ref, new = reference / name, scratch / name
        kind = _kind(ref if name in ours else new)
        if name not in theirs:
            checks.append(FileCheck(name, kind, "missing", ["not written by the rerun"]))
            continue
        if name not in ours:
            checks.append(FileCheck(name, kind, "new", ["written by the rerun, absent from the reference"]))
            continue
        if kind == "table":
            status, details = compare_table(ref, new, wall_time_columns.get(name, ()))
            table_ok[name] = status in ("same", "tolerated")
        elif kind == "rendering":
            table = Path(name).with_suffix(".csv").as_posix()
            status, details = compare_rendering(ref, new, table in wall_time_columns and table_ok.get(table, False))
        else:
            same = ref.read_bytes() == new.read_bytes()
            status, details = ("same", []) if same else ("differs", ["bytes differ"])
        checks.append(FileCheck(name, kind, status, details))
    return sorted(checks, key=lambda c: c.path)


def reference_root(preset: str) -> Path:
    """Where ``make figures PRESET=preset`` writes (the Makefile's FIGURES_ROOT): smoke never touches figures/,
    the paper preset writes to figures/paper/, the default preset to figures/ itself."""
    if preset == "smoke":
        return paths.BUILD_DIR / "figures-smoke"
    return paths.FIGURES_DIR / "paper" if preset == "paper" else paths.FIGURES_DIR


def run_preset(preset: str, scratch: Path) -> int:
    """``make figures`` for ``preset`` with figures, executed notebooks and results in ``scratch``, strict replay."""
    env = {**os.environ, paths.RESULTS_ENV: str(scratch / "results")}
    env.pop("MARLINKIT_RECORD", None)
    env.pop("RECORD", None)
    command = ["make", "--no-print-directory", "--keep-going", "figures", f"PRESET={preset}",
               f"FIGURES_ROOT={scratch / 'figures'}",
               f"BUILD_ROOT={scratch / 'notebooks'}"]
    print("verify: " + " ".join(command) + f"  ({paths.RESULTS_ENV}={scratch / 'results'})", flush=True)
    return subprocess.run(command, cwd=paths.REPO_ROOT, env=env, check=False).returncode


def summary(checks: list[FileCheck], calls: int | None, images_informational: bool) -> tuple[str, bool]:
    """The printed per-file summary and whether everything matched."""
    lines, failed = [], False
    for title, kinds in (("tables and data files", ("table", "rendering", "other")), ("images", ("image",))):
        group = [c for c in checks if c.kind in kinds]
        if not group:
            continue
        counts = {s: sum(c.status == s for c in group) for s in ("same", "tolerated", "differs", "missing", "new")}
        note = " (informational)" if title == "images" and images_informational else ""
        lines.append(f"{title}{note}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
        for check in group:
            lines.append(f"  {check.status:<9} {check.path}")
            lines.extend(f"            {d}" for d in check.details)
            if not check.ok and not note:
                failed = True
    if calls is not None:
        lines.append(f"live LLM calls: {calls} (records added to {verify_paper.repo_relative(paths.TRANSCRIPTS_DIR)}/)")
        failed |= calls > 0
    return "\n".join(lines), not failed


#: Sidecar fields a recomputed run must reproduce (the rest record the machine, its versions and its wall time).
SIDECAR_RESULT_FIELDS = ("config", "config_hash", "table_rows", "context_calls", "context_accepted", "reward_calls",
                         "reward_accepted", "llm", "engine")


def compare_generation_logs(reference: Path, scratch: Path) -> tuple[str, list[str]]:
    """Status of two MAESTRO generation logs: every record equal but for :data:`GENERATION_TIMING_FIELDS`."""
    from marlinkit.files import read_jsonl

    if reference.read_bytes() == scratch.read_bytes():
        return "same", []
    old, new = read_jsonl(reference), read_jsonl(scratch)
    details = [f"records {len(old)} -> {len(new)}"] if len(old) != len(new) else []
    timing = 0
    for line, (a, b) in enumerate(zip(old, new), 1):
        timing += sum(timing_field(a, name) != timing_field(b, name) for name in GENERATION_TIMING_FIELDS)
        a, b = without_timing(a), without_timing(b)
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key) and len(details) < SHOWN:
                details.append(f"record {line}, field {key!r}: {str(a.get(key))[:60]!r} -> {str(b.get(key))[:60]!r}")
    if details:
        return "differs", details
    return "tolerated", [f"{timing} timing/replay field(s) differ ({', '.join(GENERATION_TIMING_FIELDS)}): tolerated"]


def verify_maestro_run(preset: str, run: str, scratch: Path, hooks: ExperimentHooks) -> list[FileCheck]:
    """Recompute one committed MAESTRO run (``run`` = ``"A2:200"``) in ``scratch``, in strict replay, and
    compare its table (all but the measured wall-time columns), its generation log (all but timing fields),
    its sidecar's result fields and the ablation's calibration with the committed ones."""
    from marlinkit.files import read_json

    reference, stem, timing_columns = hooks.recompute_maestro_run(preset, run, scratch)
    checks = []
    for file in (f"{stem}.csv", "ablation_calibration.csv"):
        timing = timing_columns if file == f"{stem}.csv" else ()
        status, details = compare_table(reference / file, scratch / file, timing)
        checks.append(FileCheck(file, "table", status, details))
    status, details = compare_generation_logs(reference / f"{stem}.generations.jsonl",
                                              scratch / f"{stem}.generations.jsonl")
    checks.append(FileCheck(f"{stem}.generations.jsonl", "other", status, details))
    old, new = read_json(reference / f"{stem}.json"), read_json(scratch / f"{stem}.json")
    differing = [k for k in SIDECAR_RESULT_FIELDS if old.get(k) != new.get(k)]
    checks.append(FileCheck(f"{stem}.json", "other", "differs" if differing else "same",
                            [f"field {k!r}: {str(old.get(k))[:60]!r} -> {str(new.get(k))[:60]!r}" for k in differing]))
    return checks


def add_arguments(parser: argparse.ArgumentParser, default_preset: str) -> None:
    parser.add_argument("--preset", default=default_preset, help=f"preset to recompute (default: {default_preset})")
    parser.add_argument("--reference", type=Path, help="folder to compare with (default: figures/; "
                        "build/figures-smoke/ for smoke)")
    parser.add_argument("--scratch", type=Path, help="scratch folder (default: build/verify-<preset>/; emptied first)")
    parser.add_argument("--compare-only", action="store_true", help="compare an existing scratch folder, run nothing")
    parser.add_argument("--maestro-run", metavar="ABLATION:SEED",
                        help="recompute only this committed MAESTRO run of --preset (e.g. A2:200; paper: ~25 min) and "
                             "compare its files with the committed ones")
    parser.add_argument("--images-informational", action="store_true",
                        help="report differing PNG/PDF files without failing (e.g. another matplotlib build)")
    verify_paper.add_arguments(parser)


def verify(args: argparse.Namespace, hooks: ExperimentHooks) -> dict[str, Any]:
    """Recompute (unless ``--compare-only``), compare, print the summary; ``exit_code`` 1 on any difference."""
    preset = hooks.check_preset(args.preset)
    reference = (args.reference or reference_root(preset)).resolve()
    scratch = (args.scratch or paths.BUILD_DIR / f"verify-{preset}").resolve()
    if getattr(args, "maestro_run", None):  # programmatic callers may build the namespace without it
        scratch = (args.scratch or paths.BUILD_DIR / f"verify-{preset}-maestro-run").resolve()
        return _run_maestro(preset, args.maestro_run, scratch, hooks)
    if preset == verify_paper.PRESET and not args.compare_only:  # days of training: prefixes of the committed runs
        return verify_paper.verify_prefixes(args, hooks)
    if not reference.is_dir():
        raise FileNotFoundError(f"reference folder {reference} does not exist (run `make figures PRESET={preset}`)")
    calls, returncode = None, 0
    if not args.compare_only:
        shutil.rmtree(scratch, ignore_errors=True)
        before = transcript_records()
        returncode = run_preset(preset, scratch)
        calls = live_calls(before, transcript_records())
    checks = compare_trees(reference, scratch / "figures",
                           skip=PAPER_IN_FIGURES if reference == paths.FIGURES_DIR.resolve() else ())
    text, ok = summary(checks, calls, args.images_informational)
    print(text)
    if returncode:
        print(f"verify: `make figures` failed (exit {returncode}); the comparison above is of what it wrote",
              file=sys.stderr)
    ok = ok and returncode == 0
    print(f"verify {preset}: " + ("every file matches" if ok else "DIFFERENCES FOUND") + f" (reference {reference})")
    return {"preset": preset, "reference": str(reference), "scratch": str(scratch), "make_exit_code": returncode,
            "live_llm_calls": calls, "files": len(checks),
            "differing": [c.path for c in checks if not c.ok and not (c.kind == "image" and args.images_informational)],
            "exit_code": 0 if ok else 1}


def _run_maestro(preset: str, run: str, scratch: Path, hooks: ExperimentHooks) -> dict[str, Any]:
    import resource
    import time

    env_record = os.environ.pop("MARLINKIT_RECORD", None)  # strict replay: a transcript miss is an error
    before, started = transcript_records(), time.perf_counter()
    try:
        checks = verify_maestro_run(preset, run, scratch, hooks)
    finally:
        if env_record is not None:
            os.environ["MARLINKIT_RECORD"] = env_record
    wall = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    calls = live_calls(before, transcript_records())
    text, ok = summary(checks, calls, images_informational=False)
    print(text)
    print(f"verify {preset} MAESTRO run {run}: " + ("matches the committed run" if ok else "DIFFERENCES FOUND")
          + f" ({wall:.0f} s)")
    return {"preset": preset, "maestro_run": run, "scratch": str(scratch), "wall_s": wall,
            "run_cpu_s": children.ru_utime + children.ru_stime, "live_llm_calls": calls, "files": len(checks),
            "differing": [c.path for c in checks if not c.ok], "exit_code": 0 if ok else 1}
