"""The package's layers, read from the imports of every module (top-level and inside functions).

Floors, bottom up: the shared base (files, paths, numerics, progress, executors, stats, plots, paper_values),
then ``envs`` / ``algos`` / ``llm``, then the two papers ``marlin`` and ``maestro``, then the entry points
(``presets``, ``runs``, ``verify``, ``paper_audit``, ``info``, ``bench``, ``__main__``). See README "Layout".
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from marlinkit import paths

PACKAGE = paths.PACKAGE_DIR
BASE = {"files", "paths", "numerics", "progress", "executors", "stats", "plots", "paper_values"}
EXPERIMENTS = ("marlinkit.marlin", "marlinkit.maestro")
RUNNERS = ("marlinkit.presets", "marlinkit.runs")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every marlinkit module ``path`` imports, wherever the import statement sits."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name == "marlinkit" or name.startswith("marlinkit.")}


MODULES = {module_name(path): imported(path) for path in sorted(PACKAGE.rglob("*.py"))}


def under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def offenders(layer, forbidden) -> list[str]:
    return sorted(f"{module} imports {target}" for module, targets in MODULES.items() if under(module, layer)
                  for target in targets if under(target, forbidden))


def test_the_module_table_is_read():
    assert "marlinkit.marlin.algorithm1" in MODULES and "marlinkit.maestro.ablation" in MODULES
    assert "marlinkit.algos.mappo" in MODULES["marlinkit.marlin.systems"]  # imports are seen


@pytest.mark.parametrize("layer", ["marlinkit.envs", "marlinkit.algos", "marlinkit.llm"])
def test_envs_algos_and_llm_import_no_experiment_no_presets_and_no_runs(layer):
    assert offenders([layer], EXPERIMENTS + RUNNERS) == []


def test_the_shared_base_imports_nothing_above_it():
    base = [f"marlinkit.{name}" for name in BASE]
    assert offenders(base, EXPERIMENTS + RUNNERS + ("marlinkit.envs", "marlinkit.algos", "marlinkit.llm")) == []


def test_marlin_and_maestro_never_import_each_other():
    assert offenders(["marlinkit.marlin"], ["marlinkit.maestro"]) == []
    assert offenders(["marlinkit.maestro"], ["marlinkit.marlin"]) == []


def test_nothing_imports_a_notebook():
    """Notebooks call the package, never the other way round (papermill runs them; nothing imports them)."""
    assert not [module for module, targets in MODULES.items() if any(t.startswith("notebooks") for t in targets)]
    sources = {path: path.read_text() for path in PACKAGE.rglob("*.py")}
    assert not [path for path, text in sources.items() if "import_notebook" in text or "nbimporter" in text]
