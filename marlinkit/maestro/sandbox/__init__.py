"""Run untrusted, LLM-written reward code: MAESTRO's three-stage validation (Section 4.3).

The paper names the stages and nothing more: "Syntax Check: abstract syntax tree validation;
Sandboxed Execution: sample rollouts to confirm runtime behavior; Safety Check: range bounding and
finite-value verification". This module makes each one concrete:

1. ``syntax``: at most ``max_source_chars`` characters, then at most ``MAX_AST_NODES`` nodes and
   ``MAX_AST_DEPTH`` levels of nesting (counted without recursion, before any other step); the
   source parses and uses only an allow-list of Python, checked on the whole
   module (:mod:`marlinkit.maestro.sandbox.static_check`): no import, class, try, with, global, raise, yield,
   f-string or decorator; no name or attribute starting with ``_``; names bound in the file or
   one of :data:`ALLOWED_BUILTINS` / ``math``; attributes only ``math.<allowed>`` and the
   dict/list methods in :data:`ALLOWED_METHODS`; only defs and constants at module level, each
   name bound once, :data:`FUNCTION_NAME` never rebound nor called by itself, no default
   arguments, no attribute assignment, annotations only plain names or strings (nothing runs at
   import). Accepted code is therefore pure. It must define :data:`FUNCTION_NAME` with exactly
   two positional parameters ``(metrics, difficulty)``. The stage runs in a thread of its own, so
   its verdict does not depend on the caller's stack depth.
2. ``execution``: the function runs, in time order and 16 rows per batch as in training, on two
   whole recorded episodes of simulated traffic metrics (360 s x 16 intersections each: the real
   Hangzhou flow and the hardest curriculum context, :mod:`marlinkit.maestro.sandbox.reward_rows`) followed
   by synthetic edge cases and the probes of :func:`probe_rows`, in a separate process
   (``sandbox_worker``) locked in by rlimits
   (hard = soft), Landlock where the kernel has it, a uid of its own when started as root, and
   ``PR_SET_PDEATHSIG``. Its cost is metered in
   deterministic ticks: no call may exceed ``call_ticks`` and the whole validation may average
   at most ``mean_ticks`` per call. Every call must return a number. One wall-clock deadline
   (``deadline_seconds``) covers the whole validation, a backstop the ticks keep far away.
3. ``safety``: every value is finite and within ``[-bound, bound]``; on the real rows the reward
   is not constant, does not rise with the queue length (Spearman correlation below
   ``max_queue_correlation``) and varies enough to matter next to the environment reward; on the
   probes beyond the recorded range it does not rise with the queue, fall with the departures or
   pay for gridlock (:func:`check_behaviour`).

The paper gives no signature for r_LLM; ours is ``compute_reward(metrics, difficulty) -> float``,
called once per intersection per 1-s step with the floats of :data:`REWARD_FIELDS` and the current
curriculum difficulty. The value is expected in [-1, 1] because the combined reward multiplies it by
170.0 to reach the environment reward's scale (``marlinkit.maestro.curriculum.combined_reward``).

During training, :class:`RewardWorker` runs one episode (a fresh process per episode) under the
same limits and a tick budget for the episode derived from the validation measurement
(:func:`episode_ticks`); any failure closes it and raises :class:`SandboxError` so the caller
can fall back to the environment reward and log the retirement. README, section "The reward
sandbox: threat model", says what this contains and what it does not.

Modules: this one runs the stages (:func:`validate`, :class:`RewardWorker`); :mod:`.limits` holds the inputs,
limits, error and verdict; :mod:`.safety` the checks of stage 3; :mod:`.static_check` the allow-list of stage 1;
``worker.py`` the sandboxed process's own source.
"""

from __future__ import annotations

import json
import math
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

from marlinkit.maestro.sandbox import static_check as sandbox_ast
from marlinkit.maestro.sandbox.limits import (FIELD_NAMES, REWARD_FIELDS, STAGES, Field, SandboxError,  # noqa: F401
                                             SandboxLimits, Verdict)
from marlinkit.maestro.sandbox.safety import (PROBE_BASES, QUEUE_CAPACITY, THROUGHPUT_STEPS, Probes,  # noqa: F401
                                              check_behaviour, check_outputs, check_queue_alignment, env_reward,
                                              probe_rows)
from marlinkit.maestro.sandbox.static_check import ALLOWED_BUILTINS, ALLOWED_MATH, ALLOWED_METHODS, FUNCTION_NAME  # noqa: F401

BATCH_ROWS = 16  # rows per batch in validation: one step of the 16 intersections, as in training
_WORKER_SOURCE = (Path(__file__).with_name("worker.py")).read_text()


def check_syntax(source: str, limits: SandboxLimits = SandboxLimits()) -> None:
    """Stage 1: raise ``SandboxError("syntax", ...)`` unless the whole module is in the allowed subset."""
    _static_stage(source, limits)


def _static_stage(source: str, limits: SandboxLimits, deadline: float | None = None) -> str:
    """Check and meter ``source`` in a thread of its own; the metered code, or ``SandboxError("syntax")``.

    A fresh thread starts with an empty stack, so the verdict does not depend on how deep the
    caller's stack is (a CLI, a training loop, a process pool). ``deadline`` (``time.monotonic``)
    bounds the wait; every failure, a bug of the checker included, becomes a ``SandboxError``.
    """
    result: dict[str, str] = {}

    def run() -> None:
        try:
            result["code"] = sandbox_ast.prepare(source, limits.max_source_chars)
        except sandbox_ast.SyntaxProblem as problem:
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
        raise SandboxError("syntax", f"validation deadline ({limits.deadline_seconds:g} s) exceeded in the syntax check")
    if "error" in result:
        raise SandboxError("syntax", result["error"])
    return result["code"]


class RewardWorker:
    """One sandbox process holding one reward function; ``evaluate`` runs batches through it.

    Start-up (~50 ms) is paid once per process: training starts one per episode, so the CPU
    limit and ``total_ticks`` are budgets of that episode. The code is syntax-checked here as
    well, so a worker can never run code that stage 1 rejects. Any failure (exception, non-number,
    exhausted budget, timeout, crash, malformed reply, non-finite or out-of-range value) closes the
    worker and raises SandboxError.
    """

    def __init__(self, source: str, limits: SandboxLimits = SandboxLimits(), total_ticks: int | None = None,
                 deadline: float | None = None):
        self.limits, self.deadline = limits, deadline  # deadline: time.monotonic() that ends a validation
        code = _static_stage(source, limits, deadline)
        self.total_ticks = int(total_ticks if total_ticks is not None else limits.mean_ticks * limits.max_batch_rows)
        self.last_ticks = np.zeros(0)  # ticks per row of the last batch
        self.ticks_used = 0
        command = [sys.executable, "-I", "-S", "-c", _WORKER_SOURCE, str(limits.cpu_seconds),
                   str(limits.memory_bytes), str(limits.recursion_limit), str(os.getpid())]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={}, cwd="/", start_new_session=True,
        )
        init = {"code": code, "function": FUNCTION_NAME, "fields": FIELD_NAMES,
                "builtins": sorted(ALLOWED_BUILTINS), "math": sorted(ALLOWED_MATH),
                "call_ticks": limits.call_ticks, "total_ticks": self.total_ticks}
        self._send(json.dumps(init).encode())
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
        if size != 16 * len(rows):
            self._fail("execution", f"malformed reply: {size} bytes for {len(rows)} rows")
        reply = np.frombuffer(self._read_exact(size, deadline), dtype=np.float64)
        self.last_ticks = reply[len(rows):].copy()
        self.ticks_used += int(self.last_ticks.sum())
        return reply[:len(rows)].copy()

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
            self._fail("execution", f"malformed reply: expected an object with a boolean 'ok', got {type(reply).__name__}")
        if not reply["ok"]:
            error = str(reply.get("error", "unknown error"))[:500]
            if error == "MemoryError":
                error += f" (memory limit {self.limits.memory_bytes / 2**20:g} MiB)"
            self._fail("execution", error)
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
        if code == -signal.SIGXCPU or (code == -signal.SIGKILL and cpu >= 0.5 * self.limits.cpu_seconds):
            return f"CPU time limit ({self.limits.cpu_seconds} s) exceeded"
        if code == -signal.SIGKILL:
            return "killed (memory or time limit)"
        return f"sandbox process exited with code {code}"

    def _fail(self, stage: str, reason: str):
        if self.alive:
            self._process.kill()
        self.close()
        raise SandboxError(stage, reason)


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


def episode_ticks(cost: Mapping[str, float], rows: int, limits: SandboxLimits = SandboxLimits()) -> int:
    """Tick budget of one training episode of ``rows`` calls, from the validation measurement ``cost``.

    ``episode_margin`` x the validated mean per call (at least 10 ticks per call, never above
    ``mean_ticks``), times the rows. Deterministic: a reward that costs far more in training than
    on the validation rows (the same real traffic) is retired, however fast the machine.
    """
    per_call = min(max(limits.episode_margin * float(cost["mean"]), 10.0), limits.mean_ticks)
    return int(math.ceil(per_call * rows))


def validate(
    source: str,
    samples: tuple[Mapping[str, Any], np.ndarray] | None = None,
    limits: SandboxLimits = SandboxLimits(),
    n_real: int = 0,
) -> Verdict:
    """Run the three stages on ``source``; the first failure ends validation.

    ``samples`` None: :func:`validation_rows` (real episode + synthetic edge cases). Given samples,
    the first ``n_real`` rows count as real traffic: the queue correlation, the spread and the
    probes of :func:`probe_rows` run only when there are some (``n_real`` 0: the value checks only).
    Rows go to the worker in order, :data:`BATCH_ROWS` per batch, as training sends them.

    Deterministic: the same source, samples and limits give the same verdict (the paper requires
    identical code-acceptance decisions for identical seeds, Section 5.3), at any stack depth.
    Cost is counted in ticks, not seconds; only the CPU limit and the wall-clock deadline
    (``deadline_seconds`` over the whole validation) are time, and they sit far above what the
    tick budgets let through. Never raises: every failure, of the code or of the inputs, is a
    rejected verdict with its reason.
    """
    timings: dict[str, float] = {}
    stage, start = "syntax", time.perf_counter()
    values, ticks, probe_values, isolation = [], [], [], {}
    try:
        deadline = time.monotonic() + limits.deadline_seconds
        if samples is None:
            metrics, difficulty, n_real = validation_rows()
        else:
            metrics, difficulty = samples
        metrics = {name: np.asarray(metrics[name], dtype=float).reshape(-1) for name in FIELD_NAMES}
        difficulty = np.broadcast_to(np.asarray(difficulty, dtype=float), metrics[FIELD_NAMES[0]].shape)
        n = len(difficulty)
        probes = probe_rows(metrics, difficulty, n_real) if n_real else None
        rows = n + (len(probes.difficulty) if probes else 0)
        _static_stage(source, limits, deadline)
        timings["syntax"] = time.perf_counter() - start
        stage, start = "execution", time.perf_counter()
        with RewardWorker(source, limits, total_ticks=int(limits.mean_ticks * rows), deadline=deadline) as worker:
            isolation = worker.isolation
            for first in range(0, n, BATCH_ROWS):
                batch = {name: metrics[name][first:first + BATCH_ROWS] for name in FIELD_NAMES}
                values.append(worker.evaluate_raw(batch, difficulty[first:first + BATCH_ROWS]))
                ticks.append(worker.last_ticks)
            for first in range(0, rows - n, BATCH_ROWS):
                batch = {name: probes.metrics[name][first:first + BATCH_ROWS] for name in FIELD_NAMES}
                probe_values.append(worker.evaluate_raw(batch, probes.difficulty[first:first + BATCH_ROWS]))
        timings["execution"] = time.perf_counter() - start
    except SandboxError as error:
        timings[error.stage] = time.perf_counter() - start
        return Verdict(False, error.stage, error.reason, timings=timings, isolation=isolation)
    except Exception as error:  # noqa: BLE001 - a verdict, never a crash of the caller (training)
        timings[stage] = time.perf_counter() - start
        return Verdict(False, stage, f"validation failed: {type(error).__name__}: {str(error)[:300]}", timings=timings,
                       isolation=isolation)
    values, ticks = np.concatenate(values), np.concatenate(ticks)
    cost = {"calls": int(n), "total": float(ticks.sum()), "max": float(ticks.max()), "mean": float(ticks.mean())}
    start = time.perf_counter()
    try:
        check_outputs(values, limits.bound)
        if n_real:
            probed = np.concatenate(probe_values) if probe_values else np.zeros(0)
            check_outputs(probed, limits.bound)
            check_queue_alignment(values[:n_real], metrics["queue_length"][:n_real], limits)
            check_behaviour(values[:n_real], {name: metrics[name][:n_real] for name in FIELD_NAMES}, difficulty[:n_real],
                            probes, probed, limits)
    except SandboxError as error:
        return Verdict(False, "safety", error.reason, values.tolist(), {**timings, "safety": time.perf_counter() - start},
                       cost, isolation)
    except Exception as error:  # noqa: BLE001
        return Verdict(False, "safety", f"validation failed: {type(error).__name__}: {str(error)[:300]}", values.tolist(),
                       {**timings, "safety": time.perf_counter() - start}, cost, isolation)
    timings["safety"] = time.perf_counter() - start
    return Verdict(True, None, "accepted", values.tolist(), timings, cost, isolation)
