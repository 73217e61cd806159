"""Which committed paper runs there are (their kinds and families), which one per family is checked, and how a
recomputed prefix is compared with the committed table."""

from __future__ import annotations

import csv
import datetime
import gzip
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from marlinkit import paths
from marlinkit.repro import provenance

PRESET = "paper"
MARLIN_EPISODES = 30
MAESTRO_EPISODES = 8
#: Measured wall-time columns per kind of run: both cells must be numbers (or both empty), of any value.
TIMING_COLUMNS = {
    "marlin-training": ("wall_time_s",),
    "plan-source-alone": ("wall_time_s",),
    "maestro-ablation": ("sim_s", "train_s", "reward_eval_s", "llm_curriculum_s", "llm_reward_s", "eval_s",
                         "baseline_s"),
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


def discover(results_root: Path, sweep_root: Path | None,
             preset: str = PRESET) -> tuple[list[CommittedRun], list[tuple[str, str]]]:
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
            # a training's checkpoint evaluations: past any prefix (the first checkpoint is episode 100 or later)
            continue
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


def folder_suffix(run: CommittedRun, preset: str) -> str:
    """The run's folder below ``<results>/maestro/<preset>/`` ("" for the preset's own settings)."""
    parts = run.folder.resolve().parts
    index = len(parts) - 1 - parts[::-1].index(preset) if preset in parts else len(parts)
    return "/".join(parts[index + 1:])


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
    note = f"{len(new) - 1} rows equal byte for byte" + (f" but for {tolerated} wall-time cells ({', '.join(timing)})"
                                                         if tolerated else "")
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
