"""The reward language: the subset of Python MAESTRO's LLM-written rewards are written in, run over NumPy arrays.

A reward is a module defining ``compute_reward(metrics, difficulty)``. It may use:

* numbers (every number is a float; ``True``/``False``), ``+ - * / // % **``, unary ``-``/``+``/``not``,
  comparisons ``< <= > >= == !=`` (chains included), ``and``/``or``, conditional expressions;
* statements ``x = ...``, ``x += ...`` (and the other arithmetic operators), ``x: float = ...``, ``if``/``elif``/
  ``else``, ``return``, ``pass``, a docstring;
* ``metrics["name"]`` with a literal metric name, and ``difficulty``;
* calls by name of :data:`FUNCTIONS` (``min``, ``max``, ``abs``, ``exp``, ``log``, ``sqrt``, ``tanh``, ...) with
  positional arguments, ``math.<function>`` and the constants ``math.pi``, ``math.e`` (the one attribute form);
* helper functions at module level, called with positional arguments, never recursively (directly or not),
  and module-level constants (a number, or arithmetic on numbers and earlier constants).

Everything else is outside the language and refused with the construct's name and line: loops, comprehensions,
containers (list, tuple, dict, set), strings beyond metric names, attribute access, keyword arguments, defaults,
``*``-unpacking, imports, ``try``, ``with``, ``lambda``, ``global``, classes, recursion, every other builtin.

Before the check the module is rewritten where the meaning is certain (:func:`rewrite`; each rewrite is noted):
``import math`` / ``from math import ...`` / ``from typing import ...`` are dropped (the functions are provided);
``metrics.get("name", default)`` becomes ``metrics["name"]`` (every metric is always present); a ``for`` loop or a
generator inside ``sum``/``min``/``max`` over ``metrics.items()``, ``metrics.keys()``, ``metrics.values()``, a literal
tuple or list, or a name bound once to a literal dict, list or tuple of constants (or ``zip``, ``enumerate`` and
``sorted`` of those) is unrolled over its items, in order, and comparisons of literal names are folded (so ``for
name, value in metrics.items(): if name == "queue_length": ...`` becomes ``metrics["queue_length"]``);
``sum([a, b])``/``min((a, b))`` become ``a + b`` / ``min(a, b)``; ``a, b = x, y`` becomes two assignments when no
right side reads a name the left side binds; ``np.clip(x, lo, hi)`` becomes ``min(max(x, lo), hi)``; the
defensive ``"name" in metrics``, ``not metrics`` and ``len(metrics)`` become the constants they always are.

Evaluation is vectorised (:class:`Program`): every value is an array over all rows. A branch becomes a mask: an
``if`` runs each branch for the rows that take it, a ``return`` ends the rows that reach it, ``and``/``or`` and
conditional expressions evaluate their right side only for the rows that need it. An operation that gives a
non-finite value (a division by zero, ``log(0)``, an overflow) is an error only in rows that reach it, reported
with its line and the first such row; in the other rows its value is never used. The cost of one evaluation is
bounded by the program's size (no loop exists, every call is to a function that cannot call back, and the
expanded size, helpers inlined, is capped by :data:`MAX_EXPANDED_NODES`). Nothing depends on hash order.

Self-contained (standard library and NumPy): the sandbox worker loads this file before it locks itself in.
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

FUNCTION_NAME = "compute_reward"
MAX_SOURCE_CHARS = 20_000
#: Most syntax-tree nodes of the source, and deepest nesting; counted without recursion before anything else.
MAX_AST_NODES = 2_000
MAX_AST_DEPTH = 100
#: Most nodes after the rewrites (unrolled loops), and nodes one evaluation runs through, every helper call counted at
#: its helper's size. The second bounds the cost: at the limit, a 360-s training episode (360 calls of 16 rows)
#: costs under 0.5 CPU-s, worker start included, whatever the program does (the honest rewards tested: 40-240).
MAX_REWRITTEN_NODES = 6_000
MAX_EXPANDED_NODES = 1_000


def _log(x, base=None):
    return np.log(x) if base is None else np.log(x) / np.log(base)


def _minimum(*args):
    out = args[0]
    for arg in args[1:]:
        out = np.minimum(out, arg)
    return out


def _maximum(*args):
    out = args[0]
    for arg in args[1:]:
        out = np.maximum(out, arg)
    return out


#: Callable by name (and as ``math.<name>`` where Python's math has it): allowed argument counts, NumPy form.
#: ``None`` as the count: two or more.
FUNCTIONS: dict[str, tuple[tuple[int, ...] | None, Callable]] = {
    "abs": ((1,), np.abs), "min": (None, _minimum), "max": (None, _maximum), "float": ((1,), lambda x: x),
    "exp": ((1,), np.exp), "expm1": ((1,), np.expm1), "log": ((1, 2), _log), "log1p": ((1,), np.log1p),
    "log2": ((1,), np.log2), "log10": ((1,), np.log10), "sqrt": ((1,), np.sqrt), "tanh": ((1,), np.tanh),
    "sin": ((1,), np.sin), "cos": ((1,), np.cos), "atan": ((1,), np.arctan), "atan2": ((2,), np.arctan2),
    "hypot": ((2,), np.hypot), "floor": ((1,), np.floor), "ceil": ((1,), np.ceil), "fabs": ((1,), np.abs),
    "copysign": ((2,), np.copysign), "pow": ((2,), np.power),
}
MATH_CONSTANTS = {"pi": math.pi, "e": math.e}
_MATH_FUNCTIONS = frozenset(name for name in FUNCTIONS if hasattr(math, name))
_NUMPY_ALIASES = {"minimum": "min", "maximum": "max", "power": "pow", "absolute": "abs", "arctan": "atan",
                  "arctan2": "atan2"}
#: Names no variable, parameter, helper or constant may take (every builtin, the functions, ``math``).
RESERVED = frozenset(dir(builtins)) | frozenset(FUNCTIONS) | {"math", "np", "numpy"}
_IMPORTS_DROPPED = ("math", "typing", "numpy")

_ARITHMETIC = {ast.Add: ("+", np.add), ast.Sub: ("-", np.subtract), ast.Mult: ("*", np.multiply),
               ast.Div: ("/", np.true_divide), ast.FloorDiv: ("//", np.floor_divide), ast.Mod: ("%", np.remainder),
               ast.Pow: ("**", np.power)}
_DIVISIONS = (ast.Div, ast.FloorDiv, ast.Mod)
#: The operators and functions Python raises an error in (division by zero, domain, overflow); the others follow
#: IEEE arithmetic, as Python's floats do, and need no check.
_RAISING = (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_TOTAL = frozenset({"abs", "min", "max", "float", "fabs", "tanh", "atan", "copysign"})
_COMPARE = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal,
            ast.Eq: np.equal, ast.NotEq: np.not_equal}
_FOLD_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
                 ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}

#: How a construct outside the language is named in an error.
_CONSTRUCTS = {
    ast.For: "a for loop", ast.AsyncFor: "a for loop", ast.While: "a while loop", ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a dict", ast.Set: "a set", ast.Lambda: "a lambda",
    ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string", ast.Import: "an import",
    ast.ImportFrom: "an import", ast.ClassDef: "a class", ast.Try: "try", ast.With: "with", ast.AsyncWith: "with",
    ast.Raise: "raise", ast.Assert: "assert", ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Delete: "del",
    ast.Yield: "yield", ast.YieldFrom: "yield", ast.Await: "await", ast.AsyncFunctionDef: "an async def",
    ast.NamedExpr: "an assignment expression (:=)", ast.Starred: "*-unpacking", ast.Slice: "a slice",
    ast.Break: "break", ast.Continue: "continue", ast.Match: "match",
}
if hasattr(ast, "TryStar"):
    _CONSTRUCTS[ast.TryStar] = "try"


class LanguageError(ValueError):
    """The program is outside the reward language; ``problems`` lists (line, text) in source order."""

    def __init__(self, problems: list[tuple[int, str]]):
        self.problems = sorted(set(problems))
        texts = [f"line {line}: {text}" if line else text for line, text in self.problems]
        more = f"; and {len(texts) - 5} more" if len(texts) > 5 else ""
        super().__init__("; ".join(texts[:5]) + more)


class EvaluationError(ArithmeticError):
    """A row reached an operation that has no finite value there (``line`` of the program, first ``row``)."""

    def __init__(self, message: str, line: int, row: int):
        super().__init__(f"{message} (line {line})")
        self.line, self.row = line, row


def _problem(node: ast.AST, text: str) -> LanguageError:
    return LanguageError([(getattr(node, "lineno", 0), text)])


# ----- size, before anything else ----------------------------------------------------------------------------------

def parse(source: str, max_source_chars: int = MAX_SOURCE_CHARS) -> ast.Module:
    """Parse ``source`` after the size limits (characters, then nodes and depth, counted without recursion)."""
    if not isinstance(source, str):
        raise LanguageError([(0, f"the source is a {type(source).__name__}, not text")])
    if len(source) > max_source_chars:
        raise LanguageError([(0, f"the source has {len(source)} characters (limit {max_source_chars})")])
    try:
        tree = ast.parse(source, filename="<reward>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise LanguageError([(getattr(error, "lineno", 0) or 0,
                              f"does not parse: {type(error).__name__}: {getattr(error, 'msg', error)}")]) from None
    nodes, depth = tree_size(tree)
    if nodes > MAX_AST_NODES:
        raise LanguageError([(0, f"the program has {nodes} syntax-tree nodes (limit {MAX_AST_NODES}): "
                                 "write a shorter reward")])
    if depth > MAX_AST_DEPTH:
        raise LanguageError([(0, f"the program nests {depth} levels deep (limit {MAX_AST_DEPTH}): "
                                 "split long sums, chains and if/elif ladders")])
    return tree


def tree_size(tree: ast.AST) -> tuple[int, int]:
    """Nodes and nesting depth of ``tree``, with an explicit stack."""
    nodes, deepest, stack = 0, 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return nodes, deepest


# ----- automatic rewrites ------------------------------------------------------------------------------------------

def _is_call_of(node: ast.AST, names: tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def _constant_value(node: ast.AST):
    """A literal number, string or bool, or a tuple/list/dict display of them; ``...`` (Ellipsis) when not."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        return -node.operand.value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_constant_value(e) for e in node.elts]
        return ... if any(i is ... or isinstance(i, (tuple, dict)) for i in items) else tuple(items)
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        keys = [_constant_value(k) for k in node.keys]
        values = [_constant_value(v) for v in node.values]
        if any(x is ... or isinstance(x, (tuple, dict)) for x in keys + values) or len(set(keys)) != len(keys):
            return ...
        return dict(zip(keys, values))
    return ...


def _literal(value) -> ast.expr:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


class _Rewriter(ast.NodeTransformer):
    """The rewrites of the module docstring, inside one function (``metrics``: its first parameter's name)."""

    def __init__(self, fields: tuple[str, ...], metrics: str | None, static: dict, notes: list[str]):
        self.fields, self.metrics, self.static, self.notes = fields, metrics, static, notes
        self.bindings: dict[str, ast.expr] = {}  # loop variables being unrolled
        self.produced = 0  # nodes the unrolling has written so far (bounded before it writes them)

    def budget(self, node: ast.AST, copies: int) -> None:
        """Count ``copies`` of ``node`` before writing them: unrolling stops at :data:`MAX_REWRITTEN_NODES`."""
        self.produced += copies * tree_size(node)[0]
        if self.produced > MAX_REWRITTEN_NODES:
            raise LanguageError([(getattr(node, "lineno", 0), f"unrolling writes more than {MAX_REWRITTEN_NODES} "
                                                              "nodes after unrolling: write the terms out")])

    def note(self, node: ast.AST, text: str) -> None:
        self.notes.append(f"line {getattr(node, 'lineno', 0)}: {text}")

    def _is_metrics(self, node: ast.AST) -> bool:
        return self.metrics is not None and isinstance(node, ast.Name) and node.id == self.metrics

    def _field(self, key: str) -> ast.expr:
        return ast.Subscript(ast.Name(self.metrics, ast.Load()), ast.Constant(key), ast.Load())

    def elements(self, node: ast.expr) -> list[tuple[ast.expr, ...]] | None:
        """What iterating ``node`` gives, in order, each item a tuple of its parts (a key and a value for
        ``.items()``); None when it is not known before the program runs."""
        if isinstance(node, ast.Call) and not node.keywords and isinstance(node.func, ast.Name):
            parts = [self.elements(arg) for arg in node.args]
            if any(p is None for p in parts) or not parts:
                return None
            if node.func.id == "zip":
                return [sum(items, ()) for items in zip(*parts)]
            if node.func.id == "enumerate" and len(parts) == 1:
                return [(ast.Constant(i), *item) for i, item in enumerate(parts[0])]
            if node.func.id == "sorted" and len(parts) == 1 and all(isinstance(i[0], ast.Constant) for i in parts[0]):
                keys = [i[0].value for i in parts[0]]
                if all(isinstance(k, str) for k in keys) or all(isinstance(k, (int, float)) for k in keys):
                    return [item for _, item in sorted(zip(keys, parts[0]), key=lambda pair: pair[0])]
            return None
        method = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args and not node.keywords:
            node, method = node.func.value, node.func.attr
            if method not in ("items", "keys", "values"):
                return None
        if self._is_metrics(node):
            pairs = [(ast.Constant(name), self._field(name)) for name in self.fields]
        else:
            value = self._static(node)
            if isinstance(value, dict):
                pairs = [(_literal(k), _literal(v)) for k, v in value.items()]
            elif isinstance(value, tuple) and method is None:
                return [(_literal(v),) for v in value]
            else:
                return None
        return [pair if method == "items" else (pair[1],) if method == "values" else (pair[0],) for pair in pairs]

    def _static(self, node: ast.expr):
        if isinstance(node, ast.Name) and node.id in self.static:
            return self.static[node.id]
        return _constant_value(node) if isinstance(node, (ast.Tuple, ast.List, ast.Dict)) else ...

    def unrolled(self, node: ast.AST, target: ast.expr, iterable: ast.expr) -> list[dict[str, ast.expr]] | None:
        """The loop variables of each iteration, or None when the loop cannot be unrolled."""
        items = self.elements(iterable)
        if items is None:
            return None
        names = [target] if isinstance(target, ast.Name) else target.elts if isinstance(target, ast.Tuple) else None
        if not names or not all(isinstance(n, ast.Name) for n in names) or any(len(i) != len(names) for i in items):
            return None
        return [{n.id: part for n, part in zip(names, item)} for item in items]

    def _substituted(self, nodes: list[ast.AST], binding: dict[str, ast.expr]) -> list[ast.AST]:
        saved = self.bindings
        self.bindings = {**saved, **binding}
        try:
            out = []
            for original in nodes:
                visited = self.visit(copy.deepcopy(original))
                out.extend(visited if isinstance(visited, list) else [visited] if visited is not None else [])
            return out
        finally:
            self.bindings = saved

    def visit_For(self, node: ast.For):
        bindings = self.unrolled(node, node.target, node.iter)
        if bindings is None or node.orelse or any(isinstance(n, (ast.Break, ast.Continue)) for n in ast.walk(node)):
            return self.generic_visit(node)  # stays a loop: refused by the check
        self.budget(node, len(bindings))
        self.note(node, f"the for loop over {ast.unparse(node.iter)} is unrolled over its {len(bindings)} items")
        body = []
        for binding in bindings:
            body.extend(s for s in self._substituted(node.body, binding) if not isinstance(s, ast.Pass))
        return body or [ast.Pass()]

    def visit_Assign(self, node: ast.Assign):
        """``a, b = x, y`` becomes ``a = x`` then ``b = y`` when no right side reads a name the left side binds."""
        node = self.generic_visit(node)
        target = node.targets[0] if len(node.targets) == 1 else None
        if not (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                and len(target.elts) == len(node.value.elts) and all(isinstance(e, ast.Name) for e in target.elts)):
            return node
        bound = {e.id for e in target.elts}
        read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        if bound & read or len(bound) != len(target.elts):
            return node
        self.note(node, f"the tuple assignment to {', '.join(e.id for e in target.elts)} is one assignment each")
        return [ast.copy_location(ast.Assign([ast.Name(e.id, ast.Store())], value), node)
                for e, value in zip(target.elts, node.value.elts)]

    def visit_Name(self, node: ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id in self.bindings:
            return ast.fix_missing_locations(ast.copy_location(copy.deepcopy(self.bindings[node.id]), node))
        return node

    def visit_Call(self, node: ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and self._is_metrics(func.value) and func.attr == "get" \
                and 1 <= len(node.args) <= 2 and not node.keywords and isinstance(node.args[0], ast.Constant):
            key = node.args[0].value
            if key in self.fields:
                self.note(node, f"metrics.get({key!r}, ...) is metrics[{key!r}] (every metric is present)")
                return ast.copy_location(self._field(key), node)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("np", "numpy"):
            name = _NUMPY_ALIASES.get(func.attr, func.attr)
            if func.attr == "clip" and len(node.args) == 3 and not node.keywords:
                self.note(node, "np.clip(x, lo, hi) is min(max(x, lo), hi)")
                inner = ast.Call(ast.Name("max", ast.Load()), [node.args[0], node.args[1]], [])
                return self.visit(ast.copy_location(ast.Call(ast.Name("min", ast.Load()), [inner, node.args[2]], []),
                                                    node))
            if name in FUNCTIONS:
                self.note(node, f"np.{func.attr} is {name}")
                node.func = ast.copy_location(ast.Name(name, ast.Load()), func)
        if _is_call_of(node, ("sum", "min", "max", "len")) and len(node.args) == 1 and not node.keywords:
            spread = self._spread(node, node.args[0])
            if spread is not None:
                return self.visit(ast.copy_location(spread, node))
        return self.generic_visit(node)

    def _spread(self, call: ast.Call, argument: ast.expr) -> ast.expr | None:
        """``sum``/``min``/``max``/``len`` of a static display, name or generator: the items written out."""
        name = call.func.id
        if isinstance(argument, ast.GeneratorExp) and len(argument.generators) == 1:
            generator = argument.generators[0]
            bindings = self.unrolled(argument, generator.target, generator.iter)
            if bindings is None or generator.is_async:
                return None
            self.budget(argument, len(bindings))
            items = []
            for binding in bindings:
                keep = [self._substituted([condition], binding)[0] for condition in generator.ifs]
                folded = [c.value if isinstance(c, ast.Constant) else ... for c in keep]
                if any(f is ... for f in folded):
                    return None
                if all(folded):
                    items.append(self._substituted([argument.elt], binding)[0])
            self.note(call, f"{name}() over a generator is written out over its {len(items)} items")
        elif isinstance(argument, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in argument.elts):
            items = list(argument.elts)
            self.note(call, f"{name}() of a {type(argument).__name__.lower()} is written out over its items")
        else:
            found = self.elements(argument)
            if found is None or any(len(item) != 1 for item in found):
                return None
            items = [item[0] for item in found]
            self.note(call, f"{name}() of {ast.unparse(argument)} is written out over its {len(items)} items")
        if name == "len":
            return ast.Constant(len(items))
        if name == "sum":
            out = ast.Constant(0.0)
            for item in items:
                out = ast.BinOp(out, ast.Add(), item)
            return out
        if not items:
            return None
        return items[0] if len(items) == 1 else ast.Call(ast.Name(name, ast.Load()), items, [])

    def visit_Subscript(self, node: ast.Subscript):
        node = self.generic_visit(node)
        value = self._static(node.value) if isinstance(node.value, ast.Name) else ...
        if isinstance(value, dict) and isinstance(node.slice, ast.Constant) and node.slice.value in value:
            return ast.copy_location(_literal(value[node.slice.value]), node)
        return node

    def visit_Compare(self, node: ast.Compare):
        node = self.generic_visit(node)
        if len(node.ops) == 1 and type(node.ops[0]) in _FOLD_COMPARE:
            left, right = _constant_value(node.left), node.comparators[0]
            if self._is_metrics(right) and isinstance(left, str):
                self.note(node, f"{ast.unparse(node)} is known before the program runs (the metrics are fixed)")
                right = set(self.fields)
            else:
                right = self._static(right) if isinstance(right, ast.Name) else _constant_value(right)
            if isinstance(left, str) and right is not ... and (isinstance(right, str) or isinstance(node.ops[0],
                                                                                               (ast.In, ast.NotIn))):
                return ast.copy_location(ast.Constant(bool(_FOLD_COMPARE[type(node.ops[0])](left, right))), node)
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp):
        if isinstance(node.op, ast.Not) and self._is_metrics(node.operand):
            self.note(node, f"not {self.metrics} is False (the metrics are never empty)")
            return ast.copy_location(ast.Constant(False), node)
        return self.generic_visit(node)

    def visit_If(self, node: ast.If):
        if self._is_metrics(node.test):
            node.test = ast.copy_location(ast.Constant(True), node.test)
        node = self.generic_visit(node)
        if isinstance(node.test, ast.Constant) and isinstance(node.test.value, bool):
            return (node.body if node.test.value else node.orelse) or [ast.Pass()]
        return node

    def visit_IfExp(self, node: ast.IfExp):
        node = self.generic_visit(node)
        if isinstance(node.test, ast.Constant) and isinstance(node.test.value, bool):
            return node.body if node.test.value else node.orelse
        return node


def _static_names(function: ast.FunctionDef | ast.Module) -> dict[str, object]:
    """Names assigned exactly once, to a literal dict/list/tuple of constants, and never stored into otherwise."""
    assigned: dict[str, list[ast.AST]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned.setdefault(node.id, []).append(node)
    static = {}
    body = function.body
    for statement in body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and \
                isinstance(statement.targets[0], ast.Name) and len(assigned.get(statement.targets[0].id, [])) == 1:
            value = _constant_value(statement.value)
            if isinstance(value, (tuple, dict)):
                static[statement.targets[0].id] = value
    return static


def _drop_static_assignments(body: list[ast.stmt], static: dict, tree: ast.AST) -> list[ast.stmt]:
    """Remove the assignments of static containers no code reads any more (the rewrites used them up)."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return [s for s in body if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0],
            ast.Name) and s.targets[0].id in static and s.targets[0].id not in used)]


def rewrite(tree: ast.Module, fields: tuple[str, ...]) -> tuple[ast.Module, list[str]]:
    """The automatic rewrites of the module docstring on a copy of ``tree``; (new tree, notes)."""
    tree = copy.deepcopy(tree)  # keeps the source's line numbers
    notes: list[str] = []
    body = []
    for statement in tree.body:
        if isinstance(statement, ast.Import) and all(a.name in _IMPORTS_DROPPED for a in statement.names) or \
                isinstance(statement, ast.ImportFrom) and statement.module in _IMPORTS_DROPPED and not statement.level:
            notes.append(f"line {statement.lineno}: '{ast.unparse(statement)}' is dropped (the functions are provided)")
            continue
        body.append(statement)
    tree.body = body
    module_static = _static_names(tree)
    for i, statement in enumerate(tree.body):
        if isinstance(statement, ast.FunctionDef):
            params = statement.args.posonlyargs + statement.args.args
            metrics = params[0].arg if statement.name == FUNCTION_NAME and params else None
            for node in ast.walk(statement):  # a helper that reads metrics[...] gets the metrics passed in
                if metrics is None and isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                        and any(p.arg == node.value.id for p in params) and node.value.id not in module_static:
                    metrics = node.value.id
            static = {**module_static, **_static_names(statement)}
            statement.body = [s for s in statement.body if not (isinstance(s, (ast.Import, ast.ImportFrom))
                                                                  and _dropped_import(s, notes))]
            new = _Rewriter(fields, metrics, static, notes).visit(statement)
            new.body = _drop_static_assignments(new.body, _static_names(statement), new)
            tree.body[i] = new
    tree.body = _drop_static_assignments(tree.body, module_static, tree)
    return ast.fix_missing_locations(tree), notes


def _dropped_import(statement: ast.stmt, notes: list[str]) -> bool:
    names = [a.name for a in statement.names] if isinstance(statement, ast.Import) else [statement.module]
    if all(n in _IMPORTS_DROPPED for n in names) and not getattr(statement, "level", 0):
        notes.append(f"line {statement.lineno}: '{ast.unparse(statement)}' is dropped (the functions are provided)")
        return True
    return False


# ----- the subset ---------------------------------------------------------------------------------------------------

_OPERATOR_NAMES = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
                   ast.MatMult: "@", ast.Invert: "~", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
                   ast.NotIn: "not in"}


def _docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


def check(tree: ast.Module) -> None:
    """Raise :class:`LanguageError` listing every construct of ``tree`` outside the language (after the rewrites)."""
    problems: list[tuple[int, str]] = []
    keys = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
    docs = {id(s.value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef))
            for s in n.body if _docstring(s)}
    annotations = {id(a) for n in ast.walk(tree) for a in _annotations(n)}
    skip = {id(n) for a in ast.walk(tree) if id(a) in annotations for n in ast.walk(a)}
    defined = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    lines, stack = {}, [(tree, 0)]
    while stack:  # every node's line: its own, or its parent's (operators and arguments have none)
        node, parent_line = stack.pop()
        lines[id(node)] = getattr(node, "lineno", parent_line)
        stack.extend((child, lines[id(node)]) for child in ast.iter_child_nodes(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        line = lines[id(node)]
        text = _construct_problem(node, keys, docs)
        if text is None and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id not in FUNCTIONS and node.func.id not in defined:
            text = f"calling {node.func.id!r} is not in the reward language"
        if text:
            problems.append((line, text))
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef):
            problems += [(n.lineno, "a nested def is not in the reward language: define helpers at module level")
                         for n in ast.walk(statement) if n is not statement and isinstance(n, ast.FunctionDef)]
        elif not (isinstance(statement, (ast.Assign, ast.AnnAssign)) or _docstring(statement)):
            name = _CONSTRUCTS.get(type(statement), f"a module-level {type(statement).__name__}")
            problems.append((statement.lineno, f"{name} at module level is not in the reward language "
                                               "(only def, constants and a docstring)"))
    if problems:
        raise LanguageError(problems)


def _annotations(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.arg) and node.annotation is not None:
        return [node.annotation]
    if isinstance(node, ast.FunctionDef) and node.returns is not None:
        return [node.returns]
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


def _construct_problem(node: ast.AST, keys: set[int], docs: set[int]) -> str | None:
    if type(node) in _CONSTRUCTS:
        return f"{_CONSTRUCTS[type(node)]} is not in the reward language"
    if type(node) in _OPERATOR_NAMES:
        return f"the operator '{_OPERATOR_NAMES[type(node)]}' is not in the reward language"
    if isinstance(node, ast.keyword):
        return f"a keyword argument ({node.arg or '**'}=...) is not in the reward language: pass arguments by position"
    if isinstance(node, ast.Attribute):
        is_math = isinstance(node.value, ast.Name) and node.value.id == "math"
        if not (is_math and (node.attr in _MATH_FUNCTIONS or node.attr in MATH_CONSTANTS)):
            return f"attribute access (.{node.attr}) is not in the reward language (only math.<function>)"
        if not isinstance(node.ctx, ast.Load):
            return f"assigning to math.{node.attr} is not in the reward language"
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str) and id(node) not in keys and id(node) not in docs:
            return f"a string ({node.value[:30]!r}) is not in the reward language outside metrics[\"name\"]"
        if not isinstance(node.value, (int, float, str)):
            return f"the constant {type(node.value).__name__} ({str(node.value)[:30]}) is not in the reward language"
    if isinstance(node, ast.arguments):
        if node.defaults or any(d is not None for d in node.kw_defaults):
            return "a default argument value is not in the reward language"
        if node.vararg or node.kwarg or node.kwonlyargs:
            return "*args, **kwargs and keyword-only parameters are not in the reward language"
    if isinstance(node, ast.FunctionDef) and node.decorator_list:
        return "a decorator is not in the reward language"
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return "only assignments to one plain name are in the reward language"
    names = [node.id] if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) else \
        [node.arg] if isinstance(node, ast.arg) else [node.name] if isinstance(node, ast.FunctionDef) else []
    if isinstance(node, (ast.Name, ast.arg)) and FUNCTION_NAME in names:
        return f"the name {FUNCTION_NAME!r} is the reward's own: it may not be rebound or used as a parameter"
    for name in names:
        if name in RESERVED:
            return f"the name {name!r} is reserved (a builtin or a provided function): choose another name"
    return None


# ----- compiling to vectorised NumPy ---------------------------------------------------------------------------------

class _Frame:
    """One call's variables (arrays, or the metrics dict for a metrics parameter) and its result so far."""

    __slots__ = ("vars", "result")

    def __init__(self, variables: dict, n: int):
        self.vars, self.result = variables, np.zeros(n)


def _truth(kind: str, evaluate):
    if kind == "bool":
        return evaluate
    return lambda frame, active: np.not_equal(evaluate(frame, active), 0.0)


def _number(kind: str, evaluate):
    if kind == "num":
        return evaluate
    return lambda frame, active: np.asarray(evaluate(frame, active), dtype=float)


def _finite(value, active: np.ndarray, line: int, what: str, divisor=None):
    finite = np.isfinite(value)
    if finite.all():
        return value
    bad = np.broadcast_to(~finite, active.shape) & active
    if bad.any():
        row = int(np.argmax(bad))
        if divisor is not None and np.broadcast_to(np.equal(divisor, 0.0), active.shape)[row]:
            raise EvaluationError("division by zero", line, row)
        raise EvaluationError(f"{what} gives a value that is not finite", line, row)
    return value


@dataclass
class _Scope:
    """What one function body may read: its parameters, locals, the metrics parameters and what is assigned so far."""

    function: str
    params: tuple[str, ...]
    metrics: frozenset[str]
    local: frozenset[str]
    defined: set[str] = field(default_factory=set)


class _Compiler:
    """Checks types and definite assignment while it builds the closures (every error names its line)."""

    def __init__(self, tree: ast.Module, fields: tuple[str, ...]):
        self.fields = fields
        self.functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
        self.constants: dict[str, float] = {}
        self.compiled: dict[str, Callable] = {}
        self.metrics_params = {name: _metrics_params(fn) for name, fn in self.functions.items()}
        seen = set()
        for statement in tree.body:
            if isinstance(statement, ast.FunctionDef):
                if statement.name in seen:
                    raise _problem(statement, f"the function {statement.name!r} is defined twice")
                seen.add(statement.name)
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
                self._module_constant(statement, seen)

    def _module_constant(self, statement, seen: set[str]) -> None:
        target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
        if statement.value is None:
            raise _problem(statement, f"the module-level {target.id!r} has no value")
        if target.id in seen:
            raise _problem(statement, f"the module-level name {target.id!r} is bound twice")
        seen.add(target.id)
        scope = _Scope("<module>", (), frozenset(), frozenset())
        kind, evaluate = self.expr(statement.value, scope, constant=True)
        active = np.ones(1, dtype=bool)
        with np.errstate(all="ignore"):
            try:
                value = float(np.asarray(_number(kind, evaluate)(_Frame({}, 1), active), dtype=float).reshape(-1)[0])
            except EvaluationError as error:
                raise _problem(statement, f"the module-level constant {target.id!r} has no finite value: {error}") \
                    from None
        self.constants[target.id] = value

    # -- functions and statements --

    def function(self, name: str) -> Callable:
        if name in self.compiled:
            return self.compiled[name]
        fn = self.functions[name]
        params = tuple(a.arg for a in fn.args.posonlyargs + fn.args.args)
        local = frozenset(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        metrics = self.metrics_params[name]
        for variable in local & metrics:
            raise _problem(fn, f"{variable!r} holds the metrics: it can be read as {variable}[\"name\"], not assigned")
        scope = _Scope(name, params, metrics, local - set(params), set(params))
        run, returns = self.block(fn.body, scope)
        if not returns:
            raise _problem(fn, f"{name} can reach its end without a return (Python would return None)")
        self.compiled[name] = run
        return run

    def block(self, statements: list[ast.stmt], scope: _Scope) -> tuple[Callable, bool]:
        steps = []
        for statement in statements:
            step, returns = self.statement(statement, scope)
            if step is not None:
                steps.append(step)
            if returns:
                break  # what follows a return never runs

        def run(frame, active):
            for step in steps:
                if not active.any():
                    break
                active = step(frame, active)
            return active
        return run, bool(statements) and returns

    def statement(self, node: ast.stmt, scope: _Scope) -> tuple[Callable | None, bool]:
        if isinstance(node, (ast.Pass, ast.Expr)):
            if isinstance(node, ast.Expr) and not _docstring(node):
                raise _problem(node, "an expression statement (its value is unused) is not in the reward language")
            return None, False
        if isinstance(node, ast.Return):
            if node.value is None:
                raise _problem(node, "return needs a value")
            evaluate = _number(*self.expr(node.value, scope))

            def returned(frame, active):
                frame.result = np.where(active, evaluate(frame, active), frame.result)
                return np.zeros_like(active)
            return returned, True
        if isinstance(node, ast.If):
            return self._if(node, scope)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return self._assign(node, scope), False
        raise _problem(node, f"{_CONSTRUCTS.get(type(node), type(node).__name__)} is not in the reward language")

    def _if(self, node: ast.If, scope: _Scope) -> tuple[Callable, bool]:
        test = _truth(*self.expr(node.test, scope))
        before = set(scope.defined)
        body, body_returns = self.block(node.body, scope)
        after_body, scope.defined = scope.defined, set(before)
        orelse, else_returns = self.block(node.orelse, scope) if node.orelse else (None, False)
        after_else = scope.defined
        kept = [d for d, returns in ((after_body, body_returns), (after_else, else_returns)) if not returns]
        scope.defined = set.intersection(*kept) if kept else after_body | after_else

        def branch(frame, active):
            taken = np.broadcast_to(test(frame, active), active.shape) & active
            out = body(frame, taken) if taken.any() else taken
            rest = active & ~taken
            if orelse is not None and rest.any():
                rest = orelse(frame, rest)
            return out | rest
        return branch, body_returns and else_returns

    def _assign(self, node, scope: _Scope) -> Callable:
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        name = target.id
        if node.value is None:
            raise _problem(node, f"the annotation of {name!r} has no value")
        if isinstance(node, ast.AugAssign):
            _, evaluate = self._binop(ast.BinOp(ast.Name(name, ast.Load()), node.op, node.value, lineno=node.lineno),
                                   scope)
        else:
            kind, evaluate = self.expr(node.value, scope)
            if kind == "metrics":
                raise _problem(node, "the metrics can only be read as metrics[\"name\"], not assigned")
            evaluate = _number(kind, evaluate)
        scope.defined.add(name)

        def assign(frame, active):
            value = evaluate(frame, active)
            old = frame.vars.get(name)
            frame.vars[name] = value if old is None or active.all() else np.where(active, value, old)
            return active
        return assign

    # -- expressions: (kind, evaluate(frame, active)); kind is "num", "bool" or "metrics" --

    def expr(self, node: ast.expr, scope: _Scope, constant: bool = False) -> tuple[str, Callable]:
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is None:
            raise _problem(node, f"{_CONSTRUCTS.get(type(node), type(node).__name__)} is not in the reward language")
        if constant and isinstance(node, (ast.Subscript,)):
            raise _problem(node, "a module-level constant cannot read the metrics")
        return method(node, scope)

    def _constant(self, node: ast.Constant, scope: _Scope):
        value = node.value
        if isinstance(value, bool):
            return "bool", lambda frame, active: value
        if isinstance(value, (int, float)):
            try:
                number = float(value)
            except OverflowError:
                raise _problem(node, "the number is too large for a float") from None
            return "num", lambda frame, active: number
        raise _problem(node, f"the constant {value!r:.30} is not in the reward language")

    def _name(self, node: ast.Name, scope: _Scope):
        name = node.id
        if name in scope.metrics:
            return "metrics", lambda frame, active: frame.vars[name]
        if name in scope.local or name in scope.params:
            if name not in scope.defined:
                raise _problem(node, f"{name!r} is read before it is assigned on every path")
            return "num", lambda frame, active: frame.vars[name]
        if name in self.constants:
            value = self.constants[name]
            return "num", lambda frame, active: value
        if name in self.functions or name in FUNCTIONS:
            raise _problem(node, f"the function {name!r} can only be called")
        raise _problem(node, f"the name {name!r} is not defined in the reward language")

    def _binop(self, node: ast.BinOp, scope: _Scope):
        if type(node.op) not in _ARITHMETIC:
            raise _problem(node, f"the operator '{_OPERATOR_NAMES.get(type(node.op), '?')}' is not in the language")
        symbol, ufunc = _ARITHMETIC[type(node.op)]
        left, right = (_number(*self._operand(side, scope)) for side in (node.left, node.right))
        line, division = node.lineno, isinstance(node.op, _DIVISIONS)
        if type(node.op) not in _RAISING:  # + - *: IEEE as in Python (an overflow is inf, never an error)
            return "num", lambda frame, active: ufunc(left(frame, active), right(frame, active))

        def binop(frame, active):
            divisor = right(frame, active)
            value = ufunc(left(frame, active), divisor)
            return _finite(value, active, line, f"'{symbol}'", divisor if division else None)
        return "num", binop

    def _operand(self, node, scope):
        kind, evaluate = self.expr(node, scope)
        if kind == "metrics":
            raise _problem(node, "the metrics can only be read as metrics[\"name\"]")
        return kind, evaluate

    def _unaryop(self, node: ast.UnaryOp, scope: _Scope):
        kind, operand = self._operand(node.operand, scope)
        if isinstance(node.op, ast.Not):
            truth = _truth(kind, operand)
            return "bool", lambda frame, active: np.logical_not(truth(frame, active))
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            number = _number(kind, operand)
            if isinstance(node.op, ast.UAdd):
                return "num", number
            return "num", lambda frame, active: np.negative(number(frame, active))
        raise _problem(node, f"the operator '{_OPERATOR_NAMES.get(type(node.op), '?')}' is not in the language")

    def _compare(self, node: ast.Compare, scope: _Scope):
        for op in node.ops:
            if type(op) not in _COMPARE:
                raise _problem(node, f"the operator '{_OPERATOR_NAMES.get(type(op), '?')}' is not in the language")
        operands = [_number(*self._operand(n, scope)) for n in [node.left, *node.comparators]]
        ops = [_COMPARE[type(op)] for op in node.ops]

        def compare(frame, active):
            left = operands[0](frame, active)
            holds = None
            for op, right_of in zip(ops, operands[1:]):
                mask = active if holds is None else active & holds
                right = right_of(frame, mask)
                step = np.broadcast_to(op(left, right), active.shape)
                holds = step if holds is None else holds & step
                left = right
            return holds
        return "bool", compare

    def _boolop(self, node: ast.BoolOp, scope: _Scope):
        parts = [self._operand(value, scope) for value in node.values]
        is_and = isinstance(node.op, ast.And)
        if all(kind == "bool" for kind, _ in parts):
            evaluators = [evaluate for _, evaluate in parts]

            def logic(frame, active):
                out = np.broadcast_to(evaluators[0](frame, active), active.shape)
                for evaluate in evaluators[1:]:
                    need = active & (out if is_and else ~out)
                    value = np.broadcast_to(evaluate(frame, need), active.shape)
                    out = np.where(need, value, out)
                return out
            return "bool", logic
        numbers = [(_number(kind, e), _truth("num", _number(kind, e))) for kind, e in parts]

        def pick(frame, active):  # Python's value of `a and b` / `a or b` on numbers
            out = numbers[0][0](frame, active)
            for number, _ in numbers[1:]:
                truth = np.not_equal(out, 0.0)
                need = active & (truth if is_and else ~truth)
                out = np.where(need, number(frame, need), out)
            return out
        return "num", pick

    def _ifexp(self, node: ast.IfExp, scope: _Scope):
        test = _truth(*self._operand(node.test, scope))
        (body_kind, body), (else_kind, orelse) = self._operand(node.body, scope), self._operand(node.orelse, scope)
        kind = "bool" if body_kind == else_kind == "bool" else "num"
        if kind == "num":
            body, orelse = _number(body_kind, body), _number(else_kind, orelse)

        def choose(frame, active):
            taken = np.broadcast_to(test(frame, active), active.shape)
            return np.where(taken, body(frame, active & taken), orelse(frame, active & ~taken))
        return kind, choose

    def _subscript(self, node: ast.Subscript, scope: _Scope):
        kind, base = self.expr(node.value, scope) if isinstance(node.value, ast.Name) else ("num", None)
        if kind != "metrics":
            raise _problem(node, "only the metrics can be subscripted (metrics[\"name\"]): containers are not in "
                                 "the reward language")
        key = node.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise _problem(node, "metrics[...] needs a literal metric name, e.g. metrics[\"queue_length\"]")
        if key.value not in self.fields:
            raise _problem(node, f"unknown metric {key.value!r}; the metrics are {', '.join(self.fields)}")
        name = key.value
        return "num", lambda frame, active: base(frame, active)[name]

    def _attribute(self, node: ast.Attribute, scope: _Scope):
        if isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in MATH_CONSTANTS:
            value = MATH_CONSTANTS[node.attr]
            return "num", lambda frame, active: value
        raise _problem(node, f"attribute access (.{node.attr}) is not in the reward language")

    def _call(self, node: ast.Call, scope: _Scope):
        func = node.func
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _problem(node, "keyword arguments and *-unpacking are not in the reward language")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math" \
                and func.attr in _MATH_FUNCTIONS:
            name = func.attr
        elif isinstance(func, ast.Name) and (func.id in FUNCTIONS or func.id in self.functions):
            name = func.id
        else:
            shown = ast.unparse(func)[:40]
            raise _problem(node, f"calling {shown!r} is not in the reward language (only {', '.join(sorted(FUNCTIONS))}"
                                 " and your own helper functions)")
        if name in self.functions and not (isinstance(func, ast.Name) and name not in FUNCTIONS):
            raise _problem(node, f"the helper {name!r} shadows a provided function")
        if isinstance(func, ast.Name) and name in self.functions:
            return self._helper_call(node, name, scope)
        counts, ufunc = FUNCTIONS[name]
        if (counts is None and len(node.args) < 2) or (counts is not None and len(node.args) not in counts):
            wanted = "two or more" if counts is None else " or ".join(map(str, counts))
            raise _problem(node, f"{name}() takes {wanted} numbers, got {len(node.args)} arguments")
        args = [_number(*self._operand(a, scope)) for a in node.args]
        line = node.lineno
        if name in _TOTAL:
            return "num", lambda frame, active: ufunc(*[a(frame, active) for a in args])

        def call(frame, active):
            return _finite(ufunc(*[a(frame, active) for a in args]), active, line, f"{name}()")
        return "num", call

    def _helper_call(self, node: ast.Call, name: str, scope: _Scope):
        if name == FUNCTION_NAME:
            raise _problem(node, f"{FUNCTION_NAME} may not be called (it runs once per row)")
        fn = self.functions[name]
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if len(node.args) != len(params):
            raise _problem(node, f"{name}() takes {len(params)} arguments, got {len(node.args)}")
        args = []
        for param, arg in zip(params, node.args):
            kind, evaluate = self.expr(arg, scope)
            if (kind == "metrics") != (param in self.metrics_params[name]):
                raise _problem(node, f"{name}(): the parameter {param!r} " + (
                    "reads metrics[...]: pass the metrics" if kind != "metrics" else "is a number, not the metrics"))
            args.append((param, evaluate if kind == "metrics" else _number(kind, evaluate)))
        body = self.function(name)

        def call(frame, active):
            inner = _Frame({param: evaluate(frame, active) for param, evaluate in args}, active.shape[0])
            body(inner, active)
            return inner.result
        return "num", call



def _metrics_params(fn: ast.FunctionDef) -> frozenset[str]:
    """The parameters that hold the metrics: the reward's first one, and any a helper subscripts."""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    found = {n.value.id for n in ast.walk(fn) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)}
    chosen = {p for p in params if p in found}
    if fn.name == FUNCTION_NAME and params:
        chosen = {params[0]}
    return frozenset(chosen)


def _calls(fn: ast.FunctionDef, functions: dict) -> list[tuple[str, ast.Call]]:
    return [(n.func.id, n) for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in functions]


def expanded_size(tree: ast.Module) -> int:
    """Nodes evaluated by one call of the reward, each helper call counted at its helper's expanded size.

    Raises :class:`LanguageError` on recursion (a function that reaches itself through its calls).
    """
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    if FUNCTION_NAME not in functions:
        raise LanguageError([(0, f"no top-level function {FUNCTION_NAME}(metrics, difficulty)")])
    sizes: dict[str, int] = {}
    for root in functions:
        stack, path = [(root, 0)], []  # depth-first without recursion; path: the call chain being expanded
        while stack:
            name, state = stack.pop()
            if state == 1:
                callees = _calls(functions[name], functions)
                sizes[name] = tree_size(functions[name])[0] + sum(sizes[c] for c, _ in callees)
                path.pop()
                continue
            if name in sizes:
                continue
            if name in path:
                chain = " -> ".join(path[path.index(name):] + [name])
                line = next(call.lineno for callee, call in _calls(functions[path[-1]], functions) if callee == name)
                raise LanguageError([(line, f"recursion is not in the reward language ({chain})")])
            path.append(name)
            stack.append((name, 1))
            stack.extend((callee, 0) for callee, _ in _calls(functions[name], functions))
    return sizes[FUNCTION_NAME]


@dataclass(frozen=True)
class Program:
    """A checked reward, compiled to NumPy: ``program(metrics, difficulty)`` gives one value per row."""

    source: str  # the program as checked: the rewritten module, as text
    notes: tuple[str, ...]  # the automatic rewrites made, one line each
    size: int  # nodes one evaluation runs through (helpers inlined): its cost bound
    fields: tuple[str, ...]
    run: Callable = field(repr=False)

    def __call__(self, metrics, difficulty) -> np.ndarray:
        """``metrics`` maps every field to an array of one length (the rows); ``difficulty`` a number or an array."""
        columns = {name: np.asarray(metrics[name], dtype=float).reshape(-1) for name in self.fields}
        n = len(columns[self.fields[0]])
        if any(len(column) != n for column in columns.values()):
            raise ValueError("every metric needs the same number of rows")
        d = np.broadcast_to(np.asarray(difficulty, dtype=float), (n,))
        with np.errstate(all="ignore"):
            values = self.run(columns, d)
        return np.array(np.broadcast_to(values, (n,)), dtype=float)


def load(source: str, fields: tuple[str, ...], max_source_chars: int = MAX_SOURCE_CHARS) -> Program:
    """Parse, rewrite, check and compile ``source``; :class:`LanguageError` names what is outside the language."""
    tree, notes = rewrite(parse(source, max_source_chars), tuple(fields))
    check(tree)
    nodes = tree_size(tree)[0]
    if nodes > MAX_REWRITTEN_NODES:
        raise LanguageError([(0, f"the program has {nodes} nodes after unrolling (limit {MAX_REWRITTEN_NODES})")])
    size = expanded_size(tree)
    if size > MAX_EXPANDED_NODES:
        raise LanguageError([(0, f"one evaluation runs through {size} nodes with the helpers inlined "
                                 f"(limit {MAX_EXPANDED_NODES}): call fewer helpers or write shorter ones")])
    fn = next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == FUNCTION_NAME)
    params = fn.args.posonlyargs + fn.args.args
    if len(params) != 2 or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
        raise _problem(fn, f"{FUNCTION_NAME} must take exactly two positional parameters (metrics, difficulty)")
    compiler = _Compiler(tree, tuple(fields))
    for name in compiler.functions:
        compiler.function(name)  # every helper is checked, called or not
    body = compiler.function(FUNCTION_NAME)
    metrics_name, difficulty_name = params[0].arg, params[1].arg

    def run(columns, difficulty):
        frame = _Frame({metrics_name: columns, difficulty_name: difficulty}, len(difficulty))
        body(frame, np.ones(len(difficulty), dtype=bool))
        return frame.result
    return Program(ast.unparse(tree) + "\n", tuple(notes), size, tuple(fields), run)
