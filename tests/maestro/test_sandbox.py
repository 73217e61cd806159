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
    ("import", "import os\n" + reward("return 0.0"), "an import at module level is not in the reward language"),
    ("from-import", "from subprocess import run\n" + reward("return 0.0"), "an import at module level is not in the r"),
    ("import-inside", reward("import os\nreturn 0.0"), "an import is not in the reward language"),
    ("dunder-import", reward("x = __import__('os')\nreturn 0.0"), "a string ('os') is not in the reward language outs"),
    ("open", reward("open('/etc/passwd').read()\nreturn 0.0"), "a string ('/etc/passwd') is not in the reward languag"),
    ("eval", reward("return eval('1')"), "a string ('1') is not in the reward language outside me"),
    ("exec", reward("exec('x = 1')\nreturn 0.0"), "a string ('x = 1') is not in the reward language outsid"),
    ("compile", reward("return compile('1', 'f', 'eval')"), "a string ('1') is not in the reward language outside me"),
    ("globals", reward("return globals()"), "calling 'globals' is not in the reward language"),
    ("vars", reward("return vars()"), "calling 'vars' is not in the reward language"),
    ("getattr", reward("return getattr(metrics, '__class__')"), "a string ('__class__') is not in the reward language"),
    ("type", reward("return type(metrics)"), "calling 'type' is not in the reward language"),
    ("os-name", reward("return os.system('true')"), "a string ('true') is not in the reward language outside"),
    ("subprocess-name", reward("return subprocess.run(['true'])"), "a list is not in the reward language"),
    ("breakpoint", reward("breakpoint()\nreturn 0.0"), "calling 'breakpoint' is not in the reward language"),
    ("subclasses", reward("return ().__class__.__bases__[0].__subclasses__()"), "a tuple is not in the reward languag"),
    ("function-globals", reward("return compute_reward.__globals__"), "attribute access (.__globals__) is not in the"),
    ("builtins-dict", reward("return __builtins__['open']"), "the name '__builtins__' is not defined in the reward la"),
    ("lambda-code", reward("f = lambda: 0\nreturn f.__code__"), "a lambda is not in the reward language"),
    ("format-escape", reward("return '{0.__class__}'.format(metrics)"), "a string ('{0.__class__}') is not in the rew"),
    ("f-string", reward("return f'{metrics}'"), "an f-string is not in the reward language"),
    ("generator-frame", reward("g = (x for x in [1])\nreturn g.gi_frame.f_back.f_globals"), "a generator expression i"),
    ("math-module-attr", reward("return math.sys"), "attribute access (.sys) is not in the reward language ("),
    ("math-dunder", reward("return math.__loader__"), "attribute access (.__loader__) is not in the reward lan"),
    ("shadow-builtin", reward("max = metrics.get\nreturn 0.0"), "attribute access (.get) is not in the reward languag"),
    ("shadow-math", "math = 1\n" + reward("return 0.0"), "the name 'math' is reserved (a builtin or a provided fu"),
    ("class", "class A:\n    pass\n" + reward("return 0.0"), "a class at module level is not in the reward language ("),
    ("try", reward("try:\n    return 1.0\nexcept Exception:\n    return 0.0"), "try is not in the reward language"),
    ("raise", reward("raise SystemExit"), "raise is not in the reward language"),
    ("with", reward("with open('x') as f:\n    return 0.0"), "a string ('x') is not in the reward language outside me"),
    ("global", reward("global x\nreturn 0.0"), "global is not in the reward language"),
    ("yield", reward("yield 1.0"), "yield is not in the reward language"),
    ("delete", reward("del metrics\nreturn 0.0"), "del is not in the reward language"),
    ("decorator", "@staticmethod\n" + reward("return 0.0"), "a decorator is not in the reward language"),
    ("bytes", reward("return len(b'x')"), "calling 'len' is not in the reward language"),
    ("syntax-error", "def compute_reward(metrics, difficulty)\n    return 0.0\n", "does not parse: SyntaxError: expec"),
    ("nesting-bomb", reward("return " + "(" * 500 + "1" + ")" * 500), "does not parse: SyntaxError: too many nested p"),
    ("too-long", reward("return 0.0\n" + "x = 1\n" * 5000), "the source has 50056 characters (limit 20000)"),
    ("missing-function", reward("return 0.0", "reward(metrics, difficulty)"), "no top-level function compute_reward(m"),
    ("async-function", "async " + reward("return 0.0"), "an async def at module level is not in the reward langu"),
    ("one-parameter", reward("return 0.0", "compute_reward(metrics)"), "compute_reward must take exactly two position"),
    ("three-parameters", reward("return 0.0", "compute_reward(metrics, difficulty, extra)"), "compute_reward must tak"),
    ("varargs", reward("return 0.0", "compute_reward(*args)"), "*args, **kwargs and keyword-only parameters are not i"),
    ("kwargs", reward("return 0.0", "compute_reward(metrics, difficulty, **kw)"), "*args, **kwargs and keyword-only p"),
    ("defaults", reward("return 0.0", "compute_reward(metrics, difficulty=0.5)"), "a default argument value is not in"),
    ("top-level-loop", "while True:\n    pass\n" + reward("return 0.0"), "a while loop at module level is not in the"),
    ("nested-only", "def outer():\n" + "\n".join("    " + l for l in reward("return 0.0").splitlines()), "a nested de"),
]

# (id, source, stage, reason fragment): programs the metered design stopped while running or in its safety
# stage. The language refuses most of them before anything runs; what still runs fails on its first row
# without a finite value, or in the safety stage.
RUNTIME_CORPUS = [
    ("memory-bomb-list", reward("x = [0] * 10**9\nreturn 0.0"), "syntax", "a list is not in the reward language"),
    ("memory-bomb-str", reward("x = 'a' * 10**10\nreturn 0.0"), "syntax", "a string ('a') is not in the reward langua"),
    ("power-bomb", reward("return 2 ** (10 ** 10)"), "execution", "EvaluationError: '**' gives a value that is not fi"),
    ("recursion-bomb", "def f(x):\n    return f(x)\n" + reward("return f(1)"), "syntax", "recursion is not in the rew"),
    ("huge-int-output", reward("return 10 ** 400"), "execution", "EvaluationError: '**' gives a value that is not fin"),
    ("list-output", reward("return [0.0] * 1000"), "syntax", "a list is not in the reward language"),
    ("string-output", reward("return 'high'"), "syntax", "a string ('high') is not in the reward language outside"),
    ("no-return", reward("x = 1"), "syntax", "compute_reward can reach its end without a return (Pyth"),
    ("huge-error-message", reward("return metrics['x' * 1000]"), "syntax", "a string ('x') is not in the reward langu"),
    ("missing-field", reward("return metrics['speed']"), "syntax", "unknown metric 'speed'"),
    ("division-by-zero", reward("return 1.0 / metrics['queue_length']"), "execution", "EvaluationError: division by z"),
    ("math-domain", reward("return math.log(metrics['queue_length'])"), "execution", "EvaluationError: log() gives a"),
    ("unbound-at-runtime", reward("if difficulty > 2:\n    y = 1\nreturn y"), "syntax", "'y' is read before it is ass"),
    ("nan", reward("return float('nan')"), "syntax", "a string ('nan') is not in the reward language outside"),
    ("inf", reward("return float('inf')"), "syntax", "a string ('inf') is not in the reward language outside"),
    ("overflow-to-inf", reward("return 1e308 * 10"), "safety", "16 of 16 values are not finite (first: inf)"),
    ("nan-at-high-difficulty", reward("return 0.0 if difficulty < 0.9 else float('nan')"), "syntax", "a string ('nan'"),
    ("out-of-range", reward("return 5.0"), "safety", "|value| reaches 5, outside [-1, 1]"),
    ("unscaled-queue", reward("return -metrics['queue_length']"), "safety", "|value| reaches 120, outside [-1, 1]"),
    ("infinite-loop", reward("while True:\n    pass"), "syntax", "a while loop is not in the reward language"),
    ("huge-range", reward("return sum(i for i in range(10 ** 12)) * 0.0"), "syntax", "a generator expression is not i"),
    ("endless-recursion-tree", "def f(n):\n    return f(n + 1) + f(n + 2) if n < 60 else 0\n" + reward("return f(0)"),
     "syntax", "recursion is not in the reward language (f -> f)"),
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


@pytest.mark.parametrize("name,source,stage,fragment", RUNTIME_CORPUS, ids=_ids(RUNTIME_CORPUS))
def test_programs_the_metered_design_ran_are_refused_or_fail_on_their_first_bad_row(name, source, stage, fragment):
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert (verdict.accepted, verdict.stage) == (False, stage), verdict
    assert fragment in verdict.reason
    assert len(verdict.reason) < 800  # error text is bounded, never the attacker's megabytes


def _busy(rows: int) -> tuple[dict[str, np.ndarray], str]:
    """Rows, and a long (legal) program: enough work per batch to reach a CPU or wall-clock backstop."""
    metrics, _ = sandbox.sample_rollouts(rows, seed=2)
    helper = "def h(x):\n    return " + " + ".join(f"tanh(x * {i + 1}.0)" for i in range(30)) + "\n\n"
    calls = " + ".join(f"h(metrics['delay'] + {i}.0)" for i in range(3))
    return metrics, helper + reward(f"return -0.0001 * ({calls})")


def test_the_per_episode_cpu_budget_is_a_hard_limit():
    """Training's second layer: a worker's whole life (one episode) gets ``episode_cpu_seconds`` of CPU."""
    metrics, source = _busy(100_000)
    with sandbox.RewardWorker(source, sandbox.SandboxLimits(), cpu_seconds=1) as worker:
        assert _limits_of(worker.pid)["Max cpu time"][:2] == ["1", "1"]  # hard = soft
        with pytest.raises(sandbox.SandboxError, match=r"CPU time limit \(1 s\) exceeded"):
            for _ in range(200):
                worker.evaluate_raw(metrics, 0.5)
        assert not worker.alive


def test_wall_clock_timeout_kills_before_the_cpu_limit():
    metrics, source = _busy(100_000)
    limits = sandbox.SandboxLimits(cpu_seconds=60, wall_seconds=0.01)
    start = time.monotonic()
    with sandbox.RewardWorker(source, sandbox.SandboxLimits(cpu_seconds=60)) as ready:
        ready.limits = limits  # started under the default timeout; the batch gets 10 ms
        with pytest.raises(sandbox.SandboxError, match=r"wall-clock timeout \(0.01 s\)"):
            ready.evaluate_raw(metrics, 0.5)
    assert time.monotonic() - start < 10


def _reference(source, metrics, difficulty):
    """The same code run in this process with real builtins: what the sandbox must reproduce."""
    namespace = {"math": math}
    exec(source, namespace)
    function = namespace["compute_reward"]
    return [function({k: float(v[i]) for k, v in metrics.items()}, float(difficulty[i]))
            for i in range(len(difficulty))]


def test_the_shipped_example_is_accepted_with_exact_values():
    source = (paths.PACKAGE_DIR / "maestro" / "sandbox" / "reward_example.py").read_text()
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert verdict.accepted and verdict.stage is None, verdict
    assert verdict.sample_outputs == _reference(source, *SAMPLES)
    assert len(set(verdict.sample_outputs)) > 8  # it responds to its inputs
    assert set(verdict.timings) == set(sandbox.STAGES)


def test_well_formed_rewards_using_the_language_compute_what_python_computes():
    source = (
        "SCALE = 120.0\n\n"
        "def norm(x, top):\n    return min(x / top, 1.0)\n\n"
        "def compute_reward(metrics, difficulty):\n"
        "    parts = norm(metrics['queue_length'], SCALE) + norm(metrics['delay'], 1.0)\n"
        "    bonus = math.tanh(metrics['throughput']) * 0.1 if difficulty > 0.5 else 0\n"
        "    q = metrics['queue_length']\n"
        "    band = (q >= 10.0) + (q >= 40.0) + (0 <= q < 80.0)\n"
        "    if band > 2 and difficulty < 0.9:\n"
        "        bonus -= 0.05\n"
        "    elif not band:\n"
        "        bonus += -0.01 * q ** 0.5\n"
        "    return max(-1.0, min(1.0, bonus - 0.5 * parts - 0.01 * band))\n"
    )
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert verdict.accepted, verdict
    assert verdict.sample_outputs == pytest.approx(_reference(source, *SAMPLES), abs=1e-15)


def test_hand_computed_values_come_back_in_row_order():
    metrics = {name: np.zeros(3) for name in sandbox.FIELD_NAMES}
    metrics["queue_length"] = np.array([0.0, 60.0, 120.0])
    source = reward("return -metrics['queue_length'] / 120.0 + 0.5 * (difficulty - 0.3)")
    verdict = sandbox.validate(source, (metrics, np.array([0.3, 0.5, 1.0])), LIMITS)
    assert verdict.accepted
    assert verdict.sample_outputs == pytest.approx([0.0, -0.4, -0.65])
    assert sandbox.validate(reward("return True"), SAMPLES, LIMITS).sample_outputs == [1.0] * 16


def test_worker_evaluates_many_batches_then_fails_closed_into_the_fallback():
    # Accepted on the documented ranges, but without a value for a queue longer than any sample has.
    source = reward("q = metrics['queue_length']\nif q > 200:\n    return log(200.0 - q)\nreturn -q / 120.0")
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
        assert failure.value.stage == "execution" and "log() gives a value that is not finite" in str(failure.value)
        assert not worker.alive
    state = curriculum.record_runtime_failure(state)
    r_env = np.full(16, -3.0)
    assert np.array_equal(curriculum.training_reward(r_env, None, 0.5, state), r_env)


def test_the_cost_is_the_programs_size_not_a_measurement():
    small = sandbox.validate(reward("return -metrics['queue_length'] / 120.0"), SAMPLES, LIMITS)
    helper = "def h(x):\n    return x / 120.0\n\n" + reward("return -h(metrics['queue_length']) - h(0.0)")
    inlined = sandbox.validate(helper, SAMPLES, LIMITS)
    assert small.cost == {"rows": 16, "nodes": 15} and inlined.cost["nodes"] > small.cost["nodes"]


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
    with (sandbox.RewardWorker(reward("return 0.0"), LIMITS) as first,
          sandbox.RewardWorker(reward("return 0.0"), LIMITS) as second):
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


def _raw_worker(code: str) -> dict:
    """The worker's own lock-in, then ``code`` run as Python: the second layer alone, as if the language failed."""
    harness = ("\n    isolation = _lock_in(5, 256 * 2**20, int(sys.argv[3]))\n    try:\n"
               f"        exec({code!r}, {{}})\n        reply = {{'ok': True, 'isolation': isolation}}\n"
               "    except BaseException as error:\n        reply = {**_error(error), 'isolation': isolation}\n"
               "    _write_json(sys.stdout.buffer, reply)\n")
    source = sandbox._WORKER_SOURCE.replace("\n    main()\n", harness)
    assert source != sandbox._WORKER_SOURCE
    command = [sys.executable, "-I", "-c", source, "5", str(256 * 2**20), str(os.getpid()), sandbox._LANGUAGE_PATH]
    done = subprocess.run(command, capture_output=True, timeout=30, env={})
    return json.loads(done.stdout[4:])


def test_a_worker_cannot_signal_a_sibling_worker():
    with sandbox.RewardWorker(reward("return 0.0"), LIMITS) as victim:
        reply = _raw_worker(f"import os, signal\nos.kill({victim.pid}, signal.SIGKILL)")
        assert reply["ok"] is False and "PermissionError" in reply["error"]
        assert victim.alive and victim.evaluate({k: v[:1] for k, v in SAMPLES[0].items()}, 0.5).tolist() == [0.0]


def test_a_worker_cannot_raise_its_own_limits():
    reply = _raw_worker("import resource\nresource.setrlimit(resource.RLIMIT_CPU, (100, 100))")
    assert "ValueError" in reply["error"] and "not allowed to raise maximum limit" in reply["error"]
    reply = _raw_worker("import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))")
    assert "ValueError" in reply["error"]


def test_reads_and_file_creation_are_denied_where_landlock_is_available():
    isolation = _raw_worker("def compute_reward(metrics, difficulty):\n    return 0.0")["isolation"]
    read = _raw_worker("import os\nos.close(2)\nopen('/etc/hostname').read()")  # free a descriptor first
    create = _raw_worker("import os\nos.close(2)\nopen('/tmp/marlinkit-sandbox-probe', 'w')")
    listing = _raw_worker("import os\nos.close(2)\nos.listdir('/')")
    if not isolation["landlock_abi"]:
        pytest.skip("kernel without Landlock: reads are limited by the namespace and 3 descriptors only")
    assert "PermissionError" in read["error"] and "PermissionError" in create["error"]
    assert "PermissionError" in listing["error"]
    assert not Path("/tmp/marlinkit-sandbox-probe").exists()


def test_workers_die_with_their_parent():
    # The parent keeps its worker busy with large batches, so it is computing, not waiting on its pipe.
    script = (
        "import sys\nsys.path.insert(0, 'tests/maestro')\nfrom test_sandbox import _busy\n"
        "from marlinkit.maestro import sandbox\n"
        "rows, source = _busy(100000)\n"
        "w = sandbox.RewardWorker(source, sandbox.SandboxLimits(cpu_seconds=120, wall_seconds=120.0))\n"
        "print(w.pid, flush=True)\n"
        "while True:\n    w.evaluate_raw(rows, 0.5)\n"
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
            f"sys.stdout.buffer.write({frame!r} + (16).to_bytes(4, 'big') + bytes(16))\nsys.stdout.buffer.flush()\n")
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
