"""The comparisons both verifiers make (``marlinkit.repro.verify`` of a preset's outputs,
``marlinkit.repro.verify_paper`` of the committed runs' prefixes): tables cell by cell with measured wall-time columns
tolerated, live LLM calls counted as transcript records added, and MAESTRO generation-log records less their timing
fields."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from marlinkit import paths

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?:\\?%)?")
SHOWN = 8  # differing cells listed per file


def is_number(text: str) -> bool:
    return bool(_NUMBER.fullmatch(text.strip().replace(",", "")))


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def compare_table(reference: Path, scratch: Path, wall_time: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """Status and details of two CSV tables; cells of the ``wall_time`` columns need only both be numbers."""
    if reference.read_bytes() == scratch.read_bytes():
        return "same", []
    old, new = read_csv(reference), read_csv(scratch)
    if not old or not new or old[0] != new[0]:
        return "differs", [f"header {old[0] if old else []} -> {new[0] if new else []}"]
    header, details, tolerated, cells = old[0], [], 0, 0
    if len(old) != len(new):
        details.append(f"rows {len(old) - 1} -> {len(new) - 1}")
    for row, (a, b) in enumerate(zip(old[1:], new[1:]), 1):
        for column, name in enumerate(header):
            x = a[column] if column < len(a) else "<absent>"
            y = b[column] if column < len(b) else "<absent>"
            if x == y:
                continue
            if name in wall_time and is_number(x) and is_number(y):
                tolerated += 1
                continue
            cells += 1
            if cells <= SHOWN:
                details.append(f"row {row} ({a[0] if a else ''}), column {name!r}: {x!r} -> {y!r}")
    if cells > SHOWN:
        details.append(f"... {cells - SHOWN} more differing cells")
    if details:
        return "differs", details
    return "tolerated", [f"{tolerated} wall-time cell(s) differ ({', '.join(wall_time)}): tolerated"]


def transcript_records(root: Path | None = None) -> dict[str, int]:
    """Lines per transcript file: records added between two counts are live LLM calls."""
    root = Path(root or paths.TRANSCRIPTS_DIR)
    return {p.name: p.read_bytes().count(b"\n") for p in sorted(root.glob("*.jsonl"))}


def live_calls(before: dict[str, int], after: dict[str, int]) -> int:
    return sum(max(after.get(name, 0) - before.get(name, 0), 0) for name in after)


#: Fields of a MAESTRO generation-log record that measure time or say whether the reply was replayed
#: (``verdict.timings``: the sandbox's seconds per validation stage).
GENERATION_TIMING_FIELDS = ("wall_seconds", "llm_seconds", "cached", "verdict.timings")


def timing_field(record: dict, name: str) -> Any:
    """A record's field by dotted name (``verdict.timings``), None when absent."""
    for part in name.split("."):
        record = record.get(part) if isinstance(record, dict) else None
    return record


def without_timing(record: dict) -> dict:
    """The record less its :data:`GENERATION_TIMING_FIELDS` (a copy)."""
    out = dict(record)
    for name in GENERATION_TIMING_FIELDS:
        head, _, rest = name.partition(".")
        if not rest:
            out.pop(head, None)
        elif isinstance(out.get(head), dict):
            out[head] = {k: v for k, v in out[head].items() if k != rest}
    return out
