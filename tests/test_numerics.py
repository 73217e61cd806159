"""Pinned numerics: other machines simulated in one process tree give byte-identical weights.

Each case runs in a fresh interpreter with the environment variables that a different processor's
libraries would act on (MKL's instruction set, ATen's CPU capability). ``import marlinkit`` comes
first, as in a user's script; then a smoke MAPPO training and a smoke MADDPG update, hashed by weights.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

SCRIPT = r"""
import hashlib, json, numpy as np
import marlinkit
from marlinkit.repro import numerics
from marlinkit.algos import maddpg
from marlinkit.algos.replay_buffer import ReplayBuffer
from marlinkit.algos.mappo import MAPPOConfig, train
from marlinkit.envs.corridor.layouts import get_layout

def digest(*state_dicts):
    h = hashlib.sha256()
    for state in state_dicts:
        for key, value in sorted(state.items()):
            h.update(key.encode()); h.update(value.detach().numpy().tobytes())
    return h.hexdigest()

agent = train(MAPPOConfig(steps_per_iteration=600, update_epochs=2), get_layout("single_slot"), n_envs=15, episodes=6,
              seed=0)
rng = np.random.default_rng(0)
learner = maddpg.MADDPG(16, 9, 4, maddpg.MADDPGConfig(hidden=64, batch_size=128, buffer_size=512))
buffer = ReplayBuffer(512, 16, 9)
for _ in range(512):
    buffer.add(rng.normal(size=(16, 9)), rng.integers(4, size=16), rng.normal(size=16), rng.normal(size=(16, 9)),
               rng.random(16) < 0.05)
for _ in range(3):
    learner.update(buffer.sample(128, rng), learner.noise(128), "batched")
print(json.dumps({"mappo": digest(agent.state_dict()),
                  "maddpg": digest(learner.actor.state_dict(), learner.critic.state_dict()),
                  "numerics": numerics.state()}))
"""

#: What another machine's libraries would do on their own: a different MKL instruction set or ATen kernels.
MACHINES = {
    "this machine": {},
    "MKL AVX2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "MKL AVX512": {"MKL_ENABLE_INSTRUCTIONS": "AVX512"},
    "ATen avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "ATen avx512": {"ATEN_CPU_CAPABILITY": "avx512"},
    "ATen default": {"ATEN_CPU_CAPABILITY": "default"},
    "MKL_CBWR AUTO, 2 threads": {"MKL_CBWR": "AUTO", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
}


def _run(extra: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY", "MKL_CBWR", "MARLINKIT_NUMERICS")}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    cases = {**MACHINES, "native": {"MARLINKIT_NUMERICS": "native"},
             "native, ATen default": {"MARLINKIT_NUMERICS": "native", "ATEN_CPU_CAPABILITY": "default"}}
    with ThreadPoolExecutor(max_workers=3) as pool:  # independent interpreters, side by side
        return dict(zip(cases, pool.map(_run, cases.values())))


def test_the_pinned_weights_are_the_same_under_atens_generic_kernels():
    # The default suite's share of the check below: two interpreters, one told to use ATen's generic kernels;
    # the pinning overrides that and both train to the same bytes.
    with ThreadPoolExecutor(max_workers=2) as pool:
        reference, generic = pool.map(_run, (MACHINES["this machine"], MACHINES["ATen default"]))
    assert reference["numerics"]["pinned"] and generic["numerics"]["pinned"]
    assert generic["numerics"]["aten_cpu_capability"] == reference["numerics"]["aten_cpu_capability"] == "AVX2"
    assert (generic["mappo"], generic["maddpg"]) == (reference["mappo"], reference["maddpg"])


@pytest.mark.slow
def test_every_simulated_machine_gives_the_same_weights(results):
    reference = results["this machine"]
    assert reference["numerics"]["pinned"], reference["numerics"]
    assert reference["numerics"]["mkl_branch"] == "COMPATIBLE"
    assert reference["numerics"]["aten_cpu_capability"] == "AVX2"
    for name in MACHINES:
        result = results[name]
        assert result["mappo"] == reference["mappo"], f"MAPPO weights differ under {name}"
        assert result["maddpg"] == reference["maddpg"], f"MADDPG weights differ under {name}"
        assert result["numerics"]["pinned"], name


@pytest.mark.slow
def test_unpinned_numerics_differ_so_the_comparison_can_fail(results):
    # The same training with the pinning off: ATen's default kernels and MKL's own branch change the bytes,
    # which is what the pinned runs above are protected from.
    native, native_default = results["native"], results["native, ATen default"]
    assert native["numerics"]["mode"] == "native" and not native["numerics"]["pinned"]
    assert native["mappo"] != native_default["mappo"]
    assert native["mappo"] != results["this machine"]["mappo"]


def test_torch_imported_first_is_still_pinned_or_reported():
    # A user who imports torch before marlinkit: the MKL branch and the thread count are set at run time.
    script = ("import torch; torch.set_num_threads(2); import marlinkit; from marlinkit.repro import numerics; "
              "import json; print(json.dumps(numerics.check_pinned()))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items()
                              if k not in ("MARLINKIT_NUMERICS", "ATEN_CPU_CAPABILITY")})
    assert out.returncode == 0, out.stderr[-2000:]
    state = json.loads(out.stdout.strip().splitlines()[-1])
    assert state["mkl_branch"] == "COMPATIBLE" and state["torch_threads"] == 1


def test_an_mkl_call_before_marlinkit_is_reported_not_hidden():
    script = ("import torch; (torch.ones(64, 64) @ torch.ones(64, 64)).sum(); import marlinkit; "
              "from marlinkit.repro import numerics; numerics.check_pinned()")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k not in ("MARLINKIT_NUMERICS", "MKL_CBWR")})
    assert out.returncode != 0 and "could not pin the numerical libraries" in out.stderr


def test_a_bad_mode_is_refused():
    out = subprocess.run([sys.executable, "-c", "import marlinkit"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "MARLINKIT_NUMERICS": "fast"})
    assert out.returncode != 0 and "MARLINKIT_NUMERICS must be" in out.stderr


@pytest.mark.slow
def test_bench_numerics_prints_the_cost_through_the_cli():
    out = subprocess.run([sys.executable, "-m", "marlinkit", "bench", "numerics", "--json", "--pairs", "1",
                          "--episodes", "1", "--updates", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(result["mappo_cpu_s"]) == {"pinned", "native"} and result["mappo_cpu_s"]["pinned"] > 0
    assert result["maddpg_update_cost"] == pytest.approx(
        result["maddpg_cpu_s"]["pinned"] / result["maddpg_cpu_s"]["native"] - 1, abs=2e-3)
