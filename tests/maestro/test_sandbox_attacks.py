"""Our attack corpus (tests/maestro/sandbox_attacks/, one program per file): each stopped at its stage, for its reason.

Every file starts with ``# expect: <stage> | <reason fragment>``. The programs were written against the metered
checker of the rewards' first design; the reward language refuses most of them at the syntax stage, naming the
construct. Validation runs as the training path runs it: the default rows (two recorded episodes in order, then
synthetic edge cases, then the safety search) and the default limits, so a verdict here is the verdict the
architect would log. Files are named by class: ``parent_`` (work in the checker itself), ``slow_``,
``memory_`` and ``bignum_`` (cost), ``escape_``, ``state_``, ``value_`` and ``game_`` (reward hacking).
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from marlinkit import paths
from marlinkit.maestro import sandbox

CORPUS = sorted((Path(__file__).parent / "sandbox_attacks").glob("*.py"))


def _expectation(path: Path) -> tuple[str, str]:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), path
    stage, fragment = first.removeprefix("# expect: ").split(" | ", 1)
    return stage, fragment


def test_the_corpus_is_larger_than_the_issues_and_covers_every_stage():
    assert len(CORPUS) >= 60
    assert {_expectation(p)[0] for p in CORPUS} == set(sandbox.STAGES)


#: Verdicts that come from a clock: none of the corpus may end in one (the language bounds every evaluation).
TIME_BACKSTOPS = ("CPU time limit", "wall-clock timeout", "deadline", "killed")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # workers are waited for when they close
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_attack_is_stopped_at_its_stage(path):
    stage, fragment = _expectation(path)
    cpu, wall = _children_cpu(), time.monotonic()
    verdict = sandbox.validate(path.read_text())
    cpu, wall = _children_cpu() - cpu, time.monotonic() - wall
    assert (verdict.accepted, verdict.stage) == (False, stage), verdict.reason
    assert fragment in verdict.reason
    assert len(verdict.reason) < 800
    # the expensive programs are refused by the language, never stopped by the CPU limit or a clock
    assert not any(backstop in verdict.reason for backstop in TIME_BACKSTOPS)
    assert cpu < 3.0, f"the worker spent {cpu:.1f} CPU-s"
    assert wall < 10.0, f"the verdict took {wall:.1f} s"


def test_validation_runs_a_real_episode_in_order_then_synthetic_rows():
    metrics, difficulty, n_real = sandbox.validation_rows()
    assert n_real == 2 * 360 * 16 and len(difficulty) == n_real + 64
    assert (metrics["queue_length"][:n_real] == metrics["queue_length"][:n_real].round()).all()  # real: integers
    assert metrics["queue_length"][:5760].max() > 10  # queues build up over the real-flow episode
    assert metrics["queue_length"][5760:n_real].max() > 50  # and more in the hardest curriculum context
    source = (paths.PACKAGE_DIR / "maestro" / "sandbox" / "reward_example.py").read_text()
    verdict = sandbox.validate(source)
    assert verdict.accepted, verdict.reason
    assert verdict.cost["rows"] == n_real + 64 and verdict.cost["nodes"] < 200  # the example: a short program
    assert len(verdict.sample_outputs) == n_real + 64


def test_the_recorded_rows_are_what_the_simulator_gives_now():
    """The committed rows are reproducible: the first 20 s of each episode, recorded again, match to the bit."""
    import numpy as np

    from marlinkit.maestro.sandbox import reward_rows

    metrics, index = reward_rows.load()
    stored = np.column_stack([index] + [metrics[name] for name in sandbox.FIELD_NAMES])
    fresh = reward_rows.record(seconds=20)
    np.testing.assert_array_equal(fresh, stored[index[:, 1] < 20])
