"""``make verify PRESET=paper``: recompute a prefix of committed paper runs and compare it with the committed rows.

The paper preset's runs took days to train, so they are checked by their beginning: training is deterministic
and its settings never depend on how far a run has got, so the first episodes of a run recomputed today with
the committed run's full configuration (stopped early by the runner's ``stop_after``, never a shorter
configuration) must equal the committed table's first rows, byte for byte.

* **Which runs.** Every committed run is found by its sidecar, under ``data/results/<paper>/paper/`` and in the
  MAESTRO sweep's folder, and sorted into *families*: its folder and its name less scenario and seed (one MARLIN
  plan source, switch rule or variant; MARL; the plan source alone; one MAESTRO ablation under one MADDPG setting;
  one sweep setting). A new family is checked as soon as its runs are committed. From each family one run is
  chosen: member ``(seed choice + a digest of the family's name) mod members`` in name order. The seed choice
  defaults to today's UTC day number, so the chosen runs rotate from day to day; it is printed, and
  ``--seed-choice N`` repeats a choice.
* **How.** MARLIN: ``systems.train_system``/``batched.train_systems`` with the run's configuration rebuilt from its
  sidecar (its configuration hash must come out equal, else the run is reported as not rebuildable), first
  ``--episodes`` episodes (default 30: five MAPPO updates, Algorithm 1's forced plan episodes 6-10 and its first
  switches); the plan source alone plays all its trials (milliseconds). MAESTRO: the ablation's calibration is
  recomputed and compared whole, then ``ablation.dual_loop`` plays the first ``--maestro-episodes`` (default 8:
  the first MADDPG updates from episode 3, the first difficulty events from episode 4, A8's first context
  regeneration at 5, A7's initial reward event, four evaluations) and the sweep's ``sweep_run`` the same. Every LLM call replays strictly
  from the transcripts: a missing record fails that run, by name.
* **Compared.** The recomputed table's CSV text against the committed table's first rows: the header and every
  row line byte for byte, except the measured wall-time columns (:data:`TIMING_COLUMNS`), where both cells need
  only be numbers. The first differing row and column are named. A MAESTRO run's generation log is compared
  record by record over the prefix (less its timing fields), and the committed table's SHA-256 against its sidecar.
* **Code age.** For every committed run: whether its sidecar records the code that made it (a hash of its
  numerics path's sources, :mod:`marlinkit.provenance`) and whether that is today's code; for a run without the
  record, whether its file was last committed before the last change to its numerics path (git history).

The exit code is 1 on any difference, any run that could not be recomputed, any committed run of a kind this
check does not know, or any live LLM call.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from marlinkit import paths, provenance

PRESET = "paper"
MARLIN_EPISODES = 30
MAESTRO_EPISODES = 8
#: Measured wall-time columns per kind of run: both cells must be numbers (or both empty), of any value.
TIMING_COLUMNS = {
    "marlin-training": ("wall_time_s",),
    "plan-source-alone": ("wall_time_s",),
    "maestro-ablation": ("sim_s", "train_s", "reward_eval_s", "llm_curriculum_s", "llm_reward_s", "eval_s", "baseline_s"),
    "maestro-sweep": ("sim_s", "train_s", "wall_s"),
}
#: Committed results that are not training runs, with why no prefix of them is recomputed here.
NOT_RECOMPUTED = {
    "traffic_baselines": "fixed-time and max-pressure controller episodes on both engines, no training: "
                         "`make figures PRESET=paper` recomputes its table",
    "traffic_difficulty": "the difficulty pilot's controller episodes, no training: `make figures PRESET=paper` "
                          "recomputes its table",
    "ablation_calibration": "recomputed whole before the MAESTRO runs of its folder (below)",
}
_SEED = re.compile(r"seed\d+")
_NUMBER = re.compile(r"-?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?|nan|inf|-inf", re.IGNORECASE)


@dataclass(frozen=True)
class CommittedRun:
    """One committed run: its kind (how it is recomputed), family, name, folder and sidecar."""

    kind: str  # "marlin-training", "plan-source-alone", "maestro-ablation", "maestro-sweep"
    family: str
    name: str
    folder: Path
    sidecar: dict = field(hash=False, compare=False)

    @property
    def label(self) -> str:
        return f"{repo_relative(self.folder)}/{self.name}"


def repo_relative(path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(paths.REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


def _kind(sidecar: dict) -> str | None:
    config = sidecar.get("config") or {}
    if config.get("system") in ("MARL", "MARLIN"):
        return "marlin-training"
    if config.get("system") == "LLM-only":
        return "plan-source-alone"
    if "ablation" in config:
        return "maestro-ablation"
    return None


def _family(folder: str, name: str, scenario: str | None) -> str:
    parts = [p for p in name.split("__") if not _SEED.fullmatch(p) and p != scenario]
    return f"{folder}: {'__'.join(parts)}"


def _untracked(roots: list[Path]) -> set[Path]:
    """Files under ``roots`` that git does not track (runs still being made, not committed); empty without git."""
    inside = [root for root in roots if root.is_dir() and root.resolve().is_relative_to(paths.REPO_ROOT)]
    listed = provenance.git("ls-files", "--others", "--", *(str(root.resolve()) for root in inside)) if inside else None
    return {(paths.REPO_ROOT / line).resolve() for line in (listed or "").splitlines() if line}


def discover(results_root: Path, sweep_root: Path | None, preset: str = PRESET) -> tuple[list[CommittedRun], list[tuple[str, str]]]:
    """Every committed run of ``preset`` under ``results_root`` (``<paper>/<preset>/...``) and the sweep's runs in
    ``sweep_root``; and the result files not recomputed, each with why (an unknown kind fails the check). Sidecars
    git does not track are runs not committed yet: left out, and counted."""
    found, other = [], []
    untracked = _untracked([Path(results_root)] + ([Path(sweep_root)] if sweep_root else []))
    if untracked:
        other.append((f"{len([p for p in untracked if p.suffix == '.json'])} sidecar(s) not committed",
                      "left out (runs not committed yet)"))
    for sidecar_path in sorted(Path(results_root).glob(f"*/{preset}/**/*.json")):
        if sidecar_path.resolve() in untracked:
            continue
        try:
            sidecar = json.loads(sidecar_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            other.append((repo_relative(sidecar_path), f"UNREADABLE sidecar: {error}"))
            continue
        if not isinstance(sidecar, dict) or "config_hash" not in sidecar:
            continue  # not a run's sidecar
        name = sidecar_path.stem
        if name.endswith("__eval"):
            continue  # a training's checkpoint evaluations: past any prefix (the first checkpoint is episode 100 or later)
        kind = _kind(sidecar)
        folder = sidecar_path.parent
        if kind is None:
            other.append((repo_relative(sidecar_path), NOT_RECOMPUTED.get(name, "UNKNOWN kind of run: not covered")))
            continue
        relative = folder.relative_to(results_root).as_posix()
        found.append(CommittedRun(kind, _family(relative, name, (sidecar.get("config") or {}).get("scenario")), name,
                                  folder, sidecar))
    if sweep_root is not None and Path(sweep_root).is_dir():
        for sidecar_path in sorted(Path(sweep_root).glob("*__seed*.json")):
            if sidecar_path.resolve() in untracked:
                continue
            sidecar = json.loads(sidecar_path.read_text(encoding="utf-8"))
            if "setting" in sidecar and sidecar_path.with_suffix(".csv").exists():
                found.append(CommittedRun("maestro-sweep", _family(Path(sweep_root).name, sidecar_path.stem, None),
                                          sidecar_path.stem, Path(sweep_root), sidecar))
    return found, other


def default_seed_choice() -> int:
    """Today's UTC day number: the chosen runs rotate from day to day."""
    return (datetime.datetime.now(datetime.timezone.utc).date() - datetime.date(1970, 1, 1)).days


def choose(runs: list[CommittedRun], seed_choice: int) -> dict[str, CommittedRun]:
    """One run per family: member ``(seed_choice + digest of the family) mod members`` in name order."""
    families: dict[str, list[CommittedRun]] = {}
    for run in runs:
        families.setdefault(run.family, []).append(run)
    chosen = {}
    for family, members in sorted(families.items()):
        members.sort(key=lambda r: r.name)
        offset = int(hashlib.sha256(family.encode()).hexdigest()[:8], 16)
        chosen[family] = members[(seed_choice + offset) % len(members)]
    return chosen


# ----- comparing a prefix ----------------------------------------------------------------------------------

def _is_number(text: str) -> bool:
    return bool(_NUMBER.fullmatch(text.strip()))


def compare_prefix(committed: str, recomputed: str, timing: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """``recomputed`` (a prefix run's CSV text) against the first rows of ``committed``: the header and every row
    byte for byte; cells of ``timing`` columns need only both be numbers (or both empty). Returns the status
    ("same", "differs") and details, the first differing row and column first."""
    old, new = committed.splitlines(), recomputed.splitlines()
    if not new:
        return "differs", ["the recomputed table is empty"]
    if old[:1] != new[:1]:
        return "differs", [f"header differs: {old[0] if old else ''!r} -> {new[0]!r}"]
    header = next(csv.reader([new[0]]))
    details, tolerated, differing = [], 0, 0
    if len(old) < len(new):
        details.append(f"the committed table has {len(old) - 1} rows, fewer than the prefix's {len(new) - 1}: "
                       f"the first {len(old) - 1} compared")
    for row, (a, b) in enumerate(zip(old[1:], new[1:]), 1):
        if a == b:
            continue
        x, y = next(csv.reader([a])), next(csv.reader([b]))
        width = max(len(x), len(y))
        x, y = x + ["<absent>"] * (width - len(x)), y + ["<absent>"] * (width - len(y))
        cells = [(header[i] if i < len(header) else f"#{i}", x[i], y[i]) for i in range(width) if x[i] != y[i]]
        real = [(c, u, v) for c, u, v in cells
                if not (c in timing and ((_is_number(u) and _is_number(v)) or (u == v == "")))]
        tolerated += len(cells) - len(real)
        if real:
            differing += 1
            if differing == 1:
                column, u, v = real[0]
                details.insert(0, f"first difference: row {row} (episode {_episode(header, y)}), column {column!r}: "
                                  f"committed {u!r} -> recomputed {v!r}"
                               + (f" (and {len(real) - 1} more cell(s) of that row)" if len(real) > 1 else ""))
    if differing:
        details.append(f"{differing} of {len(new) - 1} prefix rows differ")
        return "differs", details
    note = f"{len(new) - 1} rows equal byte for byte" + (f" but for {tolerated} wall-time cells ({', '.join(timing)})" if tolerated else "")
    return "same", [note, *details]


def _episode(header: list[str], row: list[str]) -> str:
    return row[header.index("episode")] if "episode" in header and header.index("episode") < len(row) else "?"


def committed_table(run: CommittedRun) -> tuple[str, str | None]:
    """The committed table's CSV text, and what is wrong with it against its sidecar (None when intact)."""
    from marlinkit.runs import ResultStore
    from marlinkit.files import ResultFileError

    if run.kind == "maestro-sweep":
        return (run.folder / f"{run.name}.csv").read_text(encoding="utf-8"), None
    store = ResultStore(run.folder)
    path = store.table_path(run.name)
    data = path.read_bytes()
    text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")
    try:
        store._check_table(run.name, run.sidecar)
        problem = None
    except ResultFileError as error:
        problem = str(error).replace(str(paths.REPO_ROOT) + "/", "")
    return text, problem


# ----- recomputing one run (each in a process of its own) --------------------------------------------------

def _marlin_source(plan_source: str | None, record: bool = False):
    """The plan source a MARLIN sidecar names (``plan_source``), rebuilt: the exact planner, the calibrated surrogate,
    or an LLM negotiation by one of the presets' ``llm_only`` protocols (strict replay)."""
    from marlinkit import presets
    from marlinkit.algos.joint_planner import ExactJointPlanner
    from marlinkit.marlin import llm_only
    from marlinkit.marlin.surrogate_planner import CalibratedSurrogatePlanner, LlamaSurrogatePlanner

    if plan_source in (None, ExactJointPlanner.name):
        return ExactJointPlanner()
    if plan_source == CalibratedSurrogatePlanner().name:
        return CalibratedSurrogatePlanner()
    if plan_source == LlamaSurrogatePlanner().name:
        return LlamaSurrogatePlanner()
    if plan_source.startswith("negotiation:"):
        llm = plan_source.split(":")[1]
        for preset in presets.PRESET_NAMES:
            source = llm_only.negotiator(presets.get(preset, "llm_only"), llm, purpose="marlin_training", record=record)
            if source.name == plan_source:
                return source
    raise ValueError(f"no plan source of today's code is named {plan_source!r}")


def marlin_config(run_config: dict[str, Any]):
    """A MARLIN run's ``GridConfig``, rebuilt from its sidecar's configuration (every key that is a field of it)."""
    from marlinkit.marlin.grid import GridConfig

    fields = {f.name for f in dataclasses.fields(GridConfig)}
    values = {k: v for k, v in run_config.items() if k in fields and k not in ("seed", "system", "scenario", "plan_source")}
    scenario = run_config["scenario"]
    if "switch" in run_config:
        values["switch_rule"] = run_config["switch"]["rule"]
    if "llm_only_performance" in run_config:
        values["llm_only_performance"] = {scenario: run_config["llm_only_performance"],
                                          **run_config.get("llm_only_performance_after", {})}
    if "trials" in run_config:
        values["llm_only_trials"] = run_config["trials"]
    return GridConfig(scenarios=(scenario,), seeds=(run_config["seed"],), systems=(run_config["system"],), **values)


def _recompute_marlin(run: CommittedRun, episodes: int) -> dict[str, Any]:
    from marlinkit.llm.cache import transcript_context
    from marlinkit.marlin import batched, grid, systems
    from marlinkit.runs import config_hash

    config_in = run.sidecar["config"]
    source = _marlin_source(config_in.get("plan_source"))
    config = marlin_config(config_in)
    scenario, system, seed = config_in["scenario"], config_in["system"], config_in["seed"]
    rebuilt = config_hash(grid.job_config(scenario, system, seed, config, source.name))
    if rebuilt != run.sidecar["config_hash"]:
        return {"error": f"today's code rebuilds its configuration with hash {rebuilt}, not the committed "
                         f"{run.sidecar['config_hash']}: the run's settings or their key changed"}
    with transcript_context(run=f"MARLIN {run.name}"):
        if system == "LLM-only":
            table = systems.plan_source_alone(scenario, seed, config.llm_only_trials, source, config.actuation_noise)
        elif config.trainer == "batched":
            table = batched.train_systems([(scenario, system, seed)], config, source, stop_after=episodes)[0][0]
        else:
            table = systems.train_system(scenario, system, seed, config, source, stop_after=episodes)[0]
    return {"table": table.to_csv(index=False)}


def maestro_config(run: CommittedRun, preset: str = PRESET):
    """The ablation ``Config`` a committed MAESTRO run's folder names: the preset's section under the curriculum rule
    and MADDPG setting whose folder (``ablation.results_root``) is the run's; None when no setting names it."""
    from marlinkit.maestro import ablation, curriculum, sweep

    named = {k: run.sidecar["config"][k] for k in ("llm", "engine") if k in run.sidecar["config"]}  # they name folders too
    for rule in curriculum.SETTINGS:
        for setting in (None, *sweep.SETTINGS):
            try:
                cfg = ablation.load_config(preset, record=False, curriculum=rule, maddpg_setting=setting, **named)
            except ValueError:
                continue
            if ablation.setting_suffix(cfg) == _suffix(run, preset):
                return cfg
    return None


def _suffix(run: CommittedRun, preset: str) -> str:
    """The run's folder below ``<results>/maestro/<preset>/`` ("" for the preset's own settings)."""
    parts = run.folder.resolve().parts
    index = len(parts) - 1 - parts[::-1].index(preset) if preset in parts else len(parts)
    return "/".join(parts[index + 1:])


def _recompute_maestro(run: CommittedRun, episodes: int, cfg, calibration, scratch: str) -> dict[str, Any]:
    from marlinkit.llm.cache import transcript_context
    from marlinkit.maestro import ablation
    from marlinkit.runs import config_hash

    config_in = run.sidecar["config"]
    name, seed = config_in["ablation"], config_in["seed"]
    rebuilt = config_hash(ablation.run_config(cfg, name, seed, calibration))
    if rebuilt != run.sidecar["config_hash"]:
        return {"error": f"today's code rebuilds its configuration with hash {rebuilt}, not the committed "
                         f"{run.sidecar['config_hash']}: the run's settings, its calibration or their key changed"}
    with transcript_context(run=f"MAESTRO {run.label}"):
        out = ablation.dual_loop(cfg, name, seed, calibration, scratch, stop_after=episodes)
    return {"table": out["table"].to_csv(index=False), "generations": out["generations"]}


def _recompute_sweep(run: CommittedRun, episodes: int, scratch: str) -> dict[str, Any]:
    from marlinkit.maestro import sweep

    side = run.sidecar
    setting, seed = side["setting"], side["maddpg"]["seed"]
    key = sweep.maddpg_config(setting, seed, side["episodes"], side["episode_seconds"], side["maddpg"]["eval_every"]).key()
    if key != side["maddpg"]:
        changed = sorted(k for k in set(key) | set(side["maddpg"]) if key.get(k) != side["maddpg"].get(k))
        return {"error": f"today's setting {setting!r} gives other MADDPG settings than the committed run's: {changed}"}
    path = sweep.sweep_run(setting, seed, side["episodes"], side["episode_seconds"], side["maddpg"]["eval_every"],
                           side["eval_seed"], scratch, stop_after=episodes)
    return {"table": Path(path).read_text(encoding="utf-8")}


def recompute(run: CommittedRun, episodes: int, scratch: str, cfg=None, calibration=None) -> dict[str, Any]:
    """One run's prefix (a fresh process's job): ``table`` (CSV text) and, for MAESTRO, ``generations``; or ``error``
    (a transcript miss, a configuration today's code does not rebuild), never an exception."""
    started, cpu_started = time.perf_counter(), time.process_time()
    Path(scratch).mkdir(parents=True, exist_ok=True)
    try:
        if run.kind in ("marlin-training", "plan-source-alone"):
            out = _recompute_marlin(run, episodes)
        elif run.kind == "maestro-ablation":
            out = _recompute_maestro(run, episodes, cfg, calibration, scratch)
        else:
            out = _recompute_sweep(run, episodes, scratch)
    except Exception as error:  # noqa: BLE001 (reported by name, with the run; the other runs go on)
        out = {"error": f"{type(error).__name__}: {error}"}
    return {**out, "seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu_started}


# ----- code age ---------------------------------------------------------------------------------------------

def numerics_entries(run: CommittedRun) -> tuple[str, ...]:
    """The runner modules whose imports make a committed run's numerics path (as its runner records them)."""
    if run.kind in ("marlin-training", "plan-source-alone"):
        from marlinkit.marlin import grid

        try:
            return grid.numerics_entries(_marlin_source(run.sidecar["config"].get("plan_source")))
        except ValueError:
            return (grid.__name__,)
    return ("marlinkit.maestro.sweep",) if run.kind == "maestro-sweep" else ("marlinkit.maestro.ablation",)


def code_age(runs: list[CommittedRun]) -> tuple[list[str], bool]:
    """Per family: how many of its committed runs record their code, made by today's sources or not, and how many
    without the record were last committed before the last change to their numerics path (git history)."""
    note = provenance.history_note()
    changes = provenance.last_changes(["marlinkit", *sorted({repo_relative(r.folder) for r in runs})]) if note is None or "shallow" in note else {}
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
            parts.append(f"{len(recorded)} record their code, {len(other_code)} of them made by other sources than today's")
        if unrecorded:
            if last is None:
                parts.append(f"{len(unrecorded)} without a code record (no history to date them)")
            else:
                when = datetime.datetime.fromtimestamp(last[0], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
                parts.append(f"{len(unrecorded)} without a code record, {'all' if len(older) == len(unrecorded) else len(older)} of them committed before the last "
                             f"change to their numerics path ({last[2]} at {last[1][:10]}, {when} UTC)")
            if uncommitted:
                parts.append(f"{len(uncommitted)} not committed yet")
        lines.append(f"  {family}: " + "; ".join(parts))
        stale = sorted(r.name for r in other_code + older)
        if stale and len(stale) < len(members):
            lines.append("      made by older code: " + ", ".join(stale))
    return lines, bool(note and "shallow" not in note)


# ----- the check --------------------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The paper preset's options of ``python -m marlinkit verify`` (see :mod:`marlinkit.verify`)."""
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


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Recompute one prefix per family, compare, print the per-run summary; ``exit_code`` 1 on any difference."""
    from marlinkit import executors
    from marlinkit.verify import live_calls, transcript_records, _without_timing

    import resource

    started, load = time.perf_counter(), os.getloadavg()[0]
    for name in ("episodes", "maestro_episodes", "workers"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    seed_choice = default_seed_choice() if args.seed_choice is None else args.seed_choice
    scratch = (args.scratch or paths.BUILD_DIR / "verify-paper").resolve()
    shutil.rmtree(scratch, ignore_errors=True)
    runs_root = args.runs_root.resolve()
    committed, others = discover(runs_root, args.sweep_root)
    if not committed:
        raise FileNotFoundError(f"no committed {PRESET} runs under {runs_root} or {args.sweep_root}")
    chosen = {f: r for f, r in choose(committed, seed_choice).items() if not args.family or any(t in f for t in args.family)}
    print(f"verify {PRESET}: {len(committed)} committed runs in {len({r.family for r in committed})} families; one run per "
          f"family chosen by seed choice {seed_choice}"
          + (" (today's UTC day number; --seed-choice N or SEED_CHOICE=N repeats a choice)" if args.seed_choice is None else "")
          + f"; prefixes of {args.episodes} MARLIN and {args.maestro_episodes} MAESTRO episodes in {repo_relative(scratch)}/, "
          "strict replay", flush=True)
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
    # MAESTRO: each folder's calibration first (its runs' configuration hashes hold it), compared whole
    maestro = {}
    for family, run in chosen.items():
        if run.kind != "maestro-ablation":
            continue
        key = run.folder.resolve()
        if key not in maestro:
            maestro[key] = _calibrate(run, scratch / "maestro" / _suffix(run, PRESET), problems)
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
        jobs.append((run, episodes, str(folder), *extra))
        order.append(family)
    # the longest first (MAESTRO under 4x the updates, then MAESTRO, then MARLIN), so the workers end together
    weight = {"maestro-sweep": 2, "maestro-ablation": 2, "marlin-training": 1, "plan-source-alone": 0}
    ranked = sorted(range(len(jobs)), key=lambda i: (-weight[jobs[i][0].kind], "ue25" not in order[i], order[i]))
    try:  # MAESTRO in a process per run (libsumo: one simulation per process), MARLIN on a pool of processes
        for fresh in (True, False):
            batch = [i for i in ranked if (jobs[i][0].kind in ("maestro-ablation", "maestro-sweep")) == fresh]
            done = executors.run_jobs(recompute, [jobs[i] for i in batch], "local", max(1, min(args.workers, len(batch))),
                                      progress=True, desc=f"verify paper prefixes ({'MAESTRO' if fresh else 'MARLIN'})",
                                      fresh_process=fresh)
            results.update({order[i]: out for i, out in zip(batch, done)})
    finally:
        os.environ.pop(paths.TRANSCRIPTS_ENV) if moved is None else os.environ.__setitem__(paths.TRANSCRIPTS_ENV, moved)

    lines, failed, differing = [], bool(problems), []
    width = max(len(f) for f in chosen) if chosen else 10
    for family, run in chosen.items():
        out = results[family]
        timing = TIMING_COLUMNS[run.kind]
        details = []
        if "error" in out:
            status, details = "FAILED", [out["error"]]
        else:
            text, damaged = committed_table(run)
            status, details = compare_prefix(text, out["table"], timing)
            if damaged:
                status, details = "differs", [damaged, *details]
            if "generations" in out:
                log_status, log_details = _compare_generations(run, out["generations"], args.maestro_episodes,
                                                               _without_timing)
                details.append(log_details)
                status = "differs" if log_status == "differs" else status
        if status != "same":
            failed = True
            differing.append(run.label)
        seconds = f"{out.get('seconds', 0):.0f} s, {out.get('cpu_seconds', 0):.0f} CPU-s"
        lines.append(f"  {'ok' if status == 'same' else status.upper():<8} {family:<{width}}  {run.name}  ({seconds})")
        lines.extend(f"             {d}" for d in details if d)
    print(f"prefixes ({len(chosen)} families, one run each):")
    print("\n".join(lines))
    for problem in problems:
        print(f"  DIFFERS  {problem}")
    if others:
        print("committed results not recomputed:")
        for path, why in others:
            print(f"  {path}: {why}")
            failed |= why.startswith(("UNKNOWN", "UNREADABLE"))
    print("code age (the sidecars' code records; else the git history of the run files and their numerics path):")
    age, _ = code_age(committed)
    print("\n".join(age))
    calls = live_calls(before, transcript_records(transcripts))
    print(f"live LLM calls: {calls} (records added to the replayed transcripts)")
    failed |= calls > 0
    wall = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = children.ru_utime + children.ru_stime + time.process_time()
    print(f"verify {PRESET}: " + ("every recomputed prefix matches its committed run" if not failed else "DIFFERENCES FOUND")
          + f" ({wall:.0f} s of wall time, {cpu:.0f} CPU-s, load average {load:.1f} at the start and "
            f"{os.getloadavg()[0]:.1f} at the end; seed choice {seed_choice})")
    return {"preset": PRESET, "seed_choice": seed_choice, "families": len(chosen), "wall_s": wall, "cpu_s": cpu,
            "live_llm_calls": calls,
            "differing": differing, "exit_code": 1 if failed else 0}


def _calibrate(run: CommittedRun, scratch: Path, problems: list[str]):
    """The run's folder's ablation ``Config`` and its calibration recomputed in ``scratch``, compared whole with the
    committed ``ablation_calibration`` (a difference goes to ``problems``)."""
    from marlinkit.maestro.curriculum_env import calibrate
    from marlinkit.runs import ResultStore
    from marlinkit.verify import compare_table

    cfg = maestro_config(run)
    if cfg is None:
        return None, None
    cfg = dataclasses.replace(cfg, executor="local")
    calibration, _ = calibrate(cfg, ResultStore(scratch, code=("marlinkit.maestro.ablation",)))
    committed = run.folder / "ablation_calibration.csv"
    if committed.exists():
        status, details = compare_table(committed, scratch / "ablation_calibration.csv")
        if status != "same":
            problems.append(f"{repo_relative(committed)} (recomputed whole): " + "; ".join(details))
        else:
            print(f"  ok       {repo_relative(committed)} (recomputed whole, byte for byte)", flush=True)
    return cfg, calibration


def _compare_generations(run: CommittedRun, recomputed: str, episodes: int, without_timing) -> tuple[str, str]:
    """The committed generation log's records of the prefix's episodes against the recomputed ones (less timing)."""
    path = run.folder / f"{run.name}.generations.jsonl"
    if not path.exists():
        return "same", "no committed generation log"
    old = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    old = [r for r in old if r.get("episode", 0) < episodes]
    new = [json.loads(line) for line in recomputed.splitlines() if line.strip()]
    if len(old) != len(new):
        return "differs", f"generation log: {len(old)} committed records in the prefix's episodes, {len(new)} recomputed"
    for index, (a, b) in enumerate(zip(old, new), 1):
        a, b = without_timing(a), without_timing(b)
        if a != b:
            key = next(k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
            return "differs", (f"generation log: record {index} (episode {a.get('episode')}), field {key!r}: "
                               f"{str(a.get(key))[:60]!r} -> {str(b.get(key))[:60]!r}")
    return "same", f"generation log: {len(new)} records equal (less timing fields)"
