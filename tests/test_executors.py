"""The executor seam: local processes and a local Ray instance give the same MARLIN and MAESTRO result files."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time

import pandas as pd
import pytest

from marlinkit import executors, presets
from marlinkit.maestro import ablation
from marlinkit.marlin import grid

# Smoke-sized grid: one scenario, MARL + MARLIN + LLM-only, 3 episodes of 2 copies.
GRID = {"scenarios": ["single_slot"], "seeds": [0], "episodes": 3, "n_envs": 2, "checkpoints": [1, 3], "eval_runs": 4,
        "llm_only_trials": 2, "workers": 2, "switch_rule": "paper", "llm_only_performance": None,
        "mappo": {"update_epochs": 1, "steps_per_iteration": 100}}
#: Smoke-sized MAESTRO grid: full MAESTRO (A7: LLM curriculum and sandboxed reward), 2 episodes of 120 s.
MAESTRO_GRID = {"seeds": [200], "ablations": ["A7"], "episodes": 2, "episode_seconds": 120, "final_window": 2,
                "llm": "scripted", "maddpg": {"batch_size": 16, "learning_starts": 16, "update_every": 20}}
#: What differs between two runs of the same job: wall and CPU times (CSV columns, sidecar and generation-log keys).
TIMES = ("wall_time_s", "cpu_time_s", "wall_s", "sim_s", "train_s", "reward_eval_s", "llm_curriculum_s",
         "llm_reward_s", "eval_s", "baseline_s", "wall_seconds", "llm_seconds", "timings",
         "table_sha256")  # a table's hash covers its time columns; the tables themselves are compared untimed


def _untimed(value):
    """``value`` with every TIMES key removed, at any depth of nested dicts and lists."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMES}
    return [_untimed(v) for v in value] if isinstance(value, list) else value


def _files(root) -> dict[str, object]:
    """Every result file; tables with a wall-time column and sidecars are compared without their time fields."""
    files = {}
    for path in sorted(root.iterdir()):
        if path.suffix == ".json":
            files[path.name] = _untimed(json.loads(path.read_text()))
            continue
        if path.suffix == ".jsonl":
            files[path.name] = [_untimed(json.loads(line)) for line in path.read_text().splitlines()]
            continue
        if path.suffix == ".pt":  # a trained actor: the same bytes from either executor
            files[path.name] = path.read_bytes()
            continue
        table = pd.read_csv(path)
        timed = [c for c in TIMES if c in table]
        files[path.name] = table.drop(columns=timed).to_csv(index=False).encode() if timed else path.read_bytes()
    return files


def test_local_pool_returns_results_in_job_order_and_reports_each_once():
    seen = []
    results = executors.run_jobs(pow, [(2, e) for e in range(6)], workers=2, progress=False,
                                 on_result=lambda i, r: seen.append((i, r)))
    assert results == [1, 2, 4, 8, 16, 32]
    assert sorted(seen) == list(enumerate(results))


def test_bad_executor_settings_fail_before_any_job():
    with pytest.raises(ValueError, match="unknown executor"):
        executors.run_jobs(pow, [(2, 1)], executor="dask")
    with pytest.raises(ValueError, match="workers"):
        executors.run_jobs(pow, [(2, 1)], workers=0)
    with pytest.raises(ValueError, match="unknown executor"):
        grid.GridConfig(**{**GRID, "executor": "slurm"})


def test_missing_ray_gives_a_clear_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(ImportError, match=r"optional 'ray' extra"):
        executors.run_jobs(pow, [(2, 1)], executor="ray")


def test_a_session_starts_ray_once_for_the_calls_inside_it(monkeypatch):
    import types

    calls = []
    fake = types.SimpleNamespace(is_initialized=lambda: "init" in calls and "shutdown" not in calls,
                                 init=lambda **kw: calls.append("init") or calls.append(kw),
                                 shutdown=lambda: calls.append("shutdown"))
    monkeypatch.setitem(sys.modules, "ray", fake)
    with executors.session("ray", 3):
        with executors.session("ray", 3):  # what each run_jobs call inside does: reuse, no second start or stop
            assert calls == ["init", {"num_cpus": 3, "log_to_driver": False}]
        assert "shutdown" not in calls
    assert calls[-1] == "shutdown" and calls.count("init") == 1
    with executors.session("local", 2):  # nothing to start
        pass
    assert calls.count("init") == 1
    with pytest.raises(ValueError, match="unknown executor"):
        with executors.session("slurm"):
            pass


@pytest.fixture(scope="module")
def ray_instance():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, log_to_driver=False, include_dashboard=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_returns_in_job_order_and_a_failed_job_raises(ray_instance):
    # A stdlib function: Ray workers import functions by module, and our test folder is not on their path.
    assert executors.run_jobs(statistics.fmean, [([1.0, 3.0],), ([5.0],)], executor="ray", progress=False) == [2.0, 5.0]
    with pytest.raises(Exception, match="at least one data point"):
        executors.run_jobs(statistics.fmean, [([1.0],), ([],), ([2.0],)], executor="ray", workers=2, progress=False)
    assert ray_instance.is_initialized(), "a Ray instance the caller started is left running"


@pytest.mark.slow
def test_marlin_grid_on_ray_writes_the_same_files_as_local_processes_and_resumes(tmp_path, ray_instance):
    local = grid.run_grid(grid.GridConfig(**{**GRID, "executor": "local"}), "test", root=tmp_path / "local",
                          progress=False)
    on_ray = grid.run_grid(grid.GridConfig(**{**GRID, "executor": "ray"}), "test", root=tmp_path / "ray",
                           progress=False)
    local_files, ray_files = _files(tmp_path / "local"), _files(tmp_path / "ray")
    # MARL/MARLIN: table+eval, LLM-only
    assert sorted(local_files) == sorted(ray_files) and len(local_files) == 2 * (2 + 2) + 2
    for name in local_files:
        assert local_files[name] == ray_files[name], name
    pd.testing.assert_frame_equal(local.evaluations, on_ray.evaluations)
    assert local.evaluations.performance.between(0, 1).all() and len(local.evaluations) == 2 * 2 * 4

    # Resume through Ray: remove one run's sidecar; only that run is redone, the others keep their files.
    (tmp_path / "ray" / "single_slot__marl__seed0.json").unlink()
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ray").iterdir()}
    again = grid.run_grid(grid.GridConfig(**{**GRID, "executor": "ray"}), "test", root=tmp_path / "ray", progress=False)
    changed = {p.name for p in (tmp_path / "ray").iterdir() if stamps.get(p.name) != p.stat().st_mtime_ns}
    assert changed == {"single_slot__marl__seed0.csv", "single_slot__marl__seed0.json",
                       "single_slot__marl__seed0__eval.csv", "single_slot__marl__seed0__eval.json"}
    assert _files(tmp_path / "ray") == ray_files
    pd.testing.assert_frame_equal(again.evaluations, on_ray.evaluations)


@pytest.mark.slow
def test_maestro_ablation_on_ray_writes_the_same_files_as_local_processes_and_resumes(tmp_path, ray_instance):
    grid = dict(MAESTRO_GRID, progress=False)
    local = ablation.run(presets.ablation_config("smoke", executor="local", **grid, root=tmp_path / "local"))
    on_ray = ablation.run(presets.ablation_config("smoke", executor="ray", **grid, root=tmp_path / "ray"))
    local_files, ray_files = _files(tmp_path / "local"), _files(tmp_path / "ray")
    assert sorted(local_files) == sorted(ray_files) == ["A7__seed200.actor.pt", "A7__seed200.csv",
                                                        "A7__seed200.generations.jsonl",
                                                        "A7__seed200.json", "ablation_calibration.csv",
                                                        "ablation_calibration.json"]
    for name in local_files:
        assert local_files[name] == ray_files[name], name
    assert local.episodes["updates"].sum() > 0 and local.episodes["eval_return_stochastic"].notna().sum() == 1
    assert (local.episodes["reward_source"] == "llm").all()  # the sandboxed LLM reward ran in the Ray task too

    # Resume through Ray: nothing is recomputed, nothing rewritten.
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ray").iterdir()}
    again = ablation.run(presets.ablation_config("smoke", executor="ray", **grid, root=tmp_path / "ray"))
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ray").iterdir()} == stamps
    pd.testing.assert_frame_equal(again.episodes, on_ray.episodes)


def test_maestro_rejects_an_unknown_executor_before_any_compute():
    with pytest.raises(ValueError, match="unknown executor"):
        presets.ablation_config("smoke", executor="slurm")


def _script(tmp_path, body: str):
    script = tmp_path / "user_script.py"
    script.write_text("from marlinkit import executors\n" + body)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_a_script_without_a_main_guard_gets_told_what_to_do_before_any_process_starts(tmp_path):
    result = _script(tmp_path, "print(executors.run_jobs(abs, [(-1,), (-2,)], workers=2, progress=False))\n")
    assert result.returncode != 0
    assert 'if __name__ == "__main__":' in result.stderr and "user_script.py, line 2" in result.stderr
    assert "bootstrapping" not in result.stderr


def test_a_guarded_script_spawns_workers(tmp_path):
    result = _script(tmp_path, 'if __name__ == "__main__":\n'
                               '    print(executors.run_jobs(abs, [(-1,), (-2,)], workers=2, progress=False))\n')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[1, 2]"


_SLEEPER = '''import os, sys, time
from pathlib import Path

def sleep_job(folder):
    Path(folder, f"{os.getpid()}.pid").write_text("")
    time.sleep(120)
    return 0

if __name__ == "__main__":
    executors.run_jobs(sleep_job, [(sys.argv[1],)], workers=1, progress=False, fresh_process=True)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("stop", [signal.SIGTERM, pytest.param(signal.SIGKILL, marks=pytest.mark.slow)])
def test_a_stopped_run_leaves_no_worker_behind(tmp_path, stop):
    """SIGTERM: the driver kills its workers and exits; SIGKILL: each worker sees its parent gone and exits."""
    script = tmp_path / "user_script.py"
    script.write_text("from marlinkit import executors\n" + _SLEEPER)
    driver = subprocess.Popen([sys.executable, str(script), str(tmp_path)], cwd=tmp_path)
    deadline = time.time() + 120
    while not list(tmp_path.glob("*.pid")) and time.time() < deadline:
        time.sleep(0.1)
    [pid_file] = list(tmp_path.glob("*.pid"))
    worker = int(pid_file.stem)
    assert _alive(worker)
    driver.send_signal(stop)
    assert driver.wait(timeout=30) != 0
    deadline = time.time() + 10
    while _alive(worker) and time.time() < deadline:
        time.sleep(0.1)
    # a killed worker whose parent is gone is reaped by init; a zombie no longer computes
    assert not _alive(worker) or open(f"/proc/{worker}/stat").read().split(") ")[1][0] == "Z"
