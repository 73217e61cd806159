"""Files that are never half written and never read silently when damaged: atomic writes and checked reads.

The lowest layer of the package (it imports nothing from marlinkit): environments, the LLM cache and the
result store all write through it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable

_UMASK = os.umask(0)
os.umask(_UMASK)  # read once: the only way to learn the umask is to set it


def atomic_write(path: Path, write: Callable[[BinaryIO], Any]) -> None:
    """Call ``write(handle)`` on a temporary file beside ``path``, then rename it to ``path``: never a half file.
    For large files (checkpoints): the content streams to disk instead of being built in memory first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; results are ordinary files
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: never a half file."""
    atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


class ResultFileError(RuntimeError):
    """A result table or sidecar is damaged or unreadable; the message names the file."""


def read_json(path: Path) -> Any:
    """A JSON result file (transcripts of a run, a sidecar); a damaged one raises ``ResultFileError`` naming it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultFileError(f"result file {path} is damaged or unreadable: {error}") from error


def read_jsonl(path: Path) -> list[Any]:
    """The records of a JSONL result file (a generation log); a damaged line raises ``ResultFileError`` naming
    file:line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ResultFileError(f"result file {path} cannot be read: {error}") from error
    records = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ResultFileError(f"result file {path}:{number} is damaged: {error}; delete the run's files "
                                      "to recompute it") from error
    return records
