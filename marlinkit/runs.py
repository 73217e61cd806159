"""Result files: deterministic run names, configuration hashing, atomic writes, provenance.

A run is identified by its configuration; its tidy table (CSV, one row per episode or
evaluation) sits next to a JSON sidecar holding the configuration, seed, versions and LLM
backend. A run whose sidecar exists is complete, which is how runners resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

_UMASK = os.umask(0)
os.umask(_UMASK)  # read once: the only way to learn the umask is to set it

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


def config_hash(config: dict[str, Any]) -> str:
    """A short stable hash of a JSON-serialisable configuration."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: never a half file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; results are ordinary files
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def run_name(*parts: Any) -> str:
    """Deterministic run name such as ``single_slot__marlin__seed0``."""
    return "__".join(str(p) for p in parts)


class ResultStore:
    """Tidy per-run tables under one folder, each with a JSON sidecar (``<name>.json``)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def table_path(self, name: str) -> Path:
        return self.root / f"{name}.csv"

    def sidecar_path(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def is_complete(self, name: str, config: dict[str, Any]) -> bool:
        """True when the run exists and was made with the same configuration."""
        meta = self.sidecar_path(name)
        if not (meta.exists() and self.table_path(name).exists()):
            return False
        return json.loads(meta.read_text()).get("config_hash") == config_hash(config)

    def save(self, name: str, table: pd.DataFrame, config: dict[str, Any], **provenance: Any) -> None:
        """Write the table first, the sidecar last: a sidecar marks a finished run."""
        atomic_write_text(self.table_path(name), table.to_csv(index=False))
        sidecar = {
            "name": name,
            "config": config,
            "config_hash": config_hash(config),
            "versions": library_versions(),
            **provenance,
        }
        atomic_write_text(self.sidecar_path(name), json.dumps(sidecar, indent=2, sort_keys=True, default=str))

    def load(self, name: str) -> pd.DataFrame:
        return pd.read_csv(self.table_path(name))

    def load_sidecar(self, name: str) -> dict[str, Any]:
        return json.loads(self.sidecar_path(name).read_text())
