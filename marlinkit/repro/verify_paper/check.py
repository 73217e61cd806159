"""The check itself: one prefix per family recomputed and compared, the committed runs' code age, the summary."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from marlinkit import paths
from marlinkit.repro import numerics, provenance
from marlinkit.repro.hooks import ExperimentHooks
from marlinkit.repro.verify_paper import epochs
from marlinkit.repro.verify_paper.runs import (MAESTRO_EPISODES, MARLIN_EPISODES, PRESET, TIMING_COLUMNS, CommittedRun,
                                               choose, committed_table, compare_prefix, default_seed_choice, discover,
                                               folder_suffix, repo_relative)

def code_age(runs: list[CommittedRun], numerics_entries) -> tuple[list[str], bool]:
    """Per family: how many of its committed runs record their code, made by today's sources or not, and how many
    without the record were last committed before the last change to their numerics path (git history);
    ``numerics_entries(run)``: the runner modules whose imports make a run's numerics path."""
    note = provenance.history_note()
    changes = (provenance.last_changes(["marlinkit", *sorted({repo_relative(r.folder) for r in runs})])
               if note is None or "shallow" in note else {})
    lines = [f"code age: {note}"] if note else []
    families: dict[str, list[CommittedRun]] = {}
    for run in runs:
        families.setdefault(run.family, []).append(run)
    for family, members in sorted(families.items()):
        entries = numerics_entries(members[0])
        files = provenance.path_files(entries)
        today = provenance.sources_sha256(entries)
        recorded = [r for r in members if isinstance(r.sidecar.get("code"), dict)]
        other_code = [r for r in recorded if r.sidecar["code"].get("sources_sha256") != today]
        unrecorded = [r for r in members if r not in recorded]
        last = max((changes[f] + (f,) for f in files if f in changes), default=None)
        older, uncommitted = [], []
        for r in unrecorded:
            made = changes.get(f"{repo_relative(r.folder)}/{r.name}.json")
            if made is None:
                uncommitted.append(r)
            elif last is not None and made[0] < last[0]:
                older.append(r)
        parts = [f"{len(members)} run(s)"]
        if recorded:
            parts.append(f"{len(recorded)} record their code, {len(other_code)} of them made by other sources "
                         "than today's")
        if unrecorded:
            if last is None:
                parts.append(f"{len(unrecorded)} without a code record (no history to date them)")
            else:
                when = datetime.datetime.fromtimestamp(last[0], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
                parts.append(f"{len(unrecorded)} without a code record, "
                             f"{'all' if len(older) == len(unrecorded) else len(older)} of them committed before the "
                             f"last change to their numerics path ({last[2]} at {last[1][:10]}, {when} UTC)")
            if uncommitted:
                parts.append(f"{len(uncommitted)} not committed yet")
        lines.append(f"  {family}: " + "; ".join(parts))
        stale = sorted(r.name for r in other_code + older)
        if stale and len(stale) < len(members):
            lines.append("      made by older code: " + ", ".join(stale))
    return lines, bool(note and "shallow" not in note)


# ----- the check --------------------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The paper preset's options of ``python -m marlinkit verify`` (see :mod:`marlinkit.repro.verify`)."""
    group = parser.add_argument_group("--preset paper (prefixes of the committed runs)")
    group.add_argument("--seed-choice", type=int, help="which run of each family (default: today's UTC day number)")
    group.add_argument("--episodes", type=int, default=MARLIN_EPISODES,
                       help=f"MARLIN training episodes recomputed per run (default {MARLIN_EPISODES})")
    group.add_argument("--maestro-episodes", type=int, default=MAESTRO_EPISODES,
                       help=f"MAESTRO episodes recomputed per run (default {MAESTRO_EPISODES})")
    group.add_argument("--runs-root", type=Path, default=paths.DATA_DIR / "results",
                       help="the committed runs (default: data/results)")
    group.add_argument("--sweep-root", type=Path, default=paths.DATA_DIR / "maestro_sweep",
                       help="the committed MAESTRO sweep runs (default: data/maestro_sweep)")
    group.add_argument("--family", action="append", default=[], metavar="TEXT",
                       help="check only the families whose name contains TEXT (repeatable)")
    group.add_argument("--workers", type=int, default=2, help="runs recomputed at once (default 2)")


def _choose(args: argparse.Namespace, seed_choice: int, scratch: Path):
    """The committed runs, the results not recomputed (with why), and the run chosen per family; prints the choice."""
    runs_root = args.runs_root.resolve()
    committed, others = discover(runs_root, args.sweep_root)
    if not committed:
        raise FileNotFoundError(f"no committed {PRESET} runs under {runs_root} or {args.sweep_root}")
    checkable = [r for r in committed if epochs.here_can_check(r)]  # a closed epoch's runs on their own vendor
    chosen = {f: r for f, r in choose(checkable, seed_choice).items()
              if not args.family or any(t in f for t in args.family)}
    print(f"verify {PRESET}: {len(committed)} committed runs in {len({r.family for r in committed})} families; one run "
          f"per family chosen by seed choice {seed_choice}"
          + (" (today's UTC day number; --seed-choice N or SEED_CHOICE=N repeats a choice)"
             if args.seed_choice is None else "")
          + f"; prefixes of {args.episodes} MARLIN and {args.maestro_episodes} MAESTRO episodes in "
            f"{repo_relative(scratch)}/, "
            "strict replay", flush=True)
    return committed, others, chosen


def _jobs(chosen: dict, args: argparse.Namespace, hooks: ExperimentHooks, scratch: Path, results: dict,
          problems: list[str]) -> tuple[list, list[str]]:
    """One recomputation job per chosen run, and the family of each; MAESTRO's folders' calibrations first (their
    runs' configuration hashes hold them), compared whole. A run no MAESTRO setting of today's code names goes to
    ``results`` as an error."""
    maestro = {}
    for family, run in chosen.items():
        if run.kind != "maestro-ablation":
            continue
        key = run.folder.resolve()
        if key not in maestro:
            maestro[key] = hooks.prepare(run, scratch / "maestro" / folder_suffix(run, PRESET), problems)
    jobs, order = [], []
    for family, run in chosen.items():
        episodes = args.maestro_episodes if run.kind in ("maestro-ablation", "maestro-sweep") else args.episodes
        folder = scratch / repo_relative(run.folder).replace("/", "__") / run.name
        extra = ()
        if run.kind == "maestro-ablation":
            cfg, calibration = maestro[run.folder.resolve()]
            if cfg is None:
                results[family] = {"error": "no curriculum rule and MADDPG setting of today's code name its folder"}
                continue
            extra = (cfg, calibration)
        jobs.append((hooks.recompute, run, episodes, str(folder), *extra))
        order.append(family)
    return jobs, order


def _recompute(jobs: list, order: list[str], workers: int, results: dict) -> None:
    """Run the jobs, the longest first (MAESTRO under 4x the updates, then MAESTRO, then MARLIN) so the workers end
    together: MAESTRO in a process per run (libsumo: one simulation per process), MARLIN on a pool of processes."""
    from marlinkit import executors

    weight = {"maestro-sweep": 2, "maestro-ablation": 2, "marlin-training": 1, "plan-source-alone": 0}
    ranked = sorted(range(len(jobs)), key=lambda i: (-weight[jobs[i][1].kind], "ue25" not in order[i], order[i]))
    for fresh in (True, False):
        batch = [i for i in ranked if (jobs[i][1].kind in ("maestro-ablation", "maestro-sweep")) == fresh]
        done = executors.run_jobs(epochs.recompute_any, [jobs[i] for i in batch], "local",
                                  max(1, min(workers, len(batch))),
                                  progress=True, desc=f"verify paper prefixes ({'MAESTRO' if fresh else 'MARLIN'})",
                                  fresh_process=fresh)
        results.update({order[i]: out for i, out in zip(batch, done)})


def _compare(run: CommittedRun, out: dict[str, Any], maestro_episodes: int) -> tuple[str, list[str]]:
    """A recomputed prefix against its committed run: "same", "differs" or "FAILED", and the lines that say why."""
    from marlinkit.repro.comparisons import without_timing

    if "error" in out:
        return "FAILED", [out["error"]]
    text, damaged = committed_table(run)
    status, details = compare_prefix(text, out["table"], TIMING_COLUMNS[run.kind])
    if damaged:
        status, details = "differs", [damaged, *details]
    if "generations" in out:
        log_status, log_details = _compare_generations(run, out["generations"], maestro_episodes, without_timing)
        details.append(log_details)
        status = "differs" if log_status == "differs" else status
    if "code" in out:
        epoch = epochs.epoch_of(run)
        details.append(f"recomputed by commit {out['code'][:12]}'s code: the run belongs to the closed numerics "
                       f"epoch {epoch['name']!r} ({epoch['why']})")
    if status == "differs":
        details.append(_processors(run))
    return status, details


def _summary(chosen: dict, results: dict, maestro_episodes: int) -> tuple[list[str], list[str]]:
    """The per-run lines of the summary, and the labels of the runs that differ or failed."""
    lines, differing = [], []
    width = max(len(f) for f in chosen) if chosen else 10
    for family, run in chosen.items():
        out = results[family]
        status, details = _compare(run, out, maestro_episodes)
        if status != "same":
            differing.append(run.label)
        seconds = f"{out.get('seconds', 0):.0f} s, {out.get('cpu_seconds', 0):.0f} CPU-s"
        lines.append(f"  {'ok' if status == 'same' else status.upper():<8} {family:<{width}}  {run.name}  ({seconds})")
        lines.extend(f"             {d}" for d in details if d)
    return lines, differing


def verify_prefixes(args: argparse.Namespace, hooks: ExperimentHooks) -> dict[str, Any]:
    """Recompute one prefix per family (by ``hooks``, today's experiments, or a closed numerics epoch's commit),
    compare, print the per-run summary; ``exit_code`` 1 on any difference."""
    import resource

    from marlinkit.repro.comparisons import live_calls, transcript_records

    started, load = time.perf_counter(), os.getloadavg()[0]
    for name in ("episodes", "maestro_episodes", "workers"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    seed_choice = default_seed_choice() if args.seed_choice is None else args.seed_choice
    scratch = (args.scratch or paths.BUILD_DIR / "verify-paper").resolve()
    shutil.rmtree(scratch, ignore_errors=True)
    committed, others, chosen = _choose(args, seed_choice, scratch)
    os.environ.pop("MARLINKIT_RECORD", None)  # strict replay, here and in every worker
    # the workers replay from a copy of the transcripts: a live call could only add records there (and is counted
    # there alone, whatever else writes to the committed transcripts meanwhile)
    transcripts = scratch / "transcripts"
    shutil.copytree(paths.TRANSCRIPTS_DIR, transcripts)
    moved = os.environ.get(paths.TRANSCRIPTS_ENV)
    os.environ[paths.TRANSCRIPTS_ENV] = str(transcripts)
    before = transcript_records(transcripts)
    results: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    jobs, order = _jobs(chosen, args, hooks, scratch, results, problems)
    try:
        _recompute(jobs, order, args.workers, results)
    finally:
        os.environ.pop(paths.TRANSCRIPTS_ENV) if moved is None else os.environ.__setitem__(paths.TRANSCRIPTS_ENV, moved)
    lines, differing = _summary(chosen, results, args.maestro_episodes)
    failed = bool(problems) or bool(differing)
    print(f"prefixes ({len(chosen)} families, one run each):")
    print("\n".join(lines + epochs.elsewhere([r for r in committed if not args.family
                                                or any(t in r.family for t in args.family)])))
    for problem in problems:
        print(f"  DIFFERS  {problem}")
    if others:
        print("committed results not recomputed:")
        for path, why in others:
            print(f"  {path}: {why}")
            failed |= why.startswith(("UNKNOWN", "UNREADABLE"))
    print("code age (the sidecars' code records; else the git history of the run files and their numerics path):")
    age, _ = code_age(committed, hooks.numerics_entries)
    print("\n".join(age))
    calls = live_calls(before, transcript_records(transcripts))
    print(f"live LLM calls: {calls} (records added to the replayed transcripts)")
    failed |= calls > 0
    wall = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = children.ru_utime + children.ru_stime + time.process_time()
    print(f"verify {PRESET}: "
          + ("every recomputed prefix matches its committed run" if not failed else "DIFFERENCES FOUND")
          + f" ({wall:.0f} s of wall time, {cpu:.0f} CPU-s, load average {load:.1f} at the start and "
            f"{os.getloadavg()[0]:.1f} at the end; seed choice {seed_choice})")
    return {"preset": PRESET, "seed_choice": seed_choice, "families": len(chosen), "wall_s": wall, "cpu_s": cpu,
            "live_llm_calls": calls,
            "differing": differing, "exit_code": 1 if failed else 0}


def _processors(run: CommittedRun) -> str:
    """Which processor made a differing run and which recomputed it: the pinned numerics make most runs the same bytes
    on any x86-64 processor with AVX2, not yet every one, so a difference on another processor may come from there."""
    made = (run.sidecar.get("numerics") or {}).get("cpu")
    here = numerics.cpu_model()
    if made is None:
        return f"recomputed on {here}; the run's sidecar does not record its processor"
    if made == here:
        return f"made and recomputed on the same processor model ({here})"
    return f"made on another processor ({made}), recomputed on {here}"


def _compare_generations(run: CommittedRun, recomputed: str, episodes: int, without_timing) -> tuple[str, str]:
    """The committed generation log's records of the prefix's episodes against the recomputed ones (less timing)."""
    path = run.folder / f"{run.name}.generations.jsonl"
    if not path.exists():
        return "same", "no committed generation log"
    old = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    old = [r for r in old if r.get("episode", 0) < episodes]
    new = [json.loads(line) for line in recomputed.splitlines() if line.strip()]
    if len(old) != len(new):
        return "differs", (f"generation log: {len(old)} committed records in the prefix's episodes, "
                           f"{len(new)} recomputed")
    for index, (a, b) in enumerate(zip(old, new), 1):
        a, b = without_timing(a), without_timing(b)
        if a != b:
            key = next(k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
            return "differs", (f"generation log: record {index} (episode {a.get('episode')}), field {key!r}: "
                               f"{str(a.get(key))[:60]!r} -> {str(b.get(key))[:60]!r}")
    return "same", f"generation log: {len(new)} records equal (less timing fields)"
