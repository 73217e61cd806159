"""The CityFlow backend on the real Hangzhou flow (CityFlow is not on PyPI: ``make cityflow`` builds it).

These tests skip when CityFlow is not installed, except where ``MARLINKIT_REQUIRE_CITYFLOW=1``
(CI sets it after building CityFlow), where a missing CityFlow fails them instead. The ones about
marlinkit's compiled reads skip where CityFlow came without them (the Python reads are still tested);
under ``MARLINKIT_REQUIRE_CITYFLOW=1`` their absence fails the module, as ``make cityflow`` builds both.
"""

import os
import re

import numpy as np
import pytest

from marlinkit.envs.traffic import cityflow_engine
from marlinkit.envs.traffic.engines import available_engines

if not available_engines()["cityflow"]:
    if os.environ.get("MARLINKIT_REQUIRE_CITYFLOW") == "1":
        raise RuntimeError("MARLINKIT_REQUIRE_CITYFLOW=1 but cityflow is not importable: run `make cityflow`")
    pytest.skip("cityflow not installed (make cityflow builds it)", allow_module_level=True)
COMPILED = cityflow_engine.compiled_reads() is not None
if not COMPILED and os.environ.get("MARLINKIT_REQUIRE_CITYFLOW") == "1":  # `make cityflow` builds both
    raise RuntimeError("MARLINKIT_REQUIRE_CITYFLOW=1 but marlinkit's compiled CityFlow reads are not importable: "
                       "run `make cityflow`")
needs_compiled = pytest.mark.skipif(not COMPILED, reason="marlinkit's compiled CityFlow reads not built "
                                                         "(make cityflow builds them with CityFlow)")

from marlinkit.envs.traffic.controllers import FixedTime, run_episode  # noqa: E402
from marlinkit.envs.traffic.env import TrafficEnvConfig, TrafficSignalEnv  # noqa: E402


@pytest.fixture
def make_env():
    opened = []

    def factory(**overrides):
        env = TrafficSignalEnv(TrafficEnvConfig(engine="cityflow", **overrides))
        opened.append(env)
        return env

    yield factory
    for env in opened:
        env.close()


def _run(env, seconds, policy=FixedTime(30)):
    for _ in range(seconds):
        env.step(policy(env))


def test_runs_the_real_flow_with_the_sumo_shapes():
    result = run_episode("fixed-time", seconds=360, engine="cityflow")
    assert result["vehicles"] == 299 and result["avg_queue"] > 0 and result["throughput"] > 0


def test_parallel_api(make_env):
    from pettingzoo.test import parallel_api_test

    parallel_api_test(make_env(episode_seconds=60), num_cycles=150)


def test_two_live_envs_on_one_flow_have_their_own_simulations(make_env):
    a, b = make_env(episode_seconds=200), make_env(episode_seconds=200)
    a.reset(seed=0)
    _run(a, 50)
    b.reset(seed=0)
    _run(b, 1)
    assert b.last_reading.time == 1.0  # not 51: B does not step A's simulation
    _run(a, 1)
    assert a.last_reading.time == 51.0  # and B's reset did not restart A
    assert a.engine._engine is not b.engine._engine


def test_closed_envs_hand_their_engine_to_the_next_env_of_that_flow(make_env):
    first = make_env(episode_seconds=30)
    first.reset(seed=0)
    _run(first, 30)
    metrics, alive = first.last_metrics, len(cityflow_engine._CITYFLOW_ALIVE)
    first.close()
    second = make_env(episode_seconds=30)
    second.reset(seed=0)
    _run(second, 30)
    assert len(cityflow_engine._CITYFLOW_ALIVE) == alive  # reused, not a new Engine
    assert second.last_metrics == metrics  # and reset to the start


def test_odometer_never_drops_when_a_vehicle_enters_a_junction(make_env):
    """distances() counts the road just left for a vehicle inside a junction (it used to drop 600-800 m).

    Between seconds a vehicle's odometer may step back only by the length of a junction's lane link
    (the route length counts roads only), never by a road."""
    env = make_env(episode_seconds=240)
    env.reset(seed=0)
    before: dict[int, float] = {}
    in_junction = 0
    for _ in range(240):
        env.step(FixedTime(30)(env))
        now = env.engine.distances(env._metrics.running())
        drops = [before[i] - now[i] for i in now.keys() & before.keys() if now[i] < before[i]]
        assert max(drops, default=0.0) < 40.0, sorted(drops)[-3:]
        in_junction += sum("road" not in env.engine._engine.get_vehicle_info(f"flow_{i}_0") for i in now)
        before = now
    assert in_junction > 50  # the case was exercised


def test_travel_time_is_cityflow_s_own_plus_one_second_per_finished_vehicle(make_env):
    """The documented convention (metrics.py): our arrival is the end of the second, CityFlow's its start."""
    env = make_env(episode_seconds=600, yellow_s=0, min_green_s=0)
    env.reset(seed=0)
    _run(env, 600)
    m = env.last_metrics
    theirs = env.engine._engine.get_average_travel_time()
    assert m["throughput"] > 100
    assert m["avg_travel_time_s"] - theirs == pytest.approx(m["throughput"] / m["vehicles"], abs=1e-9)


def test_version_carries_a_version_number(make_env):
    assert re.fullmatch(r"CityFlow \d+\.\d+\S*", make_env(episode_seconds=5).engine.version)


def test_the_seed_changes_nothing_on_cityflow(make_env):
    """As documented (cityflow_engine.CityFlowEngine, env module docstring): only the flow varies."""
    env = make_env(episode_seconds=120)
    results = []
    for seed in (1, 2):
        env.reset(seed=seed)
        _run(env, 120)
        results.append(env.last_metrics)
    assert results[0] == results[1]


@pytest.mark.parametrize("reads", [pytest.param("c++", marks=needs_compiled), "python"])
def test_readings_match_cityflow_s_own_per_lane_reads_every_second(make_env, reads):
    """Every row of every second's reading is what CityFlow's keyed whole-network reads give for the
    192 observed lanes: vehicles on each lane (``get_lane_vehicle_count``), halted ones
    (``get_lane_waiting_vehicle_count``), ids new on / gone from each lane (``get_lane_vehicles``),
    and vehicles inserted / finished (``get_vehicles``). The engine reads less and derives them,
    in Python or in marlinkit's compiled reads."""
    env = make_env(episode_seconds=600)
    env.engine.reads = reads
    env.reset(seed=0)
    eng, lane_ids = env.engine._engine, env.engine.lane_ids
    rng = np.random.default_rng(0)
    before_lanes, before_running = [set()] * len(lane_ids), set()
    halted_total = moved = 0
    for _ in range(600):
        env.step({agent: int(rng.integers(0, 4)) for agent in env.agents})
        reading = env.last_reading
        counts, waiting = eng.get_lane_vehicle_count(), eng.get_lane_waiting_vehicle_count()
        on_lane = [set(ids) for ids in map(eng.get_lane_vehicles().__getitem__, lane_ids)]
        running = set(eng.get_vehicles(include_waiting=False))
        np.testing.assert_array_equal(reading.count, [counts[lane] for lane in lane_ids])
        np.testing.assert_array_equal(reading.halting, [waiting[lane] for lane in lane_ids])
        np.testing.assert_array_equal(reading.flows[0], [len(n - b) for n, b in zip(on_lane, before_lanes)])
        np.testing.assert_array_equal(reading.flows[1], [len(b - n) for n, b in zip(on_lane, before_lanes)])
        name = env.engine._vehicle_name
        assert [name(i) for i in reading.departed] == sorted(running - before_running,
                                                             key=lambda v: int(v.split("_")[1]))
        assert [name(i) for i in reading.arrived] == sorted(before_running - running,
                                                            key=lambda v: int(v.split("_")[1]))
        assert reading.time == eng.get_current_time()
        before_lanes, before_running = on_lane, running
        halted_total += reading.halting.sum()
        moved += reading.flows.sum()
    # busy enough to mean something
    assert halted_total > 1000 and moved > 1000 and env.last_metrics["throughput"] > 100


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="thread affinity is Linux-only")
def test_a_step_runs_cityflow_s_worker_on_the_caller_s_core_and_leaves_the_caller_unpinned(make_env):
    """CityFlow hands each step to its worker thread and back ~11 times; across cores that costs
    about twice the CPU on an idle machine, so the step runs with both threads on the caller's core."""
    allowed = os.sched_getaffinity(0)
    env = make_env(episode_seconds=60)
    env.reset(seed=0)
    one_core = env.engine._one_core
    assert len(one_core.workers) == 1  # CityFlow's one worker thread, found when its Engine was made
    _run(env, 5)
    assert one_core.core in allowed
    assert os.sched_getaffinity(one_core.workers[0]) == {one_core.core}
    assert os.sched_getaffinity(0) == allowed  # the caller is held on that core only during the step


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="thread affinity is Linux-only")
def test_one_core_steps_leaves_the_caller_as_it_was_when_the_worker_cannot_be_moved():
    allowed, stepped = os.sched_getaffinity(0), []
    one_core = cityflow_engine.OneCoreSteps({2**22 + 12345})  # no such thread: moving it fails
    one_core(lambda: stepped.append(os.sched_getaffinity(0)))
    assert stepped == [allowed] and os.sched_getaffinity(0) == allowed
    assert one_core.workers == []  # and it stops trying
    one_core(lambda: stepped.append(1))
    assert stepped[-1] == 1


@needs_compiled
def test_compiled_reads_give_the_python_reads_byte_for_byte(make_env):
    """The C++ reads (the default where built) and the Python ones give the same episode, second by
    second: readings, observations, rewards, metrics and the odometer of the vehicles still driving."""
    def episode(reads):
        env = make_env(episode_seconds=1800)
        env.engine.reads = reads
        obs, _ = env.reset(seed=0)
        rng, seconds = np.random.default_rng(1), []
        while env.agents:
            obs, rewards, *_ = env.step({agent: int(rng.integers(0, 4)) for agent in env.agents})
            r = env.last_reading
            seconds.append((r.time, r.lanes.tobytes(), r.departed, r.arrived, sorted(rewards.items()),
                            b"".join(np.asarray(obs[agent]).tobytes() for agent in sorted(obs))))
        return seconds, env.last_metrics, env.engine.distances(list(range(len(env.flow))))

    python, compiled = episode("python"), episode("c++")
    assert len(python[0]) == 1800 and python[0] == compiled[0]
    assert python[1] == compiled[1] and python[2] == compiled[2] and len(python[2]) > 20


@needs_compiled
def test_reads_are_checked_by_name(make_env):
    env = make_env(episode_seconds=10)
    assert env.engine.reads == "c++"  # the default where built
    env.engine.reads = "cpp"
    with pytest.raises(ValueError, match="one of"):
        env.reset(seed=0)


@needs_compiled
def test_compiled_reads_carry_the_fingerprint_of_the_installed_cityflow_build():
    module = cityflow_engine.compiled_reads()
    installed = cityflow_engine.installed_cityflow_fingerprint()
    for key in cityflow_engine.FINGERPRINT_CHECKED:
        assert module.fingerprint[key] == installed[key]
    assert len(installed["cityflow_module_sha256"]) == 64 and module.fingerprint["pybind11"].count(".") == 2
    assert module.fingerprint["compiler"]  # recorded for the refusal message


@needs_compiled
@pytest.mark.parametrize("field, value", [("cityflow_version", "0.1+0000000"), ("cityflow_module_sha256", "0" * 64)])
def test_compiled_reads_built_beside_another_cityflow_build_are_refused_by_name(monkeypatch, make_env, field, value):
    module = cityflow_engine.compiled_reads()
    monkeypatch.setattr(module, "fingerprint", {**module.fingerprint, field: value})
    with pytest.raises(cityflow_engine.CompiledReadsMismatch,
                       match=re.escape(f"refused: {field}: built beside '{value}'")):
        cityflow_engine.compiled_reads()
    with pytest.raises(cityflow_engine.CompiledReadsMismatch, match=field):
        make_env(episode_seconds=10)
    monkeypatch.delattr(module, "fingerprint")
    with pytest.raises(cityflow_engine.CompiledReadsMismatch, match="no build fingerprint"):
        cityflow_engine.compiled_reads()


@needs_compiled
def test_bench_runs_the_python_reads_beside_the_compiled_ones():
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "marlinkit", "bench", "traffic", "--engine", "cityflow",
                          "--episodes", "1", "--seconds", "30", "--json"], capture_output=True, text=True, check=True)
    bench = json.loads(out.stdout.strip().splitlines()[-1])
    assert bench["cityflow_reads"] == "c++"
    for mode in ("raw", "reads", "env", "reads_python", "env_python"):
        assert bench[f"cityflow_{mode}_sim_s_per_cpu_s"] > 0
    assert bench["cityflow_env_speedup_vs_python_reads_cpu"] > 0 and "cityflow_env_python_overhead_cpu_pct" in bench
