"""Result files: deterministic run names, atomic writes, provenance.

A run is identified by its configuration; its tidy table (CSV, one row per episode or
evaluation) sits next to a JSON sidecar holding the configuration, seed, versions, numeric
environment and LLM backend, the table's row count and SHA-256, and the code that made it (``code``:
the git commit and a hash of the sources on the run's numerics path, :mod:`marlinkit.repro.provenance`). Its key
is :func:`marlinkit.repro.keys.config_hash` of the configuration. A run whose sidecar exists and
whose table still matches it is complete, which is how runners resume: a truncated or edited table
is recomputed by the runners, and reported by name by :meth:`ResultStore.load`, never read silently.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import platform
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from marlinkit.files import ResultFileError, atomic_write_bytes, atomic_write_text
from marlinkit.repro import numerics, provenance
from marlinkit.repro.keys import config_hash

_VERSIONED = ("marlinkit", "torch", "numpy", "pandas", "pettingzoo", "transformers", "libsumo", "ray")


def library_versions() -> dict[str, str]:
    """Versions of the libraries that shape results (absent ones are left out)."""
    versions = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def run_name(*parts: Any) -> str:
    """Deterministic run name such as ``single_slot__marlin__seed0``."""
    return "__".join(str(p) for p in parts)


#: Tables larger than this are written gzip-compressed (``<name>.csv.gz``, no timestamp: the same table, the same
#: bytes): a paper-preset MARLIN run is ~3 MB of CSV, ~10x less compressed, and those runs are committed.
COMPRESS_OVER_BYTES = 1 << 20


class ResultStore:
    """Tidy per-run tables under one folder, each with a JSON sidecar (``<name>.json``).

    The sidecar's ``table_sha256`` is the hash of the CSV text, compressed or not. ``code``: the runner modules
    whose imports make the runs' numerics path (:func:`marlinkit.repro.provenance.code_record`; None: the whole
    package).
    """

    def __init__(self, root: Path, code: tuple[str, ...] | None = None):
        self.root = Path(root)
        self.code = tuple(code) if code else None

    def table_path(self, name: str) -> Path:
        """The run's table file: ``<name>.csv.gz`` when that is there (a large table), else ``<name>.csv``."""
        compressed = self.root / f"{name}.csv.gz"
        return compressed if compressed.exists() else self.root / f"{name}.csv"

    def sidecar_path(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def is_complete(self, name: str, config: dict[str, Any]) -> bool:
        """True when the run exists, was made with the same configuration and numerics, and is intact.
        What code made it (the sidecar's ``code``) is provenance, not identity: it is not read here.

        A damaged table or sidecar makes the run incomplete (so the runner recomputes it), with a
        warning naming the file.
        """
        meta = self.sidecar_path(name)
        if not (meta.exists() and self.table_path(name).exists()):
            return False
        try:
            sidecar = self.load_sidecar(name)
            if sidecar.get("config_hash") != config_hash(config):
                return False
            if sidecar.get("numerics", {}).get("mode") != numerics.MODE:
                return False
            self._check_table(name, sidecar)
        except ResultFileError as error:
            warnings.warn(f"{error}; recomputing the run", RuntimeWarning, stacklevel=2)
            return False
        return True

    def save(self, name: str, table: pd.DataFrame, config: dict[str, Any], **extra: Any) -> None:
        """Write the table first, the sidecar last: a sidecar marks a finished run."""
        data = table.to_csv(index=False).encode()
        plain, compressed = self.root / f"{name}.csv", self.root / f"{name}.csv.gz"
        if len(data) > COMPRESS_OVER_BYTES:
            atomic_write_bytes(compressed, gzip.compress(data, compresslevel=9, mtime=0))
            plain.unlink(missing_ok=True)
        else:
            atomic_write_bytes(plain, data)
            compressed.unlink(missing_ok=True)
        sidecar = {
            "name": name,
            "config": config,
            "config_hash": config_hash(config),
            "table_rows": len(table),
            "table_sha256": hashlib.sha256(data).hexdigest(),
            "versions": library_versions(),
            "numerics": numerics.state(),
            "code": provenance.code_record(self.code),
            **extra,
        }
        atomic_write_text(self.sidecar_path(name), json.dumps(sidecar, indent=2, sort_keys=True, default=str))

    def cached(self, name: str, config: dict[str, Any], compute: Callable[[], pd.DataFrame],
               **extra: Any) -> pd.DataFrame:
        """The run's table: loaded when complete with this configuration, else ``compute()``-d and saved.

        The one cache-or-compute step of every runner that computes a run in this process. The table is
        always read back from its file, so a fresh run and a resumed one hand their callers the same frame.
        """
        if not self.is_complete(name, config):
            self.save(name, compute(), config, **extra)
        return self.load(name)

    def _check_table(self, name: str, sidecar: dict[str, Any]) -> bytes:
        path = self.table_path(name)
        try:
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
        except (OSError, EOFError, gzip.BadGzipFile) as error:
            raise ResultFileError(f"result table {path} cannot be read: {error}") from error
        expected = sidecar.get("table_sha256")
        if expected is None:
            raise ResultFileError(f"result sidecar {self.sidecar_path(name)} records no table hash (written by an "
                                  "older marlinkit)")
        if hashlib.sha256(data).hexdigest() != expected:
            rows = max(data.count(b"\n") - 1, 0)
            raise ResultFileError(f"result table {path} is damaged: it has {rows} rows and a different SHA-256 "
                                  f"from the {sidecar.get('table_rows')} rows its sidecar recorded (truncated or "
                                  "edited); delete it and its .json to recompute")
        return data

    def load(self, name: str) -> pd.DataFrame:
        """The run's table, checked against the row count and hash in its sidecar."""
        data = self._check_table(name, self.load_sidecar(name))
        return pd.read_csv(io.BytesIO(data))

    def load_sidecar(self, name: str) -> dict[str, Any]:
        path = self.sidecar_path(name)
        try:
            sidecar = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ResultFileError(f"result sidecar {path} is damaged or unreadable: {error}") from error
        if not isinstance(sidecar, dict) or "config_hash" not in sidecar:
            raise ResultFileError(f"result sidecar {path} is not a marlinkit sidecar (no config_hash)")
        return sidecar
