"""Which code made a run: the git commit and a hash of the package sources on the run's numerics path.

A run's *numerics path* is the set of package modules its numbers can depend on: the modules its runner
imports, followed import by import (also imports inside functions) through the package, with the
parents' ``__init__`` modules, less :data:`NOT_NUMERICS` (modules that move, store or report numbers
without changing them: a configuration is recorded and hashed in the sidecar, so the presets that
name it are not on the path). :func:`code_record` is what every result sidecar records under
``code``; it is provenance, never part of a run's identity (``ResultStore.is_complete`` reads the
configuration hash and the numerics mode only).

:func:`last_changes` dates files by the git history, so ``make verify PRESET=paper`` can say which
committed runs were made before the last change to their numerics path.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from marlinkit import paths

PACKAGE = "marlinkit"
#: Package modules that never change a run's numbers: configuration names (recorded in the sidecar), paths,
#: progress bars, process pools, file writing, figures, reports and this checking code.
NOT_NUMERICS = frozenset({
    "marlinkit.presets", "marlinkit.paths", "marlinkit.progress", "marlinkit.executors", "marlinkit.files",
    "marlinkit.plots", "marlinkit.info", "marlinkit.__main__", "marlinkit.repro.provenance", "marlinkit.repro.verify",
    "marlinkit.repro.verify_paper", "marlinkit.paper_audit", "marlinkit.stats",
})
#: The papers' own packages: a run of one never runs the other's modules (an import of the other paper's, e.g. by a
#: backend setting the run does not use, is not followed).
PAPERS = ("marlinkit.marlin", "marlinkit.maestro")


def module_file(module: str) -> Path | None:
    """The source file of a package module (``marlinkit.marlin.grid`` -> ``marlinkit/marlin/grid.py``), None if none."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = paths.PACKAGE_DIR.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(module: str) -> set[str]:
    """The package modules ``module``'s source imports anywhere in it, with their parent packages."""
    file = module_file(module)
    if file is None:
        return set()
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package upwards
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # "from pkg import module"
    modules = {name for name in found if name.split(".")[0] == PACKAGE and module_file(name) is not None}
    return modules | {".".join(name.split(".")[:i]) for name in modules for i in range(1, name.count(".") + 1)}


@functools.lru_cache(maxsize=None)
def numerics_path(entries: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The package modules on the numerics path of runs made by ``entries`` (sorted); None: every package module."""
    if entries is None:
        found = {PACKAGE + "." + ".".join(p.relative_to(paths.PACKAGE_DIR).with_suffix("").parts)
                 for p in paths.PACKAGE_DIR.rglob("*.py")}
        found = {name.removesuffix(".__init__") for name in found}
    else:
        others = tuple(paper for paper in PAPERS if not any(e == paper or e.startswith(paper + ".") for e in entries))
        found, todo = set(), [PACKAGE, *entries]
        while todo:
            module = todo.pop()
            if (module in found or module in NOT_NUMERICS or module_file(module) is None
                    or any(module == paper or module.startswith(paper + ".") for paper in others)):
                continue  # a module off the path is not followed either: what it imports is not the run's
            found.add(module)
            todo.extend(_imports(module) - found)
    return tuple(sorted(found - NOT_NUMERICS))


def path_files(entries: tuple[str, ...] | None = None) -> list[str]:
    """The numerics path's source files, relative to the repository root (sorted). A module whose file vanished
    after the path was read (the checkout changed under a running process) is left out, never a crash that would lose
    a finished run's record: the commit's ``sources_dirty`` then says the sources were not the commit's."""
    files = (module_file(m) for m in numerics_path(entries))
    return sorted(f.relative_to(paths.REPO_ROOT).as_posix() for f in files if f is not None)


def sources_sha256(entries: tuple[str, ...] | None = None) -> str:
    """SHA-256 over the numerics path's files: each one's path and bytes, in path order."""
    digest = hashlib.sha256()
    for name in path_files(entries):
        digest.update(name.encode() + b"\0" + (paths.REPO_ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()


def git(*args: str) -> str | None:
    """A git command's output in the repository (no optional locks: other processes may be committing), or None
    when git or the repository is not there."""
    try:
        done = subprocess.run(["git", "--no-optional-locks", *args], cwd=paths.REPO_ROOT, capture_output=True,
                              text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def code_record(entries: tuple[str, ...] | None = None) -> dict[str, Any]:
    """What a sidecar records of the code that made its run: ``commit`` (None without git), ``sources_dirty``
    (whether a file of the numerics path differs from that commit; None without git), ``sources_sha256`` and the
    runner modules the path starts from (``numerics_path``; None: the whole package)."""
    files = path_files(entries)
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=all", "--", *files) if commit else None
    return {"commit": commit.strip() if commit else None,
            "sources_dirty": None if status is None else bool(status.strip()),
            "sources_sha256": sources_sha256(entries), "numerics_path": list(entries) if entries else None}


def history_note() -> str | None:
    """Why the git history cannot date files (no git, no repository, a shallow clone), None when it can."""
    if git("rev-parse", "HEAD") is None:
        return "no git history here (git missing or not a clone): committed runs cannot be dated against their code"
    if (git("rev-parse", "--is-shallow-repository") or "").strip() == "true":
        return ("a shallow clone: the history holds only its recent commits, so a file last changed before them "
                "reads as changed in the oldest commit here (`git fetch --unshallow` for the full history)")
    return None


def last_changes(roots: Iterable[str]) -> dict[str, tuple[int, str]]:
    """Per file under ``roots`` (repository-relative): the time and commit of its last change in the git history
    (one ``git log`` pass; empty without git). Files never committed are absent."""
    out = git("log", "--format=%x00%ct %H", "--name-only", "--", *roots)
    changes: dict[str, tuple[int, str]] = {}
    stamp = (0, "")
    for line in (out or "").splitlines():
        if line.startswith("\0"):
            when, commit = line[1:].split()
            stamp = (int(when), commit)
        elif line and line not in changes:
            changes[line] = stamp
    return changes
