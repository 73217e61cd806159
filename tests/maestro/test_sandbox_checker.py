"""The reward checker: the language's bounds, its vectorised semantics, one verdict everywhere, corpora, search."""

from __future__ import annotations

import ast
import json
import resource
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
from marlinkit.maestro import reference_architect as ref
from marlinkit.maestro import sandbox
from marlinkit.maestro.sandbox import language, reward_rows

LIMITS = sandbox.SandboxLimits(cpu_seconds=2, memory_bytes=256 * 2**20, wall_seconds=30.0)
SAMPLES = sandbox.sample_rollouts(16)
EXAMPLE = (paths.PACKAGE_DIR / "maestro" / "sandbox" / "reward_example.py").read_text()
CORPUS = Path(__file__).parent / "reward_corpus"
HONEST = sorted((CORPUS / "honest").glob("*.py"))
HOSTILE = sorted((CORPUS / "hostile").glob("*.py"))


def reward(body: str, signature: str = "compute_reward(metrics, difficulty)") -> str:
    return f"def {signature}:\n" + "".join(f"    {line}\n" for line in body.splitlines())


def _program(source: str) -> language.Program:
    return language.load(source, sandbox.FIELD_NAMES)


def _rows(**columns) -> dict[str, np.ndarray]:
    n = len(next(iter(columns.values())))
    return {name: np.asarray(columns.get(name, np.zeros(n)), dtype=float) for name in sandbox.FIELD_NAMES}


def _nested_minus(levels: int) -> str:
    return reward("return " + "-" * levels + "metrics['queue_length'] / 1000.0")


# ----- bounded before any work ---------------------------------------------------------------------

def test_size_limits_are_stated_and_checked_first():
    assert (language.MAX_AST_NODES, language.MAX_AST_DEPTH, sandbox.SandboxLimits().max_source_chars) == (
        2_000, 100, 20_000)
    at_limit = next(_nested_minus(k) for k in range(200)
                    if language.tree_size(ast.parse(_nested_minus(k + 1)))[1] > language.MAX_AST_DEPTH)
    assert language.tree_size(ast.parse(at_limit))[1] == language.MAX_AST_DEPTH
    sandbox.check_syntax(at_limit)
    with pytest.raises(sandbox.SandboxError, match=r"nests 101 levels deep \(limit 100\)"):
        sandbox.check_syntax(at_limit.replace("return -", "return --"))
    wide = reward("return -metrics['queue_length'] * 0.0" + " + 1.0" * 700)
    with pytest.raises(sandbox.SandboxError, match=r"has 2\d\d\d syntax-tree nodes \(limit 2000\)"):
        sandbox.check_syntax(wide.replace(" + 1.0", " + (1.0)"))
    with pytest.raises(sandbox.SandboxError, match=r"source has 20001 characters \(limit 20000\)"):
        sandbox.check_syntax("(" * 20_001)


def test_unrolling_and_inlined_helpers_are_bounded_by_the_program_size():
    nested = reward("t = 0.0\nfor a in metrics:\n    for b in metrics:\n        for c in metrics:\n"
                    "            for d in metrics:\n                t += metrics[a] * 0.0\nreturn t")
    start = time.process_time()
    with pytest.raises(language.LanguageError, match="more than 6000 nodes after unrolling"):
        _program(nested)
    assert time.process_time() - start < 1.0  # refused before it writes the copies
    doubling = "def h0(x):\n    return x\n" + "".join(f"def h{i}(x):\n    return h{i - 1}(x) + h{i - 1}(x)\n"
                                                    for i in range(1, 16)) + reward("return h15(0.0)")
    with pytest.raises(language.LanguageError, match=r"runs through \d+ nodes with the helpers inlined"):
        _program(doubling)


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


# ----- the language: what it refuses, by name and line ---------------------------------------------

@pytest.mark.parametrize("body,construct,line", [
    ("x = 0.0\nfor i in range(3):\n    x += i\nreturn x", "a for loop", 3),
    ("x = [metrics['delay']]\nreturn x[0]", "a list", 2),
    ("return {1.0}.pop()", "a set", 2),
    ("return metrics.copy()['delay']", "attribute access (.copy)", 2),
    ("return max(1.0, 2.0, key=abs)", "a keyword argument (key=...)", 2),
    ("return 'slow' if metrics['delay'] > 0.5 else 0.0", "a string ('slow')", 2),
    ("return sum(x for x in (1.0, metrics['delay']) if x > 0)", "a generator expression", 2),
    ("y = (lambda: 1.0)()\nreturn y", "a lambda", 2),
    ("return metrics['delay'] if metrics['delay'] is not None else 0.0", "the operator 'is not'", 2),
    ("return getattr(metrics, 'x')", "calling 'getattr'", 2),
], ids=["loop", "list", "set", "attribute", "keyword", "string", "generator", "lambda", "is", "builtin"])
def test_a_construct_outside_the_language_is_named_with_its_line(body, construct, line):
    with pytest.raises(language.LanguageError) as caught:
        _program(reward(body))
    assert f"line {line}: {construct}" in str(caught.value)


def test_the_checker_keeps_each_functions_names_in_its_own_scope():
    """A helper's parameter named like a builtin is refused everywhere it appears, not counted as a definition."""
    for name in ("getattr", "type", "open", "min"):
        with pytest.raises(language.LanguageError, match=f"the name '{name}' is reserved"):
            _program(f"def helper({name}):\n    return 0.0\n\n" + reward("return helper(1.0)"))
    with pytest.raises(language.LanguageError, match="line 5: the name 'scale' is not defined"):
        _program("def helper(scale):\n    return scale\n\n" + reward("return -metrics['delay'] * scale"))
    with pytest.raises(language.LanguageError, match=r"recursion is not in the reward language \(a -> b -> a\)"):
        _program("def a(x):\n    return b(x)\n\ndef b(x):\n    return a(x)\n\n" + reward("return a(1.0)"))


# ----- vectorised semantics: the value Python would compute, row by row -----------------------------

def test_an_untaken_branch_is_neither_an_error_nor_an_inf():
    program = _program(reward("t = metrics['throughput']\nif t > 0:\n    return 1.0 / t\n"
                              "return 0.0 if t > 0 else -math.log(t + 1.0) + 1.0 / (t + 2.0)"))
    values = program(_rows(throughput=[0.0, 2.0, 4.0]), 0.5)
    assert values.tolist() == [0.5, 0.5, 0.25]
    guarded = _program(reward("q = metrics['queue_length']\nreturn metrics['waiting_time'] / q if q > 0 else 0.0"))
    assert guarded(_rows(queue_length=[0.0, 4.0], waiting_time=[3.0, 8.0]), 0.5).tolist() == [0.0, 2.0]
    short = _program(reward("q = metrics['queue_length']\nreturn float(q > 0 and 10.0 / q > 1.0)"))
    assert short(_rows(queue_length=[0.0, 5.0, 20.0]), 0.5).tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(language.EvaluationError, match=r"division by zero \(line 3\)") as caught:
        _program(reward("q = metrics['queue_length']\nreturn 1.0 / q"))(_rows(queue_length=[1.0, 0.0]), 0.5)
    assert caught.value.row == 1


def test_vectorised_values_equal_python_row_by_row_on_the_corpus():
    """Each honest reward, run by Python itself one row at a time, gives the language's values to the last bit
    or within 1e-12 (NumPy's transcendental functions may round differently)."""
    rng = np.random.default_rng(3)
    rows = _rows(**{name: rng.uniform(low, high, 64) for name, (low, high, _) in sandbox.DOMAIN.items()})
    rows["phase"] = np.round(rows["phase"])
    difficulty = rng.choice([0.3, 0.65, 1.0], 64)
    import math
    for path in HONEST:
        source = path.read_text()
        namespace = {"math": math, "np": np, **{name: getattr(math, name) for name in ("exp", "log", "log1p",
                                                                                       "sqrt", "tanh", "floor")}}
        exec(compile(source, str(path), "exec"), namespace)  # the corpus is ours: trusted here
        expected = [namespace["compute_reward"]({k: float(v[i]) for k, v in rows.items()}, float(difficulty[i]))
                    for i in range(64)]
        np.testing.assert_allclose(_program(source)(rows, difficulty), expected, rtol=1e-12, atol=1e-12,
                                   err_msg=path.stem)


def test_rewrites_are_noted_and_the_rewritten_program_needs_none():
    program = _program((CORPUS / "honest" / "items_loop_names.py").read_text())
    assert program.notes == ("line 4: the for loop over metrics.items() is unrolled over its 8 items",)
    assert "metrics['queue_length']" in program.source and "for " not in program.source
    again = _program(program.source)
    assert again.notes == () and again.source == program.source


# ----- one verdict everywhere ------------------------------------------------------------------------

def _summary(verdict: sandbox.Verdict) -> dict:
    return {"accepted": verdict.accepted, "stage": verdict.stage, "reason": verdict.reason, "cost": verdict.cost,
            "counterexample": verdict.counterexample}


def _validate_file(path: str) -> dict:
    return _summary(sandbox.validate(Path(path).read_text()))


def _at_depth(frames: int, source: str) -> dict:
    if frames > 0:
        return _at_depth(frames - 1, source)
    return _summary(sandbox.validate(source))


def test_the_verdict_is_the_same_in_ten_fresh_worker_processes():
    """Accepted, refused by the search (with its counterexample) and refused by the language: each the same in
    ten processes that each start their own sandbox worker, and the same from a deep stack."""
    names = ["exponential_decay", "probe_pays_for_consistent_jam", "order_key_intersection"]
    files = [str(next(p for p in HONEST + HOSTILE if p.stem == name)) for name in names]
    with ProcessPoolExecutor(2, max_tasks_per_child=1) as pool:
        runs = [[pool.submit(_validate_file, path) for _ in range(10)] for path in files]
        runs = [[future.result() for future in futures] for futures in runs]
    for name, path, verdicts in zip(names, files, runs):
        assert all(v == verdicts[0] for v in verdicts), name
        room = sys.getrecursionlimit() - len(__import__("inspect").stack()) - 120
        assert _at_depth(room, Path(path).read_text()) == verdicts[0], name
    assert [v[0]["accepted"] for v in runs] == [True, False, False]
    assert runs[1][0]["counterexample"]["property"] in sandbox.PROPERTIES


@settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(["queue_length", "waiting_time", "throughput", "delay"]), min_size=1, max_size=4),
       st.lists(st.floats(-0.05, 0.05, allow_nan=False), min_size=4, max_size=4))
def test_the_search_verdict_is_a_function_of_the_program(names, weights):
    """Random weighted sums: the verdict repeats to the counterexample, and a sum whose signs respect every
    property is accepted while one that pays for queues or penalises departures is refused."""
    terms = " + ".join(f"{w!r} * metrics['{n}']" for n, w in zip(names, weights))
    source = reward(f"return max(-1.0, min(1.0, {terms}))")
    first, second = sandbox.validate(source), sandbox.validate(source)
    assert _summary(first) == _summary(second)
    signs = {"queue_length": -1, "waiting_time": -1, "delay": -1, "throughput": 1}
    total = {n: sum(w for m, w in zip(names, weights) if m == n) for n in set(names)}
    wrong = any(signs[n] * w < -1e-12 for n, w in total.items())
    if wrong:
        assert not first.accepted
    spread = 170 * max(abs(w) * {"queue_length": 69, "waiting_time": 300, "throughput": 6, "delay": 1}[n]
                       for n, w in total.items())
    if not wrong and spread > 2.0 and total.get("throughput", 0.0) * 12 + 1e-9 < 1.0:
        assert first.accepted, first.reason


def test_cli_verdicts_match_validate_within_five_seconds(tmp_path):
    for path in (HONEST[0], next(p for p in HOSTILE if p.stem == "probe_starves_left_turns")):
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "marlinkit", "check-reward", str(path), "--json"],
                              capture_output=True, text=True, timeout=60, cwd=paths.REPO_ROOT)
        assert time.monotonic() - start < 5.0
        cli = json.loads(done.stdout.strip().splitlines()[-1])
        here = _validate_file(str(path))
        assert {key: cli[key] for key in here} == here
        assert done.returncode == (0 if here["accepted"] else 1)


# ----- the corpora -----------------------------------------------------------------------------------

def test_the_honest_corpus_is_accepted_as_written_or_after_the_automatic_rewrites():
    verdicts = {path.stem: sandbox.validate(path.read_text()) for path in HONEST}
    accepted = [name for name, verdict in verdicts.items() if verdict.accepted]
    assert len(HONEST) >= 30 and len(accepted) / len(HONEST) >= 0.95, {
        name: v.reason for name, v in verdicts.items() if not v.accepted}
    assert sum(bool(v.rewrites) for v in verdicts.values()) >= 10  # the rewrites carry a third of them
    # the one refused asks for a phase-timing term the prompt did not ask for; allowed, it passes
    assert {name for name in verdicts if name not in accepted} <= {"phase_switch_penalty"}
    asked = sandbox.SandboxLimits(phase_terms=True)
    assert sandbox.validate((CORPUS / "honest" / "phase_switch_penalty.py").read_text(), limits=asked).accepted


def test_the_reference_architects_family_is_accepted():
    rng = np.random.default_rng(0)
    for i in range(12):
        d = float(rng.choice([0.3, 0.45, 0.55, 0.75, 1.0]))
        stats = {"target": 67.5, "window_mean": float(rng.uniform(-60, 130)), "avg_delay_s": float(rng.uniform(20, 80))}
        source = ref.reward_source(d, ref.reward_coefficients(d, stats, np.random.default_rng(i)))
        verdict = sandbox.validate(source)
        assert verdict.accepted and not verdict.rewrites, (source, verdict.reason)


def _expectation(path: Path) -> tuple[str, str, str]:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# class: "), path
    kind, expected = first.removeprefix("# class: ").split(" | expect: ")
    stage, fragment = expected.split(" | ", 1)
    return kind, stage, fragment


def test_the_hostile_corpus_covers_every_attack_class():
    classes = {_expectation(p)[0] for p in HOSTILE}
    assert {"unmetered work", "verdicts that change between runs", "reward hacking the probes missed",
            "the static check mixes scopes"} <= classes
    assert {_expectation(p)[1] for p in HOSTILE} == set(sandbox.STAGES)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
def test_each_hostile_program_is_refused_at_its_stage_within_a_second_of_cpu(path):
    _, stage, fragment = _expectation(path)
    cpu = time.process_time() + _children_cpu()
    verdict = sandbox.validate(path.read_text())
    cpu = time.process_time() + _children_cpu() - cpu
    assert (verdict.accepted, verdict.stage) == (False, stage), verdict.reason
    assert fragment in verdict.reason, verdict.reason
    assert cpu < 1.0, f"{cpu:.2f} CPU-s"
    if stage == "safety" and verdict.counterexample:
        found = verdict.counterexample
        assert found["property"] in sandbox.PROPERTIES and 0.3 <= found["difficulty"] <= 1.0


# ----- costs ----------------------------------------------------------------------------------------

def _episode_cpu(source: str) -> float:
    """CPU of one 360-s training episode, parent and worker, the worker's start included: 360 calls of 16 rows."""
    metrics, _ = reward_rows.load()
    episode = {name: column[:5760].reshape(360, 16) for name, column in metrics.items()}
    start = time.process_time() + _children_cpu()
    with sandbox.RewardWorker(source, cpu_seconds=sandbox.SandboxLimits().episode_cpu_seconds) as worker:
        for second in range(360):
            worker.evaluate({name: rows[second] for name, rows in episode.items()}, 0.65)
    return time.process_time() + _children_cpu() - start


def test_validation_under_a_second_of_cpu_and_an_episode_under_half_a_second():
    source = (CORPUS / "honest" / "helper_functions.py").read_text()
    sandbox.validate(source)  # imports and caches warm
    cpu = time.process_time() + _children_cpu()
    verdict = sandbox.validate(source)
    cpu = time.process_time() + _children_cpu() - cpu
    assert verdict.accepted and cpu < 1.0, f"validation: {cpu:.2f} CPU-s"
    episode = _episode_cpu(source)
    assert episode < 0.5, f"an episode: {episode:.2f} CPU-s"


def test_the_largest_program_the_language_allows_stays_within_the_episode_budget():
    """Conditional expressions cost the most per node; a program of them at the size limit, measured ~0.4 CPU-s an
    episode on the development machine, must stay far inside the per-episode CPU limit (5 s)."""
    helper = "def h(x):\n    return " + " + ".join(f"(x if x > {k}.0 else -x)" for k in range(5)) + "\n\n"
    calls = lambda n: " + ".join(f"h(metrics['delay'] + {i}.0)" for i in range(n))  # noqa: E731
    program = lambda n: helper + reward(f"return -0.0001 * ({calls(n)})")  # noqa: E731
    n = next(n for n in range(1, 100)
             if language.expanded_size(ast.parse(program(n + 1))) > language.MAX_EXPANDED_NODES)
    sandbox.check_syntax(program(n))
    with pytest.raises(sandbox.SandboxError, match="with the helpers inlined"):
        sandbox.check_syntax(program(n + 1))
    episode = _episode_cpu(program(n))
    assert episode < 1.0, f"an episode at the size limit: {episode:.2f} CPU-s"


def test_a_reward_the_checker_now_refuses_is_retired_on_resume_instead_of_a_crash():
    from marlinkit.llm.backends.scripted import ScriptedBackend
    from marlinkit.maestro import architect

    synth = architect.RewardSynthesizer(ScriptedBackend(architect.scripted_architect_replies()))
    refused = (Path(__file__).parent / "sandbox_attacks" / "game_pays_for_gridlock.py").read_text()
    assert "safety" in synth.refusal(refused) and refused not in synth.accepted
    assert synth.refusal(EXAMPLE) is None and EXAMPLE in synth.accepted


def test_the_prompt_states_the_language_and_the_properties():
    from marlinkit.llm.backends.scripted import ScriptedBackend
    from marlinkit.maestro import architect

    backend = ScriptedBackend(architect.scripted_architect_replies())
    text = architect.RewardSynthesizer(backend).messages(0.5, {})[1]["content"]
    assert "subset of Python" in text and all(name in text for name in sandbox.FUNCTIONS)
    assert "Not allowed: loops" in text and "must not depend on `phase`" in text
    asked = architect.RewardSynthesizer(backend, limits=sandbox.SandboxLimits(phase_terms=True))
    assert "must not depend on `phase`" not in asked.messages(0.5, {})[1]["content"]
