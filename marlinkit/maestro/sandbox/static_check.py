"""Stage 1 of the reward sandbox on the whole module, and the cost meter compiled into accepted code.

:func:`check_syntax` decides what Python an LLM-written reward may be written in (see
:mod:`marlinkit.maestro.sandbox` for the stages). Before anything else it bounds the work the
parent itself will do: at most ``max_source_chars`` characters, :data:`MAX_AST_NODES` syntax-tree
nodes and :data:`MAX_AST_DEPTH` levels of nesting, measured without recursion. Every later step
(the checks, the rewrite, ``ast.unparse``) is then linear in a tree of bounded size and depth.
Beyond the node/name/attribute allow-lists it checks the *module*, not only the reward's ``def``
(``compute_reward = lambda ..., calls=[]:`` after a compliant ``def`` kept state across calls):

* the module holds only ``def`` statements, constant assignments and a docstring; every
  module-level name is bound exactly once; the reward's name is never bound again anywhere
  (no assignment, parameter, loop or comprehension target of that name);
* no default argument on any ``def`` or ``lambda`` (a default is evaluated once: mutable state);
* no module-level mutable state: a module-level value is a constant expression (numbers, strings,
  tuples, arithmetic on them, earlier constants), never a list, dict, call or lambda;
* :data:`FUNCTION_NAME` never refers to itself (it runs once per row, which its cost relies on);
* nothing runs at import: an annotation (which Python evaluates when the module or the ``def``
  runs) may only be a plain name or a string;
* no attribute is ever assigned (``math.pi = ...`` would be state), no slice is assigned, no
  ``**`` unpacking in a dict display.

Together these make every accepted function pure: its value and its cost depend only on its
inputs, never on how many calls came before. That is what lets validation speak for training.

:func:`instrument` rewrites accepted code so the worker can meter it deterministically, in
*ticks* rather than seconds (what a reward may spend does not depend on machine load). A loop or
comprehension iteration and a call of a helper or lambda cost one tick per started
:data:`NODES_PER_TICK` nodes of the code they run (so a long body cannot hide work behind one
tick); the reward's own call, once per row, costs one tick as before; the
helpers the rewrite calls (worker side) charge what the Python operation costs:

* ``range(n)`` its length; the builtins that walk a sequence (``sum``, ``sorted``, ``max``, ...)
  the length they walk, and ``list``/``tuple``/``sorted``/``dict`` also the length they build;
* ``+`` and ``*`` on sequences the result's length, before building it; ``in`` the container's
  length; a comparison and a slice their operands' lengths;
* integer arithmetic (``*``, ``/``, ``//``, ``%``, ``**``, three-argument ``pow``, ``round`` to
  negative digits, ``int(str)``) by the size of its operands in machine words, so a 4,096-bit
  product costs hundreds of ticks; every integer produced above :data:`MAX_INT_BITS` bits is refused,
  the powers and shifts before they are computed;
* what cannot be charged by a simple size is refused: ``%`` formatting of strings, ``sum`` with a
  sequence as its start, comparing or ordering sequences that hold sequences, a tuple key that
  holds anything but numbers and strings, an integer key of 2**61 or more (equal hashes).

A chained comparison ``a < b < c`` becomes ``_chain(a, "<", lambda: b, "<", lambda: c)``: each
operand is evaluated once, in order, only while the chain holds, and no node gets two parents.
The helpers start with ``_``, a prefix the reward code may not use, so it cannot reach them.
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
#: Most syntax-tree nodes a program may have (``ast.walk`` count). A 320-token reply has a few hundred.
MAX_AST_NODES = 2_000
#: Deepest nesting of syntax-tree nodes (a module holding a def holding ``return -x`` is 5 deep).
#: Far below the interpreter's recursion limit: the recursive steps after it (the rewrite,
#: ``ast.unparse``) need about 3.5 frames per level, so the verdict never depends on the caller's stack.
MAX_AST_DEPTH = 100
#: A loop or comprehension iteration, or a call of a helper function or lambda, costs one tick per
#: started ``NODES_PER_TICK`` syntax-tree nodes of the code it runs (test and body). The reward's
#: own call costs one tick: it runs once per row (it may not call itself), so its straight-line
#: work per row is bounded by :data:`MAX_AST_NODES`.
NODES_PER_TICK = 16
_ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.Lambda, ast.arguments, ast.arg, ast.Return, ast.Assign,
    ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Break, ast.Continue, ast.Pass,
    ast.Expr, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Dict,
    ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.comprehension, ast.expr_context,
    ast.boolop, ast.operator, ast.unaryop, ast.cmpop,
)
_CONSTANT_NODES = (ast.Constant, ast.Tuple, ast.UnaryOp, ast.BinOp, ast.Name, ast.Load, ast.unaryop, ast.operator)
#: Operators the worker's ``_op`` computes (and charges, and caps); ``>>``, ``&``, ``|``, ``^`` never
#: make an integer longer than their operands and cost one pass over them, so they run as written.
_METERED_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
                ast.Pow: "**", ast.LShift: "<<"}
_HASH_MODULUS = 2**61 - 1  # integers hash modulo this (64-bit builds): larger keys can share a hash
_COMPARISONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
                ast.Is: "is", ast.IsNot: "is not"}


class SyntaxProblem(ValueError):
    """The source is outside the allowed subset; the message lists every problem found."""


def check_syntax(source: str, max_source_chars: int) -> ast.Module:
    """Parse ``source`` and raise :class:`SyntaxProblem` unless the whole module is allowed.

    The size limits come first (characters, then nodes and depth), so a hostile program is
    refused before any step whose cost grows faster than its length.
    """
    if len(source) > max_source_chars:
        raise SyntaxProblem(f"source has {len(source)} characters (limit {max_source_chars})")
    try:
        tree = ast.parse(source, filename="<reward>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise SyntaxProblem(f"does not parse: {type(error).__name__}: {error}") from None
    _check_size(tree)
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


def _check_size(tree: ast.AST) -> None:
    """Count nodes and nesting depth with an explicit stack (no recursion, whatever the depth)."""
    nodes, deepest, stack = 0, 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    if nodes > MAX_AST_NODES:
        raise SyntaxProblem(f"the program has {nodes} syntax-tree nodes (limit {MAX_AST_NODES}): write a shorter reward")
    if deepest > MAX_AST_DEPTH:
        raise SyntaxProblem(f"the program nests {deepest} levels deep (limit {MAX_AST_DEPTH}): "
                            "split long sums, chains and if/elif ladders")


def _plain_annotation(annotation: ast.expr | None) -> bool:
    return annotation is None or isinstance(annotation, ast.Name) or (
        isinstance(annotation, ast.Constant) and isinstance(annotation.value, str))


_ANNOTATION = "an annotation may only be a plain name or a string (annotations are evaluated at import)"


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
        if isinstance(node.ctx, ast.Load) and node.id == FUNCTION_NAME:
            return f"{FUNCTION_NAME!r} may not call or refer to itself"
        if isinstance(node.ctx, ast.Load) and node.id not in bound:
            return f"name {node.id!r} is not defined or not allowed"
    elif isinstance(node, ast.arg):
        names.append(node.arg)
        if node.arg == FUNCTION_NAME:
            return f"a parameter named {FUNCTION_NAME!r} is not allowed"
        if not _plain_annotation(node.annotation):
            return _ANNOTATION
    elif isinstance(node, ast.arguments):
        if node.defaults or any(d is not None for d in node.kw_defaults):
            return "default argument values are not allowed (they keep state between calls)"
    elif isinstance(node, ast.FunctionDef):
        names.append(node.name)
        if node.decorator_list:
            return "decorators are not allowed"
        if not _plain_annotation(node.returns):
            return _ANNOTATION
    elif isinstance(node, ast.AnnAssign):
        if not _plain_annotation(node.annotation):
            return _ANNOTATION
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
    elif isinstance(node, ast.Dict) and any(key is None for key in node.keys):
        return "'**' unpacking in a dict is not allowed"
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


def _weight(*parts) -> int:
    """Ticks for one run of ``parts`` (nodes or lists of nodes): one per started NODES_PER_TICK nodes."""
    nodes = sum(1 for part in parts for root in (part if isinstance(part, list) else [part]) for _ in ast.walk(root))
    return 1 + nodes // NODES_PER_TICK


def _tick(weight: int) -> ast.Expr:
    return ast.Expr(_call("_t", *([ast.Constant(weight)] if weight > 1 else [])))


def _key(node: ast.expr) -> ast.expr:
    """A dict key or index the worker checks (``_k``); a constant (not a huge integer) needs no check."""
    if isinstance(node, ast.Constant) and not (isinstance(node.value, int) and abs(node.value) >= _HASH_MODULUS):
        return node
    return _call("_k", node)


class _Meter(ast.NodeTransformer):
    """Insert the tick calls and the metered helpers; see the module docstring.

    Each ``visit_`` measures its node's weight on the original code, then transforms the children
    (``generic_visit``), then wraps the node: new nodes are always fresh, never shared.
    """

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        weight = 1 if node.name == FUNCTION_NAME else _weight(node.body)
        self.generic_visit(node)
        node.body.insert(0, _tick(weight))
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        weight = _weight(node.body)
        self.generic_visit(node)
        node.body = ast.Subscript(ast.Tuple([_tick(weight).value, node.body], ast.Load()), ast.Constant(1), ast.Load())
        return node

    def _loop(self, node):
        weight = _weight(node.test if isinstance(node, ast.While) else node.target, node.body)
        self.generic_visit(node)
        node.body.insert(0, _tick(weight))
        return node

    visit_For = visit_While = _loop

    def _comprehension(self, node, *parts):
        weight = _weight(*parts, *[condition for g in node.generators for condition in g.ifs])
        self.generic_visit(node)
        for generator in node.generators:
            generator.iter = _call("_each", generator.iter, *([ast.Constant(weight)] if weight > 1 else []))
        return node

    def visit_ListComp(self, node: ast.ListComp) -> ast.ListComp:
        return self._comprehension(node, node.elt)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.GeneratorExp:
        return self._comprehension(node, node.elt)

    def visit_DictComp(self, node: ast.DictComp) -> ast.DictComp:
        node = self._comprehension(node, node.key, node.value)
        node.key = _key(node.key)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        op = _METERED_OPS.get(type(node.op))
        return _call("_op", ast.Constant(op), node.left, node.right) if op else node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        return _call("_op", ast.Constant("~"), node.operand, ast.Constant(None)) if isinstance(node.op, ast.Invert) else node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        self.generic_visit(node)
        op = _METERED_OPS.get(type(node.op))
        if op is None:
            return node
        load = ast.parse(ast.unparse(node.target), mode="eval").body  # the target, read (a copy)
        return ast.Assign([node.target], _call("_op", ast.Constant(op), load, node.value))

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            test = _call("_in", node.left, node.comparators[0])
            return ast.UnaryOp(ast.Not(), test) if isinstance(node.ops[0], ast.NotIn) else test
        if len(node.ops) == 1:
            return _call("_cmp", ast.Constant(_COMPARISONS[type(node.ops[0])]), node.left, node.comparators[0])
        # a < b < c: each operand evaluated once, in order, and only while the chain holds
        arguments = [node.left]
        for op, right in zip(node.ops, node.comparators):
            thunk = ast.Lambda(ast.arguments([], [], None, [], [], None, []), right)
            arguments += [ast.Constant(_COMPARISONS[type(op)]), thunk]
        return _call("_chain", *arguments)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.slice, ast.Slice):
            if isinstance(node.ctx, ast.Load):
                s = node.slice
                bounds = [part if part is not None else ast.Constant(None) for part in (s.lower, s.upper, s.step)]
                return _call("_slice", node.value, *bounds)
            return node
        node.slice = _key(node.slice)
        return node

    def visit_Dict(self, node: ast.Dict) -> ast.Dict:
        self.generic_visit(node)
        node.keys = [_key(key) for key in node.keys]
        return node

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            node.args[0] = _key(node.args[0])
        return node


def instrument(tree: ast.Module) -> str:
    """Source of the metered module (run by the worker with the ``_`` helpers in its namespace).

    ``tree`` must have passed :func:`check_syntax` (bounded size and depth); it is left alone.
    """
    copy = ast.parse(ast.unparse(tree))
    metered = _Meter().visit(copy)
    return ast.unparse(ast.fix_missing_locations(metered))


def prepare(source: str, max_source_chars: int) -> str:
    """Check ``source`` (raise :class:`SyntaxProblem`) and return its metered form."""
    return instrument(check_syntax(source, max_source_chars))
