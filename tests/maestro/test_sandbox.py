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

from marlinkit import paths
from marlinkit.maestro import curriculum
from marlinkit.maestro import sandbox

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
    ("defaults", reward("return 0.0", "compute_reward(metrics, difficulty=0.5)"), "default argument"),
    ("top-level-loop", "while True:\n    pass\n" + reward("return 0.0"), "module-level While is not allowed"),
    ("nested-only", "def outer():\n" + "\n".join("    " + l for l in reward("return 0.0").splitlines()), "no top-level"),
]

# (id, source, reason fragment) that pass the AST check and are stopped while running.
EXECUTION_CORPUS = [
    ("memory-bomb-list", reward("x = [0] * 10**9\nreturn 0.0"), "TickBudgetExceeded"),
    ("memory-bomb-str", reward("x = 'a' * 10**10\nreturn 0.0"), "TickBudgetExceeded"),
    ("power-bomb", reward("return 2 ** (10 ** 10)"), "OverflowError: integer above 4096 bits"),
    ("recursion-bomb", "def f(x):\n    return f(x)\n" + reward("return f(1)"), "RecursionError"),
    ("huge-int-output", reward("return 10 ** 400"), "OverflowError"),
    ("list-output", reward("return [0.0] * 1000"), "returned list"),
    ("string-output", reward("return 'high'"), "returned str"),
    ("no-return", reward("x = 1"), "returned NoneType"),
    ("huge-error-message", reward("return metrics['x' * 1000]"), "KeyError"),
    ("missing-field", reward("return metrics['speed']"), "KeyError: 'speed'"),
    ("division-by-zero", reward("return 1.0 / metrics['queue_length']"), "ZeroDivisionError"),
    ("math-domain", reward("return math.log(metrics['queue_length'])"), "ValueError: math domain"),
    ("unbound-at-runtime", reward("if difficulty > 2:\n    y = 1\nreturn y"), "UnboundLocalError"),
]

# Endless programs: stopped by the deterministic tick budget, not by a clock.
BUDGET_CORPUS = [
    ("infinite-loop", reward("while True:\n    pass")),
    ("huge-range", reward("return sum(i for i in range(10 ** 12)) * 0.0")),
    ("endless-recursion-tree", "def f(n):\n    return f(n + 1) + f(n + 2) if n < 60 else 0\n" + reward("return f(0)")),
]
# Limits under which only the time backstops can stop a program (tick budgets out of reach).
UNMETERED = dict(call_ticks=10**15, mean_ticks=1e15)

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


@pytest.mark.parametrize("name,source", BUDGET_CORPUS, ids=_ids(BUDGET_CORPUS))
def test_tick_budget_stops_endless_computation_before_any_clock(name, source):
    start = time.process_time()
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert (verdict.accepted, verdict.stage) == (False, "execution"), verdict
    assert verdict.reason == "TickBudgetExceeded: a call used more than 2000 ticks"
    assert time.process_time() - start < 1.0


def test_cpu_backstop_has_hard_limit_equal_to_soft():
    limits = sandbox.SandboxLimits(cpu_seconds=1, memory_bytes=128 * 2**20, wall_seconds=60.0, **UNMETERED)
    verdict = sandbox.validate(reward("while True:\n    pass"), SAMPLES, limits)
    assert (verdict.stage, verdict.reason) == ("execution", "CPU time limit (1 s) exceeded")


def test_wall_clock_timeout_kills_before_the_cpu_limit():
    limits = sandbox.SandboxLimits(cpu_seconds=60, memory_bytes=128 * 2**20, wall_seconds=0.5, **UNMETERED)
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
    source = (paths.PACKAGE_DIR / "maestro" / "sandbox" / "reward_example.py").read_text()
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


def test_metered_code_computes_what_the_original_computes():
    source = (
        "LEVELS = (10.0, 40.0, 80.0)\n\n"
        "def band(q):\n    return sum(1 for level in LEVELS if level <= q)\n\n"
        "def compute_reward(metrics, difficulty):\n"
        "    q = metrics['queue_length']\n"
        "    parts = [band(q), 0 <= q < 60.0, q is None, 'phase' not in metrics, 3 in [1, 2, 3]]\n"
        "    weights = {'a': 0.1}\n"
        "    weights['a'] += 0.05 * difficulty\n"
        "    head = (parts + [0.0] * 2)[1:4]\n"
        "    total = 0.0\n"
        "    for k, v in weights.items():\n"
        "        total -= v * band(q) ** 2 / 9.0\n"
        "    scale = (lambda x: x * 0.25)(len(head))\n"
        "    return max(-1.0, min(1.0, total + 0.01 * sum(parts) * scale - (2 << 3) / 1600.0))\n"
    )
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert verdict.accepted, verdict.reason
    assert verdict.sample_outputs == _reference(source, *SAMPLES)


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


def test_ticks_are_counted_exactly_so_budgets_do_not_depend_on_load():
    # 1 (call) + 11 (range(10): 1 + its length) + 10 (iterations) = 22 ticks per call, on any machine
    source = reward("total = 0\nfor i in range(10):\n    total += i\nreturn total * 0.0")
    one = {k: v[:1] for k, v in SAMPLES[0].items()}
    with sandbox.RewardWorker(source, LIMITS, total_ticks=22 * 20) as worker:
        for _ in range(20):
            worker.evaluate(one, 0.5)
            assert worker.last_ticks.tolist() == [22.0]
        assert worker.ticks_used == 22 * 20
        with pytest.raises(sandbox.SandboxError, match="ticks for this process is used up"):
            worker.evaluate(one, 0.5)  # call 21 exceeds the process's (the episode's) budget
        assert not worker.alive
    assert sandbox.validate(source, SAMPLES, LIMITS).cost == {"calls": 16, "total": 352.0, "max": 22.0, "mean": 22.0}


def test_episode_budget_follows_the_validated_cost():
    limits = sandbox.SandboxLimits()
    assert sandbox.episode_ticks({"mean": 2.0}, 5760, limits) == 10 * 5760  # floor of 10 ticks per call
    assert sandbox.episode_ticks({"mean": 30.0}, 5760, limits) == 120 * 5760  # 4 x the validated mean
    assert sandbox.episode_ticks({"mean": 150.0}, 100, limits) == 200 * 100  # never above mean_ticks


def test_worker_rejects_malformed_batches_before_sending():
    with sandbox.RewardWorker(reward("return 0.0"), LIMITS) as worker:
        with pytest.raises(ValueError, match="exactly the fields"):
            worker.evaluate({"queue_length": np.zeros(2)}, 0.5)
        assert worker.alive


def _limits_of(pid: int) -> dict[str, list[str]]:
    text = Path(f"/proc/{pid}/limits").read_text()
    return {line[:26].strip(): line[26:].split() for line in text.splitlines()[1:]}


def _uid_of(pid: int) -> list[str]:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))


def test_worker_process_runs_with_hard_limits_and_a_uid_of_its_own():
    with sandbox.RewardWorker(reward("return 0.0"), LIMITS) as first, sandbox.RewardWorker(reward("return 0.0"), LIMITS) as second:
        rows = _limits_of(first.pid)
        uids = _uid_of(first.pid), _uid_of(second.pid)
        isolation = first.isolation
    assert rows["Max cpu time"][:2] == ["1", "1"]  # hard = soft: the worker cannot raise it
    assert rows["Max address space"][:2] == [str(128 * 2**20)] * 2
    assert rows["Max file size"][:2] == ["0", "0"]
    assert rows["Max processes"][:2] == ["0", "0"]
    assert rows["Max open files"][:2] == ["3", "3"]
    assert rows["Max core file size"][:2] == ["0", "0"]
    if os.geteuid() == 0:  # root: each worker drops to a uid no other process has
        assert "0" not in uids[0] and len(set(uids[0])) == 1 and uids[0] != uids[1]
        assert isolation["own_uid"] is True
    assert isolation["pdeathsig"] is True


def _raw_worker(code: str, builtins=None) -> dict:
    """Drive the worker process directly, skipping the AST check and the meter, to test the second layer alone."""
    command = [sys.executable, "-I", "-S", "-c", sandbox._WORKER_SOURCE, "5", str(128 * 2**20), "200", str(os.getpid())]
    init = {"code": code, "function": "compute_reward", "fields": ["a"],
            "builtins": sorted(builtins or sandbox.ALLOWED_BUILTINS), "math": sorted(sandbox.ALLOWED_MATH),
            "call_ticks": 10, "total_ticks": 10}
    message = json.dumps(init).encode()
    done = subprocess.run(command, input=struct.pack(">I", len(message)) + message, capture_output=True, timeout=30, env={})
    return json.loads(done.stdout[4:])


@pytest.mark.parametrize(
    "code,fragment",
    [
        ("import os", "ImportError"),
        ("open('/tmp/marlinkit-sandbox-escape', 'w')", "NameError: name 'open'"),
        ("getattr(1, 'real')", "NameError: name 'getattr'"),
        ("math.__loader__", "AttributeError"),
        ("math.pi = 3.0", "AttributeError: math is read-only"),
    ],
)
def test_restricted_builtins_hold_even_without_the_ast_check(code, fragment):
    assert fragment in _raw_worker(code)["error"]


# The OS layer alone: the untrusted code gets the real __import__, open and getattr here.
FULL = ["__import__", "open", "getattr", "len", "range"]


def test_a_worker_cannot_signal_a_sibling_worker():
    with sandbox.RewardWorker(reward("return 0.0"), LIMITS) as victim:
        reply = _raw_worker(f"import os, signal\nos.kill({victim.pid}, signal.SIGKILL)", FULL)
        assert reply["ok"] is False and "PermissionError" in reply["error"]
        assert victim.alive and victim.evaluate({k: v[:1] for k, v in SAMPLES[0].items()}, 0.5).tolist() == [0.0]


def test_a_worker_cannot_raise_its_own_limits():
    reply = _raw_worker("import resource\nresource.setrlimit(resource.RLIMIT_CPU, (100, 100))", FULL)
    assert "ValueError" in reply["error"] and "not allowed to raise maximum limit" in reply["error"]
    reply = _raw_worker("import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))", FULL)
    assert "ValueError" in reply["error"]


def test_reads_and_file_creation_are_denied_where_landlock_is_available():
    isolation = _raw_worker("def compute_reward(metrics, difficulty):\n    return 0.0", FULL)["isolation"]
    read = _raw_worker("import os\nos.close(2)\nopen('/etc/hostname').read()", FULL)  # free a descriptor first
    create = _raw_worker("import os\nos.close(2)\nopen('/tmp/marlinkit-sandbox-probe', 'w')", FULL)
    listing = _raw_worker("import os\nos.close(2)\nos.listdir('/')", FULL)
    if not isolation["landlock_abi"]:
        pytest.skip("kernel without Landlock: reads are limited by the namespace and 3 descriptors only")
    assert "PermissionError" in read["error"] and "PermissionError" in create["error"]
    assert "PermissionError" in listing["error"]
    assert not Path("/tmp/marlinkit-sandbox-probe").exists()


def test_workers_die_with_their_parent():
    # The parent hands its worker an endless batch, so the worker is busy, not waiting on its pipe.
    script = (
        "from marlinkit.maestro import sandbox\n"
        "limits = sandbox.SandboxLimits(cpu_seconds=120, wall_seconds=120.0, call_ticks=10**15, mean_ticks=1e15)\n"
        "w = sandbox.RewardWorker('def compute_reward(metrics, difficulty):\\n    while True:\\n        pass\\n', limits)\n"
        "print(w.pid, flush=True)\n"
        "w.evaluate({k: v[:1] for k, v in sandbox.sample_rollouts(3)[0].items()}, 0.5)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=paths.REPO_ROOT)
    worker = int(parent.stdout.readline())
    time.sleep(0.5)
    assert Path(f"/proc/{worker}/stat").read_text().split()[2] in "RS"  # busy in the endless loop
    parent.kill()  # SIGKILL: no cleanup code runs in the parent
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:  # gone, or a zombie until init reaps it: either way it no longer runs
            if Path(f"/proc/{worker}/stat").read_text().split()[2] == "Z":
                break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        os.kill(worker, 9)
        raise AssertionError("the worker outlived its parent")


# Frames a compromised worker could send instead of the protocol's; each must end in SandboxError.
FORGED = {
    "not-json": b"\x00\x00\x00\x03{{{",
    "json-list": b"\x00\x00\x00\x02[]",
    "ok-not-bool": b'\x00\x00\x00\x0c{"ok": "ye"}',
    "bad-utf8": b"\x00\x00\x00\x02\xff\xfe",
    "oversized": b"\xff\xff\xff\xff",
    "truncated": b"\x00\x00\x01\x00{",
    "nothing": b"",
    "deep-json": struct.pack(">I", 4000) + b"[" * 4000,
}


@pytest.mark.parametrize("frame", FORGED.values(), ids=FORGED.keys())
def test_a_malformed_frame_from_the_worker_is_a_sandbox_error(monkeypatch, frame):
    # A stand-in worker that reads the init frame and answers with the forged bytes.
    fake = f"import sys\nsys.stdin.buffer.read(4)\nsys.stdout.buffer.write({frame!r})\nsys.stdout.buffer.flush()\n"
    monkeypatch.setattr(sandbox, "_WORKER_SOURCE", fake)
    with pytest.raises(sandbox.SandboxError) as failure:
        sandbox.RewardWorker(reward("return 0.0"), LIMITS)
    assert failure.value.stage == "execution"


def test_a_malformed_binary_reply_is_a_sandbox_error(monkeypatch):
    ok = json.dumps({"ok": True}).encode()
    frame = struct.pack(">I", len(ok)) + ok
    fake = ("import sys\nr = sys.stdin.buffer\nn = int.from_bytes(r.read(4), 'big')\nr.read(n)\n"
            f"sys.stdout.buffer.write({frame!r})\nsys.stdout.buffer.flush()\n"
            "n = int.from_bytes(r.read(4), 'big')\nr.read(n)\n"
            f"sys.stdout.buffer.write({frame!r} + (8).to_bytes(4, 'big') + bytes(8))\nsys.stdout.buffer.flush()\n")
    monkeypatch.setattr(sandbox, "_WORKER_SOURCE", fake)
    worker = sandbox.RewardWorker(reward("return 0.0"), LIMITS)
    with pytest.raises(sandbox.SandboxError, match="malformed reply"):
        worker.evaluate({k: v[:1] for k, v in SAMPLES[0].items()}, 0.5)


def test_cli_accepts_the_example_and_rejects_a_hostile_file(tmp_path):
    example = paths.PACKAGE_DIR / "maestro" / "sandbox" / "reward_example.py"
    hostile = tmp_path / "hostile.py"
    hostile.write_text(reward("return ().__class__.__bases__[0].__subclasses__()"))
    results = {}
    for path in (example, hostile):
        done = subprocess.run(
            [sys.executable, "-m", "marlinkit", "check-reward", str(path), "--json", "--cpu-seconds", "5"],
            capture_output=True, text=True, timeout=120, cwd=paths.REPO_ROOT,
        )
        results[path.name] = (done.returncode, json.loads(done.stdout.strip().splitlines()[-1]))
    code, result = results["reward_example.py"]
    assert code == 0 and result["accepted"] and result["stage"] is None and result["exit_code"] == 0
    assert result["sample_outputs"]["n"] == 2 * 360 * 16 + 64 and result["sample_outputs"]["non_finite"] == 0
    code, result = results["hostile.py"]
    assert code == 1 and not result["accepted"] and result["stage"] == "syntax"
    assert "__class__" in result["reason"] and "__subclasses__" in result["reason"]
