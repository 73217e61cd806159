"""The traffic-baselines experiment's jobs through the one executor: ``workers`` means what it means everywhere."""

import pytest

from marlinkit import executors, presets
from marlinkit.envs.traffic.engines import available_engines

pytestmark = pytest.mark.skipif(not available_engines()["sumo"], reason="libsumo not installed")

from marlinkit.maestro import traffic_baselines  # noqa: E402


def test_baseline_jobs_give_the_same_rows_in_this_process_and_in_two_workers():
    settings = presets.get("smoke", "traffic_baselines", episode_lengths=[120])
    jobs = [(job,) for job in traffic_baselines.baseline_jobs(settings, ["sumo"])]
    assert [job["controller"] for (job,) in jobs] == ["fixed-time", "max-pressure"]
    here = executors.run_jobs(traffic_baselines.episode, jobs, "local", 1, progress=False)
    apart = executors.run_jobs(traffic_baselines.episode, jobs, "local", 2, progress=False)
    for mine, theirs in zip(here, apart, strict=True):
        assert {k: v for k, v in mine.items() if k != "wall_s"} == {k: v for k, v in theirs.items() if k != "wall_s"}
    assert here[0]["avg_delay_s"] > here[1]["avg_delay_s"] > 0  # max-pressure: less delay than fixed-time
    with pytest.raises(ValueError, match="workers must be >= 1"):
        # the old "in this process" value is gone, with a clear error
        presets.get("smoke", "traffic_baselines", workers=0)
