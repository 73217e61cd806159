"""The package's layers, read from the imports of every module (top-level, inside functions and in
``if TYPE_CHECKING:`` blocks: a type-only import still ties the two modules).

Floors, bottom up: the shared base (files, paths, progress, executors, stats, plots, paper_values, result), then the
reproducibility layer ``repro`` (numerics, provenance, result keys, verify, bench; ``runs``, the result store, stands
on its keys), then ``envs`` / ``algos`` / ``llm``, then ``settings`` (the named settings' files and their loader),
then the two papers ``marlin`` and ``maestro``, then the entry points (``presets``, ``commands``, ``paper_audit``,
``info``, ``__main__``). See docs/operations.md, "Architecture".
``repro`` imports no experiment and no entry point, however indirectly: what must call an experiment (recomputing a
committed run, a benchmark built on an experiment's configuration) sits in ``commands`` and is handed in. Its checks
and benchmarks may call ``envs`` and ``algos``; what ``envs``, ``algos``, ``llm`` and the experiments import of it
stands on the base alone. The experiments never read the presets (the entry points resolve a preset and hand its
``Config`` in), and no module imports, however indirectly, one that imports it back. A module's
``if __name__ == "__main__":`` block runs only when that file is the program: it is an entry point of its own, above
every layer, and is not the module's import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from marlinkit import paths

PACKAGE = paths.PACKAGE_DIR
BASE = {"files", "paths", "progress", "executors", "stats", "plots", "paper_values", "result"}
REPRO = ("marlinkit.repro",)
LOWER = ("marlinkit.envs", "marlinkit.algos", "marlinkit.llm")
EXPERIMENTS = ("marlinkit.marlin", "marlinkit.maestro")
RUNNERS = ("marlinkit.presets", "marlinkit.runs")
SETTINGS = ("marlinkit.settings",)
ENTRY_POINTS = ("marlinkit.presets", "marlinkit.commands", "marlinkit.paper_audit", "marlinkit.info",
                "marlinkit.__main__")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_main_block(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``, the block that runs only when the file is the program."""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


def imported(path: Path) -> set[str]:
    """Every marlinkit name ``path`` imports, wherever the import statement sits (outside its ``__main__`` block):
    ``from a.b import c`` gives ``a.b`` and ``a.b.c``."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = [node for top in tree.body if not is_main_block(top) for node in ast.walk(top)]
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name == "marlinkit" or name.startswith("marlinkit.")}


MODULES = {module_name(path): imported(path) for path in sorted(PACKAGE.rglob("*.py"))}


def import_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    """Module -> the modules it imports: ``from a.b import c`` is an edge to ``a.b.c`` when that is a module (a package
    importing its own submodule is not an edge to the package), else to ``a.b``; a package a submodule sits in is
    imported first by Python, but is not counted as the submodule's import."""
    graph = {}
    for module, names in modules.items():
        targets = {name for name in names if name in modules}
        targets -= {name for name in targets if any(other.startswith(name + ".") for other in targets)}
        graph[module] = targets - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of more than one module (Tarjan), sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def offenders(layer, forbidden) -> list[str]:
    return sorted(f"{module} imports {target}" for module, targets in MODULES.items() if under(module, layer)
                  for target in targets if under(target, forbidden))


def test_the_module_table_is_read():
    assert "marlinkit.marlin.algorithm1" in MODULES and "marlinkit.maestro.ablation" in MODULES
    assert "marlinkit.algos.mappo" in MODULES["marlinkit.marlin.systems"]  # imports are seen


@pytest.mark.parametrize("layer", ["marlinkit.envs", "marlinkit.algos", "marlinkit.llm"])
def test_envs_algos_and_llm_import_no_experiment_no_presets_no_runs_and_no_settings(layer):
    assert offenders([layer], EXPERIMENTS + RUNNERS + SETTINGS) == []


def test_the_settings_import_no_experiment_no_presets_and_no_runs():
    """The named settings sit below the papers, which read them, and above the parts (MADDPG's overrides type them)."""
    assert "marlinkit.algos.maddpg_overrides" in MODULES["marlinkit.settings"]
    assert offenders(SETTINGS, EXPERIMENTS + RUNNERS) == []


def test_the_shared_base_imports_nothing_above_it():
    base = [f"marlinkit.{name}" for name in BASE]
    assert offenders(base, EXPERIMENTS + RUNNERS + LOWER + REPRO + SETTINGS) == []


def test_the_reproducibility_layer_imports_no_experiment_and_no_entry_point_however_indirectly():
    graph = import_graph(MODULES)
    assert "marlinkit.repro.keys" in graph and "marlinkit.repro.verify_paper.check" in graph
    found = sorted(f"{module} reaches {target}" for module in graph if under(module, REPRO)
                   for target in reachable(graph, module) if under(target, EXPERIMENTS + ENTRY_POINTS))
    assert found == []


def test_what_the_algorithms_and_experiments_import_of_the_reproducibility_layer_stands_on_the_base():
    """``envs``, ``algos``, ``llm``, the experiments and the result store import ``repro``'s numerics, provenance and
    keys, which import only the shared base: no floor above it comes back through them."""
    graph = import_graph(MODULES)
    users = LOWER + EXPERIMENTS + ("marlinkit.runs",)
    used = {target for module in graph if under(module, users) for target in graph[module] if under(target, REPRO)}
    assert {"marlinkit.repro.numerics", "marlinkit.repro.keys"} <= used
    base = {f"marlinkit.{name}" for name in BASE} | {"marlinkit"}
    found = sorted(f"{module} reaches {target}" for module in used for target in reachable(graph, module)
                   if not under(target, REPRO) and target not in base)
    assert found == []


def test_only_the_entry_points_import_the_commands():
    assert offenders(REPRO + LOWER + EXPERIMENTS + RUNNERS, ["marlinkit.commands", "marlinkit.__main__"]) == []


def test_the_experiments_never_import_the_presets():
    """The presets sit above the experiments: a preset name is resolved by the notebooks, the command line and the
    Makefile, which hand the experiment its ``Config``."""
    assert offenders(EXPERIMENTS, ["marlinkit.presets"]) == []


def test_the_import_graph_has_no_cycle():
    assert cycles(import_graph(MODULES)) == []


def test_a_cycle_is_found_however_long_and_wherever_the_import_sits(tmp_path):
    """The cycle finder on a package written for it: a three-module cycle through a function-level import, a
    two-module one through ``from package import module``, and a ``__main__`` block that is not an import."""
    files = {"a.py": "from marlinkit import b\n", "b.py": "def f():\n    from marlinkit.c import g\n",
             "c.py": "import marlinkit.a\n\ndef g(): ...\n", "d.py": "from marlinkit import e\n",
             "e.py": "from marlinkit.d import x\n",
             "f.py": "import marlinkit.a\n\nif __name__ == '__main__':\n    from marlinkit import g\n",
             "g.py": "from marlinkit import f\n"}
    package = tmp_path / "marlinkit"
    package.mkdir()
    for name, text in files.items():
        (package / name).write_text(text)
    graph = import_graph({f"marlinkit.{name[:-3]}": imported(package / name) for name in files})
    assert cycles(graph) == [["marlinkit.a", "marlinkit.b", "marlinkit.c"], ["marlinkit.d", "marlinkit.e"]]
    assert cycles({"x": {"y"}, "y": set()}) == []


def test_marlin_and_maestro_never_import_each_other():
    assert offenders(["marlinkit.marlin"], ["marlinkit.maestro"]) == []
    assert offenders(["marlinkit.maestro"], ["marlinkit.marlin"]) == []


def test_nothing_imports_a_notebook():
    """Notebooks call the package, never the other way round (papermill runs them; nothing imports them)."""
    assert not [module for module, targets in MODULES.items() if any(t.startswith("notebooks") for t in targets)]
    sources = {path: path.read_text() for path in PACKAGE.rglob("*.py")}
    assert not [path for path, text in sources.items() if "import_notebook" in text or "nbimporter" in text]


def test_the_command_line_is_the_one_program_besides_the_sandbox_worker():
    """Every command is a subcommand of ``python -m marlinkit``; the reward sandbox's worker is started as a program of
    its own (a fresh interpreter that runs one reward function)."""
    programs = sorted(module_name(path) for path in PACKAGE.rglob("*.py")
                      if any(is_main_block(node) for node in ast.parse(path.read_text(), str(path)).body))
    assert programs == ["marlinkit.__main__", "marlinkit.maestro.sandbox.worker"]
