"""The executor seam: local processes and a local Ray instance give the same MARLIN result files."""

from __future__ import annotations

import json
import statistics

import pandas as pd
import pytest

from marlinkit import executors, marlin

# Smoke-sized grid: one scenario, MARL + MARLIN + LLM-only, 3 episodes of 2 copies.
GRID = {"scenarios": ["single_slot"], "seeds": [0], "episodes": 3, "n_envs": 2, "checkpoints": [1, 3], "eval_runs": 4,
        "llm_only_trials": 2, "workers": 2, "switch_rule": "paper", "llm_only_performance": None,
        "mappo": {"update_epochs": 1, "steps_per_iteration": 100}}
#: What differs between two runs of the same job: wall and CPU times (CSV column and sidecar keys).
TIMES = ("wall_time_s", "cpu_time_s")


def _files(root) -> dict[str, object]:
    """Every result file; tables with a wall-time column and sidecars are compared without their time fields."""
    files = {}
    for path in sorted(root.iterdir()):
        if path.suffix == ".json":
            files[path.name] = {k: v for k, v in json.loads(path.read_text()).items() if k not in TIMES}
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
        marlin.validate_settings({**GRID, "executor": "slurm"})


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


@pytest.fixture(scope="module")
def ray_instance():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, log_to_driver=False, include_dashboard=False)
    yield ray
    ray.shutdown()


def test_ray_returns_in_job_order_and_a_failed_job_raises(ray_instance):
    # A stdlib function: Ray workers import functions by module, and our test folder is not on their path.
    assert executors.run_jobs(statistics.fmean, [([1.0, 3.0],), ([5.0],)], executor="ray", progress=False) == [2.0, 5.0]
    with pytest.raises(Exception, match="at least one data point"):
        executors.run_jobs(statistics.fmean, [([1.0],), ([],), ([2.0],)], executor="ray", workers=2, progress=False)
    assert ray_instance.is_initialized(), "a Ray instance the caller started is left running"


def test_marlin_grid_on_ray_writes_the_same_files_as_local_processes_and_resumes(tmp_path, ray_instance):
    local = marlin.run_grid({**GRID, "executor": "local"}, "test", root=tmp_path / "local", progress=False)
    on_ray = marlin.run_grid({**GRID, "executor": "ray"}, "test", root=tmp_path / "ray", progress=False)
    local_files, ray_files = _files(tmp_path / "local"), _files(tmp_path / "ray")
    assert sorted(local_files) == sorted(ray_files) and len(local_files) == 2 * (2 + 2) + 2  # MARL/MARLIN: table+eval, LLM-only
    for name in local_files:
        assert local_files[name] == ray_files[name], name
    pd.testing.assert_frame_equal(local.evaluations, on_ray.evaluations)
    assert local.evaluations.performance.between(0, 1).all() and len(local.evaluations) == 2 * 2 * 4

    # Resume through Ray: remove one run's sidecar; only that run is redone, the others keep their files.
    (tmp_path / "ray" / "single_slot__marl__seed0.json").unlink()
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ray").iterdir()}
    again = marlin.run_grid({**GRID, "executor": "ray"}, "test", root=tmp_path / "ray", progress=False)
    changed = {p.name for p in (tmp_path / "ray").iterdir() if stamps.get(p.name) != p.stat().st_mtime_ns}
    assert changed == {"single_slot__marl__seed0.csv", "single_slot__marl__seed0.json", "single_slot__marl__seed0__eval.csv",
                       "single_slot__marl__seed0__eval.json"}
    assert _files(tmp_path / "ray") == ray_files
    pd.testing.assert_frame_equal(again.evaluations, on_ray.evaluations)
