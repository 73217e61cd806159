"""Run untrusted, LLM-written reward code: MAESTRO's three-stage validation (Section 4.3).

The paper names the stages and nothing more: "Syntax Check: abstract syntax tree validation;
Sandboxed Execution: sample rollouts to confirm runtime behavior; Safety Check: range bounding and
finite-value verification". This module makes each one concrete:

1. ``syntax``: the source parses and uses only an allow-list of Python: no import, class, try,
   with, global, raise, yield, f-string or decorator; no name or attribute starting with ``_``;
   names must be bound in the file or be one of :data:`ALLOWED_BUILTINS` / ``math``; attributes only
   ``math.<allowed>`` and the dict/list methods in :data:`ALLOWED_METHODS`. It must define
   :data:`FUNCTION_NAME` with exactly two positional parameters ``(metrics, difficulty)``.
2. ``execution``: the function runs on sample rollouts in a separate process (``sandbox_worker``)
   under RLIMIT_CPU, RLIMIT_AS, no file creation, no new processes, three file descriptors, the
   ``nobody`` user when started as root, restricted builtins, a wall-clock timeout and a cap on
   reply size. It must return a number for every sample.
3. ``safety``: every value is finite and within ``[-bound, bound]``.

The paper gives no signature for r_LLM; ours is ``compute_reward(metrics, difficulty) -> float``,
called once per intersection per 1-s step with the floats of :data:`REWARD_FIELDS` and the current
curriculum difficulty. The value is expected in [-1, 1] because the combined reward multiplies it by
170.0 to reach the environment reward's scale (``marlinkit.curriculum.combined_reward``).

During training, :class:`RewardWorker` keeps one such process alive and evaluates whole batches
(all intersections of a step, or a whole episode) under the same limits, re-arming the CPU budget
per batch; any failure closes it and raises :class:`SandboxError` so the caller can fall back to the
environment reward.
"""

from __future__ import annotations

import ast
import json
import math
import os
import select
import signal
import struct
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import numpy as np

FUNCTION_NAME = "compute_reward"
STAGES = ("syntax", "execution", "safety")
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
_ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.Lambda, ast.arguments, ast.arg, ast.Return, ast.Assign,
    ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Break, ast.Continue, ast.Pass,
    ast.Expr, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Dict,
    ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.comprehension, ast.expr_context,
    ast.boolop, ast.operator, ast.unaryop, ast.cmpop,
)
_WORKER_SOURCE = (Path(__file__).with_name("sandbox_worker.py")).read_text()


class Field(NamedTuple):
    """One input of the reward function: its meaning and the range synthetic samples draw from."""

    name: str
    low: float
    high: float
    doc: str


#: The ``metrics`` dict the reward function receives: one intersection, one 1-s step.
REWARD_FIELDS = (
    Field("queue_length", 0.0, 120.0, "halted vehicles (speed < 0.1 m/s) on the 12 incoming lanes"),
    Field("waiting_time", 0.0, 300.0, "mean seconds the halted incoming vehicles have waited"),
    Field("pressure", -60.0, 60.0, "vehicles on incoming lanes minus vehicles on outgoing lanes"),
    Field("throughput", 0.0, 6.0, "vehicles that left the intersection during this step"),
    Field("delay", 0.0, 1.0, "mean 1 - speed / speed limit over incoming vehicles (0 = free flow)"),
    Field("occupancy", 0.0, 1.0, "mean fraction of incoming lane length covered by vehicles"),
    Field("phase", 0.0, 3.0, "current phase index: 0 WT_ET, 1 NT_ST, 2 WL_EL, 3 NL_SL"),
    Field("phase_duration", 0.0, 120.0, "seconds the current phase has been held"),
)
FIELD_NAMES = tuple(f.name for f in REWARD_FIELDS)


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandbox process; the defaults suit training, tests use smaller ones."""

    cpu_seconds: int = 2  # CPU per batch via RLIMIT_CPU, which counts whole seconds: +-0.5 s
    memory_bytes: int = 256 * 2**20  # RLIMIT_AS of the sandbox process
    wall_seconds: float = 10.0  # wall-clock timeout per batch, enforced by the parent (SIGKILL)
    recursion_limit: int = 200  # Python frames; a recursion bomb ends in RecursionError
    max_source_chars: int = 20_000  # longer programs are rejected before parsing
    max_batch_rows: int = 100_000  # rows per evaluate() call; bounds message sizes both ways
    bound: float = 1.0  # safety stage: every value must lie in [-bound, bound]

    def __post_init__(self):
        if self.cpu_seconds < 1 or self.memory_bytes < 32 * 2**20 or self.wall_seconds <= 0:
            raise ValueError(f"limits too small to start Python: {self}")
        if not (self.bound > 0 and math.isfinite(self.bound)):
            raise ValueError(f"bound must be positive and finite, got {self.bound}")


class SandboxError(RuntimeError):
    """Reward code failed a stage; ``stage`` is one of :data:`STAGES`."""

    def __init__(self, stage: str, reason: str):
        super().__init__(f"{stage}: {reason}")
        self.stage, self.reason = stage, reason


@dataclass
class Verdict:
    """Outcome of :func:`validate`: accepted, or the first stage that failed and why."""

    accepted: bool
    stage: str | None  # failing stage, None when accepted
    reason: str
    sample_outputs: list[float] = field(default_factory=list)  # raw values (may hold nan/inf)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage reached

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary: outputs reduced to counts and finite min/max/mean."""
        values = np.asarray(self.sample_outputs, dtype=float)
        finite = values[np.isfinite(values)]
        outputs = {"n": int(values.size), "non_finite": int(values.size - finite.size)}
        if finite.size:
            outputs.update(min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()))
        data = asdict(self)
        data["sample_outputs"] = outputs
        return data


def check_syntax(source: str, limits: SandboxLimits = SandboxLimits()) -> None:
    """Stage 1: raise ``SandboxError("syntax", ...)`` unless ``source`` is in the allowed subset."""
    if len(source) > limits.max_source_chars:
        raise SandboxError("syntax", f"source has {len(source)} characters (limit {limits.max_source_chars})")
    try:
        tree = ast.parse(source, filename="<reward>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise SandboxError("syntax", f"does not parse: {type(error).__name__}: {error}") from None
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
    if located:  # every problem, in source order: the feedback a retry prompt needs
        problems = list(dict.fromkeys(f"{problem} (line {line})" if line else problem for (line, _), problem in located))
        raise SandboxError("syntax", "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""))
    _check_signature(tree)


def _node_problem(node: ast.AST, bound: set[str]) -> str | None:
    if not isinstance(node, _ALLOWED_NODES):
        return f"{type(node).__name__} is not allowed"
    names = []
    if isinstance(node, ast.Name):
        names.append(node.id)
        if isinstance(node.ctx, ast.Store) and (node.id in ALLOWED_BUILTINS or node.id == "math"):
            return f"assigning to {node.id!r} is not allowed"
        if isinstance(node.ctx, ast.Load) and node.id not in bound:
            return f"name {node.id!r} is not defined or not allowed"
    elif isinstance(node, ast.arg):
        names.append(node.arg)
    elif isinstance(node, ast.FunctionDef):
        names.append(node.name)
        if node.decorator_list:
            return "decorators are not allowed"
    elif isinstance(node, ast.keyword) and node.arg is not None:
        names.append(node.arg)
    elif isinstance(node, ast.Attribute):
        names.append(node.attr)
        is_math = isinstance(node.value, ast.Name) and node.value.id == "math"
        if node.attr not in (ALLOWED_MATH if is_math else ALLOWED_METHODS):
            return f"attribute .{node.attr} is not allowed"
    elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, type(None))):
        return f"constant of type {type(node.value).__name__} is not allowed"
    for name in names:
        if name.startswith("_"):
            return f"names starting with '_' are not allowed: {name!r}"
    return None


def _check_signature(tree: ast.Module) -> None:
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == FUNCTION_NAME]
    if not functions:
        raise SandboxError("syntax", f"no top-level function {FUNCTION_NAME}(metrics, difficulty)")
    args = functions[-1].args
    positional = args.posonlyargs + args.args
    if len(positional) != 2 or args.vararg or args.kwarg or args.kwonlyargs or args.defaults:
        raise SandboxError(
            "syntax", f"{FUNCTION_NAME} must take exactly two positional parameters (metrics, difficulty)"
        )


class RewardWorker:
    """One sandbox process holding one reward function; ``evaluate`` runs batches through it.

    Start-up (~50 ms) is paid once per function, not per step. The code is syntax-checked here as
    well, so a worker can never run code that stage 1 rejects. Any failure (exception, non-number,
    timeout, crash, non-finite or out-of-range value) closes the worker and raises SandboxError.
    """

    def __init__(self, source: str, limits: SandboxLimits = SandboxLimits()):
        check_syntax(source, limits)
        self.limits = limits
        command = [sys.executable, "-I", "-S", "-c", _WORKER_SOURCE,
                   str(limits.cpu_seconds), str(limits.memory_bytes), str(limits.recursion_limit)]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={}, cwd="/", start_new_session=True,
        )
        init = {"code": source, "function": FUNCTION_NAME, "fields": FIELD_NAMES,
                "builtins": sorted(ALLOWED_BUILTINS), "math": sorted(ALLOWED_MATH)}
        self._send(json.dumps(init).encode())
        self._receive_status()

    def evaluate(self, metrics: Mapping[str, Any], difficulty: float | np.ndarray) -> np.ndarray:
        """Reward per row: ``metrics`` maps every name in FIELD_NAMES to an array of equal length."""
        values = self.evaluate_raw(metrics, difficulty)
        try:
            check_outputs(values, self.limits.bound)
        except SandboxError:
            self.close()
            raise
        return values

    def evaluate_raw(self, metrics: Mapping[str, Any], difficulty: float | np.ndarray) -> np.ndarray:
        """Like :meth:`evaluate` without the safety stage (validation reports raw values)."""
        if set(metrics) != set(FIELD_NAMES):
            raise ValueError(f"metrics must have exactly the fields {FIELD_NAMES}, got {sorted(metrics)}")
        rows = np.column_stack([np.asarray(metrics[f], dtype=float).reshape(-1) for f in FIELD_NAMES])
        if not 0 < len(rows) <= self.limits.max_batch_rows:
            raise ValueError(f"batch must have 1..{self.limits.max_batch_rows} rows, got {len(rows)}")
        difficulties = np.broadcast_to(np.asarray(difficulty, dtype=float), (len(rows),))
        self._send(np.concatenate([rows.reshape(-1), difficulties]).astype(np.float64).tobytes())
        self._receive_status()
        deadline = time.monotonic() + self.limits.wall_seconds
        (size,) = struct.unpack(">I", self._read_exact(4, deadline))
        if size != 8 * len(rows):
            self._fail("execution", f"reply of {size} bytes for {len(rows)} rows")
        return np.frombuffer(self._read_exact(size, deadline), dtype=np.float64).copy()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        if self._process.stdin and not self._process.stdin.closed:
            try:
                self._process.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self._process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()

    def __enter__(self) -> "RewardWorker":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_process", None) is not None and self.alive:
            self._process.kill()

    def _send(self, payload: bytes) -> None:
        try:
            self._process.stdin.write(struct.pack(">I", len(payload)) + payload)
            self._process.stdin.flush()
        except BrokenPipeError:
            self._fail("execution", self._death_reason())

    def _receive_status(self) -> None:
        """Read one JSON status frame (at most 4 KiB) within the wall-clock limit; fail on an error."""
        deadline = time.monotonic() + self.limits.wall_seconds
        (size,) = struct.unpack(">I", self._read_exact(4, deadline))
        if size > 4096:
            self._fail("execution", f"status reply of {size} bytes exceeds the 4096-byte cap")
        reply = json.loads(self._read_exact(size, deadline))
        if not reply.get("ok"):
            error = str(reply.get("error", "unknown error"))[:500]
            if error == "MemoryError":
                error += f" (memory limit {self.limits.memory_bytes / 2**20:g} MiB)"
            self._fail("execution", error)

    def _read_exact(self, n: int, deadline: float) -> bytes:
        fd, chunks, remaining = self._process.stdout.fileno(), [], n
        while remaining:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not select.select([fd], [], [], timeout)[0]:
                self._process.kill()
                self._fail("execution", f"wall-clock timeout ({self.limits.wall_seconds:g} s)")
            chunk = os.read(fd, remaining)
            if not chunk:
                self._fail("execution", self._death_reason())
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _death_reason(self) -> str:
        code = self._process.wait()
        if code == -signal.SIGXCPU:  # RLIMIT_CPU reached
            return f"CPU time limit ({self.limits.cpu_seconds} s) exceeded"
        if code == -signal.SIGKILL:
            return "killed (memory or time limit)"
        return f"sandbox process exited with code {code}"

    def _fail(self, stage: str, reason: str):
        if self.alive:
            self._process.kill()
        self.close()
        raise SandboxError(stage, reason)


def check_outputs(values: np.ndarray, bound: float) -> None:
    """Stage 3: raise ``SandboxError("safety", ...)`` unless all values are finite and in range."""
    bad = ~np.isfinite(values)
    if bad.any():
        raise SandboxError("safety", f"{int(bad.sum())} of {values.size} values are not finite (first: {values[bad][0]})")
    worst = float(np.abs(values).max())
    if worst > bound:
        raise SandboxError("safety", f"|value| reaches {worst:.6g}, outside [-{bound:g}, {bound:g}]")


def sample_rollouts(n: int = 64, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Deterministic synthetic samples: each field's extremes plus uniform draws, over difficulties.

    Validation uses real recorded rollouts when the caller has them; these cover the documented
    ranges (including all-zero and all-maximum rows, where divisions by zero hide).
    """
    if n < 3:
        raise ValueError(f"need at least 3 samples (extremes + one draw), got {n}")
    rng = np.random.default_rng(seed)
    low = np.array([f.low for f in REWARD_FIELDS])
    high = np.array([f.high for f in REWARD_FIELDS])
    rows = np.vstack([np.zeros_like(low), high, rng.uniform(low, high, size=(n - 2, len(low)))])
    phase = FIELD_NAMES.index("phase")
    rows[:, phase] = np.clip(np.round(rows[:, phase]), 0, 3)
    difficulty = np.round(np.linspace(0.3, 1.0, n), 6)
    return {name: rows[:, i] for i, name in enumerate(FIELD_NAMES)}, difficulty


def validate(
    source: str,
    samples: tuple[Mapping[str, Any], np.ndarray] | None = None,
    limits: SandboxLimits = SandboxLimits(),
) -> Verdict:
    """Run the three stages on ``source``; the first failure ends validation.

    Deterministic: the same source, samples and limits give the same verdict (the paper requires
    identical code-acceptance decisions for identical seeds, Section 5.3), short of a machine so
    loaded that a program near the CPU or wall limit lands on the other side of it.
    """
    metrics, difficulty = samples if samples is not None else sample_rollouts()
    timings: dict[str, float] = {}
    start = time.perf_counter()
    try:
        check_syntax(source, limits)
        timings["syntax"] = time.perf_counter() - start
        start = time.perf_counter()
        with RewardWorker(source, limits) as worker:
            values = worker.evaluate_raw(metrics, difficulty)
        timings["execution"] = time.perf_counter() - start
    except SandboxError as error:
        timings[error.stage] = time.perf_counter() - start
        return Verdict(False, error.stage, error.reason, timings=timings)
    start = time.perf_counter()
    try:
        check_outputs(values, limits.bound)
    except SandboxError as error:
        return Verdict(False, "safety", error.reason, values.tolist(), {**timings, "safety": time.perf_counter() - start})
    timings["safety"] = time.perf_counter() - start
    return Verdict(True, None, "accepted", values.tolist(), timings)
