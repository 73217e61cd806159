"""The reward checker itself: bounded before it works, one verdict at any depth, every cost metered, safety beyond the rows."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marlinkit import paths
from marlinkit.maestro import sandbox
from marlinkit.maestro.sandbox import static_check

LIMITS = sandbox.SandboxLimits(cpu_seconds=2, memory_bytes=128 * 2**20, wall_seconds=30.0)
SAMPLES = sandbox.sample_rollouts(16)
EXAMPLE = (paths.PACKAGE_DIR / "maestro" / "sandbox" / "reward_example.py").read_text()


def reward(body: str, signature: str = "compute_reward(metrics, difficulty)") -> str:
    return f"def {signature}:\n" + "".join(f"    {line}\n" for line in body.splitlines())


def _depth(source: str) -> int:
    best, stack = 0, [(ast.parse(source), 1)]
    while stack:
        node, depth = stack.pop()
        best = max(best, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return best


def _nested_minus(levels: int) -> str:
    return reward("return " + "-" * levels + "metrics['queue_length'] / 1000.0")


# ----- bounded before any work ---------------------------------------------------------------------

def test_size_limits_are_stated_and_checked_first():
    assert (static_check.MAX_AST_NODES, static_check.MAX_AST_DEPTH, sandbox.SandboxLimits().max_source_chars) == (
        2_000, 100, 20_000)
    # depth: the deepest program allowed passes, one level more is refused, with the measured depth in the message
    at_limit = next(_nested_minus(k) for k in range(200) if _depth(_nested_minus(k + 1)) > static_check.MAX_AST_DEPTH)
    assert _depth(at_limit) == static_check.MAX_AST_DEPTH
    sandbox.check_syntax(at_limit)
    with pytest.raises(sandbox.SandboxError, match=r"nests 101 levels deep \(limit 100\)"):
        sandbox.check_syntax(at_limit.replace("return -", "return --"))
    # nodes: a flat list, shallow but large
    wide = reward("xs = [" + ", ".join(["1.0"] * 1990) + "]\nreturn -metrics['queue_length'] / 100.0")
    with pytest.raises(sandbox.SandboxError, match=r"has 20\d\d syntax-tree nodes \(limit 2000\)"):
        sandbox.check_syntax(wide)
    # characters: refused before parsing, so even text that would not parse gets this reason
    with pytest.raises(sandbox.SandboxError, match=r"source has 20001 characters \(limit 20000\)"):
        sandbox.check_syntax("(" * 20_001)


@pytest.mark.parametrize("source,fragment", [
    (reward("q = metrics['delay']\nreturn " + " + ".join(["q"] * 400) + " * 0.0"), "levels deep"),  # a 400-term sum
    (reward("q = metrics['queue_length']\n" + "".join(f"{'if' if i == 0 else 'elif'} q == {i}:\n    return {-i / 400}\n"
                                                      for i in range(180)) + "return -1.0"), "levels deep"),  # a table
    (_nested_minus(330), "levels deep"),  # 330 unary minuses: ~420 characters
    (reward("return " + "(0 < " * 120 + "metrics['delay']" + " < 1)" * 120), "levels deep"),  # 120 nested chains
], ids=["sum-400", "elif-table-180", "minus-330", "chains-120"])
def test_honest_but_huge_programs_get_a_syntax_verdict_not_an_exception(source, fragment):
    start = time.monotonic()
    verdict = sandbox.validate(source, SAMPLES, LIMITS)
    assert (verdict.accepted, verdict.stage) == (False, "syntax") and fragment in verdict.reason
    assert time.monotonic() - start < 5


def test_chained_comparisons_are_rewritten_in_linear_size_and_evaluate_each_operand_once():
    def chain(levels):
        expression = "metrics['delay']"
        for _ in range(levels):
            expression = f"(0 <= {expression} < 2)"
        return reward(f"return -0.5 * float({expression})")

    sizes = [len(static_check.prepare(chain(k), 20_000)) for k in (10, 20, 30)]
    assert abs((sizes[2] - sizes[1]) - (sizes[1] - sizes[0])) <= 2 and sizes[2] < 1500  # ~41 characters a level
    # no node has two parents in the rewritten tree (the old rewrite shared every middle operand)
    metered = static_check._Meter().visit(ast.parse(chain(30)))
    parents = {}
    for parent in ast.walk(metered):
        for child in ast.iter_child_nodes(parent):
            if not isinstance(child, (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)):
                assert parents.setdefault(id(child), id(parent)) == id(parent)
    # the middle operand runs once: 1 (call) + 1 (f) + 2 comparisons; short-circuit: f never runs
    source = "def f(x):\n    return x\n\n" + reward("a = 0 <= f(metrics['delay']) < 2\nb = 1 < 0 < f(1)\nreturn -0.5 * a + b")
    with sandbox.RewardWorker(source, LIMITS) as worker:
        values = worker.evaluate({k: v[:1] for k, v in SAMPLES[0].items()}, 0.5)
        assert worker.last_ticks.tolist() == [1 + 1 + 2 + 1] and values.tolist() == [-0.5]
    verdict = sandbox.validate(chain(30), SAMPLES, LIMITS)
    assert verdict.accepted and verdict.sample_outputs == [-0.5] * 16


def test_one_deadline_bounds_the_whole_validation():
    limits = sandbox.SandboxLimits(cpu_seconds=60, wall_seconds=60.0, deadline_seconds=1.0, call_ticks=10**15,
                                   mean_ticks=1e15)
    start = time.monotonic()
    verdict = sandbox.validate(reward("while True:\n    pass"), SAMPLES, limits)
    assert (verdict.stage, verdict.reason) == ("execution", "validation deadline (1 s) exceeded")
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("source,samples", [
    (None, SAMPLES),
    (b"def compute_reward(metrics, difficulty):\n    return 0.0\n", SAMPLES),
    (EXAMPLE, ({"queue_length": np.zeros(3)}, np.zeros(3))),  # rows without the documented fields
    (EXAMPLE, (SAMPLES[0], np.zeros(5))),  # difficulties that do not match the rows
    ("\x00", SAMPLES),
], ids=["none", "bytes", "missing-fields", "bad-difficulty", "nul"])
def test_validate_returns_a_verdict_for_every_failure(source, samples):
    verdict = sandbox.validate(source, samples, LIMITS)
    assert isinstance(verdict, sandbox.Verdict) and not verdict.accepted and verdict.reason


# ----- one verdict at any stack depth --------------------------------------------------------------

def _at_depth(frames: int, source: str) -> dict:
    if frames > 0:
        return _at_depth(frames - 1, source)
    return _summary(sandbox.validate(source))


def _summary(verdict: sandbox.Verdict) -> dict:
    return {"accepted": verdict.accepted, "stage": verdict.stage, "reason": verdict.reason, "cost": verdict.cost}


def test_the_same_program_gets_the_same_verdict_from_the_cli_a_deep_stack_and_a_worker_process(tmp_path):
    deep_but_allowed = _nested_minus(88).replace("return ", "return max(-1.0, min(1.0, -(").rstrip() + ")))\n"
    deep_but_allowed = deep_but_allowed.replace("/ 1000.0", "/ 100.0")
    programs = {"deep": deep_but_allowed, "ladder": (Path(__file__).parent / "sandbox_attacks" /
                                                     "parent_elif_ladder_table.py").read_text()}
    room = sys.getrecursionlimit() - len(__import__("inspect").stack()) - 120  # leave validate() ~120 frames
    with ProcessPoolExecutor(1) as pool:
        in_process = {name: pool.submit(_at_depth, 0, source) for name, source in programs.items()}
        in_process = {name: future.result() for name, future in in_process.items()}
    for name, source in programs.items():
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        done = subprocess.run([sys.executable, "-m", "marlinkit", "check-reward", str(path), "--json"],
                              capture_output=True, text=True, timeout=120, cwd=paths.REPO_ROOT)
        cli = json.loads(done.stdout.strip().splitlines()[-1])
        here, deep = _at_depth(0, source), _at_depth(room, source)
        assert here == deep == in_process[name] == {key: cli[key] for key in here}, name
        assert done.returncode == (0 if here["accepted"] else 1)
    assert in_process["deep"]["accepted"] and not in_process["ladder"]["accepted"]


# ----- every cost metered --------------------------------------------------------------------------

def _ticks(body: str, prelude: str = "") -> float:
    with sandbox.RewardWorker(prelude + reward(body), LIMITS) as worker:
        worker.evaluate({k: v[:1] for k, v in SAMPLES[0].items()}, 0.5)
        return float(worker.last_ticks[0])


def test_builders_are_charged_for_what_they_build_and_costs_are_exact():
    assert _ticks("return 0.0") == 1
    assert _ticks("x = list(range(10))\nreturn 0.0") == 1 + 11 + 11 + 10  # call, range, list's walk, its output
    assert _ticks("x = sorted([3, 1, 2])\nreturn 0.0") == 1 + 4 + 3
    assert _ticks("x = dict(zip(['a', 'b'], [1, 2]))\nreturn 0.0") == 1 + 5 + 1 + 2 + 2  # zip, dict, pairs, output
    # a long loop body costs one tick per 16 nodes it runs, the reward's own body one per 128
    body = "x = 1.0\nfor i in range(10):\n    x = x * 0.5 + x * 0.25 - x * 0.125 + x * 0.0625\nreturn 0.0"
    assert _ticks(body) == 1 + 11 + 10 * 2


@pytest.mark.parametrize("body,ticks_at_least", [
    ("a = 2 ** 2000\nfor i in range(20):\n    b = a * a\nreturn 0.0", 20 * 64),  # 2,000-bit products
    ("a = 2 ** 2000\nb = 3 ** 1000\nfor i in range(8):\n    c = a * a // b\nreturn 0.0", 8 * (32 * 32 + 63 * 25) // 16),
    ("return float(pow(3, 2 ** 60 + 1, 2 ** 521 - 1) % 2) * 0.0", 61 * 3 * 81 // 16),  # modular power: per exponent bit
    ("return float(round(7 ** 1000, -500) % 2) * 0.0", 2 * 27 * 45 // 16),
    ("return float(int('7' * 1000) % 2) * 0.0", 1000 ** 2 // 4096),
], ids=["product", "division", "pow3", "round", "int-from-str"])
def test_big_integer_operations_are_charged_by_size(body, ticks_at_least):
    assert _ticks(body) >= ticks_at_least


@pytest.mark.parametrize("body,fragment", [
    ("return float(round(1, -2000))", "integer above 4096 bits"),
    ("return float(int('1' * 1300))", "integer above 4096 bits"),
    ("return float(sum([2 ** 4095] * 4))", "integer above 4096 bits"),
    ("return float(-(2 ** 4096 - 1) - 2 ** 4096)", "integer above 4096 bits"),
    ("return float(~(2 ** 4096 - 1) + 1)", "integer above 4096 bits"),
    ("return float(pow(2, 5000, 2 ** 5000 + 1))", "above 4096 bits"),
    ("return float(len('%s' % 'x'))", "string formatting with % is not allowed"),
    ("return float(len(sum([[1.0]], [])))", "sum() start must be a number"),
    ("return float((1, (2,)) == (1, (2,)))", "holds containers"),
    ("return float(max([(1.0, [2.0]), (1.0, [3.0])])[0])", "holds containers"),
    ("return float(sorted([[1.0], [2.0]], key=lambda v: [v])[0][0])", "holds containers"),
    ("return float({(1, (2,)): 1.0}[(1, (2,))])", "holds containers"),
    ("return float({2 ** 61: 1.0}[2 ** 61])", "below 2**61"),
    ("return float(dict([(2 ** 62, 1.0)])[2 ** 62])", "below 2**61"),
    ("return float({}.get(2 ** 70, 0.0))", "below 2**61"),
], ids=lambda v: v if not isinstance(v, str) or len(v) < 40 else None)
def test_what_cannot_be_charged_by_size_is_refused(body, fragment):
    verdict = sandbox.validate(reward(body), SAMPLES, LIMITS)
    assert verdict.stage == "execution" and fragment in verdict.reason, verdict.reason


def test_flat_keys_comparisons_and_orderings_still_work():
    body = ("table = {('a', 1): 0.5, 2: 0.25, 'q': 0.1}\n"
            "best = max([(0.2, 'a'), (0.5, 'b')])\n"
            "order = sorted([(2, 'x'), (1, 'y')])\n"
            "same = [1.0, 2.0] == [1.0, 2.0] and (1, 'a') in [(1, 'a')] and 'q' in table\n"
            "return -(table[('a', 1)] + table.get(2, 0.0) + best[0] + order[0][0] + same) / 10.0")
    verdict = sandbox.validate(reward(body), SAMPLES, LIMITS)
    assert verdict.accepted and verdict.sample_outputs == [-(0.5 + 0.25 + 0.5 + 1 + 1) / 10.0] * 16


# ----- nothing runs at import ----------------------------------------------------------------------

@pytest.mark.parametrize("source,accepted", [
    ("def burn():\n    return 1.0\n\n\n" + reward("return 0.0", "compute_reward(metrics: burn(), difficulty)"), False),
    ("def burn():\n    return 1.0\n\n\n" + reward("return 0.0", "compute_reward(metrics, difficulty) -> burn()"), False),
    ("def burn():\n    return 1.0\n\n\nX: burn() = 1.0\n" + reward("return 0.0"), False),
    (reward("y: [0] * 9 = 1.0\nreturn 0.0"), False),
    (reward("return 0.0", "compute_reward(metrics: dict, difficulty: float) -> float"), True),
    ("SCALE: float = 60.0\n" + reward("y: 'float' = 1.0\nreturn 0.0"), True),
], ids=["arg", "return", "module", "local", "names", "strings"])
def test_annotations_are_plain_names_or_strings_only(source, accepted):
    if accepted:
        sandbox.check_syntax(source)
    else:
        with pytest.raises(sandbox.SandboxError, match="annotation may only be a plain name or a string"):
            sandbox.check_syntax(source)


def test_the_reward_may_not_call_itself():
    source = reward("if difficulty > 2:\n    return compute_reward(metrics, difficulty - 1)\nreturn 0.0")
    with pytest.raises(sandbox.SandboxError, match="may not call or refer to itself"):
        sandbox.check_syntax(source)


# ----- safety beyond the recorded rows -------------------------------------------------------------

def test_probes_reach_beyond_the_recorded_rows():
    metrics, difficulty, n_real = sandbox.validation_rows()
    probes = sandbox.probe_rows(metrics, difficulty, n_real)
    q, t, held = (probes.metrics[name] for name in ("queue_length", "throughput", "phase_duration"))
    assert metrics["queue_length"][:n_real].max() == 69 and q.max() == sandbox.QUEUE_CAPACITY == 120
    assert metrics["phase_duration"][:n_real].max() < 58 and held.max() == 360
    assert t[probes.throughput_sweeps].max() == 12 > metrics["throughput"][:n_real].max()
    assert (np.diff(q[probes.queue_sweeps], axis=1) == 1).all() and (np.diff(t[probes.throughput_sweeps], axis=1) == 1).all()
    assert (q[probes.gridlock] == 120).all() and (t[probes.gridlock] == 0).all() and len(probes.gridlock) == 36
    again = sandbox.probe_rows(metrics, difficulty, n_real)
    assert all(np.array_equal(again.metrics[k], probes.metrics[k]) for k in sandbox.FIELD_NAMES)


def test_the_example_passes_every_rule_at_its_recorded_cost():
    verdict = sandbox.validate(EXAMPLE)
    assert verdict.accepted, verdict.reason
    # 7 ticks on every row, as recorded before the probes existed (README and the committed runs)
    assert verdict.cost == {"calls": 11_584, "total": 81_088.0, "max": 7.0, "mean": 7.0}


# Rewards a reference architect writes from the documented shaping terms: each one must pass.
TERMS = {
    "queue": "min(metrics['queue_length'] / 60.0, 1.0)",
    "pressure": "min(abs(metrics['pressure']) / 30.0, 1.0)",
    "waiting": "min(metrics['waiting_time'] / 120.0, 1.0)",
}


@pytest.mark.parametrize("penalties,flow", [
    (("queue",), 0.0), (("pressure",), 0.0), (("queue", "waiting"), 0.2), (("queue", "pressure", "waiting"), 0.3),
    (("pressure", "waiting"), 0.1),
], ids=lambda v: "+".join(v) if isinstance(v, tuple) else f"flow{v}")
def test_legitimate_shaping_rewards_are_accepted(penalties, flow):
    weight = 1.0 / len(penalties)
    lines = [f"{name} = {TERMS[name]}" for name in penalties]
    lines.append("flow = min(metrics['throughput'] / 3.0, 1.0)")
    lines.append("total = 0.0")
    lines.append("for term in [" + ", ".join(penalties) + "]:")
    lines.append(f"    total = total + {weight} * term")
    lines.append(f"return max(-1.0, min(1.0, {flow} * flow - total * (0.8 + 0.2 * difficulty)))")
    verdict = sandbox.validate(reward("\n".join(lines)))
    assert verdict.accepted, verdict.reason


# ----- the checker under random programs -----------------------------------------------------------

_LEAVES = st.sampled_from(["metrics['queue_length']", "metrics['delay']", "difficulty", "0.5", "2", "-1", "x",
                           "'q'", "(1, 2)", "[1.0]", "{'a': 1}", "True", "None", "10 ** 9", "2 ** 4000"])
_UNARY = ["-{}", "not {}", "~{}", "({})", "abs({})", "float({})", "int({})", "len({})", "sorted({})", "list({})",
          "tuple({})", "sum({})", "max({})", "min({})", "round({}, -3)", "[{}]", "({},)", "{{'k': {}}}",
          "[v for v in range(3) if {}]", "(lambda v: {})(1)", "{}[0]", "{}[1:]", "pow({}, 3, 7)", "'%s' % ({},)"]
_BINARY = ["{} + {}", "{} - {}", "{} * {}", "{} / {}", "{} // {}", "{} % {}", "{} ** {}", "{} << {}", "{} < {} <= 3",
           "{} == {}", "{} in {}", "{} if x else {}", "{} and {}", "{} or {}", "max({}, {})", "{{{}: {}}}", "[{}, {}]",
           "pow({}, {})", "dict(zip({}, {}))"]


def _expressions():
    return st.recursive(
        _LEAVES,
        lambda inner: st.one_of(
            st.tuples(st.sampled_from(_UNARY), inner).map(lambda p: p[0].format(p[1])),
            st.tuples(st.sampled_from(_BINARY), inner, inner).map(lambda p: p[0].format(p[1], p[2])),
            st.tuples(st.integers(1, 400), inner).map(lambda p: "-" * p[0] + p[1]),  # deep chains
        ),
        max_leaves=40,
    )


@st.composite
def _programs(draw):
    lines = ["x = " + draw(_expressions())]
    if draw(st.booleans()):
        lines += ["for i in range(3):", "    x = " + draw(_expressions())]
    lines.append("return " + draw(_expressions()))
    source = reward("\n".join(lines))
    return source[:draw(st.integers(200, 2_000))] if draw(st.integers(0, 9)) == 0 else source


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(_programs())
def test_every_random_program_gets_a_verdict_within_the_deadline(source):
    limits = sandbox.SandboxLimits(cpu_seconds=5, memory_bytes=128 * 2**20, wall_seconds=30.0, deadline_seconds=20.0)
    start = time.monotonic()
    verdict = sandbox.validate(source, SAMPLES, limits)
    assert isinstance(verdict, sandbox.Verdict) and verdict.reason
    assert time.monotonic() - start < limits.deadline_seconds + 2
    assert not any(clock in verdict.reason for clock in ("CPU time limit", "wall-clock timeout", "deadline"))


def test_a_reward_the_checker_now_refuses_gets_no_ticks_on_resume_instead_of_a_crash():
    from marlinkit.llm.backends.scripted import ScriptedBackend
    from marlinkit.maestro import architect

    synth = architect.RewardSynthesizer(ScriptedBackend(architect.scripted_architect_replies()))
    refused = (Path(__file__).parent / "sandbox_attacks" / "game_pays_for_gridlock.py").read_text()
    assert synth.episode_ticks(refused, 5760) == 0 and refused not in synth.costs
    assert synth.episode_ticks(EXAMPLE, 5760) == 28 * 5760  # 4 x the example's 7 ticks per call
