"""``python -m marlinkit bench maddpg`` through its real CLI entry point, tiny budget."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from marlinkit.__main__ import main


def test_bench_maddpg_cli_reports_both_paths():
    out = subprocess.run([sys.executable, "-m", "marlinkit", "bench", "maddpg", "--json", "--updates", "2",
                          "--batch-size", "16", "--obs-dim", "7", "--threads", "1"],
                         capture_output=True, text=True, check=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["n_agents"] == 16 and result["n_actions"] == 4
    assert result["obs_dim"] == 7 and result["obs_dim_source"] == "--obs-dim" and result["batch_size"] == 16
    assert result["batched_updates_per_s"] > 0 and result["loop_updates_per_s"] > 0
    assert result["batched_cpu_s_per_update"] > 0 and result["loop_cpu_s_per_update"] > 0
    assert result["speedup"] == pytest.approx(result["batched_updates_per_s"] / result["loop_updates_per_s"])


def test_bench_maddpg_rejects_bad_arguments(capsys):
    assert main(["bench", "maddpg", "--json", "--updates", "0"]) == 2
    assert "updates" in json.loads(capsys.readouterr().out)["error"]
