"""Stage 1 of the reward sandbox on the whole module, and the cost meter compiled into accepted code.

:func:`check_syntax` decides what Python an LLM-written reward may be written in (see
:mod:`marlinkit.maestro.sandbox` for the stages). Beyond the node/name/attribute allow-lists it checks
the *module*, not only the reward's ``def`` (issue 16: ``compute_reward = lambda ..., calls=[]:``
after a compliant ``def`` kept state across calls):

* the module holds only ``def`` statements, constant assignments and a docstring; every
  module-level name is bound exactly once; the reward's name is never bound again anywhere
  (no assignment, parameter, loop or comprehension target of that name);
* no default argument on any ``def`` or ``lambda`` (a default is evaluated once: mutable state);
* no module-level mutable state: a module-level value is a constant expression (numbers, strings,
  tuples, arithmetic on them, earlier constants), never a list, dict, call or lambda;
* no attribute is ever assigned (``math.pi = ...`` would be state), no slice is assigned.

Together these make every accepted function pure: its value and its cost depend only on its
inputs, never on how many calls came before. That is what lets validation speak for training.

:func:`instrument` rewrites accepted code so the worker can meter it deterministically, in
*ticks* rather than seconds (what a reward may spend does not depend on machine load): one tick
per function call and per loop or comprehension iteration; ``range(n)`` and the builtins that walk
a sequence (``sum``, ``sorted``, ``max``, ...) charge its length; ``+`` and ``*`` on sequences
charge the result's length before building it; ``in`` charges the container's length, a comparison
its operands' lengths, a slice its source's length; integer results above :data:`MAX_INT_BITS` bits are refused before computing
(``2 ** 10 ** 10``). The helpers the rewrite calls start with ``_``, a prefix the reward code may
not use, so it cannot reach them. What the meter does not count (hashing a long tuple used as a
dict key, comparing the items *inside* nested sequences) is bounded because every sequence must
first be built tick by tick; the per-process CPU limit is the backstop for the rest.
"""

from __future__ import annotations

import ast

FUNCTION_NAME = "compute_reward"
#: Builtins the reward code may call; everything else (open, exec, getattr, type, ...) is absent.
ALLOWED_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "dict", "enumerate", "float", "int", "len", "list", "max", "min",
    "pow", "range", "round", "sorted", "sum", "tuple", "zip",
})
#: ``math.<name>`` the reward code may use (pure functions and constants).
ALLOWED_MATH = frozenset({
    "atan", "atan2", "ceil", "copysign", "cos", "e", "exp", "expm1", "fabs", "floor", "fsum",
    "hypot", "isfinite", "isinf", "isnan", "log", "log10", "log1p", "log2", "pi", "sin", "sqrt",
    "tan", "tanh",
})
#: Methods allowed on any object (in practice: the metrics dict and lists the code builds).
ALLOWED_METHODS = frozenset({"get", "keys", "values", "items", "append"})
#: Largest integer (in bits) a reward may hold; far above any reward's need, cheap to compute with.
MAX_INT_BITS = 4096
_ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.Lambda, ast.arguments, ast.arg, ast.Return, ast.Assign,
    ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Break, ast.Continue, ast.Pass,
    ast.Expr, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Dict,
    ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.comprehension, ast.expr_context,
    ast.boolop, ast.operator, ast.unaryop, ast.cmpop,
)
_CONSTANT_NODES = (ast.Constant, ast.Tuple, ast.UnaryOp, ast.BinOp, ast.Name, ast.Load, ast.unaryop, ast.operator)
_METERED_OPS = {ast.Add: "+", ast.Mult: "*", ast.Pow: "**", ast.LShift: "<<"}
_COMPARISONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
                ast.Is: "is", ast.IsNot: "is not"}


class SyntaxProblem(ValueError):
    """The source is outside the allowed subset; the message lists every problem found."""


def check_syntax(source: str, max_source_chars: int) -> ast.Module:
    """Parse ``source`` and raise :class:`SyntaxProblem` unless the whole module is allowed."""
    if len(source) > max_source_chars:
        raise SyntaxProblem(f"source has {len(source)} characters (limit {max_source_chars})")
    try:
        tree = ast.parse(source, filename="<reward>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise SyntaxProblem(f"does not parse: {type(error).__name__}: {error}") from None
    bound = {"math"} | ALLOWED_BUILTINS
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            bound.update(a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs)
            if isinstance(node, ast.FunctionDef):
                bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    located = sorted(
        ((getattr(node, "lineno", 0), getattr(node, "col_offset", 0)), problem)
        for node in ast.walk(tree)
        if (problem := _node_problem(node, bound))
    )
    located += _module_problems(tree)
    if located:  # every problem, in source order: the feedback a retry prompt needs
        located.sort()
        problems = list(dict.fromkeys(f"{problem} (line {line})" if line else problem for (line, _), problem in located))
        raise SyntaxProblem("; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""))
    _check_signature(tree)
    return tree


def _node_problem(node: ast.AST, bound: set[str]) -> str | None:
    if not isinstance(node, _ALLOWED_NODES):
        return f"{type(node).__name__} is not allowed"
    names = []
    if isinstance(node, ast.Name):
        names.append(node.id)
        if isinstance(node.ctx, ast.Store) and (node.id in ALLOWED_BUILTINS or node.id == "math"):
            return f"assigning to {node.id!r} is not allowed"
        if isinstance(node.ctx, ast.Store) and node.id == FUNCTION_NAME:
            return f"rebinding {FUNCTION_NAME!r} is not allowed"
        if isinstance(node.ctx, ast.Load) and node.id not in bound:
            return f"name {node.id!r} is not defined or not allowed"
    elif isinstance(node, ast.arg):
        names.append(node.arg)
        if node.arg == FUNCTION_NAME:
            return f"a parameter named {FUNCTION_NAME!r} is not allowed"
    elif isinstance(node, ast.arguments):
        if node.defaults or any(d is not None for d in node.kw_defaults):
            return "default argument values are not allowed (they keep state between calls)"
    elif isinstance(node, ast.FunctionDef):
        names.append(node.name)
        if node.decorator_list:
            return "decorators are not allowed"
    elif isinstance(node, ast.keyword) and node.arg is not None:
        names.append(node.arg)
    elif isinstance(node, ast.Attribute):
        names.append(node.attr)
        if not isinstance(node.ctx, ast.Load):
            return f"assigning to attribute .{node.attr} is not allowed"
        is_math = isinstance(node.value, ast.Name) and node.value.id == "math"
        if node.attr not in (ALLOWED_MATH if is_math else ALLOWED_METHODS):
            return f"attribute .{node.attr} is not allowed"
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and not isinstance(node.ctx, ast.Load):
        return "assigning to a slice is not allowed"
    elif isinstance(node, ast.Compare) and len(node.ops) > 1 and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
        return "a chained comparison with 'in' is not allowed"
    elif isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float, str, type(None))):
            return f"constant of type {type(node.value).__name__} is not allowed"
        if isinstance(node.value, int) and node.value.bit_length() > MAX_INT_BITS:
            return f"integer constant above {MAX_INT_BITS} bits"
    for name in names:
        if name.startswith("_"):
            return f"names starting with '_' are not allowed: {name!r}"
    return None


def _module_problems(tree: ast.Module) -> list[tuple[tuple[int, int], str]]:
    """Top-level statements: defs, constant assignments, a docstring; each name bound once."""
    problems, seen = [], set()
    for i, statement in enumerate(tree.body):
        where = (statement.lineno, statement.col_offset)
        if isinstance(statement, ast.FunctionDef):
            names = [statement.name]
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                problems.append((where, "a module-level assignment must bind one plain name"))
                continue
            names = [targets[0].id]
            value = statement.value
            if value is None or not all(isinstance(n, _CONSTANT_NODES) for n in ast.walk(value)):
                problems.append((where, f"module-level {names[0]!r} must be a constant (number, string, tuple): "
                                        "no module-level mutable state"))
        elif isinstance(statement, ast.Expr) and i == 0 and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        else:
            problems.append((where, f"module-level {type(statement).__name__} is not allowed (only def and constants)"))
            continue
        for name in names:
            if name in seen:
                problems.append((where, f"module-level name {name!r} is bound twice"))
            seen.add(name)
    return problems


def _check_signature(tree: ast.Module) -> None:
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == FUNCTION_NAME]
    if not functions:
        raise SyntaxProblem(f"no top-level function {FUNCTION_NAME}(metrics, difficulty)")
    args = functions[-1].args
    positional = args.posonlyargs + args.args
    if len(positional) != 2 or args.vararg or args.kwarg or args.kwonlyargs or args.defaults:
        raise SyntaxProblem(f"{FUNCTION_NAME} must take exactly two positional parameters (metrics, difficulty)")


# ----- the meter ---------------------------------------------------------------------------------

def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _tick() -> ast.Expr:
    return ast.Expr(_call("_t"))


class _Meter(ast.NodeTransformer):
    """Insert the tick calls; see the module docstring."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.body.insert(0, _tick())
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        self.generic_visit(node)
        node.body = ast.Subscript(ast.Tuple([_call("_t"), node.body], ast.Load()), ast.Constant(1), ast.Load())
        return node

    def _loop(self, node):
        self.generic_visit(node)
        node.body.insert(0, _tick())
        return node

    visit_For = visit_While = _loop

    def visit_comprehension(self, node: ast.comprehension) -> ast.comprehension:
        self.generic_visit(node)
        node.iter = _call("_each", node.iter)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        op = _METERED_OPS.get(type(node.op))
        return _call("_op", ast.Constant(op), node.left, node.right) if op else node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        self.generic_visit(node)
        op = _METERED_OPS.get(type(node.op))
        if op is None:
            return node
        load = ast.parse(ast.unparse(node.target), mode="eval").body  # the target, read
        return ast.Assign([node.target], _call("_op", ast.Constant(op), load, node.value))

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            test = _call("_in", node.left, node.comparators[0])
            return ast.UnaryOp(ast.Not(), test) if isinstance(node.ops[0], ast.NotIn) else test
        # a < b < c -> _cmp("<", a, b) and _cmp("<", b, c): b evaluated twice, harmless for pure code
        left, parts = node.left, []
        for op, right in zip(node.ops, node.comparators):
            parts.append(_call("_cmp", ast.Constant(_COMPARISONS[type(op)]), left, right))
            left = right
        return parts[0] if len(parts) == 1 else ast.BoolOp(ast.And(), parts)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.slice, ast.Slice) and isinstance(node.ctx, ast.Load):
            s = node.slice
            bounds = [part if part is not None else ast.Constant(None) for part in (s.lower, s.upper, s.step)]
            return _call("_slice", node.value, *bounds)
        return node


def instrument(tree: ast.Module) -> str:
    """Source of the metered module (run by the worker with the ``_`` helpers in its namespace)."""
    metered = _Meter().visit(ast.parse(ast.unparse(tree)))  # a copy: the caller's tree is left alone
    return ast.unparse(ast.fix_missing_locations(metered))
