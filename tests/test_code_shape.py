"""Functions a reader can hold and lines that fit: no function or method of the package or its tools runs over 60
lines, and no line of the package, its tools, its tests, its settings or its build files (Makefile, shell scripts,
the C++ reads, CI) over 120 characters, but for the few whose text must stay as it is: attack programs the sandbox
reads byte for byte, and the figure catalogue (docs/figures.toml), whose output file names alone run longer."""

from __future__ import annotations

import ast
import subprocess

import pytest

from marlinkit import paths

MAX_FUNCTION_LINES = 60
MAX_LINE = 120
#: The tracked files whose lines are held to MAX_LINE: code, settings and build files.
LINE_CHECKED = ("marlinkit/*.py", "marlinkit/*.toml", "tools/*.py", "tools/*.sh", "tools/*.cpp", "tests/*.py",
                "Makefile", "pyproject.toml", "environment.yml", ".ci/*")
#: Lines whose text is data: the sandbox's attack programs state their own sizes and nesting depths.
LONG_LINES_KEPT = {"tests/maestro/sandbox_attacks/escape_huge_int_literal.py",
                   "tests/maestro/sandbox_attacks/parent_deep_unary_minus.py",
                   "tests/maestro/sandbox_attacks/parent_nested_chained_comparisons.py"}


def tracked(*patterns: str) -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", *patterns], cwd=paths.REPO_ROOT, capture_output=True, text=True,
                                check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return listed


def test_no_function_of_the_package_or_its_tools_runs_over_60_lines():
    long = []
    for name in tracked("marlinkit/*.py", "tools/*.py"):
        tree = ast.parse((paths.REPO_ROOT / name).read_text(), name)
        long += [f"{name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
                 for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == []


def test_no_line_runs_over_120_characters():
    long = [f"{name}:{number} ({len(line)} characters)"
            for name in tracked(*LINE_CHECKED) if name not in LONG_LINES_KEPT
            for number, line in enumerate((paths.REPO_ROOT / name).read_text().splitlines(), 1) if len(line) > MAX_LINE]
    assert long == []
