"""The reward sandbox against a corpus of hostile programs, well-formed rewards, and its CLI."""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from marlinkit import curriculum, paths
from marlinkit.llm import sandbox

# Small limits keep the corpus fast; wall time is generous because the test machine is shared.
LIMITS = sandbox.SandboxLimits(cpu_seconds=1, memory_bytes=128 * 2**20, wall_seconds=30.0)
SAMPLES = sandbox.sample_rollouts(16)


def reward(body: str, signature: str = "compute_reward(metrics, difficulty)") -> str:
    return f"def {signature}:\n" + "".join(f"    {line}\n" for line in body.splitlines())


# (id, source, reason fragment) rejected by the AST allow-list before anything runs.
SYNTAX_CORPUS = [
    ("import", "import os\n" + reward("return 0.0"), "Import is not allowed"),
    ("from-import", "from subprocess import run\n" + reward("return 0.0"), "ImportFrom is not allowed"),
    ("import-inside", reward("import os\nreturn 0.0"), "Import is not allowed"),
    ("dunder-import", reward("x = __import__('os')\nreturn 0.0"), "'__import__'"),
    ("open", reward("open('/etc/passwd').read()\nreturn 0.0"), "name 'open'"),
    ("eval", reward("return eval('1')"), "name 'eval'"),
    ("exec", reward("exec('x = 1')\nreturn 0.0"), "name 'exec'"),
    ("compile", reward("return compile('1', 'f', 'eval')"), "name 'compile'"),
    ("globals", reward("return globals()"), "name 'globals'"),
    ("vars", reward("return vars()"), "name 'vars'"),
    ("getattr", reward("return getattr(metrics, '__class__')"), "name 'getattr'"),
    ("type", reward("return type(metrics)"), "name 'type'"),
    ("os-name", reward("return os.system('true')"), "name 'os'"),
    ("subprocess-name", reward("return subprocess.run(['true'])"), "name 'subprocess'"),
    ("breakpoint", reward("breakpoint()\nreturn 0.0"), "name 'breakpoint'"),
    ("subclasses", reward("return ().__class__.__bases__[0].__subclasses__()"), "not allowed"),
    ("function-globals", reward("return compute_reward.__globals__"), "__globals__"),
    ("builtins-dict", reward("return __builtins__['open']"), "'__builtins__'"),
    ("lambda-code", reward("f = lambda: 0\nreturn f.__code__"), "__code__"),
    ("format-escape", reward("return '{0.__class__}'.format(metrics)"), ".format is not allowed"),
    ("f-string", reward("return f'{metrics}'"), "JoinedStr is not allowed"),
    ("generator-frame", reward("g = (x for x in [1])\nreturn g.gi_frame.f_back.f_globals"), ".gi_frame"),
    ("math-module-attr", reward("return math.sys"), ".sys is not allowed"),
    ("math-dunder", reward("return math.__loader__"), "not allowed"),
    ("shadow-builtin", reward("max = metrics.get\nreturn 0.0"), "assigning to 'max'"),
    ("shadow-math", "math = 1\n" + reward("return 0.0"), "assigning to 'math'"),
    ("class", "class A:\n    pass\n" + reward("return 0.0"), "ClassDef is not allowed"),
    ("try", reward("try:\n    return 1.0\nexcept Exception:\n    return 0.0"), "Try is not allowed"),
    ("raise", reward("raise SystemExit"), "Raise is not allowed"),
    ("with", reward("with open('x') as f:\n    return 0.0"), "With is not allowed"),
    ("global", reward("global x\nreturn 0.0"), "Global is not allowed"),
    ("yield", reward("yield 1.0"), "Yield is not allowed"),
    ("delete", reward("del metrics\nreturn 0.0"), "Delete is not allowed"),
    ("decorator", "@staticmethod\n" + reward("return 0.0"), "decorators are not allowed"),
    ("bytes", reward("return len(b'x')"), "constant of type bytes"),
    ("underscore-name", reward("_x = 1\nreturn 0.0"), "starting with '_'"),
    ("syntax-error", "def compute_reward(metrics, difficulty)\n    return 0.0\n", "does not parse"),
    ("nesting-bomb", reward("return " + "(" * 500 + "1" + ")" * 500), "does not parse"),
    ("too-long", reward("return 0.0\n" + "x = 1\n" * 5000), "characters (limit"),
    ("missing-function", reward("return 0.0", "reward(metrics, difficulty)"), "no top-level function"),
    ("async-function", "async " + reward("return 0.0"), "AsyncFunctionDef is not allowed"),
    ("one-parameter", reward("return 0.0", "compute_reward(metrics)"), "exactly two positional"),
    ("three-parameters", reward("return 0.0", "compute_reward(metrics, difficulty, extra)"), "exactly two"),
    ("varargs", reward("return 0.0", "compute_reward(*args)"), "exactly two positional"),
    ("kwargs", reward("return 0.0", "compute_reward(metrics, difficulty, **kw)"), "exactly two"),
    ("defaults", reward("return 0.0", "compute_reward(metrics, difficulty=0.5)"), "exactly two"),
    ("nested-only", "def outer():\n" + "\n".join("    " + l for l in reward("return 0.0").splitlines()), "no top-level"),
]

# (id, source, reason fragment) that pass the AST check and are stopped while running.
EXECUTION_CORPUS = [
    ("memory-bomb-list", reward("x = [0] * 10**9\nreturn 0.0"), "MemoryError"),
    ("memory-bomb-str", reward("x = 'a' * 10**10\nreturn 0.0"), "MemoryError"),
    ("power-bomb", reward("return 2 ** (10 ** 10)"), "MemoryError"),
    ("recursion-bomb", "def f(x):\n    return f(x)\n" + reward("return f(1)"), "RecursionError"),
    ("huge-int-output", reward("return 10 ** 400"), "OverflowError"),
    ("list-output", reward("return [0.0] * 1000000"), "returned list"),
    ("string-output", reward("return 'high'"), "returned str"),
    ("no-return", reward("x = 1"), "returned NoneType"),
    ("huge-error-message", reward("return metrics['x' * 10**6]"), "KeyError"),
    ("missing-field", reward("return metrics['speed']"), "KeyError: 'speed'"),
    ("division-by-zero", reward("return 1.0 / metrics['queue_length']"), "ZeroDivisionError"),
    ("math-domain", reward("return math.log(metrics['queue_length'])"), "ValueError: math domain"),
    ("unbound-at-runtime", reward("if difficulty > 2:\n    y = 1\nreturn y"), "UnboundLocalError"),
]

# CPU-bound programs: each costs about a second of CPU, so the corpus keeps three.
CPU_CORPUS = [
    ("infinite-loop", reward("while True:\n    pass")),
    ("top-level-loop", "while True:\n    pass\n" + reward("return 0.0")),
    ("huge-range", reward("return sum(i for i in range(10 ** 12)) * 0.0")),
]

# (id, source, reason fragment) that run but return values the safety stage refuses.
SAFETY_CORPUS = [
    ("nan", reward("return float('nan')"), "not finite"),
    ("inf", reward("return float('inf')"), "not finite"),
    ("overflow-to-inf", reward("return 1e308 * 10"), "not finite"),
    ("nan-at-high-difficulty", reward("return 0.0 if difficulty < 0.9 else float('nan')"), "not finite"),
    ("out-of-range", reward("return 5.0"), "outside [-1, 1]"),
    ("unscaled-queue", reward("return -metrics['queue_length']"), "outside [-1, 1]"),
]


def _ids(corpus):
    return [case[0] for case in corpus]


@pytest.mark.parametrize("name,source,fragment", SYNTAX_CORPUS, ids=_ids(SYNTAX_CORPUS))
def test_syntax_stage_rejects_hostile_programs(name, source, fragment):
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert (verdict.accepted, verdict.stage) == (False, "syntax"), verdict
    assert fragment in verdict.reason
    assert "execution" not in verdict.timings  # nothing was run
    with pytest.raises(sandbox.SandboxError, match="syntax"):
        sandbox.RewardWorker(source, LIMITS)  # a worker refuses it too


@pytest.mark.parametrize("name,source,fragment", EXECUTION_CORPUS, ids=_ids(EXECUTION_CORPUS))
def test_execution_stage_contains_runtime_failures(name, source, fragment):
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert (verdict.accepted, verdict.stage) == (False, "execution"), verdict
    assert fragment in verdict.reason
    assert len(verdict.reason) < 600  # error text is truncated, never the attacker's megabytes


@pytest.mark.parametrize("name,source", CPU_CORPUS, ids=_ids(CPU_CORPUS))
def test_cpu_limit_kills_endless_computation(name, source):
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert (verdict.accepted, verdict.stage) == (False, "execution"), verdict
    assert verdict.reason == "CPU time limit (1 s) exceeded"


def test_wall_clock_timeout_kills_before_the_cpu_limit():
    limits = sandbox.SandboxLimits(cpu_seconds=60, memory_bytes=128 * 2**20, wall_seconds=0.5)
    start = time.monotonic()
    verdict = sandbox.validate(reward("while True:\n    pass"), SAMPLES, limits)
    assert (verdict.stage, verdict.reason) == ("execution", "wall-clock timeout (0.5 s)")
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("name,source,fragment", SAFETY_CORPUS, ids=_ids(SAFETY_CORPUS))
def test_safety_stage_rejects_non_finite_and_out_of_range_values(name, source, fragment):
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert (verdict.accepted, verdict.stage) == (False, "safety"), verdict
    assert fragment in verdict.reason
    assert len(verdict.sample_outputs) == 16  # the raw values are reported


def _reference(source, metrics, difficulty):
    """The same code run in this process with real builtins: what the sandbox must reproduce."""
    namespace = {"math": math}
    exec(source, namespace)
    function = namespace["compute_reward"]
    return [function({k: float(v[i]) for k, v in metrics.items()}, float(difficulty[i])) for i in range(len(difficulty))]


def test_the_shipped_example_is_accepted_with_exact_values():
    source = (paths.PACKAGE_DIR / "llm" / "reward_example.py").read_text()
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert verdict.accepted and verdict.stage is None, verdict
    assert verdict.sample_outputs == _reference(source, *SAMPLES)
    assert len(set(verdict.sample_outputs)) > 8  # it responds to its inputs
    assert set(verdict.timings) == set(sandbox.STAGES)


def test_well_formed_rewards_using_the_allowed_language_are_accepted():
    source = (
        "SCALE = 120.0\n\n"
        "def norm(x, top):\n    return min(x / top, 1.0)\n\n"
        "def compute_reward(metrics, difficulty):\n"
        "    parts = [norm(metrics.get('queue_length', 0.0), SCALE), norm(metrics['delay'], 1.0)]\n"
        "    weights = {k: v for k, v in zip(['q', 'd'], [0.6, 0.4])}\n"
        "    total = sum(w * p for w, p in zip(weights.values(), parts))\n"
        "    bonus = math.tanh(metrics['throughput']) * 0.1 if difficulty > 0.5 else 0\n"
        "    ordered = sorted(parts, key=lambda p: -p)\n"
        "    return max(-1.0, min(1.0, bonus - total + 0 * ordered[0]))\n"
    )
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert verdict.accepted, verdict
    assert verdict.sample_outputs == pytest.approx(_reference(source, *SAMPLES), abs=0)


def test_hand_computed_values_come_back_in_row_order():
    metrics = {name: np.zeros(3) for name in sandbox.FIELD_NAMES}
    metrics["queue_length"] = np.array([0.0, 60.0, 120.0])
    source = reward("return -metrics['queue_length'] / 120.0 + 0.5 * (difficulty - 0.3)")
    verdict = sandbox.validate(source, (metrics, np.array([0.3, 0.5, 1.0])), LIMITS)
    assert verdict.accepted
    assert verdict.sample_outputs == pytest.approx([0.0, -0.4, -0.65])
    assert sandbox.validate(reward("return True"), SAMPLES, LIMITS).sample_outputs == [1.0] * 16


def test_worker_evaluates_many_batches_then_fails_closed_into_the_fallback():
    # Accepted on the documented ranges, but NaN for a queue longer than any sample has.
    source = reward("if metrics['queue_length'] > 200:\n    return float('nan')\nreturn -metrics['queue_length'] / 120.0")
    assert sandbox.validate(source, SAMPLES, LIMITS).accepted
    metrics, _ = sandbox.sample_rollouts(16, seed=1)
    state = curriculum.RewardState(source="llm")
    with sandbox.RewardWorker(source, LIMITS) as worker:
        for step in range(50):  # one process, many steps: no start-up cost per step
            values = worker.evaluate(metrics, 0.3 + step / 100)
        assert values == pytest.approx(-metrics["queue_length"] / 120.0)
        jammed = {**metrics, "queue_length": np.full(16, 250.0)}
        with pytest.raises(sandbox.SandboxError) as failure:
            worker.evaluate(jammed, 0.5)
        assert failure.value.stage == "safety"
        assert not worker.alive
    state = curriculum.record_runtime_failure(state)
    r_env = np.full(16, -3.0)
    assert np.array_equal(curriculum.training_reward(r_env, None, 0.5, state), r_env)


def test_worker_cpu_budget_is_per_batch_not_per_lifetime():
    # ~0.3 s of CPU per batch: five batches exceed a 1-s lifetime budget but not a per-batch one.
    source = reward("return sum(i for i in range(3000000)) * 0.0")
    with sandbox.RewardWorker(source, LIMITS) as worker:
        for _ in range(5):
            assert worker.evaluate({k: v[:1] for k, v in SAMPLES[0].items()}, 0.5).tolist() == [0.0]


def test_worker_rejects_malformed_batches_before_sending():
    with sandbox.RewardWorker(reward("return 0.0"), LIMITS) as worker:
        with pytest.raises(ValueError, match="exactly the fields"):
            worker.evaluate({"queue_length": np.zeros(2)}, 0.5)
        assert worker.alive


def test_worker_process_runs_with_os_limits_and_without_root():
    with sandbox.RewardWorker(reward("return 0.0"), LIMITS) as worker:
        limits = Path(f"/proc/{worker.pid}/limits").read_text()
        status = Path(f"/proc/{worker.pid}/status").read_text()
    rows = {line[:26].strip(): line[26:].split() for line in limits.splitlines()[1:]}
    assert rows["Max address space"][:2] == [str(128 * 2**20)] * 2
    assert rows["Max file size"][:2] == ["0", "0"]
    assert rows["Max processes"][:2] == ["0", "0"]
    assert rows["Max open files"][:2] == ["3", "3"]
    assert rows["Max cpu time"][0] in ("1", "2")  # re-armed per batch
    uid = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
    assert os.geteuid() != 0 or uid == ["65534"] * 4  # root drops to nobody before any untrusted code


def _raw_worker(code: str) -> str:
    """Drive the worker process directly, skipping the AST check, to test the second layer alone."""
    command = [sys.executable, "-I", "-S", "-c", sandbox._WORKER_SOURCE, "1", str(128 * 2**20), "200"]
    init = {"code": code, "function": "compute_reward", "fields": ["a"],
            "builtins": sorted(sandbox.ALLOWED_BUILTINS), "math": sorted(sandbox.ALLOWED_MATH)}
    message = json.dumps(init).encode()
    done = subprocess.run(command, input=struct.pack(">I", len(message)) + message, capture_output=True, timeout=30, env={})
    return json.loads(done.stdout[4:])["error"]


@pytest.mark.parametrize(
    "code,fragment",
    [
        ("import os", "ImportError"),
        ("open('/tmp/marlinkit-sandbox-escape', 'w')", "NameError: name 'open'"),
        ("getattr(1, 'real')", "NameError: name 'getattr'"),
        ("math.__loader__", "AttributeError"),
    ],
)
def test_restricted_builtins_hold_even_without_the_ast_check(code, fragment):
    assert fragment in _raw_worker(code)


def test_cli_accepts_the_example_and_rejects_a_hostile_file(tmp_path):
    example = paths.PACKAGE_DIR / "llm" / "reward_example.py"
    hostile = tmp_path / "hostile.py"
    hostile.write_text(reward("return ().__class__.__bases__[0].__subclasses__()"))
    results = {}
    for path in (example, hostile):
        done = subprocess.run(
            [sys.executable, "-m", "marlinkit", "check-reward", str(path), "--json", "--cpu-seconds", "1"],
            capture_output=True, text=True, timeout=120, cwd=paths.REPO_ROOT,
        )
        results[path.name] = (done.returncode, json.loads(done.stdout.strip().splitlines()[-1]))
    code, result = results["reward_example.py"]
    assert code == 0 and result["accepted"] and result["stage"] is None and result["exit_code"] == 0
    assert result["sample_outputs"]["n"] == 64 and result["sample_outputs"]["non_finite"] == 0
    code, result = results["hostile.py"]
    assert code == 1 and not result["accepted"] and result["stage"] == "syntax"
    assert "__class__" in result["reason"] and "__subclasses__" in result["reason"]
