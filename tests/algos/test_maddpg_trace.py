"""MADDPG's bits do not depend on the processor: its per-operation trace against every committed fixture, the portable
maths it is made of, and no operation of MKL's vendor-dispatched vector maths in its update."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from marlinkit.repro import numerics_trace
from marlinkit.algos import portable_math


@pytest.fixture(scope="module")
def here():
    return numerics_trace.record()


def test_every_committed_fixture_recomputes_operation_for_operation(here):
    """The traces made on other processors (each fixture names its own) equal this machine's, every hash of every
    operation of three updates of each learner; a difference names the learner, update and operation."""
    fixtures = sorted(numerics_trace.FIXTURES.glob("*.json"))
    assert fixtures, "no committed MADDPG trace"
    for path in fixtures:
        expected = json.loads(path.read_text(encoding="utf-8"))
        assert numerics_trace.first_difference(expected, here) is None, path.name


def test_a_doctored_hash_fails_by_name(here):
    doctored = copy.deepcopy(here)
    entry = doctored["traces"]["openblas"][400]
    entry[2] = "0" * 16
    message = numerics_trace.first_difference(doctored, here)
    assert message is not None
    assert f"openblas: update {entry[0]}, operation 400 ({entry[1]})" in message
    assert doctored["cpu"] in message


def test_maddpg_runs_no_operation_of_mkls_vector_maths(here):
    """torch's log and sqrt (and the functions MKL's vector maths computes beside them) choose their code by the
    processor's vendor; MADDPG's update, Adam's step included, calls none of them."""
    vendor_dispatched = {"aten.log.default", "aten.sqrt.default", "aten.rsqrt.default", "aten.log1p.default",
                         "aten.log2.default", "aten.log10.default", "aten._foreach_sqrt.default"}
    assert set(here["traces"]) == {"torch", "openblas", "shared-local"}
    for variant, trace in here["traces"].items():
        called = {entry[1] for entry in trace}
        assert not called & vendor_dispatched, (variant, called & vendor_dispatched)
        assert not any("adam" in name for name in called)  # Adam in basic operations (portable_math.Adam)


def _python_log(x: float) -> float:
    """portable_math.log's formula in Python's own float arithmetic (IEEE 754 double, correctly rounded)."""
    mantissa, exponent = math.frexp(x)
    if mantissa < math.sqrt(0.5):
        mantissa, exponent = mantissa * 2.0, exponent - 1
    s = (mantissa - 1.0) / (mantissa + 1.0)
    s2 = s * s
    terms = portable_math._ATANH_TERMS
    series = 1.0 / (2 * terms - 1)
    for k in range(terms - 2, -1, -1):
        series = series * s2 + 1.0 / (2 * k + 1)
    return float(exponent) * portable_math._LN2_HI + (2.0 * s * series + float(exponent) * portable_math._LN2_LO)


def test_the_portable_log_is_pythons_float_arithmetic_operation_for_operation():
    """Every operation of portable_math.log is one IEEE 754 rounds correctly, so the same bits on every processor:
    equal to the same formula in Python floats, to within 1e-15 of the true logarithm, and correctly rounded in
    float32 on the Gumbel noise's range (torch.log is not: 7.5 % of its float32 results are an ulp off here)."""
    rng = np.random.default_rng(0)
    sample = np.concatenate([rng.uniform(1e-10, 1.0, 2000), rng.uniform(1e-7, 30.0, 2000), [1.0, 0.5, 2.0, 1e-10]])
    ours = portable_math.log(torch.from_numpy(sample)).numpy()
    assert [float(v) for v in ours] == [_python_log(float(v)) for v in sample]
    np.testing.assert_allclose(ours, np.log(sample), rtol=1e-15, atol=1e-300)
    single = torch.rand(200_000, generator=torch.Generator().manual_seed(1)).clamp_(1e-10, 1 - 1e-7)
    exact = np.log(single.numpy().astype(np.float64)).astype(np.float32)
    assert np.array_equal(portable_math.log(single).numpy(), exact)
    with pytest.raises(ValueError, match="positive"):
        portable_math.log(torch.tensor([1.0, 0.0]))


def test_the_portable_sqrt_is_correctly_rounded():
    x = torch.rand(200_000, generator=torch.Generator().manual_seed(2)) * 100
    exact = np.sqrt(x.numpy().astype(np.float64)).astype(np.float32)  # a double rounding sqrt survives exactly
    assert np.array_equal(portable_math.sqrt(x).numpy(), exact)


def test_the_openblas_route_does_not_move_with_mkls_branch():
    """With the products in OpenBLAS, MKL computes nothing in a MADDPG update: its trace is the same under MKL's
    other branches and instruction sets (what an Intel processor's MKL would choose), the other pins kept."""
    env = {**os.environ, "MARLINKIT_NUMERICS": "native", "MKL_CBWR": "AUTO", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
           **{k: v for k, v in numerics_trace.numerics.PINNED_ENVIRONMENT.items() if not k.startswith("MKL_CBWR")}}
    script = ("import json, marlinkit; from marlinkit.repro import numerics_trace; "
              "print(json.dumps(numerics_trace.trace('openblas')))")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == numerics_trace.trace("openblas")
