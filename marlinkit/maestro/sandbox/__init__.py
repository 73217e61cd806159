"""Run untrusted, LLM-written reward code: MAESTRO's three-stage validation (Section 4.3).

The paper names the stages and nothing more: "Syntax Check: abstract syntax tree validation;
Sandboxed Execution: sample rollouts to confirm runtime behavior; Safety Check: range bounding and
finite-value verification". Here a reward is written in a small language, a subset of Python that is safe by
construction (:mod:`marlinkit.maestro.sandbox.language`: no loops, containers, attributes, strings beyond metric
names, recursion; every operation a float operation over NumPy arrays), and each stage is:

1. ``syntax``: the program is parsed (size limits first), rewritten where its meaning is certain (``import math``
   dropped, loops over ``metrics.items()`` unrolled, ...; the verdict lists each rewrite) and checked against the
   language; an error names the construct and its line. It must define :data:`FUNCTION_NAME` with exactly two
   positional parameters ``(metrics, difficulty)``. The stage runs in a thread of its own, so its verdict does
   not depend on the caller's stack depth.
2. ``execution``: the compiled program runs, vectorised, on two whole recorded episodes of simulated traffic
   metrics (360 s x 16 intersections each: the real Hangzhou flow and the hardest curriculum context,
   :mod:`marlinkit.maestro.sandbox.reward_rows`) and synthetic edge cases, in a separate process
   (``worker.py``) locked in by rlimits (hard = soft), Landlock where the kernel has it, a uid of its own when
   started as root, and ``PR_SET_PDEATHSIG``: the second layer. No meter: one evaluation costs at most the
   program's (bounded) size in array operations.
3. ``safety``: every value is finite and within ``[-bound, bound]``; on the real rows the reward is not constant
   and varies enough to matter next to the environment reward; then a seeded search over the whole metric
   domain at every difficulty level looks for a counterexample to the properties of a traffic reward
   (:func:`marlinkit.maestro.sandbox.safety.search`) and reports the one it finds.

The paper gives no signature for r_LLM; ours is ``compute_reward(metrics, difficulty) -> float``,
called once per intersection per 1-s step with the floats of :data:`REWARD_FIELDS` and the current
curriculum difficulty; the sandbox calls the compiled program once per step for all 16 intersections.
The value is expected in [-1, 1] because the combined reward multiplies it by 170.0 to reach the
environment reward's scale (``marlinkit.maestro.curriculum.combined_reward``).

During training, :class:`RewardWorker` runs one episode (a fresh process per episode) whose CPU limit is the
episode's budget (``SandboxLimits.episode_cpu_seconds``); any failure closes it and raises :class:`SandboxError`
so the caller can fall back to the environment reward and log the retirement. docs/threat-model.md says what
this contains and what it does not.

Modules: this one runs the stages (:func:`validate`, :class:`RewardWorker`); :mod:`.language` the reward
language; :mod:`.limits` the inputs, limits, error and verdict; :mod:`.safety` the checks and the search of
stage 3; ``worker.py`` the sandboxed process's own source.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from marlinkit.maestro.sandbox import language
from marlinkit.maestro.sandbox.language import FUNCTION_NAME, FUNCTIONS, LanguageError  # noqa: F401
from marlinkit.maestro.sandbox.limits import (FIELD_NAMES, REWARD_FIELDS, STAGES, Field, SandboxError,  # noqa: F401
                                             SandboxLimits, Verdict)
from marlinkit.maestro.sandbox.safety import DOMAIN, PROPERTIES, check_outputs, check_real, env_reward  # noqa: F401
from marlinkit.maestro.sandbox import safety

BATCH_ROWS = 4096  # rows per message to the worker in validation
_WORKER_SOURCE = (Path(__file__).with_name("worker.py")).read_text()
_LANGUAGE_PATH = str(Path(language.__file__).resolve())
#: The worker's environment: one thread for NumPy's libraries (no thread pool inside the limits).
_WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def check_syntax(source: str, limits: SandboxLimits = SandboxLimits()) -> language.Program:
    """Stage 1: the compiled program, or ``SandboxError("syntax", ...)`` naming what is outside the language."""
    return _static_stage(source, limits)


def _static_stage(source: str, limits: SandboxLimits, deadline: float | None = None) -> language.Program:
    """Check and compile ``source`` in a thread of its own; the program, or ``SandboxError("syntax")``.

    A fresh thread starts with an empty stack, so the verdict does not depend on how deep the
    caller's stack is (a CLI, a training loop, a process pool). ``deadline`` (``time.monotonic``)
    bounds the wait; every failure, a bug of the checker included, becomes a ``SandboxError``.
    """
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["program"] = language.load(source, FIELD_NAMES, limits.max_source_chars)
        except LanguageError as problem:
            result["error"] = str(problem)
        except BaseException as error:  # noqa: BLE001 - untrusted input: every failure is a verdict
            result["error"] = f"the checker failed: {type(error).__name__}: {str(error)[:300]}"

    if not isinstance(source, str):
        raise SandboxError("syntax", f"the source is a {type(source).__name__}, not text")
    thread = threading.Thread(target=run, name="reward-syntax-check", daemon=True)
    thread.start()
    thread.join(max(0.0, (deadline if deadline is not None else time.monotonic() + limits.deadline_seconds)
                    - time.monotonic()))
    if thread.is_alive():
        raise SandboxError("syntax",
                           f"validation deadline ({limits.deadline_seconds:g} s) exceeded in the syntax check")
    if "error" in result:
        raise SandboxError("syntax", result["error"])
    return result["program"]


class RewardWorker:
    """One sandbox process holding one reward program; ``evaluate`` runs batches of rows through it.

    Start-up (NumPy's import, ~0.1 s) is paid once per process: training starts one per episode, so its CPU
    limit (``cpu_seconds``, default ``limits.cpu_seconds``; training passes ``limits.episode_cpu_seconds``) is
    that episode's budget. The code is checked here as well, and again inside the worker, so a worker can
    never run code that stage 1 rejects. Any failure (an evaluation error, the CPU or memory limit, a timeout,
    a crash, a malformed reply, a non-finite or out-of-range value) closes the worker and raises SandboxError.
    """

    def __init__(self, source: str, limits: SandboxLimits = SandboxLimits(), cpu_seconds: int | None = None,
                 deadline: float | None = None):
        self.limits, self.deadline = limits, deadline  # deadline: time.monotonic() that ends a validation
        self.program = _static_stage(source, limits, deadline)
        self.cpu_seconds = int(cpu_seconds if cpu_seconds is not None else limits.cpu_seconds)
        command = [sys.executable, "-I", "-c", _WORKER_SOURCE, str(self.cpu_seconds), str(limits.memory_bytes),
                   str(os.getpid()), _LANGUAGE_PATH]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=dict(_WORKER_ENV), cwd="/", start_new_session=True,
        )
        self._send(json.dumps({"source": source, "fields": FIELD_NAMES,
                               "max_source_chars": limits.max_source_chars}).encode())
        reply = self._receive_status()
        isolation = reply.get("isolation")
        self.isolation = isolation if isinstance(isolation, dict) else {}

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
        deadline = self._deadline()
        (size,) = struct.unpack(">I", self._read_exact(4, deadline))
        if size != 8 * len(rows):
            self._fail("execution", f"malformed reply: {size} bytes for {len(rows)} rows")
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

    def _receive_status(self) -> dict[str, Any]:
        """Read one JSON status frame (at most 4 KiB) within the wall-clock limit; fail on an error.

        The worker runs untrusted code, so its frames are untrusted too: anything but a JSON object
        with a boolean ``ok`` is a ``SandboxError``, never an exception of another type.
        """
        deadline = self._deadline()
        (size,) = struct.unpack(">I", self._read_exact(4, deadline))
        if size > 4096:
            self._fail("execution", f"malformed reply: status frame of {size} bytes exceeds the 4096-byte cap")
        raw = self._read_exact(size, deadline)
        try:
            reply = json.loads(raw)
        except (ValueError, RecursionError) as error:  # JSONDecodeError and bad UTF-8 are ValueErrors
            self._fail("execution", f"malformed reply: not JSON ({type(error).__name__})")
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            self._fail("execution", "malformed reply: expected an object with a boolean 'ok', got "
                                    f"{type(reply).__name__}")
        if not reply["ok"]:
            error = str(reply.get("error", "unknown error"))[:500]
            if error == "MemoryError":
                error += f" (memory limit {self.limits.memory_bytes / 2**20:g} MiB)"
            row = reply.get("row")
            self._fail("execution", error, row if isinstance(row, int) and not isinstance(row, bool) else None)
        return reply

    def _deadline(self) -> float:
        """When the reply now awaited must have come: the per-batch timeout, or the validation's end."""
        batch = time.monotonic() + self.limits.wall_seconds
        return batch if self.deadline is None else min(batch, self.deadline)

    def _read_exact(self, n: int, deadline: float) -> bytes:
        fd, chunks, remaining = self._process.stdout.fileno(), [], n
        while remaining:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not select.select([fd], [], [], timeout)[0]:
                self._process.kill()
                if self.deadline is not None and deadline >= self.deadline:
                    self._fail("execution", f"validation deadline ({self.limits.deadline_seconds:g} s) exceeded")
                self._fail("execution", f"wall-clock timeout ({self.limits.wall_seconds:g} s)")
            chunk = os.read(fd, remaining)
            if not chunk:
                self._fail("execution", self._death_reason())
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _death_reason(self) -> str:
        cpu = 0.0
        try:  # wait4: the exit status and the CPU time it used (hard = soft: the kernel sends SIGKILL)
            _, status, usage = os.wait4(self._process.pid, 0)
            self._process.returncode = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime
        except ChildProcessError:  # already reaped
            self._process.wait()
        code = self._process.returncode
        # rusage lags the kernel's tick accounting a little (0.93 s for a 1-s limit was seen)
        if code == -signal.SIGXCPU or (code == -signal.SIGKILL and cpu >= 0.5 * self.cpu_seconds):
            return f"CPU time limit ({self.cpu_seconds} s) exceeded"
        if code == -signal.SIGKILL:
            return "killed (memory or time limit)"
        return f"sandbox process exited with code {code}"

    def _fail(self, stage: str, reason: str, row: int | None = None):
        if self.alive:
            self._process.kill()
        self.close()
        raise SandboxError(stage, reason, row)


def sample_rollouts(n: int = 64, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Deterministic synthetic samples: each field's extremes plus uniform draws, over difficulties.

    :func:`validation_rows` puts them after the recorded episodes; they cover the documented
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


def validation_rows(synthetic: int = 64, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray, int]:
    """The default validation set: the recorded episodes in time order, then synthetic edge cases.

    Returns ``(metrics, difficulty, n_real)``. The recorded rows (:mod:`marlinkit.maestro.sandbox.reward_rows`,
    2 episodes x 360 s x 16 intersections = 11,520) get the exact difficulty values training uses
    (:func:`marlinkit.maestro.curriculum.difficulty_levels`), cycling step by step so each level meets
    light and heavy traffic; the synthetic rows are :func:`sample_rollouts`.
    """
    from marlinkit.maestro.sandbox import reward_rows

    from marlinkit.maestro.curriculum import difficulty_levels

    real, index = reward_rows.load()
    n_real = len(real[FIELD_NAMES[0]])
    fake, fake_difficulty = sample_rollouts(synthetic, seed)
    metrics = {name: np.concatenate([real[name], fake[name]]) for name in FIELD_NAMES}
    levels = np.array(difficulty_levels())
    steps = (index[:, 0] * reward_rows.SECONDS + index[:, 1]).astype(int)  # one difficulty per step, as in training
    difficulty = np.concatenate([levels[steps % len(levels)], fake_difficulty])
    return metrics, difficulty, n_real




def validate(
    source: str,
    samples: tuple[Mapping[str, Any], np.ndarray] | None = None,
    limits: SandboxLimits = SandboxLimits(),
    n_real: int = 0,
) -> Verdict:
    """Run the three stages on ``source``; the first failure ends validation.

    ``samples`` None: :func:`validation_rows` (the recorded episodes + synthetic edge cases). Given samples,
    the first ``n_real`` rows count as real traffic: the spread check and the search (whose jam threshold
    comes from them) run only when there are some (``n_real`` 0: the value checks only).

    Deterministic: the same source, samples and limits give the same verdict (the paper requires
    identical code-acceptance decisions for identical seeds, Section 5.3), at any stack depth and in any
    process. Only the CPU limit and the wall-clock deadline are time, backstops that an evaluation bounded
    by the program's size does not reach. Never raises: every failure, of the code or of the inputs, is a
    rejected verdict with its reason. It runs in a thread of its own (an empty stack: the same verdict at any
    depth of the caller's); the worker it starts lives and ends inside that thread.
    """
    out: list[Verdict] = []
    thread = threading.Thread(target=lambda: out.append(_validate(source, samples, limits, n_real)),
                              name="reward-validation", daemon=True)
    thread.start()
    thread.join()
    return out[0] if out else Verdict(False, "syntax", "validation failed: the validation thread gave no verdict")


def _validate(source, samples, limits: SandboxLimits, n_real: int) -> Verdict:
    timings: dict[str, float] = {}
    stage, start = "syntax", time.perf_counter()
    state: dict[str, Any] = {"values": np.zeros(0), "isolation": {}, "program": None}
    try:
        deadline = time.monotonic() + limits.deadline_seconds
        metrics, difficulty, n_real = _rows(samples, n_real)
        state["program"] = _static_stage(source, limits, deadline)
        timings["syntax"] = time.perf_counter() - start
        stage, start = "execution", time.perf_counter()
        with RewardWorker(source, limits, deadline=deadline) as worker:
            state["isolation"] = worker.isolation
            state["values"] = _batched(worker, metrics, difficulty)
            timings["execution"] = time.perf_counter() - start
            stage, start = "safety", time.perf_counter()
            _safety(worker, state["values"], metrics, difficulty, n_real, limits)
    except _Unsafe as unsafe:
        timings[stage] = time.perf_counter() - start
        return _verdict(False, "safety", unsafe.found.message, state, timings, unsafe.found.to_dict())
    except SandboxError as error:
        timings[error.stage] = time.perf_counter() - start
        return _verdict(False, error.stage, error.reason, state, timings)
    except Exception as error:  # noqa: BLE001 - a verdict, never a crash of the caller (training)
        timings[stage] = time.perf_counter() - start
        return _verdict(False, stage, f"validation failed: {type(error).__name__}: {str(error)[:300]}", state, timings)
    timings["safety"] = time.perf_counter() - start
    return _verdict(True, None, "accepted", state, timings)


class _Unsafe(Exception):
    def __init__(self, found: safety.Counterexample):
        super().__init__(found.message)
        self.found = found


def _rows(samples, n_real: int) -> tuple[dict[str, np.ndarray], np.ndarray, int]:
    if samples is None:
        return validation_rows()
    metrics, difficulty = samples
    metrics = {name: np.asarray(metrics[name], dtype=float).reshape(-1) for name in FIELD_NAMES}
    difficulty = np.broadcast_to(np.asarray(difficulty, dtype=float), metrics[FIELD_NAMES[0]].shape)
    return metrics, difficulty, n_real


def _batched(worker: RewardWorker, metrics: Mapping[str, np.ndarray], difficulty: np.ndarray) -> np.ndarray:
    """The worker's raw values for all rows, :data:`BATCH_ROWS` per message (``row`` of an error: of all rows)."""
    out = []
    for first in range(0, len(difficulty), BATCH_ROWS):
        batch = {name: metrics[name][first:first + BATCH_ROWS] for name in FIELD_NAMES}
        try:
            out.append(worker.evaluate_raw(batch, difficulty[first:first + BATCH_ROWS]))
        except SandboxError as error:
            if error.row is None:
                raise
            row = first + error.row
            where = ", ".join(f"{name} {metrics[name][row]:g}" for name in FIELD_NAMES)
            raise SandboxError(error.stage, f"{error.reason} on row {row}: {where} (d = {difficulty[row]:g})",
                               row) from None
    return np.concatenate(out) if out else np.zeros(0)


def _safety(worker: RewardWorker, values: np.ndarray, metrics: Mapping[str, np.ndarray], difficulty: np.ndarray,
            n_real: int, limits: SandboxLimits) -> None:
    from marlinkit.maestro.curriculum import difficulty_levels

    check_outputs(values, limits.bound)
    if not n_real:
        return
    check_real(values[:n_real], {name: metrics[name][:n_real] for name in FIELD_NAMES}, limits)
    levels = tuple(difficulty_levels())
    real_d = np.asarray(difficulty[:n_real], dtype=float)
    everywhere = float(np.percentile(values[:n_real], 25))
    thresholds = {float(d): float(np.percentile(values[:n_real][real_d == d], 25)) if (real_d == d).any()
                  else everywhere for d in levels}

    def evaluate(rows: dict, d: np.ndarray) -> np.ndarray:
        return _batched(worker, rows, d)
    found = safety.search(evaluate, levels, thresholds, limits)
    if found is not None:
        raise _Unsafe(found)


def _verdict(accepted: bool, stage: str | None, reason: str, state: dict, timings: dict,
             counterexample: dict | None = None) -> Verdict:
    program = state["program"]
    values = state["values"]
    cost = {"rows": int(values.size), "nodes": program.size} if program is not None else {}
    return Verdict(accepted, stage, reason, values.tolist(), timings, cost, state["isolation"],
                   list(program.notes) if program is not None else [], program.source if program is not None else "",
                   counterexample or {})
